// bootstrap.js: the one inline script of a single-file report (`memviz html`, docs/report.md).
// A classic script, not a module: crates/memviz-cli/src/cmd/html inlines these exact bytes and
// the report's Content-Security-Policy allows them by their SHA-256, so any edit here changes
// the hash (computed when the report is written). Inlined in a script element, it must never
// hold a closing script tag nor an HTML comment opener (a unit test of memviz-cli checks).
//
// It reads the data blocks, turns the assets into blob: and data: URLs, sets
// `globalThis.MEMVIZ_ASSETS` (read by www/js/bridge.js), imports the entry module and opens the
// snapshot with `window.memviz.open(File)`.

/**
 * The manifest (`#memviz-report`), written by memviz html.
 * @typedef {[number, number]} AssetRange  offset and length in the (gunzipped) assets block
 * @typedef {object} ReportModule
 * @property {string} name  its path in dist/
 * @property {(AssetRange | number)[]} parts  its source in pieces; a number between two pieces
 *   is another module, whose URL fills the import specifier there
 * @typedef {object} ReportManifest
 * @property {{name: string, bytes: number}} file  the snapshot's file name and size
 * @property {AssetRange} wasm
 * @property {number} glue  the wasm-bindgen glue (a module number)
 * @property {number} worker
 * @property {number} entry
 * @property {ReportModule[]} modules  imports before the modules that import them
 */

(() => {
  'use strict';
  /** @param {string} id */
  const byId = (id) => document.getElementById(id);
  /** @param {string} message */
  function fail(message) {
    const el = byId('error');
    if (el) {
      el.textContent = `This memviz report could not start: ${message}`;
      el.hidden = false;
    }
    document.body.dataset.memvizState = 'error';
  }
  /** `Uint8Array` with the base64 helpers of newer browsers, where present. */
  const U8 = /** @type {typeof Uint8Array & {fromBase64?: (text: string) => Uint8Array<ArrayBuffer>}} */ (
    Uint8Array
  );
  /**
   * The bytes of a base64 data block (emptied afterwards: a big snapshot is not kept twice).
   * @param {string} id
   */
  function block(id) {
    const el = byId(id);
    if (!el) throw new Error(`the data block #${id} is missing`);
    const text = el.textContent ?? '';
    el.textContent = '';
    if (typeof U8.fromBase64 === 'function') return U8.fromBase64(text);
    const out = new Uint8Array(Math.floor((text.length * 3) / 4) + 3);
    let n = 0;
    const STEP = 1 << 22;
    for (let i = 0; i < text.length; i += STEP) {
      const bin = atob(text.slice(i, i + STEP));
      for (let j = 0; j < bin.length; j++) out[n++] = bin.charCodeAt(j);
    }
    return out.subarray(0, n);
  }
  /** @param {Uint8Array<ArrayBuffer>} bytes */
  async function gunzip(bytes) {
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  /** @param {Uint8Array} bytes */
  function toBase64(bytes) {
    const b = /** @type {Uint8Array & {toBase64?: () => string}} */ (bytes);
    if (typeof b.toBase64 === 'function') return b.toBase64();
    let bin = '';
    for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(bin);
  }
  // A file:// page has an opaque origin: Chromium runs its modules from blob: URLs but refuses a
  // module worker from one, and a worker from a data: URL (an origin of its own) cannot read
  // the page's blob: URLs. So the page's modules are blob: URLs and the worker, the glue it
  // imports and the wasm it fetches are data: URLs.
  /** @typedef {'blob' | 'data'} UrlKind */
  /** @param {BlobPart[]} parts @param {string} type @param {UrlKind} kind */
  async function makeUrl(parts, type, kind) {
    if (kind === 'blob') return URL.createObjectURL(new Blob(parts, { type }));
    const bytes = new Uint8Array(await new Blob(parts).arrayBuffer());
    return `data:${type};base64,${toBase64(bytes)}`;
  }
  async function start() {
    /** @type {ReportManifest} */
    const report = JSON.parse(byId('memviz-report')?.textContent ?? '');
    const assets = await gunzip(block('memviz-assets'));
    /** @param {AssetRange} p */
    const part = (p) => assets.subarray(p[0], p[0] + p[1]);
    /** @type {Record<UrlKind, Map<number, string>>} */
    const made = { blob: new Map(), data: new Map() };
    /**
     * A module's URL (made once per kind); a number in `parts` is another module, whose URL
     * fills the specifier.
     * @param {number} i @param {UrlKind} kind @returns {Promise<string>}
     */
    async function moduleUrl(i, kind) {
      let url = made[kind].get(i);
      if (url === undefined) {
        /** @type {BlobPart[]} */
        const parts = [];
        for (const p of report.modules[i].parts) parts.push(typeof p === 'number' ? await moduleUrl(p, kind) : part(p));
        url = await makeUrl(parts, 'text/javascript', kind);
        made[kind].set(i, url);
      }
      return url;
    }
    globalThis.MEMVIZ_ASSETS = {
      glue: await moduleUrl(report.glue, 'data'),
      wasm: await makeUrl([part(report.wasm)], 'application/wasm', 'data'),
      worker: await moduleUrl(report.worker, 'data'),
    };
    await import(await moduleUrl(report.entry, 'blob'));
    if (!window.memviz || typeof window.memviz.open !== 'function') throw new Error('the viewer did not start');
    const snapshot = block('memviz-snapshot');
    await window.memviz.open(new File([snapshot], report.file.name, { type: 'application/gzip' }));
  }
  start().catch((err) => fail(err instanceof Error ? err.message : String(err)));
})();
