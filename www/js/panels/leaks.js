// panels/leaks.js: the leak suspects, each explained in Rust's sentence with its site (docs/sites.md)
// and its top frames (the user's highlighted, the libraries' dimmed: Rust's `kinds`).
import { setChildren } from '../dom.js';
import { siteLine } from '../details.js';
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

  /** What counts as the user's code changed: reload when shown. */
  refresh() {
    this.loadedFor = null;
    if (this.els.panel.open) this.load();
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
      li.append(p, siteLine(x.site), framesPre(x.shown.slice(0, 6), x.kinds));
      return li;
    }));
    return r;
  }
}

/**
 * Frame lines as a `<pre>`, one span a line with its kind's class (`user`, `library`, …; Rust's
 * `kinds`, which may be longer: the lines are its first ones), so the text is the lines.
 * @param {string[]} lines
 * @param {string[]} kinds
 */
export function framesPre(lines, kinds) {
  const pre = document.createElement('pre');
  pre.className = 'frames';
  lines.forEach((line, i) => {
    if (i > 0) pre.append('\n');
    const span = document.createElement('span');
    span.textContent = line;
    if (typeof kinds[i] === 'string') span.className = `frame ${kinds[i]}`;
    pre.append(span);
  });
  return pre;
}
