// panels/panel.js: what every panel of the shell holds: its elements and the call into the
// worker (www/js/bridge.js). The panels differ in everything else.

/** @typedef {import('../bridge.js').Call} Call */

/** @template E  the panel's elements */
export class Panel {
  /** @param {E} els @param {Call} call */
  constructor(els, call) {
    this.els = els;
    this.call = call;
  }
}
