// state_history.js: the Allocator State History panel — a virtualised event list (one DOM
// row per *visible* event, whatever the trace length), search, keyboard navigation, the
// header and the OOM explanation. Rows, the header, the OOM numbers and every label come from
// Rust as text (crates/memviz-viewer/src/state_view.rs) and are placed with textContent only.
import { setChildren } from './dom.js';
import { siteLine } from './details.js';

/** @typedef {import('./generated/StateSelection').StateSelection} StateSelection */
/** @typedef {import('./generated/StateRow').StateRow} StateRow */
/** @typedef {import('./generated/OomAnswer').OomAnswer} Oom */

/** The OOM verdict's kind (Rust's `explain_oom`) as shown. */
/** @type {Record<string, string>} */
const VERDICT_LABELS = {
  fragmentation: 'fragmentation',
  out_of_memory: 'genuinely out of memory',
  allocation_failed: 'the allocation failed with enough memory free',
};

/** Height of one row, CSS px: matches `#state-rows .row` in main.css. */
const ROW_H = 20;
/** The list's scroll height never exceeds this (browsers cap element heights near 33.5M px);
 * longer lists map their scroll position proportionally onto the events. */
const MAX_SCROLL_PX = 4_000_000;

/**
 * The panel's elements (see main.js).
 * @typedef {object} StateElements
 * @property {HTMLElement} list
 * @property {HTMLElement} spacer
 * @property {HTMLElement} rows
 * @property {HTMLInputElement} search
 * @property {HTMLButtonElement} prev
 * @property {HTMLButtonElement} next
 * @property {HTMLElement} searchStatus
 * @property {HTMLElement} ooms
 * @property {HTMLElement} totals
 * @property {HTMLElement} event
 * @property {HTMLElement} oomVerdict
 * @property {HTMLElement} oomNumbers
 * @property {HTMLElement} oomBiggest
 */

export class StateHistory {
  /**
   * @param {StateElements} els
   * @param {import('./bridge.js').Call} call
   * @param {(json: string | null) => void} showTooltip
   * @param {{selection: (sel: StateSelection | null) => void, oom: (shown: boolean) => void}} on
   *   the selection changed (the details pane shows its stack); an OOM explanation is shown or not
   */
  constructor(els, call, showTooltip, on) {
    this.els = els;
    this.call = call;
    this.showTooltip = showTooltip;
    this.on = on;
    this.count = 0;
    this.selected = -1;
    /** The last selection JSON (parsed). @type {StateSelection | null} */
    this.selection = null;
    /** Cached rows: k → {k, text, kind}. @type {Map<number, StateRow>} */
    this.rows = new Map();
    /** The events of the OOMs. @type {number[]} */
    this.ooms = [];
    this.generation = 0;
    /** A selection in flight and the latest one asked for meanwhile. */
    this.busy = false;
    /** @type {number | null} */
    this.queued = null;
    this.renderScheduled = false;
    els.list.addEventListener('scroll', () => this.scheduleRender());
    els.list.addEventListener('keydown', (ev) => this.onKey(ev));
    els.rows.addEventListener('click', (ev) => {
      const row = ev.target instanceof Element ? ev.target.closest('.row') : null;
      if (!(row instanceof HTMLElement)) return;
      els.list.focus({ preventScroll: true });
      this.select(Number(row.dataset.k));
    });
    els.search.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        this.search(!ev.shiftKey);
      }
    });
    els.prev.addEventListener('click', () => this.search(false));
    els.next.addEventListener('click', () => this.search(true));
    new ResizeObserver(() => {
      this.sizeSpacer();
      // The list got shorter (the drawer opened): the selected event stays in view.
      this.scrollTo(this.selected);
      this.scheduleRender();
    }).observe(els.list);
  }

  /** A new file, device or the view shown: reloads the list; selects the last event. */
  async reset() {
    this.generation += 1;
    const gen = this.generation;
    this.rows.clear();
    this.els.searchStatus.textContent = '';
    const { result } = await this.call({ method: 'state_select', k: -1 }, { waitFrame: true });
    if (gen !== this.generation) return;
    this.applySelection(result);
    const ooms = await this.call({ method: 'state_ooms' });
    if (gen !== this.generation) return;
    this.ooms = ooms.result;
    this.showOoms();
    this.sizeSpacer();
    this.scrollTo(this.selected);
    this.scheduleRender();
  }

  /** The spacer after the (viewport-high, sticky) rows box makes the scroll height. */
  sizeSpacer() {
    this.els.spacer.style.height = `${Math.max(0, this.scrollHeight() - this.els.list.clientHeight)}px`;
  }

  scrollHeight() {
    return Math.min(this.count * ROW_H, MAX_SCROLL_PX);
  }

  /** The virtual pixel (row k at k * ROW_H) at the top of the list. */
  virtualTop() {
    const list = this.els.list;
    const view = list.clientHeight;
    const real = this.scrollHeight() - view;
    const virt = this.count * ROW_H - view;
    if (real <= 0 || virt <= 0) return 0;
    return (list.scrollTop / real) * virt;
  }

  /** Scrolls so that event k is visible (centred when it was not). @param {number} k */
  scrollTo(k) {
    if (k < 0) return;
    const list = this.els.list;
    const view = list.clientHeight;
    const top = this.virtualTop();
    const y = k * ROW_H;
    if (y >= top && y + ROW_H <= top + view) return;
    const virt = this.count * ROW_H - view;
    const real = this.scrollHeight() - view;
    const want = Math.max(0, Math.min(virt, y - view / 2 + ROW_H / 2));
    list.scrollTop = virt > 0 ? (want / virt) * real : 0;
    this.scheduleRender();
  }

  scheduleRender() {
    if (this.renderScheduled) return;
    this.renderScheduled = true;
    requestAnimationFrame(() => {
      this.renderScheduled = false;
      this.render();
    });
  }

  visibleRange() {
    const top = this.virtualTop();
    const first = Math.max(0, Math.floor(top / ROW_H));
    const n = Math.ceil(this.els.list.clientHeight / ROW_H) + 2;
    return { top, first, last: Math.min(this.count, first + n) };
  }

  async render() {
    const { top, first, last } = this.visibleRange();
    const missing = [];
    for (let k = first; k < last; k += 1) if (!this.rows.has(k)) missing.push(k);
    if (missing.length > 0) {
      const gen = this.generation;
      const start = missing[0];
      const { result } = await this.call({ method: 'state_rows', start, count: missing[missing.length - 1] - start + 1 });
      if (gen !== this.generation) return;
      if (this.rows.size > 5000) this.rows.clear();
      for (const r of result) this.rows.set(r.k, r);
      // The list may have scrolled meanwhile: draw what is visible now.
      const now = this.visibleRange();
      if (now.first !== first) {
        this.scheduleRender();
        return;
      }
    }
    const offset = top - first * ROW_H;
    const children = [];
    for (let k = first; k < last; k += 1) {
      const r = this.rows.get(k);
      if (!r) continue;
      const div = document.createElement('div');
      div.className = `row ${r.kind}`;
      div.setAttribute('role', 'option');
      div.dataset.k = String(k);
      div.id = `state-row-${k}`;
      div.setAttribute('aria-selected', String(k === this.selected));
      div.style.top = `${(k - first) * ROW_H - offset}px`;
      div.textContent = `${k}: ${r.text}`;
      div.title = div.textContent; // a long row (an OOM) is elided: the whole text on hover
      children.push(div);
    }
    setChildren(this.els.rows, children);
    if (this.selected >= first && this.selected < last) {
      this.els.list.setAttribute('aria-activedescendant', `state-row-${this.selected}`);
    }
  }

  /** Selects event k (coalescing fast key repeats: only the latest waiting one is sent). */
  /** @param {number} k */
  async select(k) {
    if (this.count === 0) return null;
    const target = Math.max(0, Math.min(this.count - 1, Math.round(k)));
    this.selected = target;
    this.scrollTo(target);
    this.scheduleRender();
    if (this.busy) {
      this.queued = target;
      return null;
    }
    this.busy = true;
    const gen = this.generation;
    /** @type {StateSelection | null} */
    let sel = null;
    try {
      /** @type {number | null} */
      let next = target;
      while (next !== null) {
        this.queued = null;
        const { result } = await this.call({ method: 'state_select', k: next }, { waitFrame: true });
        if (gen !== this.generation) return null;
        sel = result;
        this.applySelection(sel);
        next = this.queued;
      }
    } finally {
      this.busy = false;
    }
    return sel;
  }

  /** @param {StateSelection | null} sel */
  applySelection(sel) {
    if (sel === null) return;
    this.selection = sel;
    this.count = sel.count;
    if (sel.event !== null && !this.busy) this.selected = sel.event;
    this.sizeSpacer();
    this.els.totals.textContent = sel.header;
    this.els.event.textContent = sel.text === null
      ? 'no trace events: the final snapshot'
      : `event ${sel.event}: ${sel.text.replace('\n', ' ')}`;
    this.showOom(sel.oom);
    this.showTooltip(null);
    this.on.selection(sel);
    this.scheduleRender();
  }

  showOoms() {
    const box = this.els.ooms;
    if (this.ooms.length === 0) {
      box.hidden = true;
      box.replaceChildren();
      return;
    }
    const label = document.createElement('span');
    label.textContent = `${this.ooms.length} OOM event${this.ooms.length === 1 ? '' : 's'}:`;
    const buttons = this.ooms.slice(0, 8).map((k) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'secondary';
      b.textContent = `#${k}`;
      b.addEventListener('click', () => this.select(k));
      return b;
    });
    box.replaceChildren(label, ...buttons);
    box.hidden = false;
  }

  /** @param {Oom | null} oom */
  showOom(oom) {
    const e = this.els;
    if (!oom) {
      this.on.oom(false);
      return;
    }
    e.oomVerdict.textContent = oom.verdict;
    const pairs = [
      ['requested', oom.requested],
      ['device free', oom.device_free === null ? 'not recorded' : oom.device_free],
      ['reserved but free', oom.reserved_free],
      ['largest free block (same stream and pool)', oom.largest_free],
      ['verdict', VERDICT_LABELS[oom.kind] || oom.kind],
    ];
    setChildren(e.oomNumbers, pairs.flatMap(([k, v]) => {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v;
      return [dt, dd];
    }));
    setChildren(e.oomBiggest, oom.biggest_live_text.map((b) => {
      const li = document.createElement('li');
      const btn = document.createElement('button');
      btn.type = 'button';
      btn.className = 'secondary';
      btn.textContent = b.text || b.size;
      btn.title = 'Show it in the map';
      btn.addEventListener('click', () => this.focus(b.addr));
      // Its site (docs/sites.md): the kind's tag, the line (`.source-line`), the library line dimmed.
      const site = siteLine(b.site);
      const label = site.querySelector('.site-label');
      if (label) label.classList.add('source-line');
      li.append(btn, ' ', site);
      return li;
    }));
    this.on.oom(true);
  }

  /** What counts as the user's code changed: the selection (its OOM's sites) is asked again. */
  async refreshSites() {
    if (this.count === 0 || this.selected < 0) return null;
    return this.select(this.selected);
  }

  /** Pins and shows a block (address as a decimal string) in the map. */
  /** @param {string} addr */
  async focus(addr) {
    const { result } = await this.call({ method: 'state_focus', addr }, { waitFrame: true });
    this.showTooltip(result === null ? null : JSON.stringify(result));
    return result;
  }

  /** Finds the next (or previous) event matching the search box from the selection. @param {boolean} forward */
  async search(forward) {
    const q = this.els.search.value;
    if (q.trim() === '') {
      this.els.searchStatus.textContent = '';
      return -1;
    }
    this.els.searchStatus.textContent = 'searching…';
    const { result } = await this.call({ method: 'state_search', query: q, from: this.selected, forward });
    const k = Number(result);
    if (k < 0) {
      this.els.searchStatus.textContent = 'no match';
      return -1;
    }
    this.els.searchStatus.textContent = `match at event ${k}`;
    await this.select(k);
    return k;
  }

  /** @param {KeyboardEvent} ev */
  onKey(ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || this.count === 0) return;
    const page = Math.max(1, Math.floor(this.els.list.clientHeight / ROW_H) - 1);
    const k = this.selected < 0 ? this.count - 1 : this.selected;
    /** @type {Record<string, number>} */
    const moves = {
      ArrowUp: k - 1, ArrowDown: k + 1, PageUp: k - page, PageDown: k + page, Home: 0, End: this.count - 1,
    };
    if (!Object.hasOwn(moves, ev.key)) return;
    ev.preventDefault();
    this.select(moves[ev.key]);
  }
}
