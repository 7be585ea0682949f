// bench_hover.mjs: main-thread work per pointer move over the plot (the details pane and the
// hover hint follow the pointer), on a generated file of about 150 MB, in headless Chromium.
//
//   node tests/web/bench_hover.mjs [--mb 150] [--moves 300] [--backend webgl2|webgpu]
//
// Main-thread work is Chrome's TaskDuration (Performance.getMetrics over the DevTools
// protocol: every task the renderer's main thread ran) between the first and the last move,
// divided by the moves. The baseline, measured in the same run, is the same number of moves
// over the page's header (the browser's own work for a move, with no viewer work); the
// ratio is plot / header. Target (issue 16): under 16 ms per move over the plot.

import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { serveDist } from './serve_dist.mjs';
import { ROOT, DIST, generate, poll, startChromium, WEBGPU_ARGS } from './browser.mjs';

const { values } = parseArgs({
  options: {
    mb: { type: 'string', default: '150' },
    moves: { type: 'string', default: '300' },
    backend: { type: 'string', default: 'webgl2' },
  },
});
const mb = Number(values.mb);
const moves = Number(values.moves);
const file = path.join(ROOT, `target/page-fixtures/large${mb}.pickle`);
fs.mkdirSync(path.dirname(file), { recursive: true });
generate(file, 'large', '--mb', String(mb), file);

const server = await serveDist(DIST, '/', () => {});
const b = await startChromium(values.backend === 'webgpu' ? WEBGPU_ARGS : [], 'memviz-bench-hover-');
try {
  const page = b.page;
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`http://127.0.0.1:${server.address().port}/?backend=${values.backend}`);
  await poll(() => page.evaluate(() => Boolean(window.memviz)), 'the page API');
  await page.setInputFiles('#file-input', file);
  await poll(() => page.evaluate(() => document.body.dataset.memvizState === 'ready'), 'ready', 600_000);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const taskSeconds = async () => {
    const { metrics } = await cdp.send('Performance.getMetrics');
    return metrics.find((m) => m.name === 'TaskDuration').value;
  };
  const plot = await page.locator('#plot').boundingBox();
  const header = await page.locator('header').boundingBox();
  // A first pass builds the hit index (once per file): not part of the per-move cost.
  await page.mouse.move(plot.x + plot.width / 2, plot.y + plot.height / 2);
  await page.waitForTimeout(2000);

  /** Moves the mouse `moves` times along a line in `box`; returns ms of main-thread work per move. */
  const run = async (box, settleMs) => {
    const t0 = await taskSeconds();
    const w0 = Date.now();
    for (let i = 0; i < moves; i += 1) {
      const f = (i + 0.5) / moves;
      await page.mouse.move(box.x + box.width * (0.08 + 0.84 * f), box.y + box.height * (0.3 + 0.4 * ((i * 7) % 11) / 11));
      await page.waitForTimeout(settleMs);
    }
    await page.waitForTimeout(200);
    const t1 = await taskSeconds();
    return { perMoveMs: ((t1 - t0) * 1000) / moves, wallMs: Date.now() - w0 };
  };
  const headerRun = await run({ x: header.x, y: header.y, width: header.width, height: header.height }, 16);
  // Counts the hover hint's changes (a new item under the pointer) and the canvas's resizes
  // (there must be none: a hover that changes the layout makes every move a relayout).
  await page.evaluate(() => {
    const w = /** @type {any} */ (window);
    w.benchCounts = { hints: 0, resizes: -1 };
    new MutationObserver(() => { w.benchCounts.hints += 1; }).observe(document.getElementById('hover-hint'), { childList: true, characterData: true, subtree: true });
    new ResizeObserver(() => { w.benchCounts.resizes += 1; }).observe(document.getElementById('plot'));
  });
  const plotRun = await run({ x: plot.x, y: plot.y, width: plot.width * 0.9, height: plot.height * 0.8 }, 16);
  const counts = await page.evaluate(() => /** @type {any} */ (window).benchCounts);
  const bytes = fs.statSync(file).size;
  process.stdout.write(`bench_hover (${values.backend}, ${(bytes / 1e6).toFixed(0)} MB file, ${moves} moves each)\n`);
  process.stdout.write(`  header (baseline): ${headerRun.perMoveMs.toFixed(2)} ms main-thread work per move\n`);
  process.stdout.write(`  plot:              ${plotRun.perMoveMs.toFixed(2)} ms main-thread work per move (target < 16 ms)\n`);
  process.stdout.write(`  over the plot: the hover hint changed ${counts.hints} times, the plot resized ${Math.max(0, counts.resizes)} times, ${(plotRun.wallMs / moves).toFixed(0)} ms wall per move\n`);
  process.stdout.write(`  ratio plot / header: ${(plotRun.perMoveMs / Math.max(1e-6, headerRun.perMoveMs)).toFixed(2)}\n`);
} finally {
  await b.close();
  server.close();
}
