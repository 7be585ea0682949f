// protocol.js: the messages between the page (bridge.js) and the worker (worker.js), as JSDoc
// types both sides import (`@typedef {import('./protocol.js').ToWorker}`): `tsc --checkJs`
// (`cargo xtask lint-js`) checks every message either side writes or reads against them. Types
// only: nothing here runs, and the bundles hold none of it. Rust's answers cross as JSON text
// (`string`), typed where the page parses them (www/js/generated/, from the Rust structs).
// Valid under both the DOM and the WebWorker libs (jsconfig.json, jsconfig.worker.json).

export {};

// ----- page → worker

/**
 * Starts the viewer: the wasm-bindgen glue and module to load, the canvas to draw on.
 * @typedef {object} InitMsg
 * @property {'init'} type
 * @property {string} glue  the glue's URL (trunk's hashed file, or a report's data: URL)
 * @property {string} wasm  the module's URL
 * @property {OffscreenCanvas} canvas
 * @property {string} backend  `auto`, `webgpu` or `webgl2`
 * @property {number} cssW
 * @property {number} cssH
 * @property {number} dpr
 * @property {number} memLimitMb  0: none (`?mem_limit_mb=`)
 * @property {number} memBudgetMb  0: the default (`?mem_budget_mb=`)
 */
/**
 * What `open` reads: a File or Blob, the bytes, or a URL to fetch.
 * @typedef {Blob | ArrayBuffer | {url: string}} OpenPayload
 */
/**
 * Opens a file (answered by `progress`…, `drawn`, then `opened`, `failed` or `cancelled`).
 * @typedef {{type: 'open', id: number, src: OpenPayload, name: string | null}} OpenMsg
 */
/** Stops open `id`. @typedef {{type: 'cancel', id: number}} CancelMsg */
/**
 * A request of the shell (a `Request` as JSON text). With `seq` it is answered by a `result`
 * (after the next animation frame when `waitFrame`); without, fire-and-forget (`tooltip`: answer
 * with a `tooltip`). `panel`: also send a new `panel`.
 * @typedef {object} CallMsg
 * @property {'call'} type
 * @property {number} [seq]
 * @property {string} request
 * @property {string} method  the request's method (named in a crash's message)
 * @property {boolean} [waitFrame]
 * @property {boolean} [panel]
 * @property {boolean} [tooltip]
 */
/**
 * A fresh canvas after `gpu-lost` (draw on it with WebGL2); `failed`: why the GPU failed.
 * @typedef {{type: 'canvas', canvas: OffscreenCanvas, failed: string}} CanvasMsg
 */
/** Tests: lose the GPU device (`trap`: then crash as a panic in a draw would). @typedef {{type: 'lose-device', trap: boolean}} LoseDeviceMsg */
/** The worker's memory, answered by a `result` whose `result` is a `Stats`. @typedef {{type: 'stats', seq: number}} StatsMsg */
/** @typedef {InitMsg | OpenMsg | CancelMsg | CallMsg | CanvasMsg | LoseDeviceMsg | StatsMsg} ToWorker */

// ----- worker → page

/**
 * What the page shows about drawing (`ready` and `backend` carry it).
 * @typedef {object} BackendInfo
 * @property {string} backend  `WebGPU`, `WebGL2` or '' (nothing draws)
 * @property {string} adapter
 * @property {string} gpuError  non-empty when nothing can be drawn
 * @property {string} webgpuFailed  why WebGPU was passed over, or ''
 */
/** The viewer started. @typedef {{type: 'ready'} & BackendInfo} ReadyMsg */
/** The worker draws on the fresh canvas (or cannot draw any more: `failed`). @typedef {{type: 'backend', failed: string} & BackendInfo} BackendMsg */
/** The GPU failed: send a fresh canvas. @typedef {{type: 'gpu-lost', backend: string, message: string}} GpuLostMsg */
/** An internal error outside an open (the worker goes on). @typedef {{type: 'fatal', message: string, panicked: boolean}} FatalMsg */
/**
 * The wasm trapped or panicked: the worker is lost and must be replaced. `doing` has a `%s`
 * where the file's name goes; `id`: the open that was running (0: none).
 * @typedef {object} CrashedMsg
 * @property {'crashed'} type
 * @property {number} id
 * @property {string} file
 * @property {string} doing
 * @property {string} message
 * @property {boolean} panicked
 * @property {boolean} gpu  it happened while WebGPU drew
 * @property {string} gpuReason
 * @property {number} memoryBytes
 */
/**
 * An open's progress: bytes read of `total` (0: unknown), then the phases after reading.
 * @typedef {object} ProgressMsg
 * @property {'progress'} type
 * @property {number} id
 * @property {string} name
 * @property {number} bytes
 * @property {number} total
 * @property {'model' | 'layout' | 'draw'} [phase]
 */
/** An open's first frame is drawn. @typedef {{type: 'drawn', id: number}} DrawnMsg */
/**
 * ms since the worker got the file, and the memory probes after each phase (benchmarks).
 * @typedef {object} OpenTimings
 * @property {number} parseMs
 * @property {number} pushMs
 * @property {number} modelMs
 * @property {number} finishMs
 * @property {number} firstDrawMs
 * @property {number} totalMs
 * @property {number} drawMs
 * @property {Record<string, unknown>} memory
 */
/**
 * A file opened: Rust's summary (JSON text), summary table (text) and panel (JSON text).
 * @typedef {object} OpenedMsg
 * @property {'opened'} type
 * @property {number} id
 * @property {string} name
 * @property {number} bytes
 * @property {string} summary
 * @property {string} table
 * @property {string} panel
 * @property {string} notice  why the file is incomplete, or ''
 * @property {OpenTimings} timings
 */
/**
 * A file that could not open: `kind` is Rust's (`empty`, `truncated`, `too_big`, …),
 * `download` or `other`.
 * @typedef {{type: 'failed', id: number, message: string, panicked: boolean, kind: string}} FailedMsg
 */
/** @typedef {{type: 'cancelled', id: number}} CancelledMsg */
/** A frame was drawn: the ticks (Rust's JSON text) and its CPU ms. @typedef {{type: 'frame', ticks: string, frameMs: number}} FrameMsg */
/** The tooltip answer (Rust's JSON text; null: none). @typedef {{type: 'tooltip', json: string | null}} TooltipMsg */
/** A new panel (JSON text), summary table (text) and summary (JSON text). @typedef {{type: 'panel', panel: string, table: string, summary: string}} PanelMsg */
/** @typedef {{wasmMemoryBytes: number, heapBytes: number}} Stats */
/**
 * The answer of a call or `stats` with `seq`: Rust's JSON text (a `Stats` for `stats`), or the
 * error.
 * @typedef {object} ResultMsg
 * @property {'result'} type
 * @property {number} seq
 * @property {string | Stats} [result]
 * @property {number} [frameMs]
 * @property {string} [error]
 * @property {boolean} [panicked]
 */
/**
 * @typedef {ReadyMsg | BackendMsg | GpuLostMsg | FatalMsg | CrashedMsg | ProgressMsg | DrawnMsg
 *   | OpenedMsg | FailedMsg | CancelledMsg | FrameMsg | TooltipMsg | PanelMsg | ResultMsg} FromWorker
 */

/**
 * An open's end as bridge.js hands it to open.js: the worker's message, with `drawnAt` (the
 * `performance.now()` when the first frame was drawn); `crashed`: the worker died meanwhile.
 * @typedef {(OpenedMsg | FailedMsg | CancelledMsg) & {drawnAt?: number, crashed?: boolean}} OpenDone
 */
