// panels/live.js: "Alive at a moment", every allocation live at the peak or at the last clicked
// timestep, each with its site (docs/sites.md: kind, label, the library line dimmed). Rows are
// Rust's, placed with textContent only.
import { setChildren } from '../dom.js';
import { Panel } from './panel.js';
import { isUnavailable } from './unavailable.js';
import { siteLine } from '../details.js';

/** @typedef {import('../generated/LiveAnswer').LiveAnswer} Live */
/** @typedef {import('../bridge.js').Call} Call */

/**
 * @typedef {object} LiveElements
 * @property {HTMLDetailsElement} panel
 * @property {HTMLButtonElement} refresh
 * @property {HTMLButtonElement} peak
 * @property {HTMLElement} status
 * @property {HTMLTableSectionElement} rows
 */

/** "Alive at a moment": every allocation live at the peak or at the last clicked timestep. @extends {Panel<LiveElements>} */
export class LiveTable extends Panel {
  /** @param {LiveElements} els @param {Call} call */
  constructor(els, call) {
    super(els, call);
    /** @type {import('../generated/Avail').Avail<Live> | null} */
    this.result = null;
    els.panel.addEventListener('toggle', () => { if (els.panel.open) this.show(-1); });
    els.refresh.addEventListener('click', () => this.show(-1));
    els.peak.addEventListener('click', () => this.show(-2));
  }

  /** `step` ≥ 0: that timestep; -1: the last click (else the peak); -2: the peak. @param {number} step */
  async show(step) {
    const { result } = await this.call({ method: 'live', step: step === -2 ? -1e9 : step });
    const r = result;
    this.result = r;
    if (r === null) return r;
    if (isUnavailable(r)) {
      this.els.status.textContent = r.unavailable;
      this.els.rows.replaceChildren();
      return r;
    }
    this.els.status.textContent = `${r.count.toLocaleString('en-US')} allocations alive at timestep ${r.step.toLocaleString('en-US')}, ${r.total}${r.count > r.rows.length ? ` (the ${r.rows.length} largest listed)` : ''}`;
    setChildren(this.els.rows, r.rows.map((x) => {
      const tr = document.createElement('tr');
      for (const text of [x.label, x.size_text, x.age_text, `stream ${x.stream}`]) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      const td = document.createElement('td');
      const line = siteLine(x.site);
      line.title = x.site.detail ? `${x.top_frame} → ${x.site.detail}` : x.top_frame; // the site's full path
      td.append(line);
      tr.append(td);
      return tr;
    }));
    return r;
  }

  reset() {
    this.result = null;
    this.els.rows.replaceChildren();
    this.els.status.textContent = '';
    if (this.els.panel.open) this.show(-1);
  }
}
