// controls.js: the toolbar's selectors (view, file, device, x axis, fit) and what a panel
// update from Rust shows around the plot after a file, device or view change: the selectors'
// options, the accelerator, the peak, the legend, the view's note, the notice, the no-trace
// note, the view's parts, the panels reset for a new timeline, the settings and the summary.

import { wireNoTrace } from './no_trace.js';
import { setChildren } from './dom.js';
import { $, els, page } from './page_state.js';
import { showNotice } from './status.js';
import { workerCall } from './session.js';
import { details, drawer, plotHint } from './parts.js';
import { showTooltip } from './input.js';
import { searchBox, filterBox, linesTable, userCode, liveTable, leaksPanel, filesAndCompare, flameControls, stateHistory, whatIf } from './page_panels.js';
import { showTicks, showLegend } from './plot_chrome.js';
import { VIEWS } from './generated/views.js';

/** @typedef {import('./generated/Panel').Panel} Panel */
/** @typedef {import('./generated/SettingRow').SettingRow} SettingRow */
/** @typedef {import('./generated/ViewKind').ViewKind} ViewKind */
/** @typedef {import('./generated/ViewInfo').ViewInfo} ViewInfo */

/**
 * @param {HTMLSelectElement} select
 * @param {{value: number, label: string, selected: boolean}[]} options
 */
function fillSelect(select, options) {
  setChildren(select, options.map(({ value, label, selected }) => {
    const o = document.createElement('option');
    o.value = String(value);
    o.textContent = label;
    o.selected = Boolean(selected);
    return o;
  }));
}

/**
 * Shows what surrounds the plot after a file, device or view change.
 * @param {string} panelJson  Rust's `Panel`
 * @param {string | undefined} table  the summary as text
 * @param {string | undefined} summary  the summary as JSON
 */
export function showPanel(panelJson, table, summary) {
  const panel = /** @type {Panel} */ (JSON.parse(panelJson));
  if (panel.state === null) return;
  const state = panel.state;
  page.geometry = state.geometry;
  fillSelect(els.fileSelect, panel.files.map((f, i) => ({ value: i, label: f, selected: i === panel.file })));
  fillSelect(els.deviceSelect, panel.devices.map((d) => ({ value: d.device, label: d.label, selected: d.current })));
  // Which accelerator wrote the file shown (Rust's words; empty when the file does not say).
  const accel = panel.accelerators[panel.file ?? 0];
  const fileAccel = $('file-accelerator');
  fileAccel.textContent = accel ? accel.text : '';
  fileAccel.title = accel ? accel.title : '';
  fileAccel.hidden = fileAccel.textContent === '';
  filesAndCompare.devicePrefixes = panel.accelerators.map((a) => a.device_prefix);
  const oomHere = panel.devices.some((d) => d.current && d.ooms > 0);
  els.deviceSelect.classList.toggle('oom', oomHere);
  els.deviceSelect.title = panel.devices.some((d) => d.ooms > 0)
    ? 'Devices marked OOM have out-of-memory events (the file opens on the first of them)' : '';
  if (state.x_axis !== 'none') els.xAxis.value = state.x_axis;
  const timeOption = [...els.xAxis.options].find((o) => o.value === 'time');
  if (timeOption) timeOption.disabled = !state.has_time;
  // (Rust's `ViewKind`, a row of the list; the first view, the Active Memory Timeline, if none.)
  const info = VIEWS.find((v) => v.kind === panel.view) ?? VIEWS[0];
  const view = info.kind;
  const file = panel.file ?? 0;
  els.peak.textContent = `peak ${panel.peak} · ${state.elements.toLocaleString('en-US')} ${info.drawn} drawn`;
  showLegend(panel.legend);
  els.viewNote.textContent = info.note;
  els.viewNote.hidden = els.viewNote.textContent === '';
  els.fileName.textContent = panel.files[file] || '';
  showNotice(panel.files[file] || '', panel.notice);
  showNoTrace(panel.no_trace, view);
  showView(info, panelKey(panel));
  filesAndCompare.refresh();
  const timelineKey = `${panelKey(panel)}/${view}`;
  if (timelineKey !== page.lastTimelineKey) {
    page.lastTimelineKey = timelineKey;
    searchBox.reset();
    filterBox.reset();
    workerCall({ method: 'clear_highlight' });
    linesTable.invalidate(timelineKey);
    userCode.fileChanged();
    liveTable.reset();
    leaksPanel.invalidate(panelKey(panel));
  }
  whatIf.invalidate(panelKey(panel));
  $('search-box').hidden = !info.search;
  const flameKey = panel.view === 'flame' ? panelKey(panel) : '';
  if (flameKey !== page.lastFlameKey) {
    page.lastFlameKey = flameKey;
    flameControls.show(flameKey !== '');
    if (flameKey !== '') page.flameReady = flameControls.enter();
  }
  showSettings(panel.settings || []);
  if (typeof table === 'string') els.table.textContent = table;
  if (typeof summary === 'string') els.json.textContent = summary;
  showTicks(panel.ticks);
}

/** Why the device shown has no trace (Rust's sentence): over a timeline's plot, or in place of the State History's empty list. */
const showNoTrace = wireNoTrace({
  box: $('no-trace'), text: $('no-trace-text'), button: $('no-trace-state'), statePanel: els.statePanel, stateText: $('state-no-trace'),
}, () => { window.memviz.setView('state'); });

/** What the state panel was last loaded for: file, device (reloaded when it changes). */
let stateKey = '';
/** @param {Panel} panel */
function panelKey(panel) {
  // (A panel without a state is never shown: showPanel returns first.)
  return `${panel.file}/${panel.state === null ? '' : panel.state.device}`;
}

/**
 * @param {ViewInfo} info  the view shown
 * @param {string} key  the file and device shown
 */
function showView(info, key) {
  els.viewSelect.value = info.kind;
  plotHint.setView(info);
  const isState = info.kind === 'state';
  els.statePanel.hidden = !isState;
  els.stateHeader.hidden = !isState;
  els.legendWrap.hidden = !info.legend;
  els.peak.hidden = !info.peak;
  // Controls that do nothing in a view are hidden there.
  els.xAxisLabel.hidden = !info.x_axis;
  els.fitButton.hidden = !info.fit;
  details.emptyText(info.details);
  if (!isState) {
    details.setEvent(null);
    drawer.setTab('oom-panel', false);
    stateKey = '';
    return;
  }
  if (key !== stateKey) {
    stateKey = key;
    page.stateReady = stateHistory.reset();
  }
}

/** @param {SettingRow[]} rows */
function showSettings(rows) {
  els.settingsNone.hidden = rows.length > 0;
  els.settingsTable.hidden = rows.length === 0;
  setChildren(els.settingsRows, rows.map((r) => {
    const tr = document.createElement('tr');
    for (const text of [r.key, r.value, r.meaning]) {
      const td = document.createElement('td');
      td.textContent = text;
      tr.append(td);
    }
    return tr;
  }));
}

/** Wires the toolbar's selectors and the fit button to the viewer; the view selector's options are the generated list's. */
export function wireControls() {
  setChildren(els.viewSelect, VIEWS.map((v) => {
    const o = document.createElement('option');
    o.value = v.kind;
    o.textContent = v.label;
    return o;
  }));
  els.fileSelect.addEventListener('change', () => {
    if (page.client) page.client.send({ method: 'select_file', index: Number(els.fileSelect.value) }, { panel: true });
    showTooltip(null);
  });
  els.deviceSelect.addEventListener('change', () => {
    if (page.client) page.client.send({ method: 'set_device', device: Number(els.deviceSelect.value) }, { panel: true });
    showTooltip(null);
  });
  els.xAxis.addEventListener('change', () => {
    if (page.client) page.client.send({ method: 'set_time_axis', on: els.xAxis.value === 'time' }, { panel: true });
  });
  els.fit.addEventListener('click', () => { if (page.client) page.client.send({ method: 'fit' }); });
  els.viewSelect.addEventListener('change', () => {
    if (page.client) page.client.send({ method: 'set_view', view: viewKind(els.viewSelect.value) }, { panel: true });
    showTooltip(null);
  });
}

/** A view's row of the generated list from its name (a select, a link, the embedding parent), checked. @param {string} name @returns {ViewInfo} */
function viewInfo(name) {
  const info = VIEWS.find((v) => v.kind === name);
  if (!info) throw new Error(`no view named ${JSON.stringify(name)}`);
  return info;
}
/** A view's name from the page (a select, a link, the embedding parent), checked. @param {string} name @returns {ViewKind} */
export function viewKind(name) {
  return viewInfo(name).kind;
}
