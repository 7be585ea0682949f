// The "What if" tab (issue 31 item 5) on both drawing backends: a generated fixture opened, the
// tab shows the recorded settings; expandable_segments and a 16 GB card picked, Run shows the
// answers and draws the simulated reserved curve over the Active Memory Timeline (its pixels
// counted on the canvas, its top at the simulated peak) and the Cached Segment Timeline; a
// capacity too small marks the simulated OOM; Sweep fills 8 rows, one marked best; Cancel during
// a sweep stops it and the page goes on; Clear removes the curve; a deep link brings the
// settings back. Needs dist/ (or MEMVIZ_DIST) and the CLI like page.test.mjs; writes
// screenshots to target/screenshots/whatif-*.png.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  ROOT, SCREENSHOTS, BACKENDS, generate, poll, viewerState, serveDistForTests, chromiumForTests, loadViewer, openFile,
} from './browser.mjs';
import { decodePng } from './page_png.mjs';

const FIXTURES = path.join(ROOT, 'target/whatif-fixtures');
const TEST = { timeout: 240_000 };
const small = (name) => path.join(FIXTURES, 'small', name);

const served = serveDistForTests({
  prepare() {
    fs.mkdirSync(FIXTURES, { recursive: true });
    generate(small('proto5.pickle'), 'small', path.join(FIXTURES, 'small'));
  },
});

/** The curve's colour (Rust's `SIM_RGBA`). */
const SIM = [214, 0, 170];

/** The canvas's pixels of the curve's colour: count and the topmost row (canvas CSS px). */
async function curvePixels(page) {
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const img = decodePng(await page.locator('#plot').screenshot());
  let count = 0;
  let top = Infinity;
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      const i = (y * img.width + x) * 4;
      const px = img.pixels;
      if (Math.abs(px[i] - SIM[0]) < 40 && px[i + 1] < 60 && Math.abs(px[i + 2] - SIM[2]) < 40) {
        count++;
        top = Math.min(top, y);
      }
    }
  }
  return { count, top };
}

/** Runs the tab's Run or Sweep button to its end; resolves with the last progress. */
async function runButton(page, id) {
  await page.click(id);
  return poll(() => page.evaluate(() => {
    const w = window.memviz.whatIf;
    return !w.running && w.last ? w.last : null;
  }), `${id} done`);
}

for (const backend of BACKENDS) {
  describe(`what if (${backend.name})`, () => {
    let page;
    chromiumForTests(backend.args, `memviz-whatif-${backend.name}-`, async (p) => {
      page = p;
      await loadViewer(page, `${served.url}${backend.query}`, 1280, 900);
    });

    test('the tab shows the recorded settings; Run with expandable on 16 GB draws the curve; Clear removes it', TEST, async () => {
      await openFile(page, small('proto5.pickle'));
      await page.evaluate(() => window.memviz.openTab('whatif'));
      await poll(async () => (await page.textContent('#whatif-rec-expandable_segments')).includes('recorded: expandable_segments:False'), 'the recorded settings');
      assert.equal(await page.isChecked('#whatif-expandable'), false);
      assert.equal(await page.inputValue('#whatif-non-split'), '20');
      assert.equal((await curvePixels(page)).count, 0, 'no curve before a run');
      await page.check('#whatif-expandable');
      await page.selectOption('#whatif-capacity', '16');
      const p = await runButton(page, '#whatif-run');
      assert.ok(p.result, p.text);
      const row = p.result.rows[0];
      assert.equal(row.settings, 'expandable_segments:True');
      assert.equal(p.result.capacity, '16.0GiB');
      const text = await page.textContent('#whatif-result');
      for (const w of ['peak reserved', 'peak allocated', 'fragmentation at the peak', 'cudaMalloc / cudaFree', 'first OOM', 'smallest capacity']) {
        assert.ok(text.includes(w), `${w} in ${text}`);
      }
      assert.ok(text.includes(row.min_capacity), text);
      // The curve on the canvas, its top at the simulated peak reserved.
      const curve = await poll(async () => { const c = await curvePixels(page); return c.count > 50 ? c : null; }, 'the curve drawn');
      const st = await viewerState(page);
      const g = st.geometry.plot;
      const want = g.bottom - (row.peak_reserved_bytes - st.y_range[0]) / (st.y_range[1] - st.y_range[0]) * (g.bottom - g.top);
      assert.ok(Math.abs(curve.top - want) <= 3, `curve top ${curve.top}, peak at ${want}`);
      assert.equal(await page.isVisible('#whatif-mark'), true);
      assert.ok((await page.textContent('#whatif-label')).includes('expandable_segments:True'));
      await page.screenshot({ path: path.join(SCREENSHOTS, `whatif-${backend.name}-run.png`) });
      await page.locator('#whatif-result').scrollIntoViewIfNeeded();
      await page.locator('#whatif-panel').screenshot({ path: path.join(SCREENSHOTS, `whatif-${backend.name}-run-panel.png`) });
      // The Cached Segment Timeline draws it too.
      await page.evaluate(() => window.memviz.setView('segments'));
      await poll(async () => (await curvePixels(page)).count > 50, 'the curve over the segments');
      await page.screenshot({ path: path.join(SCREENSHOTS, `whatif-${backend.name}-segments.png`) });
      await page.evaluate(() => window.memviz.setView('active'));
      // Clear: no curve, no legend.
      await page.click('#whatif-clear');
      await poll(async () => (await curvePixels(page)).count === 0, 'the curve cleared');
      assert.equal(await page.isVisible('#whatif-mark'), false);
    });

    test('a capacity too small marks the simulated OOM with its site', TEST, async () => {
      await page.uncheck('#whatif-expandable');
      await page.selectOption('#whatif-capacity', 'custom');
      await page.fill('#whatif-custom', '0.004');
      const p = await runButton(page, '#whatif-run');
      const oom = p.result.rows[0].first_oom;
      assert.ok(oom, 'an OOM at 4 MiB');
      assert.ok((await page.textContent('#whatif-result .whatif-oom')).includes(oom.site));
      const mark = await poll(() => page.$('#oom-marks .whatif-oom-mark'), 'the OOM mark');
      assert.ok((await mark.getAttribute('title')).includes(oom.site));
      await page.screenshot({ path: path.join(SCREENSHOTS, `whatif-${backend.name}-oom.png`) });
      await page.locator('#whatif-result').scrollIntoViewIfNeeded();
      await page.locator('#whatif-panel').screenshot({ path: path.join(SCREENSHOTS, `whatif-${backend.name}-oom-panel.png`) });
    });

    test('Sweep shows 8 rows with the best marked; Cancel stops a sweep and the page goes on', TEST, async () => {
      await page.selectOption('#whatif-capacity', '16');
      const p = await runButton(page, '#whatif-sweep');
      assert.equal(p.result.rows.length, 8);
      assert.equal(await page.locator('#whatif-rows tr').count(), 8);
      assert.equal(await page.locator('#whatif-rows tr.best').count(), 1);
      assert.ok((await page.textContent('#whatif-rows tr.best')).startsWith('★'));
      await poll(async () => (await curvePixels(page)).count > 50, 'the best row\'s curve');
      await page.screenshot({ path: path.join(SCREENSHOTS, `whatif-${backend.name}-sweep.png`) });
      await page.locator('#whatif-table').scrollIntoViewIfNeeded();
      await page.locator('#whatif-panel').screenshot({ path: path.join(SCREENSHOTS, `whatif-${backend.name}-sweep-panel.png`) });
      // Cancel once the sweep has done a replay (the page clicks it as the status says so, so
      // a fast machine cannot finish the sweep first).
      await page.evaluate(() => {
        const status = document.getElementById('whatif-status');
        const obs = new MutationObserver(() => {
          if (/^Sweep: /.test(status.textContent)) {
            obs.disconnect();
            document.getElementById('whatif-cancel').click();
          }
        });
        obs.observe(status, { childList: true, characterData: true, subtree: true });
      });
      await page.click('#whatif-sweep');
      const last = await poll(() => page.evaluate(() => {
        const w = window.memviz.whatIf;
        return !w.running ? { text: document.getElementById('whatif-status').textContent, result: w.last && w.last.result } : null;
      }), 'the sweep stopped');
      assert.equal(last.text, 'Cancelled.');
      assert.equal(last.result, null);
      assert.equal(await page.isEnabled('#whatif-run'), true);
      // The page goes on: the view answers, and a run runs.
      assert.ok(await viewerState(page));
      const again = await runButton(page, '#whatif-run');
      assert.ok(again.result);
    });

    test('a deep link keeps the settings and the capacity', TEST, async () => {
      await page.check('#whatif-expandable');
      await page.fill('#whatif-max-split', '512');
      await page.dispatchEvent('#whatif-max-split', 'change');
      await page.selectOption('#whatif-capacity', '40');
      const hash = await page.evaluate(() => window.memviz.links.write());
      assert.match(hash, /wif=expandable_segments%3ATrue%2Cmax_split_size_mb%3A512/);
      assert.match(hash, /wcap=40/);
      // Another form, then the link.
      await page.uncheck('#whatif-expandable');
      await page.fill('#whatif-max-split', '');
      await page.selectOption('#whatif-capacity', '');
      await page.evaluate((h) => window.memviz.links.restore(h), hash);
      assert.equal(await page.isChecked('#whatif-expandable'), true);
      assert.equal(await page.inputValue('#whatif-max-split'), '512');
      assert.equal(await page.inputValue('#whatif-capacity'), '40');
    });
  });
}
