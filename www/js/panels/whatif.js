// panels/whatif.js: the "What if" tab (issue 31, docs/whatif.md): a form of allocator settings
// pre-filled with the recorded ones (Rust's `whatif_info`), a capacity, and Run / Sweep / Cancel.
// The replay runs in the worker as a resumable job: this loop asks `whatif_step` for one slice
// at a time (a fraction of a second each), so the worker reads a Cancel between two. The
// results are Rust's worded answers, placed with textContent; the simulated reserved curve is
// drawn by Rust over the timelines (plot_chrome.js shows its legend and OOM mark).

import { setChildren } from '../dom.js';
import { Panel } from './panel.js';

/** @typedef {import('../generated/WhatIfInfo').WhatIfInfo} Info */
/** @typedef {import('../generated/WhatIfProgress').WhatIfProgress} Progress */
/** @typedef {import('../generated/WhatIfResult').WhatIfResult} Result */
/** @typedef {import('../generated/WhatIfRow').WhatIfRow} Row */
/** @typedef {import('../bridge.js').Call} Call */

/**
 * @typedef {object} WhatIfElements
 * @property {HTMLDetailsElement} panel
 * @property {HTMLElement} note
 * @property {HTMLInputElement} expandable
 * @property {HTMLInputElement} maxSplit
 * @property {HTMLInputElement} roundup
 * @property {HTMLInputElement} gc
 * @property {HTMLInputElement} nonSplit
 * @property {HTMLInputElement} conf
 * @property {HTMLSelectElement} capacity
 * @property {HTMLInputElement} custom
 * @property {HTMLButtonElement} run
 * @property {HTMLButtonElement} sweep
 * @property {HTMLButtonElement} cancel
 * @property {HTMLButtonElement} clear
 * @property {HTMLProgressElement} progress
 * @property {HTMLElement} status
 * @property {HTMLElement} result
 * @property {HTMLTableElement} table
 * @property {HTMLElement} rows
 * @property {(key: string) => HTMLElement} recorded  the "recorded: …" text of a setting
 */

/** Splits `a:b,c:[d,e]` at the commas outside brackets (the conf's own syntax). @param {string} conf */
function splitConf(conf) {
  /** @type {string[]} */
  const out = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < conf.length; i++) {
    const c = conf[i];
    if (c === '[') depth++;
    else if (c === ']') depth--;
    else if (c === ',' && depth <= 0) {
      out.push(conf.slice(start, i));
      start = i + 1;
    }
  }
  out.push(conf.slice(start));
  return out.map((s) => s.trim()).filter((s) => s !== '');
}

/** The "What if" tab. @extends {Panel<WhatIfElements>} */
export class WhatIfPanel extends Panel {
  /** @param {WhatIfElements} els @param {Call} call @param {() => void} changed  the settings changed (the deep link) */
  constructor(els, call, changed) {
    super(els, call);
    this.changed = changed;
    /** @type {Info | null} */
    this.info = null;
    this.key = '';
    /** @type {string | null} */
    this.loadedFor = null;
    /** The form was changed by the user or a link: the link keeps it. */
    this.touched = false;
    this.running = false;
    this.cancelled = false;
    /** @type {Result | null} */
    this.result = null;
    /** @type {Progress | null} */
    this.last = null;
    /** Milliseconds of each worker call of the last Run or Sweep: `whatif_run`, then each
     * `whatif_step` (the first prepares the start state, each other is one replay); for the
     * page benchmark (`window.memviz.whatIfStepMs()`). @type {number[]} */
    this.stepMs = [];
    /** Settings a link asked for before the tab's form was filled. @type {{conf: string, cap: string} | null} */
    this.pending = null;
    els.panel.addEventListener('toggle', () => { if (els.panel.open) this.load(); });
    els.run.addEventListener('click', () => { this.start(false); });
    els.sweep.addEventListener('click', () => { this.start(true); });
    els.cancel.addEventListener('click', () => { this.cancel(); });
    els.clear.addEventListener('click', () => { this.clear(); });
    els.capacity.addEventListener('change', () => {
      els.custom.hidden = els.capacity.value !== 'custom';
      this.edited();
    });
    for (const e of [els.expandable, els.maxSplit, els.roundup, els.gc, els.nonSplit, els.conf, els.custom]) {
      e.addEventListener('change', () => { this.edited(); });
    }
  }

  edited() {
    this.touched = true;
    this.changed();
  }

  /** The file or device changed: the form is filled again when shown. @param {string} key */
  invalidate(key) {
    if (key === this.key) return;
    this.key = key;
    this.loadedFor = null;
    this.result = null;
    setChildren(this.els.result, []);
    this.els.table.hidden = true;
    if (this.els.panel.open) this.load();
  }

  /** Fills the form with the recorded settings (or a link's) and shows a result kept. */
  async load() {
    if (this.loadedFor === this.key && this.info !== null) return this.info;
    const key = this.key;
    const { result: info } = await this.call({ method: 'whatif_info' });
    if (key !== this.key) return this.info;
    this.info = info;
    this.loadedFor = key;
    if (info === null) return null;
    const e = this.els;
    for (const k of info.keys) e.recorded(k.key).textContent = k.recorded;
    const notes = [...info.notes];
    if (!info.has_trace) notes.unshift('This device has no trace events: nothing to replay.');
    e.note.textContent = notes.join(' ');
    if (this.pending !== null) {
      this.fill(this.pending.conf, this.pending.cap);
      this.pending = null;
    } else if (!this.touched) {
      this.fillRecorded(info);
    }
    e.run.disabled = !info.has_trace || this.running;
    e.sweep.disabled = !info.has_trace || this.running;
    if (info.result) this.showResult(info.result);
    return info;
  }

  /** @param {Info} info */
  fillRecorded(info) {
    const e = this.els;
    /** @type {Record<string, HTMLInputElement>} */
    const inputs = { max_split_size_mb: e.maxSplit, roundup_power2_divisions: e.roundup, garbage_collection_threshold: e.gc, max_non_split_rounding_mb: e.nonSplit };
    for (const k of info.keys) {
      if (k.key === 'expandable_segments') e.expandable.checked = k.checked;
      else if (inputs[k.key]) inputs[k.key].value = k.value;
    }
    e.conf.value = '';
  }

  /** The conf string of the form (over PyTorch's defaults). */
  conf() {
    const e = this.els;
    const parts = [];
    if (e.expandable.checked) parts.push('expandable_segments:True');
    /** @type {[string, HTMLInputElement][]} */
    const fields = [['max_split_size_mb', e.maxSplit], ['roundup_power2_divisions', e.roundup], ['garbage_collection_threshold', e.gc]];
    for (const [k, input] of fields) {
      const v = input.value.trim();
      if (v !== '') parts.push(`${k}:${v}`);
    }
    const ns = e.nonSplit.value.trim();
    if (ns !== '' && ns !== '20') parts.push(`max_non_split_rounding_mb:${ns}`);
    const more = e.conf.value.trim();
    if (more !== '') parts.push(more);
    return parts.join(',');
  }

  /** The capacity's select value: '' (the recorded device), a preset's GiB, or `custom:N`. */
  capacityValue() {
    const e = this.els;
    return e.capacity.value === 'custom' ? `custom:${e.custom.value.trim()}` : e.capacity.value;
  }

  /** The capacity in GiB, or null. */
  capacityGib() {
    const v = this.capacityValue();
    const n = Number(v.startsWith('custom:') ? v.slice(7) : v);
    return v !== '' && Number.isFinite(n) && n > 0 ? n : null;
  }

  /** What a deep link keeps: `{conf, cap}` once the form was touched, else null. */
  settings() {
    return this.touched ? { conf: this.conf(), cap: this.capacityValue() } : null;
  }

  /**
   * Puts a link's settings in the form (now when the form is filled, else when it is).
   * @param {string} conf @param {string} cap
   */
  async setSettings(conf, cap) {
    this.touched = true;
    if (this.info === null || this.loadedFor !== this.key) this.pending = { conf, cap };
    this.fill(conf, cap);
  }

  /** @param {string} conf @param {string} cap */
  fill(conf, cap) {
    const e = this.els;
    e.expandable.checked = false;
    for (const input of [e.maxSplit, e.roundup, e.gc, e.nonSplit]) input.value = '';
    /** @type {Record<string, HTMLInputElement>} */
    const inputs = { max_split_size_mb: e.maxSplit, roundup_power2_divisions: e.roundup, garbage_collection_threshold: e.gc, max_non_split_rounding_mb: e.nonSplit };
    const rest = [];
    for (const item of splitConf(conf)) {
      const i = item.indexOf(':');
      const k = i < 0 ? item : item.slice(0, i).trim();
      const v = i < 0 ? '' : item.slice(i + 1).trim();
      if (k === 'expandable_segments' && (v === 'True' || v === 'False')) e.expandable.checked = v === 'True';
      else if (inputs[k]) inputs[k].value = v;
      else rest.push(item);
    }
    if (e.nonSplit.value === '') e.nonSplit.value = '20';
    e.conf.value = rest.join(',');
    if (cap.startsWith('custom:')) {
      e.capacity.value = 'custom';
      e.custom.value = cap.slice(7);
    } else {
      e.capacity.value = [...e.capacity.options].some((o) => o.value === cap) ? cap : '';
    }
    e.custom.hidden = e.capacity.value !== 'custom';
  }

  /** @param {boolean} busy */
  setBusy(busy) {
    const e = this.els;
    this.running = busy;
    e.run.disabled = busy;
    e.sweep.disabled = busy;
    e.cancel.disabled = !busy;
    e.progress.hidden = !busy;
  }

  /**
   * Runs the form's settings (or the sweep) to the end, one slice per call; resolves with the
   * last progress (its `result` when done, none when cancelled).
   * @param {boolean} sweep
   */
  async start(sweep) {
    if (this.running) return this.last;
    this.touched = true;
    this.changed();
    this.cancelled = false;
    this.setBusy(true);
    try {
      this.stepMs = [];
      let t0 = performance.now();
      const { result: first } = await this.call({ method: 'whatif_run', conf: this.conf(), capacity_gib: this.capacityGib(), sweep });
      this.stepMs.push(performance.now() - t0);
      let p = first;
      while (p.running) {
        this.showProgress(p);
        t0 = performance.now();
        const { result } = await this.call({ method: 'whatif_step' });
        this.stepMs.push(performance.now() - t0);
        p = result;
      }
      this.last = p;
      if (p.result) this.showResult(p.result);
      this.showProgress(p);
      return p;
    } finally {
      this.setBusy(false);
    }
  }

  /** Stops the job between two slices. */
  async cancel() {
    if (!this.running) return false;
    this.cancelled = true;
    const { result } = await this.call({ method: 'whatif_cancel' });
    return result;
  }

  /** Drops the result and its curve. */
  async clear() {
    await this.call({ method: 'whatif_clear' }, { waitFrame: true });
    this.result = null;
    setChildren(this.els.result, []);
    this.els.table.hidden = true;
    this.els.clear.disabled = true;
    this.els.status.textContent = '';
  }

  /** @param {Progress} p */
  showProgress(p) {
    this.els.progress.value = p.fraction;
    this.els.status.textContent = this.cancelled && !p.result ? 'Cancelled.' : p.text;
  }

  /** @param {Result} r */
  showResult(r) {
    this.result = r;
    const e = this.els;
    e.clear.disabled = false;
    const head = document.createElement('p');
    head.textContent = r.sweep
      ? `Sweep over the standard alternatives on ${r.capacity} (the curve of the marked row is drawn over the timelines; click a row to draw another).`
      : `Replayed on ${r.capacity}.`;
    /** @type {HTMLElement[]} */
    const parts = [head];
    if (r.warnings.length > 0) {
      const w = document.createElement('p');
      w.className = 'hint';
      w.textContent = r.warnings.join(' ');
      parts.push(w);
    }
    if (!r.sweep && r.rows.length > 0) parts.push(this.rowList(r.rows[0]));
    setChildren(e.result, parts);
    e.table.hidden = !r.sweep;
    if (r.sweep) this.showRows(r);
  }

  /** One run's answers as a definition list. @param {Row} row */
  rowList(row) {
    const dl = document.createElement('dl');
    dl.className = 'whatif-numbers';
    const oom = row.first_oom;
    /** @type {[string, string][]} */
    const items = [
      ['settings', row.settings],
      ['peak reserved', row.peak_reserved],
      ['peak allocated', row.peak_allocated],
      ['fragmentation at the peak', row.fragmentation],
      ['cudaMalloc / cudaFree', `${row.cuda_mallocs.toLocaleString('en-US')} / ${row.cuda_frees.toLocaleString('en-US')}`],
      ['first OOM', oom ? `event ${oom.event.toLocaleString('en-US')} (trace row ${oom.trace_row.toLocaleString('en-US')}): ${oom.requested} requested at ${oom.site}${oom.recorded ? ' (recorded too)' : ''}; ${oom.free}` : 'none'],
      ['smallest capacity', row.min_capacity],
    ];
    for (const [k, v] of items) {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v;
      if (k === 'first OOM' && oom) dd.className = 'whatif-oom';
      dl.append(dt, dd);
    }
    return dl;
  }

  /** The sweep's table: one row per alternative, the best marked. @param {Result} r */
  showRows(r) {
    setChildren(this.els.rows, r.rows.map((row, i) => {
      const tr = document.createElement('tr');
      if (i === r.best) tr.classList.add('best');
      tr.setAttribute('aria-selected', String(i === r.shown));
      tr.title = 'Draw this setting\'s simulated reserved memory over the timelines';
      const oom = row.first_oom;
      const cells = [
        i === r.best ? `★ ${row.name}` : row.name,
        row.peak_reserved,
        row.fragmentation,
        `${row.cuda_mallocs.toLocaleString('en-US')} / ${row.cuda_frees.toLocaleString('en-US')}`,
        oom ? `event ${oom.event.toLocaleString('en-US')}: ${oom.requested} at ${oom.site}` : 'none',
        row.min_capacity,
      ];
      for (const c of cells) {
        const td = document.createElement('td');
        td.textContent = c;
        tr.append(td);
      }
      tr.addEventListener('click', () => { this.show(i); });
      return tr;
    }));
  }

  /** Draws sweep row `i`'s curve. @param {number} i */
  async show(i) {
    const { result } = await this.call({ method: 'whatif_show', row: i }, { waitFrame: true });
    if (result) {
      this.result = result;
      this.showRows(result);
    }
    return result;
  }
}
