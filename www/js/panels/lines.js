// panels/lines.js: the sortable per-source-line table (a row highlights its allocations). Rows
// and numbers are Rust's (crates/memviz-viewer `lines_json`), placed with textContent only.
import { setChildren } from '../dom.js';
import { Panel } from './panel.js';
import { isUnavailable, unavailable } from './unavailable.js';

/** @typedef {import('../generated/LineAnswer').LineAnswer} LinesRow */
/** @typedef {import('../bridge.js').Call} Call */

/**
 * @typedef {object} LinesElements
 * @property {HTMLDetailsElement} panel
 * @property {HTMLTableElement} table
 * @property {HTMLTableSectionElement} rows
 * @property {HTMLInputElement} allFrames
 * @property {HTMLElement} status
 */

/** The per-source-line table. @extends {Panel<LinesElements>} */
export class LinesTable extends Panel {
  /**
   * @param {LinesElements} els
   * @param {Call} call
   * @param {(text: string) => void} onHighlight  called with a status line after a row click
   */
  constructor(els, call, onHighlight) {
    super(els, call);
    this.onHighlight = onHighlight;
    /** @type {LinesRow[]} */
    this.rows = [];
    /** @type {keyof LinesRow} */
    this.sortKey = 'live_at_peak_bytes';
    this.descending = true;
    this.selected = -1;
    /** What the rows were loaded for (`key|allFrames`), or null. @type {string | null} */
    this.loadedFor = null;
    this.key = '';
    els.panel.addEventListener('toggle', () => { if (els.panel.open) this.load(); });
    els.allFrames.addEventListener('change', () => { this.loadedFor = null; this.load(); });
    // A click on a column header sorts by it (on the table, not its <thead>: a click elsewhere
    // has no <th> around it).
    els.table.addEventListener('click', (ev) => {
      const th = ev.target instanceof Element ? ev.target.closest('th') : null;
      if (th === null) return;
      const key = /** @type {keyof LinesRow} */ (th.dataset.key);
      if (key === this.sortKey) this.descending = !this.descending;
      else {
        this.sortKey = key;
        this.descending = th.dataset.type === 'num';
      }
      this.render();
    });
    els.rows.addEventListener('click', (ev) => {
      const tr = ev.target instanceof Element ? ev.target.closest('tr') : null;
      if (tr !== null) this.highlight(Number(tr.dataset.i));
    });
  }

  /** The file / device / view changed: reload when shown. @param {string} key */
  invalidate(key) {
    if (key === this.key) return;
    this.key = key;
    this.loadedFor = null;
    this.selected = -1;
    if (this.els.panel.open) this.load();
  }

  async load() {
    const want = `${this.key}|${this.els.allFrames.checked}`;
    if (this.loadedFor === want) return this.rows;
    const { result } = await this.call({ method: 'lines', all_frames: this.els.allFrames.checked });
    const r = result;
    const why = unavailable(r);
    this.els.status.textContent = why || '';
    // Not kept when it could not be made: opening the panel again asks again.
    this.rows = why === null && Array.isArray(r) ? r : [];
    this.loadedFor = why === null ? want : null;
    this.selected = -1;
    this.render();
    return why === null ? this.rows : r;
  }

  sorted() {
    const k = this.sortKey;
    const dir = this.descending ? -1 : 1;
    return this.rows.map((r, i) => ({ r, i })).sort((a, b) => {
      const x = k === 'file' ? `${a.r.file}:${a.r.line}` : a.r[k];
      const y = k === 'file' ? `${b.r.file}:${b.r.line}` : b.r[k];
      return x < y ? -dir : x > y ? dir : a.i - b.i;
    });
  }

  render() {
    for (const th of this.els.table.querySelectorAll('th')) {
      th.setAttribute('aria-sort', th.dataset.key === this.sortKey ? (this.descending ? 'descending' : 'ascending') : 'none');
    }
    const shown = this.sorted().slice(0, 500);
    setChildren(this.els.rows, shown.map(({ r, i }) => {
      const tr = document.createElement('tr');
      tr.dataset.i = String(i);
      tr.setAttribute('aria-selected', String(i === this.selected));
      const cells = [r.site, r.live, r.total, r.count.toLocaleString('en-US'), r.largest];
      for (const text of cells) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      return tr;
    }));
  }

  /** Highlights row i's allocations on the timeline (a second click clears). @param {number} i */
  async highlight(i) {
    const r = this.rows[i];
    if (!r) return 0;
    if (i === this.selected) {
      this.selected = -1;
      await this.call({ method: 'clear_highlight' }, { waitFrame: true });
      this.onHighlight('');
      this.render();
      return 0;
    }
    this.selected = i;
    this.render();
    const { result } = await this.call({ method: 'highlight_line', file: r.file, line: r.line, name: r.name, all_frames: this.els.allFrames.checked }, { waitFrame: true });
    const answer = result;
    if (isUnavailable(answer)) {
      this.selected = -1;
      this.render();
      this.onHighlight(answer.unavailable);
      return 0;
    }
    // The file's base name: the status shares the toolbar's one line (the row names the path).
    const base = String(r.file).split(/[\\/]/).pop() || r.file;
    this.onHighlight(`${Number(answer).toLocaleString('en-US')} allocations from ${base}:${r.line} highlighted`);
    return Number(answer);
  }
}
