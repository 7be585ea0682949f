// session.js: the worker's life: it starts (bridge.js's ViewerClient on the #plot canvas), its
// messages go to the page, it takes the canvas's size and the page's theme, and a worker that
// died (or stopped answering a cancel) is replaced by a new one on a fresh canvas, which reopens
// the files that had opened. The requests of the other modules go through workerCall and view.

import { ViewerClient } from './bridge.js';
import { els, page, query } from './page_state.js';
import { showError, clearError, sentence } from './status.js';
import { plotHint } from './parts.js';

/** @typedef {import('./generated/Answers').Answers} Answers */
/** @typedef {import('./page_state.js').OpenSource} OpenSource */
/** @typedef {import('./page_state.js').OpenResult} OpenResult */
/** @typedef {import('./bridge.js').Request} Request */
/** @typedef {import('./bridge.js').Call} Call */
/**
 * What the session calls in the modules above it (they import this one, and the modules
 * never import each other in a cycle): main.js connects them before the worker starts.
 * @typedef {object} SessionHooks
 * @property {(ticks: Answers['ticks']) => void} frame  a frame was drawn (its tick labels)
 * @property {(json: string | null) => void} tooltip  the tooltip to show (Rust's JSON), or none
 * @property {(panel: string, table: string | undefined, summary: string | undefined) => void} panel  what surrounds the plot
 * @property {(canvas: HTMLCanvasElement) => void} wireCanvas  wires a fresh canvas's input
 * @property {(src: OpenSource) => Promise<OpenResult>} reopen  opens a file again in a new worker (the alert stays)
 */

/** @type {SessionHooks} */
const above = {
  frame() {},
  tooltip() {},
  panel() {},
  wireCanvas() {},
  reopen: async () => ({ state: 'cancelled' }),
};

/** Connects the modules above (main.js, once, before the worker starts). @param {SessionHooks} hooks */
export function connectSession(hooks) {
  Object.assign(above, hooks);
}

/** @type {Promise<ViewerClient> | null} */
let clientPromise = null;

/** The page's colours: the canvas follows them (sent to the worker when it starts, and on every change). @type {'light' | 'dark'} */
let theme = 'light';

/** The canvas's non-data colours follow the page's theme. @param {ViewerClient} c */
export function sendTheme(c) {
  c.send({ method: 'set_theme', dark: theme === 'dark' });
}

/** The page's theme changed (help.js's toggle, or the system's). @param {'light' | 'dark'} t */
export function setTheme(t) {
  theme = t;
  if (page.client) sendTheme(page.client);
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

export function startViewer() {
  if (clientPromise !== null) return clientPromise;
  clientPromise = ViewerClient.start(els.canvas, backendParam(), {
    progress(msg) {
      if (page.current === null || msg.id !== page.current.id) return;
      els.progress.textContent = progressText(msg.name, msg.bytes, msg.total, msg.phase);
      // Reading fills the bar to 80 %; the model, the layout and the first frame the rest.
      const afterPhase = { model: 80, layout: 88, draw: 96 };
      const after = msg.phase === undefined ? undefined : afterPhase[msg.phase];
      if (after !== undefined) els.bar.value = after;
      else if (msg.total) els.bar.value = Math.min(80, (msg.bytes * 80) / msg.total);
      else els.bar.removeAttribute('value');
    },
    frame(msg) {
      above.frame(/** @type {Answers['ticks']} */ (JSON.parse(msg.ticks)));
    },
    tooltip(json) { above.tooltip(json); },
    panel(panel, table, summary) { above.panel(panel, table, summary); },
    fatal(msg) {
      showError(`memviz hit an internal error (a bug): ${sentence(msg.message)} Reload the page and try again; `
        + 'if it happens again, please report it with the file.');
    },
    crashed(msg) { onCrash(msg); },
    // The GPU failed and bridge.js put a fresh canvas in the old one's place (WebGL2 draws on it).
    canvas(fresh) {
      els.canvas = fresh;
      above.wireCanvas(fresh);
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
    page.client = c;
    const { backend, adapter, gpuError } = c.info || { backend: '', adapter: '', gpuError: '' };
    els.backend.textContent = backend ? 'GPU drawing' : 'cannot draw here';
    els.backend.title = backend ? `${backend}${adapter ? `: ${adapter}` : ''}` : adapter;
    document.body.dataset.memvizBackend = backend ? backend.toLowerCase() : 'none';
    if (gpuError) {
      page.cannotDraw = `memviz cannot draw in this browser: ${sentence(gpuError)} Files still open, with their summary `
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
  const sources = page.openedSources.slice();
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
export function restartViewer(sources, message) {
  if (page.restarting !== null) return page.restarting;
  const old = page.client;
  page.client = null;
  clientPromise = null;
  if (old !== null) old.terminate();
  if (page.current !== null) {
    page.current = null;
    els.loading.hidden = true;
  }
  const fresh = /** @type {HTMLCanvasElement} */ (els.canvas.cloneNode(false));
  els.canvas.replaceWith(fresh);
  els.canvas = fresh;
  above.wireCanvas(fresh);
  plotHint.watch(fresh);
  // The new worker's observer watches the new canvas.
  if (canvasObserver !== null) canvasObserver.disconnect();
  canvasObserver = null;
  lastSize = '';
  page.filesOpen = 0;
  page.openedSources = [];
  // The dead worker's files, views and panels are gone: hide them until a file is back.
  els.viewer.hidden = true;
  page.lastTimelineKey = '';
  page.lastFlameKey = '';
  above.tooltip(null);
  window.memviz.restarts += 1;
  page.restarting = (async () => {
    showError(message);
    try {
      await startViewer();
      for (const s of sources) {
        const r = await above.reopen(s.src);
        if (r.state !== 'ready') break;
      }
    } finally {
      page.restarting = null;
      if (page.filesOpen === 0) els.viewer.hidden = true;
      showError(message);
    }
  })();
  return page.restarting;
}

let lastSize = '';
/** The canvas's content box in CSS px (without its border). @returns {[number, number]} */
export function canvasSize() {
  return [els.canvas.clientWidth, els.canvas.clientHeight];
}

/** Watches the canvas's size (made when the worker is ready). @type {ResizeObserver | null} */
let canvasObserver = null;

/**
 * Sends the canvas's size to the worker when it changed: on the observer's report, or when
 * the page reads it itself (open() lays the plot out before a file goes to the worker).
 * @param {boolean} [observed]  called by the ResizeObserver
 */
export function resize(observed = false) {
  if (page.client === null) return;
  const [w, h] = canvasSize();
  if (w < 1 || h < 1) return;
  const size = [w, h, window.devicePixelRatio || 1];
  if (size.join() === lastSize) return;
  lastSize = size.join();
  page.client.send({ method: 'resize', css_w: size[0], css_h: size[1], dpr: size[2] }, { panel: page.filesOpen > 0 });
  // A size read here, not reported by the observer, leaves the observer's last report behind:
  // back at that size before its next delivery (a timeline, then open() of a file that shows
  // the State History, whose list narrows the canvas again), it would stay silent and the
  // worker keep this one. Observing anew makes its next delivery report the size as it is then.
  if (!observed && canvasObserver !== null) {
    canvasObserver.unobserve(els.canvas);
    canvasObserver.observe(els.canvas);
  }
}

// ----- requests -----------------------------------------------------------------------------

/** @type {Call} */
export async function workerCall(request, opts) {
  const c = await startViewer();
  return c.call(request, opts || {});
}

/**
 * Sends a request and resolves after the frame it caused is drawn: `{result, frameMs}`.
 * @template {Request} R
 * @param {R} request
 */
export async function view(request) {
  const c = await startViewer();
  const panel = ['select_file', 'set_device', 'set_time_axis', 'resize', 'set_view'].includes(request.method);
  return c.call(request, { waitFrame: true, panel });
}
