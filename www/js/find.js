// find.js: the search box (matches highlighted on the timeline, count and bytes shown, "only
// matches" hides the rest) and the sortable per-source-line table (a row highlights its
// allocations). Rows and numbers are Rust's (crates/memviz-viewer/src/app/panels.rs `search`,
// `lines_json`), placed with textContent only.
//
// A panel that cannot fit in the memory the page has left answers `{"unavailable": sentence}`
// (Rust's sentence: what it needs, what is free, the command line that gives the same answer):
// it is shown as text in the panel's own status line and, as a view that cannot fit is, in the
// notice above the file (`onUnavailable`).
import { setChildren } from './dom.js';

/** Shows a panel's "cannot fit" sentence in the page's notice (set by main.js). */
let notify = (_text) => {};

/** Sets what shows a panel's "cannot fit" sentence outside the panel. */
export function onUnavailable(fn) {
  notify = fn;
}

/**
 * Rust's sentence when `r` (a parsed answer) says the panel cannot fit in memory, else null.
 * It is also handed to the notice.
 */
export function unavailable(r) {
  if (r === null || typeof r !== 'object' || Array.isArray(r) || typeof r.unavailable !== 'string') return null;
  notify(r.unavailable);
  return r.unavailable;
}

/**
 * @param {object} els  `{input, only, status}`
 * @param {(method: string, args: any[], opts?: object) => Promise<{result: any}>} call
 */
export class SearchBox {
  constructor(els, call) {
    this.els = els;
    this.call = call;
    /** The last answer (parsed), or null. */
    this.result = null;
    this.timer = 0;
    els.input.addEventListener('input', () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.run(), 250);
    });
    els.input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        clearTimeout(this.timer);
        this.run();
      }
    });
    els.only.addEventListener('change', () => this.run());
  }

  /** Runs the query in the box; resolves with Rust's answer after the frame is drawn. */
  async run() {
    const q = this.els.input.value;
    const { result } = await this.call('search', [q, this.els.only.checked], { waitFrame: true });
    const r = JSON.parse(result);
    this.result = r;
    const why = unavailable(r);
    if (why !== null) {
      this.els.status.textContent = why;
    } else if (r === null || r.query === '') {
      this.els.status.textContent = '';
    } else if (r.error) {
      this.els.status.textContent = `bad pattern: ${r.error}`;
    } else {
      this.els.status.textContent = `${r.count.toLocaleString('en-US')} match${r.count === 1 ? '' : 'es'}, ${r.size}`;
    }
    return r;
  }

  /** A new file, device or view: the highlight is gone, so is the query. */
  reset() {
    this.els.input.value = '';
    this.els.status.textContent = '';
    this.result = null;
  }
}

/**
 * @param {object} els  `{panel, table, rows, allFrames, status}`
 * @param {(method: string, args: any[], opts?: object) => Promise<{result: any}>} call
 * @param {(text: string) => void} onHighlight  called with a status line after a row click
 */
export class LinesTable {
  constructor(els, call, onHighlight) {
    this.els = els;
    this.call = call;
    this.onHighlight = onHighlight;
    this.rows = [];
    this.sortKey = 'live_at_peak_bytes';
    this.descending = true;
    this.selected = -1;
    this.loadedFor = null;
    this.key = '';
    els.panel.addEventListener('toggle', () => { if (els.panel.open) this.load(); });
    els.allFrames.addEventListener('change', () => { this.loadedFor = null; this.load(); });
    els.table.querySelector('thead').addEventListener('click', (ev) => {
      const th = ev.target instanceof Element ? ev.target.closest('th') : null;
      if (th === null) return;
      const key = th.dataset.key;
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

  /** The file / device / view changed: reload when shown. */
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
    const { result } = await this.call('lines', [this.els.allFrames.checked]);
    const r = JSON.parse(result);
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
      const cells = [`${r.file}:${r.line} ${r.name}`, r.live, r.total, r.count.toLocaleString('en-US'), r.largest];
      for (const text of cells) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      return tr;
    }));
  }

  /** Highlights row i's allocations on the timeline (a second click clears). */
  async highlight(i) {
    const r = this.rows[i];
    if (!r) return 0;
    if (i === this.selected) {
      this.selected = -1;
      await this.call('clear_highlight', [], { waitFrame: true });
      this.onHighlight('');
      this.render();
      return 0;
    }
    this.selected = i;
    this.render();
    const { result } = await this.call('highlight_line', [r.file, r.line, r.name, this.els.allFrames.checked], { waitFrame: true });
    const answer = JSON.parse(result);
    const why = unavailable(answer);
    if (why !== null) {
      this.selected = -1;
      this.render();
      this.onHighlight(why);
      return 0;
    }
    this.onHighlight(`${Number(answer).toLocaleString('en-US')} allocations from ${r.file}:${r.line} highlighted`);
    return Number(answer);
  }
}

/** Formats µs as the tooltip does: µs, ms or s with one decimal. */
function ageText(us) {
  if (us === null || us === undefined) return '';
  if (us < 1000) return `${us} µs`;
  if (us < 1e6) return `${(us / 1000).toFixed(1)} ms`;
  return `${(us / 1e6).toFixed(1)} s`;
}

/**
 * "Alive at a moment": every allocation live at the peak or at the last clicked timestep.
 * @param {object} els  `{panel, refresh, peak, status, rows}`
 */
export class LiveTable {
  constructor(els, call) {
    this.els = els;
    this.call = call;
    this.result = null;
    els.panel.addEventListener('toggle', () => { if (els.panel.open) this.show(-1); });
    els.refresh.addEventListener('click', () => this.show(-1));
    els.peak.addEventListener('click', () => this.show(-2));
  }

  /** `step` ≥ 0: that timestep; -1: the last click (else the peak); -2: the peak. */
  async show(step) {
    const { result } = await this.call('live', [step === -2 ? -1e9 : step]);
    const r = JSON.parse(result);
    this.result = r;
    if (r === null) return r;
    const why = unavailable(r);
    if (why !== null) {
      this.els.status.textContent = why;
      this.els.rows.replaceChildren();
      return r;
    }
    this.els.status.textContent = `${r.count.toLocaleString('en-US')} allocations alive at timestep ${r.step.toLocaleString('en-US')}, ${r.total}${r.count > r.rows.length ? ` (the ${r.rows.length} largest listed)` : ''}`;
    setChildren(this.els.rows, r.rows.map((x) => {
      const tr = document.createElement('tr');
      for (const text of [x.label, x.size_text, x.age_steps.toLocaleString('en-US'), ageText(x.age_us), `stream ${x.stream}`, x.top_frame]) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
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

/** The leak suspects, each explained in a sentence with its top frames. */
export class LeaksPanel {
  constructor(els, call) {
    this.els = els;
    this.call = call;
    this.report = null;
    this.loadedFor = null;
    this.key = '';
    els.panel.addEventListener('toggle', () => { if (els.panel.open) this.load(); });
  }

  invalidate(key) {
    if (key === this.key) return;
    this.key = key;
    this.loadedFor = null;
    if (this.els.panel.open) this.load();
  }

  async load() {
    if (this.loadedFor === this.key && this.report !== null) return this.report;
    const key = this.key;
    const { result } = await this.call('leaks', []);
    const r = JSON.parse(result);
    const why = unavailable(r);
    if (why !== null) {
      // Not kept: opening the panel again asks again.
      this.report = null;
      this.loadedFor = null;
      this.els.rule.textContent = why;
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

/**
 * Opened files side by side (per-rank peak, final, reserved bytes; a button shows the file),
 * and the compare panel (two files' live allocations by stack, by growth).
 * @param {object} els  `{filesPanel, filesRows, comparePanel, a, b, button, flameButton, status, rows}`
 * @param {(i: number) => void} selectFile
 * @param {(a: number, b: number) => Promise<any>} diffFlame  shows the diff flamegraph of A and B
 */
export class FilesAndCompare {
  constructor(els, call, selectFile, diffFlame) {
    this.els = els;
    this.call = call;
    this.selectFile = selectFile;
    this.files = [];
    this.result = null;
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
    const { result } = await this.call('files', []);
    this.files = JSON.parse(result);
    setChildren(this.els.filesRows, this.files.map((f) => {
      const tr = document.createElement('tr');
      tr.setAttribute('aria-current', String(f.current));
      for (const text of [f.name, `cuda:${f.device}`, f.peak, f.final, f.reserved]) {
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

  async compare(a, b) {
    this.els.status.textContent = 'comparing…';
    const { result } = await this.call('diff', [a, b]);
    const r = JSON.parse(result);
    this.result = r;
    if (r === null) {
      this.els.status.textContent = 'pick two opened files';
      return r;
    }
    const why = unavailable(r);
    if (why !== null) {
      this.els.status.textContent = why;
      this.els.rows.replaceChildren();
      return r;
    }
    this.els.status.textContent = `${r.group_count.toLocaleString('en-US')} stacks differ; segments only in A: ${r.segments_only_a} (${r.segments_only_a_bytes}), only in B: ${r.segments_only_b} (${r.segments_only_b_bytes})`;
    setChildren(this.els.rows, r.groups.map((g) => {
      const tr = document.createElement('tr');
      const cells = [g.shown.slice(0, 4).join('\n') || '<no frames>', g.a, g.b, g.delta, `${g.count_a} → ${g.count_b}`];
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

/**
 * The flamegraph's controls: the moment (peak, last click, whole trace, an annotation phase as a
 * time range, or the diff of two files), all frames, the breadcrumb (click to zoom out to that
 * frame) and the frame names over wide rects.
 * @param {object} els  `{controls, at, allFrames, breadcrumb, status, labels}`
 */
export class FlameControls {
  constructor(els, call) {
    this.els = els;
    this.call = call;
    this.info = null;
    this.shown = false;
    this.pending = false;
    /** `[a, b]` while the diff flamegraph is chosen. */
    this.diff = null;
    /** Why the last choice could not be shown (Rust's sentence), or null. */
    this.why = null;
    this.fixed = [...els.at.options].map((o) => o.cloneNode(true));
    els.at.addEventListener('change', () => this.apply());
    els.allFrames.addEventListener('change', () => this.apply());
  }

  show(on) {
    this.shown = on;
    this.els.controls.hidden = !on;
    if (!on) this.els.labels.replaceChildren();
  }

  /** A new file or device in the flamegraph view: lists its phases, then builds at the choice. */
  async enter() {
    const { result } = await this.call('flame_phases', []);
    const phases = JSON.parse(result);
    const keep = this.els.at.value;
    this.diff = null;
    const options = this.fixed.map((o) => o.cloneNode(true));
    for (const p of phases) {
      const o = document.createElement('option');
      o.value = `phase:${p.index}`;
      o.textContent = `phase ${p.name} (bytes × lifetime within it)`;
      options.push(o);
    }
    setChildren(this.els.at, options);
    this.els.at.value = options.some((o) => o.value === keep) ? keep : 'peak';
    return this.apply();
  }

  /** Rebuilds at the chosen moment; resolves with the state JSON after the frame is drawn. */
  async apply() {
    const at = this.els.at.value;
    if (at === 'diff' && this.diff) return this.showDiff(this.diff[0], this.diff[1]);
    this.setDiffOption(null);
    const lifetime = at === 'lifetime';
    const { result } = await this.call('flame_set', [lifetime ? 'peak' : at, lifetime, this.els.allFrames.checked], { waitFrame: true });
    const st = JSON.parse(result);
    // Shown instead of the status until the next choice (the flamegraph stays as it was).
    this.why = unavailable(st);
    await this.refresh();
    return st;
  }

  /** Shows the diff flamegraph of opened files `a` and `b`; resolves with its state JSON. */
  async showDiff(a, b) {
    this.diff = [a, b];
    const { result } = await this.call('flame_diff', [a, b, this.els.allFrames.checked], { waitFrame: true });
    const st = JSON.parse(result);
    this.why = unavailable(st);
    this.setDiffOption(st && st.diff ? `compare ${st.diff.a} → ${st.diff.b} (red: grew, blue: shrank)` : null);
    await this.refresh();
    return st;
  }

  /** Adds (text) or removes (null) the `diff` choice of the moment select. */
  setDiffOption(text) {
    const old = [...this.els.at.options].find((o) => o.value === 'diff');
    if (text === null) {
      if (old) old.remove();
      this.diff = null;
      return;
    }
    const o = old || document.createElement('option');
    o.value = 'diff';
    o.textContent = text;
    if (!old) this.els.at.append(o);
    this.els.at.value = 'diff';
  }

  /** Fetches the breadcrumb, labels and state (after each drawn frame while shown). */
  async refresh() {
    if (!this.shown) return null;
    const { result } = await this.call('flame_info', []);
    const info = JSON.parse(result);
    this.info = info;
    if (info === null) return null;
    const s = info.state;
    let status = `${s.total_text} in ${s.nodes.toLocaleString('en-US')} frames`;
    if (s.diff) status = `A ${s.diff.a_text} → B ${s.diff.b_text} (${s.diff.delta_text}) in ${s.nodes.toLocaleString('en-US')} frames`;
    if (s.matched_text !== null && s.matched_text !== undefined) status += `; search matches ${s.matched_text}`;
    this.els.status.textContent = this.why || status;
    setChildren(this.els.breadcrumb, info.breadcrumb.map((c, i) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'secondary';
      b.textContent = i === 0 ? `all (${c.size})` : c.name;
      b.title = `${c.name} (${c.size})`;
      b.disabled = i === info.breadcrumb.length - 1;
      b.addEventListener('click', async () => {
        await this.call('flame_zoom_to', [c.node], { waitFrame: true });
        this.refresh();
      });
      return b;
    }));
    setChildren(this.els.labels, info.labels.map((l) => {
      const span = document.createElement('span');
      span.textContent = l.short || l.text;
      span.title = l.text;
      span.style.left = `${l.x_css}px`;
      span.style.top = `${l.y_css}px`;
      span.style.width = `${l.w_css}px`;
      span.style.height = `${l.h_css}px`;
      span.style.lineHeight = `${l.h_css}px`;
      return span;
    }));
    return info;
  }

  /** After a drawn frame: refresh at most once per animation frame. */
  onFrame() {
    if (!this.shown || this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.refresh();
    });
  }
}
