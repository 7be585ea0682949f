// The page's layout and the habits memory_viz users rely on (issue 16), once per drawing
// backend: the details pane, the State History's stack and outline, several files from one
// input, the app layout at 1280x720 and 1440x900, OOM devices, the keyboard help, dark mode
// and the panels' text. Needs dist/ and target/release/memviz like page.test.mjs; writes
// fixtures to target/page-fixtures/ and screenshots to target/screenshots/layout-*.png.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { decodePng } from './page_png.mjs';
import {
  ROOT, SCREENSHOTS, generate, poll, viewerState, pagePoint, BACKENDS,
  serveDistForTests, chromiumForTests, loadViewer, waitForViewer,
} from './browser.mjs';

const FIXTURES = path.join(ROOT, 'target/page-fixtures');
const TEST = { timeout: 120_000 };
const MiB = 1024 * 1024;
const fixture = (name) => path.join(FIXTURES, name);

const served = serveDistForTests({
  prepare() {
    fs.mkdirSync(FIXTURES, { recursive: true });
    generate(fixture('small/multidevice.pickle'), 'small', fixture('small'));
    generate(fixture('landmarks.pickle'), 'landmarks', fixture('landmarks.pickle'));
    generate(fixture('oomdevice.pickle'), 'oomdevice', fixture('oomdevice.pickle'));
  },
});

/** Opens `files` through the page's file input; resolves once the page shows `count` files. */
async function openFiles(page, files, count = 1) {
  await page.setInputFiles('#file-input', files);
  await poll(async () => page.evaluate((n) => document.body.dataset.memvizState === 'ready'
    && document.querySelectorAll('#file-select option').length >= n, count), `${count} files open`);
}

/** Whether `selector`'s box lies inside the viewport. */
async function inViewport(page, selector) {
  const box = await page.locator(selector).boundingBox();
  const vp = page.viewportSize();
  return box !== null && box.y >= 0 && box.y + box.height <= vp.height + 0.5 && box.x >= 0 && box.x + box.width <= vp.width + 0.5;
}

for (const backend of BACKENDS) {
  describe(`layout with ${backend.name}`, () => {
    let page;
    const shot = (name) => path.join(SCREENSHOTS, `layout-${backend.name}-${name}.png`);

    chromiumForTests(backend.args, 'memviz-layout-', async (p) => {
      page = p;
      await loadViewer(page, `${served.url}${backend.query}`, 1440, 900);
    });

    test('the first screen says "GPU drawing"; `?` opens the shortcuts, Esc closes them', TEST, async () => {
      assert.equal(await page.locator('#backend').textContent(), 'GPU drawing');
      assert.equal(await page.locator('#intro-text').isVisible(), true, 'the intro before a file');
      await page.keyboard.press('?');
      await page.locator('#help').waitFor({ state: 'visible' });
      const help = await page.locator('#help').textContent();
      for (const word of ['wheel', 'drag', 'W', 'A', '+', '0', 'brush', 'pin', 'Esc']) assert.ok(help.includes(word), `help names ${word}`);
      await page.screenshot({ path: shot('help') });
      await page.keyboard.press('Escape');
      await page.locator('#help').waitFor({ state: 'hidden' });
      await page.click('#help-button');
      await page.locator('#help').waitFor({ state: 'visible' });
      await page.click('#help-close');
      await page.locator('#help').waitFor({ state: 'hidden' });
    });

    test('two files open from one input; the intro collapses; the plot hint shows until the first interaction', TEST, async () => {
      await openFiles(page, [fixture('landmarks.pickle'), fixture('small/multidevice.pickle')], 2);
      const names = await page.locator('#file-select option').allTextContents();
      assert.equal(names.length, 2, names.join(', '));
      assert.ok(names[0].endsWith('landmarks.pickle') && names[1].endsWith('multidevice.pickle'), names.join(', '));
      assert.equal(await page.locator('#intro-text').isVisible(), false, 'the intro collapsed');
      assert.equal(await page.locator('#plot-hint').isVisible(), true);
      await page.locator('#plot').focus();
      await page.keyboard.press('0');
      await page.locator('#plot-hint').waitFor({ state: 'hidden' });
      await page.selectOption('#file-select', '0');
      await poll(async () => (await viewerState(page)).elements === 4, 'landmarks shown');
    });

    test('the details pane shows the hovered allocation: title, facts, Python frames first; click pins, Esc unpins', TEST, async () => {
      const at = await pagePoint(page, 2.5, 8 * MiB); // beta (page.test.mjs LANDMARK_POINTS)
      await page.mouse.move(at.x, at.y);
      await page.waitForFunction(() => !document.getElementById('tooltip').hidden
        && document.getElementById('tooltip-title').textContent.includes('Size: 8.0MiB'));
      const pane = await page.locator('#details-pane').boundingBox();
      const plot = await page.locator('#plot').boundingBox();
      assert.ok(pane.x >= plot.x + plot.width - 1, 'docked beside the plot, not over it');
      const frames = await page.locator('#tooltip-body ol li').allTextContents();
      assert.equal(frames[0], '/src/landmarks/beta.py:22:make_beta', frames.join('\n'));
      assert.match(await page.locator('#tooltip-body').textContent(), /Python frames \(\d+, innermost first\)/);
      assert.match(await page.locator('#hover-hint').textContent(), /Size: 8\.0MiB/);
      await page.mouse.click(at.x, at.y);
      await page.locator('#tooltip-actions').waitFor({ state: 'visible' });
      assert.equal(await page.locator('#hover-hint').isVisible(), false, 'no hover hint over a pinned item');
      await page.screenshot({ path: shot('details-pinned') });
      await page.keyboard.press('Escape');
      await page.locator('#tooltip-actions').waitFor({ state: 'hidden' });
      // The pane folds away and comes back.
      await page.click('#details-toggle');
      assert.equal(await page.locator('#details-content').isVisible(), false);
      await page.click('#details-toggle');
      assert.equal(await page.locator('#details-content').isVisible(), true);
    });

    test('hovering lays out nothing but the pane and the hint: the plot and the controls keep their size, the hint stays in the plot', TEST, async () => {
      await page.evaluate(() => {
        const w = /** @type {any} */ (window);
        w.layoutChanges = [];
        const ro = new ResizeObserver((entries) => {
          for (const e of entries) w.layoutChanges.push(`${e.target.id} ${e.contentRect.width}x${e.contentRect.height}`);
        });
        for (const id of ['plot', 'view-controls', 'details-pane', 'drawer']) ro.observe(document.getElementById(id));
      });
      await page.waitForTimeout(200);
      await page.evaluate(() => { /** @type {any} */ (window).layoutChanges = []; });
      const plot = await page.locator('#plot').boundingBox();
      // The four landmarks (stacks of different lengths), a gap above them, and back.
      const points = [[1.5, 2 * MiB], [2.5, 8 * MiB], [5.5, 9 * MiB], [7.5, 9 * MiB], [1.5, 14 * MiB], [2.5, 8 * MiB]];
      for (const [x, y] of points) {
        const at = await pagePoint(page, x, y);
        await page.mouse.move(at.x, at.y, { steps: 3 });
        await page.waitForTimeout(150);
        const hint = await page.locator('#hover-hint');
        if (await hint.isVisible()) {
          const b = await hint.boundingBox();
          assert.ok(b.x >= plot.x - 1 && b.x + b.width <= plot.x + plot.width + 1 && b.y >= plot.y - 1 && b.y + b.height <= plot.y + plot.height + 1,
            `the hint ${JSON.stringify(b)} is inside the plot ${JSON.stringify(plot)}`);
        }
      }
      assert.match(await page.locator('#tooltip-title').textContent(), /Size: 8\.0MiB/, 'the pane shows the last allocation hovered');
      assert.deepEqual(await page.evaluate(() => /** @type {any} */ (window).layoutChanges), [], 'no size changed while hovering');
      await page.mouse.move(1, 1);
    });

    test('an OOM device is marked in the device list and the file opens on it; the State History explains it in view, with source lines', TEST, async () => {
      await openFiles(page, fixture('oomdevice.pickle'), 3);
      const options = await page.locator('#device-select option').allTextContents();
      assert.equal(options.length, 2, options.join(', '));
      assert.doesNotMatch(options[0], /OOM/);
      assert.match(options[1], /OOM ×1/);
      assert.equal(await page.locator('#device-select').inputValue(), '1', 'opened on the OOM device');
      // The timeline marks the OOM; its button opens the State History on it, explained.
      const marks = page.locator('#oom-marks button');
      await marks.first().waitFor({ state: 'visible' });
      assert.equal(await marks.count(), 1);
      const mark = await marks.first().boundingBox();
      const plot = await page.locator('#plot').boundingBox();
      assert.ok(mark.x > plot.x && mark.x + mark.width < plot.x + plot.width, 'the marker is on the plot');
      await page.screenshot({ path: shot('oom-marker') });
      await marks.first().click();
      await page.locator('#oom-panel').waitFor({ state: 'visible' });
      assert.equal(await page.locator('#view-select').inputValue(), 'state');
      assert.match(await page.locator('#state-rows .row[aria-selected="true"]').textContent(), /OOM/);
      assert.ok(await inViewport(page, '#oom-panel > summary'), 'the explanation is in view');
      const lines = await page.locator('#oom-biggest .source-line').allTextContents();
      assert.ok(lines.length > 0 && lines.every((l) => /\.py:\d+:\S/.test(l) || l === '(no stack recorded)'), lines.join('\n'));
      await page.screenshot({ path: shot('oom') });
    });

    test('State History: the selected event\'s stack is in the details pane and its block is outlined in the map', TEST, async () => {
      // The last alloc event of the OOM device: select it by searching the list.
      const sel = await page.evaluate(async () => {
        const sh = window.memviz.stateHistory;
        for (let k = sh.count - 1; k >= 0; k -= 1) {
          const s = await sh.select(k);
          if (s && s.action === 'alloc' && s.frames.length > 0) return s;
        }
        return null;
      });
      assert.ok(sel, 'an alloc event');
      await page.waitForFunction((k) => document.getElementById('tooltip-title').textContent.startsWith(`event ${k}:`), sel.event);
      const body = await page.locator('#tooltip-body').textContent();
      assert.ok(body.includes(sel.frames.find((_, i) => sel.python[i]) || sel.frames[0]), body);
      const rowText = await page.locator('#state-rows .row[aria-selected="true"]').textContent();
      assert.ok(!rowText.includes('\n') && !rowText.includes('(stream 0)'), `one line, no "(stream 0)": ${rowText}`);
      const rowFits = await page.evaluate(() => {
        const r = document.querySelector('#state-rows .row[aria-selected="true"]');
        return r.scrollWidth <= r.clientWidth + 1;
      });
      assert.ok(rowFits, 'the row is not cut off');
      // The outline: the selection orange (240, 120, 0) around the block.
      const png = decodePng(await page.locator('#plot').screenshot({ path: shot('state-outline') }));
      let orange = 0;
      for (let i = 0; i < png.pixels.length; i += 4) {
        const [r, g, bl] = [png.pixels[i], png.pixels[i + 1], png.pixels[i + 2]];
        if (Math.abs(r - 240) < 24 && Math.abs(g - 120) < 30 && bl < 40) orange += 1;
      }
      assert.ok(orange >= 8, `the selected block is outlined (${orange} orange px)`);
    });

    test('app layout at 1280x720: toolbar in one row, overview strip visible, a drawer tab opens above the fold', TEST, async () => {
      await page.setViewportSize({ width: 1280, height: 720 });
      try {
        await page.evaluate(() => window.memviz.setView('active'));
        const tops = await page.evaluate(() => [...document.querySelectorAll('#view-controls > *')]
          .filter((e) => e.getBoundingClientRect().width > 0)
          .map((e) => ({ id: e.id || e.textContent.trim().slice(0, 12), top: e.getBoundingClientRect().top, right: e.getBoundingClientRect().right })));
        const rows = new Set(tops.map((t) => Math.round(t.top / 8)));
        assert.ok(rows.size <= 2 && Math.max(...tops.map((t) => t.top)) - Math.min(...tops.map((t) => t.top)) < 12, `one row: ${JSON.stringify(tops)}`);
        assert.ok(Math.max(...tops.map((t) => t.right)) <= 1280, `nothing past the edge: ${JSON.stringify(tops)}`);
        const box = await page.locator('#plot').boundingBox();
        const st = await poll(async () => {
          const x = await viewerState(page);
          return x && Math.abs(x.geometry.css_h - (box.height - 2)) < 2 ? x : null;
        }, 'the viewer follows the 1280x720 canvas');
        assert.ok(box.y + box.height <= 720, `the plot with its overview strip is above the fold: ${JSON.stringify(box)}`);
        assert.ok(st.geometry.plot.bottom < box.height, 'the overview below the plot is inside the canvas');
        for (const tab of ['lines-panel', 'live-panel', 'leaks-panel', 'files-panel', 'compare-panel', 'settings', 'summary']) {
          await page.click(`#tabs button[data-panel="${tab}"]`);
          await page.locator(`#${tab}`).waitFor({ state: 'visible' });
          assert.ok(await inViewport(page, `#${tab} > summary`), `${tab} opens above the fold`);
          assert.equal(await page.locator(`#tabs button[data-panel="${tab}"]`).getAttribute('aria-selected'), 'true');
        }
        await page.screenshot({ path: shot('1280-drawer') });
        await page.click('#tabs button[data-panel="summary"]');
        assert.equal(await page.locator('#summary').isVisible(), false, 'a second click closes the drawer');
        // Controls that do nothing are hidden: no x axis and no Fit in the flamegraph.
        await page.evaluate(() => window.memviz.setView('flame'));
        assert.equal(await page.locator('#x-axis-select').isVisible(), false);
        assert.equal(await page.locator('#fit-button').isVisible(), false);
        // The reserved memory's flamegraph has every frame, and the search (the Active
        // timeline's allocations) does not apply: both hidden there, back at the peak.
        await page.selectOption('#flame-at', 'reserved');
        await page.locator('#search-box').waitFor({ state: 'hidden' });
        assert.equal(await page.locator('#flame-frames').isVisible(), false);
        await page.selectOption('#flame-at', 'peak');
        await page.locator('#search-box').waitFor({ state: 'visible' });
        assert.equal(await page.locator('#flame-frames').isVisible(), true);
        await page.evaluate(() => window.memviz.setView('active'));
        assert.equal(await page.locator('#x-axis-select').isVisible(), true);
        // A select with one option looks normal (not disabled).
        assert.equal(await page.locator('#device-select').isDisabled(), false);
      } finally {
        await page.setViewportSize({ width: 1440, height: 900 });
      }
    });

    test('panels: the age column is filled, sizes never wrap, Private Pools explains itself', TEST, async () => {
      await page.evaluate(() => window.memviz.openTab('live'));
      const r = await page.evaluate(() => window.memviz.liveTable.show(-2));
      assert.ok(r.rows.length > 0);
      const ages = await page.locator('#live-rows tr td:nth-child(3)').allTextContents();
      assert.ok(ages.length > 0 && ages.every((a) => /\d/.test(a)), ages.slice(0, 5).join(', '));
      const wraps = await page.evaluate(() => [...document.querySelectorAll('#live-rows td:nth-child(2), #lines-rows td:nth-child(2)')]
        .filter((td) => getComputedStyle(td).whiteSpace !== 'nowrap').length);
      assert.equal(wraps, 0);
      await page.evaluate(() => window.memviz.openTab(null));
      await page.evaluate(() => window.memviz.setView('pools'));
      assert.match(await page.locator('#view-note').textContent(), /private pool/i);
      await page.evaluate(() => window.memviz.setView('active'));
      assert.equal(await page.locator('#view-note').isVisible(), false);
    });

    test('legibility: distinct legend colours, a darker edge between stacked allocations, phase labels of 11 px that never overlap', TEST, async () => {
      await openFiles(page, fixture('small/expandable.pickle'), 4);
      await page.evaluate(() => window.memviz.setView('active'));
      const swatches = await page.locator('#legend .swatch').evaluateAll((els) => els.map((e) => getComputedStyle(e).backgroundColor));
      assert.ok(swatches.length >= 2, swatches.join(' '));
      assert.equal(new Set(swatches).size, swatches.length, `distinct legend colours: ${swatches.join(' ')}`);
      // Phase labels: at least 11 px, and no two overlap.
      const labels = await page.locator('#phase-labels span').evaluateAll((els) => els.map((e) => {
        const r = e.getBoundingClientRect();
        return { l: r.left, r: r.right, t: r.top, b: r.bottom, size: parseFloat(getComputedStyle(e).fontSize) };
      }));
      assert.ok(labels.length > 0, 'expandable.pickle has named phases');
      for (const [i, a] of labels.entries()) {
        assert.ok(a.size >= 11, `label ${i} is ${a.size} px`);
        for (const b of labels.slice(i + 1)) {
          assert.ok(a.r <= b.l || b.r <= a.l || a.b <= b.t || b.b <= a.t, `labels overlap: ${JSON.stringify([a, b])}`);
        }
      }
      // Tick labels sit below the axis, clear of the plot.
      const st = await viewerState(page);
      const plotBox = await page.locator('#plot').boundingBox();
      const xl = await page.locator('#x-labels span').first().boundingBox();
      assert.ok(xl.y >= plotBox.y + st.geometry.plot.bottom + 2, 'x tick labels below the axis line and its marks');
      // The top row of an allocation is darker than its inside (FLAG_EDGE_TOP), on this backend.
      const img = decodePng(await page.locator('#plot').screenshot({ path: shot('edges') }));
      const p = st.geometry.plot;
      let edges = 0;
      for (let x = Math.ceil(p.left) + 4; x < p.right - 4; x += 7) {
        for (let y = Math.ceil(p.top) + 45; y < p.bottom - 6; y += 1) {
          const px = (yy) => { const i = (yy * img.width + x) * 4; return [img.pixels[i], img.pixels[i + 1], img.pixels[i + 2]]; };
          const [a, b, c] = [px(y - 1), px(y), px(y + 3)];
          const sum = (v) => v[0] + v[1] + v[2];
          // A pixel darker than the inside below it (same hue) with a different colour above it.
          if (sum(b) < 0.8 * sum(c) && sum(c) > 150 && Math.abs(b[0] * sum(c) - c[0] * sum(b)) < 0.1 * sum(b) * sum(c) && sum(a) !== sum(b)) edges += 1;
        }
      }
      assert.ok(edges >= 10, `darker top edges found: ${edges}`);
    });

    test('flamegraph: 11 px labels clipped left and right only, breadcrumb chips name the function first, a sane "at" select', TEST, async () => {
      await page.evaluate(() => window.memviz.setView('flame'));
      const info = await page.evaluate(() => window.memviz.flameControls.refresh());
      assert.ok(info.labels.length > 0, 'frames are named');
      // (Labels are redrawn after every frame: read one in a single evaluation.)
      const style = await page.evaluate(() => {
        const c = getComputedStyle(document.querySelector('#flame-labels span'));
        return { size: parseFloat(c.fontSize), oy: c.overflowY, ox: c.overflowX };
      });
      assert.ok(style.size >= 11 && style.oy === 'visible' && style.ox === 'clip', JSON.stringify(style));
      const deep = info.labels.find((l) => /:\d+:/.test(l.text));
      if (deep) {
        await page.evaluate((n) => window.memviz.view({ method: 'flame_zoom_to', node: n }), deep.node);
        const again = await page.evaluate(() => window.memviz.flameControls.refresh());
        const chips = await page.locator('#flame-breadcrumb button').allTextContents();
        assert.equal(chips.length, again.breadcrumb.length);
        assert.match(chips[chips.length - 1], / · [^/\\]+:\d+$/, chips.join(' | '));
      }
      const at = await page.locator('#flame-at').boundingBox();
      assert.ok(at.width <= 16 * 16 + 1, `the "at" select is ${at.width} px wide`);
      const row = await page.locator('#flame-controls').boundingBox();
      assert.ok(row.height <= 34, `one row of controls: ${row.height} px`);
      await page.screenshot({ path: shot('flame') });
      await page.evaluate(() => window.memviz.setView('active'));
    });

    test('dark mode: the toggle switches the page and the canvas', TEST, async () => {
      const light = decodePng(await page.locator('#plot').screenshot());
      await page.click('#theme-toggle');
      assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
      await page.waitForTimeout(300);
      const dark = decodePng(await page.locator('#plot').screenshot({ path: shot('dark') }));
      // The canvas's corner (outside the plot): white in light, dark in dark.
      const corner = (img) => img.pixels.slice((2 * img.width + 2) * 4, (2 * img.width + 2) * 4 + 3);
      assert.ok(Math.min(...corner(light)) > 200, `light corner ${corner(light)}`);
      assert.ok(Math.max(...corner(dark)) < 80, `dark corner ${corner(dark)}`);
      const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      assert.match(bg, /rgb\((\d|[1-5]\d), /, `dark page ${bg}`);
      await page.screenshot({ path: shot('dark-page') });
      await page.click('#theme-toggle');
      assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'light');
    });

    test('dark mode from the system (prefers-color-scheme, no choice stored) covers the canvas from the first file on', TEST, async () => {
      await page.evaluate(() => localStorage.removeItem('memviz-theme'));
      await page.emulateMedia({ colorScheme: 'dark' });
      try {
        await page.goto(`${served.url}${backend.query}`);
        await waitForViewer(page);
        await openFiles(page, fixture('landmarks.pickle'), 1);
        await page.waitForTimeout(300);
        const img = decodePng(await page.locator('#plot').screenshot({ path: shot('dark-system') }));
        const corner = img.pixels.slice((2 * img.width + 2) * 4, (2 * img.width + 2) * 4 + 3);
        assert.ok(Math.max(...corner) < 80, `dark corner ${corner}`);
      } finally {
        await page.emulateMedia({ colorScheme: 'light' });
      }
    });
  });
}
