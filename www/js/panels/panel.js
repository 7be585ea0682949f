// panels/panel.js: what every panel of the shell holds: its elements and the call into the
// worker (www/js/bridge.js). The panels differ in everything else.

/** @typedef {import('../bridge.js').Call} Call */

/** @template E  the panel's elements */
export class Panel {
  /** @param {E} els @param {Call} call */
  constructor(els, call) {
    this.els = els;
    this.call = call;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.typingTimer = undefined;
  }

  /**
   * Runs `run` 250 ms after the last keystroke in `input`, or at once on Enter (the search
   * box and the filter box).
   * @param {HTMLInputElement} input @param {() => unknown} run
   */
  runOnTyping(input, run) {
    input.addEventListener('input', () => {
      this.cancelTyping();
      this.typingTimer = setTimeout(run, 250);
    });
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        this.cancelTyping();
        run();
      }
    });
  }

  /** Drops a run that typing scheduled and that has not happened yet. */
  cancelTyping() {
    clearTimeout(this.typingTimer);
    this.typingTimer = undefined;
  }
}
