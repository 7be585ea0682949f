// globals.d.ts: what the shell adds to the browser's globals, for `tsc --checkJs` (`cargo xtask
// lint-js`). Type declarations only, beside js/ so that trunk does not copy it into dist/.

export {};

declare global {
  interface Window {
    /** The page's JS API (main.js; the tests and benchmarks drive the page through it). */
    memviz: any;
  }

  interface Performance {
    /** Chrome only (non-standard): the page's JS heap. */
    readonly memory?: { usedJSHeapSize: number };
  }

  /** Set by a page before main.js runs (the single-file report of `memviz html`). */
  var MEMVIZ_ASSETS: { glue?: unknown; wasm?: unknown; worker?: string } | undefined;
}
