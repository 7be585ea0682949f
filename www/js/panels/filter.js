// panels/filter.js: the structured filter beside the search (`size>=1MiB site:/attn/ at:peak`,
// the grammar of `memviz query`): the text goes to Rust (crates/memviz-viewer `filter`), which
// highlights the matching allocations of the Active Memory Timeline as the search does (with a
// search set, what matches both) and answers the count and bytes, or the column and message of
// a filter that does not parse (nothing else changes then). "CSV" downloads the matching rows
// (`filter_csv`). The shell never reads the snapshot: it passes the text and shows the answer,
// with textContent only.
import { Panel } from './panel.js';
import { unavailable } from './unavailable.js';

/** @typedef {import('../generated/FilterAnswer').FilterAnswer} FilterAnswer */
/** @typedef {import('../bridge.js').Call} Call */

/**
 * @typedef {{input: HTMLInputElement, only: HTMLInputElement, status: HTMLElement, csv: HTMLButtonElement,
 *   helpButton: HTMLButtonElement, help: HTMLElement, fileName: () => string}} FilterElements
 */

/** The fields of the grammar, for the input's title and the help. */
export const FILTER_FIELDS = [
  ['size>=1MiB', 'size (> >= < <= = !=; B KiB MiB GiB KB MB GB)'],
  ['stream:0', 'CUDA stream'],
  ['site:/attn/', 'the site (your line first): /regex/ or text'],
  ['frame:/re/', 'any frame of the stack'],
  ['file:model.py', 'the site\'s file'],
  ['line:42', 'the site\'s line'],
  ['action:alloc', 'alloc (made in the trace), free (freed in it), start (there at the start)'],
  ['lifetime>10ms', 'lifetime in time (us ms s) or events (lifetime>100)'],
  ['at:peak', 'alive at the peak, after event N (at:1200), or at a time (at:12.5s)'],
  ['device:0', 'device'],
  ['phase:NAME', 'allocated inside an annotation phase'],
  ['-term', 'negates; a bare word or "quoted text" matches the site or a frame'],
];

/** The structured filter. @extends {Panel<FilterElements>} */
export class FilterBox extends Panel {
  /** @param {FilterElements} els @param {Call} call @param {() => void} changed  after each answer (deep links) */
  constructor(els, call, changed) {
    super(els, call);
    this.changed = changed;
    /** The last answer, or null. @type {FilterAnswer | null} */
    this.result = null;
    /** The text of the filter applied last (a bad one is not applied). */
    this.applied = '';
    els.input.title = `Filter the Active Memory Timeline's allocations (all terms must hold):\n${FILTER_FIELDS.map(([t, d]) => `${t}  ${d}`).join('\n')}`;
    this.runOnTyping(els.input, () => this.run());
    els.only.addEventListener('change', () => { if (this.applied !== '') this.run(); });
    els.csv.addEventListener('click', () => { this.downloadCsv(); });
    els.helpButton.addEventListener('click', () => {
      els.help.hidden = !els.help.hidden;
      els.helpButton.setAttribute('aria-expanded', String(!els.help.hidden));
    });
    const list = document.createElement('dl');
    for (const [term, text] of FILTER_FIELDS) {
      const dt = document.createElement('dt');
      dt.textContent = term;
      const dd = document.createElement('dd');
      dd.textContent = text;
      list.append(dt, dd);
    }
    els.help.append(list);
    els.csv.disabled = true;
  }

  /** Runs the filter in the box; resolves with Rust's answer after the frame is drawn. */
  async run() {
    const text = this.els.input.value;
    const { result } = await this.call({ method: 'filter', query: text, only: this.els.only.checked }, { waitFrame: true });
    this.result = result;
    this.show(result, text);
    this.changed();
    return result;
  }

  /** Sets the box to `text` and runs it (deep links); '' clears. @param {string} text */
  async set(text) {
    if (text === this.els.input.value && (text === '' || this.result !== null)) return;
    this.els.input.value = text;
    await this.run();
  }

  /** @param {FilterAnswer | null} r @param {string} text */
  show(r, text) {
    const { status, input, csv } = this.els;
    status.classList.remove('error');
    input.removeAttribute('aria-invalid');
    const why = unavailable(r);
    if (why !== null) {
      status.textContent = why;
      return;
    }
    if (r === null || text.trim() === '') {
      status.textContent = '';
      status.title = '';
      this.applied = '';
      csv.disabled = true;
      return;
    }
    if (r.error) {
      // The previous filter stays applied: only the message changes.
      status.classList.add('error');
      input.setAttribute('aria-invalid', 'true');
      status.textContent = `column ${r.error.column + 1}: ${r.error.message}`;
      status.title = `${text}\n${' '.repeat(r.error.column)}^ ${r.error.message}`;
      return;
    }
    this.applied = text;
    csv.disabled = r.count === 0;
    const n = r.count.toLocaleString('en-US');
    let line = `${n} allocation${r.count === 1 ? '' : 's'}, ${r.size}`;
    const exact = `${line} (${r.bytes.toLocaleString('en-US')} bytes)`;
    if (r.with_search !== null) line += ` · ${r.with_search.toLocaleString('en-US')} also match the search`;
    if (r.warnings.length > 0) line += ` · ${r.warnings.join(' ')}`;
    if (r.note) line += ` · ${r.note}`;
    status.textContent = line;
    status.title = exact + line.slice(line.indexOf(r.size) + r.size.length);
  }

  /** Downloads the CSV of the matching rows as a file; resolves with its text (null: none). */
  async downloadCsv() {
    const text = this.applied;
    if (text === '') return null;
    const { result } = await this.call({ method: 'filter_csv', query: text });
    if (result === null) return null;
    const blob = new Blob([result], { type: 'text/csv' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    const base = this.els.fileName().replace(/\.[^.]*$/, '') || 'memviz';
    a.download = `${base}-filter.csv`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    return result;
  }

  /** A new file, device or view: the highlight is gone, so is the filter. */
  reset() {
    this.cancelTyping();
    this.els.input.value = '';
    this.els.status.textContent = '';
    this.els.status.classList.remove('error');
    this.els.input.removeAttribute('aria-invalid');
    this.els.csv.disabled = true;
    this.result = null;
    this.applied = '';
  }
}
