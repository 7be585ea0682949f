// The saved notebook's HTML (nbconvert of docs/memviz.ipynb after nbclient ran it) in headless
// Debian Chromium, offline: the viewer that `memviz.show` put in an <iframe srcdoc> must reach
// `ready` by itself and show the expected peak, with no error inside the viewer. The notebook
// page's own CDN scripts (nbconvert's template) fail offline; that is the notebook's business
// and is not counted, but no request may come from the viewer's frame.
// Run by tests/python/test_notebook.py:
//   node tests/web/notebook_html.mjs NOTEBOOK.html EXPECTED_PEAK_BYTES SCREENSHOT.png
// Prints one JSON line: {state, peak_bytes, backend, errors, requests}.

import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';
import { CHROMIUM_ARGS, TIMEOUT_MS } from './browser.mjs';

const [file, shot] = [process.argv[2], process.argv[3]];
if (!file) {
  console.error('usage: node tests/web/notebook_html.mjs NOTEBOOK.html [SCREENSHOT.png]');
  process.exit(2);
}

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  await context.setOffline(true);
  await context.route('**/*', (route) => (/^(https?|wss?|ftp):/i.test(route.request().url()) ? route.abort() : route.continue()));
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT_MS);
  /** Errors and requests from the viewer's frame (about:srcdoc) and its worker. */
  const errors = [];
  const requests = [];
  const inViewer = (frame) => frame && frame !== page.mainFrame();
  page.on('console', (msg) => {
    const url = msg.location().url || '';
    if (msg.type() === 'error' && (url === 'about:srcdoc' || url.startsWith('blob:') || url.startsWith('data:'))) errors.push(`console: ${msg.text()}`);
  });
  page.on('pageerror', (err) => { if (/srcdoc|memviz/.test(String(err.stack))) errors.push(`pageerror: ${err.message}`); });
  page.on('worker', (w) => w.on('console', (msg) => { if (msg.type() === 'error') errors.push(`worker: ${msg.text()}`); }));
  page.on('request', (req) => { if (inViewer(req.frame?.())) requests.push(req.url()); });
  await page.goto(pathToFileURL(file).href);
  const el = await page.waitForSelector('iframe.memviz-viewer');
  await el.scrollIntoViewIfNeeded();
  const frame = await el.contentFrame();
  await frame.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.memvizState), null, { timeout: TIMEOUT_MS });
  const state = await frame.evaluate(() => document.body.dataset.memvizState);
  const error = await frame.evaluate(() => document.getElementById('error')?.textContent || '');
  const st = state === 'ready' ? await frame.evaluate(() => window.memviz.state()) : null;
  const backend = await frame.evaluate(() => document.body.dataset.memvizBackend);
  const legend = await frame.locator('#legend li').count();
  const copyLink = await frame.locator('#copy-link').isVisible();
  const controlsCut = await frame.evaluate(() => {
    const row = document.getElementById('view-controls');
    return row.scrollWidth > row.clientWidth + 1;
  });
  if (shot) await el.screenshot({ path: shot });
  process.stdout.write(`${JSON.stringify({
    state, error, peak_bytes: st ? st.peak_bytes : null, device: st ? st.device : null, backend, legend, copyLink, controlsCut,
    errors, requests: requests.filter((u) => !/^(blob|data|about):/.test(u)),
  })}\n`);
} finally {
  await browser.close();
}
