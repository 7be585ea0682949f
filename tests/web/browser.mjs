// browser.mjs: what the Chromium test files share (page, report, escaping, sites, defects, …):
// the paths, the headless flags, a persistent Chromium that is always ended, the fixture
// generator, polling, and the test files' set-up (serving dist/, a Chromium per describe block,
// loading the viewer, opening a file, elements' rectangles).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serveDist } from './serve_dist.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The built page: dist/, or `MEMVIZ_DIST` (a second build beside it, e.g. while dist/ is rebuilt). */
export const DIST = process.env.MEMVIZ_DIST ? path.resolve(process.env.MEMVIZ_DIST) : path.join(ROOT, 'dist');
export // `cargo xtask test` runs its tests' own build (MEMVIZ_CLI=target/ci/memviz); by hand, the
// release build.
const CLI = process.env.MEMVIZ_CLI
  ? path.resolve(process.env.MEMVIZ_CLI)
  : path.join(ROOT, 'target/release/memviz');
export const GENERATE = path.join(ROOT, 'tests/fixtures/generate.py');
export const SCREENSHOTS = path.join(ROOT, 'target/screenshots');
export const TIMEOUT_MS = 60_000;
/** WebGPU on SwiftShader: these flags only work together (../shared/docs/TOOLCHAIN.md). */
export const WEBGPU_ARGS = [
  '--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-vulkan=swiftshader',
  '--use-angle=swiftshader', '--enable-unsafe-swiftshader',
];
/** The two drawing backends the page tests run on: the page query and Chromium's flags. */
export const BACKENDS = [
  { name: 'webgl2', query: '?backend=webgl2', args: [] },
  { name: 'webgpu', query: '?backend=webgpu', args: WEBGPU_ARGS },
];
export const CHROMIUM_ARGS = [
  '--headless=new', '--no-sandbox', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--disable-quic',
];

/** Runs generate.py unless `out` is newer than generate.py. */
export function generate(out, ...args) {
  if (fs.existsSync(out) && fs.statSync(out).mtimeMs >= fs.statSync(GENERATE).mtimeMs) return;
  const r = spawnSync('python3', [GENERATE, ...args], { encoding: 'utf8' });
  assert.equal(r.status, 0, `generate.py ${args.join(' ')}: ${r.stderr}`);
}

/** Throws unless `cargo xtask test`'s build steps ran: dist/ with its demo, and the release CLI. */
export function requireBuilt() {
  if (!fs.existsSync(path.join(DIST, 'index.html')) || !fs.existsSync(path.join(DIST, 'assets/demo.pickle'))) {
    throw new Error('dist/ is missing or incomplete: run `trunk --config trunk.toml build --release --offline` first (cargo xtask test does)');
  }
  if (!fs.existsSync(CLI)) {
    throw new Error(`${CLI} is missing: run \`cargo build --release -p memviz-cli\` first (cargo xtask test does)`);
  }
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
}

/** `memviz ARGS…`'s stdout (exit 0 asserted). */
export function cliText(...args) {
  const r = spawnSync(CLI, args, { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.equal(r.status, 0, `memviz ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** `memviz ARGS… --json` of the native CLI, parsed. */
export function cliJson(...args) {
  return JSON.parse(cliText(...args, '--json'));
}

/** The viewer's state (`window.memviz.state()`): camera, geometry, selection. */
export const viewerState = (page) => page.evaluate(() => window.memviz.state());

/** The canvas point (page CSS px) of data point (x timesteps, y bytes) in the current camera. */
export async function pagePoint(page, x, y) {
  await page.locator('#plot').scrollIntoViewIfNeeded();
  const st = await viewerState(page);
  const box = await page.locator('#plot').boundingBox();
  const p = st.geometry.plot;
  const fx = (x - st.x_range[0]) / (st.x_range[1] - st.x_range[0]);
  const fy = (y - st.y_range[0]) / (st.y_range[1] - st.y_range[0]);
  assert.ok(fx > 0 && fx < 1 && fy > 0 && fy < 1, `(${x}, ${y}) is outside the view ${JSON.stringify([st.x_range, st.y_range])}`);
  return { x: box.x + p.left + fx * (p.right - p.left), y: box.y + p.bottom - fy * (p.bottom - p.top) };
}

/** Page CSS px of a State History map item's centre (`kind` block or segment, decimal address). */
export async function mapPoint(page, kind, addr) {
  await page.locator('#plot').scrollIntoViewIfNeeded();
  const { result: c } = await page.evaluate(([k, a]) => window.memviz.view({ method: 'state_item_center', kind: k, addr: a }), [kind, String(addr)]);
  assert.ok(Array.isArray(c), `${kind} ${addr} is in the map`);
  const box = await page.locator('#plot').boundingBox();
  return { x: box.x + c[0], y: box.y + c[1] };
}

/** Types `q` into the search box, presses Enter and resolves with that query's result. */
export async function search(page, q) {
  await page.fill('#search-input', q);
  await page.press('#search-input', 'Enter');
  return poll(async () => {
    const r = await page.evaluate(() => window.memviz.searchBox.result);
    return r && r.query === q ? r : null;
  }, `search ${q}`);
}

/** Polls `fn` (async, in node) until it returns a truthy value; returns it. */
export async function poll(fn, what, timeout = TIMEOUT_MS) {
  const end = Date.now() + timeout;
  for (;;) {
    const last = await fn();
    if (last) return last;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Registers the test file's `before` (requireBuilt, then `prepare()`, e.g. generating fixtures,
 * then serving DIST under `subPath`, each miss passed to `onMiss`) and `after` (closing the
 * server). Returns `{url}`: the page's URL (`http://127.0.0.1:PORT/subPath`) once `before` ran.
 */
export function serveDistForTests({ prepare = () => {}, subPath = '/', onMiss = () => {} } = {}) {
  const served = { url: null };
  let server;
  before(async () => {
    requireBuilt();
    await prepare();
    server = await serveDist(DIST, subPath, onMiss);
    served.url = `http://127.0.0.1:${server.address().port}${subPath}`;
  });
  after(async () => {
    if (server) await new Promise((resolve) => server.close(resolve));
  });
  return served;
}

/**
 * Registers the enclosing describe block's `before` (startChromium with `args`, a profile named by
 * `prefix`, collecting the page's uncaught errors, then `start(page)`) and `after` (closing that
 * Chromium, then asserting that the page threw no error).
 */
export function chromiumForTests(args, prefix, start) {
  let b;
  const errors = [];
  before(async () => {
    b = await startChromium(args, prefix);
    b.page.on('pageerror', (err) => errors.push(err.message));
    await start(b.page);
  });
  after(async () => {
    if (b) await b.close();
    assert.deepEqual(errors, [], 'no page errors');
  });
}

/** Waits until the page's viewer is up: `window.memviz` and a drawing backend chosen. */
export const waitForViewer = (page) => page.waitForFunction(
  () => window.memviz !== undefined && document.body.dataset.memvizBackend !== undefined, null, { timeout: TIMEOUT_MS });

/**
 * Loads `url` at `width`x`height` and waits for the viewer. `fromBlank`: from about:blank first
 * (from another document: a URL that differs only in its hash would not reload the page).
 */
export async function loadViewer(page, url, width, height, fromBlank = false) {
  await page.setViewportSize({ width, height });
  if (fromBlank) await page.goto('about:blank');
  await page.goto(url);
  await waitForViewer(page);
}

/** Opens `file` through the file input and waits for `ready` (or `state`). */
export async function openFile(page, file, state = 'ready') {
  await page.setInputFiles('#file-input', file);
  await poll(() => page.evaluate((s) => document.body.dataset.memvizState === s, state), `${path.basename(file)} ${state}`);
}

/** The page rectangle of `selector` (first match), or null when not rendered. */
export const rect = (page, selector) => page.evaluate((sel) => {
  const e = document.querySelector(sel);
  if (!e || e.getClientRects().length === 0) return null;
  const r = e.getBoundingClientRect();
  return { x: r.x, y: r.y, w: r.width, h: r.height, right: r.right, bottom: r.bottom };
}, selector);

/** The page rectangles of `selector`'s rendered children, each named by its id or its text's start. */
export const childRects = (page, selector) => page.evaluate((sel) => [...document.querySelectorAll(`${sel} > *`)]
  .filter((e) => e.getClientRects().length > 0)
  .map((e) => {
    const r = e.getBoundingClientRect();
    return { id: e.id || e.textContent.trim().slice(0, 12), x: r.x, y: r.y, right: r.right, bottom: r.bottom, h: r.height };
  }), selector);

/**
 * Debian Chromium on a fresh profile (`prefix` names its temporary directory) with
 * CHROMIUM_ARGS plus `args`. Returns `{context, page, close()}`; `close()` never hangs and ends
 * every process of that browser (see killBrowser).
 */
export async function startChromium(args = [], prefix = 'memviz-chromium-') {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    args: [...CHROMIUM_ARGS, ...args],
    viewport: { width: 1200, height: 800 },
  });
  const page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(TIMEOUT_MS);
  return {
    context,
    page,
    async close() {
      let timer;
      await Promise.race([
        context.close().catch(() => {}),
        new Promise((resolve) => { timer = setTimeout(resolve, 15_000); }),
      ]);
      clearTimeout(timer);
      killBrowser(userDataDir);
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Ends the Chromium started on `userDataDir` (the browser process names that unique profile
 * directory on its command line) and its child processes, by pid, if any survived
 * `context.close()`: seen once with the WebGPU flags plus --disable-gpu, and the run never exited.
 */
function killBrowser(userDataDir) {
  const mark = `--user-data-dir=${userDataDir}`;
  const read = (file) => {
    try {
      return fs.readFileSync(file, 'latin1');
    } catch {
      return null;
    }
  };
  const procs = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map((pid) => {
    const stat = read(`/proc/${pid}/stat`);
    // pid (comm) state ppid …: comm may contain spaces and parentheses, so split after the last ')'.
    const ppid = stat === null ? null : Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return { pid: Number(pid), ppid, cmdline: read(`/proc/${pid}/cmdline`) };
  });
  const doomed = new Set(procs.filter((p) => p.cmdline !== null && p.cmdline.split('\0').includes(mark)).map((p) => p.pid));
  for (let grew = doomed.size > 0; grew;) {
    grew = false;
    for (const p of procs) {
      if (!doomed.has(p.pid) && doomed.has(p.ppid)) {
        doomed.add(p.pid);
        grew = true;
      }
    }
  }
  for (const pid of doomed) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  if (doomed.size > 0) process.stderr.write(`browser.mjs: killed ${doomed.size} Chromium processes left after close()\n`);
}
