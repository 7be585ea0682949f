// plot_chrome.js: what the page lays over and around the plot from Rust's answers: the tick
// labels of both axes, the annotation phases' names, the out-of-memory marks on the plot's top
// edge (a click shows the State History on that event) and the legend of the largest sites.

import { setChildren } from './dom.js';
import { $, els, page } from './page_state.js';
import { stateHistory } from './page_panels.js';

/** @typedef {import('./generated/AxisTicks').AxisTicks} Ticks */
/** @typedef {import('./generated/Panel').Panel} Panel */

let lastTicks = '';
/** @param {Ticks | null | undefined} ticks */
export function showTicks(ticks) {
  if (!ticks || page.geometry === null) return;
  const p = page.geometry.plot;
  // Each label row is its own small compositing layer (see main.css), and is only touched
  // when a label changed: software-rasterised pages repaint whatever a DOM change dirties.
  const key = JSON.stringify([ticks, p]);
  if (key === lastTicks) return;
  lastTicks = key;
  els.xLabels.style.top = `${p.bottom + 4}px`;
  setChildren(els.xLabels, ticks.x.map((t) => {
    const s = document.createElement('span');
    s.textContent = t.label;
    s.style.left = `${t.pos_css_px}px`;
    return s;
  }));
  // Phase names: 14 px rows, elided to their band; a label that would overlap one already
  // placed, or that has no room for a few letters, is left out (its band stays drawn).
  /** @type {{l: number, r: number, t: number}[]} */
  const placed = [];
  const phases = (ticks.phases || []).filter((ph) => {
    const box = { l: ph.left, r: ph.right, t: ph.top };
    if (box.r - box.l < 28 || placed.some((q) => box.l < q.r + 2 && q.l < box.r + 2 && Math.abs(q.t - box.t) < 14)) return false;
    placed.push(box);
    return true;
  });
  setChildren($('phase-labels'), phases.map((ph) => {
    const s = document.createElement('span');
    s.textContent = ph.short || ph.name; // elided in the middle by Rust, the step number kept
    s.title = ph.name;
    s.style.left = `${ph.left}px`;
    s.style.top = `${ph.top}px`;
    s.style.width = `${Math.max(0, ph.right - ph.left)}px`;
    return s;
  }));
  // The device's out-of-memory events: a button on the plot's top edge each; a click shows the
  // State History on that event, with its explanation.
  const recordedOoms = (ticks.ooms || []).map((m) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = 'OOM';
    b.title = 'Out of memory here: show the allocator state and why';
    // At the plot's ends (an oom after the last allocation) the button stays inside the plot.
    b.style.left = `${Math.min(Math.max(m.x, p.left + 18), p.right - 18)}px`;
    b.style.top = `${p.top + 2}px`;
    b.addEventListener('click', () => { showOomEvent(m.index); });
    return b;
  });
  setChildren($('oom-marks'), [...recordedOoms, ...whatIfMarks(ticks, p)]);
  els.yLabels.style.width = `${p.left - 6}px`;
  setChildren(els.yLabels, ticks.y.map((t) => {
    const s = document.createElement('span');
    s.textContent = t.label;
    s.style.top = `${t.pos_css_px}px`;
    return s;
  }));
}

/**
 * The what-if tab's curve over the timeline (Rust's mark): its legend entry on the plot, and
 * the simulated first OOM as a mark on the plot's top edge, returned for #oom-marks.
 * @param {Ticks} ticks
 * @param {{left: number, right: number, top: number}} p
 * @returns {HTMLElement[]}
 */
function whatIfMarks(ticks, p) {
  const w = ticks.whatif;
  const box = $('whatif-mark');
  box.hidden = !w;
  if (!w) return [];
  const rgb = `rgb(${w.rgba[0]}, ${w.rgba[1]}, ${w.rgba[2]})`;
  const sw = /** @type {HTMLElement} */ (box.querySelector('.swatch'));
  sw.style.background = rgb;
  $('whatif-label').textContent = w.label;
  box.style.left = `${p.left + 8}px`;
  box.style.top = `${p.top + 44}px`;
  if (w.oom_x === null) return [];
  const m = document.createElement('span');
  m.className = 'whatif-oom-mark';
  m.textContent = 'OOM?';
  m.title = w.oom_text;
  m.style.left = `${Math.min(Math.max(w.oom_x, p.left + 18), p.right - 18)}px`;
  m.style.top = `${p.top + 22}px`;
  m.style.borderColor = rgb;
  m.style.color = rgb;
  return [m];
}

/** The legend: the largest sites at the peak, each with its colour. @param {Panel['legend']} legend */
export function showLegend(legend) {
  setChildren(els.legend, legend.map((e) => {
    const li = document.createElement('li');
    const sw = document.createElement('span');
    sw.className = 'swatch';
    sw.style.background = `rgb(${e.rgba[0]}, ${e.rgba[1]}, ${e.rgba[2]})`;
    const label = document.createElement('span');
    label.className = `site kind-${e.site.kind}`;
    label.textContent = e.label;
    label.title = e.site.detail ? `${e.label} → ${e.site.detail}` : e.label;
    const size = document.createElement('span');
    size.className = 'size';
    size.textContent = `${e.size} in ${e.elements.toLocaleString('en-US')}`;
    li.append(sw, label, size);
    return li;
  }));
}

/**
 * Shows the State History on the device's `index`-th oom event (its explanation opens in the
 * drawer). Resolves with the selection.
 * @param {number} index
 */
export async function showOomEvent(index) {
  await window.memviz.setView('state');
  const k = stateHistory.ooms[index];
  if (k === undefined) return null;
  return stateHistory.select(k);
}
