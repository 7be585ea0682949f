// test_api.js: `window.memviz`, the page's JS API: the tests, the benchmarks, the embedding
// parent and `memviz html`'s bootstrap drive the page through it (www/README.md's contract).

import { page } from './page_state.js';
import { startViewer, view } from './session.js';
import { drawer, help } from './parts.js';
import { pinElement } from './input.js';
import { searchBox, filterBox, linesTable, liveTable, leaksPanel, filesAndCompare, flameControls, links, stateHistory, whatIf } from './page_panels.js';
import { showOomEvent } from './plot_chrome.js';
import { viewKind } from './controls.js';
import { open, openAll } from './open.js';

/** Sets `window.memviz` (main.js, once, before the worker starts). */
export function installApi() {
  window.memviz = {
    open,
    openAll,
    /** Opens the drawer's panel `name` (`lines`, `live`, `leaks`, `oom`, `files`, `compare`, `settings`, `summary`), or closes it (null). */
    /** @param {string | null} name */
    openTab(name) {
      /** @type {Record<string, string>} */
      const ids = { settings: 'settings', summary: 'summary', whatif: 'whatif-panel' };
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
    /**
     * One worker call (benchmarks: a request timed alone, then the frame after it).
     * @param {import('./bridge.js').Request} request @param {import('./bridge.js').CallOptions} [opts]
     */
    async call(request, opts) {
      const c = await startViewer();
      return c.call(request, opts);
    },
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
    tooltip: () => page.tip,
    lastCopied: null,
    /** Timings of the last successful open: `{name, bytes, parseMs, finishMs, firstDrawMs, totalMs, drawMs, firstFrameMs, readyMs}` (ms; firstFrameMs from the open() call to the first frame drawn, readyMs to the summary and legend shown too). */
    lastOpen: null,
    /** The Allocator State History panel: `select(k)`, `search(forward)`, `focus(addr)`, `selection`, `selected`, `count`. */
    stateHistory,
    /** The search box: `run()` resolves with `{query, count, bytes, size, error}`; `result`. */
    searchBox,
    /** The structured filter: `run()` resolves with Rust's answer (`{query, count, bytes, size, error, …}`), `set(text)`, `downloadCsv()` resolves with the CSV text; `result`, `applied`. */
    filterBox,
    /** The source-lines table: `load()` resolves with its rows; `highlight(i)`; `rows`. */
    linesTable,
    /** "Alive at a moment": `show(step)` (-1: last click, -2: peak) resolves with `{step, count, total, rows}`. */
    liveTable,
    /** Leak suspects: `load()` resolves with the report. */
    leaksPanel,
    /** The "What if" tab: `load()`, `start(sweep)` (resolves with the last progress), `cancel()`, `clear()`, `show(row)`, `result`, `running`, `stepMs` (each worker call of the last run, ms). */
    whatIf,
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
      if (name === 'state') await page.stateReady;
      if (name === 'flame') await page.flameReady;
      return r;
    },
  };
}
