// page_panels.js: the page's panels, made once and wired to the worker: the search box, the
// drawer's panels (source lines and "Your code", alive at a moment, leak suspects, files and
// compare), the flamegraph's controls, the Allocator State History and the deep links.

import { StateHistory } from './state_history.js';
import { SearchBox } from './panels/search.js';
import { FilterBox } from './panels/filter.js';
import { LinesTable, UserCodeSetting } from './panels/lines.js';
import { LiveTable } from './panels/live.js';
import { LeaksPanel } from './panels/leaks.js';
import { FilesAndCompare } from './panels/compare.js';
import { FlameControls } from './panels/flame_controls.js';
import { WhatIfPanel } from './panels/whatif.js';
import { DeepLinks } from './share.js';
import { $, els, page } from './page_state.js';
import { workerCall } from './session.js';
import { details, drawer } from './parts.js';
import { showTooltip, pinElement } from './input.js';

/** @typedef {import('./generated/FrameMode').FrameMode} FrameMode */

// A new search changes what matches both it and the filter: the filter's status says so anew.
export const searchBox = new SearchBox({ input: $('search-input', HTMLInputElement), only: $('search-only', HTMLInputElement), status: $('search-status') }, workerCall, () => { refreshFilter(); });
/** The structured filter beside the search (panels/filter.js). */
export const filterBox = new FilterBox({
  input: $('filter-input', HTMLInputElement), only: $('search-only', HTMLInputElement), status: $('filter-status'),
  csv: $('filter-csv', HTMLButtonElement), helpButton: $('filter-help-button', HTMLButtonElement), help: $('filter-help'),
  fileName: () => els.fileName.textContent || '',
}, workerCall, () => { if (page.filesOpen > 0) links.schedule(); });
/** The filter's answer again when one is applied (its `with_search` count). */
function refreshFilter() {
  if (filterBox.applied !== '' && filterBox.els.input.value === filterBox.applied) void filterBox.run();
}
export const linesTable = new LinesTable({
  panel: $('lines-panel'), table: $('lines-table'), rows: $('lines-rows'), allFrames: $('lines-all-frames'),
  status: $('lines-status'),
}, workerCall, (text) => { $('search-status').textContent = text; });
/** "Your code" (docs/sites.md), in the Source lines panel: a new pattern renames every site shown. */
export const userCode = new UserCodeSetting(workerCall, () => {
  linesTable.refresh();
  liveTable.reset();
  leaksPanel.refresh();
  filesAndCompare.refreshSites();
  const tip = page.tip;
  if (els.viewSelect.value === 'state') stateHistory.refreshSites();
  else if (tip !== null && tip.pinned && 'element' in tip) pinElement(tip.element);
  if (page.filesOpen > 0) links.schedule();
});
$('lines-status').before(userCode.element);

export const liveTable = new LiveTable({
  panel: $('live-panel'), refresh: $('live-refresh'), peak: $('live-peak'), status: $('live-status'), rows: $('live-rows'),
}, workerCall);
export const leaksPanel = new LeaksPanel({ panel: $('leaks-panel'), rule: $('leaks-rule'), list: $('leaks-list') }, workerCall);

export const filesAndCompare = new FilesAndCompare({
  filesPanel: $('files-panel'),
  filesRows: $('files-rows'),
  comparePanel: $('compare-panel'),
  a: $('compare-a'),
  b: $('compare-b'),
  button: $('compare-button'),
  flameButton: $('compare-flame'),
  status: $('compare-status'),
  rows: $('compare-rows'),
}, workerCall, (i) => {
  if (page.client) page.client.send({ method: 'select_file', index: i }, { panel: true });
  showTooltip(null);
}, async (a, b) => {
  await window.memviz.setView('flame');
  return flameControls.showDiff(a, b);
});

export const flameControls = new FlameControls({
  controls: $('flame-controls'),
  at: $('flame-at', HTMLSelectElement),
  frames: $('flame-frames', HTMLSelectElement),
  breadcrumb: $('flame-breadcrumb'),
  status: $('flame-status'),
  labels: $('flame-labels'),
}, workerCall);

export const whatIf = new WhatIfPanel({
  panel: $('whatif-panel', HTMLDetailsElement),
  note: $('whatif-note'),
  expandable: $('whatif-expandable', HTMLInputElement),
  maxSplit: $('whatif-max-split', HTMLInputElement),
  roundup: $('whatif-roundup', HTMLInputElement),
  gc: $('whatif-gc', HTMLInputElement),
  nonSplit: $('whatif-non-split', HTMLInputElement),
  conf: $('whatif-conf', HTMLInputElement),
  capacity: $('whatif-capacity', HTMLSelectElement),
  custom: $('whatif-custom', HTMLInputElement),
  run: $('whatif-run', HTMLButtonElement),
  sweep: $('whatif-sweep', HTMLButtonElement),
  cancel: $('whatif-cancel', HTMLButtonElement),
  clear: $('whatif-clear', HTMLButtonElement),
  progress: $('whatif-progress', HTMLProgressElement),
  status: $('whatif-status'),
  result: $('whatif-result'),
  table: $('whatif-table', HTMLTableElement),
  rows: $('whatif-rows'),
  recorded: (key) => $(`whatif-rec-${key}`),
}, workerCall, () => { if (page.filesOpen > 0) links.schedule(); });

export const links = new DeepLinks({
  async state() {
    if (page.filesOpen === 0) return null;
    const { result } = await workerCall({ method: 'state' });
    return result;
  },
  call: workerCall,
  setView: (name) => window.memviz.setView(name),
  search: () => ({ q: $('search-input', HTMLInputElement).value, only: $('search-only', HTMLInputElement).checked }),
  async setSearch(q, only) {
    if (q === $('search-input', HTMLInputElement).value && only === $('search-only', HTMLInputElement).checked && (q === '' || searchBox.result)) return;
    $('search-input', HTMLInputElement).value = q;
    $('search-only', HTMLInputElement).checked = only;
    await searchBox.run();
  },
  filter: () => filterBox.applied,
  setFilter: (text) => filterBox.set(text),
  flameAt: () => $('flame-at', HTMLSelectElement).value,
  async setFlameAt(value) {
    await page.flameReady;
    const select = $('flame-at', HTMLSelectElement);
    if (![...select.options].some((o) => o.value === value) || value === 'diff') return;
    select.value = value;
    await flameControls.apply();
  },
  flameFrames: () => $('flame-frames', HTMLSelectElement).value,
  async setFlameFrames(value) {
    await page.flameReady;
    if (value === $('flame-frames', HTMLSelectElement).value) return;
    flameControls.frames = /** @type {FrameMode} */ (value);
    await flameControls.apply();
  },
  stateSelect: async (k) => { await page.stateReady; return stateHistory.select(k); },
  pin: (element) => pinElement(element),
  userCode: () => userCode.applied,
  setUserCode: (pattern) => userCode.apply(pattern),
  whatIf: () => whatIf.settings(),
  setWhatIf: (conf, cap) => whatIf.setSettings(conf, cap),
});

export const stateHistory = new StateHistory({
  list: $('state-list'),
  spacer: $('state-list-spacer'),
  rows: $('state-rows'),
  search: $('state-search'),
  prev: $('state-prev'),
  next: $('state-next'),
  searchStatus: $('state-search-status'),
  ooms: $('state-ooms'),
  totals: $('state-totals'),
  event: $('state-event'),
  oomVerdict: $('oom-verdict'),
  oomNumbers: $('oom-numbers'),
  oomBiggest: $('oom-biggest'),
}, workerCall, (json) => showTooltip(json), {
  selection: (sel) => details.setEvent(sel),
  oom: (shown) => {
    drawer.setTab('oom-panel', shown);
    if (shown) drawer.open('oom-panel');
  },
});
