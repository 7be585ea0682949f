// `memviz open --no-browser --port 0 A B` in headless Debian Chromium: the page served by the
// CLI (its built-in viewer) opens both files by itself from its ?url= parameters, the last one
// shown, with the CLI's peak; the server answers 404 beside them.
// Run by `cargo xtask test`, or: node --test tests/web/open.test.mjs
// Needs target/release/memviz built after dist/ (`cargo build --release -p memviz-cli`).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  ROOT, CLI, SCREENSHOTS, TIMEOUT_MS, generate, requireBuilt, cliJson, startChromium,
} from './browser.mjs';

const FIXTURES = path.join(ROOT, 'target/open-fixtures');

/** Starts `memviz open --no-browser --port 0 FILES…`; resolves with {url, stop()}. */
function startOpen(files) {
  const child = spawn(CLI, ['open', '--no-browser', '--port', '0', ...files], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve({ url: out.slice(0, nl).trim(), stop: () => child.kill() });
    });
    child.on('exit', (code) => reject(new Error(`memviz open exited ${code}: ${err}`)));
  });
}

test('memviz open: the page opens every file named, by itself', { timeout: 120_000 }, async () => {
  requireBuilt();
  fs.mkdirSync(FIXTURES, { recursive: true });
  const a = path.join(FIXTURES, 'landmarks.pickle');
  const b = path.join(FIXTURES, 'oom device.pickle');
  generate(a, 'landmarks', a);
  generate(b, 'oomdevice', b);
  const server = await startOpen([a, b]);
  const browser = await startChromium([], 'memviz-open-');
  try {
    const { page } = browser;
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    // What counts is the page reaching `ready` with both files (below), not the load event.
    await page.goto(server.url, { waitUntil: 'domcontentloaded' });
    await page.waitForFunction(() => document.querySelectorAll('#file-select option').length === 2
      && document.body.dataset.memvizState === 'ready', null, { timeout: TIMEOUT_MS });
    const names = await page.locator('#file-select option').allTextContents();
    assert.ok(names[0].includes('landmarks.pickle'), names.join(' | '));
    assert.ok(names[1].includes('oom%20device.pickle') || names[1].includes('oom device.pickle'), names.join(' | '));
    // The last one is shown, with the CLI's peak of the device the page opens on.
    const st = await page.evaluate(() => window.memviz.state());
    const cli = cliJson('summary', b);
    const dev = cli.devices.find((d) => d.device === st.device);
    assert.equal(st.peak_bytes, dev.peak_live_bytes);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'open-two-files.png') });
    const base = new URL(server.url).origin;
    const r = await page.evaluate(async (u) => (await fetch(`${u}/files/2/x`)).status, base);
    assert.equal(r, 404);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    server.stop();
  }
});
