// panels/compare.js: opened files side by side and the compare panel (two files' live
// allocations by stack, by growth, each named by its site: docs/sites.md). Rows are Rust's,
// placed with textContent only.
import { setChildren } from '../dom.js';
import { Panel } from './panel.js';
import { isUnavailable } from './unavailable.js';
import { siteLine } from '../details.js';
import { framesPre } from './leaks.js';

/** @typedef {import('../generated/FileRow').FileRow} FileRow */
/** @typedef {import('../generated/DiffAnswer').DiffAnswer} Diff */
/** @typedef {import('../bridge.js').Call} Call */

/**
 * @typedef {object} CompareElements
 * @property {HTMLDetailsElement} filesPanel
 * @property {HTMLTableSectionElement} filesRows
 * @property {HTMLDetailsElement} comparePanel
 * @property {HTMLSelectElement} a
 * @property {HTMLSelectElement} b
 * @property {HTMLButtonElement} button
 * @property {HTMLButtonElement} flameButton
 * @property {HTMLElement} status
 * @property {HTMLTableSectionElement} rows
 */

/**
 * Opened files side by side (per-rank peak, final, reserved bytes; a button shows the file),
 * and the compare panel (two files' live allocations by stack, by growth).
 * @extends {Panel<CompareElements>}
 */
export class FilesAndCompare extends Panel {
  /**
   * @param {CompareElements} els
   * @param {Call} call
   * @param {(i: number) => void} selectFile
   * @param {(a: number, b: number) => Promise<unknown>} diffFlame  shows the diff flamegraph of A and B
   */
  constructor(els, call, selectFile, diffFlame) {
    super(els, call);
    this.selectFile = selectFile;
    /** @type {FileRow[]} */
    this.files = [];
    /** Each opened file's device type (`cuda`, `xpu`, …: the panel's `accelerators`). @type {string[]} */
    this.devicePrefixes = [];
    /** @type {import('../generated/Avail').Avail<Diff> | null} */
    this.result = null;
    /** The files last compared (A, B). */
    this.pair = [0, 0];
    els.filesPanel.addEventListener('toggle', () => { if (els.filesPanel.open) this.loadFiles(); });
    els.comparePanel.addEventListener('toggle', () => { if (els.comparePanel.open) this.loadFiles(); });
    els.button.addEventListener('click', () => this.compare(Number(els.a.value), Number(els.b.value)));
    els.flameButton.addEventListener('click', () => diffFlame(Number(els.a.value), Number(els.b.value)));
  }

  /** The file list changed (a file opened, the current one switched). */
  refresh() {
    if (this.els.filesPanel.open || this.els.comparePanel.open) this.loadFiles();
  }

  async loadFiles() {
    const { result } = await this.call({ method: 'files' });
    this.files = result;
    setChildren(this.els.filesRows, this.files.map((f) => {
      const tr = document.createElement('tr');
      tr.setAttribute('aria-current', String(f.current));
      for (const text of [f.name, `${this.devicePrefixes[f.file] ?? 'cuda'}:${f.device}`, f.peak, f.final, f.reserved]) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      const td = document.createElement('td');
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'secondary';
      b.textContent = f.current ? 'shown' : 'show';
      b.disabled = f.current;
      b.addEventListener('click', () => this.selectFile(f.file));
      td.append(b);
      tr.append(td);
      return tr;
    }));
    /**
     * @param {HTMLSelectElement} select
     * @param {(n: number) => number} pick  the default choice among n files
     */
    const fill = (select, pick) => {
      const keep = select.value;
      setChildren(select, this.files.map((f) => {
        const o = document.createElement('option');
        o.value = String(f.file);
        o.textContent = f.name;
        return o;
      }));
      if (keep !== '' && this.files.some((f) => String(f.file) === keep)) select.value = keep;
      else if (this.files.length > 0) select.value = String(pick(this.files.length));
    };
    fill(this.els.a, (n) => Math.max(0, n - 2));
    fill(this.els.b, (n) => n - 1);
    this.els.button.disabled = this.files.length < 1;
    this.els.flameButton.disabled = this.files.length < 1;
    return this.files;
  }

  /** What counts as the user's code changed: the comparison shown is made again. */
  refreshSites() {
    const r = this.result;
    if (r !== null && !isUnavailable(r) && this.els.comparePanel.open) this.compare(this.pair[0], this.pair[1]);
  }

  /** Compares opened files `a` and `b`; resolves with Rust's answer. @param {number} a @param {number} b */
  async compare(a, b) {
    this.els.status.textContent = 'comparing…';
    // The selects name the files compared (also when the API asked).
    this.pair = [a, b];
    if ([...this.els.a.options].some((o) => o.value === String(a))) this.els.a.value = String(a);
    if ([...this.els.b.options].some((o) => o.value === String(b))) this.els.b.value = String(b);
    const { result } = await this.call({ method: 'diff', a, b });
    const r = result;
    this.result = r;
    if (r === null) {
      this.els.status.textContent = 'pick two opened files';
      return r;
    }
    if (isUnavailable(r)) {
      this.els.status.textContent = r.unavailable;
      this.els.rows.replaceChildren();
      return r;
    }
    this.els.status.textContent = `${r.group_count.toLocaleString('en-US')} stacks differ; segments only in A: ${r.segments_only_a} (${r.segments_only_a_bytes}), only in B: ${r.segments_only_b} (${r.segments_only_b_bytes})`;
    setChildren(this.els.rows, r.groups.map((g) => {
      const tr = document.createElement('tr');
      // The site, then the stack's first lines, small (the stack is what the group is).
      const stack = document.createElement('td');
      stack.append(siteLine(g.site), framesPre(g.shown.slice(0, 4), g.kinds));
      tr.append(stack);
      const cells = [g.a, g.b, g.delta, `${g.count_a} → ${g.count_b}`];
      for (const text of cells) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      return tr;
    }));
    return r;
  }
}
