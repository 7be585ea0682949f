// bootstrap.js: the one inline script of a single-file report (`memviz html`, docs/report.md).
// A classic script, not a module: crates/memviz-cli/src/cmd/html inlines these exact bytes and
// the report's Content-Security-Policy allows them by their SHA-256, so any edit here changes
// the hash (computed when the report is written). Inlined in a script element, it must never
// hold a closing script tag nor an HTML comment opener (a unit test of memviz-cli checks).
//
// It reads the data blocks, turns the assets into blob: and data: URLs, sets
// `globalThis.MEMVIZ_ASSETS` (read by www/js/bridge.js), imports the page bundle and opens the
// snapshot with `window.memviz.open(File)`. The page and the worker are esbuild's bundles
// (www/bundle.sh): each one module importing no other, so each is one URL.

/**
 * The manifest (`#memviz-report`), written by memviz html.
 * @typedef {[number, number]} AssetRange  offset and length in the (gunzipped) assets block
 * @typedef {object} ReportManifest
 * @property {{name: string, bytes: number}} file  the snapshot's file name and size
 * @property {number} format  2: one range per module (the bundles)
 * @property {AssetRange} wasm
 * @property {AssetRange} glue  the wasm-bindgen glue (imported by the worker)
 * @property {AssetRange} worker  the worker bundle
 * @property {AssetRange} entry  the page bundle
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
  // the page's blob: URLs. So the page bundle is a blob: URL and the worker bundle, the glue it
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
    if (report.format !== 2) throw new Error(`this report's format (${report.format}) is not one this bootstrap reads`);
    const js = 'text/javascript';
    globalThis.MEMVIZ_ASSETS = {
      glue: await makeUrl([part(report.glue)], js, 'data'),
      wasm: await makeUrl([part(report.wasm)], 'application/wasm', 'data'),
      worker: await makeUrl([part(report.worker)], js, 'data'),
    };
    await import(await makeUrl([part(report.entry)], js, 'blob'));
    if (!window.memviz || typeof window.memviz.open !== 'function') throw new Error('the viewer did not start');
    const snapshot = block('memviz-snapshot');
    await window.memviz.open(new File([snapshot], report.file.name, { type: 'application/gzip' }));
  }
  start().catch((err) => fail(err instanceof Error ? err.message : String(err)));
})();
