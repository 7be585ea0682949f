// details.js: the details pane docked beside the plot (resizable, collapsible) and the small
// hover hint. It shows the hovered or pinned item (a timeline allocation, a State History
// block or segment, a flamegraph frame) or, in the State History, the selected event: its
// title, its site (docs/sites.md: the user's line → the library line it called), facts, notes
// and stack, Python frames first (the user's highlighted, the libraries' dimmed) and the C++ and
// interpreter frames folded into one row. Every text comes from Rust (the tooltip answers) and
// is placed with textContent only; which frames are Python is Rust's `python` flags, each
// line's kind Rust's `kinds` (used only to pick a CSS class).

import { dragToResize } from './drag.js';

/** @typedef {import('./generated/ElementTip').ElementTip} ElementTip */
/** @typedef {import('./generated/ItemTip').ItemTip} ItemTip */
/** @typedef {import('./generated/NodeTip').NodeTip} NodeTip */
/** @typedef {ElementTip | ItemTip | NodeTip} Tip */
/** @typedef {import('./generated/StateSelection').StateSelection} StateSelection */

/** Width limits of the pane, CSS px. */
const MIN_W = 220;
const MAX_FRACTION = 0.6;
/** About one line of the hover hint, CSS px (it flips above the pointer when two do not fit below). */
const HINT_LINE_PX = 22;

/**
 * @param {string} tag
 * @param {string} [text]
 * @param {string} [className]
 */
function el(tag, text, className) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (className) e.className = className;
  return e;
}

/** @typedef {import('./generated/SiteText').SiteText} SiteText */

/**
 * How each site kind is marked: the tag's tooltip (its short word is CSS's, `.kind-tag.kind-…`
 * in main.css, so a cell's text stays the site). Presentation only: the kind is Rust's.
 * @type {Record<string, string>}
 */
const KIND_TITLES = {
  user: 'your code: the innermost line of your code',
  library: 'library: no frame of your code; the innermost library line',
  autograd: 'autograd: a backward-pass allocation (no Python frame); the autograd node',
  native: 'C++: no Python frame; the innermost C++ function',
};

/**
 * A small tag naming a site's kind (`user`, `library`, `autograd`, `native`): its word comes
 * from CSS, its title from KIND_TITLES; nothing for another kind (`none`).
 * @param {string} kind
 * @returns {HTMLElement[]}
 */
export function kindTag(kind) {
  if (!Object.hasOwn(KIND_TITLES, kind)) return [];
  const t = el('span', undefined, `kind-tag kind-${kind}`);
  t.setAttribute('role', 'img');
  t.setAttribute('aria-label', kind === 'user' ? 'your code' : kind === 'native' ? 'C++' : kind);
  t.title = KIND_TITLES[kind];
  return [t];
}

/**
 * A site as one line: its kind's tag, its label and, dimmed, `→ detail` (the library line it
 * called into). `tag` false leaves the tag out.
 * @param {SiteText} site
 * @param {string} [className]
 * @param {boolean} [tag]
 * @returns {HTMLElement}
 */
export function siteLine(site, className = 'site-line', tag = true) {
  const box = el('span', undefined, `${className} kind-${site.kind}`);
  box.append(...(tag ? kindTag(site.kind) : []), el('span', site.label, 'site-label'));
  if (site.detail) box.append(el('span', ` → ${site.detail}`, 'site-detail'));
  box.title = site.detail ? `${site.label} → ${site.detail}` : site.label;
  return box;
}

/**
 * Frame lines as list items, each with its kind's class (`user`, `library`, `interpreter`,
 * `native`, `note`: Rust's `kinds`), a newline between them so that copying the list gives
 * the lines.
 * @param {{line: string, kind: string}[]} lines
 */
function frameList(lines) {
  const ol = el('ol', undefined, 'frames');
  lines.forEach(({ line, kind }, i) => {
    if (i > 0) ol.append('\n');
    ol.append(el('li', line, kind ? `frame ${kind}` : 'frame'));
  });
  return ol;
}

/**
 * The stack as a list: Python frames first (innermost first; the user's highlighted, the
 * libraries' dimmed, notes as text), then the other frames (interpreter, C++, their notes) in
 * a folded "n C++/interpreter frames" row. Without flags (a flamegraph path) one plain list.
 * The last `explanation` lines are memory_viz's explanation of a missing stack (Rust's
 * `explanation_lines`): shown as text under "No stack recorded", never counted as frames.
 * @param {string[]} frames
 * @param {boolean[]} python
 * @param {number} [explanation]
 * @param {string[]} [kinds]  each line's kind (Rust's `kinds`); empty: no classes
 * @returns {HTMLElement[]}
 */
export function stackNodes(frames, python, explanation = 0, kinds = []) {
  const n = Math.min(Math.max(0, explanation | 0), frames.length);
  if (n > 0) {
    const notes = frames.slice(0, frames.length - n);
    const box = el('div', undefined, 'no-stack');
    box.append(el('div', 'No stack recorded', 'stack-head'));
    for (const line of frames.slice(frames.length - n)) box.append(el('p', line));
    return [...(notes.length > 0 ? [el('pre', notes.join('\n'))] : []), box];
  }
  if (frames.length === 0) return [];
  const withKinds = kinds.length === frames.length;
  const lines = frames.map((line, i) => ({ line, kind: withKinds ? kinds[i] : '' }));
  const count = (/** @type {{kind: string}[]} */ ls) => (withKinds ? ls.filter((l) => l.kind !== 'note').length : ls.length);
  if (python.length !== frames.length || !python.some(Boolean)) {
    const c = count(lines);
    return [el('div', `Stack (${c} frame${c === 1 ? '' : 's'}, innermost first)`, 'stack-head'), frameList(lines)];
  }
  const py = lines.filter((_, i) => python[i]);
  const other = lines.filter((_, i) => !python[i]);
  const out = [el('div', `Python frames (${count(py)}, innermost first)`, 'stack-head'), frameList(py)];
  if (other.length > 0) {
    const c = count(other);
    const d = /** @type {HTMLDetailsElement} */ (el('details', undefined, 'cpp'));
    d.append(el('summary', `${c} C++/interpreter frame${c === 1 ? '' : 's'}`), frameList(other));
    out.push(d);
  }
  return out;
}

/**
 * The tip's site (timeline elements and State History items have one), or null.
 * @param {Tip} tip
 * @returns {SiteText | null}
 */
function siteOf(tip) {
  return 'site' in tip && tip.site && tip.site.kind !== 'none' ? tip.site : null;
}

/**
 * The facts of a timeline element as label/value pairs (empty for other tooltips).
 * @param {Tip} tip
 * @returns {[string, string][]}
 */
function facts(tip) {
  if (!('element' in tip)) return [];
  /** @type {[string, string][]} */
  const out = [['address', tip.address_label]];
  out.push(['stream', String(tip.stream)]);
  if (tip.pool_id) out.push(['pool', `(${tip.pool_id[0]}, ${tip.pool_id[1]})`]);
  if (tip.compile_context) out.push(['compile context', tip.compile_context]);
  return out;
}

export class DetailsPane {
  /**
   * @param {{pane: HTMLElement, splitter: HTMLElement, toggle: HTMLButtonElement, tooltip: HTMLElement,
   *   title: HTMLElement, body: HTMLElement, actions: HTMLElement, empty: HTMLElement, emptyText: HTMLElement,
   *   hint: HTMLElement}} els
   */
  constructor(els) {
    this.els = els;
    /** The State History's selected event, shown when nothing is hovered or pinned. @type {StateSelection | null} */
    this.event = null;
    /** @type {Tip | null} */
    this.tip = null;
    els.toggle.addEventListener('click', () => this.setCollapsed(!els.pane.classList.contains('collapsed')));
    this.wireSplitter();
  }

  /** What the pane says while nothing is shown (it depends on the view). @param {string} text */
  emptyText(text) {
    this.els.emptyText.textContent = text;
  }

  /** @param {boolean} collapsed */
  setCollapsed(collapsed) {
    this.els.pane.classList.toggle('collapsed', collapsed);
    this.els.toggle.setAttribute('aria-expanded', String(!collapsed));
    this.els.toggle.textContent = collapsed ? '⟨' : '⟩';
    this.els.splitter.hidden = collapsed;
  }

  /** Drag (or arrow keys on) the splitter to resize the pane. */
  wireSplitter() {
    const { pane, splitter } = this.els;
    /** @param {number} w */
    const setWidth = (w) => {
      const max = Math.max(MIN_W, (pane.parentElement ? pane.parentElement.clientWidth : 1200) * MAX_FRACTION);
      pane.style.setProperty('--details-w', `${Math.round(Math.min(max, Math.max(MIN_W, w)))}px`);
    };
    dragToResize(splitter, 'x', () => pane.getBoundingClientRect().width, setWidth);
    splitter.addEventListener('keydown', (ev) => {
      const step = ev.key === 'ArrowLeft' ? 24 : ev.key === 'ArrowRight' ? -24 : 0;
      if (step === 0) return;
      ev.preventDefault();
      setWidth(pane.getBoundingClientRect().width + step);
    });
  }

  /**
   * Shows a tooltip answer (hovered or pinned), or the event / the empty text when null.
   * @param {Tip | null} tip
   */
  show(tip) {
    this.tip = tip;
    const e = this.els;
    e.actions.hidden = !(tip && tip.pinned);
    e.tooltip.classList.toggle('pinned', Boolean(tip && tip.pinned));
    if (tip === null) {
      this.showEvent(this.event);
      return;
    }
    e.title.textContent = tip.title;
    /** @type {HTMLElement[]} */
    const parts = [];
    const f = facts(tip);
    if (f.length > 0) {
      const dl = el('dl', undefined, 'facts');
      for (const [k, v] of f) dl.append(el('dt', k), el('dd', v));
      parts.push(dl);
    }
    const site = siteOf(tip);
    if (site) parts.push(siteLine(site, 'site-line site-top'));
    if (tip.details.length > 0) parts.push(el('pre', tip.details.join('\n')));
    parts.push(...stackNodes(tip.frames, tip.python, tip.explanation_lines, tip.kinds));
    if (tip.forward_frames.length > 0) {
      parts.push(el('div', 'Forward pass (where this tensor was created)', 'stack-head'), el('pre', tip.forward_frames.join('\n')));
    }
    e.body.replaceChildren(...parts);
    e.tooltip.hidden = false;
    e.empty.hidden = true;
  }

  /**
   * The State History's selected event (null: none, or another view): shown while no item is
   * hovered or pinned.
   * @param {StateSelection | null} sel
   */
  setEvent(sel) {
    this.event = sel;
    if (this.tip === null) this.showEvent(sel);
  }

  /** @param {StateSelection | null} sel */
  showEvent(sel) {
    const e = this.els;
    if (sel === null || sel.event === null || sel.text === null) {
      e.tooltip.hidden = true;
      e.empty.hidden = false;
      return;
    }
    e.title.textContent = `event ${sel.event}: ${sel.text.split('\n')[0].trim()}`;
    const nodes = stackNodes(sel.frames, sel.python, sel.explanation_lines, sel.kinds);
    e.body.replaceChildren(...(nodes.length > 0 ? nodes : [el('p', '(no stack recorded)', 'hint')]));
    e.tooltip.hidden = false;
    e.empty.hidden = true;
  }

  /**
   * The hover hint beside the pointer: the item's title, one line, and its site under it
   * (the label, the detail dimmed) when it has one; hidden for a pinned item or none.
   * @param {Tip | null} tip
   * @param {[number, number]} pointer  canvas CSS px
   * @param {[number, number]} size  the canvas's CSS size
   */
  hint(tip, pointer, size) {
    const h = this.els.hint;
    if (tip === null || tip.pinned) {
      h.hidden = true;
      return;
    }
    const site = siteOf(tip);
    const key = site ? `${tip.title}\n${site.label}\n${site.detail}` : tip.title;
    if (h.dataset.key !== key) {
      h.dataset.key = key;
      h.replaceChildren(el('div', tip.title, 'hint-title'), ...(site ? [siteLine(site, 'hint-site', false)] : []));
    }
    h.hidden = false;
    // Placed by a transform, not measured: reading its size here forced a layout on every
    // move, and a transform moves it without one. It sits right of and below the pointer, and
    // flips left in the plot's right half (its max-width is half the plot less the gap, see
    // main.css) and above near the bottom.
    const [px, py] = pointer;
    const gap = 14;
    const tx = px < size[0] / 2 ? `${px + gap}px` : `calc(${px - gap}px - 100%)`;
    const ty = py + gap + (site ? 3 : 2) * HINT_LINE_PX <= size[1] ? `${py + gap}px` : `calc(${py - gap}px - 100%)`;
    h.style.transform = `translate(${tx}, ${ty})`;
  }
}
