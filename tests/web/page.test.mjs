// The built page (dist/, from `trunk build --release --offline`) in headless Debian Chromium,
// served by a tiny static server under a sub-path to prove every URL is relative.
// Run by `cargo xtask test`, or: node --test tests/web/page.test.mjs

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DIST = path.join(ROOT, 'dist');
const CORPUS = path.resolve(ROOT, '../shared/corpus/real');
const CLI = path.join(ROOT, 'target/release/memviz');
const SCREENSHOT = path.join(ROOT, 'target/screenshots/page.png');
const SUB_PATH = '/sub/dir/';
const CHROMIUM_ARGS = [
  '--headless=new', '--no-sandbox', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--disable-quic',
];
const TIMEOUT_MS = 60_000;

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

let server;
let baseUrl;
let userDataDir;
let context;
let page;
/** Requests that missed dist/ or the sub-path, and page errors: both must stay empty. */
const badRequests = [];
const pageErrors = [];

function serveDist(req, res) {
  const url = new URL(req.url, 'http://localhost');
  if (!url.pathname.startsWith(SUB_PATH)) {
    badRequests.push(`outside ${SUB_PATH}: ${url.pathname}`);
    res.writeHead(404).end();
    return;
  }
  let rel = decodeURIComponent(url.pathname.slice(SUB_PATH.length));
  if (rel === '' || rel.endsWith('/')) rel += 'index.html';
  const file = path.resolve(DIST, rel);
  if (!file.startsWith(DIST + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    badRequests.push(`not in dist/: ${url.pathname}`);
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, {
    'content-type': MIME[path.extname(file)] || 'application/octet-stream',
    'content-length': fs.statSync(file).size,
    'cache-control': 'no-store',
  });
  fs.createReadStream(file).pipe(res);
}

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

async function waitForState(...states) {
  await page.waitForFunction(
    (wanted) => wanted.includes(document.body.dataset.memvizState),
    states,
    { timeout: TIMEOUT_MS },
  );
  return page.evaluate(() => document.body.dataset.memvizState);
}

async function summaryJson() {
  return JSON.parse(await page.locator('#summary-json').textContent());
}

before(async () => {
  if (!fs.existsSync(path.join(DIST, 'index.html'))) {
    throw new Error('dist/index.html is missing: run `trunk build --release --offline` first (cargo xtask test does)');
  }
  server = http.createServer(serveDist);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${server.address().port}${SUB_PATH}`;
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memviz-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
    viewport: { width: 1200, height: 800 },
  });
  page = context.pages()[0] || await context.newPage();
  page.on('pageerror', (err) => pageErrors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => { if (msg.type() === 'error') pageErrors.push(`console: ${msg.text()}`); });
  await page.goto(baseUrl);
  await page.waitForFunction(() => window.wasmBindings !== undefined && window.memviz !== undefined,
    null, { timeout: TIMEOUT_MS });
});

after(async () => {
  if (context) await context.close();
  if (server) await new Promise((resolve) => server.close(resolve));
  if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
});

test('starts empty, with no alert', { timeout: TIMEOUT_MS }, async () => {
  assert.equal(await page.evaluate(() => document.body.dataset.memvizState), 'empty');
  assert.equal(await page.getByRole('alert').count(), 0);
});

test('"Open demo" shows the summary table for device 0', { timeout: TIMEOUT_MS }, async () => {
  await page.click('#demo-button');
  assert.equal(await waitForState('ready', 'error'), 'ready');
  const summary = await summaryJson();
  assert.ok(summary.devices.some((d) => d.device === 0), 'summary JSON has device 0');
  const table = await page.locator('#summary-table').textContent();
  assert.match(table, /device\D{0,3}0\b/i, `the table names device 0:\n${table}`);
  assert.match(await page.locator('#progress').textContent(), /demo\.pickle/);
  fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
});

test('a real snapshot chosen in the file input shows the right trace entry count', { timeout: TIMEOUT_MS }, async (t) => {
  const c = corpusCase();
  if (c === null) {
    t.skip(`${CORPUS} is absent: no real snapshot to open`);
    return;
  }
  await page.setInputFiles('#file-input', path.join(CORPUS, c.name));
  assert.equal(await waitForState('ready', 'error'), 'ready');
  const summary = await summaryJson();
  const traceEntries = summary.devices.reduce((sum, d) => sum + d.trace_entries, 0);
  assert.equal(traceEntries, c.traceEntries, `trace entries of ${c.name} (corpus README)`);
  if (fs.existsSync(CLI)) {
    const native = spawnSync(CLI, ['summary', path.join(CORPUS, c.name), '--json'], { encoding: 'utf8' });
    assert.equal(native.status, 0, native.stderr);
    assert.deepEqual(summary, JSON.parse(native.stdout));
  }
  assert.equal(await page.locator('#file-name').textContent(), c.name);
});

test('a garbage file gives an alert naming it; the next good file still opens', { timeout: TIMEOUT_MS }, async () => {
  await page.setInputFiles('#file-input', {
    name: 'garbage <b>not</b>.pickle',
    mimeType: 'application/octet-stream',
    buffer: Buffer.from('this is not a pickle at all\n'.repeat(50)),
  });
  assert.equal(await waitForState('ready', 'error'), 'error');
  const alert = page.getByRole('alert');
  await alert.waitFor({ state: 'visible', timeout: TIMEOUT_MS });
  const text = await alert.textContent();
  assert.ok(text.includes('garbage <b>not</b>.pickle'), `the alert names the file as text: ${text}`);
  assert.match(text, /another file/);
  assert.equal(await page.locator('#error b').count(), 0, 'file names are never parsed as HTML');
  assert.equal(await page.locator('#summary-table').textContent(), '');
  await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '-error.png') });

  await page.setInputFiles('#file-input', path.join(DIST, 'assets/demo.pickle'));
  assert.equal(await waitForState('ready', 'error'), 'ready');
  assert.equal(await page.getByRole('alert').count(), 0, 'the alert is gone');
});

test('a file dropped anywhere on the page opens', { timeout: TIMEOUT_MS }, async () => {
  await page.evaluate(async () => {
    const bytes = await (await fetch('assets/demo.pickle')).arrayBuffer();
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], 'dropped.pickle'));
    const target = document.querySelector('header');
    for (const type of ['dragenter', 'dragover', 'drop']) {
      target.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: transfer }));
    }
  });
  assert.equal(await waitForState('ready', 'error'), 'ready');
  assert.equal(await page.locator('#file-name').textContent(), 'dropped.pickle');
  assert.equal(await page.locator('#drop-overlay').isHidden(), true);
});

test('window.memviz.open accepts a URL, an ArrayBuffer and a Blob', { timeout: TIMEOUT_MS }, async () => {
  const states = await page.evaluate(async () => {
    const fromUrl = await window.memviz.open('assets/demo.pickle');
    const buffer = await (await fetch('assets/demo.pickle')).arrayBuffer();
    const fromBuffer = await window.memviz.open(buffer);
    const fromBlob = await window.memviz.open(new Blob([buffer]));
    const missing = await window.memviz.open('assets/no-such-file.pickle');
    return [fromUrl.state, fromBuffer.state, fromBlob.state, missing.state, fromUrl.json === fromBlob.json];
  });
  assert.deepEqual(states, ['ready', 'ready', 'ready', 'error', true]);
  badRequests.splice(badRequests.findIndex((r) => r.includes('no-such-file')), 1);
});

test('no request left dist/ or the sub-path, and the page logged no errors', () => {
  assert.deepEqual(badRequests, []);
  // The deliberate 404 above is logged by Chromium as a failed resource load.
  const unexpected = pageErrors.filter((e) => !/404|no-such-file/.test(e));
  assert.deepEqual(unexpected, []);
});
