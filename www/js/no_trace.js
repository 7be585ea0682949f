// no_trace.js: why the device shown has no trace events (a snapshot taken without
// torch.cuda.memory._record_memory_history(), the segment list of torch.cuda.memory_snapshot(),
// or a device nobody recorded). The sentence is Rust's (`Panel.no_trace`, empty when there is a
// trace): over the plot of a timeline, with a button to the Allocator State History, where the
// segments and blocks at the end are; in the State History, in place of its empty event list.

/**
 * @param {{box: HTMLElement, text: HTMLElement, button: HTMLButtonElement, statePanel: HTMLElement, stateText: HTMLElement}} els
 * @param {() => void} showState  switches to the Allocator State History
 * @returns {(sentence: string, view: string) => void}  shows the note for the view shown ('' hides it)
 */
export function wireNoTrace(els, showState) {
  els.button.addEventListener('click', showState);
  return (sentence, view) => {
    const m = sentence.trim();
    const text = m === '' || /[.?!]$/.test(m) ? m : `${m}.`;
    const inState = view === 'state' && text !== '';
    els.text.textContent = inState ? '' : text;
    els.box.hidden = inState || text === '';
    els.stateText.textContent = inState ? text : '';
    els.stateText.hidden = !inState;
    els.statePanel.classList.toggle('no-trace', inState);
  };
}
