// main.js: boots the page and owns its state (`document.body.dataset.memvizState`: empty,
// loading, ready or error). Files go to the viewer worker through bridge.js; everything shown
// comes back from Rust as JSON/text and is placed with textContent only (snapshot strings are
// data). See www/README.md for the contract the tests rely on.

import { ViewerClient } from './bridge.js';
import { wireFileInputs } from './file_drop.js';
import { StateHistory } from './state_history.js';
import { SearchBox } from './panels/search.js';
import { LinesTable, UserCodeSetting } from './panels/lines.js';
import { LiveTable } from './panels/live.js';
import { LeaksPanel } from './panels/leaks.js';
import { FilesAndCompare } from './panels/compare.js';
import { FlameControls } from './panels/flame_controls.js';
import { isUnavailable, onUnavailable } from './panels/unavailable.js';
import { DeepLinks, EmbedHost, urlParams, showLinkWait } from './share.js';
import { setChildren } from './dom.js';
import { DetailsPane } from './details.js';
import { Drawer } from './drawer.js';
import { wireHelp, firstUseHint, wireTheme } from './help.js';
import { wireNoTrace } from './no_trace.js';
import { Alerts } from './alerts.js';

/** What open() takes. @typedef {File | Blob | ArrayBuffer | ArrayBufferView | string} OpenSource */
/** @typedef {import('./share.js').OpenResult} OpenResult */
/** @typedef {import('./generated/Panel').Panel} Panel */
/** @typedef {import('./generated/Answers').Answers} Answers */
/** A tooltip answer: a tooltip, or why none can be shown. @typedef {import('./generated/Tooltip').Tooltip} TooltipAnswer */
/** @typedef {import('./generated/AxisTicks').AxisTicks} Ticks */
/** A tooltip shown (an `Unavailable` answer shows none). @typedef {import('./generated/ElementTip').ElementTip | import('./generated/ItemTip').ItemTip | import('./generated/NodeTip').NodeTip} Tooltip */
/** @typedef {import('./generated/PlotGeometry').PlotGeometry} Geometry */
/** @typedef {import('./generated/SettingRow').SettingRow} SettingRow */
/** @typedef {import('./generated/ViewerState').ViewerState} ViewerState */
/** @typedef {import('./generated/FrameMode').FrameMode} FrameMode */

/**
 * The element of `id` (index.html has every one the shell names; the tests check the page).
 * @param {string} id
 * @returns {any}
 */
const $ = (id) => document.getElementById(id);
const els = {
  input: $('file-input'),
  demo: $('demo-button'),
  overlay: $('drop-overlay'),
  loading: $('loading'),
  bar: $('progress-bar'),
  progress: $('progress'),
  cancel: $('cancel-button'),
  alert: $('error'),
  notice: $('notice'),
  viewer: $('viewer'),
  canvas: $('plot'),
  xLabels: $('x-labels'),
  yLabels: $('y-labels'),
  copy: $('copy-stack'),
  copyStatus: $('copy-status'),
  fileSelect: $('file-select'),
  deviceSelect: $('device-select'),
  xAxis: $('x-axis-select'),
  fit: $('fit-button'),
  peak: $('peak'),
  legend: $('legend'),
  table: $('summary-table'),
  json: $('summary-json'),
  fileName: $('file-name'),
  backend: $('backend'),
  viewSelect: $('view-select'),
  legendWrap: $('legend-wrap'),
  fitButton: $('fit-button'),
  xAxisLabel: $('x-axis-label'),
  viewNote: $('view-note'),
  settingsRows: $('settings-rows'),
  settingsTable: $('settings-table'),
  settingsNone: $('settings-none'),
  statePanel: $('state-panel'),
  stateHeader: $('state-header'),
};

const details = new DetailsPane({
  pane: $('details-pane'),
  splitter: $('pane-splitter'),
  toggle: $('details-toggle'),
  tooltip: $('tooltip'),
  title: $('tooltip-title'),
  body: $('tooltip-body'),
  actions: $('tooltip-actions'),
  empty: $('details-empty'),
  emptyText: $('details-empty-text'),
  hint: $('hover-hint'),
});
const drawer = new Drawer($('tabs'));
const help = wireHelp({ dialog: $('help'), open: $('help-button'), close: $('help-close') });
const plotHint = firstUseHint($('plot-hint'));
plotHint.watch(els.canvas);
/** The canvas's non-data colours follow the page's theme. @param {ViewerClient} c */
function sendTheme(c) {
  c.send({ method: 'set_theme', dark: theme === 'dark' });
}

const WHAT_TO_DO = 'Check that it is a snapshot saved by torch.cuda.memory._dump_snapshot() '
  + '(a pickle, JSON or torch.save file, optionally gzip-compressed), then open it again or choose another file.';

/** @type {Promise<ViewerClient> | null} */
let clientPromise = null;
/** @type {ViewerClient | null} */
let client = null;
/** The open() in progress: {id} or null. @type {{id: number} | null} */
let current = null;
/** Latest tooltip shown (parsed Rust JSON) and the last pointer position (canvas CSS px). */
/** @type {Tooltip | null} */
let tip = null;
/** @type {[number, number]} */
let pointer = [0, 0];
/** Plot geometry from the last panel (canvas CSS px). @type {Geometry | null} */
let geometry = null;
let filesOpen = 0;

/** The page's colours: the canvas follows them (sent to the worker when it starts, and on every change). @type {'light' | 'dark'} */
let theme = 'light';
wireTheme($('theme-toggle'), (t) => {
  theme = t;
  if (client) sendTheme(client);
});

/** @param {'empty' | 'loading' | 'ready' | 'error'} state */
function setState(state) {
  document.body.dataset.memvizState = state;
  // The app layout (one screen: toolbar, plot, details pane, drawer) once a file is open.
  if (filesOpen > 0) document.body.dataset.layout = 'app';
  else delete document.body.dataset.layout;
}

const query = new URLSearchParams(location.search);
/** `?mode=embedded`: an iframe in another page; the chrome it does not need is hidden. */
const embedded = query.get('mode') === 'embedded';
if (embedded) document.body.dataset.mode = 'embedded';
/** A deep link to restore once the first file is open (the hash the page was loaded with). */
let pendingHash = location.hash.length > 1 ? location.hash : '';
showLinkWait($('link-wait'), pendingHash);

/** Why nothing can be drawn (no WebGPU, no WebGL2): stays in the alert while the page lives. */
let cannotDraw = '';

/** The banner (dismissable) and the notice; closing the banner leaves the `error` state. */
const alerts = new Alerts(els.alert, els.notice, () => {
  if (document.body.dataset.memvizState === 'error') setState(filesOpen > 0 ? 'ready' : 'empty');
});

/** @param {string} message */
function showError(message) {
  alerts.setError(cannotDraw ? `${message}\n\n${cannotDraw}` : message);
  // The shown file's notice is not about this error: it steps aside until the banner closes.
  alerts.asideNotice(true);
  setState('error');
}

function clearError() {
  alerts.setError(cannotDraw);
  alerts.asideNotice(false);
}

/**
 * The notice above the current file (not an error; Rust's text): why the file is incomplete
 * when it was cut before its end. Hidden when there is none.
 * @param {string} fileName
 * @param {unknown} notice
 */
function showNotice(fileName, notice) {
  const text = typeof notice === 'string' ? notice : '';
  alerts.setNotice(text === '' ? '' : `${fileName}: ${sentence(text)}`);
}

// A panel, the tooltips or the hit index that cannot fit in memory: Rust's sentence in the
// notice, as for a view (until the next panel update replaces the notice).
onUnavailable((text) => showNotice(els.fileName.textContent, text));

/** `message` ending in one full stop (messages from Rust may end in `.`, `?` or `!`). @param {unknown} message */
function sentence(message) {
  const m = String(message).trim();
  return /[.?!]$/.test(m) ? m : `${m}.`;
}

/**
 * @param {string} name
 * @param {number} bytes
 * @param {number} total  0: unknown
 * @param {string | undefined} phase
 */
function progressText(name, bytes, total, phase) {
  const read = bytes.toLocaleString('en-US');
  if (phase === 'model') return `Building the model of ${name} (${read} bytes read)…`;
  if (phase === 'layout') return `Laying out the timeline of ${name}…`;
  if (phase === 'draw') return `Drawing ${name}…`;
  if (!total) return `Reading ${name}: ${read} bytes`;
  const percent = Math.min(100, Math.floor((bytes * 100) / total));
  return `Reading ${name}: ${read} of ${total.toLocaleString('en-US')} bytes (${percent}%)`;
}

// ----- the worker ---------------------------------------------------------------------------

function backendParam() {
  const b = new URLSearchParams(location.search).get('backend');
  return b === null ? 'auto' : b;
}

function startViewer() {
  if (clientPromise !== null) return clientPromise;
  clientPromise = ViewerClient.start(els.canvas, backendParam(), {
    progress(msg) {
      if (current === null || msg.id !== current.id) return;
      els.progress.textContent = progressText(msg.name, msg.bytes, msg.total, msg.phase);
      // Reading fills the bar to 80 %; the model, the layout and the first frame the rest.
      /** @type {Record<string, number>} */
      const afterPhase = { model: 80, layout: 88, draw: 96 };
      const after = Object.hasOwn(afterPhase, msg.phase) ? afterPhase[msg.phase] : undefined;
      if (after !== undefined) els.bar.value = after;
      else if (msg.total) els.bar.value = Math.min(80, (msg.bytes * 80) / msg.total);
      else els.bar.removeAttribute('value');
    },
    frame(msg) {
      showTicks(/** @type {Answers['ticks']} */ (JSON.parse(msg.ticks)));
      flameControls.onFrame();
      if (filesOpen > 0) links.schedule();
    },
    tooltip(json) { showTooltip(json); },
    panel(panel, table, summary) { showPanel(panel, table, summary); },
    fatal(msg) {
      showError(`memviz hit an internal error (a bug): ${sentence(msg.message)} Reload the page and try again; `
        + 'if it happens again, please report it with the file.');
    },
    crashed(msg) { onCrash(msg); },
    // The GPU failed and bridge.js put a fresh canvas in the old one's place (WebGL2 draws on it).
    canvas(fresh) {
      els.canvas = fresh;
      wireCanvas(fresh);
      plotHint.watch(fresh);
      if (canvasObserver !== null) canvasObserver.observe(fresh);
      lastSize = '';
      resize();
    },
    // Tests: `?mem_budget_mb=N` lowers the memory budget files and views are checked against;
    // `?mem_limit_mb=N` makes allocations past N MiB fail as a real out-of-memory does.
  }, {
    memLimitMb: Number(query.get('mem_limit_mb')) || 0,
    memBudgetMb: Number(query.get('mem_budget_mb')) || 0,
  }).then((c) => {
    client = c;
    const { backend, adapter, gpuError } = c.info || { backend: '', adapter: '', gpuError: '' };
    els.backend.textContent = backend ? 'GPU drawing' : 'cannot draw here';
    els.backend.title = backend ? `${backend}${adapter ? `: ${adapter}` : ''}` : adapter;
    document.body.dataset.memvizBackend = backend ? backend.toLowerCase() : 'none';
    if (gpuError) {
      cannotDraw = `memviz cannot draw in this browser: ${sentence(gpuError)} Files still open, with their summary `
        + 'only. Try a current Chrome, Edge or Firefox, or enable hardware acceleration.';
      clearError();
    }
    canvasObserver = new ResizeObserver(() => resize(true));
    canvasObserver.observe(els.canvas);
    sendTheme(c);
    return c;
  });
  return clientPromise;
}

// ----- a worker that died --------------------------------------------------------------------

/**
 * Every source that opened, in order: reopened in a new worker when the old one died.
 * @type {{src: OpenSource, name: string}[]}
 */
let openedSources = [];
/** A restart in progress (a promise), so two crashes make one restart. @type {Promise<void> | null} */
let restarting = null;

/**
 * The worker died (it ran out of memory, or trapped): say so, restart it, reopen the files.
 * @param {{doing?: string, file?: string, id?: number, message: string, panicked?: boolean, gpu?: boolean}} msg  the worker's `crashed`
 */
function onCrash(msg) {
  const doing = String(msg.doing || 'working').replace('%s', msg.file ? `"${msg.file}"` : 'a file');
  const message = msg.gpu ? `${sentence(msg.message)} The viewer was restarted with WebGL2 and reopens your files.`
    : msg.panicked
    ? `memviz hit an internal error (a bug) while ${doing}: ${sentence(msg.message)} `
      + 'Please report it with the file.'
    : `The viewer ran out of memory while ${doing} (the browser gives this page at most 4 GiB), and was restarted. `
      + 'The native command line has no such limit: `memviz summary FILE` gives the summary, `memviz folded`, '
      + '`memviz lines`, `memviz leaks` and `memviz oom` the other views.';
  // The files that opened before come back (a file that died while opening never opened). A
  // file that died after it opened (its first frames, a view of it) stays closed: reopening it
  // would run out the same way again, in a loop. (Not after a WebGPU crash: WebGL2 draws next.)
  const sources = openedSources.slice();
  const culprit = msg.file && !msg.id && !msg.gpu ? sources.map((x) => x.name).lastIndexOf(msg.file) : -1;
  if (culprit >= 0) sources.splice(culprit, 1);
  restartViewer(sources, message);
}

/**
 * Replaces the worker (a canvas hands its drawing to a worker only once, so a fresh canvas
 * takes the old one's place) and reopens `sources` in it; `message` stays in the alert.
 * @param {{src: OpenSource, name: string}[]} sources
 * @param {string} message
 */
function restartViewer(sources, message) {
  if (restarting !== null) return restarting;
  const old = client;
  client = null;
  clientPromise = null;
  if (old !== null) old.terminate();
  if (current !== null) {
    current = null;
    els.loading.hidden = true;
  }
  const fresh = els.canvas.cloneNode(false);
  els.canvas.replaceWith(fresh);
  els.canvas = fresh;
  wireCanvas(fresh);
  plotHint.watch(fresh);
  // The new worker's observer watches the new canvas.
  if (canvasObserver !== null) canvasObserver.disconnect();
  canvasObserver = null;
  lastSize = '';
  filesOpen = 0;
  openedSources = [];
  // The dead worker's files, views and panels are gone: hide them until a file is back.
  els.viewer.hidden = true;
  lastTimelineKey = '';
  lastFlameKey = '';
  showTooltip(null);
  window.memviz.restarts += 1;
  restarting = (async () => {
    showError(message);
    try {
      await startViewer();
      for (const s of sources) {
        const r = await open(s.src, { keepError: true });
        if (r.state !== 'ready') break;
      }
    } finally {
      restarting = null;
      if (filesOpen === 0) els.viewer.hidden = true;
      showError(message);
    }
  })();
  return restarting;
}

let lastSize = '';
/** The canvas's content box in CSS px (without its border). @returns {[number, number]} */
function canvasSize() {
  return [els.canvas.clientWidth, els.canvas.clientHeight];
}

/** Watches the canvas's size (made when the worker is ready). @type {ResizeObserver | null} */
let canvasObserver = null;

/**
 * Sends the canvas's size to the worker when it changed: on the observer's report, or when
 * the page reads it itself (open() lays the plot out before a file goes to the worker).
 * @param {boolean} [observed]  called by the ResizeObserver
 */
function resize(observed = false) {
  if (client === null) return;
  const [w, h] = canvasSize();
  if (w < 1 || h < 1) return;
  const size = [w, h, window.devicePixelRatio || 1];
  if (size.join() === lastSize) return;
  lastSize = size.join();
  client.send({ method: 'resize', css_w: size[0], css_h: size[1], dpr: size[2] }, { panel: filesOpen > 0 });
  // A size read here, not reported by the observer, leaves the observer's last report behind:
  // back at that size before its next delivery (a timeline, then open() of a file that shows
  // the State History, whose list narrows the canvas again), it would stay silent and the
  // worker keep this one. Observing anew makes its next delivery report the size as it is then.
  if (!observed && canvasObserver !== null) {
    canvasObserver.unobserve(els.canvas);
    canvasObserver.observe(els.canvas);
  }
}

// ----- opening ------------------------------------------------------------------------------

/**
 * Opens a snapshot. Resolves (never rejects) once the first frame is drawn, with
 * `{state: 'ready', json, timings}`, `{state: 'error', message}` or `{state: 'cancelled'}`.
 * @param {OpenSource} src
 * @param {{keepError?: boolean}} [options]  keepError: the alert stays (a restart's reopening)
 * @returns {Promise<OpenResult>}
 */
async function open(src, { keepError = false } = {}) {
  if (restarting !== null && !keepError) await restarting;
  if (current !== null && client !== null) client.cancel(current.id);
  const mine = { id: -1 };
  const t0 = performance.now();
  current = mine;
  setState('loading');
  if (!keepError) clearError();
  let name = typeof src === 'string' ? src : (src instanceof File ? src.name : 'the data');
  els.loading.hidden = false;
  els.bar.removeAttribute('value');
  els.progress.textContent = 'Starting…';
  try {
    const c = await startViewer();
    if (current !== mine) return { state: 'cancelled' };
    // Lay the plot out before the file goes to the worker, so its first frame has the right size.
    const firstFile = filesOpen === 0;
    els.viewer.hidden = false;
    if (firstFile) document.body.dataset.layout = 'app';
    resize();
    const { id, done } = c.open(src);
    mine.id = id;
    const msg = await done;
    if (current === mine) {
      current = null;
      els.loading.hidden = true;
    }
    if (msg.type === 'cancelled') {
      if (document.body.dataset.memvizState === 'loading') setState(filesOpen > 0 ? 'ready' : 'empty');
      return { state: 'cancelled' };
    }
    if (msg.name) name = msg.name;
    if (msg.type !== 'opened' && firstFile && filesOpen === 0) {
      els.viewer.hidden = true;
      delete document.body.dataset.layout;
    }
    if (msg.type === 'failed' && msg.crashed) {
      // The worker died: onCrash says so and restarts it.
      return { state: 'error', message: msg.message, crashed: true };
    }
    if (msg.type === 'failed') {
      const message = msg.panicked
        ? `memviz hit an internal error (a bug) while reading "${name}": ${sentence(msg.message)} Reload the page and `
          + 'try again; if it happens again, please report it with the file.'
        // Too big for the page, or a download that failed: the sentence says what to do.
        : msg.kind === 'too_big' || msg.kind === 'download'
          ? `Could not open "${name}": ${sentence(msg.message)}`
          : `Could not open "${name}": ${sentence(msg.message)} ${WHAT_TO_DO}`;
      if (current === null) showError(message);
      return { state: 'error', message };
    }
    filesOpen += 1;
    openedSources.push({ src, name: msg.name });
    plotHint.show();
    // The viewer keeps its colours from its first file on (before one, nothing keeps them).
    if (firstFile) sendTheme(c);
    showPanel(msg.panel, msg.table, msg.summary);
    showTooltip(null);
    // The worker drew the first frame before answering.
    // firstFrameMs: from this call to the worker's word that the first frame was drawn (the
    // summary and the legend come after it); readyMs: to everything shown.
    const now = performance.now();
    const timings = {
      ...msg.timings, firstFrameMs: (msg.drawnAt || now) - t0, readyMs: now - t0, bytes: msg.bytes,
    };
    window.memviz.lastOpen = { name, ...timings };
    if (pendingHash !== '') {
      const hash = pendingHash;
      pendingHash = '';
      await links.restore(hash);
    }
    if (current === null) setState('ready');
    links.schedule();
    return { state: 'ready', json: msg.summary, timings, notice: msg.notice || '' };
  } catch (err) {
    const message = `Could not open "${name}": ${err instanceof Error ? err.message : String(err)}`;
    if (current === mine) {
      current = null;
      els.loading.hidden = true;
    }
    showError(message);
    return { state: 'error', message };
  }
}

/** A worker that does not answer a cancel within this many ms is stuck: it is replaced. */
const CANCEL_GRACE_MS = 3000;

els.cancel.addEventListener('click', () => {
  if (current === null || client === null || current.id <= 0) return;
  const stuck = current;
  client.cancel(stuck.id);
  // A worker inside one long step (or dead) cannot see the cancel: replace it, keep the files.
  setTimeout(() => {
    if (current === stuck) {
      restartViewer(openedSources.slice(), 'Cancelled: the viewer was busy and was restarted with the files it had open.');
    }
  }, CANCEL_GRACE_MS);
});

// ----- panel: selectors, legend, summary ------------------------------------------------------

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
function showPanel(panelJson, table, summary) {
  const panel = /** @type {Panel} */ (JSON.parse(panelJson));
  if (panel.state === null) return;
  const state = panel.state;
  geometry = state.geometry;
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
  els.xAxis.querySelector('option[value="time"]').disabled = !state.has_time;
  const view = panel.view || 'active';
  const file = panel.file ?? 0;
  /** @type {Partial<Record<string, string>>} */
  const drawn = { segments: 'segments (or mapped ranges)', pools: 'allocations and pool envelopes' };
  const what = drawn[view] || 'allocations';
  els.peak.textContent = `peak ${panel.peak} · ${state.elements.toLocaleString('en-US')} ${what} drawn`;
  setChildren(els.legend, panel.legend.map((e) => {
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
  const notes = {
    pools: 'Allocations, and each private pool (CUDA graphs, graph-safe allocators) as an envelope of the memory it reserved.',
    segments: 'Each segment (cudaMalloc, or an expandable segment\'s mapped range) as one band, from its allocation to its free.',
  };
  els.viewNote.textContent = notes[/** @type {'pools' | 'segments'} */ (view)] || '';
  els.viewNote.hidden = els.viewNote.textContent === '';
  els.fileName.textContent = panel.files[file] || '';
  showNotice(panel.files[file] || '', panel.notice);
  showNoTrace(panel.no_trace, view);
  showView(view, panelKey(panel));
  filesAndCompare.refresh();
  const timelineKey = `${panelKey(panel)}/${view}`;
  if (timelineKey !== lastTimelineKey) {
    lastTimelineKey = timelineKey;
    searchBox.reset();
    workerCall({ method: 'clear_highlight' });
    linesTable.invalidate(timelineKey);
    userCode.fileChanged();
    liveTable.reset();
    leaksPanel.invalidate(panelKey(panel));
  }
  $('search-box').hidden = panel.view === 'state';
  const flameKey = panel.view === 'flame' ? panelKey(panel) : '';
  if (flameKey !== lastFlameKey) {
    lastFlameKey = flameKey;
    flameControls.show(flameKey !== '');
    if (flameKey !== '') flameReady = flameControls.enter();
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

/** The file/device the flamegraph was last made for ('' when not shown). */
let lastFlameKey = '';
/** Resolves when the flamegraph finished its first build. @type {Promise<unknown>} */
let flameReady = Promise.resolve();
/** The timeline (file/device/view) the search and the lines table were last made for. */
let lastTimelineKey = '';

/** What the state panel was last loaded for: file, device (reloaded when it changes). */
let stateKey = '';
/** Resolves when the state panel finished loading. */
let stateReady = Promise.resolve();
/** @param {Panel} panel */
function panelKey(panel) {
  // (A panel without a state is never shown: showPanel returns first.)
  return `${panel.file}/${panel.state === null ? '' : panel.state.device}`;
}

/**
 * @param {string} view
 * @param {string} key  the file and device shown
 */
function showView(view, key) {
  els.viewSelect.value = view;
  plotHint.setView(view);
  const isState = view === 'state';
  const isFlame = view === 'flame';
  els.statePanel.hidden = !isState;
  els.stateHeader.hidden = !isState;
  els.legendWrap.hidden = isState || isFlame;
  els.peak.hidden = isState;
  // Controls that do nothing in a view are hidden there.
  els.xAxisLabel.hidden = isState || isFlame;
  els.fitButton.hidden = isFlame;
  details.emptyText(isState
    ? 'Select an event to see its stack here; hover a block of the map for its own.'
    : isFlame ? 'Hover a frame to see its stack here; click it to zoom.'
      : 'Hover an allocation to see its stack here; click to pin it.');
  if (!isState) {
    details.setEvent(null);
    drawer.setTab('oom-panel', false);
    stateKey = '';
    return;
  }
  if (key !== stateKey) {
    stateKey = key;
    stateReady = stateHistory.reset();
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

let lastTicks = '';
/** @param {Ticks | null | undefined} ticks */
function showTicks(ticks) {
  if (!ticks || geometry === null) return;
  const p = geometry.plot;
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
  setChildren($('oom-marks'), (ticks.ooms || []).map((m) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = 'OOM';
    b.title = 'Out of memory here: show the allocator state and why';
    // At the plot's ends (an oom after the last allocation) the button stays inside the plot.
    b.style.left = `${Math.min(Math.max(m.x, p.left + 18), p.right - 18)}px`;
    b.style.top = `${p.top + 2}px`;
    b.addEventListener('click', () => { showOomEvent(m.index); });
    return b;
  }));
  els.yLabels.style.width = `${p.left - 6}px`;
  setChildren(els.yLabels, ticks.y.map((t) => {
    const s = document.createElement('span');
    s.textContent = t.label;
    s.style.top = `${t.pos_css_px}px`;
    return s;
  }));
}

els.fileSelect.addEventListener('change', () => {
  if (client) client.send({ method: 'select_file', index: Number(els.fileSelect.value) }, { panel: true });
  showTooltip(null);
});
els.deviceSelect.addEventListener('change', () => {
  if (client) client.send({ method: 'set_device', device: Number(els.deviceSelect.value) }, { panel: true });
  showTooltip(null);
});
els.xAxis.addEventListener('change', () => {
  if (client) client.send({ method: 'set_time_axis', on: els.xAxis.value === 'time' }, { panel: true });
});
els.fit.addEventListener('click', () => { if (client) client.send({ method: 'fit' }); });
els.viewSelect.addEventListener('change', () => {
  if (client) client.send({ method: 'set_view', view: viewKind(els.viewSelect.value) }, { panel: true });
  showTooltip(null);
});

/**
 * Shows the State History on the device's `index`-th oom event (its explanation opens in the
 * drawer). Resolves with the selection.
 * @param {number} index
 */
async function showOomEvent(index) {
  await window.memviz.setView('state');
  const k = stateHistory.ooms[index];
  if (k === undefined) return null;
  return stateHistory.select(k);
}

/** @typedef {import('./generated/ViewKind').ViewKind} ViewKind */
/** @type {ReadonlyArray<string>} */
const VIEW_KINDS = ['active', 'segments', 'pools', 'state', 'flame'];
/** A view's name from the page (a select, a link, the embedding parent), checked. @param {string} name @returns {ViewKind} */
function viewKind(name) {
  if (!VIEW_KINDS.includes(name)) throw new Error(`no view named ${JSON.stringify(name)}`);
  return /** @type {ViewKind} */ (name);
}

/** @type {import('./bridge.js').Call} */
async function workerCall(request, opts) {
  const c = await startViewer();
  return c.call(request, opts || {});
}

const searchBox = new SearchBox({ input: $('search-input'), only: $('search-only'), status: $('search-status') }, workerCall);
const linesTable = new LinesTable({
  panel: $('lines-panel'), table: $('lines-table'), rows: $('lines-rows'), allFrames: $('lines-all-frames'),
  status: $('lines-status'),
}, workerCall, (text) => { $('search-status').textContent = text; });
/** "Your code" (docs/sites.md), in the Source lines panel: a new pattern renames every site shown. */
const userCode = new UserCodeSetting(workerCall, () => {
  linesTable.refresh();
  liveTable.reset();
  leaksPanel.refresh();
  filesAndCompare.refreshSites();
  if (els.viewSelect.value === 'state') stateHistory.refreshSites();
  else if (tip !== null && tip.pinned && 'element' in tip) pinElement(tip.element);
  if (filesOpen > 0) links.schedule();
});
$('lines-status').before(userCode.element);

const liveTable = new LiveTable({
  panel: $('live-panel'), refresh: $('live-refresh'), peak: $('live-peak'), status: $('live-status'), rows: $('live-rows'),
}, workerCall);
const leaksPanel = new LeaksPanel({ panel: $('leaks-panel'), rule: $('leaks-rule'), list: $('leaks-list') }, workerCall);

const filesAndCompare = new FilesAndCompare({
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
  if (client) client.send({ method: 'select_file', index: i }, { panel: true });
  showTooltip(null);
}, async (a, b) => {
  await window.memviz.setView('flame');
  return flameControls.showDiff(a, b);
});

const flameControls = new FlameControls({
  controls: $('flame-controls'),
  at: $('flame-at'),
  frames: $('flame-frames'),
  breadcrumb: $('flame-breadcrumb'),
  status: $('flame-status'),
  labels: $('flame-labels'),
}, workerCall);

const links = new DeepLinks({
  async state() {
    if (filesOpen === 0) return null;
    const { result } = await workerCall({ method: 'state' });
    return result;
  },
  call: workerCall,
  setView: (name) => window.memviz.setView(name),
  search: () => ({ q: $('search-input').value, only: $('search-only').checked }),
  async setSearch(q, only) {
    if (q === $('search-input').value && only === $('search-only').checked && (q === '' || searchBox.result)) return;
    $('search-input').value = q;
    $('search-only').checked = only;
    await searchBox.run();
  },
  flameAt: () => $('flame-at').value,
  async setFlameAt(value) {
    await flameReady;
    const select = $('flame-at');
    if (![...select.options].some((o) => o.value === value) || value === 'diff') return;
    select.value = value;
    await flameControls.apply();
  },
  flameFrames: () => $('flame-frames').value,
  async setFlameFrames(value) {
    await flameReady;
    if (value === $('flame-frames').value) return;
    flameControls.frames = /** @type {FrameMode} */ (value);
    await flameControls.apply();
  },
  stateSelect: async (k) => { await stateReady; return stateHistory.select(k); },
  pin: (element) => pinElement(element),
  userCode: () => userCode.applied,
  setUserCode: (pattern) => userCode.apply(pattern),
});

/** Pins a timeline element's tooltip (negative: unpins); resolves with the tooltip shown. */
/** @param {number} element */
async function pinElement(element) {
  const { result } = await view({ method: 'pin', element });
  showTooltip(result === null ? null : JSON.stringify(result));
  return tip;
}
$('copy-link').addEventListener('click', () => links.copy($('link-status')));
// A document with no address of its own (the report in a notebook's <iframe srcdoc>, or one
// opened from a blob: or data: URL) has no link that could reopen this view.
if (['about:', 'blob:', 'data:'].includes(location.protocol)) $('copy-link').hidden = true;

/** Applies a parent's `view`, `device` and `range` (embedding protocol). */
/** @param {{view?: string, device?: number, range?: number[]}} m */
async function applyEmbed(m) {
  if (m.view) await window.memviz.setView(m.view);
  if (m.device !== undefined && Number.isInteger(m.device)) await view({ method: 'set_device', device: m.device });
  if (m.range) await view({ method: 'set_x_window', x0: m.range[0], x1: m.range[1] });
  const st = await window.memviz.state();
  return { view: st ? st.view : null, device: st ? st.device : null };
}

const embed = new EmbedHost({
  open: (src, title) => open(typeof src === 'string' ? src : new File([src], title)),
  apply: applyEmbed,
}, query.get('origin'));

const stateHistory = new StateHistory({
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

// ----- the details pane (the hovered or pinned item) ----------------------------------------

/** The JSON of the tooltip shown: a hover over the same allocation only moves the hint. @type {string | null} */
let tipJson = null;

/** @param {string | null} json  Rust's tooltip JSON (a `Tooltip` or an `Unavailable`), or null: none */
function showTooltip(json) {
  if (json && json === tipJson) {
    details.hint(tip, pointer, canvasSize());
    return;
  }
  tipJson = json || null;
  const answer = /** @type {TooltipAnswer | null} */ (json ? JSON.parse(json) : null);
  // The hit index or the tooltips' context cannot fit in memory: said in the notice, no tooltip.
  tip = answer === null || isUnavailable(answer) ? null : answer;
  embed.selection(tip);
  if (filesOpen > 0) links.schedule();
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

async function copyStack() {
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
els.copy.addEventListener('click', copyStack);

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
function wireCanvas(canvas) {
  canvas.addEventListener('wheel', (ev) => {
    if (!client) return;
    ev.preventDefault();
    const [x, y] = canvasPos(ev);
    const scale = ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? 400 : 1;
    client.send({ method: 'wheel', x, y, delta_y: ev.deltaY * scale });
  }, { passive: false });

  canvas.addEventListener('pointerdown', (ev) => {
    if (!client || ev.button !== 0) return;
    canvas.focus({ preventScroll: true });
    canvas.setPointerCapture(ev.pointerId);
    pointer = canvasPos(ev);
    client.send({ method: 'pointer_down', x: pointer[0], y: pointer[1] });
  });
  canvas.addEventListener('pointermove', (ev) => {
    pointerOnPlot = true;
    if (!client) return;
    pointer = canvasPos(ev);
    client.send({ method: 'pointer_move', x: pointer[0], y: pointer[1] }, { tooltip: true });
  });
  canvas.addEventListener('pointerup', (ev) => {
    if (!client || ev.button !== 0) return;
    pointer = canvasPos(ev);
    client.send({ method: 'pointer_up', x: pointer[0], y: pointer[1] }, { tooltip: true });
  });
  canvas.addEventListener('pointerleave', () => {
    pointerOnPlot = false;
    if (!client) return;
    client.send({ method: 'pointer_leave' }, { tooltip: true });
  });
  canvas.addEventListener('dblclick', () => { if (client) client.send({ method: 'double_click' }); });
  canvas.addEventListener('keydown', (ev) => {
    if (!client || ev.ctrlKey || ev.metaKey || ev.altKey) return;
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
wireCanvas(els.canvas);

// ----- the JS API ---------------------------------------------------------------------------

/**
 * Sends a request and resolves after the frame it caused is drawn: `{result, frameMs}`.
 * @template {import('./bridge.js').Request} R
 * @param {R} request
 */
async function view(request) {
  const c = await startViewer();
  const panel = ['select_file', 'set_device', 'set_time_axis', 'resize', 'set_view'].includes(request.method);
  return c.call(request, { waitFrame: true, panel });
}

window.memviz = {
  open,
  openAll,
  /** Opens the drawer's panel `name` (`lines`, `live`, `leaks`, `oom`, `files`, `compare`, `settings`, `summary`), or closes it (null). */
  /** @param {string | null} name */
  openTab(name) {
    /** @type {Record<string, string>} */
    const ids = { settings: 'settings', summary: 'summary' };
    drawer.open(name === null ? null : ids[name] || `${name}-panel`);
  },
  help,
  showOomEvent,
  /** Resolves with the viewer state (camera, counts, scene), or null before the first file. */
  async state() {
    const c = await startViewer();
    const { result } = await c.call({ method: 'state' });
    return result;
  },
  view,
  /** Times the worker was replaced after it died or stopped answering. */
  restarts: 0,
  /** Resolves with `{wasmMemoryBytes, heapBytes, jsHeapBytes}` (heapBytes: Rust's heap; jsHeapBytes: the page's, Chrome only). */
  async stats() {
    const c = await startViewer();
    const s = await c.stats();
    const heap = performance.memory ? performance.memory.usedJSHeapSize : null;
    return { ...s, jsHeapBytes: heap };
  },
  /** The tooltip shown (Rust's JSON, parsed), or null. */
  tooltip: () => tip,
  lastCopied: null,
  /** Timings of the last successful open: `{name, bytes, parseMs, finishMs, firstDrawMs, totalMs, drawMs, firstFrameMs, readyMs}` (ms; firstFrameMs from the open() call to the first frame drawn, readyMs to the summary and legend shown too). */
  lastOpen: null,
  /** The Allocator State History panel: `select(k)`, `search(forward)`, `focus(addr)`, `selection`, `selected`, `count`. */
  stateHistory,
  /** The search box: `run()` resolves with `{query, count, bytes, size, error}`; `result`. */
  searchBox,
  /** The source-lines table: `load()` resolves with its rows; `highlight(i)`; `rows`. */
  linesTable,
  /** "Alive at a moment": `show(step)` (-1: last click, -2: peak) resolves with `{step, count, total, rows}`. */
  liveTable,
  /** Leak suspects: `load()` resolves with the report. */
  leaksPanel,
  /** Opened files side by side and the compare panel: `loadFiles()`, `compare(a, b)` resolve with Rust's JSON. */
  filesAndCompare,
  /** The flamegraph's controls: `apply()`, `showDiff(a, b)`, `refresh()` (resolves with `{breadcrumb, labels, state}`), `info`. */
  flameControls,
  /** Deep links: `write()` (resolves with the hash written), `restore(hash)`, `copy()`. */
  links,
  /** Pins the tooltip of timeline element `e` (negative: unpins); resolves with it (parsed) or null. */
  pin: pinElement,
  /** Shows a view (`active`, `segments`, `pools`, `state`); resolves after its frame is drawn (and, for `state`, once the list is loaded). */
  /** @param {string} name */
  async setView(name) {
    const r = await view({ method: 'set_view', view: viewKind(name) });
    if (name === 'state') await stateReady;
    if (name === 'flame') await flameReady;
    return r;
  },
};

wireFileInputs(els.input, els.overlay, (files) => { openAll(files); });

/**
 * Opens files one after another (a chooser's or a drop's several files, or the ?url= list: each
 * opens, the last one shown); stops at a cancel. Resolves with their results.
 * @param {(File | string)[]} files
 */
async function openAll(files) {
  /** @type {OpenResult[]} */
  const results = [];
  for (const f of files) {
    const r = await open(f);
    results.push(r);
    if (r.state === 'cancelled') break;
  }
  return results;
}
els.demo.addEventListener('click', () => { open('assets/demo.pickle'); });
setState('empty');
startViewer().catch((err) => showError(sentence(err.message)));
// Each ?url= in turn (`memviz open A B`: several), the last one shown.
const startUrls = urlParams();
if (startUrls.length > 0) openAll(startUrls);
