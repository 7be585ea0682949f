// screenshots.mjs: every view of the page at 1440x900 and 1280x720, light and dark, on both
// drawing backends, written to target/screenshots/tour/<backend>-<scheme>-<size>-<view>.png
// for a person to look at (issue 16). It asserts nothing beyond "the page opened".
//
//   node tests/web/screenshots.mjs [FILE] [--backend webgl2|webgpu] [--only VIEW]
//
// FILE defaults to a real snapshot of the corpus beside the clone (../shared/corpus/real),
// else dist/assets/demo.pickle. Needs dist/ (trunk build) like the page tests.

import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { serveDist } from './serve_dist.mjs';
import { ROOT, DIST, SCREENSHOTS, startChromium, poll, WEBGPU_ARGS } from './browser.mjs';

const BACKEND_ARGS = { webgl2: [], webgpu: WEBGPU_ARGS };
const SIZES = [{ width: 1440, height: 900 }, { width: 1280, height: 720 }];
const SCHEMES = ['light', 'dark'];
/** The views, then the drawer's tabs (opened on the Active Memory Timeline). */
const VIEWS = ['active', 'segments', 'pools', 'state', 'flame', 'flame-reserved'];
const TABS = ['lines', 'live', 'leaks', 'files', 'compare', 'settings', 'summary', 'whatif'];

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { backend: { type: 'string' }, only: { type: 'string' } },
});
const corpusFile = path.resolve(ROOT, '../shared/corpus/real/Constructor-Sun__code_location__memory_snapshot.pickle');
const file = positionals[0] || (fs.existsSync(corpusFile) ? corpusFile : path.join(DIST, 'assets/demo.pickle'));
const out = path.join(SCREENSHOTS, 'tour');
fs.mkdirSync(out, { recursive: true });

const server = await serveDist(DIST, '/', () => {});
const base = `http://127.0.0.1:${server.address().port}/`;
const written = [];
try {
  for (const [backend, args] of Object.entries(BACKEND_ARGS)) {
    if (values.backend && values.backend !== backend) continue;
    const b = await startChromium(args, 'memviz-tour-');
    try {
      for (const scheme of SCHEMES) {
        await b.page.emulateMedia({ colorScheme: scheme });
        for (const size of SIZES) {
          await b.page.setViewportSize(size);
          await b.page.goto(`${base}?backend=${backend}`);
          await poll(() => b.page.evaluate(() => Boolean(window.memviz)), 'the page API');
          const name = (what) => path.join(out, `${backend}-${scheme}-${size.width}x${size.height}-${what}.png`);
          await b.page.screenshot({ path: name('start') });
          written.push(name('start'));
          await b.page.setInputFiles('#file-input', file);
          await poll(() => b.page.evaluate(() => document.body.dataset.memvizState === 'ready'), 'ready');
          for (const view of VIEWS) {
            if (values.only && values.only !== view) continue;
            if (view === 'flame-reserved') {
              await b.page.evaluate(() => window.memviz.setView('flame'));
              const has = await b.page.evaluate(() => [...document.querySelectorAll('#flame-at option')].some((o) => o.value === 'reserved'));
              if (!has) continue;
              await b.page.selectOption('#flame-at', 'reserved');
            } else {
              await b.page.evaluate((v) => window.memviz.setView(v), view);
            }
            if (view === 'active') {
              // The details pane with a hovered allocation: the middle of the plot.
              const st = await b.page.evaluate(() => window.memviz.state());
              const box = await b.page.locator('#plot').boundingBox();
              const p = st.geometry.plot;
              await b.page.mouse.move(box.x + (p.left + p.right) / 2, box.y + p.bottom - (p.bottom - p.top) * 0.2);
            }
            await b.page.waitForTimeout(400);
            await b.page.screenshot({ path: name(view) });
            written.push(name(view));
          }
          if (!values.only) {
            await b.page.evaluate(() => window.memviz.setView('active'));
            await b.page.mouse.move(1, 1);
            for (const tab of TABS) {
              await b.page.evaluate((t) => window.memviz.openTab(t), tab);
              await b.page.waitForTimeout(300);
              await b.page.screenshot({ path: name(`tab-${tab}`) });
              written.push(name(`tab-${tab}`));
            }
            // The What if tab's sweep to its end: the table, its curve over the timeline.
            if (await b.page.isEnabled('#whatif-sweep')) {
              await b.page.click('#whatif-sweep');
              await poll(() => b.page.evaluate(() => {
                const w = window.memviz.whatIf;
                return !w.running && w.last && w.last.result;
              }), 'the sweep', 600_000);
              await b.page.waitForTimeout(300);
              await b.page.screenshot({ path: name('whatif-sweep') });
              written.push(name('whatif-sweep'));
              await b.page.click('#whatif-clear');
            }
            await b.page.evaluate(() => window.memviz.openTab(null));
            await b.page.keyboard.press('?');
            await b.page.waitForTimeout(200);
            await b.page.screenshot({ path: name('help') });
            written.push(name('help'));
            await b.page.keyboard.press('Escape');
          }
        }
      }
    } finally {
      await b.close();
    }
  }
  // Contact sheets: four screenshots a sheet (2 x 2, half size), to look at them all quickly.
  if (written.length > 0) {
    const b = await startChromium([], 'memviz-tour-sheets-');
    try {
      await b.page.setViewportSize({ width: 1440, height: 920 });
      for (let i = 0; i < written.length; i += 4) {
        const group = written.slice(i, i + 4);
        const cells = group.map((f) => `<figure><img src="data:image/png;base64,${fs.readFileSync(f).toString('base64')}"><figcaption>${path.basename(f)}</figcaption></figure>`).join('');
        await b.page.setContent(`<style>body{margin:0;display:grid;grid-template-columns:720px 720px;font:12px sans-serif;background:#888}
          figure{margin:0}img{width:720px;height:440px;object-fit:contain;object-position:top left;display:block;background:#fff}figcaption{height:20px;color:#fff}</style>${cells}`);
        await b.page.screenshot({ path: path.join(out, `sheet-${String(i / 4).padStart(2, '0')}.png`) });
      }
    } finally {
      await b.close();
    }
  }
} finally {
  await new Promise((resolve) => server.close(resolve));
}
process.stdout.write(`${written.length} screenshots of ${path.basename(file)} in ${out} (contact sheets: sheet-NN.png)\n`);
