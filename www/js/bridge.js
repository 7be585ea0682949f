// bridge.js: the page's side of the worker protocol (www/js/worker.js, which owns the wasm
// `WebViewer`). It starts the worker with the canvas, forwards files and input, and hands
// back Rust's answers (typed by www/js/generated/, from the Rust structs): no snapshot data is
// interpreted here. See www/README.md.

import { showGpuNotice, noticeFor, showBackend } from './gpu_notice.js';

/**
 * Set once a worker died while WebGPU drew: the workers started after it use WebGL2 (`auto`
 * only; a forced `?backend=` stays as asked).
 */
let webgpuBroken = '';

/**
 * What a call asks for besides the method: `waitFrame` answers after the next animation frame
 * (the frame the call caused is drawn), `panel` also sends a new panel, `tooltip` (fire-and-forget
 * calls) a tooltip answer.
 * @typedef {{waitFrame?: boolean, panel?: boolean, tooltip?: boolean}} CallOptions
 */
/** A request of the shell (`memviz_viewer::Request`). @typedef {import('./generated/Request').Request} Request */
/** The answer type of each request's method. @typedef {import('./generated/Answers').Answers} Answers */
/**
 * A request's answer (`result`, typed by the request's method) and the frame's CPU ms.
 * @template T
 * @typedef {{result: T, frameMs?: number}} CallResult
 */
/**
 * Sends a request to the viewer in the worker; resolves with its answer.
 * @typedef {<R extends Request>(request: R, opts?: CallOptions) => Promise<CallResult<Answers[R['method']]>>} Call
 */
/** @typedef {import('./protocol.js').FromWorker} FromWorker */
/** @typedef {import('./protocol.js').ToWorker} ToWorker */
/** @typedef {import('./protocol.js').ProgressMsg} ProgressMsg */
/** @typedef {import('./protocol.js').FrameMsg} FrameMsg */
/** @typedef {import('./protocol.js').CrashedMsg} CrashedMsg */
/** @typedef {import('./protocol.js').Stats} Stats */
/** An open's end: the worker's `opened` / `failed` / `cancelled` message, passed through. @typedef {import('./protocol.js').OpenDone} OpenDone */
/**
 * What the page hears from the worker besides answers (the messages of protocol.js, passed
 * through untouched).
 * @typedef {object} Handlers
 * @property {(msg: ProgressMsg) => void} [progress]
 * @property {(msg: FrameMsg) => void} [frame]
 * @property {(json: string | null) => void} [tooltip]
 * @property {(panel: string, table: string, summary: string) => void} [panel]
 * @property {(msg: {message: string, panicked?: boolean}) => void} [fatal]
 * @property {(msg: CrashedMsg) => void} [crashed]
 * @property {(canvas: HTMLCanvasElement) => void} [canvas]  the GPU failed and the worker draws on
 *   this fresh canvas now (it took the old one's place in the page): wire its input again
 */

/**
 * A message to the worker (protocol.js).
 * @param {Worker} worker
 * @param {ToWorker} msg
 * @param {Transferable[]} [transfer]
 */
function toWorker(worker, msg, transfer = []) {
  worker.postMessage(msg, transfer);
}

/**
 * URLs of trunk's wasm-bindgen glue and module (hashed names; found from its preload links), or
 * `globalThis.MEMVIZ_ASSETS` = `{glue, wasm, worker}` when a page sets it first (the single-file
 * report of `memviz html`, which has no files beside it).
 * @returns {{glue: string, wasm: string, worker?: string}}
 */
function wasmUrls() {
  const given = globalThis.MEMVIZ_ASSETS;
  if (given && typeof given.glue === 'string' && typeof given.wasm === 'string') {
    return { glue: given.glue, wasm: given.wasm, worker: given.worker };
  }
  const glue = document.querySelector('link[rel="modulepreload"][href*="memviz-web"]');
  const wasm = document.querySelector('link[rel="preload"][href$=".wasm"]');
  if (glue === null || wasm === null) {
    throw new Error('the page was not built by trunk (its wasm preload links are missing)');
  }
  // (Both selectors require an href, so getAttribute is never null here.)
  return {
    glue: new URL(glue.getAttribute('href') || '', document.baseURI).href,
    wasm: new URL(wasm.getAttribute('href') || '', document.baseURI).href,
  };
}

/**
 * The viewer running in a worker. Create with `ViewerClient.start(canvas, backend, handlers)`.
 * handlers: `{progress(msg), frame(msg), tooltip(json|null), panel(panel, table, summary), fatal(msg),
 * crashed(msg)}`; `crashed` means the worker is lost (a trap such as running out of memory, or a
 * panic) and must be replaced: its message names the file and what the worker was doing.
 */
export class ViewerClient {
  /**
   * @param {Worker} worker
   * @param {Handlers} handlers
   */
  constructor(worker, handlers) {
    this.worker = worker;
    this.handlers = handlers;
    this.seq = 0;
    /** seq → {resolve, reject} @type {Map<number, {resolve: (r: CallResult<any>) => void, reject: (e: Error) => void}>} */
    this.pending = new Map();
    /** open id → {resolve} @type {Map<number, {resolve: (msg: OpenDone) => void, drawnAt?: number}>} */
    this.opens = new Map();
    this.nextOpen = 1;
    /** @type {{backend: string, adapter: string, gpuError: string} | null} */
    this.info = null;
    /** The canvas the worker draws on (replaced by a fresh one when the GPU fails). @type {HTMLCanvasElement | null} */
    this.canvas = null;
    /** While starting: the promise of `start`. @type {{resolve: (c: ViewerClient) => void, reject: (e: Error) => void} | null} */
    this.starting = null;
    this.worker.onmessage = (ev) => this.onMessage(/** @type {FromWorker} */ (ev.data));
    this.worker.onerror = (ev) => {
      ev.preventDefault();
      this.fail(`the viewer's worker failed (${ev.message || 'it could not load'})`);
    };
  }

  /**
   * Starts the worker and hands it the canvas (which it owns from then on).
   * Resolves with the client once the worker's viewer exists; `client.info` is
   * `{backend, adapter, gpuError}` (`gpuError` non-empty when nothing can be drawn).
   * @param {HTMLCanvasElement} canvas
   * @param {string} backend  `auto`, `webgpu` or `webgl2`
   * @param {Handlers} handlers
   * @param {{memLimitMb?: number, memBudgetMb?: number}} [options]
   * @returns {Promise<ViewerClient>}
   */
  static start(canvas, backend, handlers, options = {}) {
    return new Promise((resolve, reject) => {
      let urls;
      try {
        urls = wasmUrls();
      } catch (err) {
        reject(err);
        return;
      }
      if (typeof canvas.transferControlToOffscreen !== 'function' || typeof Worker !== 'function') {
        reject(new Error('this browser cannot draw from a worker (no OffscreenCanvas); use a current Chrome, Edge, Firefox or Safari'));
        return;
      }
      const worker = new Worker(urls.worker || new URL('./worker.js', import.meta.url), { type: 'module', name: 'memviz' });
      const client = new ViewerClient(worker, handlers);
      client.starting = { resolve, reject };
      client.canvas = canvas;
      // A previous worker died while WebGPU drew: this one draws with WebGL2.
      if (webgpuBroken !== '' && backend === 'auto') backend = 'webgl2';
      // Tests: lose the GPU device mid-session (as a driver reset would); `trap`: and crash as a
      // panic inside a WebGPU draw would (the worker is replaced by one on WebGL2).
      Reflect.set(globalThis, 'memvizTestHooks', {
        /** @param {boolean} [trap] */
        loseDevice: (trap = false) => toWorker(worker, { type: 'lose-device', trap }),
      });
      const offscreen = canvas.transferControlToOffscreen();
      const rect = { width: canvas.clientWidth, height: canvas.clientHeight };
      toWorker(worker, {
        type: 'init',
        glue: urls.glue,
        wasm: urls.wasm,
        canvas: offscreen,
        backend,
        cssW: rect.width,
        cssH: rect.height,
        dpr: window.devicePixelRatio || 1,
        memLimitMb: options.memLimitMb || 0,
        memBudgetMb: options.memBudgetMb || 0,
      }, [offscreen]);
    });
  }

  /** @param {string} message */
  fail(message) {
    if (this.starting) {
      this.starting.reject(new Error(message));
      this.starting = null;
    }
    for (const [, p] of this.pending) p.reject(new Error(message));
    this.pending.clear();
    for (const [id, o] of this.opens) o.resolve({ type: 'failed', id, message, panicked: true, kind: 'other' });
    this.opens.clear();
    if (this.handlers.fatal) this.handlers.fatal({ message, panicked: true });
  }

  /** @param {FromWorker} msg  a message of the worker protocol (protocol.js) */
  onMessage(msg) {
    const h = this.handlers;
    switch (msg.type) {
      case 'ready':
        this.info = { backend: msg.backend, adapter: msg.adapter, gpuError: msg.gpuError };
        showBackend(this.info);
        if (msg.webgpuFailed || webgpuBroken) {
          showGpuNotice(noticeFor(msg.backend, msg.webgpuFailed || webgpuBroken, Boolean(webgpuBroken && !msg.webgpuFailed)));
        }
        if (this.starting) {
          this.starting.resolve(this);
          this.starting = null;
        }
        break;
      case 'fatal':
        if (this.starting) {
          this.starting.reject(new Error(msg.message));
          this.starting = null;
        } else if (h.fatal) {
          h.fatal(msg);
        }
        break;
      case 'progress':
        if (h.progress) h.progress(msg);
        break;
      case 'gpu-lost':
        this.freshCanvas(msg.message);
        break;
      case 'backend':
        // The worker draws on the fresh canvas (or cannot draw at all any more).
        this.info = { backend: msg.backend, adapter: msg.adapter, gpuError: msg.gpuError };
        showBackend(this.info);
        showGpuNotice(noticeFor(msg.backend, msg.failed || msg.gpuError, true));
        break;
      case 'crashed': {
        if (msg.gpu) webgpuBroken = String(msg.gpuReason || msg.message);
        // The open in progress (if any) failed with it; every pending call is answered.
        for (const [, p] of this.pending) p.reject(new Error('the viewer stopped'));
        this.pending.clear();
        for (const [id, o] of this.opens) o.resolve({ type: 'failed', id, crashed: true, message: msg.message, panicked: msg.panicked, kind: 'other' });
        this.opens.clear();
        if (h.crashed) h.crashed(msg);
        break;
      }
      case 'drawn': {
        const o = this.opens.get(msg.id);
        if (o) o.drawnAt = performance.now();
        break;
      }
      case 'opened':
      case 'failed':
      case 'cancelled': {
        const o = this.opens.get(msg.id);
        this.opens.delete(msg.id);
        if (o) o.resolve({ ...msg, drawnAt: o.drawnAt });
        break;
      }
      case 'frame':
        if (h.frame) h.frame(msg);
        break;
      case 'tooltip':
        if (h.tooltip) h.tooltip(msg.json);
        break;
      case 'panel':
        if (h.panel) h.panel(msg.panel, msg.table, msg.summary);
        break;
      case 'result': {
        const p = this.pending.get(msg.seq);
        this.pending.delete(msg.seq);
        if (!p) break;
        if (msg.error !== undefined) p.reject(new Error(msg.error));
        else p.resolve({ result: typeof msg.result === 'string' ? JSON.parse(msg.result) : msg.result, frameMs: msg.frameMs });
        break;
      }
      default:
        break;
    }
  }

  /**
   * The GPU failed (`gpu-lost`): a canvas hands its drawing to a worker only once, so a fresh
   * one takes the old one's place and goes to the worker, which draws on it with WebGL2.
   * @param {string} failed  why the GPU failed
   */
  freshCanvas(failed) {
    const old = this.canvas;
    if (old === null) return;
    const fresh = /** @type {HTMLCanvasElement} */ (old.cloneNode(false));
    old.replaceWith(fresh);
    this.canvas = fresh;
    const offscreen = fresh.transferControlToOffscreen();
    toWorker(this.worker, { type: 'canvas', canvas: offscreen, failed }, [offscreen]);
    if (this.handlers.canvas) this.handlers.canvas(fresh);
  }

  /**
   * Opens a source in the worker. Returns `{id, done}`; `done` resolves with the worker's
   * `opened` / `failed` / `cancelled` message (plus `drawnAt`, the `performance.now()` when the
   * worker said the first frame was drawn).
   * @param {File | Blob | ArrayBuffer | ArrayBufferView | string | URL} src
   */
  open(src) {
    const id = this.nextOpen++;
    let payload;
    let name = null;
    if (typeof src === 'string' || src instanceof URL) {
      payload = { url: new URL(String(src), document.baseURI).href };
    } else if (src instanceof Blob) {
      payload = src;
    } else if (src instanceof ArrayBuffer) {
      payload = src.slice(0);
    } else if (ArrayBuffer.isView(src)) {
      // (A copy in an ArrayBuffer of its own, also from a view of a SharedArrayBuffer.)
      payload = new Uint8Array(src.buffer, src.byteOffset, src.byteLength).slice().buffer;
    } else {
      return { id, done: Promise.resolve({ type: 'failed', id, message: 'expected a File, Blob, ArrayBuffer or URL' }) };
    }
    if (src instanceof File) name = src.name;
    const done = new Promise((resolve) => this.opens.set(id, { resolve }));
    toWorker(this.worker, { type: 'open', id, src: payload, name }, payload instanceof ArrayBuffer ? [payload] : []);
    return { id, done };
  }

  /**
   * Ends the worker for good (it died, or stopped answering): pending opens resolve as
   * cancelled, pending calls reject.
   */
  terminate() {
    this.worker.terminate();
    for (const [, p] of this.pending) p.reject(new Error('the viewer was restarted'));
    this.pending.clear();
    for (const [id, o] of this.opens) o.resolve({ type: 'cancelled', id });
    this.opens.clear();
  }

  /** Stops loading open() `id` (the files already open stay). @param {number} id */
  cancel(id) {
    toWorker(this.worker, { type: 'cancel', id });
  }

  /**
   * Fire-and-forget request; `opts.tooltip` asks for a tooltip answer, `opts.panel` for a new panel.
   * @param {Request} request
   * @param {CallOptions} [opts]
   */
  send(request, opts = {}) {
    toWorker(this.worker, { type: 'call', request: JSON.stringify(request), method: request.method, tooltip: Boolean(opts.tooltip), panel: Boolean(opts.panel) });
  }

  /**
   * Sends a request; resolves with `{result, frameMs}` (`result` is the answer its method
   * gets, see www/js/generated/Answers.ts), after the next animation frame when
   * `opts.waitFrame`.
   * @template {Request} R
   * @param {R} request
   * @param {CallOptions} [opts]
   * @returns {Promise<CallResult<Answers[R['method']]>>}
   */
  call(request, opts = {}) {
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { resolve, reject });
      toWorker(this.worker, { type: 'call', seq, request: JSON.stringify(request), method: request.method, waitFrame: Boolean(opts.waitFrame), panel: Boolean(opts.panel) });
    });
  }

  /**
   * Resolves with `{wasmMemoryBytes, heapBytes}` of the worker.
   * @returns {Promise<{wasmMemoryBytes: number, heapBytes: number}>}
   */
  stats() {
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { resolve: (r) => resolve(r.result), reject });
      toWorker(this.worker, { type: 'stats', seq });
    });
  }
}
