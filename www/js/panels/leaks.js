// panels/leaks.js: the leak suspects, each explained in Rust's sentence with its top frames.
import { setChildren } from '../dom.js';
import { Panel } from './panel.js';
import { isUnavailable } from './unavailable.js';

/** @typedef {import('../generated/LeaksAnswer').LeaksAnswer} Leaks */
/** @typedef {import('../bridge.js').Call} Call */

/** @typedef {{panel: HTMLDetailsElement, rule: HTMLElement, list: HTMLElement}} LeaksElements */

/** The leak suspects, each explained in a sentence with its top frames. @extends {Panel<LeaksElements>} */
export class LeaksPanel extends Panel {
  /** @param {LeaksElements} els @param {Call} call */
  constructor(els, call) {
    super(els, call);
    /** @type {Leaks | null} */
    this.report = null;
    /** @type {string | null} */
    this.loadedFor = null;
    this.key = '';
    els.panel.addEventListener('toggle', () => { if (els.panel.open) this.load(); });
  }

  /** The file or device changed: reload when shown. @param {string} key */
  invalidate(key) {
    if (key === this.key) return;
    this.key = key;
    this.loadedFor = null;
    if (this.els.panel.open) this.load();
  }

  async load() {
    if (this.loadedFor === this.key && this.report !== null) return this.report;
    const key = this.key;
    const { result } = await this.call({ method: 'leaks' });
    const r = result;
    if (isUnavailable(r)) {
      // Not kept: opening the panel again asks again.
      this.report = null;
      this.loadedFor = null;
      this.els.rule.textContent = r.unavailable;
      this.els.list.replaceChildren();
      return r;
    }
    this.report = r;
    this.loadedFor = key;
    if (r === null) return r;
    this.els.rule.textContent = r.suspects.length === 0
      ? `No suspects. Memory settled at timestep ${r.settled_step.toLocaleString('en-US')} (${r.settled_rule}).`
      : `Settled at timestep ${r.settled_step.toLocaleString('en-US')}: ${r.settled_rule}`;
    setChildren(this.els.list, r.suspects.slice(0, 50).map((x) => {
      const li = document.createElement('li');
      li.className = x.kind;
      const p = document.createElement('div');
      p.textContent = x.explanation;
      const pre = document.createElement('pre');
      pre.textContent = x.shown.slice(0, 6).join('\n');
      li.append(p, pre);
      return li;
    }));
    return r;
  }
}
