// worker.js: the Web Worker that owns the wasm viewer (crates/memviz-web/src/web_viewer.rs):
// it reads files, feeds the parser, draws into the transferred OffscreenCanvas and answers
// input. The page (bridge.js) talks to it only by messages; see www/README.md for the protocol.
// Rust's answers (JSON text) pass through untouched: nothing here interprets snapshot data.
// The messages both ways are typed in protocol.js.

/** @typedef {import('./protocol.js').ToWorker} ToWorker */
/** @typedef {import('./protocol.js').FromWorker} FromWorker */
/** @typedef {import('./protocol.js').InitMsg} InitMsg */
/** @typedef {import('./protocol.js').OpenMsg} OpenMsg */
/** @typedef {import('./protocol.js').CallMsg} CallMsg */
/** @typedef {import('./protocol.js').CanvasMsg} CanvasMsg */

/** Blob chunks read per `push` (big enough to amortise the calls, small enough for progress). */
const CHUNK_BYTES = 4 << 20;
/**
 * Blob reads in flight while a chunk is parsed. With one, a 150 MB file waited 221 ms for its
 * bytes in headless Chromium (2 cores): a read of 4 MB takes about as long as its parse.
 */
const READS_AHEAD = 3;
/** At most one progress message per this many ms. */
const PROGRESS_MS = 50;
/** The panel request: everything around the plot, with the 12 largest sites in the legend. */
const PANEL_REQUEST = JSON.stringify({ method: 'panel', legend_entries: 12 });
/** The ticks request, answered with each drawn frame. */
const TICKS_REQUEST = JSON.stringify({ method: 'ticks' });

/** @type {any} */ let viewer = null;
/** @type {WebAssembly.Memory | null} */ let memory = null;
/** @type {any} */ let WebViewer = null;
/** The id of the open() in progress (0: none). */
let loading = 0;
const cancelled = new Set();
/** Calls waiting for the next drawn frame: seq → result. @type {{seq: number, result: string}[]} */
let waiting = [];
let frameScheduled = false;
/** The GPU in use failed and the page was asked for a fresh canvas (`gpu-lost`); no drawing until it comes. */
let gpuLost = false;
/** Fresh canvases taken after a GPU failure: past MAX_GPU_SWAPS the viewer stops drawing. */
let gpuSwaps = 0;
const MAX_GPU_SWAPS = 3;
/** How often an idle worker checks whether its GPU failed, ms. */
const GPU_CHECK_MS = 250;
/** The backend in use (`WebGPU`, `WebGL2` or ''), and whether a draw is running (a crash then is the GPU's). */
let backendName = '';
let drawing = false;

/** A worker's requestAnimationFrame (Chrome, Firefox), else a 16 ms timer. @type {(cb: (now: number) => void) => void} */
const raf = typeof self.requestAnimationFrame === 'function'
  ? (cb) => self.requestAnimationFrame(cb)
  : (cb) => setTimeout(() => cb(performance.now()), 16);

/**
 * A message to the page (protocol.js).
 * @param {FromWorker} msg
 * @param {Transferable[]} [transfer]
 */
function post(msg, transfer) {
  self.postMessage(msg, transfer || []);
}

/** @param {unknown} err */
function errorText(err) {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The kind of a failed open, for the page to branch on: Rust's (`err.kind`: `empty`,
 * `truncated`, `not_pickle`, `checkpoint`, `not_snapshot`, `malformed`, `too_big`, `no_file`),
 * `download` for a URL that could not be read, else `other`.
 * @param {unknown} err
 */
function errorKind(err) {
  if (err instanceof Error && 'kind' in err && typeof err.kind === 'string') return err.kind;
  return 'other';
}

/**
 * An error of the download of a URL (`kind: 'download'`).
 * @param {string} message
 * @param {unknown} [cause]
 */
function downloadError(message, cause) {
  return Object.assign(new Error(message, { cause }), { kind: 'download' });
}

function panicked() {
  return Boolean(WebViewer && WebViewer.has_panicked());
}

/**
 * True when `err` is a WebAssembly trap (an allocation that failed, as when the heap cannot grow
 * past 4 GiB, aborts): the module's state is lost and this worker must be replaced.
 * @param {unknown} err
 */
function trapped(err) {
  return err instanceof WebAssembly.RuntimeError;
}

/** The file being opened or last opened, for the page's message when the worker dies. */
let fileName = '';

/**
 * Tells the page this worker can no longer be used (a trap, or a panic), naming the file and
 * what it was doing (`doing`: a phrase where `%s` stands for the file's name); the page
 * replaces the worker and reopens the files it still has.
 * @param {unknown} err
 * @param {string} doing
 * @param {number} id  the open that was running (0: none)
 */
function crashed(err, doing, id) {
  viewer = null;
  // A panic or trap while WebGPU drew (wgpu panics when a buffer cannot be created on a device
  // that failed before it said so): the page restarts the worker on WebGL2 (bridge.js).
  const gpu = drawing && backendName === 'WebGPU';
  drawing = false;
  post({
    type: 'crashed',
    id,
    file: fileName,
    doing,
    message: gpu ? `WebGPU failed while ${doing.replace('%s', fileName ? `"${fileName}"` : 'a file')} (${errorText(err)})` : errorText(err),
    panicked: panicked(),
    gpu,
    gpuReason: gpu ? `a draw failed: ${errorText(err)}` : '',
    memoryBytes: memory ? memory.buffer.byteLength : 0,
  });
}

/** Draws now (`viewer.draw()`), marking the draw so a crash inside it is known to be the GPU's. */
function drawNow() {
  drawing = true;
  const ms = viewer.draw();
  // (Left set when the draw throws: `crashed` reads it, every catch clears it.)
  drawing = false;
  return ms;
}

/** What the page shows about drawing: `ready` and `backend` messages carry it. */
function backendInfo() {
  backendName = viewer.backend();
  return { backend: backendName, adapter: viewer.adapter(), gpuError: viewer.gpu_error(), webgpuFailed: viewer.webgpu_failed() };
}

/**
 * The GPU failed (lost, or an error): ask the page for a fresh canvas, once per failure; past
 * MAX_GPU_SWAPS say that nothing can be drawn any more (the files stay, with their summaries).
 */
function onGpuFailure() {
  if (gpuLost || viewer === null) return;
  gpuLost = true;
  const message = viewer.gpu_failure();
  if (gpuSwaps >= MAX_GPU_SWAPS) {
    post({ type: 'backend', ...backendInfo(), backend: '', gpuError: `the GPU failed ${gpuSwaps + 1} times (last: ${message})`, failed: message });
    return;
  }
  post({ type: 'gpu-lost', backend: backendName, message });
}

/**
 * The page's fresh canvas after `gpu-lost`: draw on it with WebGL2 (the model, files and views
 * stay; only the GPU and its uploads are made again).
 * @param {CanvasMsg} msg
 */
async function takeCanvas(msg) {
  if (viewer === null) return;
  gpuSwaps += 1;
  const created = await WebViewer.create_gpu(msg.canvas, 'webgl2');
  if (viewer === null) return; // the worker crashed meanwhile: the page replaces it
  viewer.attach_gpu(msg.canvas, created);
  gpuLost = false;
  post({ type: 'backend', ...backendInfo(), failed: msg.failed || '' });
  try {
    drawNow();
  } catch (err) {
    if (trapped(err) || panicked()) crashed(err, 'drawing %s', 0);
    drawing = false;
    return;
  }
  requestFrame();
}

function requestFrame() {
  if (frameScheduled || viewer === null) return;
  frameScheduled = true;
  raf(onFrame);
}

/** @param {number} now */
function onFrame(now) {
  frameScheduled = false;
  let code;
  drawing = true;
  try {
    code = viewer.frame(now);
  } catch (err) {
    if (trapped(err) || panicked()) crashed(err, 'drawing %s', 0);
    else post({ type: 'fatal', message: errorText(err), panicked: panicked() });
    drawing = false;
    return;
  }
  drawing = false;
  if (code & 1) {
    post({ type: 'frame', ticks: viewer.request(TICKS_REQUEST), frameMs: viewer.last_frame_ms() });
  }
  if (waiting.length > 0) {
    const done = waiting;
    waiting = [];
    for (const w of done) post({ type: 'result', seq: w.seq, result: w.result, frameMs: viewer.last_frame_ms() });
  }
  if (code & 4) {
    onGpuFailure();
    return;
  }
  if (code & 2) requestFrame();
}

/** The page's `init`: loads the wasm and makes the viewer on the canvas. @param {InitMsg} msg */
async function init(msg) {
  try {
    const glue = await import(msg.glue);
    const exports = await glue.default({ module_or_path: msg.wasm });
    memory = exports.memory;
    WebViewer = glue.WebViewer;
    viewer = await WebViewer.create(msg.canvas, msg.backend || 'auto');
    viewer.resize(msg.cssW, msg.cssH, msg.dpr);
    // Tests: `?mem_budget_mb=N` lowers the budget files and views are checked against;
    // `?mem_limit_mb=N` makes an allocation past N MiB fail, as a real out-of-memory does.
    // Both can only lower what the browser gives.
    if (msg.memBudgetMb > 0) viewer.set_mem_budget_mb(msg.memBudgetMb);
    if (msg.memLimitMb > 0) viewer.set_mem_limit_mb(msg.memLimitMb);
    post({ type: 'ready', ...backendInfo() });
    // A device lost while nothing is drawn is noticed here (a frame notices it too).
    setInterval(() => {
      if (viewer !== null && !gpuLost && viewer.gpu_failure() !== '') onGpuFailure();
    }, GPU_CHECK_MS);
  } catch (err) {
    post({ type: 'fatal', message: `the viewer could not start (${errorText(err)})`, panicked: panicked() });
  }
}

/**
 * A source as `{name, total, ahead?, read(): Promise<Uint8Array|null>, cancel()}` (`ahead`: how
 * many reads may be in flight at once; one when absent).
 * @param {File | Blob | ArrayBuffer | {url: string}} src
 * @param {string | null} name  the name the page gave, if any
 */
async function openSource(src, name) {
  if (src instanceof Blob) {
    let at = 0;
    return {
      name: name || (src instanceof File ? src.name : 'Blob'),
      total: src.size,
      // Reads may overlap (READS_AHEAD): each takes its range before it waits.
      ahead: READS_AHEAD,
      async read() {
        if (at >= src.size) return null;
        const start = at;
        at = Math.min(src.size, at + CHUNK_BYTES);
        return new Uint8Array(await src.slice(start, at).arrayBuffer());
      },
      cancel() { at = src.size; },
    };
  }
  if (src instanceof ArrayBuffer) {
    let at = 0;
    const bytes = new Uint8Array(src);
    return {
      name: name || 'ArrayBuffer',
      total: bytes.length,
      async read() {
        if (at >= bytes.length) return null;
        const out = bytes.subarray(at, at + CHUNK_BYTES);
        at += out.length;
        return out;
      },
      cancel() { at = bytes.length; },
    };
  }
  if (src && typeof src.url === 'string') {
    let response;
    const where = new URL(src.url);
    const cross = where.origin !== self.location.origin;
    try {
      response = await fetch(src.url);
    } catch (err) {
      // fetch() says no more than "Failed to fetch" for a refused CORS read, a blocked request
      // and an unreachable server alike: name the likely causes and their fixes.
      throw downloadError(cross
        ? `could not download ${src.url}: the server is unreachable, or it does not allow this page to read the file. `
          + `A server on another origin must send the header "Access-Control-Allow-Origin: ${self.location.origin}" (or "*"), `
          + 'and a Content-Security-Policy on this site must list it in connect-src (see docs/deploy.md). '
          + 'Or download the file and open it here.'
        : `could not download ${src.url}: the server is unreachable (${errorText(err)}).`, err);
    }
    if (!response.ok || response.body === null) {
      const hint = response.status === 404 ? ' (no file at that address: check the url= parameter)'
        : response.status === 401 || response.status === 403 ? ' (the server refused: the file may need a login, which this page cannot send)'
          : '';
      throw downloadError(`the server answered ${response.status} ${response.statusText}`.trim() + hint);
    }
    const length = response.headers.get('content-length');
    const encoded = response.headers.get('content-encoding');
    const reader = response.body.getReader();
    return {
      name: name || decodeURIComponent(new URL(src.url).pathname.split('/').pop() || 'download'),
      total: length !== null && !encoded ? Number(length) : 0,
      async read() {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return null;
          if (value.length > 0) return value;
        }
      },
      cancel() { reader.cancel().catch(() => {}); },
    };
  }
  throw new Error('expected a File, Blob, ArrayBuffer or URL');
}

/** The page's `open`: reads, parses and draws a file. @param {OpenMsg} msg */
async function open(msg) {
  const id = msg.id;
  loading = id;
  const t0 = performance.now();
  let source = null;
  let doing = 'opening %s';
  const stale = () => loading !== id || cancelled.has(id);
  try {
    if (viewer === null) throw new Error('the viewer is not running');
    source = await openSource(msg.src, msg.name);
    fileName = source.name;
    if (stale()) throw new Error('cancelled');
    // No refusal by size: Rust decides while reading, from the memory the file takes (a file
    // that cannot fit is refused with its estimate; see crates/memviz-web/src/memory.rs).
    doing = 'reading %s';
    viewer.begin(source.name, source.total || 0);
    post({ type: 'progress', id, name: source.name, bytes: 0, total: source.total });
    let last = performance.now();
    // Time spent parsing pushed chunks (the rest of the read loop waits for the source).
    let pushMs = 0;
    // Read ahead: the next reads run while this chunk is parsed (one for a stream, whose
    // reads must not overlap; READS_AHEAD for a Blob, whose reads each go to the browser
    // process and back).
    const ahead = source.ahead || 1;
    /** @type {Promise<Uint8Array | null>[]} */
    const reads = [];
    for (let i = 0; i < ahead; i++) reads.push(source.read());
    for (;;) {
      const chunk = await /** @type {Promise<Uint8Array | null>} */ (reads.shift());
      if (chunk !== null && !stale()) reads.push(source.read());
      if (stale()) {
        source.cancel();
        if (loading === id) viewer.cancel();
        post({ type: 'cancelled', id });
        return;
      }
      if (chunk === null) break;
      const pushAt = performance.now();
      viewer.push(chunk);
      pushMs += performance.now() - pushAt;
      const now = performance.now();
      if (now - last >= PROGRESS_MS) {
        last = now;
        post({ type: 'progress', id, name: source.name, bytes: viewer.bytes_read(), total: source.total });
      }
    }
    // Every phase after the read moves the bar on: the model's last tables, then the first
    // view's timeline, layout and first scene, then the first frame.
    const bytes = viewer.bytes_read();
    // [wasm memory, Rust heap, Rust heap high-water] after each phase (benchmarks read them).
    /** @type {Record<string, unknown>} */
    const memory = { read: viewer.memory_probe() };
    doing = 'building the model of %s';
    post({ type: 'progress', id, name: source.name, bytes, total: source.total, phase: 'model' });
    const parsedMs = performance.now() - t0;
    await yieldToPost();
    if (stale()) return dropCancelled(id);
    viewer.finish_parse();
    const modelMs = performance.now() - t0;
    memory.model = viewer.memory_probe();
    doing = 'laying out the timeline of %s';
    post({ type: 'progress', id, name: source.name, bytes, total: source.total, phase: 'layout' });
    await yieldToPost();
    if (stale()) return dropCancelled(id);
    viewer.finish();
    memory.layout = viewer.memory_probe();
    const finishedMs = performance.now() - t0;
    doing = 'drawing %s';
    post({ type: 'progress', id, name: source.name, bytes, total: source.total, phase: 'draw' });
    const drawMs = drawNow();
    const drawnMs = performance.now() - t0;
    memory.drawn = viewer.memory_probe();
    // [name, memory, ms since the worker got the file] per step of building the first view.
    const steps = /** @type {[string, number[], number][]} */ (JSON.parse(viewer.memory_phases()));
    memory.steps = steps.map(([name, mem, at]) => [name, mem, at - t0]);
    loading = 0;
    // The first frame is drawn: say so before the summary and the panel are made.
    post({ type: 'drawn', id });
    const summary = viewer.summary_json();
    const table = summaryTable();
    const panel = viewer.request(PANEL_REQUEST);
    post({
      type: 'opened',
      id,
      name: source.name,
      bytes: viewer.bytes_read(),
      summary,
      table,
      panel,
      // Not an error: why the file is incomplete when it was cut before its end, else ''.
      notice: viewer.notice(),
      // ms since the worker got the file: bytes parsed, model finished, its first view built,
      // first frame drawn, summary and panel (legend, ticks) ready; pushMs: the parse's own
      // time within parseMs (the rest waited for the source); drawMs: the draw's own CPU time
      // (scene upload and draw calls). `memory.steps` times each step of the first view.
      timings: { parseMs: parsedMs, pushMs, modelMs, finishMs: finishedMs, firstDrawMs: drawnMs, totalMs: performance.now() - t0, drawMs, memory },
    });
    requestFrame();
  } catch (err) {
    if (loading === id) loading = 0;
    if (source !== null) source.cancel();
    if (trapped(err) || panicked()) {
      crashed(err, doing, id);
    } else if (cancelled.has(id)) {
      post({ type: 'cancelled', id });
    } else {
      post({ type: 'failed', id, message: errorText(err), panicked: false, kind: errorKind(err) });
    }
    drawing = false;
  } finally {
    cancelled.delete(id);
  }
}

/** Ends open `id`, cancelled (or replaced by a newer open) between two of its steps. @param {number} id */
function dropCancelled(id) {
  if (loading === id) {
    viewer.cancel();
    loading = 0;
  }
  post({ type: 'cancelled', id });
}

/** Lets the progress message just posted reach the page before a long synchronous step. */
function yieldToPost() {
  return new Promise((resolve) => { setTimeout(resolve, 0); });
}

function postPanel() {
  post({ type: 'panel', panel: viewer.request(PANEL_REQUEST), table: summaryTable(), summary: viewer.summary_json() });
}

/** The current file's summary table (text). */
function summaryTable() {
  return JSON.parse(viewer.request('{"method":"summary_table"}'));
}

/** The page's request (`{type: 'call', request}`: a `Request` as JSON text), answered with Rust's JSON text. @param {CallMsg} msg */
function call(msg) {
  let result;
  try {
    if (viewer === null) throw new Error('the viewer is not running');
    result = viewer.request(msg.request);
  } catch (err) {
    if (trapped(err) || panicked()) {
      crashed(err, `answering ${msg.method} on %s`, 0);
      return;
    }
    // (A fire-and-forget call's error has no one to go to.)
    if (msg.seq !== undefined) post({ type: 'result', seq: msg.seq, error: errorText(err), panicked: panicked() });
    return;
  }
  if (msg.seq === undefined) {
    if (msg.tooltip) post({ type: 'tooltip', json: result === 'null' ? null : result });
    if (msg.panel) postPanel();
    requestFrame();
    return;
  }
  if (msg.panel) postPanel();
  if (msg.waitFrame && gpuLost) {
    // No frame is drawn until the fresh canvas comes: answer now.
    post({ type: 'result', seq: msg.seq, result });
  } else if (msg.waitFrame) {
    // Answered after the next animation frame (drawn, or found clean).
    waiting.push({ seq: msg.seq, result });
    requestFrame();
  } else {
    post({ type: 'result', seq: msg.seq, result });
    requestFrame();
  }
}

/**
 * Tests: destroys the GPU device; with `trap`, then fails the next draw as a panic inside wgpu
 * would (a buffer created on a device whose loss is not reported yet throws and wgpu panics,
 * which only a broken driver does, so the trap is simulated: the crash path is what is tested).
 * @param {boolean} trap
 */
function loseDeviceForTest(trap) {
  if (viewer === null) return;
  viewer.lose_device_for_test();
  if (!trap) return;
  gpuLost = true;
  drawing = true;
  crashed(new WebAssembly.RuntimeError('unreachable (simulated by the test hook)'), 'drawing %s', 0);
}

self.onmessage = (ev) => {
  /** @type {ToWorker} */
  const msg = ev.data;
  switch (msg.type) {
    case 'init': init(msg); break;
    case 'open': open(msg); break;
    case 'cancel': cancelled.add(msg.id); break;
    case 'call': call(msg); break;
    case 'canvas': takeCanvas(msg); break;
    // Tests: lose the GPU device mid-session, as a driver reset would.
    case 'lose-device': loseDeviceForTest(Boolean(msg.trap)); break;
    case 'stats':
      post({
        type: 'result',
        seq: msg.seq,
        result: {
          wasmMemoryBytes: memory ? memory.buffer.byteLength : 0,
          heapBytes: viewer !== null ? viewer.memory_used() : 0,
        },
      });
      break;
    default: break;
  }
};
