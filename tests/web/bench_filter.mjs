// Filter page benchmark (issue 32: "a filter over 2 M allocations redraws in under 100 ms in the
// page"): the built viewer (dist/, or MEMVIZ_DIST) in headless Debian Chromium opens FILE (make
// one with `python3 tests/fixtures/generate.py tile --mb 480 OUT`: 2.07 M allocations), then
// types filters into #filter-input. Each is timed in the page from the Enter (the debounce left
// out) to the frame drawn with its highlight (`filterBox.run()`: the worker's `filter`, then the
// next animation frame). The first filter also builds the allocation rows (reported alone as
// `firstMs`); the others' median is `filterMedianMs`. The baseline of the same run is the search
// box over the same file (`searchBox.run()`, same timing). Prints one JSON line; a benchmark,
// never a timed test.
//
//   node tests/web/bench_filter.mjs FILE [--backend webgl2|webgpu]

import path from 'node:path';
import { serveDist } from './serve_dist.mjs';
import { DIST, WEBGPU_ARGS, startChromium, loadViewer } from './browser.mjs';

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--') && args[args.indexOf(a) - 1] !== '--backend');
const backend = args.includes('--backend') ? args[args.indexOf('--backend') + 1] : 'webgl2';
if (!file) {
  console.error('usage: node tests/web/bench_filter.mjs FILE [--backend webgl2|webgpu]');
  process.exit(2);
}

/** Filters of different selectivity, each run after a different one (a new highlight each time). */
const FILTERS = ['size>=1MiB', 'size<64KiB', 'at:peak', 'size>=1MiB at:peak', '-action:free', 'lifetime>1000', 'stream:0 size>=4MiB', 'site:/forward/'];
/** The search's baseline: substrings of frames the generated files have. */
const SEARCHES = ['forward', 'backward', 'adam', 'linear', 'attn', 'step', 'matmul', 'layer'];

const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};

const server = await serveDist(DIST, '/', () => {});
const b = await startChromium(backend === 'webgpu' ? WEBGPU_ARGS : [], 'memviz-bench-filter-');
try {
  const url = `http://127.0.0.1:${server.address().port}/?backend=${backend}`;
  await loadViewer(b.page, url, 1440, 900);
  await b.page.setInputFiles('#file-input', path.resolve(file));
  await b.page.waitForFunction(() => document.body.dataset.memvizState === 'ready' || document.body.dataset.memvizState === 'error', null, { timeout: 600_000, polling: 250 });
  const state = await b.page.evaluate(() => document.body.dataset.memvizState);
  if (state !== 'ready') throw new Error(`the file did not open: ${await b.page.locator('#error').textContent()}`);
  const out = await b.page.evaluate(async ([filters, searches]) => {
    const m = window.memviz;
    const st = await m.state();
    const input = /** @type {HTMLInputElement} */ (document.getElementById('filter-input'));
    const sinput = /** @type {HTMLInputElement} */ (document.getElementById('search-input'));
    const time = async (f) => { const t = performance.now(); const r = await f(); return [performance.now() - t, r]; };
    const filter = [];
    for (const q of filters) {
      input.value = q;
      const [ms, r] = await time(() => m.filterBox.run());
      filter.push({ q, ms, count: r ? r.count : null, error: r && r.error ? r.error.text : null, unavailable: r ? r.unavailable : null });
    }
    // The breakdown: the worker's filter call alone (evaluation and highlight, answered at
    // once), then the frame drawn after it (a no-op call answered after the next frame).
    const parts = [];
    for (const q of filters.slice(1)) {
      const [callMs] = await time(() => m.call({ method: 'filter', query: q, only: false }));
      const [frameMs] = await time(() => m.call({ method: 'state' }, { waitFrame: true }));
      const [idleMs] = await time(() => m.call({ method: 'state' }, { waitFrame: true }));
      parts.push({ q, callMs, frameMs, idleMs });
    }
    await m.call({ method: 'filter', query: '', only: false }, { waitFrame: true });
    // The baseline of a frame: the same scene redrawn after a 1 px pan (and back), which any
    // redraw on this renderer costs (software GL here: SwiftShader or llvmpipe).
    const redraw = [];
    for (let i = 0; i < 8; i++) {
      const [ms] = await time(() => m.call({ method: 'pan_by', dx: i % 2 ? -1 : 1, dy: 0 }, { waitFrame: true }));
      redraw.push(ms);
    }
    input.value = '';
    await m.filterBox.run();
    const search = [];
    for (const q of searches) {
      sinput.value = q;
      const [ms, r] = await time(() => m.searchBox.run());
      search.push({ q, ms, count: r ? r.count : null });
    }
    sinput.value = '';
    await m.searchBox.run();
    const stats = await m.stats();
    return { elements: st.elements, filter, parts, redraw, search, heapBytes: stats.heapBytes, open: m.lastOpen };
  }, [FILTERS, SEARCHES]);
  const warm = out.filter.slice(1).map((f) => f.ms);
  console.log(JSON.stringify({
    bench: 'filter-page',
    backend,
    file: path.basename(file),
    elements: out.elements,
    openMs: out.open ? Math.round(out.open.totalMs) : null,
    firstMs: Math.round(out.filter[0].ms),
    filterMedianMs: Math.round(median(warm)),
    filterMaxMs: Math.round(Math.max(...warm)),
    callMedianMs: Math.round(median(out.parts.map((p) => p.callMs))),
    frameAfterMedianMs: Math.round(median(out.parts.map((p) => p.frameMs))),
    idleFrameMedianMs: Math.round(median(out.parts.map((p) => p.idleMs))),
    panRedrawMedianMs: Math.round(median(out.redraw)),
    searchMedianMs: Math.round(median(out.search.map((s) => s.ms))),
    searchMaxMs: Math.round(Math.max(...out.search.map((s) => s.ms))),
    heapMB: Math.round(out.heapBytes / 1e6),
    filters: out.filter.map((f) => ({ ...f, ms: Math.round(f.ms) })),
    searches: out.search.map((s) => ({ ...s, ms: Math.round(s.ms) })),
  }));
} finally {
  await b.close();
  server.close();
}
