// The defects a new user hit in the walkthrough (issue 29, item 5), at 1440x900 and 1280x720
// on both drawing backends, each asserted on real geometry: the no-stack heading, the
// flamegraph's toolbar and the highlight status on one line, the drawer leaving the plot half
// the height (its divider by keyboard, kept in the session), the first-use hint covering
// nothing and saying what a click does per view, phase labels elided in the middle, the error
// banner's close button and the notice stepping aside, a deep link waiting for its named file,
// and the reserved memory's flamegraph labels. Needs dist/ (or MEMVIZ_DIST) and
// target/release/memviz like page.test.mjs; writes screenshots to target/screenshots/defects-*.png.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  DIST, ROOT, SCREENSHOTS, generate, poll, viewerState, BACKENDS,
  serveDistForTests, chromiumForTests, loadViewer, openFile, rect, childRects,
} from './browser.mjs';

const FIXTURES = path.join(ROOT, 'target/page-fixtures');
const TEST = { timeout: 180_000 };
const fixture = (name) => path.join(FIXTURES, name);
const SIZES = [[1440, 900], [1280, 720]];

const served = serveDistForTests({
  prepare() {
    fs.mkdirSync(FIXTURES, { recursive: true });
    generate(fixture('small/multidevice.pickle'), 'small', fixture('small'));
    // A file cut before its end (opens with a notice), and bytes that are no snapshot.
    const demo = fs.readFileSync(path.join(DIST, 'assets/demo.pickle'));
    fs.writeFileSync(fixture('defects-cut.pickle'), demo.subarray(0, Math.floor(demo.length * 0.4)));
    fs.writeFileSync(fixture('defects-not-a-snapshot.txt'), 'hello, this is text\n');
  },
});

/** Whether two rectangles overlap (touching edges do not). */
const overlap = (a, b) => a.x < b.right - 0.5 && b.x < a.right - 0.5 && a.y < b.bottom - 0.5 && b.y < a.bottom - 0.5;

for (const backend of BACKENDS) {
  describe(`issue 29 defects with ${backend.name}`, () => {
    let page;
    const shot = (name) => page.screenshot({ path: path.join(SCREENSHOTS, `defects-${backend.name}-${name}.png`) });
    /** A fresh page at `w`x`h` with `hash`, ready for files. */
    const fresh = (w, h, hash = '') => loadViewer(page, `${served.url}${backend.query}${hash}`, w, h, true);

    chromiumForTests(backend.args, 'memviz-defects-', (p) => { page = p; });

    for (const [w, h] of SIZES) {
      test(`${w}x${h}: a block with no recorded stack says "No stack recorded" and shows the explanation as text`, TEST, async () => {
        await fresh(w, h);
        await openFile(page, fixture('small/vector.pickle')); // every trace event has no frames
        await page.evaluate(() => window.memviz.pin(0));
        const body = await poll(async () => {
          const t = await page.locator('#tooltip-body').textContent();
          return t && t.includes('No stack recorded') ? t : null;
        }, 'the pinned element\'s details');
        assert.doesNotMatch(body, /Stack \(\d+ frames?/, 'the explanation is not counted as frames');
        const paras = await page.locator('#tooltip-body .no-stack p').allTextContents();
        assert.equal(paras.length, 6, paras.join('\n'));
        assert.match(paras[0], /has no frames/);
        assert.equal(await page.locator('#tooltip-body ol').count(), 0, 'no frame list');
        const box = await rect(page, '#tooltip-body .no-stack');
        const pane = await rect(page, '#details-pane');
        assert.ok(box.x >= pane.x && box.right <= pane.right + 0.5, `inside the pane: ${JSON.stringify([box, pane])}`);
        await shot(`${w}-no-stack`);
        // The State History's selected event without a stack: the same.
        await page.evaluate(() => window.memviz.pin(-1));
        await page.evaluate(() => window.memviz.setView('state'));
        await page.evaluate(() => window.memviz.stateHistory.select(1));
        await poll(async () => (await page.locator('#tooltip-body').textContent()).includes('No stack recorded'), 'the event without a stack');
        assert.doesNotMatch(await page.locator('#tooltip-body').textContent(), /Stack \(\d+ frames?/);
      });

      test(`${w}x${h}: the flamegraph's toolbar is one line; a Source lines highlight's status stays on the toolbar's line`, TEST, async () => {
        await fresh(w, h);
        await openFile(page, path.join(DIST, 'assets/demo.pickle'));
        await page.evaluate(() => window.memviz.setView('flame'));
        await page.evaluate(() => window.memviz.flameControls.refresh());
        const bar = await rect(page, '#flame-controls');
        const parts = await childRects(page, '#flame-controls');
        for (const p of parts) {
          assert.ok(p.y >= bar.y - 0.5 && p.bottom <= bar.bottom + 0.5 && p.h <= 30, `${p.id} on the one line: ${JSON.stringify(p)} in ${JSON.stringify(bar)}`);
          assert.ok(p.right <= w, `${p.id} inside the window`);
        }
        // "at" beside its select, the frames select (my code / Python / all frames) on one line.
        const at = await page.evaluate(() => {
          const label = document.querySelector('#flame-controls > label');
          const sel = document.getElementById('flame-at').getBoundingClientRect();
          const r = document.createRange();
          r.selectNodeContents(label.firstChild);
          const t = r.getBoundingClientRect();
          return { text: { x: t.x, right: t.right, y: t.y, bottom: t.bottom }, sel: { x: sel.x, y: sel.y, bottom: sel.bottom } };
        });
        assert.ok(at.text.right <= at.sel.x + 0.5 && at.text.bottom > at.sel.y && at.text.y < at.sel.bottom, `"at" left of its select: ${JSON.stringify(at)}`);
        const all = await rect(page, '#flame-frames-label');
        assert.ok(all.h <= 30, `the frames select on one line: ${JSON.stringify(all)}`);
        // The breadcrumb's chips are shown, each inside the bar.
        const crumbs = await page.evaluate(() => [...document.querySelectorAll('#flame-breadcrumb button')].map((e) => {
          const r = e.getBoundingClientRect();
          return { w: r.width, right: r.right };
        }));
        const nav = await rect(page, '#flame-breadcrumb');
        assert.ok(crumbs.length > 0 && crumbs.every((c) => c.w >= 30 && c.right <= nav.right + 0.5), JSON.stringify([crumbs, nav]));
        await shot(`${w}-flame-toolbar`);
        // A Source lines row highlighted: its status stays on the toolbar's line and inside the window.
        const plotBefore = await rect(page, '#plot');
        const ctrlBefore = await rect(page, '#view-controls');
        await page.evaluate(() => window.memviz.openTab('lines'));
        await page.locator('#lines-rows tr').first().waitFor();
        await page.locator('#lines-rows tr').first().click();
        await poll(async () => /highlighted/.test(await page.locator('#search-status').textContent()), 'the highlight status');
        const status = await rect(page, '#search-status');
        const ctrl = await rect(page, '#view-controls');
        assert.ok(status.right <= w && status.h <= 24, `status on one line inside the window: ${JSON.stringify(status)}`);
        assert.ok(Math.abs(ctrl.h - ctrlBefore.h) < 1, `the toolbar keeps its height: ${ctrlBefore.h} → ${ctrl.h}`);
        assert.ok(Math.abs((await rect(page, '#plot')).y - plotBefore.y) < 1, 'the plot does not move down');
        const overflow = await page.evaluate(() => {
          const v = document.getElementById('view-controls');
          return { sw: document.documentElement.scrollWidth, cw: document.documentElement.clientWidth, vsw: v.scrollWidth, vcw: v.clientWidth };
        });
        assert.ok(overflow.sw <= overflow.cw, `no page overflow: ${JSON.stringify(overflow)}`);
        await shot(`${w}-flame-lines-status`);
        await page.evaluate(() => window.memviz.openTab(null));
      });

      test(`${w}x${h}: an open drawer tab leaves the plot at least half the height; its divider works by keyboard and is kept`, TEST, async () => {
        await fresh(w, h);
        await openFile(page, path.join(DIST, 'assets/demo.pickle'));
        for (const tab of ['lines', 'live', 'leaks', 'files', 'settings', 'summary']) {
          await page.evaluate((t) => window.memviz.openTab(t), tab);
          // The canvas follows its box within a frame or two (its backing store is the worker's).
          const [plot, drawer] = await poll(async () => {
            const p = await rect(page, '#plot');
            const d = await rect(page, '#drawer');
            return p && d && !overlap(p, d) && p.h >= h / 2 - 1 ? [p, d] : null;
          }, `${tab}: the plot keeps half the height`, 3000).catch(async () => [await rect(page, '#plot'), await rect(page, '#drawer')]);
          assert.ok(plot.h >= h / 2 - 1, `${tab}: plot ${plot.h} px of ${h}`);
          assert.ok(drawer.bottom <= h + 0.5, `${tab}: the drawer ends inside the window: ${JSON.stringify(drawer)}`);
          assert.ok(!overlap(plot, drawer), `${tab}: plot and drawer apart: ${JSON.stringify([plot, drawer])}`);
        }
        await page.evaluate(() => window.memviz.openTab('lines'));
        await page.waitForTimeout(150);
        await shot(`${w}-drawer`);
        const splitter = page.locator('#drawer-splitter');
        assert.equal(await splitter.getAttribute('role'), 'separator');
        await splitter.focus();
        const before = (await rect(page, '#drawer-body')).h;
        for (let i = 0; i < 3; i += 1) await page.keyboard.press('ArrowDown');
        await page.waitForTimeout(100);
        const smaller = (await rect(page, '#drawer-body')).h;
        assert.ok(smaller < before - 30, `ArrowDown shrinks the drawer: ${before} → ${smaller}`);
        for (let i = 0; i < 40; i += 1) await page.keyboard.press('ArrowUp');
        await page.waitForTimeout(100);
        const plot = await rect(page, '#plot');
        assert.ok(plot.h >= h / 2 - 1, `the divider cannot take the plot under half: ${plot.h}`);
        await page.keyboard.press('End');
        await page.waitForTimeout(100);
        const kept = (await rect(page, '#drawer-body')).h;
        const stored = await page.evaluate(() => sessionStorage.getItem('memviz-drawer-height'));
        assert.equal(Number(stored), Math.round(kept), 'kept in the session');
        // Closed and opened again (and after a reload, in the same session): the same height.
        await page.evaluate(() => window.memviz.openTab(null));
        await page.evaluate(() => window.memviz.openTab('leaks'));
        await page.waitForTimeout(150);
        assert.ok(Math.abs((await rect(page, '#drawer-body')).h - kept) < 2, 'the same height');
        await shot(`${w}-drawer-small`);
        await page.evaluate(() => sessionStorage.removeItem('memviz-drawer-height'));
      });

      test(`${w}x${h}: the first-use hint covers nothing of the plot, says what a click does in each view, and closes; phase labels keep their step number`, TEST, async () => {
        await fresh(w, h);
        await openFile(page, fixture('small/expandable.pickle')); // ProfilerStep#0..3 phases, an OOM
        await page.locator('#plot-hint').waitFor({ state: 'visible' });
        const plot = await rect(page, '#plot');
        const checkHint = async (view, want, unwanted) => {
          const hint = await rect(page, '#plot-hint');
          assert.ok(!overlap(hint, plot), `${view}: the hint is off the plot: ${JSON.stringify([hint, plot])}`);
          assert.ok(hint.right <= w && hint.bottom <= h, `${view}: inside the window`);
          const text = await page.locator('#plot-hint').textContent();
          assert.match(text, want, `${view}: ${text}`);
          if (unwanted) assert.doesNotMatch(text, unwanted, `${view}: ${text}`);
        };
        await checkHint('active', /click: pin the details/);
        // Phase labels: middle-elided by Rust (the step number kept), never cut again by CSS.
        const phases = await page.evaluate(() => [...document.querySelectorAll('#phase-labels span')].map((s) => ({
          text: s.textContent, title: s.title, sw: s.scrollWidth, cw: s.clientWidth,
        })));
        assert.ok(phases.length > 0, 'phase labels shown');
        for (const p of phases) {
          assert.ok(p.sw <= p.cw + 1, `not cut by the page: ${JSON.stringify(p)}`);
          const num = /\d+$/.exec(p.title);
          if (num) assert.ok(p.text.endsWith(num[0]), `keeps the step number: ${JSON.stringify(p)}`);
          if (p.text !== p.title) assert.ok(p.text.includes('…'), JSON.stringify(p));
        }
        assert.equal(new Set(phases.map((p) => p.text)).size, phases.length, `told apart: ${phases.map((p) => p.text).join(' | ')}`);
        await shot(`${w}-hint-active`);
        await page.evaluate(() => window.memviz.setView('flame'));
        await checkHint('flame', /click a frame: zoom into it/, /click: pin/);
        await shot(`${w}-hint-flame`);
        await page.evaluate(() => window.memviz.setView('state'));
        await checkHint('state', /click a block: pin its details/);
        await shot(`${w}-hint-state`);
        await page.click('#plot-hint-close');
        await page.locator('#plot-hint').waitFor({ state: 'hidden' });
        await page.evaluate(() => window.memviz.setView('active'));
        assert.equal(await page.locator('#plot-hint').isVisible(), false, 'stays closed');
      });

      test(`${w}x${h}: the error banner closes; a notice of the file shown steps aside while another file's error is up`, TEST, async () => {
        await fresh(w, h);
        await openFile(page, fixture('defects-cut.pickle'));
        await page.locator('#notice').waitFor({ state: 'visible' });
        assert.match(await page.locator('#notice').textContent(), /incomplete/);
        await openFile(page, fixture('defects-not-a-snapshot.txt'), 'error');
        const alert = await page.locator('#error').textContent();
        assert.match(alert, /^Could not open "defects-not-a-snapshot\.txt"/, 'the banner\'s text is the message alone');
        assert.equal(await page.locator('#notice').isVisible(), false, 'the cut file\'s notice is not beside the other file\'s error');
        const banner = await rect(page, '#error');
        const close = await rect(page, '#error-close');
        assert.ok(close.x >= banner.x && close.right <= banner.right + 0.5 && close.right <= w, JSON.stringify([banner, close]));
        await shot(`${w}-error`);
        await page.click('#error-close');
        await page.locator('#error').waitFor({ state: 'hidden' });
        assert.equal(await page.evaluate(() => document.body.dataset.memvizState), 'ready', 'the files open are shown again');
        await page.locator('#notice').waitFor({ state: 'visible' });
        // The next open of a good file: no error, no stale notice.
        await openFile(page, path.join(DIST, 'assets/demo.pickle'));
        assert.equal(await page.locator('#error').isVisible(), false);
        assert.equal(await page.locator('#notice').isVisible(), false);
        // Before any file: the banner closes too, back to the start page.
        await fresh(w, h);
        await openFile(page, fixture('defects-not-a-snapshot.txt'), 'error');
        await page.click('#error-close');
        assert.equal(await page.evaluate(() => document.body.dataset.memvizState), 'empty');
      });

      test(`${w}x${h}: a deep link opened without its file says which view it waits for and the file it expects`, TEST, async () => {
        await fresh(w, h);
        await openFile(page, path.join(DIST, 'assets/demo.pickle'));
        await page.evaluate(() => window.memviz.setView('flame'));
        const hash = await page.evaluate(() => window.memviz.links.write());
        assert.match(hash, /[#&]name=demo\.pickle(&|$)/, `the link names its file: ${hash}`);
        await fresh(w, h, hash);
        const wait = page.locator('#link-wait');
        await wait.waitFor({ state: 'visible' });
        const text = await wait.textContent();
        assert.match(text, /Memory flamegraph/);
        assert.match(text, /“demo\.pickle”/);
        const box = await rect(page, '#link-wait');
        const open = await rect(page, '#open-controls');
        assert.ok(!overlap(box, open) && box.right <= w, JSON.stringify([box, open]));
        await shot(`${w}-link-wait`);
        await openFile(page, path.join(DIST, 'assets/demo.pickle'));
        await poll(async () => (await viewerState(page)).view === 'flame', 'the link restored');
        assert.equal(await wait.isVisible(), false);
        // A link from before names were kept: still waits, says it names no file, and restores.
        await fresh(w, h, '#view=state&file=0&device=0&event=3');
        await wait.waitFor({ state: 'visible' });
        assert.match(await wait.textContent(), /Allocator State History.*does not name it/);
        await openFile(page, path.join(DIST, 'assets/demo.pickle'));
        await poll(async () => (await viewerState(page)).view === 'state', 'the old link restored');
      });

      test(`${w}x${h}: the reserved memory's flamegraph names its segments by address, readable`, TEST, async () => {
        await fresh(w, h);
        await openFile(page, fixture('small/expandable.pickle'));
        await page.evaluate(() => window.memviz.setView('flame'));
        await page.selectOption('#flame-at', 'reserved');
        const info = await poll(async () => {
          const i = await page.evaluate(() => window.memviz.flameControls.refresh());
          return i && i.labels.some((l) => /^segment 0x[0-9a-f]+$/.test(l.short)) ? i : null;
        }, 'the reserved flamegraph');
        const segs = info.labels.filter((l) => /^segment 0x[0-9a-f]+$/.test(l.short));
        assert.ok(segs.length > 0, info.labels.map((l) => l.short).join(', '));
        const spans = await page.evaluate(() => [...document.querySelectorAll('#flame-labels span')].map((s) => {
          const r = s.getBoundingClientRect();
          return { text: s.textContent, h: r.height, fs: parseFloat(getComputedStyle(s).fontSize) };
        }));
        assert.ok(spans.some((s) => /^segment 0x/.test(s.text) && s.h >= 10 && s.fs >= 11), JSON.stringify(spans.slice(0, 6)));
        await shot(`${w}-flame-reserved`);
      });
    }
  });
}
