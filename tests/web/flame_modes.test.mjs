// The flamegraph's frame modes (issue 29, item 4) on the demo snapshot, once per drawing
// backend at 1280x720: the default is "my code" (the demo has frames of the user's code), the
// select switches the labels (collapsed `[torch] …` nodes, then torch's own files, then C++
// frames), the totals stay, the toolbar stays on one line, and the details pane of a hovered
// node lists its stack innermost first. Needs dist/ (or MEMVIZ_DIST) like page.test.mjs;
// writes screenshots to target/screenshots/flame-modes-*.png.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  DIST, SCREENSHOTS, poll, BACKENDS, serveDistForTests, chromiumForTests, loadViewer, openFile, rect, childRects,
} from './browser.mjs';

const TEST = { timeout: 180_000 };

const served = serveDistForTests();

/** Chooses `mode` on the frames select; resolves with the flamegraph's info once rebuilt. */
async function choose(page, mode) {
  await page.selectOption('#flame-frames', mode);
  return poll(async () => {
    const info = await page.evaluate(() => window.memviz.flameControls.refresh());
    return info && info.state.frames === mode ? info : null;
  }, `the ${mode} flamegraph`);
}

/**
 * The labels seen zooming from the root into the deepest labelled node, row after row (up to 12
 * zooms), until one passes `pred`; zooms back out. Resolves with every label text seen.
 */
async function labelsDown(page, pred, found = async () => {}) {
  const seen = [];
  for (let i = 0; i < 12; i += 1) {
    const info = await page.evaluate(() => window.memviz.flameControls.refresh());
    seen.push(...info.labels.map((l) => l.text));
    if (info.labels.some((l) => pred(l.text))) {
      await found();
      break;
    }
    const deep = [...info.labels].filter((l) => l.node !== info.state.root).sort((x, y) => y.y_css - x.y_css)[0];
    if (!deep) break;
    await page.evaluate((n) => window.memviz.view({ method: 'flame_zoom_to', node: n }), deep.node);
  }
  await page.evaluate(() => window.memviz.view({ method: 'flame_zoom_to', node: 0 }));
  return seen;
}

for (const backend of BACKENDS) {
  describe(`flamegraph frame modes with ${backend.name}`, () => {
    let page;
    const shot = (name) => page.screenshot({ path: path.join(SCREENSHOTS, `flame-modes-${backend.name}-${name}.png`) });

    chromiumForTests(backend.args, 'memviz-flame-modes-', async (p) => {
      page = p;
      await loadViewer(page, `${served.url}${backend.query}`, 1280, 720);
      await openFile(page, path.join(DIST, 'assets/demo.pickle'));
      await page.evaluate(() => window.memviz.setView('flame'));
    });

    test('the default is "my code"; each mode changes the labels and keeps the total', TEST, async () => {
      const first = await poll(async () => {
        const info = await page.evaluate(() => window.memviz.flameControls.refresh());
        return info && info.labels.length > 0 ? info : null;
      }, 'the flamegraph');
      assert.equal(first.state.frames, 'my_code', 'the demo has user frames: my code');
      assert.equal(first.state.has_user_frames, true);
      assert.equal(await page.locator('#flame-frames').inputValue(), 'my_code');
      const options = await page.locator('#flame-frames option').allTextContents();
      assert.deepEqual(options, ['my code', 'Python', 'all frames']);

      const collapsed = (t) => /^\[torch\] /.test(t);
      const mine = await choose(page, 'my_code');
      const mineSeen = await labelsDown(page, collapsed, () => shot('my-code-zoomed'));
      assert.ok(mineSeen.some(collapsed), `a collapsed torch node: ${mineSeen.join(' | ')}`);
      assert.ok(!mineSeen.some((t) => !t.startsWith('[') && (t.includes('/torch/') || t.includes('site-packages'))),
        'no library file outside a collapsed node');
      await shot('my-code');

      const py = await choose(page, 'python');
      const pySeen = await labelsDown(page, (t) => t.includes('/torch/'), () => shot('python-zoomed'));
      assert.ok(pySeen.some((t) => t.includes('/torch/')), `torch's own files: ${pySeen.join(' | ')}`);
      assert.ok(!pySeen.some((t) => t.startsWith('[')), 'nothing collapsed');
      assert.ok(!pySeen.some((t) => /_PyEval|at::|c10::/.test(t)), 'no interpreter or C++ frame');
      await shot('python');

      const all = await choose(page, 'all');
      assert.ok(all.state.nodes > py.state.nodes && py.state.nodes > mine.state.nodes,
        `nodes: all ${all.state.nodes} > python ${py.state.nodes} > my code ${mine.state.nodes}`);
      await shot('all');
      for (const info of [py, all]) assert.equal(info.state.total_bytes, mine.state.total_bytes, 'the same total');

      // The choice stays over a new moment.
      await page.selectOption('#flame-at', 'lifetime');
      const life = await poll(async () => {
        const info = await page.evaluate(() => window.memviz.flameControls.refresh());
        return info && info.state.lifetime ? info : null;
      }, 'the lifetime flamegraph');
      assert.equal(life.state.frames, 'all');
      assert.equal(await page.locator('#flame-frames').inputValue(), 'all');
      await page.selectOption('#flame-at', 'peak');
      await choose(page, 'my_code');
    });

    test('a deep link keeps the frames; an older link (no frames) opens without its zoom', TEST, async () => {
      const all = await choose(page, 'all');
      const child = all.breadcrumb.length > 0 ? (await page.evaluate(() => window.memviz.flameControls.refresh())).labels
        .find((l) => l.node !== 0) : null;
      assert.ok(child, 'a node to zoom into');
      await page.evaluate((n) => window.memviz.view({ method: 'flame_zoom_to', node: n }), child.node);
      const hash = await page.evaluate(() => window.memviz.links.write());
      assert.match(hash, /frames=all/);
      assert.match(hash, new RegExp(`node=${child.node}`));
      await choose(page, 'my_code');
      await page.evaluate((h) => window.memviz.links.restore(h), hash);
      const back = await page.evaluate(() => window.memviz.flameControls.refresh());
      assert.equal(back.state.frames, 'all', 'the link\'s frames');
      assert.equal(back.state.root, child.node, 'the link\'s zoom');
      assert.equal(await page.locator('#flame-frames').inputValue(), 'all');
      // A link written before the frame modes: no `frames`, its node was of another tree.
      const old = hash.replace(/&?frames=all/, '');
      await page.evaluate((h) => window.memviz.links.restore(h), old);
      const o = await page.evaluate(() => window.memviz.flameControls.refresh());
      assert.equal(o.state.root, 0, 'no zoom from an older link');
      await choose(page, 'my_code');
    });

    test('the toolbar stays on one line at 1280x720', TEST, async () => {
      await page.evaluate(() => window.memviz.flameControls.refresh());
      const bar = await rect(page, '#flame-controls');
      const parts = await childRects(page, '#flame-controls');
      for (const p of parts) {
        assert.ok(p.y >= bar.y - 0.5 && p.bottom <= bar.bottom + 0.5 && p.h <= 30, `${p.id} on the one line: ${JSON.stringify([p, bar])}`);
        assert.ok(p.right <= 1280, `${p.id} inside the window`);
      }
      const sel = await rect(page, '#flame-frames');
      assert.ok(sel && sel.h <= 30 && sel.w >= 60, `the frames select: ${JSON.stringify(sel)}`);
      const crumbs = await page.evaluate(() => [...document.querySelectorAll('#flame-breadcrumb button')].map((e) => e.getBoundingClientRect().width));
      assert.ok(crumbs.length > 0 && crumbs.every((w) => w >= 30), `the breadcrumb shows: ${JSON.stringify(crumbs)}`);
      await page.locator('#flame-controls').screenshot({ path: path.join(SCREENSHOTS, `flame-modes-${backend.name}-toolbar-1280.png`) });
    });

    test('the details pane lists a hovered node\'s stack innermost first', TEST, async () => {
      const info = await page.evaluate(() => window.memviz.flameControls.refresh());
      // The deepest labelled node (a few rows down: a stack of several frames).
      const deep = [...info.labels].sort((x, y) => y.y_css - x.y_css)[0];
      assert.ok(deep, 'a labelled node');
      const c = (await page.evaluate((n) => window.memviz.view({ method: 'flame_node_center', node: n }), deep.node)).result;
      assert.ok(Array.isArray(c), 'the node has a centre');
      const box = await page.locator('#plot').boundingBox();
      await page.mouse.move(box.x + c[0], box.y + c[1]);
      const tip = await poll(async () => {
        const t = await page.evaluate(() => window.memviz.tooltip());
        return t && t.node === deep.node ? t : null;
      }, 'the node\'s tooltip');
      assert.ok(tip.frames.length >= 3, `a deep node: ${JSON.stringify(tip.frames)}`);
      assert.equal(tip.frames[0], deep.text, 'the node itself first');
      await page.waitForFunction((t) => document.getElementById('tooltip-title').textContent === t, tip.title);
      const head = await page.locator('#tooltip-body .stack-head').first().textContent();
      assert.match(head, /innermost first/);
      const items = await page.locator('#tooltip-body ol li').allTextContents();
      assert.deepEqual(items, tip.frames, 'the pane lists the frames as sent');
      assert.equal(items[0], deep.text, 'innermost (the hovered node) first');
      // The last line is the root's child: the breadcrumb's second chip when zoomed there.
      const path0 = info.state.zoom_path;
      assert.equal(path0.length, 1, 'not zoomed');
      const top = info.labels.find((l) => l.text === items[items.length - 1]);
      assert.ok(top && top.y_css < deep.y_css, `the outermost frame is a top row: ${items[items.length - 1]}`);
      if (items.some((t) => t.startsWith('['))) {
        assert.match(await page.locator('#tooltip-body').textContent(), /collapsed/, 'a collapsed node says what it is');
      }
      await shot('details-innermost-first');
    });
  });
}
