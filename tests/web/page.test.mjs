// The built page (dist/, from `trunk build --release --offline`) in headless Debian Chromium,
// once per drawing backend (WebGL2, and WebGPU on SwiftShader), served by a tiny static server
// under a sub-path to prove every URL is relative. Relies only on the contract in www/README.md.
// Run by `cargo xtask test`, or: node --test tests/web/page.test.mjs
// Needs dist/ and target/release/memviz (`cargo build --release -p memviz-cli`); writes its
// fixtures to target/page-fixtures/ and screenshots to target/screenshots/<backend>-*.png.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { decodePng, colourStats, differingPixels } from './page_png.mjs';
import { serveDist } from './serve_dist.mjs';
import {
  ROOT, DIST, SCREENSHOTS, TIMEOUT_MS, generate, poll, startChromium,
  requireBuilt, cliText, cliJson, viewerState, pagePoint, mapPoint, search, WEBGPU_ARGS, BACKENDS,
} from './browser.mjs';

const DEMO = path.join(DIST, 'assets/demo.pickle');
const CORPUS = path.resolve(ROOT, '../shared/corpus/real');
const FIXTURES = path.join(ROOT, 'target/page-fixtures');
const SUB_PATH = '/sub/dir/';
const TEST = { timeout: 120_000 };
const MiB = 1024 * 1024;
/** The bigger file for progress + cancel (`generate.py large`); must load slower than a click. */
const LARGE_MB = 200;

// SEMANTICS.md §3.4 by hand for `generate.py landmarks` (one segment at LANDMARKS, events 1 ms
// apart): x in timesteps, y in bytes; every point is strictly inside one element. Elements are
// numbered in alloc order (§3.1) and the tooltip title starts with that number (§7).
const LANDMARKS = 0x7f0000000000;
const MAIN_FRAME = '/src/landmarks/train.py:100:main';
const LANDMARK_POINTS = {
  alpha: { element: 0, x: 1.5, y: 2 * MiB, label: `b${LANDMARKS.toString(16)}_0`, size: '4.0MiB (4194304 bytes)', frame: '/src/landmarks/alpha.py:11:make_alpha' },
  beta: { element: 1, x: 2.5, y: 8 * MiB, label: `b${(LANDMARKS + 4 * MiB).toString(16)}_0`, size: '8.0MiB (8388608 bytes)', frame: '/src/landmarks/beta.py:22:make_beta' },
  // gamma slides from [12, 14) MiB at t 4 to [4, 6) MiB at t 7: at t 5.5 it is at [8, 10) MiB.
  gammaSliding: { element: 2, x: 5.5, y: 9 * MiB, label: `b${(LANDMARKS + 12 * MiB).toString(16)}_0`, size: '2.0MiB (2097152 bytes)', frame: '/src/landmarks/gamma.py:33:make_gamma' },
  // delta reuses beta's address: its second lifetime.
  delta: { element: 3, x: 7.5, y: 9 * MiB, label: `b${(LANDMARKS + 4 * MiB).toString(16)}_1`, size: '6.0MiB (6291456 bytes)', frame: '/src/landmarks/delta.py:44:make_delta' },
};
// SEMANTICS.md §3.6 (vector.pickle, A = 0x10000000): series 2 (y, A+30 = 0x1000001e, 25 B) has
// bottom 30 over t 2..4; the ghost (A, 10 B) sits at the bottom from t 0.
const VECTOR_POINTS = {
  y: { x: 3.5, y: 42, label: 'b1000001e_0', size: '25.0B (25 bytes)' },
  ghost: { x: 0.5, y: 5, label: 'b10000000_0', size: '10.0B (10 bytes)', note: 'Ghost block' },
};
const HOSTILE_IMG = '<img src=x onerror=window.__pwned=1>';
const HOSTILE_B = '<b>bold</b>';

let server;
let baseUrl;
/** Where the static server records requests that missed dist/ or the sub-path (per browser). */
let requestLog = [];

/** A real snapshot with several devices and enough bytes for many chunks, if the corpus is here. */
function corpusCase() {
  const readme = path.join(CORPUS, 'README.md');
  if (!fs.existsSync(readme)) return null;
  // README table row: | `file` | source | date | bytes | devices | trace entries | segments |
  const rows = fs.readFileSync(readme, 'utf8').split('\n')
    .map((line) => line.split('|').map((cell) => cell.trim()))
    .filter((cells) => cells.length >= 8 && cells[1].startsWith('`'))
    .map((cells) => ({ name: cells[1].replaceAll('`', ''), traceEntries: Number(cells[6]), devices: cells[5] }))
    .filter((row) => Number.isFinite(row.traceEntries) && fs.existsSync(path.join(CORPUS, row.name)));
  const preferred = rows.find((row) => row.name.startsWith('Constructor-Sun__'));
  return preferred || rows.find((row) => row.traceEntries > 0) || null;
}

const cliCache = new Map();
/** `memviz summary FILE --json` of the native CLI, parsed. */
function cliSummary(file) {
  if (!cliCache.has(file)) {
    cliCache.set(file, cliJson('summary', file));
  }
  return cliCache.get(file);
}

function fixture(name) {
  return path.join(FIXTURES, name);
}

before(async () => {
  requireBuilt();
  fs.mkdirSync(FIXTURES, { recursive: true });
  generate(fixture('small/multidevice.pickle'), 'small', fixture('small'));
  generate(fixture('landmarks.pickle'), 'landmarks', fixture('landmarks.pickle'));
  generate(fixture('landmarks-uneven.pickle'), 'landmarks-uneven', fixture('landmarks-uneven.pickle'));
  generate(fixture('hostile.pickle'), 'hostile', fixture('hostile.pickle'));
  generate(fixture(`large${LARGE_MB}.pickle`), 'large', '--mb', String(LARGE_MB), fixture(`large${LARGE_MB}.pickle`));
  const demo = fs.readFileSync(DEMO);
  fs.writeFileSync(fixture('demo.pickle.gz'), zlib.gzipSync(demo));
  fs.writeFileSync(fixture('demo-truncated.pickle'), demo.subarray(0, Math.floor(demo.length * 0.6)));
  server = await serveDist(DIST, SUB_PATH, (miss) => requestLog.push(miss));
  baseUrl = `http://127.0.0.1:${server.address().port}${SUB_PATH}`;
});

after(async () => {
  if (server) await new Promise((resolve) => server.close(resolve));
});

// ----- one browser per suite -------------------------------------------------------------

/**
 * Starts Chromium with `args` on a fresh profile and opens the page with `query`. Returns
 * `{page, pageErrors, badRequests, close()}`; `pageErrors` collects uncaught errors and console
 * errors, `badRequests` the requests outside dist/ or the sub-path.
 */
async function launch(args, query, waitViewer = true) {
  const { page, close } = await startChromium(args);
  const pageErrors = [];
  requestLog = [];
  const badRequests = requestLog;
  page.on('pageerror', (err) => pageErrors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => { if (msg.type() === 'error') pageErrors.push(`console: ${msg.text()}`); });
  page.on('worker', (worker) => {
    worker.on('console', (msg) => { if (msg.type() === 'error') pageErrors.push(`worker console: ${msg.text()}`); });
  });
  await page.goto(`${baseUrl}${query}`);
  if (waitViewer) {
    await page.waitForFunction(() => window.memviz !== undefined && document.body.dataset.memvizBackend !== undefined,
      null, { timeout: TIMEOUT_MS });
  }
  return { page, pageErrors, badRequests, close };
}

// ----- page helpers ----------------------------------------------------------------------

const bodyState = (page) => page.evaluate(() => document.body.dataset.memvizState);

/** Records every `data-memviz-state` change from now on (so that a stale `ready` never counts). */
async function watchState(page) {
  await page.evaluate(() => {
    window.__stateLog = [];
    if (!window.__stateObserver) {
      window.__stateObserver = new MutationObserver(() => window.__stateLog.push(document.body.dataset.memvizState));
      window.__stateObserver.observe(document.body, { attributes: true, attributeFilter: ['data-memviz-state'] });
    }
  });
}

/** After watchState: waits for a load to start and end; returns the final state. */
async function settledState(page) {
  await page.waitForFunction(() => {
    const log = window.__stateLog;
    const i = log.indexOf('loading');
    const s = document.body.dataset.memvizState;
    return i >= 0 && log.length > i + 1 && s !== 'loading';
  }, null, { timeout: TIMEOUT_MS });
  return bodyState(page);
}

/** Opens `files` (paths or playwright file payloads) through `#file-input`; returns the final state. */
async function openWithInput(page, files) {
  await watchState(page);
  await page.setInputFiles('#file-input', files);
  return settledState(page);
}

/** Clicks "Open demo"; returns the final state. */
async function openDemo(page) {
  await watchState(page);
  await page.click('#demo-button');
  return settledState(page);
}

/** A File in the page for a local path (through a test-only file input, not the page's). */
async function pageFile(page, file) {
  await page.evaluate(() => {
    if (document.getElementById('test-only-input')) return;
    const input = document.createElement('input');
    input.type = 'file';
    input.id = 'test-only-input';
    input.hidden = true;
    document.body.append(input);
  });
  await page.setInputFiles('#test-only-input', file);
  return page.evaluateHandle(() => document.getElementById('test-only-input').files[0]);
}

/** `window.memviz.open(File)` for a local path or payload; resolves with its result. */
async function openApi(page, file) {
  const handle = await pageFile(page, file);
  return page.evaluate((f) => window.memviz.open(f).then((r) => ({ state: r.state, json: r.json, message: r.message })), handle);
}

async function summaryJson(page) {
  return JSON.parse(await page.locator('#summary-json').textContent());
}

async function fileOptions(page) {
  return page.locator('#file-select option').allTextContents();
}

async function xLabels(page) {
  return page.locator('#x-labels span').allTextContents();
}

/** Moves the real mouse to data point (x, y) and waits for a tooltip containing `label`. */
async function hover(page, x, y, label) {
  const at = await pagePoint(page, x, y);
  await page.mouse.move(at.x, at.y);
  try {
    await page.waitForFunction((l) => {
      const t = document.getElementById('tooltip');
      return !t.hidden && t.textContent.includes(l);
    }, label, { timeout: 20_000 });
  } catch (err) {
    const shown = await page.evaluate(() => {
      const t = document.getElementById('tooltip');
      return t.hidden ? '(hidden)' : t.textContent;
    });
    throw new Error(`no tooltip with ${label} at data (${x}, ${y}), page (${at.x}, ${at.y}); shown: ${shown}`);
  }
  return { at, text: await page.locator('#tooltip').textContent() };
}

/** Screenshot of the plot (saved as target/screenshots/<file>), decoded. */
async function plotShot(page, file) {
  await page.mouse.move(1, 1); // no hover highlight, no tooltip
  await page.waitForFunction(() => document.getElementById('tooltip').hidden);
  await page.evaluate(() => window.memviz.view({ method: 'state' })); // after the next frame
  const png = await page.locator('#plot').screenshot({ path: path.join(SCREENSHOTS, file) });
  return decodePng(png);
}

/** Screenshot of the canvas in the flamegraph view (saved as target/screenshots/<file>), decoded. */
async function flameShot(page, file) {
  await page.mouse.move(1, 1);
  await page.evaluate(() => window.memviz.view({ method: 'state' }));
  const png = await page.locator('#plot').screenshot({ path: path.join(SCREENSHOTS, file) });
  return decodePng(png);
}

/**
 * Screenshots the plot and asserts that the timeline is drawn: at least 8 colours of ≥ 50 px that
 * are neither white nor grey, covering ≥ 25 % of the plot rectangle.
 */
async function assertDrawn(page, file) {
  const st = await viewerState(page);
  const img = await plotShot(page, file);
  const stats = colourStats(img, st.geometry.plot);
  const significant = [...stats.colours.values()].filter((n) => n >= 50).length;
  assert.ok(significant >= 8, `at least 8 colours of ≥ 50 px in the plot, got ${significant} (${file})`);
  assert.ok(stats.colourful >= 0.25 * stats.area,
    `colourful pixels cover ≥ 25 % of the plot: ${stats.colourful} of ${stats.area} (${file})`);
  return img;
}

// ----- the suite, once per backend ---------------------------------------------------------

for (const backend of BACKENDS) {
  describe(`page with ${backend.name} (${backend.query})`, () => {
    /** @type {Awaited<ReturnType<typeof launch>>} */
    let b;
    let page;
    const shot = (name) => `${backend.name}-${name}.png`;

    before(async () => {
      b = await launch(backend.args, backend.query);
      page = b.page;
    });
    after(async () => {
      if (b) await b.close();
    });

    test('starts empty with no visible alert, on the requested backend', TEST, async () => {
      assert.equal(await bodyState(page), 'empty');
      assert.equal(await page.evaluate(() => document.body.dataset.memvizBackend), backend.name);
      assert.equal(await page.locator('#error').isVisible(), false, 'no alert');
      assert.equal(await page.getByRole('alert').filter({ visible: true }).count(), 0);
      assert.equal(await page.locator('#viewer').isVisible(), false, 'no viewer before a file');
      assert.equal(await viewerState(page), null);
    });

    test('"Open demo" draws a colourful timeline and the summary of the native CLI', TEST, async () => {
      assert.equal(await openDemo(page), 'ready');
      assert.equal(await page.locator('#viewer').isVisible(), true);
      assert.equal(await page.locator('#loading').isVisible(), false);
      assert.equal(await page.locator('#error').isVisible(), false);
      assert.deepEqual(await summaryJson(page), cliSummary(DEMO));
      assert.match(await page.locator('#summary-table').textContent(), /\S/);
      assert.match(await page.locator('#file-name').textContent(), /demo\.pickle$/);
      const last = await page.evaluate(() => window.memviz.lastOpen);
      assert.equal(last.bytes, fs.statSync(DEMO).size);
      const st = await viewerState(page);
      assert.ok(st.elements > 100, `elements drawn: ${st.elements}`);
      assert.deepEqual(st.x_range, st.full_x, 'a new file is fitted');
      await page.screenshot({ path: path.join(SCREENSHOTS, shot('page-demo')), fullPage: true });
      await assertDrawn(page, shot('demo'));
    });

    test('a real snapshot (file input) and a dropped file open; #file-select switches files', TEST, async (t) => {
      const c = corpusCase();
      let corpusName = null;
      if (c === null) {
        t.diagnostic(`${CORPUS} is absent: no real snapshot, only the dropped file`);
      } else {
        assert.equal(await openWithInput(page, path.join(CORPUS, c.name)), 'ready');
        const summary = await summaryJson(page);
        const traceEntries = summary.devices.reduce((sum, d) => sum + d.trace_entries, 0);
        assert.equal(traceEntries, c.traceEntries, `trace entries of ${c.name} (corpus README)`);
        assert.deepEqual(summary, cliSummary(path.join(CORPUS, c.name)));
        assert.equal(await page.locator('#file-name').textContent(), c.name);
        corpusName = c.name;
      }
      const listed = await fileOptions(page);
      await watchState(page);
      await page.evaluate(async () => {
        const bytes = await (await fetch('assets/demo.pickle')).arrayBuffer();
        const transfer = new DataTransfer();
        transfer.items.add(new File([bytes], 'dropped.pickle'));
        const target = document.querySelector('#legend-wrap') || document.body;
        for (const type of ['dragenter', 'dragover', 'drop']) {
          target.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: transfer }));
        }
      });
      assert.equal(await settledState(page), 'ready');
      assert.equal(await page.locator('#file-name').textContent(), 'dropped.pickle');
      assert.equal(await page.locator('#drop-overlay').isHidden(), true);
      assert.deepEqual(await summaryJson(page), cliSummary(DEMO));
      const files = await fileOptions(page);
      assert.deepEqual(files, [...listed, 'dropped.pickle'], 'the dropped file is added to #file-select');
      assert.equal(await page.locator('#file-select').isEnabled(), true);
      assert.ok(files.some((f) => /demo\.pickle$/.test(f)), `the demo is listed: ${files}`);
      if (corpusName !== null) assert.ok(files.includes(corpusName), `the corpus file is listed: ${files}`);

      const st = await viewerState(page);
      assert.equal(st.file, files.length - 1, 'the dropped file is current');
      const target = corpusName ?? files.find((f) => /demo\.pickle$/.test(f));
      const index = files.indexOf(target);
      await page.selectOption('#file-select', String(index));
      await poll(async () => (await viewerState(page)).file === index, `state().file === ${index}`);
      await page.waitForFunction((name) => document.getElementById('file-name').textContent === name, target);
      assert.deepEqual((await viewerState(page)).files, files);
      await page.selectOption('#file-select', String(files.length - 1));
      await poll(async () => (await viewerState(page)).file === files.length - 1, 'back to the dropped file');
    });

    test('#summary-json follows the file chosen in #file-select (contract: the current file\'s summary)', {
      ...TEST,
    }, async () => {
      const landmarks = fixture('landmarks.pickle');
      assert.equal(await openWithInput(page, landmarks), 'ready');
      assert.deepEqual(await summaryJson(page), cliSummary(landmarks));
      const files = await fileOptions(page);
      const demoIndex = files.findIndex((f) => /demo\.pickle$/.test(f));
      await page.selectOption('#file-select', String(demoIndex));
      await poll(async () => (await viewerState(page)).file === demoIndex, 'the demo is current');
      await page.waitForFunction((name) => document.getElementById('file-name').textContent === name, files[demoIndex]);
      assert.deepEqual(await summaryJson(page), cliSummary(DEMO));
    });

    test('the tooltip under the mouse names the allocation there; click pins, Copy stack copies, click unpins', TEST, async () => {
      assert.equal(await openWithInput(page, fixture('landmarks.pickle')), 'ready');
      const st = await viewerState(page);
      assert.deepEqual(st.full_x, [0, 8], 'landmarks: 8 timesteps (SEMANTICS §3.4)');
      assert.equal(st.peak_bytes, 14 * MiB);
      for (const [name, p] of Object.entries(LANDMARK_POINTS)) {
        const { text } = await hover(page, p.x, p.y, p.label);
        assert.ok(text.includes(`${p.element} Addr: ${p.label}, Size: ${p.size}`), `${name}: ${text}`);
        assert.ok(text.includes(p.frame), `${name}: frame ${p.frame} in ${text}`);
        assert.ok(text.includes(MAIN_FRAME), `${name}: ${text}`);
        const tip = await page.evaluate(() => window.memviz.tooltip());
        assert.equal(tip.address_label, p.label);
        assert.equal(tip.element, p.element);
        assert.equal(tip.pinned, false);
        assert.equal(await page.locator('#tooltip-actions').isVisible(), false, 'not pinned: no actions');
      }
      // Pin beta, copy its stack, unpin.
      const beta = LANDMARK_POINTS.beta;
      const { at } = await hover(page, beta.x, beta.y, beta.label);
      await page.mouse.click(at.x, at.y);
      await page.locator('#tooltip-actions').waitFor({ state: 'visible' });
      assert.equal((await page.evaluate(() => window.memviz.tooltip())).pinned, true);
      await page.locator('#plot-wrap').screenshot({ path: path.join(SCREENSHOTS, shot('tooltip-pinned')) });
      const pinned = (await viewerState(page)).pinned;
      assert.equal(pinned, (await page.evaluate(() => window.memviz.tooltip())).element);
      // Pinned: the tooltip stays when the mouse moves over another allocation.
      const alpha = LANDMARK_POINTS.alpha;
      const alphaAt = await pagePoint(page, alpha.x, alpha.y);
      await page.mouse.move(alphaAt.x, alphaAt.y);
      await poll(async () => (await viewerState(page)).hover !== pinned, 'hover moves to alpha');
      assert.ok((await page.locator('#tooltip').textContent()).includes(beta.label), 'the pinned tooltip stays');
      await page.click('#copy-stack');
      await page.waitForFunction(() => typeof window.memviz.lastCopied === 'string');
      const copied = await page.evaluate(() => window.memviz.lastCopied);
      assert.ok(copied.includes(beta.frame) && copied.includes(beta.label), `copied: ${copied}`);
      assert.match(await page.locator('#copy-status').textContent(), /copied|copy failed/);
      await page.mouse.click(at.x, at.y);
      await page.locator('#tooltip-actions').waitFor({ state: 'hidden' });
      await poll(async () => (await viewerState(page)).pinned === null, 'state().pinned === null');
      const unpinned = await page.evaluate(() => window.memviz.tooltip());
      assert.ok(unpinned === null || unpinned.pinned === false, 'unpinned');

      // The details pane never covers the plot: docked beside it, or below it on a narrow page;
      // Python frames come first and the C++ frames fold into one row.
      const paneBox = await page.locator('#details-pane').boundingBox();
      const plotBox = await page.locator('#plot').boundingBox();
      assert.ok(paneBox.x >= plotBox.x + plotBox.width - 1, `the pane ${JSON.stringify(paneBox)} is right of the plot ${JSON.stringify(plotBox)}`);
      await page.setViewportSize({ width: 420, height: 800 });
      try {
        await poll(async () => {
          const g = (await viewerState(page)).geometry;
          const w = await page.evaluate(() => document.getElementById('plot').clientWidth);
          return g && Math.abs(g.css_w - w) < 1;
        }, 'the viewer follows the narrow canvas');
        for (const [name, p] of Object.entries(LANDMARK_POINTS)) {
          const pt = await pagePoint(page, p.x, p.y);
          await page.mouse.click(pt.x, pt.y);
          await poll(async () => {
            const t = await page.evaluate(() => window.memviz.tooltip());
            return t && t.pinned && t.address_label === p.label;
          }, `${name} pinned`);
          const box = await page.locator('#details-pane').boundingBox();
          const plot = await page.locator('#plot').boundingBox();
          assert.ok(box.y >= plot.y + plot.height - 1, `${name}: the pane ${JSON.stringify(box)} is below the plot ${JSON.stringify(plot)}`);
          assert.ok((await page.locator('#tooltip-title').textContent()).includes(p.label), `${name} in the pane`);
          await page.mouse.click(pt.x, pt.y);
          await poll(async () => (await viewerState(page)).pinned === null, `${name} unpinned by a second click`);
        }
        await page.screenshot({ path: path.join(SCREENSHOTS, shot('details-narrow')) });
      } finally {
        await page.setViewportSize({ width: 1200, height: 800 });
        await page.mouse.move(1, 1);
      }

      // The SEMANTICS §3.6 test vector: a traced allocation and the ghost block.
      assert.equal(await openWithInput(page, fixture('small/vector.pickle')), 'ready');
      const vst = await viewerState(page);
      assert.deepEqual(vst.full_x, [0, 9]);
      assert.equal(vst.peak_bytes, 55);
      assert.equal(vst.has_time, false);
      assert.equal(await page.locator('#x-axis-select option[value="time"]').isDisabled(), true, 'no times: no time axis');
      for (const [name, p] of Object.entries(VECTOR_POINTS)) {
        const { text } = await hover(page, p.x, p.y, p.label);
        assert.ok(text.includes(`Addr: ${p.label}, Size: ${p.size}`), `${name}: ${text}`);
        if (p.note) assert.ok(text.includes(p.note), `${name}: ${text}`);
      }
      await page.mouse.move(1, 1);
    });

    test('zoom (wheel, + and 0 on the focused plot, double-click) changes what is visible', TEST, async () => {
      assert.equal(await openDemo(page), 'ready');
      await page.selectOption('#x-axis-select', 'timesteps');
      await poll(async () => (await viewerState(page)).x_axis === 'timesteps', 'timestep axis');
      const full = await viewerState(page);
      const fullSpan = full.x_range[1] - full.x_range[0];
      const fullLabels = await xLabels(page);
      const fullImg = await plotShot(page, shot('zoom-full'));
      const p = full.geometry.plot;
      const box = await page.locator('#plot').boundingBox();
      const centre = { x: box.x + (p.left + p.right) / 2, y: box.y + (p.top + p.bottom) / 2 };

      await page.mouse.move(centre.x, centre.y);
      for (let i = 0; i < 3; i += 1) await page.mouse.wheel(0, -240);
      const zoomed = await poll(async () => {
        const s = await viewerState(page);
        return s.x_range[1] - s.x_range[0] < 0.7 * fullSpan && s;
      }, 'the wheel zooms in');
      assert.ok(zoomed.x_range[0] >= full.x_range[0] && zoomed.x_range[1] <= full.x_range[1]);
      const centreStep = full.x_range[0] + fullSpan / 2;
      assert.ok(zoomed.x_range[0] < centreStep && centreStep < zoomed.x_range[1], 'zoomed around the cursor');
      await page.waitForFunction((before) => {
        const now = [...document.querySelectorAll('#x-labels span')].map((s) => s.textContent);
        return now.length > 0 && now.join('|') !== before.join('|');
      }, fullLabels);
      const zoomImg = await plotShot(page, shot('zoom-wheel'));
      const changed = differingPixels(fullImg, zoomImg);
      assert.ok(changed > 0.02 * fullImg.width * fullImg.height, `the plot changed: ${changed} px`);

      await page.locator('#plot').focus();
      await page.keyboard.press('0');
      await poll(async () => {
        const s = await viewerState(page);
        return s.x_range[0] === full.full_x[0] && s.x_range[1] === full.full_x[1];
      }, '0 fits');
      await page.waitForFunction((before) => [...document.querySelectorAll('#x-labels span')]
        .map((s) => s.textContent).join('|') === before.join('|'), fullLabels);
      await page.keyboard.type('+');
      const plus = await poll(async () => {
        const s = await viewerState(page);
        return s.x_range[1] - s.x_range[0] < fullSpan && s;
      }, '+ zooms in');
      assert.ok(plus.x_range[1] - plus.x_range[0] > 0);

      await page.mouse.dblclick(centre.x, centre.y);
      await poll(async () => {
        const s = await viewerState(page);
        return s.x_range[0] === full.full_x[0] && s.x_range[1] === full.full_x[1];
      }, 'double-click fits');
      assert.equal((await viewerState(page)).pinned, null, 'the double-click left nothing pinned');
      await page.mouse.move(1, 1);
    });

    test('#device-select switches devices of a multi-device file', TEST, async () => {
      const file = fixture('small/multidevice.pickle');
      assert.equal(await openWithInput(page, file), 'ready');
      const cli = cliSummary(file);
      const options = await page.locator('#device-select option').evaluateAll(
        (opts) => opts.map((o) => ({ value: Number(o.value), label: o.textContent, selected: o.selected })));
      assert.ok(options.length >= 2, `device options: ${JSON.stringify(options)}`);
      assert.deepEqual(options.map((o) => o.value), cli.devices.map((d) => d.device), 'the CLI\'s devices');
      assert.equal(await page.locator('#device-select').isEnabled(), true);
      const st = await viewerState(page);
      assert.equal(options.find((o) => o.selected).value, st.device);
      const peakOf = (d) => cli.devices.find((x) => x.device === d).peak_live_bytes;
      assert.equal(st.peak_bytes, peakOf(st.device), 'peak of the default device = the CLI\'s');
      const peakText = await page.locator('#peak').textContent();
      const other = options.find((o) => !o.selected && peakOf(o.value) !== peakOf(st.device) && peakOf(o.value) > 0);
      assert.ok(other, 'another device with a different peak');
      await page.selectOption('#device-select', String(other.value));
      const switched = await poll(async () => {
        const s = await viewerState(page);
        return s.device === other.value && s;
      }, `state().device === ${other.value}`);
      assert.equal(switched.peak_bytes, peakOf(other.value));
      await page.waitForFunction((before) => document.getElementById('peak').textContent !== before, peakText);
      assert.match(await page.locator('#peak').textContent(), /peak \d/);
      // Every device, including one without a trace, can be shown.
      for (const o of options) {
        await page.selectOption('#device-select', String(o.value));
        const s = await poll(async () => {
          const v = await viewerState(page);
          return v.device === o.value && v;
        }, `device ${o.value}`);
        assert.equal(s.peak_bytes, peakOf(o.value), `peak of device ${o.value}`);
      }
    });

    test('#x-axis-select: wall-clock time labels, or plain timestep numbers', TEST, async (t) => {
      assert.equal(await openWithInput(page, fixture('landmarks.pickle')), 'ready');
      const timeLabel = /^\d+(\.\d+)? (µs|ms|s)$/;
      const stepLabel = /^\d+(\.\d+)?$/;
      await page.selectOption('#x-axis-select', 'time');
      await poll(async () => (await viewerState(page)).x_axis === 'time', 'x_axis time');
      await page.waitForFunction((re) => {
        const ls = [...document.querySelectorAll('#x-labels span')].map((s) => s.textContent);
        return ls.length >= 2 && ls.every((l) => new RegExp(re).test(l));
      }, timeLabel.source);
      const time = await xLabels(page);
      // Events are 1 ms apart: the 6 events span 0 to 5 ms, labelled in ms.
      assert.equal(time[0].replace(/\s+/g, ''), '0ms', `first time label: ${time}`);
      const overlaps = await page.locator('#x-labels span').evaluateAll((spans) => {
        const boxes = spans.map((s) => ({ text: s.textContent, ...s.getBoundingClientRect().toJSON() }))
          .sort((a, b) => a.left - b.left);
        return boxes.slice(1).map((box, i) => [boxes[i], box]).filter(([a, b]) => b.left < a.right)
          .map(([a, b]) => `${a.text} / ${b.text}`);
      });
      await t.test('time tick labels do not overlap', {
      }, () => {
        assert.deepEqual(overlaps, []);
      });
      await page.selectOption('#x-axis-select', 'timesteps');
      await poll(async () => (await viewerState(page)).x_axis === 'timesteps', 'x_axis timesteps');
      await page.waitForFunction((re) => {
        const ls = [...document.querySelectorAll('#x-labels span')].map((s) => s.textContent);
        return ls.length >= 2 && ls.every((l) => new RegExp(re).test(l));
      }, stepLabel.source);
      const steps = (await xLabels(page)).map(Number);
      assert.equal(steps[0], 0);
      assert.ok(steps.at(-1) <= 8 && steps.at(-1) >= 5, `timestep labels within 0..8: ${steps}`);
      // The demo has times too.
      assert.equal(await openDemo(page), 'ready');
      assert.equal((await viewerState(page)).has_time, true);
      await page.selectOption('#x-axis-select', 'time');
      await page.waitForFunction((re) => {
        const ls = [...document.querySelectorAll('#x-labels span')].map((s) => s.textContent);
        return ls.length >= 2 && ls.every((l) => new RegExp(re).test(l));
      }, timeLabel.source);
      await page.selectOption('#x-axis-select', 'timesteps');
      await page.waitForFunction((re) => {
        const ls = [...document.querySelectorAll('#x-labels span')].map((s) => s.textContent);
        return ls.length >= 2 && ls.every((l) => new RegExp(re).test(l));
      }, stepLabel.source);
    });

    test('wall-clock time axis: ticks linear in time_us, hover by time, the brush, a deep link with the time axis restores', TEST, async () => {
      // generate.py landmarks-uneven: the landmarks' events at 0, 0.2, 2.2, 2.3, 2.3 and 10 ms.
      assert.equal(await openWithInput(page, fixture('landmarks-uneven.pickle')), 'ready');
      assert.equal((await viewerState(page)).x_axis, 'timesteps', 'event order by default');
      await page.selectOption('#x-axis-select', 'time');
      const st = await poll(async () => {
        const s = await viewerState(page);
        return s.x_axis === 'time' && s;
      }, 'x_axis time');
      assert.deepEqual(st.full_x, [0, 10000], 'x is µs after the first event');
      assert.deepEqual(st.x_range, st.full_x);
      // Ticks: round values at left + (v - x0) / (x1 - x0) * width, shown where Rust put them.
      const { result: ticks } = await page.evaluate(() => window.memviz.view({ method: 'ticks' }));
      const p = st.geometry.plot;
      assert.ok(ticks.x.length >= 3, JSON.stringify(ticks.x));
      const step = ticks.x[1].value - ticks.x[0].value;
      for (const [i, t] of ticks.x.entries()) {
        assert.equal(t.value, i * step);
        const want = p.left + (t.value - st.x_range[0]) / (st.x_range[1] - st.x_range[0]) * (p.right - p.left);
        assert.ok(Math.abs(t.pos_css_px - want) < 1e-6, `${t.label} at ${t.pos_css_px}, want ${want}`);
        assert.equal(t.label, `${t.value / 1000} ms`);
      }
      await page.waitForFunction((labels) => {
        const ls = [...document.querySelectorAll('#x-labels span')].map((s) => s.textContent);
        return JSON.stringify(ls) === JSON.stringify(labels);
      }, ticks.x.map((t) => t.label));
      await page.locator('#plot-wrap').screenshot({ path: path.join(SCREENSHOTS, shot('time-axis')) });
      // Hover by time: beta lives 0.2–2.3 ms at [4, 12) MiB; gamma from 2.2 ms, sliding down
      // over 2.3–10 ms from 6.67 MiB to 4 MiB (at 6.15 ms: [5.33, 7.33) MiB).
      const beta = LANDMARK_POINTS.beta;
      await hover(page, 1000, 8 * MiB, beta.label);
      assert.equal((await page.evaluate(() => window.memviz.tooltip())).element, beta.element);
      const gamma = LANDMARK_POINTS.gammaSliding;
      await hover(page, 6150, 7 * MiB, gamma.label);
      assert.equal((await page.evaluate(() => window.memviz.tooltip())).element, gamma.element);
      await page.mouse.move(1, 1);
      // The brush in the overview strip is linear in time too: a quarter to a half is 2.5–5 ms.
      const box = await page.locator('#plot').boundingBox();
      const o = st.geometry.overview;
      const oy = box.y + (o.top + o.bottom) / 2;
      const ox = (f) => box.x + o.left + f * (o.right - o.left);
      await page.mouse.move(ox(0.25), oy);
      await page.mouse.down();
      await page.mouse.move(ox(0.4), oy, { steps: 3 });
      await page.mouse.move(ox(0.5), oy, { steps: 3 });
      await page.mouse.up();
      const brushed = await poll(async () => {
        const s = await viewerState(page);
        return Math.abs(s.x_range[1] - 5000) < 20 && s;
      }, 'the brush shows 2.5–5 ms');
      assert.ok(Math.abs(brushed.x_range[0] - 2500) < 20, JSON.stringify(brushed.x_range));
      // A deep link holds the axis and x in µs; it restores from event order.
      await page.evaluate(() => window.memviz.view({ method: 'set_x_window', x0: 1000, x1: 2250 }));
      const hash = await page.evaluate(() => window.memviz.links.write());
      assert.match(hash, /axis=time/);
      assert.match(hash, /x=1000%2C2250|x=1000,2250/);
      await page.selectOption('#x-axis-select', 'timesteps');
      await poll(async () => (await viewerState(page)).x_axis === 'timesteps', 'back to event order');
      await page.evaluate((h) => window.memviz.links.restore(h), hash);
      const restored = await poll(async () => {
        const s = await viewerState(page);
        return s.x_axis === 'time' && s;
      }, 'the link restores the time axis');
      assert.deepEqual(restored.x_range, [1000, 2250]);
      assert.equal(await page.inputValue('#x-axis-select'), 'time');
      // A link without `axis` (as every link before the time axis) is in timesteps.
      await page.evaluate(() => window.memviz.links.restore('#view=active&x=1,3&y=0,15000000'));
      const old = await poll(async () => {
        const s = await viewerState(page);
        return s.x_axis === 'timesteps' && s;
      }, 'an old link restores event order');
      assert.deepEqual(old.x_range, [1, 3]);
      // The segment and pool timelines are labelled on the time axis too (the demo: its
      // segments come and go with events; the landmarks' one segment has no event, no time).
      assert.equal(await openDemo(page), 'ready');
      await page.selectOption('#x-axis-select', 'time');
      for (const v of ['segments', 'pools']) {
        await page.evaluate((name) => window.memviz.setView(name), v);
        await poll(async () => {
          const s = await viewerState(page);
          return s.view === v && s.x_axis === 'time';
        }, `${v}: time axis`);
        await page.waitForFunction(() => {
          const ls = [...document.querySelectorAll('#x-labels span')].map((s) => s.textContent);
          return ls.length >= 2 && ls.every((l) => /^\d+(\.\d+)? (µs|ms|s)$/.test(l));
        });
        await page.locator('#plot-wrap').screenshot({ path: path.join(SCREENSHOTS, shot(`time-axis-${v}`)) });
      }
      await page.evaluate(() => window.memviz.setView('active'));
    });

    test('a gzip-compressed snapshot opens with the same summary (Blob and file input)', TEST, async () => {
      const gz = fixture('demo.pickle.gz');
      assert.deepEqual(cliSummary(gz), cliSummary(DEMO), 'the CLI reads gzip too');
      const r = await page.evaluate(async (b64) => {
        const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
        const res = await window.memviz.open(new Blob([bytes]));
        return { state: res.state, json: res.json, message: res.message };
      }, fs.readFileSync(gz).toString('base64'));
      assert.equal(r.state, 'ready', r.message);
      assert.deepEqual(JSON.parse(r.json), cliSummary(DEMO));
      assert.deepEqual(await summaryJson(page), cliSummary(DEMO));
      assert.equal(await openWithInput(page, gz), 'ready');
      assert.deepEqual(await summaryJson(page), cliSummary(DEMO));
      assert.equal(await page.locator('#file-name').textContent(), 'demo.pickle.gz');
    });

    test('a big file shows progress and can be cancelled; the open file stays', TEST, async (t) => {
      const big = fixture(`large${LARGE_MB}.pickle`);
      if ((await bodyState(page)) !== 'ready') assert.equal((await openApi(page, fixture('landmarks.pickle'))).state, 'ready');
      const files = await fileOptions(page);
      const current = (await viewerState(page)).file;
      const handle = await pageFile(page, big);
      await watchState(page);
      await page.evaluate((f) => {
        window.__bigDone = null;
        window.__bigOpen = window.memviz.open(f).then((x) => { window.__bigDone = x.state; return x; });
      }, handle);
      await page.evaluate(() => {
        window.__cancelClicks = 0;
        document.getElementById('cancel-button').addEventListener('click', () => { window.__cancelClicks += 1; });
        // Where the Cancel button is after each progress text change (left edge, CSS px).
        window.__cancelAt = [];
        new MutationObserver(() => {
          if (!document.getElementById('loading').hidden) {
            window.__cancelAt.push(Math.round(document.getElementById('cancel-button').getBoundingClientRect().left));
          }
        }).observe(document.getElementById('progress'), { childList: true, characterData: true, subtree: true });
      });
      // Wait for a progress text with some bytes read: the first one ("0 of N bytes (0%)") is
      // ~8 characters shorter, and the Cancel button after it jumps when it grows (see the report).
      const progress = await (await page.waitForFunction(() => {
        if (window.__bigDone !== null) return `ended: ${window.__bigDone}`;
        const text = document.getElementById('progress').textContent;
        const read = /: ([\d,]+) of [\d,]+ bytes \(\d+%\)/.exec(text);
        return !document.getElementById('loading').hidden && read && read[1] !== '0' && text;
      }, null, { polling: 10 })).jsonValue();
      assert.ok(!progress.startsWith('ended:'), `the load ${progress} before any progress was seen: raise LARGE_MB`);
      assert.match(progress, /large\d+\.pickle/, `the progress names the file: ${progress}`);
      try {
        // force: no wait for a "stable" button (it moves a few px whenever the number of digits
        // read grows); the real mouse clicks where it is now.
        await page.click('#cancel-button', { timeout: 10_000, force: true });
      } catch (err) {
        throw new Error(`could not click Cancel (state ${await bodyState(page)}): if the file loaded first, raise LARGE_MB. ${err.message}`);
      }
      const r = await page.evaluate(() => window.__bigOpen.then((x) => ({ state: x.state, message: x.message })));
      const clicks = await page.evaluate(() => window.__cancelClicks);
      assert.equal(clicks, 1, `the mouse hit Cancel once (progress then: ${progress})`);
      assert.equal(r.state, 'cancelled', `${JSON.stringify(r)}: if the file loaded before the click landed, raise LARGE_MB`);
      const cancelAt = await page.evaluate(() => window.__cancelAt);
      await t.test('the Cancel button stays where it is while the progress text changes', {
      }, () => {
        assert.deepEqual([...new Set(cancelAt)], [cancelAt[0]], `left edges seen: ${cancelAt}`);
      });
      assert.equal(await bodyState(page), 'ready', 'back to the file already open');
      assert.equal(await page.locator('#loading').isVisible(), false);
      assert.equal(await page.locator('#error').isVisible(), false);
      assert.deepEqual(await fileOptions(page), files, 'the file list did not grow');
      assert.equal((await viewerState(page)).file, current);
      // The viewer still answers, and a normal open works after a cancel.
      assert.equal((await openApi(page, fixture('landmarks.pickle'))).state, 'ready');
      const after = await fileOptions(page);
      assert.deepEqual(after.slice(0, files.length), files);
      assert.equal(after.length, files.length + 1);
      // A second file of the same name is told apart: `landmarks.pickle (N)`.
      assert.match(after[files.length], /^landmarks\.pickle( \(\d+\))?$/);
    });

    test('broken files give an alert naming them as text; the next good file opens', TEST, async () => {
      const filesBefore = await fileOptions(page);
      const cases = [
        { name: 'garbage <b>not</b>.pickle', buffer: Buffer.from('this is not a pickle at all\n'.repeat(50)) },
        // Cut before its first whole segment: nothing to show (a later cut opens what was read,
        // with a notice: 'hostile and broken files' below).
        { name: 'truncated <b>demo</b>.pickle', buffer: fs.readFileSync(fixture('demo-truncated.pickle')).subarray(0, 300) },
      ];
      for (const c of cases) {
        const state = await openWithInput(page, { name: c.name, mimeType: 'application/octet-stream', buffer: c.buffer });
        assert.equal(state, 'error', c.name);
        const alert = page.getByRole('alert');
        await alert.waitFor({ state: 'visible' });
        const text = await alert.textContent();
        assert.ok(text.includes(c.name), `the alert names the file as text: ${text}`);
        assert.match(text, /another file/, 'the alert says what to do');
        // The banner holds the message's text node and its close button, nothing else.
        assert.equal(await page.locator('#error .error-text *').count(), 0, 'file names are never parsed as HTML');
        assert.deepEqual(await page.locator('#error > *').evaluateAll((es) => es.map((e) => e.className || e.id)), ['error-text', 'secondary icon']);
        assert.equal(await page.locator('#loading').isVisible(), false);
        assert.deepEqual(await fileOptions(page), filesBefore, 'a broken file is not added');
        await page.screenshot({ path: path.join(SCREENSHOTS, shot(`error-${cases.indexOf(c)}`)) });
      }
      assert.equal(await openWithInput(page, fixture('landmarks.pickle')), 'ready');
      assert.equal(await page.locator('#error').isVisible(), false, 'the alert is gone');
      assert.equal(await page.getByRole('alert').filter({ visible: true }).count(), 0);
      assert.deepEqual(await summaryJson(page), cliSummary(fixture('landmarks.pickle')));
    });

    test('window.memviz.open accepts a URL, an ArrayBuffer, a view and a Blob; a 404 URL is an error', TEST, async () => {
      const r = await page.evaluate(async () => {
        const pick = (x) => ({ state: x.state, json: x.json, message: x.message });
        const fromUrl = pick(await window.memviz.open('assets/demo.pickle'));
        const buffer = await (await fetch('assets/demo.pickle')).arrayBuffer();
        const fromBuffer = pick(await window.memviz.open(buffer));
        const padded = new Uint8Array(buffer.byteLength + 32);
        padded.set(new Uint8Array(buffer), 16);
        const fromView = pick(await window.memviz.open(padded.subarray(16, 16 + buffer.byteLength)));
        const fromBlob = pick(await window.memviz.open(new Blob([buffer])));
        const missing = pick(await window.memviz.open('assets/no-such-file.pickle'));
        const afterMissing = {
          state: document.body.dataset.memvizState,
          alert: document.getElementById('error').hidden ? null : document.getElementById('error').textContent,
        };
        return { fromUrl, fromBuffer, fromView, fromBlob, missing, afterMissing };
      });
      for (const k of ['fromUrl', 'fromBuffer', 'fromView', 'fromBlob']) {
        assert.equal(r[k].state, 'ready', `${k}: ${r[k].message}`);
        assert.deepEqual(JSON.parse(r[k].json), cliSummary(DEMO), k);
      }
      assert.equal(r.missing.state, 'error');
      assert.match(r.missing.message, /404/);
      assert.equal(r.afterMissing.state, 'error');
      assert.ok(r.afterMissing.alert && r.afterMissing.alert.includes('no-such-file.pickle'), `alert: ${r.afterMissing.alert}`);
      const i = b.badRequests.findIndex((req) => req.includes('no-such-file'));
      assert.ok(i >= 0, 'the server saw the 404');
      b.badRequests.splice(i, 1);
      // The page recovers.
      assert.equal((await openApi(page, fixture('landmarks.pickle'))).state, 'ready');
      assert.equal(await bodyState(page), 'ready');
      assert.equal(await page.locator('#error').isVisible(), false);
    });

    test('strings from a file are text, never markup (tooltip, legend, file list)', TEST, async () => {
      const name = `${HOSTILE_IMG}.pickle`;
      const state = await openWithInput(page, { name, mimeType: 'application/octet-stream', buffer: fs.readFileSync(fixture('hostile.pickle')) });
      assert.equal(state, 'ready');
      // The 12 MiB allocation: [0, 12) MiB from timestep 0.
      const { text } = await hover(page, 1.5, 6 * MiB, `b${LANDMARKS.toString(16)}_0`);
      for (const s of [HOSTILE_IMG, HOSTILE_B, `make_${HOSTILE_B}`, `ctx ${HOSTILE_B}`, `meta ${HOSTILE_IMG}`]) {
        assert.ok(text.includes(s), `the tooltip shows ${s} literally: ${text}`);
      }
      const at = await pagePoint(page, 1.5, 6 * MiB);
      await page.mouse.click(at.x, at.y);
      await page.locator('#tooltip-actions').waitFor({ state: 'visible' });
      await page.screenshot({ path: path.join(SCREENSHOTS, shot('hostile')), fullPage: true });
      const legend = await page.locator('#legend').textContent();
      assert.ok(legend.includes(HOSTILE_IMG) || legend.includes(HOSTILE_B), `the legend shows the sites literally: ${legend}`);
      assert.ok((await fileOptions(page)).includes(name), 'the file list shows the name literally');
      assert.equal(await page.locator('#file-name').textContent(), name);
      const found = await page.evaluate(() => ({
        img: document.querySelectorAll('img').length,
        b: document.querySelectorAll('#tooltip b, #legend b, #file-select b, #summary b, #error b').length,
        // Only the details pane's own structure, nothing a string made.
        tooltipElements: [...document.querySelectorAll('#tooltip-title *, #tooltip-body *')]
          .filter((e) => !['dl', 'dt', 'dd', 'pre', 'ol', 'li', 'div', 'details', 'summary', 'span'].includes(e.localName)).length,
        pwned: window.__pwned,
      }));
      assert.deepEqual(found, { img: 0, b: 0, tooltipElements: 0, pwned: undefined });
      await page.mouse.click(at.x, at.y);
      await page.locator('#tooltip-actions').waitFor({ state: 'hidden' });
      await page.mouse.move(1, 1);
    });

    test('no request left dist/ or the sub-path, and the page logged no errors', () => {
      assert.deepEqual(b.badRequests, []);
      // The deliberate 404 is logged by Chromium as a failed resource load.
      const unexpected = b.pageErrors.filter((e) => !/404|no-such-file/.test(e));
      assert.deepEqual(unexpected, []);
    });
  });
}

// ----- backend choice ------------------------------------------------------------------------

describe('automatic backend choice', () => {
  test('with the WebGPU flags and no ?backend: WebGPU', TEST, async () => {
    const b = await launch(WEBGPU_ARGS, '');
    try {
      assert.equal(await b.page.evaluate(() => document.body.dataset.memvizBackend), 'webgpu');
      assert.equal(await b.page.locator('#error').isVisible(), false);
      assert.match(await b.page.locator('#backend').getAttribute('title'), /WebGPU/);
      assert.equal(await b.page.locator('#backend').textContent(), 'GPU drawing');
      assert.equal(await openDemo(b.page), 'ready');
      await assertDrawn(b.page, 'auto-webgpu-demo.png');
      assert.deepEqual(b.badRequests, []);
      assert.deepEqual(b.pageErrors, []);
    } finally {
      await b.close();
    }
  });

  test('without flags and no ?backend: WebGL2 (or WebGPU if this Chromium offers it)', TEST, async (t) => {
    const b = await launch([], '');
    try {
      const chosen = await b.page.evaluate(() => document.body.dataset.memvizBackend);
      t.diagnostic(`chose ${chosen} without flags`);
      assert.ok(['webgl2', 'webgpu'].includes(chosen), chosen);
      assert.equal(await b.page.locator('#error').isVisible(), false);
      assert.equal(await openDemo(b.page), 'ready');
      await assertDrawn(b.page, `auto-noflags-${chosen}-demo.png`);
      // An unknown ?backend is refused with an alert, and files still open.
      await b.page.goto(`${baseUrl}?backend=bogus`);
      await b.page.waitForFunction(() => document.body.dataset.memvizBackend !== undefined);
      assert.equal(await b.page.evaluate(() => document.body.dataset.memvizBackend), 'none');
      await b.page.locator('#error').waitFor({ state: 'visible' });
      assert.match(await b.page.locator('#error').textContent(), /unknown backend/);
      assert.equal(await openDemo(b.page), 'ready');
      assert.deepEqual(await summaryJson(b.page), cliSummary(DEMO));
      assert.deepEqual(b.badRequests, []);
      assert.deepEqual(b.pageErrors, []);
    } finally {
      await b.close();
    }
  });
});

describe('no GPU at all', () => {
  test('--disable-gpu --disable-software-rasterizer: an alert says it cannot draw, files still open', TEST, async (t) => {
    const b = await launch(['--disable-gpu', '--disable-software-rasterizer'], '');
    try {
      const chosen = await b.page.evaluate(() => document.body.dataset.memvizBackend);
      t.diagnostic(`chose ${chosen} with --disable-gpu --disable-software-rasterizer`);
      if (chosen === 'none') {
        await b.page.locator('#error').waitFor({ state: 'visible' });
        assert.match(await b.page.locator('#error').textContent(), /cannot draw/);
        assert.match(await b.page.locator('#backend').textContent(), /cannot draw/);
        const r = await b.page.evaluate(() => window.memviz.open('assets/demo.pickle').then((x) => x.state));
        assert.equal(r, 'ready');
        assert.equal(await bodyState(b.page), 'ready');
        assert.deepEqual(await summaryJson(b.page), cliSummary(DEMO));
        assert.match(await b.page.locator('#summary-table').textContent(), /\S/);
        assert.match(await b.page.locator('#backend').textContent(), /cannot draw/);
        await t.test('the alert still says it cannot draw once a file is open', {
        }, async () => {
          assert.equal(await b.page.locator('#error').isVisible(), true);
          assert.match(await b.page.locator('#error').textContent(), /cannot draw/);
        });
      } else {
        assert.equal(chosen, 'webgl2', 'WebGL2 survives these flags');
        assert.equal(await openDemo(b.page), 'ready');
      }
      await b.page.screenshot({ path: path.join(SCREENSHOTS, 'nogpu-page.png'), fullPage: true });
      assert.deepEqual(b.badRequests, []);
      assert.deepEqual(b.pageErrors, []);
    } finally {
      await b.close();
    }
  });
});

// ----- allocator views (issue 4): State History, segment / pool timelines, settings, OOM ------

/** The State History panel's state, from the page. */
async function stateSel(page) {
  return page.evaluate(() => {
    const h = window.memviz.stateHistory;
    return { selected: h.selected, count: h.count, sel: h.selection, busy: h.busy };
  });
}

/** Waits until the panel settled on event k (no selection in flight). */
async function settledOn(page, k) {
  return poll(async () => {
    const s = await stateSel(page);
    return !s.busy && s.selected === k && s.sel && s.sel.event === k ? s : null;
  }, `state history on event ${k}`);
}

/** Asserts that the selected row of the event list is drawn inside the list's box. */
async function assertSelectedRowVisible(page, k) {
  const row = page.locator(`#state-rows .row[data-k="${k}"][aria-selected="true"]`);
  // The list draws on the next animation frame after its rows arrive from the worker.
  await row.waitFor({ state: 'attached' });
  assert.match(await row.textContent(), new RegExp(`^${k}: `));
  // The virtualised list may redraw its rows between two looks: wait for one that has a box.
  const r = await poll(() => row.boundingBox().catch(() => null), `a box for row ${k}`);
  const list = await page.locator('#state-list').boundingBox();
  assert.ok(r.y >= list.y - 1 && r.y + r.height <= list.y + list.height + 1,
    `row ${k} at y ${r.y}..${r.y + r.height} is inside the list ${list.y}..${list.y + list.height}`);
}

async function tooltipAt(page, at, label) {
  await page.mouse.move(at.x, at.y);
  await page.waitForFunction((l) => {
    const t = document.getElementById('tooltip');
    return !t.hidden && t.textContent.includes(l);
  }, label, { timeout: 20_000 }).catch(async () => {
    const shown = await page.locator('#tooltip').textContent();
    throw new Error(`no tooltip with ${label} at ${JSON.stringify(at)}; shown: ${shown}`);
  });
  return page.locator('#tooltip').textContent();
}

describe('allocator views, search and source lines (WebGL2)', () => {
  /** @type {Awaited<ReturnType<typeof launch>>} */
  let b;
  let page;
  before(async () => {
    b = await launch([], '?backend=webgl2');
    page = b.page;
  });
  after(async () => {
    if (b) await b.close();
  });

  test('State History: header after every event equals `memviz state`; Home/End/arrows/PageDown move the selection', TEST, async () => {
    const file = fixture('small/vector.pickle');
    assert.equal(await openWithInput(page, file), 'ready');
    await page.evaluate(() => window.memviz.setView('state'));
    assert.equal(await page.locator('#state-panel').isVisible(), true);
    assert.equal(await page.locator('#legend-wrap').isVisible(), false);
    const last = cliJson('state', file, '--device', '0', '--event', '-1');
    const s0 = await stateSel(page);
    assert.ok(s0.count >= 6, `vector has ≥ 6 merged events, got ${s0.count}`);
    assert.equal(s0.selected, s0.count - 1, 'memory_viz selects the last event');
    assert.equal(s0.sel.reserved_bytes, last.reserved_bytes);
    assert.equal(s0.sel.allocated_bytes, last.allocated_bytes);
    // SEMANTICS §6.4 by hand: after the last event (5) 100 reserved, 35 allocated.
    assert.deepEqual([s0.sel.reserved_bytes, s0.sel.allocated_bytes], [100, 35]);
    assert.match(await page.locator('#state-totals').textContent(), /35\.0B \(35 bytes\) allocated \/ 100\.0B \(100 bytes\) reserved/);
    await page.locator('#state-list').focus();
    await page.keyboard.press('Home');
    let s = await settledOn(page, 0);
    const expected = { 0: [100, 10], 1: [100, 30], 2: [100, 55], 3: [100, 35], 4: [100, 38], 5: [100, 35] };
    for (let k = 0; k < s0.count; k += 1) {
      if (k > 0) {
        await page.keyboard.press('ArrowDown');
        s = await settledOn(page, k);
      }
      const cli = cliJson('state', file, '--device', '0', '--event', String(k));
      assert.deepEqual([s.sel.reserved_bytes, s.sel.allocated_bytes, s.sel.segments, s.sel.blocks],
        [cli.reserved_bytes, cli.allocated_bytes, cli.segments, cli.blocks], `event ${k} vs memviz state`);
      if (expected[k]) assert.deepEqual([s.sel.reserved_bytes, s.sel.allocated_bytes], expected[k], `§6.4 after event ${k}`);
      assert.equal(await page.locator('#state-rows .row[aria-selected="true"]').count(), 1);
      await assertSelectedRowVisible(page, k);
    }
    await page.keyboard.press('ArrowUp');
    await settledOn(page, s0.count - 2);
    await page.keyboard.press('Home');
    await settledOn(page, 0);
    await page.keyboard.press('PageDown');
    const paged = await poll(async () => { const x = await stateSel(page); return !x.busy && x.selected > 0 ? x : null; }, 'page down');
    assert.equal(paged.selected, Math.min(s0.count - 1, paged.selected), 'page down stays in the list');
    await page.keyboard.press('End');
    await settledOn(page, s0.count - 1);
  });

  test('State History map: hover texts of a segment, a block and the rounding waste (SEMANTICS §6.5)', TEST, async () => {
    // After event 2 of the §3.6 vector: blocks A (10/10), A+10 (20/20), A+30 (size 30, requested 25).
    const A = 0x10000000;
    await page.evaluate(() => window.memviz.stateHistory.select(2));
    await settledOn(page, 2);
    const blockText = await tooltipAt(page, await mapPoint(page, 'block', A + 10), `b${(A + 10).toString(16)}_`);
    assert.match(blockText, /20\.0B \(20 bytes\) allocation/);
    const wasteAt = await mapPoint(page, 'waste', A + 30);
    const wasteText = await tooltipAt(page, wasteAt, 'Free space lost due to rounding');
    assert.match(wasteText, /5\.0B \(5 bytes\)/);
    const req = await tooltipAt(page, await mapPoint(page, 'block', A + 30), `b${(A + 30).toString(16)}_`);
    assert.match(req, /25\.0B \(25 bytes\) allocation/);
    // The segment's own rect shows past its blocks (they end at 60 of its 100 bytes): at byte
    // 80, located from the segment's centre (byte 50) and block A's (byte 5).
    const st = await viewerState(page);
    assert.equal(st.view, 'state');
    const segC = await mapPoint(page, 'segment', A);
    const aC = await mapPoint(page, 'block', A);
    const pxPerByte = (segC.x - aC.x) / 45;
    const segText = await tooltipAt(page, { x: segC.x + 30 * pxPerByte, y: segC.y }, `s${A.toString(16)}_`);
    assert.match(segText, /segment/);
    assert.match(segText, /100\.0B \(100 bytes\)/);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'webgl2-state-vector.png'), fullPage: true });
  });

  test('OOM explained: the OOM button selects the oom event; numbers and verdict equal `memviz oom`; a biggest allocation is shown in the map', TEST, async () => {
    const file = fixture('small/expandable.pickle');
    assert.equal(await openWithInput(page, file), 'ready');
    await page.evaluate(() => window.memviz.setView('state'));
    const cli = cliJson('oom', file);
    const reports = Array.isArray(cli) ? cli : cli.reports;
    assert.ok(reports.length >= 1, 'expandable.pickle has an oom event');
    const r = reports[0];
    await page.locator('#state-ooms button').first().click();
    const s = await settledOn(page, r.event);
    await assertSelectedRowVisible(page, r.event);
    assert.equal(await page.locator('#oom-panel').isVisible(), true);
    assert.equal(s.sel.oom.verdict, r.verdict);
    assert.equal(s.sel.oom.requested_bytes, r.requested_bytes);
    assert.equal(s.sel.oom.largest_free_block_bytes, r.largest_free_block_bytes);
    assert.equal(s.sel.oom.reserved_free_bytes, r.reserved_free_bytes);
    assert.equal(await page.locator('#oom-verdict').textContent(), r.verdict);
    assert.match(await page.locator('#oom-numbers').textContent(), /requested/);
    assert.match(await page.locator('.row.oom').first().textContent(), /OOM \(requested /);
    const biggest = page.locator('#oom-biggest button');
    assert.equal(await biggest.count(), r.biggest_live.length);
    if (r.biggest_live.length > 0) {
      await biggest.first().click();
      await page.waitForFunction(() => window.memviz.tooltip() !== null && window.memviz.tooltip().pinned);
      const tip = await page.evaluate(() => window.memviz.tooltip());
      assert.equal(tip.pinned, true);
      assert.equal(tip.item.addr, String(r.biggest_live[0][0]));
      assert.match(tip.title, new RegExp(`^b${r.biggest_live[0][0].toString(16)}_`));
    }
    await page.screenshot({ path: path.join(SCREENSHOTS, 'webgl2-state-oom.png'), fullPage: true });
  });

  test('Allocator settings panel; segment and pool timelines draw expandable / pooled files', TEST, async () => {
    await page.click('#tabs button[data-panel="settings"]');
    const settings = await page.locator('#settings-rows tr').allTextContents();
    assert.ok(settings.some((r) => r.startsWith('expandable_segments') && r.includes('True')), settings.join('\n'));
    await page.selectOption('#view-select', 'segments');
    const seg = await poll(async () => { const x = await viewerState(page); return x.view === 'segments' ? x : null; }, 'segments view');
    assert.ok(seg.elements > 0, 'expandable segments are drawn (memory_viz shows nothing here)');
    assert.equal(await page.locator('#state-panel').isVisible(), false);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'webgl2-segments-expandable.png'), fullPage: true });
    const pools = fixture('small/pools.pickle');
    assert.equal(await openWithInput(page, pools), 'ready');
    await page.evaluate(() => window.memviz.setView('pools'));
    const p = await viewerState(page);
    assert.equal(p.view, 'pools');
    assert.ok(p.elements > 0);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'webgl2-pools.png'), fullPage: true });
    await page.evaluate(() => window.memviz.setView('active'));
    assert.equal((await viewerState(page)).view, 'active');
  });

  test('a long trace: the list keeps a few dozen DOM rows, End and search jump; selection times', TEST, async (t) => {
    const file = fixture(`large${LARGE_MB}.pickle`);
    assert.equal(await openWithInput(page, file), 'ready');
    const t0 = Date.now();
    await page.evaluate(() => window.memviz.setView('state'));
    const openMs = Date.now() - t0;
    const s0 = await stateSel(page);
    assert.ok(s0.count > 100_000, `events: ${s0.count}`);
    const rows = await poll(async () => { const n = await page.locator('#state-rows .row').count(); return n > 5 ? n : null; }, 'rows drawn');
    assert.ok(rows > 5 && rows < 60, `DOM rows: ${rows}`);
    await page.locator('#state-list').focus();
    await page.keyboard.press('Home');
    await settledOn(page, 0);
    await assertSelectedRowVisible(page, 0);
    assert.match(await page.locator('#state-rows .row').first().textContent(), /^0: /);
    await page.keyboard.press('End');
    await settledOn(page, s0.count - 1);
    await assertSelectedRowVisible(page, s0.count - 1);
    await page.keyboard.press('PageUp');
    const up = await poll(async () => { const x = await stateSel(page); return !x.busy && x.selected < s0.count - 1 ? x : null; }, 'page up');
    assert.ok(s0.count - 1 - up.selected >= 5, `page up moves by a page: ${up.selected}`);
    await assertSelectedRowVisible(page, up.selected);
    const times = [];
    for (const k of [0, Math.floor(s0.count / 3), Math.floor(s0.count / 2), s0.count - 2, 17]) {
      const sel = await page.evaluate((x) => window.memviz.stateHistory.select(x), k);
      times.push(sel.select_ms);
    }
    await page.fill('#state-search', 'segment_alloc');
    await page.press('#state-search', 'Enter');
    const hit = await poll(async () => { const x = await stateSel(page); return !x.busy && x.selected !== 17 ? x : null; }, 'search hit');
    assert.match(hit.sel.text, /segment_alloc/);
    t.diagnostic(`${s0.count} events: view open ${openMs} ms (page round trip; Rust ${s0.sel.open_ms.toFixed(0)} ms), select ms ${times.map((x) => x.toFixed(1)).join(' ')}, checkpoints ${(s0.sel.checkpoint_bytes / 1e6).toFixed(1)} MB`);
  });

  test('search highlights matches with count and bytes (landmarks, by hand); "only matches" hides the rest', TEST, async () => {
    assert.equal(await openWithInput(page, fixture('landmarks.pickle')), 'ready');
    await page.evaluate(() => window.memviz.setView('active'));
    const run = (q) => search(page, q);
    // generate.py landmarks: alpha 4 MiB (alpha.py), beta 8 MiB (beta.py), gamma 2 MiB, delta 6 MiB.
    let r = await run('beta.py');
    assert.deepEqual([r.count, r.bytes], [1, 8 * MiB]);
    assert.equal(await page.locator('#search-status').textContent(), '1 match, 8.0MiB (8388608 bytes)');
    assert.equal((await viewerState(page)).highlighted, 1);
    r = await run('/make_(alpha|beta)/');
    assert.deepEqual([r.count, r.bytes], [2, 12 * MiB]);
    r = await run(`b${(LANDMARKS + 4 * MiB).toString(16)}_1`);
    assert.deepEqual([r.count, r.bytes], [1, 6 * MiB], 'delta by its address label');
    r = await run('/(unclosed/');
    assert.ok(r.error, 'a bad pattern says so');
    assert.match(await page.locator('#search-status').textContent(), /bad pattern/);
    r = await run('delta.py');
    const dimmed = await plotShot(page, 'webgl2-search-delta.png');
    await page.check('#search-only');
    await poll(async () => (await page.evaluate(() => window.memviz.searchBox.result)).count === 1, 'only');
    const only = await plotShot(page, 'webgl2-search-delta-only.png');
    assert.ok(differingPixels(dimmed, only) > 1000, 'hiding the non-matches changes the plot');
    await page.uncheck('#search-only');
    await run('');
    assert.equal((await viewerState(page)).highlighted, null);
  });

  test('the source-lines table equals `memviz lines`; sorting; a row highlights its allocations', TEST, async () => {
    assert.equal(await openDemo(page), 'ready');
    await page.click('#tabs button[data-panel="lines-panel"]');
    const rows = await page.evaluate(() => window.memviz.linesTable.load());
    const cli = cliJson('lines', DEMO);
    assert.deepEqual(rows.map((x) => [x.file, x.line, x.name, x.live_at_peak_bytes, x.total_bytes, x.count, x.largest_bytes]),
      cli.rows.map((x) => [x.file, x.line, x.name, x.live_at_peak_bytes, x.total_bytes, x.count, x.largest_bytes]));
    assert.ok(rows.length >= 3, `rows: ${rows.length}`);
    const first = await page.locator('#lines-rows tr').first().locator('td .site-text').first().textContent();
    assert.equal(first, cli.rows[0].label, 'the first row names its site');
    await page.click('#lines-table th[data-key="count"]');
    const counts = (await page.locator('#lines-rows tr td:nth-child(4)').allTextContents()).map((t) => Number(t.replaceAll(',', '')));
    assert.deepEqual(counts, [...counts].sort((a, b) => b - a), 'sorted by count, descending');
    await page.locator('#lines-rows tr').first().click();
    const n = await poll(async () => (await viewerState(page)).highlighted, 'row highlight');
    const top = [...cli.rows].sort((a, b) => b.count - a.count)[0];
    assert.equal(n, top.count, 'the row\'s allocations are highlighted');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'webgl2-lines.png'), fullPage: true });
  });

  test('alive at a moment: the peak sums to the CLI\'s peak; a click on the timeline lists what lives there', TEST, async () => {
    const file = fixture('landmarks.pickle');
    assert.equal(await openWithInput(page, file), 'ready');
    await page.click('#tabs button[data-panel="live-panel"]');
    const peak = await page.evaluate(() => window.memviz.liveTable.show(-2));
    const cli = cliSummary(file).devices.find((d) => d.trace_entries > 0);
    assert.equal(peak.rows.reduce((a, r) => a + r.size, 0), cli.peak_live_bytes);
    // Click delta (landmarks, by hand: alive at t 7.5, 6 MiB, label b…+4MiB_1). Opening the
    // panel scrolled the page: bring the plot back first.
    await page.locator('#plot').scrollIntoViewIfNeeded();
    const p = LANDMARK_POINTS.delta;
    const at = await pagePoint(page, p.x, p.y);
    await page.mouse.click(at.x, at.y);
    await poll(async () => (await viewerState(page)).last_click_step === Math.floor(p.x), 'click step');
    const live = await page.evaluate(() => window.memviz.liveTable.show(-1));
    assert.equal(live.step, Math.floor(p.x));
    const delta = live.rows.find((r) => r.label === p.label);
    assert.ok(delta, `${p.label} is alive at ${live.step}: ${live.rows.map((r) => r.label)}`);
    assert.equal(delta.size, 6 * MiB);
    assert.equal(await page.locator('#live-rows tr').count(), live.rows.length);
    await page.mouse.click(at.x, at.y); // unpin
  });

  test('leak suspects equal `memviz leaks`; annotation phases are drawn and named on the timeline', TEST, async () => {
    assert.equal(await openDemo(page), 'ready');
    await page.click('#tabs button[data-panel="leaks-panel"]');
    const report = await page.evaluate(() => window.memviz.leaksPanel.load());
    const cli = cliJson('leaks', DEMO);
    assert.equal(report.settled_step, cli.settled_step);
    assert.deepEqual(report.suspects.map((x) => x.explanation), cli.suspects.map((x) => x.explanation));
    assert.equal(await page.locator('#leaks-list li').count(), Math.min(50, cli.suspects.length));
    // Each suspect shows its Python frames (the C++ allocator frames are the same for all), else
    // its whole stack, innermost first, at most 6.
    const pres = await page.locator('#leaks-list li pre').allTextContents();
    pres.forEach((text, i) => {
      const stack = cli.suspects[i].stack;
      const py = stack.filter((l) => /\.pyw?:\d+:/.test(l));
      assert.equal(text, (py.length > 0 ? py : stack).slice(0, 6).join('\n'), `suspect ${i}`);
    });
    // (The demo's training loop frees what it allocates: no suspect since the rule needs
    // repeated growth; xss.pickle in escaping.test.mjs and the CLI tests have real ones.)
    if (cli.suspects.length > 0) assert.ok(pres.some((t) => t.includes('.py:')), 'the demo\'s suspects have Python frames');
    const file = fixture('small/expandable.pickle');
    assert.equal(await openWithInput(page, file), 'ready');
    const st = await viewerState(page);
    assert.ok(st.phases > 0, 'expandable.pickle has external_annotations');
    const names = await poll(async () => {
      const n = await page.locator('#phase-labels span').allTextContents();
      return n.length > 0 ? n : null;
    }, 'phase labels');
    assert.ok(names.every((n) => n.length > 0), names.join(','));
    await page.screenshot({ path: path.join(SCREENSHOTS, 'webgl2-phases.png'), fullPage: true });
  });

  test('files side by side (per-file peak, final) and compare two snapshots equal `memviz summary` / `memviz diff`', TEST, async () => {
    const a = fixture('landmarks.pickle');
    assert.equal(await openWithInput(page, a), 'ready');
    assert.equal(await openDemo(page), 'ready');
    await page.click('#tabs button[data-panel="files-panel"]');
    const files = await page.evaluate(() => window.memviz.filesAndCompare.loadFiles());
    const ia = files.findLast((f) => f.name.startsWith('landmarks'));
    const ib = files[files.length - 1];
    for (const [f, path_] of [[ia, a], [ib, DEMO]]) {
      const cli = cliSummary(path_).devices.find((d) => d.device === f.device);
      assert.deepEqual([f.peak_live_bytes, f.final_live_bytes], [cli.peak_live_bytes, cli.final_live_bytes], f.name);
    }
    assert.equal(await page.locator('#files-rows tr').count(), files.length);
    // Jump into another file from the table.
    await page.locator('#files-rows tr').nth(ia.file).locator('button').click();
    await poll(async () => (await viewerState(page)).file === ia.file, 'jumped to landmarks');
    await page.click('#tabs button[data-panel="compare-panel"]');
    const same = await page.evaluate(([x]) => window.memviz.filesAndCompare.compare(x, x), [ib.file]);
    assert.deepEqual([same.group_count, same.segments_only_a, same.segments_only_b], [0, 0, 0], 'a file against itself');
    const r = await page.evaluate(([x, y]) => window.memviz.filesAndCompare.compare(x, y), [ia.file, ib.file]);
    const cli = cliJson('diff', a, DEMO);
    assert.equal(r.group_count, cli.groups.length);
    assert.deepEqual(r.groups.map((g) => [g.stack, g.bytes_a, g.bytes_b, g.count_a, g.count_b]),
      cli.groups.slice(0, 500).map((g) => [g.stack, g.bytes_a, g.bytes_b, g.count_a, g.count_b]));
    assert.equal(r.segments_only_a, cli.segments_only_a.length);
    assert.equal(r.segments_only_b, cli.segments_only_b.length);
    assert.equal(await page.locator('#compare-rows tr').count(), r.groups.length);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'webgl2-compare.png'), fullPage: true });
  });

  test('memory flamegraph: total at the peak equals `memviz folded`; hover names a frame; click zooms, the breadcrumb zooms out; lifetime mode', TEST, async () => {
    const vector = fixture('small/vector.pickle');
    assert.equal(await openWithInput(page, vector), 'ready');
    await page.evaluate(() => window.memviz.setView('flame'));
    let st = (await viewerState(page)).flame_view;
    assert.equal(st.total_bytes, 55, 'SEMANTICS §3.6: 55 bytes live at the peak');
    assert.equal(st.total_bytes, cliJson('folded', vector).total_bytes);
    await page.selectOption('#flame-at', 'lifetime');
    st = await poll(async () => { const x = (await viewerState(page)).flame_view; return x.lifetime ? x : null; }, 'lifetime');
    assert.equal(st.total_bytes, 396, 'Σ live bytes over the 9 timesteps of §3.6');
    await page.selectOption('#flame-at', 'peak');
    assert.equal(await openDemo(page), 'ready');
    await page.evaluate(() => window.memviz.setView('flame'));
    const info = await page.evaluate(() => window.memviz.flameControls.refresh());
    const folded = cliJson('folded', DEMO);
    assert.equal(info.state.total_bytes, folded.total_bytes);
    assert.ok(info.labels.length > 0, 'wide frames are named');
    assert.ok(await page.locator('#flame-labels span').count() > 0);
    await page.locator('#plot').scrollIntoViewIfNeeded();
    const box = await page.locator('#plot').boundingBox();
    const c = (await page.evaluate(() => window.memviz.view({ method: 'flame_node_center', node: 1 }))).result;
    await page.mouse.move(box.x + c[0], box.y + c[1]);
    await page.waitForFunction(() => !document.getElementById('tooltip').hidden);
    const tip = await page.evaluate(() => window.memviz.tooltip());
    assert.equal(tip.node, 1);
    const box2 = await page.locator('#plot').boundingBox();
    assert.equal(box2.y, box.y, 'the canvas does not move while the flamegraph updates');
    await page.mouse.click(box.x + c[0], box.y + c[1]);
    await poll(async () => (await viewerState(page)).flame_view.zoom_path.length === 2, 'zoomed in');
    await page.evaluate(() => window.memviz.flameControls.refresh());
    assert.equal(await page.locator('#flame-breadcrumb button').count(), 2);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'webgl2-flame-zoomed.png'), fullPage: true });
    // The zoomed-in breadcrumb (2 chips, the "all" one enabled) stays the same element while
    // frames are drawn, so the click reaches it.
    const all = page.locator('#flame-breadcrumb button').first();
    await poll(async () => (await page.locator('#flame-breadcrumb button').count()) === 2 && await all.isEnabled(), 'the breadcrumb\'s "all" chip');
    await all.click();
    await poll(async () => (await viewerState(page)).flame_view.zoom_path.length === 1, 'zoomed out');
    await page.mouse.move(1, 1);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'webgl2-flame.png'), fullPage: true });
    await page.evaluate(() => window.memviz.setView('active'));
  });

  test('flamegraph: a search marks the matching frames (bytes from `memviz folded`); phases are time ranges (`memviz folded --phase`); the diff flamegraph equals `memviz diff --folded`', TEST, async () => {
    assert.equal(await openDemo(page), 'ready');
    await page.evaluate(() => window.memviz.setView('flame'));
    assert.equal(await page.locator('#search-box').isVisible(), true, 'search works in the flamegraph');
    const folded = cliJson('folded', DEMO);
    const total = folded.total_bytes;
    // A user frame on some of the peak's stacks: the expected matched bytes are the stacks through it.
    const through = (f) => folded.stacks.filter((x) => x.frames.includes(f)).reduce((a, x) => a + x.bytes, 0);
    const frame = folded.stacks.flatMap((x) => x.frames)
      .find((f) => f.includes('/proj/model.py:') && through(f) > 0 && through(f) < total / 2);
    assert.ok(frame, 'a selective model.py frame');
    await page.locator('#plot').scrollIntoViewIfNeeded();
    const before = await flameShot(page, 'webgl2-flame-before-search.png');
    await page.fill('#search-input', frame);
    await page.press('#search-input', 'Enter');
    const st = await poll(async () => {
      const x = (await viewerState(page)).flame_view;
      return x.matched !== null ? x : null;
    }, 'matches marked');
    assert.equal(st.matched, through(frame));
    assert.equal(st.total_bytes, total, 'the tree is unchanged');
    await page.evaluate(() => window.memviz.flameControls.refresh());
    assert.match(await page.locator('#flame-status').textContent(), /search matches/);
    const after = await flameShot(page, 'webgl2-flame-search.png');
    const grey = (img) => { let n = 0; for (let o = 0; o < img.pixels.length; o += 4) if (img.pixels[o] === 226 && img.pixels[o + 1] === 226 && img.pixels[o + 2] === 226) n += 1; return n; };
    assert.ok(grey(after) > grey(before) + 1000, `unmatched frames turn faint: ${grey(before)} → ${grey(after)} grey px`);
    // Only matches: the flamegraph of the matches alone.
    await page.check('#search-only');
    const only = await poll(async () => {
      const x = (await viewerState(page)).flame_view;
      return x.only_matches === true && x.total_bytes === through(frame) ? x : null;
    }, 'only matches');
    assert.equal(only.matched, through(frame));
    await page.uncheck('#search-only');
    await page.fill('#search-input', '');
    await page.press('#search-input', 'Enter');
    await poll(async () => (await viewerState(page)).flame_view.matched === null, 'cleared');
    // Phases as time ranges: expandable.pickle's first phase, against the CLI.
    const exp = fixture('small/expandable.pickle');
    assert.equal(await openWithInput(page, exp), 'ready');
    await page.evaluate(() => window.memviz.setView('flame'));
    const options = await page.locator('#flame-at option').evaluateAll((os) => os.map((o) => [o.value, o.textContent]));
    const phaseOpt = options.find(([v]) => v.startsWith('phase:'));
    assert.ok(phaseOpt, `a phase choice: ${JSON.stringify(options)}`);
    await page.selectOption('#flame-at', phaseOpt[0]);
    const ph = await poll(async () => { const x = (await viewerState(page)).flame_view; return x.step_range ? x : null; }, 'phase range');
    const name = phaseOpt[1].replace(/^phase /, '').replace(/ \(bytes × lifetime within it\)$/, '');
    const cliPhase = cliJson('folded', exp, '--phase', name);
    assert.deepEqual(ph.step_range, cliPhase.step_range);
    assert.equal(ph.total_bytes, cliPhase.total_bytes);
    await page.selectOption('#flame-at', 'peak');
    // The diff flamegraph of two opened files, from the compare panel.
    const a = fixture('landmarks.pickle');
    assert.equal(await openWithInput(page, a), 'ready');
    assert.equal(await openDemo(page), 'ready');
    // Open the panel (an earlier test may have left it open: a click on its summary would close it).
    await page.evaluate(() => { document.getElementById('compare-panel').open = true; });
    const files = await page.evaluate(() => window.memviz.filesAndCompare.loadFiles());
    const ia = files.findLast((f) => f.name.startsWith('landmarks'));
    const ib = files[files.length - 1];
    await page.locator('#compare-a').scrollIntoViewIfNeeded();
    await page.selectOption('#compare-a', String(ia.file));
    await page.selectOption('#compare-b', String(ib.file));
    await page.click('#compare-flame');
    const d = await poll(async () => { const x = (await viewerState(page)).flame_view; return x && x.diff ? x : null; }, 'diff flamegraph');
    const lines = cliText('diff', a, DEMO, '--folded').trim().split('\n');
    const sums = lines.reduce(([x, y], l) => { const p = l.split(' '); return [x + Number(p[p.length - 2]), y + Number(p[p.length - 1])]; }, [0, 0]);
    assert.deepEqual([d.diff.a_total, d.diff.b_total], sums);
    assert.equal(d.total_bytes, lines.reduce((t, l) => { const p = l.split(' '); return t + Math.max(Number(p[p.length - 2]), Number(p[p.length - 1])); }, 0));
    // The page names the choice one drawn frame after the viewer's state shows the diff.
    await poll(async () => (await page.locator('#flame-at').inputValue()) === 'diff', 'the diff choice in #flame-at');
    await page.evaluate(() => window.memviz.flameControls.refresh());
    assert.match(await page.locator('#flame-status').textContent(), /^A .* → B /);
    const img = await flameShot(page, 'webgl2-flame-diff.png');
    const stats = colourStats(img);
    const reds = [...stats.colours.keys()].filter((k) => { const [r, g, bl] = k.split(',').map(Number); return r > 180 && bl < 150 && r - bl > 60; });
    assert.ok(reds.length > 0, 'red (growth) is drawn');
    await page.selectOption('#flame-at', 'peak');
    await poll(async () => (await viewerState(page)).flame_view.diff === null, 'back to a moment');
    await page.evaluate(() => window.memviz.setView('active'));
  });

  test('flamegraph: reserved memory at the end (by segment and state) equals `memviz segments`; free space and gaps are grey', TEST, async () => {
    assert.equal(await openDemo(page), 'ready');
    await page.evaluate(() => window.memviz.setView('flame'));
    const device = (await viewerState(page)).device;
    const lines = cliText('segments', DEMO, '--device', String(device)).trim().split('\n');
    const total = lines.reduce((t, l) => t + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    await page.selectOption('#flame-at', 'reserved');
    const st = await poll(async () => { const x = (await viewerState(page)).flame_view; return x && x.total_bytes === total ? x : null; }, 'reserved tree');
    assert.equal(st.lifetime, false);
    const info = await page.evaluate(() => window.memviz.flameControls.refresh());
    assert.ok(info.labels.some((l) => l.text.startsWith('stream_')), 'the first level is the stream');
    await page.locator('#plot').scrollIntoViewIfNeeded();
    const img = await flameShot(page, 'webgl2-flame-reserved.png');
    let grey = 0;
    for (let o = 0; o < img.pixels.length; o += 4) if (img.pixels[o] === 176 && img.pixels[o + 1] === 180 && img.pixels[o + 2] === 186) grey += 1;
    if (lines.some((l) => / [0-9]+$/.test(l) && /;(<free>|<gaps>) /.test(l))) assert.ok(grey > 0, 'free space and gaps are drawn grey');
    await page.selectOption('#flame-at', 'peak');
    await poll(async () => (await viewerState(page)).flame_view.total_bytes === cliJson('folded', DEMO).total_bytes, 'back to the peak');
    await page.evaluate(() => window.memviz.setView('active'));
  });

  test('no request left dist/, no page errors', () => {
    assert.deepEqual(b.badRequests, []);
    assert.deepEqual(b.pageErrors, []);
  });
});

describe('share and embed: ?url=, deep links, the embedding protocol, CSP (WebGL2)', () => {
  /** A second server on another origin: `/cors/NAME` sends Access-Control-Allow-Origin: *, `/plain/NAME` does not. */
  let other;
  let otherUrl;
  before(async () => {
    const http = await import('node:http');
    other = http.createServer((req, res) => {
      const url = new URL(req.url, 'http://localhost');
      const [, kind, name] = url.pathname.split('/');
      const file = path.join(FIXTURES, path.basename(name || ''));
      if (!['cors', 'plain'].includes(kind) || !fs.existsSync(file)) {
        res.writeHead(404).end();
        return;
      }
      const headers = { 'content-type': 'application/octet-stream' };
      if (kind === 'cors') headers['access-control-allow-origin'] = '*';
      res.writeHead(200, headers);
      fs.createReadStream(file).pipe(res);
    });
    await new Promise((resolve) => other.listen(0, '127.0.0.1', resolve));
    otherUrl = `http://127.0.0.1:${other.address().port}`;
  });
  after(async () => {
    if (other) await new Promise((resolve) => other.close(resolve));
  });

  /** Opens the page at `query` in a fresh browser; every request URL is recorded. */
  async function start(query) {
    const b = await launch([], query);
    return b;
  }

  test('?url= opens a same-origin file with progress; 404, CORS and not-a-snapshot errors say what happened; no request leaves the origin', TEST, async () => {
    const b = await start('?backend=webgl2&url=assets/demo.pickle');
    const requests = [];
    try {
      b.page.on('request', (r) => requests.push(r.url()));
      const state = await poll(async () => {
        const s = await bodyState(b.page);
        return s === 'ready' || s === 'error' ? s : null;
      }, '?url= load');
      assert.equal(state, 'ready');
      const summary = JSON.parse(await b.page.locator('#summary-json').textContent());
      assert.deepEqual(summary, cliSummary(DEMO));
      // The same page, other URLs through the API (as ?url= does).
      const open = (u) => b.page.evaluate((x) => window.memviz.open(x), u);
      let r = await open('assets/no-such-file.pickle');
      assert.equal(r.state, 'error');
      assert.match(r.message, /404/);
      assert.match(r.message, /no file at that address/);
      assert.equal(await b.page.locator('#error[role="alert"]').isVisible(), true);
      r = await open(`${otherUrl}/plain/landmarks.pickle`);
      assert.equal(r.state, 'error');
      assert.match(r.message, /Access-Control-Allow-Origin/);
      r = await open('js/main.js');
      assert.equal(r.state, 'error');
      assert.match(r.message, /not a pickle|not a snapshot|text/i);
      // A CORS-enabled server on another origin works (the worker fetches it).
      r = await open(`${otherUrl}/cors/landmarks.pickle`);
      assert.equal(r.state, 'ready', r.message);
      // Only the two servers were asked for anything; after load, nothing left the page's origin.
      const origin = new URL(baseUrl).origin;
      const foreign = requests.filter((u) => !u.startsWith(origin) && !u.startsWith(otherUrl) && !/^(blob|data):/.test(u));
      assert.deepEqual(foreign, []);
      const csp = await b.page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
      assert.match(csp, /connect-src 'self' blob: data:/);
      assert.doesNotMatch(await b.page.content(), /<script type="module">\s*import init/, 'no inline loader script');
      assert.deepEqual(b.pageErrors.filter((e) => !/404|Failed to fetch|Access-Control|ERR_FAILED/.test(e)), []);
    } finally {
      await b.close();
    }
  });

  test('deep links: the hash holds view, window, selection and search; reloading with the same file restores them; back/forward; copy link', TEST, async () => {
    const b = await start('?backend=webgl2');
    try {
      const { page } = b;
      const file = fixture('landmarks.pickle');
      assert.equal(await openWithInput(page, file), 'ready');
      await page.evaluate(() => window.memviz.view({ method: 'set_x_window', x0: 1, x1: 8 }));
      // Pin delta (landmarks, by hand), then search.
      await page.locator('#plot').scrollIntoViewIfNeeded();
      const p = LANDMARK_POINTS.delta;
      const at = await pagePoint(page, p.x, p.y);
      await page.mouse.click(at.x, at.y);
      await poll(async () => (await viewerState(page)).pinned === p.element, 'pinned');
      await page.fill('#search-input', 'delta');
      await page.press('#search-input', 'Enter');
      await poll(async () => (await viewerState(page)).highlighted !== null, 'search');
      const hash = await page.evaluate(() => window.memviz.links.write());
      const before = await viewerState(page);
      assert.match(hash, /view=active/);
      assert.match(hash, /pin=3/);
      assert.match(hash, /q=delta/);
      assert.equal(await page.evaluate(() => location.hash), hash);
      // Copy link.
      await page.click('#copy-link');
      await poll(async () => (await page.evaluate(() => window.memviz.lastCopied)) === await page.evaluate(() => location.href), 'copied');
      // Reload: the same URL; open the same file; the view comes back.
      await page.reload();
      await page.waitForFunction(() => window.memviz !== undefined && document.body.dataset.memvizBackend !== undefined);
      assert.equal(await openWithInput(page, file), 'ready');
      const after = await poll(async () => {
        const s = await viewerState(page);
        return s.pinned === p.element && s.highlighted !== null ? s : null;
      }, 'restored');
      for (const k of ['x_range', 'y_range']) {
        for (let i = 0; i < 2; i += 1) assert.ok(Math.abs(after[k][i] - before[k][i]) <= 1e-6 * Math.max(1, Math.abs(before[k][i])), `${k}: ${after[k]} vs ${before[k]}`);
      }
      assert.equal(await page.inputValue('#search-input'), 'delta');
      assert.equal(after.highlighted, before.highlighted);
      assert.equal(await page.evaluate(() => window.memviz.tooltip() && window.memviz.tooltip().pinned), true);
      // Back/forward: a new view is a new history entry.
      await page.evaluate(() => window.memviz.setView('segments'));
      await poll(async () => /view=segments/.test(await page.evaluate(() => location.hash)), 'hash follows the view');
      await page.goBack();
      await poll(async () => (await viewerState(page)).view === 'active', 'back to the active view');
      await poll(async () => (await viewerState(page)).pinned === p.element, 'the pin is back');
      await page.goForward();
      await poll(async () => (await viewerState(page)).view === 'segments', `forward to segments (${await page.evaluate(() => location.hash)})`);
      // A hash for the state view selects its event.
      await page.evaluate(() => window.memviz.setView('state'));
      await page.evaluate(() => window.memviz.stateHistory.select(2));
      // A restore from the forward step may still be running: write() answers null until it ends.
      const h2 = await poll(() => page.evaluate(() => window.memviz.links.write()), 'the state view\'s hash');
      assert.match(h2, /view=state/);
      assert.match(h2, /event=2/);
      // Malformed hashes are ignored, never an error.
      await page.evaluate(() => window.memviz.links.restore('#view=<script>&x=1,&pin=abc&q=' + 'z'.repeat(10)));
      assert.deepEqual(b.pageErrors, []);
    } finally {
      await b.close();
    }
  });

  test('embedding: www/examples/embed.html pings, sends a buffer and gets `loaded`; bad messages are refused; the embedded page hides its chrome', TEST, async () => {
    const b = await launch([], 'examples/embed.html?snapshot=../assets/demo.pickle', false);
    try {
      const { page } = b;
      const got = await poll(async () => {
        const r = await page.evaluate(() => window.received);
        return r.find((m) => m.type === 'loaded' || m.type === 'error') ? r : null;
      }, 'loaded');
      assert.ok(got.some((m) => m.type === 'ready'), 'answered the ping');
      const loaded = got.find((m) => m.type === 'loaded');
      assert.ok(loaded, JSON.stringify(got));
      assert.equal(loaded.title, 'demo.pickle');
      assert.equal(loaded.view, 'active');
      assert.deepEqual(loaded.summary, cliSummary(DEMO));
      const frame = page.frameLocator('#viewer');
      assert.equal(await frame.locator('body').getAttribute('data-mode'), 'embedded');
      assert.equal(await frame.locator('header').isVisible(), false);
      assert.equal(await frame.locator('#open-controls').isVisible(), false);
      assert.equal(await frame.locator('#plot').isVisible(), true);
      // Bad messages: unknown keys, a wrong type, a bad view; each gets an error reply, nothing breaks.
      const replies = await page.evaluate(async () => {
        const w = document.getElementById('viewer').contentWindow;
        const before = window.received.length;
        w.postMessage({ memviz: { buffer: 'not a buffer' } }, '*');
        w.postMessage({ memviz: { view: 'nope' } }, '*');
        w.postMessage({ memviz: { url: 'x', evil: 'alert(1)' } }, '*');
        w.postMessage({ memviz: { view: 'flame', device: 0 } }, '*');
        await new Promise((r) => setTimeout(r, 1500));
        return window.received.slice(before);
      });
      const errors = replies.filter((m) => m.type === 'error').map((m) => m.message);
      assert.equal(errors.length, 3, JSON.stringify(replies));
      assert.match(errors[0], /buffer must be/);
      assert.match(errors[1], /view must be one of/);
      assert.match(errors[2], /unknown keys: evil/);
      assert.ok(replies.some((m) => m.type === 'applied' && m.view === 'flame'), JSON.stringify(replies));
      // A pinned tooltip is reported as a selection.
      await page.evaluate(() => document.getElementById('viewer').contentWindow.postMessage({ memviz: { view: 'active' } }, '*'));
      const inner = page.frames().find((f) => f.url().includes('mode=embedded'));
      await poll(async () => (await inner.evaluate(() => window.memviz.state())).view === 'active', 'active again');
      await inner.evaluate(() => window.memviz.pin(0));
      await poll(async () => (await page.evaluate(() => window.received)).some((m) => m.type === 'selection' && m.selection), 'selection reported');
      await page.screenshot({ path: path.join(SCREENSHOTS, 'webgl2-embed.png'), fullPage: true });
      assert.deepEqual(b.pageErrors, []);
    } finally {
      await b.close();
    }
  });
});

// ----- hostile and broken files --------------------------------------------------------------

describe('hostile and broken files (WebGL2)', () => {
  /** @type {Awaited<ReturnType<typeof launch>>} */
  let b;
  let page;
  const shot = (name) => `webgl2-broken-${name}.png`;
  const GOOD = () => fixture('landmarks.pickle');
  const HOSTILE_NAME = `${HOSTILE_IMG}.pickle`;
  const python = (out, script) => {
    const r = spawnSync('python3', ['-c', script, out], { encoding: 'utf8' });
    assert.equal(r.status, 0, `python3 for ${out}: ${r.stderr}`);
    return fs.readFileSync(out);
  };
  const files = {};

  before(async () => {
    const demo = fs.readFileSync(DEMO);
    files.cutEarly = demo.subarray(0, 300);
    // 40 % of the demo: every segment and part of the trace.
    files.cutMid = demo.subarray(0, Math.floor(demo.length * 0.4));
    fs.writeFileSync(fixture('demo-cut-40.pickle'), files.cutMid);
    files.zip = python(fixture('model.pt'), 'import zipfile, sys\n'
      + "with zipfile.ZipFile(sys.argv[1], 'w') as z:\n"
      + "    z.writestr('archive/data.pkl', b'\\x80\\x02}q\\x00.')\n"
      + "    z.writestr('archive/version', '3')\n");
    for (const proto of [2, 4]) {
      files[`checkpoint${proto}`] = python(fixture(`state_dict_p${proto}.pkl`), 'import pickle, sys, collections\n'
        + "sd = collections.OrderedDict([('layer.weight', [1.0, 2.0]), ('layer.bias', [0.5])])\n"
        + `pickle.dump({'model': sd, 'epoch': 3}, open(sys.argv[1], 'wb'), protocol=${proto})\n`);
    }
    files.metrics = python(fixture('metrics.pkl'),
      "import pickle, sys; pickle.dump({'loss': [0.5, 0.25], 'step': 10}, open(sys.argv[1], 'wb'), protocol=4)");
    const gz = zlib.gzipSync(demo, { level: 9 });
    files.corruptGz = Buffer.from(gz);
    for (let i = 100; i < files.corruptGz.length; i += 97) files.corruptGz[i] ^= 0xa5;
    b = await launch([], '?backend=webgl2');
    page = b.page;
    await page.evaluate(() => {
      window.__progressLog = [];
      new MutationObserver(() => window.__progressLog.push(document.getElementById('progress').textContent))
        .observe(document.getElementById('progress'), { childList: true, characterData: true, subtree: true });
    });
  });
  after(async () => {
    if (b) await b.close();
  });

  /** Opens a bad file: error state, a visible alert naming the file (as text) with `pattern`; then a good file opens. */
  async function assertRefused(name, buffer, pattern, label) {
    const state = await openWithInput(page, { name, mimeType: 'application/octet-stream', buffer });
    assert.equal(state, 'error', `${label}: state`);
    const alert = page.getByRole('alert');
    await alert.waitFor({ state: 'visible' });
    const text = await alert.textContent();
    assert.ok(text.startsWith(`Could not open "${name}": `), `${label}: names the file as text: ${text}`);
    assert.match(text, pattern, label);
    assert.equal(await page.locator('#error .error-text *').count(), 0, `${label}: no markup in the alert`);
    assert.equal(await page.locator('#loading').isVisible(), false, `${label}: loading hidden`);
    assert.equal(await page.locator('#notice').isVisible(), false, `${label}: no notice with an error`);
    await page.screenshot({ path: path.join(SCREENSHOTS, shot(label)) });
    // The page is still usable: the next good file opens and clears the alert.
    assert.equal(await openWithInput(page, GOOD()), 'ready', `${label}: a good file opens after it`);
    assert.equal(await page.locator('#error').isVisible(), false, `${label}: the alert is gone`);
    return text;
  }

  test('empty, cut before anything whole, PNG, JSON that is no snapshot, text: each named in the alert; a good file opens after each', TEST, async () => {
    await assertRefused('empty.pickle', Buffer.alloc(0), /the file is empty \(0 bytes\)/, 'empty');
    const cut = await assertRefused(HOSTILE_NAME, files.cutEarly,
      /at byte \d+: the file ends in the middle of a \w+ opcode.*truncated.*no whole segment or trace event was read before the cut, so there is nothing to show/,
      'cut-early');
    assert.match(cut, /another file/, 'says what to do');
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    await assertRefused('plot.png', Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), /this file is a PNG image, not a memory snapshot/, 'png');
    await assertRefused('metrics.json', Buffer.from('{"loss": 1, "step": 2}'), /valid JSON, but not a memory snapshot: expected a dict with the keys 'segments' and 'device_traces', found the keys 'loss', 'step'/, 'json');
    await assertRefused('notes.txt', Buffer.from('memory notes: the run used 40 GB at step 12\n'), /this file is a text file, not a pickle/, 'text');
  });

  test('a torch.save zip, checkpoint pickles (GLOBAL, STACK_GLOBAL), a pickle that is not a snapshot, corrupt gzip', TEST, async () => {
    await assertRefused('model.pt', files.zip, /in the zip archive's archive\/data\.pkl: .*not a memory snapshot/, 'zip');
    await assertRefused('state_dict_p2.pkl', files.checkpoint2,
      /at byte \d+: GLOBAL opcode refers to the Python object `collections\.OrderedDict`.*This is a model checkpoint \(torch\.save\), not a memory snapshot/, 'global');
    await assertRefused('state_dict_p4.pkl', files.checkpoint4,
      /STACK_GLOBAL opcode .*This is a model checkpoint \(torch\.save\), not a memory snapshot/, 'stack-global');
    await assertRefused('metrics.pkl', files.metrics,
      /a valid pickle, but not a memory snapshot: expected a dict with the keys 'segments' and 'device_traces', found the keys 'loss', 'step'/, 'not-snapshot');
    await assertRefused('corrupt.pickle.gz', files.corruptGz, /the gzip data is corrupt/, 'corrupt-gzip');
  });

  test('a snapshot cut mid-trace opens (ready) with a visible notice, as the CLI reads it; the notice follows the file shown', TEST, async () => {
    const name = `cut ${HOSTILE_B}.pickle`;
    const state = await openWithInput(page, { name, mimeType: 'application/octet-stream', buffer: files.cutMid });
    assert.equal(state, 'ready');
    assert.equal(await page.locator('#error').isVisible(), false, 'not an error');
    const notice = page.getByRole('status').filter({ hasText: 'incomplete' });
    await notice.waitFor({ state: 'visible' });
    const text = await notice.textContent();
    assert.ok(text.startsWith(`${name}: this file is incomplete (truncated): the pickle ends after `), text);
    assert.match(text, new RegExp(`of ${files.cutMid.length} bytes without its STOP opcode`));
    assert.match(text, /showing the \d+ segments and the \d+ trace events read before the cut/);
    assert.equal(await page.locator('#notice *').count(), 0, 'the notice is text');
    const summary = await summaryJson(page);
    assert.deepEqual(summary, cliSummary(fixture('demo-cut-40.pickle')), 'the same partial snapshot as `memviz summary`');
    const whole = cliSummary(DEMO);
    assert.ok(summary.devices[0].trace_entries > 0 && summary.devices[0].trace_entries < whole.devices[0].trace_entries);
    assert.match(summary.warnings[0], /^truncated file:/);
    await assertDrawn(page, shot('cut-plot'));
    await page.screenshot({ path: path.join(SCREENSHOTS, shot('cut-notice')) });
    // Another file: no notice; back to the cut one: the notice again.
    assert.equal(await openWithInput(page, GOOD()), 'ready');
    assert.equal(await page.locator('#notice').isVisible(), false);
    const names = await fileOptions(page);
    await page.selectOption('#file-select', String(names.indexOf(name)));
    await notice.waitFor({ state: 'visible' });
    assert.equal(await notice.textContent(), text);
    assert.equal(await bodyState(page), 'ready');
  });

  test('every hostile class of tests/fixtures/bounds.py opens or is refused with an alert naming it; the page stays usable; the demo opens after them', { timeout: 600_000 }, async () => {
    const dir = fixture('bounds');
    fs.mkdirSync(dir, { recursive: true });
    const r = spawnSync('python3', [path.join(ROOT, 'tests/fixtures/bounds.py'), 'all', dir], { encoding: 'utf8' });
    assert.equal(r.status, 0, `bounds.py all: ${r.stderr}`);
    const classes = r.stdout.trim().split('\n').map((l) => l.split('\t'));
    assert.ok(classes.length >= 15, r.stdout);
    const outcomes = {};
    for (const [cls, file] of classes) {
      const name = path.basename(file);
      const state = await openWithInput(page, file);
      assert.ok(state === 'ready' || state === 'error', `${cls}: settles (${state})`);
      if (state === 'error') {
        const alert = page.getByRole('alert');
        await alert.waitFor({ state: 'visible' });
        const text = await alert.textContent();
        assert.ok(text.includes(`"${name}"`), `${cls}: the alert names the file: ${text}`);
        assert.equal(await page.locator('#error .error-text *').count(), 0, `${cls}: no markup in the alert`);
        outcomes[cls] = text;
      } else {
        outcomes[cls] = 'ready';
      }
      // The page is still usable: a good file opens (in the same or a restarted worker).
      assert.equal(await openWithInput(page, GOOD()), 'ready', `${cls}: a good file opens after it`);
    }
    // Refused, as the CLI refuses them: not a snapshot, or expanding past the budget.
    assert.match(outcomes['non-segment-list'], /segment/, 'the list of dicts that are not segments');
    assert.equal(outcomes['multi-member-gzip'], 'ready', 'a two-member gzip opens');
    assert.equal(outcomes['gzip-json'], 'ready', 'gzipped JSON opens (issue 28)');
    await page.screenshot({ path: path.join(SCREENSHOTS, shot('bounds-last')) });
    assert.equal(await openDemo(page), 'ready', 'the demo opens in the same tab');
    assert.deepEqual(await summaryJson(page), cliSummary(DEMO));
    await assertDrawn(page, shot('bounds-then-demo'));
  });

  test('no page errors, no request outside dist/', () => {
    assert.deepEqual(b.badRequests, []);
    assert.deepEqual(b.pageErrors, []);
  });
});

// ----- memory: no refusal by size, files that cannot fit, a worker that dies ----------------

describe('memory (WebGL2): a file over 1 GiB opens; what cannot fit says so; a dead worker is replaced', () => {
  // `?mem_budget_mb=N` lowers the budget files and views are checked against; `?mem_limit_mb=N`
  // makes an allocation past N MiB fail, as a real out-of-memory does.
  const GOOD = () => fixture('landmarks.pickle');
  const BIG_MB = 1150;

  test('a generated snapshot over the old 1 GiB limit opens and is drawn', { timeout: 600_000 }, async () => {
    const big = fixture(`tile${BIG_MB}.pickle`);
    if (!fs.existsSync(big)) generate(big, 'tile', '--mb', String(BIG_MB), big);
    const bytes = fs.statSync(big).size;
    assert.ok(bytes > 1024 * MiB, `over 1 GiB: ${bytes}`);
    const b = await launch([], '?backend=webgl2');
    try {
      const r = await openApi(b.page, big);
      assert.equal(r.state, 'ready', JSON.stringify(r).slice(0, 2000));
      const summary = JSON.parse(r.json);
      assert.ok(summary.devices[0].trace_entries > 10_000_000, `${summary.devices[0].trace_entries} entries`);
      await assertDrawn(b.page, 'webgl2-over-1gib.png');
      const timings = await b.page.evaluate(() => window.memviz.lastOpen);
      const stats = await b.page.evaluate(() => window.memviz.stats());
      console.log(`# ${BIG_MB} MB: first frame ${Math.round(timings.firstFrameMs)} ms, wasm memory ${stats.wasmMemoryBytes}, heap ${stats.heapBytes}`);
      assert.deepEqual(b.pageErrors, []);
    } finally {
      await b.close();
      fs.rmSync(big, { force: true });
    }
  });

  test('a file projected past the memory it may use is refused while reading, with its estimate and the CLI', TEST, async () => {
    // The progress test's file (about 1 M trace entries): its projection is well past 32 MiB.
    const file = fixture(`large${LARGE_MB}.pickle`);
    if (!fs.existsSync(file)) generate(file, 'large', '--mb', String(LARGE_MB), file);
    const b = await launch([], '?backend=webgl2&mem_budget_mb=32');
    try {
      const { page } = b;
      assert.equal(await openWithInput(page, GOOD()), 'ready');
      const state = await openWithInput(page, file);
      assert.equal(state, 'error');
      const text = await page.getByRole('alert').textContent();
      assert.match(text, /^Could not open "large\d+\.pickle": this snapshot needs about [\d.]+[KMG]iB of memory to open here \(estimated from the first [\d.]+MiB read\), more than the 32\.0MiB a browser tab gives this page.*`memviz summary FILE`/, text);
      assert.doesNotMatch(text, /Check that it is a snapshot/, 'no advice that does not apply');
      assert.equal(await page.evaluate(() => window.memviz.restarts), 0, 'refused, not crashed');
      // The file already open is still there and the page still opens files.
      assert.deepEqual(await fileOptions(page), ['landmarks.pickle']);
      assert.equal(await openDemo(page), 'ready');
      assert.deepEqual(b.pageErrors, []);
    } finally {
      await b.close();
    }
  });

  test('a worker that runs out of memory is replaced: an alert names the file, the files open before come back, the demo opens', TEST, async () => {
    // Its model (parsed with fallible reservations: a parse past the limit is an error, not a
    // trap; at 40 MiB it is) fits in the 64 MiB every allocation is held to; its timeline and
    // layout (infallible, as every view's) do not (at 60 and 70 MiB the worker died laying out;
    // at 85 MiB the file opened), while the estimate (made against the real 4 GiB budget) lets
    // it start.
    const file = fixture(`large${LARGE_MB}.pickle`);
    if (!fs.existsSync(file)) generate(file, 'large', '--mb', String(LARGE_MB), file);
    const b = await launch([], '?backend=webgl2&mem_limit_mb=64');
    try {
      const { page } = b;
      assert.equal(await openWithInput(page, GOOD()), 'ready');
      await watchState(page);
      await page.setInputFiles('#file-input', file);
      await page.waitForFunction(() => window.memviz.restarts === 1, null, { timeout: TIMEOUT_MS });
      const alert = page.getByRole('alert');
      await alert.waitFor({ state: 'visible' });
      const text = await alert.textContent();
      assert.match(text, /^The viewer ran out of memory while (reading|building the model of|laying out the timeline of|drawing) "large\d+\.pickle" \(the browser gives this page at most 4 GiB\), and was restarted\. The native command line has no such limit: `memviz summary FILE`/, text);
      assert.equal(await page.locator('#error .error-text *').count(), 0, 'no markup in the alert');
      // The file open before comes back in the new worker; the alert stays up meanwhile.
      await page.waitForFunction(() => document.body.dataset.memvizState === 'error'
        && [...document.querySelectorAll('#file-select option')].map((o) => o.textContent).join() === 'landmarks.pickle'
        && !document.getElementById('viewer').hidden, null, { timeout: TIMEOUT_MS });
      assert.equal(await page.locator('#error').isVisible(), true, 'the alert is still shown');
      await page.screenshot({ path: path.join(SCREENSHOTS, 'webgl2-worker-restarted.png') });
      assert.equal(await openDemo(page), 'ready', 'the demo opens in the same tab');
      assert.equal(await page.locator('#error').isVisible(), false, 'the alert is gone');
      assert.deepEqual(await fileOptions(page), ['landmarks.pickle', 'demo.pickle']);
      assert.deepEqual(await summaryJson(page), cliSummary(DEMO));
      await assertDrawn(page, 'webgl2-after-restart.png');
    } finally {
      await b.close();
    }
  });
});
