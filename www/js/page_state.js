// page_state.js: the page's elements and the state its modules share (one object, `page`, so no
// module keeps its own copy). The modules above it: status.js (the banner and the notice),
// parts.js (the details pane, the drawer, help, the plot's hint), session.js (the worker),
// input.js (the plot's input and the tooltip), page_panels.js (the panels and the deep links),
// plot_chrome.js (tick and phase labels, OOM marks, the legend), controls.js (the selectors and
// what a panel update shows), open.js (opening files), test_api.js (`window.memviz`), main.js.
// The modules import one way, never in a cycle (whose evaluation order leaves bindings unset at
// load; esbuild bundles them into js/main.js, www/bundle.sh): a module
// calls the ones above it only through the hooks main.js connects (session.js, input.js).

/** @typedef {import('./share.js').OpenResult} OpenResult */
/** What open() takes. @typedef {File | Blob | ArrayBuffer | ArrayBufferView | string} OpenSource */
/** A tooltip shown (an `Unavailable` answer shows none). @typedef {import('./generated/ElementTip').ElementTip | import('./generated/ItemTip').ItemTip | import('./generated/NodeTip').NodeTip} Tooltip */
/** @typedef {import('./generated/PlotGeometry').PlotGeometry} Geometry */
/** @typedef {import('./bridge.js').ViewerClient} ViewerClient */

/**
 * The element of `id`, of the class `type` (`HTMLElement` when not given): `$('plot',
 * HTMLCanvasElement)`, `$('file-select', HTMLSelectElement)`. index.html has every element the
 * shell names (the tests check the page), so a missing one, or one of another class, is a bug of
 * the page: thrown at once, naming the id, rather than a `null` failing later elsewhere.
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @param {{new (): T, readonly name: string}} [type]
 * @returns {T}
 */
export function $(id, type) {
  const el = document.getElementById(id);
  const want = type ?? HTMLElement;
  if (!(el instanceof want)) throw new Error(`the page has no ${want.name} #${id}`);
  return /** @type {T} */ (el);
}
export const els = {
  input: $('file-input', HTMLInputElement),
  demo: $('demo-button', HTMLButtonElement),
  overlay: $('drop-overlay'),
  loading: $('loading'),
  bar: $('progress-bar', HTMLProgressElement),
  progress: $('progress'),
  cancel: $('cancel-button', HTMLButtonElement),
  alert: $('error'),
  notice: $('notice'),
  viewer: $('viewer'),
  canvas: $('plot', HTMLCanvasElement),
  xLabels: $('x-labels'),
  yLabels: $('y-labels'),
  copy: $('copy-stack', HTMLButtonElement),
  copyStatus: $('copy-status'),
  fileSelect: $('file-select', HTMLSelectElement),
  deviceSelect: $('device-select', HTMLSelectElement),
  xAxis: $('x-axis-select', HTMLSelectElement),
  fit: $('fit-button', HTMLButtonElement),
  peak: $('peak'),
  legend: $('legend', HTMLOListElement),
  table: $('summary-table'),
  json: $('summary-json'),
  fileName: $('file-name'),
  backend: $('backend'),
  viewSelect: $('view-select', HTMLSelectElement),
  legendWrap: $('legend-wrap'),
  fitButton: $('fit-button', HTMLButtonElement),
  xAxisLabel: $('x-axis-label'),
  viewNote: $('view-note'),
  settingsRows: $('settings-rows'),
  settingsTable: $('settings-table', HTMLTableElement),
  settingsNone: $('settings-none'),
  statePanel: $('state-panel'),
  stateHeader: $('state-header'),
};

export const query = new URLSearchParams(location.search);

/** The state the page's modules share. */
export const page = {
  /** The worker's client once it started (null while none runs). @type {ViewerClient | null} */
  client: null,
  /** The open() in progress: {id} or null. @type {{id: number} | null} */
  current: null,
  filesOpen: 0,
  /**
   * Every source that opened, in order: reopened in a new worker when the old one died.
   * @type {{src: OpenSource, name: string}[]}
   */
  openedSources: [],
  /** A restart in progress (a promise), so two crashes make one restart. @type {Promise<void> | null} */
  restarting: null,
  /** Latest tooltip shown (parsed Rust JSON). @type {Tooltip | null} */
  tip: null,
  /** Plot geometry from the last panel (canvas CSS px). @type {Geometry | null} */
  geometry: null,
  /** Why nothing can be drawn (no WebGPU, no WebGL2): stays in the alert while the page lives. */
  cannotDraw: '',
  /** A deep link to restore once the first file is open (the hash the page was loaded with). */
  pendingHash: location.hash.length > 1 ? location.hash : '',
  /** The file/device the flamegraph was last made for ('' when not shown). */
  lastFlameKey: '',
  /** Resolves when the flamegraph finished its first build. @type {Promise<unknown>} */
  flameReady: Promise.resolve(),
  /** The timeline (file/device/view) the search and the lines table were last made for. */
  lastTimelineKey: '',
  /** Resolves when the state panel finished loading. @type {Promise<unknown>} */
  stateReady: Promise.resolve(),
};

/** @param {'empty' | 'loading' | 'ready' | 'error'} state */
export function setState(state) {
  document.body.dataset.memvizState = state;
  // The app layout (one screen: toolbar, plot, details pane, drawer) once a file is open.
  if (page.filesOpen > 0) document.body.dataset.layout = 'app';
  else delete document.body.dataset.layout;
}
