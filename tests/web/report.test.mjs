// The single-file report of `memviz html FILE -o OUT.html` in headless Debian Chromium: the real
// CLI writes a report for a generated fixture and for the demo snapshot; each report is copied
// alone into an empty directory and opened from a file:// URL while the browser is offline and
// every http(s) request is aborted. The report must reach `ready` by itself, show the same peak
// and summary as `memviz summary --json`, and make no request other than file:, blob: or data:.
// Run by `cargo xtask test`, or: node --test tests/web/report.test.mjs
// Needs dist/ and target/release/memviz (`cargo build --release -p memviz-cli`); writes its
// fixtures and reports to target/report-fixtures/ and screenshots to target/screenshots/report-*.png.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import {
  ROOT, DIST, CLI, SCREENSHOTS, CHROMIUM_ARGS, TIMEOUT_MS, generate, requireBuilt, cliJson,
} from './browser.mjs';

const DEMO = path.join(DIST, 'assets/demo.pickle');
const FIXTURES = path.join(ROOT, 'target/report-fixtures');
const TEST = { timeout: 120_000 };
/** Markup and quotes in the title: it must come back as text. */
const HOSTILE_TITLE = '<b>report</b> & "quoted" <img src=x onerror=window.__pwned=1>';

/** `memviz summary FILE --json`, parsed. */
function cliSummary(file) {
  return cliJson('summary', file);
}

/** The viewer's default device (memviz_snapshot `default_device`): the longest trace, first on ties. */
function defaultDevice(summary) {
  let best = null;
  for (const d of summary.devices) if (best === null || d.trace_entries > best.trace_entries) best = d;
  return best;
}

/**
 * `memviz html FILE -o DIR/NAME.html ...extra` in a fresh directory of its own (so the report
 * has no file beside it); returns `{report, stdout}`.
 */
function makeReport(file, name, extra = []) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memviz-report-'));
  const report = path.join(dir, `${name}.html`);
  const r = spawnSync(CLI, ['html', file, '-o', report, '--dist', DIST, ...extra], { encoding: 'utf8' });
  assert.equal(r.status, 0, `memviz html ${file}: ${r.stderr}`);
  assert.deepEqual(fs.readdirSync(dir), [`${name}.html`], 'the report is one file');
  return { report, dir, stdout: r.stdout.trim() };
}

let browser = null;

before(async () => {
  requireBuilt();
  fs.mkdirSync(FIXTURES, { recursive: true });
  generate(path.join(FIXTURES, 'small/multidevice.pickle'), 'small', path.join(FIXTURES, 'small'));
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
});

after(async () => {
  if (browser) await browser.close();
});

/**
 * Opens `report` (a file:// URL) in a fresh offline context with every http(s) request aborted.
 * Returns `{page, requests, pageErrors, violations, close()}`: every request seen (page and
 * workers), uncaught and console errors, and CSP violations reported to the document.
 */
async function openReport(report) {
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  await context.setOffline(true);
  const requests = [];
  /** url → why it failed (`csp`: refused by the page's policy, before any network). */
  const failures = new Map();
  /** Requests that reached the router (which aborts http(s)). */
  const routed = [];
  context.on('request', (req) => requests.push(req.url()));
  context.on('requestfailed', (req) => failures.set(req.url(), req.failure()?.errorText));
  await context.route('**/*', (route) => {
    const url = route.request().url();
    routed.push(url);
    if (/^(https?|wss?|ftp):/i.test(url)) return route.abort();
    return route.continue();
  });
  await context.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (ev) => {
      window.__violations.push(`${ev.violatedDirective} ${ev.blockedURI}`);
    });
  });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT_MS);
  const pageErrors = [];
  page.on('pageerror', (err) => pageErrors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => { if (msg.type() === 'error') pageErrors.push(`console: ${msg.text()}`); });
  page.on('worker', (worker) => {
    worker.on('console', (msg) => { if (msg.type() === 'error') pageErrors.push(`worker console: ${msg.text()}`); });
  });
  await page.goto(pathToFileURL(report).href);
  return {
    page,
    requests,
    failures,
    routed,
    pageErrors,
    violations: () => page.evaluate(() => window.__violations),
    close: () => context.close(),
  };
}

/** Waits until the page leaves `empty`/`loading`; fails with `#error`'s text on `error`. */
async function readyState(page) {
  await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.memvizState),
    null, { timeout: TIMEOUT_MS });
  const state = await page.evaluate(() => document.body.dataset.memvizState);
  if (state !== 'ready') {
    const message = await page.evaluate(() => document.getElementById('error').textContent);
    assert.fail(`the report ended in state ${state}: ${message}`);
  }
}

const CASES = [
  { name: 'multidevice', file: () => path.join(FIXTURES, 'small/multidevice.pickle'), title: HOSTILE_TITLE },
  { name: 'demo', file: () => DEMO, title: null },
];

describe('memviz html: the single-file report, offline from file://', () => {
  for (const c of CASES) {
    test(`${c.name}: opens by itself, offline, and shows the CLI's peak`, TEST, async () => {
      const file = c.file();
      const { report, dir, stdout } = makeReport(file, `report-${c.name}`, c.title === null ? [] : ['--title', c.title]);
      const bytes = fs.statSync(report).size;
      process.stdout.write(`# ${stdout}\n`);
      // The demo's report stays small: the compressed viewer (~1.4 MiB) plus the snapshot.
      assert.ok(bytes < 8 * 1024 * 1024, `report of ${bytes} bytes`);
      const r = await openReport(report);
      try {
        await readyState(r.page);
        const cli = cliSummary(file);
        const st = await r.page.evaluate(() => window.memviz.state());
        const dflt = defaultDevice(cli);
        assert.equal(st.device, dflt.device, 'the default device is the longest trace');
        assert.equal(st.peak_bytes, dflt.peak_live_bytes, 'peak of the default device = memviz summary --json');
        assert.deepEqual(JSON.parse(await r.page.locator('#summary-json').textContent()), cli, '#summary-json = the CLI\'s');
        assert.equal(await r.page.locator('#file-select option').count(), 1);
        assert.equal((await r.page.locator('#file-select option').textContent()).trim(), path.basename(file));
        assert.equal(await r.page.locator('#demo-button').isVisible(), false, 'no "Open demo" in a report');
        // The title is text, never markup.
        const expected = c.title === null ? `memviz: ${path.basename(file)}` : c.title;
        assert.equal(await r.page.title(), expected);
        assert.equal(await r.page.evaluate(() => window.__pwned), undefined);
        assert.equal(await r.page.locator('head b, head img, body > img').count(), 0);
        // Something is drawn: a legend and tick labels.
        assert.ok(await r.page.locator('#legend li').count() > 0, 'legend entries');
        assert.ok(await r.page.locator('#y-labels span').count() > 0, 'y tick labels');
        // The worker answers more than the first frame: the per-line table as the CLI's.
        const rows = await r.page.evaluate(() => window.memviz.linesTable.load());
        const lines = spawnSync(CLI, ['lines', file, '--json'], { encoding: 'utf8' });
        assert.equal(lines.status, 0, lines.stderr);
        assert.equal(rows.length, JSON.parse(lines.stdout).rows.length, 'source-line rows');
        assert.ok(['webgl2', 'webgpu'].includes(await r.page.evaluate(() => document.body.dataset.memvizBackend)), 'drawn on the GPU');
        await r.page.screenshot({ path: path.join(SCREENSHOTS, `report-${c.name}.png`), fullPage: true });

        assert.ok(r.requests.includes(pathToFileURL(report).href), `the request log works: ${r.requests}`);
        const outside = r.requests.filter((u) => !/^(file|blob|data):/.test(u));
        assert.deepEqual(outside, [], 'no request other than file:, blob:, data:');
        assert.deepEqual(await r.violations(), [], 'no Content-Security-Policy violation');
        assert.deepEqual(r.pageErrors, []);

        // The report's own policy refuses the network, whatever the browser allows: a fetch and
        // an image from elsewhere fail and are reported as violations, and make no request.
        const attempt = await r.page.evaluate(async () => {
          const fetched = await fetch('https://example.com/x.pickle').then(() => 'fetched', () => 'refused');
          const img = await new Promise((resolve) => {
            const el = new Image();
            el.onload = () => resolve('loaded');
            el.onerror = () => resolve('refused');
            el.src = 'http://example.com/pixel.png';
          });
          return { fetched, img };
        });
        assert.deepEqual(attempt, { fetched: 'refused', img: 'refused' });
        const violations = await r.violations();
        assert.ok(violations.some((v) => v.startsWith('connect-src https://example.com')), `${violations}`);
        assert.ok(violations.some((v) => v.startsWith('img-src http://example.com')), `${violations}`);
        // The worker (a data: URL) inherits the report's policy: its fetch is refused too.
        const workers = r.page.workers();
        assert.equal(workers.length, 1, 'the viewer\'s worker');
        const inWorker = await workers[0].evaluate(async () => {
          const seen = [];
          self.addEventListener('securitypolicyviolation', (ev) => seen.push(`${ev.violatedDirective} ${ev.blockedURI}`));
          const fetched = await fetch('https://example.com/y.pickle').then(() => 'fetched', () => 'refused');
          await new Promise((resolve) => setTimeout(resolve, 100));
          return { fetched, seen };
        });
        assert.equal(inWorker.fetched, 'refused');
        assert.ok(inWorker.seen.some((v) => v.startsWith('connect-src https://example.com')), `worker: ${inWorker.seen}`);
        // Chromium announces the image request before its CSP check refuses it: it must have
        // failed as blocked by the CSP, without reaching the router (nor the network).
        const img = 'http://example.com/pixel.png';
        assert.deepEqual(r.requests.filter((u) => !/^(file|blob|data):/.test(u) && u !== img), []);
        if (r.requests.includes(img)) assert.match(r.failures.get(img), /csp/i);
        assert.deepEqual(r.routed.filter((u) => !/^(file|blob|data):/.test(u)), [], 'nothing reached the router');
      } finally {
        await r.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  test('a report of a gzip-compressed snapshot embeds it as is and opens', TEST, async () => {
    const gz = path.join(FIXTURES, 'multidevice.pickle.gz');
    const { gzipSync } = await import('node:zlib');
    fs.writeFileSync(gz, gzipSync(fs.readFileSync(path.join(FIXTURES, 'small/multidevice.pickle'))));
    const { report, dir } = makeReport(gz, 'report-gz');
    const r = await openReport(report);
    try {
      await readyState(r.page);
      const st = await r.page.evaluate(() => window.memviz.state());
      assert.equal(st.peak_bytes, defaultDevice(cliSummary(gz)).peak_live_bytes);
      assert.deepEqual(r.requests.filter((u) => !/^(file|blob|data):/.test(u)), []);
      assert.deepEqual(r.pageErrors, []);
    } finally {
      await r.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
