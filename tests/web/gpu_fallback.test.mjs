// WebGPU must never strand the user (issue 29, item 6). In headless Debian Chromium:
// - with flags under which WebGPU gives an adapter whose canvas and buffers then fail
//   (`--enable-unsafe-webgpu --use-angle=swiftshader --enable-features=Vulkan`, without
//   `--use-vulkan=swiftshader`: the device is lost as soon as a canvas is configured, and every
//   buffer mapped at creation throws after that), the page, the single-file report of
//   `memviz html` and that report in an iframe's srcdoc (how the Python package shows it in a
//   notebook) reach `ready` on WebGL2 with a one-line notice, draw, and open a second file;
// - with working WebGPU (SwiftShader), a device lost mid-session (`device.destroy()` through the
//   test hook) moves drawing to WebGL2 on a fresh canvas, keeping the open files (no restart);
// - with `?backend=webgpu` and the broken flags, the page's own canvas loses the device for real:
//   the same move to WebGL2;
// - a worker that crashes while WebGPU draws is replaced by one on WebGL2 with the files.
// Run by `cargo xtask test`, or: node --test tests/web/gpu_fallback.test.mjs
// Needs dist/ (or MEMVIZ_DIST) and target/release/memviz; screenshots: target/screenshots/gpu-*.png.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { decodePng, colourStats } from './page_png.mjs';
import {
  ROOT, DIST, CLI, SCREENSHOTS, TIMEOUT_MS, WEBGPU_ARGS, generate, poll, startChromium, serveDistForTests,
} from './browser.mjs';

/** WebGPU with an adapter but failing canvases and buffers (exactly the flags). */
const BROKEN_WEBGPU_ARGS = ['--enable-unsafe-webgpu', '--use-angle=swiftshader', '--enable-features=Vulkan'];
const DEMO = path.join(DIST, 'assets/demo.pickle');
const FIXTURES = path.join(ROOT, 'target/gpu-fallback-fixtures');
const SMALL = path.join(FIXTURES, 'small/multidevice.pickle');
const SUB_PATH = '/gpu/';
const TEST = { timeout: 180_000 };

const served = serveDistForTests({
  prepare() {
    fs.mkdirSync(FIXTURES, { recursive: true });
    generate(SMALL, 'small', path.join(FIXTURES, 'small'));
  },
  subPath: SUB_PATH,
});

/** Collects uncaught errors, console errors and the worker's errors of `page`. */
function watchErrors(page) {
  const errors = [];
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => { if (msg.type() === 'error') errors.push(`console: ${msg.text()}`); });
  page.on('worker', (w) => w.on('console', (msg) => {
    // wgpu logs a surface it could not use (the trial canvas) as an error: that is expected here.
    if (msg.type() === 'error' && !/getCurrentTexture|Surface configuration failed/.test(msg.text())) errors.push(`worker: ${msg.text()}`);
  }));
  return errors;
}

/** `{state, backend, error, notice}` of the page (or frame). */
function pageStatus(target) {
  return target.evaluate(() => {
    const notice = document.getElementById('gpu-notice');
    return {
      state: document.body.dataset.memvizState,
      backend: document.body.dataset.memvizBackend,
      error: document.getElementById('error')?.hidden ? '' : (document.getElementById('error')?.textContent || ''),
      notice: notice && !notice.hidden ? notice.querySelector('.gpu-notice-text').textContent : '',
      noticeHeight: notice && !notice.hidden ? notice.getBoundingClientRect().height : 0,
      files: document.getElementById('file-select')?.options.length || 0,
      restarts: window.memviz ? window.memviz.restarts : null,
    };
  });
}

/**
 * Screenshots the plot (after the next frame) to target/screenshots/`file` and asserts it is
 * drawn: colourful (not white, not grey) pixels cover ≥ 10 % of the plot rectangle, in ≥ 4 colours.
 */
async function assertDrawn(target, locator, file) {
  await target.evaluate(() => window.memviz.view({ method: 'state' }));
  const st = await target.evaluate(() => window.memviz.state());
  const png = await locator.screenshot({ path: path.join(SCREENSHOTS, file) });
  const stats = colourStats(decodePng(png), st.geometry.plot);
  const significant = [...stats.colours.values()].filter((n) => n >= 30).length;
  assert.ok(stats.colourful >= 0.1 * stats.area && significant >= 4,
    `the plot is drawn (${file}): ${stats.colourful} colourful px of ${stats.area}, ${significant} colours`);
}

/** Asserts the one-line notice says WebGPU failed and WebGL2 draws. */
function assertNotice(status, pattern) {
  assert.match(status.notice, pattern, `the GPU notice: ${JSON.stringify(status)}`);
  assert.match(status.notice, /WebGL2/);
  assert.ok(status.noticeHeight > 0 && status.noticeHeight < 40, `the notice is one line (${status.noticeHeight}px)`);
}

describe('WebGPU that fails falls back to WebGL2', () => {
  test('page: broken WebGPU flags → WebGL2 with a notice, the demo and a second file draw', TEST, async () => {
    const b = await startChromium(BROKEN_WEBGPU_ARGS, 'memviz-gpufb-');
    try {
      const { page } = b;
      await page.setViewportSize({ width: 1440, height: 900 });
      const errors = watchErrors(page);
      await page.goto(served.url);
      const demo = await page.evaluate(() => window.memviz.open('assets/demo.pickle'));
      assert.equal(demo.state, 'ready', JSON.stringify(demo));
      let status = await pageStatus(page);
      assert.equal(status.backend, 'webgl2', JSON.stringify(status));
      assertNotice(status, /WebGPU does not work here/);
      await assertDrawn(page, page.locator('#plot'), 'gpu-broken-demo.png');
      await page.screenshot({ path: path.join(SCREENSHOTS, 'gpu-broken-page.png') });
      // A second file opens and draws too (nothing was left half-broken).
      await page.setInputFiles('#file-input', SMALL);
      await poll(async () => (await pageStatus(page)).files === 2 && (await pageStatus(page)).state === 'ready', 'the second file');
      await assertDrawn(page, page.locator('#plot'), 'gpu-broken-second.png');
      status = await pageStatus(page);
      assert.equal(status.state, 'ready');
      assert.equal(status.error, '', 'no error banner');
      assert.equal(status.restarts, 0, 'the worker was never restarted');
      assert.deepEqual(errors, []);
    } finally {
      await b.close();
    }
  });

  test('page: a device lost mid-session moves to WebGL2 and keeps the open files', TEST, async () => {
    const b = await startChromium(WEBGPU_ARGS, 'memviz-gpufb-');
    try {
      const { page } = b;
      await page.setViewportSize({ width: 1280, height: 720 });
      const errors = watchErrors(page);
      await page.goto(served.url);
      const demo = await page.evaluate(() => window.memviz.open('assets/demo.pickle'));
      assert.equal(demo.state, 'ready', JSON.stringify(demo));
      let status = await pageStatus(page);
      // Working WebGPU passes the first-frame trial: no notice.
      assert.equal(status.backend, 'webgpu', JSON.stringify(status));
      assert.equal(status.notice, '');
      await assertDrawn(page, page.locator('#plot'), 'gpu-lost-before.png');
      const before = await page.evaluate(() => window.memviz.state());
      await page.evaluate(() => globalThis.memvizTestHooks.loseDevice());
      await poll(async () => (await pageStatus(page)).backend === 'webgl2', 'WebGL2 after the loss');
      status = await pageStatus(page);
      assertNotice(status, /WebGPU stopped working/);
      // The same file and camera, drawn again on the fresh canvas.
      const after = await page.evaluate(() => window.memviz.state());
      assert.deepEqual([after.file, after.device, after.x_range], [before.file, before.device, before.x_range]);
      await assertDrawn(page, page.locator('#plot'), 'gpu-lost-after.png');
      // Input reaches the fresh canvas: a wheel zooms.
      const box = await page.locator('#plot').boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.wheel(0, -400);
      await poll(async () => {
        const st = await page.evaluate(() => window.memviz.state());
        return st.x_range[1] - st.x_range[0] < after.x_range[1] - after.x_range[0];
      }, 'a wheel zoom on the fresh canvas');
      await page.setInputFiles('#file-input', SMALL);
      await poll(async () => (await pageStatus(page)).files === 2 && (await pageStatus(page)).state === 'ready', 'the second file');
      await assertDrawn(page, page.locator('#plot'), 'gpu-lost-second.png');
      await page.screenshot({ path: path.join(SCREENSHOTS, 'gpu-lost-page.png') });
      status = await pageStatus(page);
      assert.equal(status.restarts, 0, 'the model was kept: no worker restart');
      assert.equal(status.error, '');
      assert.deepEqual(errors, []);
    } finally {
      await b.close();
    }
  });

  test('page: forced ?backend=webgpu under the broken flags: the real loss moves drawing to WebGL2', TEST, async () => {
    // No scratch trial when WebGPU is forced: the page's own canvas loses the device at the first
    // frame, which the device-lost callback reports; a fresh canvas then draws with WebGL2.
    const b = await startChromium(BROKEN_WEBGPU_ARGS, 'memviz-gpufb-');
    try {
      const { page } = b;
      await page.setViewportSize({ width: 1280, height: 720 });
      const errors = watchErrors(page);
      await page.goto(`${served.url}?backend=webgpu`);
      const demo = await page.evaluate(() => window.memviz.open('assets/demo.pickle'));
      assert.equal(demo.state, 'ready', JSON.stringify(demo));
      await poll(async () => (await pageStatus(page)).backend === 'webgl2', 'WebGL2 after the real loss');
      let status = await pageStatus(page);
      assertNotice(status, /WebGPU stopped working/);
      await assertDrawn(page, page.locator('#plot'), 'gpu-forced-after.png');
      await page.setInputFiles('#file-input', SMALL);
      await poll(async () => (await pageStatus(page)).files === 2 && (await pageStatus(page)).state === 'ready', 'the second file');
      await assertDrawn(page, page.locator('#plot'), 'gpu-forced-second.png');
      status = await pageStatus(page);
      assert.equal(status.restarts, 0, 'no worker restart');
      assert.equal(status.error, '');
      assert.deepEqual(errors, []);
    } finally {
      await b.close();
    }
  });

  test('page: a crash while WebGPU draws restarts the worker on WebGL2 with the files', TEST, async () => {
    // A panic inside wgpu (a buffer created on a device whose loss is not reported yet) cannot be
    // caused on purpose here: the hook destroys the device and posts the crash such a panic
    // makes (a trap while drawing on WebGPU); the page's recovery is what is tested.
    const b = await startChromium(WEBGPU_ARGS, 'memviz-gpufb-');
    try {
      const { page } = b;
      await page.setViewportSize({ width: 1280, height: 720 });
      await page.goto(served.url);
      const demo = await page.evaluate(() => window.memviz.open('assets/demo.pickle'));
      assert.equal(demo.state, 'ready', JSON.stringify(demo));
      assert.equal((await pageStatus(page)).backend, 'webgpu');
      await page.setInputFiles('#file-input', SMALL);
      await poll(async () => (await pageStatus(page)).files === 2 && (await pageStatus(page)).state === 'ready', 'the second file');
      await page.evaluate(() => globalThis.memvizTestHooks.loseDevice(true));
      await poll(async () => {
        const s = await pageStatus(page);
        return s.restarts === 1 && s.files === 2 && s.backend === 'webgl2' && s.state !== 'loading';
      }, 'the restart on WebGL2 with both files');
      const status = await pageStatus(page);
      assertNotice(status, /WebGPU stopped working/);
      assert.match(status.error, /WebGPU failed while drawing .*restarted with WebGL2/, 'the banner says what happened');
      assert.doesNotMatch(status.error, /out of memory|a bug/);
      await assertDrawn(page, page.locator('#plot'), 'gpu-crash-after.png');
      await page.screenshot({ path: path.join(SCREENSHOTS, 'gpu-crash-page.png') });
    } finally {
      await b.close();
    }
  });

  test('report and notebook iframe: broken WebGPU flags → WebGL2 with a notice', TEST, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memviz-gpufb-report-'));
    const report = path.join(dir, 'report.html');
    const r = spawnSync(CLI, ['html', DEMO, '-o', report, '--dist', DIST], { encoding: 'utf8' });
    assert.equal(r.status, 0, `memviz html: ${r.stderr}`);
    // What python/memviz/_show.py's iframe() makes for a notebook: the report in a srcdoc.
    const escaped = fs.readFileSync(report, 'utf8').replaceAll('&', '&amp;').replaceAll('"', '&quot;')
      .replaceAll('<', '&lt;').replaceAll('>', '&gt;');
    const notebook = path.join(dir, 'notebook.html');
    fs.writeFileSync(notebook, `<!doctype html><title>notebook</title><p>cell output:</p>
<iframe class="memviz-viewer" style="width:100%;height:720px;border:0" srcdoc="${escaped}"></iframe>`);
    const b = await startChromium(BROKEN_WEBGPU_ARGS, 'memviz-gpufb-');
    try {
      const { page } = b;
      await page.setViewportSize({ width: 1280, height: 900 });
      for (const [name, url] of [['report', pathToFileURL(report).href], ['notebook', pathToFileURL(notebook).href]]) {
        await page.goto(url);
        let target = page;
        if (name === 'notebook') {
          const el = await page.waitForSelector('iframe.memviz-viewer');
          target = await el.contentFrame();
        }
        await target.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.memvizState), null, { timeout: TIMEOUT_MS });
        const status = await pageStatus(target);
        assert.equal(status.state, 'ready', `${name}: ${JSON.stringify(status)}`);
        assert.equal(status.backend, 'webgl2', name);
        assertNotice(status, /WebGPU does not work here/);
        await assertDrawn(target, target.locator('#plot'), `gpu-broken-${name}.png`);
        await page.screenshot({ path: path.join(SCREENSHOTS, `gpu-broken-${name}-page.png`) });
      }
    } finally {
      await b.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
