// What-if page benchmark (issue 31): the built viewer (dist/, or MEMVIZ_DIST) in headless Debian
// Chromium opens FILE, then the "What if" tab runs, as recorded and without a capacity:
//   - Run: `whatif_run`, then `whatif_step`s: the first prepares the start state (the backward
//     walk), each other is one replay (the smallest capacity's bisection);
//   - Sweep: the 8 standard settings, each with its smallest capacity.
// Each worker call is timed in the page (`window.memviz.whatIf.stepMs`, performance.now() around
// the awaited call). The baseline of the same run is the page's own parse of FILE
// (`memviz.lastOpen.parseMs`). Prints one JSON line per backend; a benchmark, never a timed test.
//
//   node tests/web/bench_whatif.mjs FILE [--backend webgl2|webgpu]

import path from 'node:path';
import { serveDist } from './serve_dist.mjs';
import { DIST, WEBGPU_ARGS, startChromium, loadViewer, openFile } from './browser.mjs';

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--') && args[args.indexOf(a) - 1] !== '--backend');
const backend = args.includes('--backend') ? args[args.indexOf('--backend') + 1] : 'webgl2';
if (!file) {
  console.error('usage: node tests/web/bench_whatif.mjs FILE [--backend webgl2|webgpu]');
  process.exit(2);
}

const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};

const server = await serveDist(DIST, '/', () => {});
const b = await startChromium(backend === 'webgpu' ? WEBGPU_ARGS : [], 'memviz-bench-whatif-');
try {
  const url = `http://127.0.0.1:${server.address().port}/?backend=${backend}`;
  await loadViewer(b.page, url, 1280, 800);
  await openFile(b.page, path.resolve(file));
  const parseMs = await b.page.evaluate(() => window.memviz.lastOpen.parseMs);
  const out = await b.page.evaluate(async () => {
    const w = window.memviz.whatIf;
    window.memviz.openTab('whatif');
    await w.load();
    const cap = /** @type {HTMLSelectElement} */ (document.getElementById('whatif-capacity'));
    cap.value = '';
    cap.dispatchEvent(new Event('change'));
    let t = performance.now();
    const run = await w.start(false);
    const runMs = performance.now() - t;
    const runSteps = w.stepMs.slice();
    t = performance.now();
    const sweep = await w.start(true);
    const sweepMs = performance.now() - t;
    return { runMs, runSteps, runText: run.text, sweepMs, sweepText: sweep.text, sweepRows: sweep.result ? sweep.result.rows.length : 0 };
  });
  const replays = out.runSteps.slice(2);
  console.log(JSON.stringify({
    bench: 'whatif-page',
    backend,
    file: path.basename(file),
    parseMs: Math.round(parseMs),
    prepareMs: Math.round(out.runSteps[1] ?? NaN),
    replayMedianMs: Math.round(median(replays)),
    replayMaxMs: Math.round(Math.max(...replays)),
    replays: replays.length,
    replayOverParse: +(median(replays) / parseMs).toFixed(2),
    runMs: Math.round(out.runMs),
    runText: out.runText,
    sweepMs: Math.round(out.sweepMs),
    sweepRows: out.sweepRows,
    sweepText: out.sweepText,
  }));
} finally {
  await b.close();
  server.close();
}
