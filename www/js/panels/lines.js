// panels/lines.js: the sortable per-source-line table, one row per site (docs/sites.md) with its
// kind's tag and its library lines as sub-rows behind a disclosure button (a row highlights its
// allocations), and the "Your code" setting (what counts as the user's code, for every view).
// Rows and numbers are Rust's (crates/memviz-viewer `lines_json`), placed with textContent only.
import { setChildren } from '../dom.js';
import { kindTag } from '../details.js';
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
    /** The rows whose library lines are shown. @type {Set<number>} */
    this.expanded = new Set();
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
    // A click on the disclosure button shows the row's library lines; elsewhere on a site's
    // row it highlights the row's allocations (a sub-row belongs to its site's row).
    els.rows.addEventListener('click', (ev) => {
      const t = ev.target instanceof Element ? ev.target : null;
      const b = t === null ? null : t.closest('button.disclose');
      if (b instanceof HTMLElement) {
        this.toggle(Number(b.dataset.i));
        return;
      }
      const tr = t === null ? null : t.closest('tr');
      if (tr === null) return;
      const i = Number(tr.dataset.i ?? tr.dataset.parent);
      if (Number.isInteger(i)) this.highlight(i);
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

  /** What counts as the user's code changed: reload when shown. */
  refresh() {
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
    this.expanded.clear();
    this.render();
    return why === null ? this.rows : r;
  }

  /** The rows (or a row's sub-rows) in the table's order, with their index. @param {LinesRow[]} rows */
  sorted(rows) {
    const k = this.sortKey;
    const dir = this.descending ? -1 : 1;
    return rows.map((r, i) => ({ r, i })).sort((a, b) => {
      const x = k === 'file' ? `${a.r.file}:${a.r.line}` : a.r[k];
      const y = k === 'file' ? `${b.r.file}:${b.r.line}` : b.r[k];
      return x < y ? -dir : x > y ? dir : a.i - b.i;
    });
  }

  render() {
    for (const th of this.els.table.querySelectorAll('th')) {
      th.setAttribute('aria-sort', th.dataset.key === this.sortKey ? (this.descending ? 'descending' : 'ascending') : 'none');
    }
    const shown = this.sorted(this.rows).slice(0, 500);
    setChildren(this.els.rows, shown.flatMap(({ r, i }) => {
      const tr = this.row(r, false);
      tr.dataset.i = String(i);
      tr.setAttribute('aria-selected', String(i === this.selected));
      const detail = Array.isArray(r.detail) ? r.detail : [];
      const cell = /** @type {HTMLElement} */ (tr.firstElementChild);
      if (detail.length === 0) {
        cell.prepend(placeholder());
        return [tr];
      }
      const open = this.expanded.has(i);
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'disclose';
      b.setAttribute('aria-expanded', String(open));
      b.setAttribute('aria-label', `${open ? 'hide' : 'show'} its ${detail.length} library line${detail.length === 1 ? '' : 's'}`);
      b.title = b.getAttribute('aria-label') || '';
      b.dataset.i = String(i);
      cell.prepend(b);
      if (!open) return [tr];
      const subs = this.sorted(detail).map(({ r: d }) => {
        const sub = this.row(d, true);
        sub.dataset.parent = String(i);
        return sub;
      });
      return [tr, ...subs];
    }));
  }

  /**
   * One table row: the site (its kind's tag and text) and its numbers. A sub-row (a library
   * line under its user line) is indented and dimmed.
   * @param {LinesRow} r
   * @param {boolean} sub
   */
  row(r, sub) {
    const tr = document.createElement('tr');
    tr.className = sub ? `sub-row kind-${r.kind}` : `site-row kind-${r.kind}`;
    const site = document.createElement('td');
    const text = document.createElement('span');
    text.className = 'site-text';
    text.textContent = r.site;
    site.append(...(sub ? [] : kindTag(r.kind)), text);
    tr.append(site);
    for (const t of [r.live, r.total, r.count.toLocaleString('en-US'), r.largest]) {
      const td = document.createElement('td');
      td.textContent = t;
      tr.append(td);
    }
    return tr;
  }

  /** Shows or hides row i's library lines. @param {number} i */
  toggle(i) {
    if (this.expanded.has(i)) this.expanded.delete(i);
    else this.expanded.add(i);
    this.render();
    const b = this.els.rows.querySelector(`button.disclose[data-i="${i}"]`);
    if (b instanceof HTMLElement) b.focus({ preventScroll: true });
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

/** An empty cell-start the size of the disclosure button, so every site's text lines up. */
function placeholder() {
  const s = document.createElement('span');
  s.className = 'disclose-space';
  return s;
}

/**
 * The "Your code" setting: which Python files count as the user's code (docs/sites.md:
 * comma-separated path prefixes or packages, one `/regex/`; empty: the default rule), applied
 * on Enter through `set_user_code` for every view; Rust's error is shown beside it. Its
 * elements are made here and placed by the page (in the Source lines panel).
 */
export class UserCodeSetting {
  /**
   * @param {Call} call
   * @param {(pattern: string) => void} onChange  called once a new pattern is applied
   */
  constructor(call, onChange) {
    this.call = call;
    this.onChange = onChange;
    /** The pattern applied (what Rust holds). */
    this.applied = '';
    const box = document.createElement('div');
    box.className = 'user-code';
    const label = document.createElement('label');
    label.htmlFor = 'user-code-input';
    label.textContent = 'Your code';
    const input = document.createElement('input');
    input.type = 'text';
    input.id = 'user-code-input';
    input.spellcheck = false;
    input.autocomplete = 'off';
    input.placeholder = 'transformers, /my_pkg/';
    input.title = 'Also count these as your code: path prefixes or packages (comma-separated) or one /regex/ on the path. Enter applies; empty: every Python file outside site-packages, the standard library and torch.';
    input.setAttribute('aria-describedby', 'user-code-status');
    const status = document.createElement('span');
    status.id = 'user-code-status';
    status.className = 'hint';
    status.setAttribute('aria-live', 'polite');
    box.append(label, input, status);
    this.element = box;
    this.input = input;
    this.status = status;
    input.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Enter') return;
      ev.preventDefault();
      this.apply(input.value);
    });
    input.addEventListener('input', () => {
      box.classList.toggle('edited', input.value.trim() !== this.applied);
    });
  }

  /** Another file or device is shown: the count said was the previous file's (an error stays). */
  fileChanged() {
    if (!this.element.classList.contains('error')) this.status.textContent = '';
  }

  /**
   * Applies a pattern (the box shows it); resolves with Rust's answer. A bad pattern keeps the
   * one applied before and says why.
   * @param {string} pattern
   */
  async apply(pattern) {
    const p = pattern.trim();
    this.input.value = pattern;
    const { result } = await this.call({ method: 'set_user_code', pattern: p }, { waitFrame: true, panel: true });
    if ('Err' in result) {
      this.element.classList.add('error');
      this.input.setAttribute('aria-invalid', 'true');
      this.status.textContent = result.Err;
      return result;
    }
    this.element.classList.remove('error', 'edited');
    this.input.removeAttribute('aria-invalid');
    const n = result.Ok.user_frames;
    this.status.textContent = p === '' ? '' : `${n.toLocaleString('en-US')} frame${n === 1 ? '' : 's'} of your code`;
    const changed = result.Ok.pattern !== this.applied;
    this.applied = result.Ok.pattern;
    if (changed) this.onChange(this.applied);
    return result;
  }
}
