// bridge.js: the ONLY module that calls the wasm `WebHandle` (crates/memviz-web/src/lib.rs).
// Keep in sync with that file. It forwards bytes and returns Rust's strings untouched: no
// snapshot data is interpreted here.

/** @type {Promise<any> | null} */
let bindingsPromise = null;

/** Resolves with trunk's wasm-bindgen exports once the module is instantiated. */
function bindings() {
  if (bindingsPromise === null) {
    bindingsPromise = new Promise((resolve, reject) => {
      if (window.wasmBindings) {
        resolve(window.wasmBindings);
        return;
      }
      addEventListener('TrunkApplicationStarted', () => resolve(window.wasmBindings), { once: true });
      // trunk's loader is a module script: if it throws, the error surfaces here.
      addEventListener('error', (ev) => {
        if (!window.wasmBindings) {
          reject(new Error(`the viewer's WebAssembly module failed to load (${ev.message}); reload the page`));
        }
      });
    });
  }
  return bindingsPromise;
}

/** Starts loading the wasm module early; resolves when it is ready. */
export function wasmReady() {
  return bindings().then(() => undefined);
}

/**
 * One file being loaded: wraps one `WebHandle`.
 * Call `push(chunk)` for each `Uint8Array`, then `finish()`; always `dispose()`.
 */
export class SnapshotLoader {
  /** @param {any} handle */
  constructor(handle) {
    this.handle = handle;
  }

  static async create() {
    const b = await bindings();
    return new SnapshotLoader(new b.WebHandle());
  }

  /** Lets Rust size its heap once for a file of `totalBytes` (when the size is known). */
  reserve(totalBytes) {
    this.handle.reserve(totalBytes);
  }

  /** @param {Uint8Array} chunk  Throws an Error (message from Rust, with the byte offset). */
  push(chunk) {
    this.handle.push(chunk);
  }

  /** @returns {number} bytes accepted so far */
  bytesRead() {
    return this.handle.bytes_read();
  }

  /** @returns {{json: string, table: string}} the summary JSON and the text table */
  finish() {
    const json = this.handle.finish();
    return { json, table: this.handle.summary_table() };
  }

  dispose() {
    if (this.handle !== null) {
      try {
        this.handle.free();
      } catch (_) {
        // After a panic the handle may still be borrowed; nothing more to free.
      }
      this.handle = null;
    }
  }

  /** True once Rust has panicked (a bug): the page must be reloaded. */
  static hasPanicked() {
    const b = window.wasmBindings;
    return Boolean(b && b.WebHandle.has_panicked());
  }
}
