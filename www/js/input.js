// input.js: the plot's input (wheel, drag, hover, click, keys; wired again on every fresh
// canvas) and the tooltip it brings: the one-line hint at once, the details pane once the
// pointer rests (PANE_REST_MS), a pin at once; "Copy stack" and pinning an element.

import { els, page } from './page_state.js';
import { view, canvasSize } from './session.js';
import { details } from './parts.js';
import { isUnavailable } from './panels/unavailable.js';

/** @typedef {import('./page_state.js').Tooltip} Tooltip */
/** A tooltip answer: a tooltip, or why none can be shown. @typedef {import('./generated/Tooltip').Tooltip} TooltipAnswer */

/**
 * Told each tooltip shown (or null), before the pane shows it: main.js connects the embedding
 * parent and the deep link here (they live above this module: the modules import no cycle).
 * @type {(tip: Tooltip | null) => void}
 */
let tipShown = () => {};

/** @param {(tip: Tooltip | null) => void} hook */
export function connectTooltip(hook) {
  tipShown = hook;
}

/** The last pointer position (canvas CSS px). @type {[number, number]} */
let pointer = [0, 0];

// ----- the details pane (the hovered or pinned item) ----------------------------------------

/** The JSON of the tooltip shown: a hover over the same allocation only moves the hint. @type {string | null} */
let tipJson = null;

/** @param {string | null} json  Rust's tooltip JSON (a `Tooltip` or an `Unavailable`), or null: none */
export function showTooltip(json) {
  if (json && json === tipJson) {
    details.hint(page.tip, pointer, canvasSize());
    return;
  }
  tipJson = json || null;
  const answer = /** @type {TooltipAnswer | null} */ (json ? JSON.parse(json) : null);
  // The hit index or the tooltips' context cannot fit in memory: said in the notice, no tooltip.
  const tip = answer === null || isUnavailable(answer) ? null : answer;
  page.tip = tip;
  tipShown(tip);
  if (tip === null || !tip.pinned) els.copyStatus.textContent = '';
  details.hint(tip, pointer, canvasSize());
  // A hover fills the pane once the pointer rests (PANE_REST_MS), and so does a gap between
  // allocations: moving across many redraws only the one-line hint, and the pane does not
  // flicker to the legend and back (each swap laid the pane out anew). A pin, an unpin and a
  // leave show at once.
  clearTimeout(paneTimer);
  const panePinned = details.tip !== null && details.tip.pinned;
  if (pointerOnPlot && !panePinned && (tip === null || !tip.pinned)) {
    const shown = tip;
    paneTimer = setTimeout(() => details.show(shown), PANE_REST_MS);
  } else {
    details.show(tip);
  }
}

/** The pointer is over the plot (a tooltip answer then is a hover's). */
let pointerOnPlot = false;
/** How long the pointer rests on an allocation before the pane shows it, ms. */
const PANE_REST_MS = 60;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let paneTimer;

export async function copyStack() {
  const tip = page.tip;
  if (tip === null) return;
  const text = [tip.title, ...tip.details, ...tip.frames, ...tip.forward_frames].join('\n');
  try {
    await navigator.clipboard.writeText(text);
    els.copyStatus.textContent = 'copied';
  } catch (_) {
    const area = document.createElement('textarea');
    area.value = text;
    document.body.append(area);
    area.select();
    const ok = document.execCommand('copy');
    area.remove();
    els.copyStatus.textContent = ok ? 'copied' : 'copy failed: select the text and copy it';
  }
  window.memviz.lastCopied = text;
}

/** Pins a timeline element's tooltip (negative: unpins); resolves with the tooltip shown. */
/** @param {number} element */
export async function pinElement(element) {
  const { result } = await view({ method: 'pin', element });
  showTooltip(result === null ? null : JSON.stringify(result));
  return page.tip;
}

// ----- input on the plot --------------------------------------------------------------------

/** An event's position in the canvas's content box, CSS px (what Rust's geometry uses). */
/**
 * @param {MouseEvent} ev
 * @returns {[number, number]}
 */
function canvasPos(ev) {
  const r = els.canvas.getBoundingClientRect();
  return [ev.clientX - r.left - els.canvas.clientLeft, ev.clientY - r.top - els.canvas.clientTop];
}

/** Wires the plot's input to the viewer (again for the fresh canvas after a restart). */
/** @param {HTMLCanvasElement} canvas */
export function wireCanvas(canvas) {
  canvas.addEventListener('wheel', (ev) => {
    const client = page.client;
    if (!client) return;
    ev.preventDefault();
    const [x, y] = canvasPos(ev);
    const scale = ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? 400 : 1;
    client.send({ method: 'wheel', x, y, delta_y: ev.deltaY * scale });
  }, { passive: false });

  canvas.addEventListener('pointerdown', (ev) => {
    const client = page.client;
    if (!client || ev.button !== 0) return;
    canvas.focus({ preventScroll: true });
    canvas.setPointerCapture(ev.pointerId);
    pointer = canvasPos(ev);
    client.send({ method: 'pointer_down', x: pointer[0], y: pointer[1] });
  });
  canvas.addEventListener('pointermove', (ev) => {
    pointerOnPlot = true;
    const client = page.client;
    if (!client) return;
    pointer = canvasPos(ev);
    client.send({ method: 'pointer_move', x: pointer[0], y: pointer[1] }, { tooltip: true });
  });
  canvas.addEventListener('pointerup', (ev) => {
    const client = page.client;
    if (!client || ev.button !== 0) return;
    pointer = canvasPos(ev);
    client.send({ method: 'pointer_up', x: pointer[0], y: pointer[1] }, { tooltip: true });
  });
  canvas.addEventListener('pointerleave', () => {
    pointerOnPlot = false;
    const client = page.client;
    if (!client) return;
    client.send({ method: 'pointer_leave' }, { tooltip: true });
  });
  canvas.addEventListener('dblclick', () => { if (page.client) page.client.send({ method: 'double_click' }); });
  canvas.addEventListener('keydown', (ev) => {
    const client = page.client;
    if (!client || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const tip = page.tip;
    if (ev.key === 'Escape' && tip !== null && tip.pinned && 'element' in tip) {
      ev.preventDefault();
      pinElement(-1);
      return;
    }
    const keys = ['a', 'A', 'd', 'D', 'w', 'W', 's', 'S', 'ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', '+', '=', '-', '_', '0'];
    if (!keys.includes(ev.key)) return;
    ev.preventDefault();
    client.send({ method: 'key', key: ev.key });
  });
}
