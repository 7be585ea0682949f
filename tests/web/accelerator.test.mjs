// Which accelerator wrote a file (issue 28 item 4), and the device select's label (issue 29 item
// 5), at 1440x900 and 1280x720 on both drawing backends: files written by `generate.py
// accelerator KIND` as CUDA, Intel XPU and Ascend NPU write them (docs/formats.md §2) show their
// accelerator in the header and their devices as `cuda:N` / `xpu:N` / `npu:N` in the device
// select and the Files panel; a file that does not say shows nothing; the device select reads
// "1 event" for one and is never narrower than its text; a `memviz html` report says the same.
// Needs dist/ (or MEMVIZ_DIST) and target/release/memviz like page.test.mjs; writes screenshots
// to target/screenshots/accelerator-*.png.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  DIST, ROOT, SCREENSHOTS, TIMEOUT_MS, BACKENDS, cliText, generate, poll, viewerState,
  serveDistForTests, chromiumForTests, loadViewer,
} from './browser.mjs';

const FIXTURES = path.join(ROOT, 'target/accelerator-fixtures');
const TEST = { timeout: 180_000 };
const fixture = (name) => path.join(FIXTURES, name);
const SIZES = [[1440, 900], [1280, 720]];
/** Each generated kind: the header's words and the device prefix. */
const KINDS = {
  cuda: { text: 'CUDA snapshot', prefix: 'cuda' },
  xpu: { text: 'Intel XPU snapshot', prefix: 'xpu' },
  npu: { text: 'Ascend NPU snapshot', prefix: 'npu' },
};

const misses = [];

const served = serveDistForTests({
  prepare() {
    fs.mkdirSync(FIXTURES, { recursive: true });
    for (const kind of Object.keys(KINDS)) generate(fixture(`${kind}.pickle`), 'accelerator', kind, fixture(`${kind}.pickle`));
    // vector.pickle's events have no frames and it has no allocator_settings: nothing says.
    generate(fixture('small/vector.pickle'), 'small', fixture('small'));
  },
  onMiss: (m) => misses.push(m),
});

/** Opens `file` through the file input and waits until it is the file shown, ready. */
async function openFile(page, file) {
  const n = await page.locator('#file-select option').count();
  await page.setInputFiles('#file-input', file);
  await poll(() => page.evaluate((k) => document.querySelectorAll('#file-select option').length === k
    && document.body.dataset.memvizState === 'ready', n + 1), `${path.basename(file)} ready`);
}

/** The header's accelerator words ('' when hidden) and their title. */
const accelerator = (page) => page.evaluate(() => {
  const e = document.getElementById('file-accelerator');
  return { text: e.hidden ? '' : e.textContent, title: e.title, visible: !e.hidden && e.getClientRects().length > 0 };
});

/**
 * The device select's options, and whether it is clipped: its width against the width the same
 * select takes with no limit (a select's scrollWidth equals its clientWidth whatever its text),
 * its right edge against the controls row's (which hides what overflows), and that row's
 * scrollWidth against its clientWidth.
 */
const deviceSelect = (page) => page.evaluate(() => {
  const sel = /** @type {HTMLSelectElement} */ (document.getElementById('device-select'));
  const cs = getComputedStyle(sel);
  const free = /** @type {HTMLSelectElement} */ (sel.cloneNode(true));
  free.removeAttribute('id');
  Object.assign(free.style, {
    position: 'absolute', visibility: 'hidden', left: '0', top: '0', maxWidth: 'none', width: 'auto',
    font: cs.font, padding: cs.padding, border: cs.border, boxSizing: cs.boxSizing,
  });
  document.body.append(free);
  const natural = free.getBoundingClientRect().width;
  free.remove();
  const row = document.getElementById('view-controls');
  const r = sel.getBoundingClientRect();
  return {
    options: [...sel.options].map((o) => o.textContent),
    selected: sel.options[sel.selectedIndex]?.textContent,
    width: r.width,
    natural,
    right: r.right,
    rowRight: row.getBoundingClientRect().right,
    scrollWidth: sel.scrollWidth,
    clientWidth: sel.clientWidth,
    rowScroll: row.scrollWidth,
    rowClient: row.clientWidth,
  };
});

/** Asserts the device select shows every label whole. */
function assertNotClipped(d, what) {
  assert.ok(d.width >= d.natural - 0.5, `${what}: the select (${d.width}px) is as wide as its text needs (${d.natural}px)`);
  assert.ok(d.right <= d.rowRight + 0.5, `${what}: the select ends inside the controls row (${d.right} <= ${d.rowRight})`);
  assert.ok(d.scrollWidth <= d.clientWidth, `${what}: select scrollWidth ${d.scrollWidth} <= clientWidth ${d.clientWidth}`);
  assert.ok(d.rowScroll <= d.rowClient + 1, `${what}: nothing in the controls row overflows (${d.rowScroll} > ${d.rowClient})`);
}

for (const backend of BACKENDS) {
  describe(`accelerator and device select with ${backend.name}`, () => {
    let page;
    const shot = (name) => page.screenshot({ path: path.join(SCREENSHOTS, `accelerator-${backend.name}-${name}.png`) });
    const fresh = (w, h) => loadViewer(page, `${served.url}${backend.query}`, w, h);

    chromiumForTests(backend.args, 'memviz-accelerator-', (p) => { page = p; });

    for (const [w, h] of SIZES) {
      test(`${w}x${h}: CUDA, XPU and NPU files name their accelerator and devices; the device select is whole`, TEST, async () => {
        await fresh(w, h);
        const kinds = Object.keys(KINDS);
        for (const [i, kind] of kinds.entries()) {
          const { text, prefix } = KINDS[kind];
          await openFile(page, fixture(`${kind}.pickle`));
          assert.equal((await viewerState(page)).device, 1, `${kind}: opens on the device with the oom`);
          const a = await accelerator(page);
          assert.equal(a.text, text, `${kind}: the header says which accelerator wrote it`);
          assert.ok(a.visible, `${kind}: shown`);
          assert.match(a.title, new RegExp(`^Written on .+, told by `), `${kind}: the title gives the evidence`);
          const d = await deviceSelect(page);
          assert.deepEqual(d.options, [`${prefix}:0 · 598 events`, `${prefix}:1 ⚠ OOM ×1 · 250 events`, `${prefix}:2 · 1 event`], kind);
          assert.equal(d.selected, `${prefix}:1 ⚠ OOM ×1 · 250 events`);
          assertNotClipped(d, `${w}x${h} ${kind}`);
          await shot(`${w}-${kind}`);
          // Files panel: each opened file's device with its own prefix.
          await page.click('#tabs button[data-panel="files-panel"]');
          await poll(async () => (await page.locator('#files-rows tr').count()) === i + 1, `${kind}: ${i + 1} rows in Files`);
          const devices = await poll(async () => {
            const cells = await page.locator('#files-rows tr td:nth-child(2)').allTextContents();
            return cells.length === i + 1 ? cells : null;
          }, 'the Files panel\'s device cells');
          assert.deepEqual(devices, kinds.slice(0, i + 1).map((k) => `${KINDS[k].prefix}:0`), `${kind}: the Files panel`);
          if (i === kinds.length - 1) await shot(`${w}-files`);
          await page.click('#tabs button[data-panel="files-panel"]'); // closes the drawer again
        }
        // The other devices fit too (the select's width is its widest label whatever is chosen).
        await page.selectOption('#device-select', '2');
        await poll(async () => (await viewerState(page)).device === 2, 'device 2');
        assertNotClipped(await deviceSelect(page), `${w}x${h} device 2`);
        // Switching back to the CUDA file: its words and names again.
        await page.selectOption('#file-select', '0');
        await poll(async () => (await accelerator(page)).text === KINDS.cuda.text, 'the CUDA file\'s header');
        assert.match((await deviceSelect(page)).selected, /^cuda:/);
      });
    }

    test('a file that does not say which accelerator wrote it shows nothing, and cuda names', TEST, async () => {
      await fresh(1440, 900);
      await openFile(page, fixture('small/vector.pickle'));
      const a = await accelerator(page);
      assert.deepEqual([a.text, a.visible], ['', false], 'nothing alarming: nothing at all');
      const d = await deviceSelect(page);
      assert.ok(d.options.every((o) => o.startsWith('cuda:')), d.options.join());
      assertNotClipped(d, 'vector');
      await shot('unknown');
    });

    test('a memviz html report of an XPU file says so and names xpu devices', TEST, async () => {
      const out = fixture(`xpu-${backend.name}.html`);
      cliText('html', fixture('xpu.pickle'), '-o', out, '--dist', DIST);
      await page.setViewportSize({ width: 1280, height: 720 });
      await page.goto(`${pathToFileURL(out).href}${backend.query}`);
      await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.memvizState), null, { timeout: TIMEOUT_MS });
      assert.equal(await page.evaluate(() => document.body.dataset.memvizState), 'ready');
      assert.equal((await accelerator(page)).text, KINDS.xpu.text);
      const d = await deviceSelect(page);
      assert.equal(d.selected, 'xpu:1 ⚠ OOM ×1 · 250 events');
      assertNotClipped(d, 'report');
      await shot('report-xpu');
    });
  });
}

describe('the server', () => {
  test('no request missed', () => {
    assert.deepEqual(misses, []);
  });
});
