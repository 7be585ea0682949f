// Sites on the page (issue 29, items 1-3; docs/sites.md), at 1440x900 and 1280x720 on both
// drawing backends: the details pane marks the user's frames, dims the libraries' and folds the
// C++ and interpreter frames, with the site line on top; the hover hint names the site; Source
// lines has one row per site with its kind's tag and its library lines as sub-rows (disclosure
// by keyboard); alive at a moment, leaks and compare show the site; the OOM tab of a real file
// names the user's lines as `memviz oom --json` does; "Your code" renames the sites, says why a
// bad pattern is bad, and goes into the deep link. Needs dist/ (or MEMVIZ_DIST) and
// target/release/memviz; writes screenshots to target/screenshots/sites-*.png.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  DIST, ROOT, SCREENSHOTS, cliJson, generate, poll, viewerState, BACKENDS,
  serveDistForTests, chromiumForTests, loadViewer, openFile, rect,
} from './browser.mjs';

const TEST = { timeout: 180_000 };
const SIZES = [[1440, 900], [1280, 720]];
const DEMO = path.join(DIST, 'assets/demo.pickle');
/** A real snapshot whose OOM's biggest blocks were once all named `threading.py:982:run` (read-only, never copied). */
const LANDMARKS = path.join(ROOT, 'target/page-fixtures/landmarks.pickle');
const XSS = path.join(ROOT, 'target/page-fixtures/xss.pickle');
const OOM_FILE = path.join(ROOT, '../shared/corpus/real/Constructor-Sun__code_location__memory_snapshot.pickle');

const served = serveDistForTests({
  prepare() {
    fs.mkdirSync(path.dirname(LANDMARKS), { recursive: true });
    generate(LANDMARKS, 'landmarks', LANDMARKS);
    generate(XSS, 'xss', XSS);
  },
});

/** `label → detail` as the page writes a site. */
const siteText = (s) => (s.detail ? `${s.label} → ${s.detail}` : s.label);

for (const backend of BACKENDS) {
  describe(`sites with ${backend.name}`, () => {
    let page;
    const shot = (name) => page.screenshot({ path: path.join(SCREENSHOTS, `sites-${backend.name}-${name}.png`) });
    /** A fresh page at `w`x`h`, ready for files. */
    const fresh = (w, h) => loadViewer(page, `${served.url}${backend.query}`, w, h, true);

    chromiumForTests(backend.args, 'memviz-sites-', (p) => { page = p; });

    for (const [w, h] of SIZES) {
      test(`${w}x${h}: the details pane marks user, library and folded C++ frames under the site line; the hover hint names the site`, TEST, async () => {
        await fresh(w, h);
        await openFile(page, DEMO);
        // An allocation whose stack has the user's frames, a library's and C++ ones.
        const tip = await page.evaluate(async () => {
          for (let e = 0; e < 400; e += 1) {
            const t = await window.memviz.pin(e);
            if (t && t.site && t.kinds.includes('user') && t.kinds.includes('library') && t.kinds.includes('native')) return t;
          }
          return null;
        });
        assert.ok(tip, 'the demo has an allocation with user, library and C++ frames');
        await poll(async () => (await page.locator('#tooltip-title').textContent()) === tip.title, 'the pinned tooltip shown');
        assert.equal(await page.locator('#tooltip-body .site-top').textContent(), siteText(tip.site), 'the site line on top');
        assert.equal(await page.locator('#tooltip-body .site-top .kind-tag').getAttribute('aria-label'), 'your code');
        const count = (kind) => tip.kinds.filter((k) => k === kind).length;
        const py = (kind) => tip.kinds.filter((k, i) => k === kind && tip.python[i]).length;
        assert.equal(await page.locator('#tooltip-body > ol li.frame.user').count(), py('user'));
        assert.equal(await page.locator('#tooltip-body > ol li.frame.library').count(), py('library'));
        // C++ and interpreter frames: folded into one row, closed.
        const folded = count('native') + count('interpreter');
        const summary = await page.locator('#tooltip-body details.cpp > summary').textContent();
        assert.equal(summary, `${folded} C++/interpreter frame${folded === 1 ? '' : 's'}`);
        assert.equal(await page.locator('#tooltip-body details.cpp li.frame.native').first().isVisible(), false, 'folded');
        // The user's frames read bold in the normal colour, the libraries' dimmed.
        const style = await page.evaluate(() => {
          const get = (sel) => {
            const s = getComputedStyle(document.querySelector(sel));
            return { weight: Number(s.fontWeight), color: s.color };
          };
          return { user: get('#tooltip-body li.frame.user'), library: get('#tooltip-body li.frame.library'), body: get('#tooltip-body') };
        });
        assert.ok(style.user.weight >= 600 && style.library.weight < 600, JSON.stringify(style));
        assert.equal(style.user.color, style.body.color, 'user frames in the normal colour');
        assert.notEqual(style.library.color, style.user.color, 'library frames dimmed');
        await page.click('#tooltip-body details.cpp > summary');
        assert.equal(await page.locator('#tooltip-body details.cpp li.frame.native').first().isVisible(), true, 'unfolded');
        const pane = await rect(page, '#details-pane');
        const top = await rect(page, '#tooltip-body .site-top');
        assert.ok(top.x >= pane.x && top.right <= pane.right + 0.5, `the site line inside the pane: ${JSON.stringify([top, pane])}`);
        await shot(`${w}-details`);
        await page.evaluate(() => window.memviz.pin(-1));

        // The hover hint: the title, then the site (its detail dimmed).
        const plot = await rect(page, '#plot');
        const g = (await viewerState(page)).geometry.plot;
        let hinted = null;
        for (let fx = 0.2; fx < 0.95 && !hinted; fx += 0.05) {
          await page.mouse.move(plot.x + g.left + fx * (g.right - g.left), plot.y + g.bottom - 0.08 * (g.bottom - g.top));
          await page.waitForTimeout(150);
          const t = await page.evaluate(() => window.memviz.tooltip());
          if (t && t.site && t.site.detail) hinted = t;
        }
        assert.ok(hinted, 'an allocation with a library detail under the pointer');
        // The hint shows the tooltip the page holds now (the pointer rests).
        const shown = await poll(async () => {
          const t = await page.evaluate(() => window.memviz.tooltip());
          const site = await page.locator('#hover-hint .hint-site').allTextContents();
          return t && t.site && site.length === 1 && site[0] === siteText(t.site) ? t : null;
        }, 'the hint\'s site line');
        assert.equal(await page.locator('#hover-hint .hint-title').textContent(), shown.title);
        assert.ok(await page.locator('#hover-hint .hint-site .site-detail').count() === 1, 'the detail (dimmed)');
        const hint = await rect(page, '#hover-hint');
        assert.ok(hint.x >= plot.x - 1 && hint.right <= plot.right + 1 && hint.y >= plot.y - 1 && hint.bottom <= plot.bottom + 1,
          `the hint stays in the plot: ${JSON.stringify([hint, plot])}`);
        await shot(`${w}-hint`);
        await page.mouse.move(1, 1);
      });

      test(`${w}x${h}: Source lines: a row per site with its kind, library lines as sub-rows (keyboard); alive, leaks and compare show sites`, TEST, async () => {
        await fresh(w, h);
        await openFile(page, DEMO);
        await page.evaluate(() => window.memviz.openTab('lines'));
        const rows = await page.evaluate(() => window.memviz.linesTable.load());
        const cli = cliJson('lines', DEMO);
        assert.deepEqual(rows.map((r) => [r.file, r.line, r.name, r.kind, r.detail.length]),
          cli.rows.map((r) => [r.file, r.line, r.name, r.kind, r.detail.length]), 'the rows of `memviz lines --json`');
        const main = page.locator('#lines-rows tr.site-row');
        assert.equal(await main.count(), Math.min(500, rows.length));
        assert.equal(await page.locator('#lines-rows tr.sub-row').count(), 0, 'sub-rows folded');
        // The first row (largest live at peak) has library lines.
        const first = rows.reduce((a, r, i) => (r.live_at_peak_bytes > rows[a].live_at_peak_bytes ? i : a), 0);
        assert.ok(rows[first].detail.length > 0, 'the demo\'s largest site has library lines');
        assert.equal(await main.first().locator('td').first().textContent(), rows[first].site, 'the cell\'s text is the site');
        assert.equal(await main.first().locator('.kind-tag').getAttribute('aria-label'), 'your code');
        const button = main.first().locator('button.disclose');
        assert.equal(await button.getAttribute('aria-expanded'), 'false');
        await button.focus();
        await page.keyboard.press('Enter');
        await poll(async () => (await page.locator('#lines-rows tr.sub-row').count()) === rows[first].detail.length, 'sub-rows shown');
        const subs = await page.locator('#lines-rows tr.sub-row td:first-child').allTextContents();
        assert.deepEqual([...subs].sort(), rows[first].detail.map((d) => d.site).sort());
        assert.equal(await page.locator('#lines-rows tr.site-row button.disclose').first().getAttribute('aria-expanded'), 'true');
        assert.equal(await page.evaluate(() => document.activeElement && document.activeElement.className), 'disclose', 'focus stays on the button');
        // The sub-rows come right after their row, indented.
        const order = await page.evaluate(() => [...document.querySelectorAll('#lines-rows tr')].slice(0, 4).map((tr) => tr.className.split(' ')[0]));
        assert.deepEqual(order.slice(0, 2), ['site-row', 'sub-row'], order.join(','));
        const pad = await page.evaluate(() => parseFloat(getComputedStyle(document.querySelector('#lines-rows tr.sub-row td')).paddingLeft));
        assert.ok(pad > 10, `indented: ${pad}`);
        await shot(`${w}-lines`);
        // A click on the row (not its button) highlights its allocations; on the button it folds.
        await main.first().locator('td').nth(1).click();
        const n = await poll(async () => (await viewerState(page)).highlighted, 'row highlight');
        assert.equal(n, rows[first].count);
        await page.locator('#lines-rows tr.site-row button.disclose').first().press('Space');
        await poll(async () => (await page.locator('#lines-rows tr.sub-row').count()) === 0, 'sub-rows hidden');
        await main.first().locator('td').nth(1).click(); // clear

        // Alive at a moment: each row ends with its site.
        await page.evaluate(() => window.memviz.openTab('live'));
        const live = await page.evaluate(() => window.memviz.liveTable.show(-2));
        const liveSites = await page.locator('#live-rows tr td:last-child .site-line').allTextContents();
        assert.deepEqual(liveSites, live.rows.map((r) => siteText(r.site)));
        assert.ok(live.rows.some((r) => r.site.kind === 'user'), 'the demo\'s peak holds user sites');
        // (With WebGL2 the plot is blank for a moment after the highlight is cleared: let it draw.)
        await page.waitForTimeout(500);
        await shot(`${w}-live`);
        // Leaks (xss.pickle has suspects; the demo has none): each suspect names its site, as
        // `memviz leaks --json`.
        await openFile(page, XSS);
        await page.evaluate(() => window.memviz.openTab('leaks'));
        const leaks = await page.evaluate(() => window.memviz.leaksPanel.load());
        assert.ok(leaks.suspects.length > 0, 'xss.pickle has leak suspects');
        const leakSites = await page.locator('#leaks-list li .site-line').allTextContents();
        assert.deepEqual(leakSites, leaks.suspects.slice(0, 50).map((s) => siteText(s.site)));
        const cliLeaks = cliJson('leaks', XSS);
        assert.deepEqual(leaks.suspects.map((s) => [s.site.kind, s.site.label]), cliLeaks.suspects.map((s) => [s.site.kind, s.site.label]));
        assert.ok(await page.locator('#leaks-list .kind-tag').count() >= leaks.suspects.length, 'each suspect has its kind tag');
        await shot(`${w}-leaks`);
        // Compare the landmarks with the demo: each group names its site, its frames below.
        await openFile(page, LANDMARKS);
        await page.evaluate(() => window.memviz.openTab('compare'));
        const files = await page.evaluate(() => window.memviz.filesAndCompare.loadFiles());
        assert.equal(files.length, 3);
        const diff = await page.evaluate(() => window.memviz.filesAndCompare.compare(2, 0));
        assert.ok(diff.groups.length > 0, 'the two files differ');
        assert.deepEqual([await page.inputValue('#compare-a'), await page.inputValue('#compare-b')], ['2', '0'], 'the selects name the files compared');
        const diffSites = await page.locator('#compare-rows tr td:first-child .site-line').allTextContents();
        assert.deepEqual(diffSites, diff.groups.map((g) => siteText(g.site)));
        assert.ok(await page.locator('#compare-rows .frame.user').count() > 0, 'user frames marked');
        await shot(`${w}-compare`);
        await page.evaluate(() => window.memviz.openTab(null));
      });

      test(`${w}x${h}: "Your code" renames the sites, shows a bad pattern's error inline, and goes into the link`, TEST, async () => {
        await fresh(w, h);
        await openFile(page, DEMO);
        await page.evaluate(() => window.memviz.openTab('lines'));
        const before = await page.evaluate(() => window.memviz.linesTable.load());
        assert.ok(!before.some((r) => r.file.includes('/torch/optim/')), 'torch/optim is library code by default');
        const input = page.locator('#user-code-input');
        const box = await rect(page, '#user-code-input');
        assert.ok(box && box.right <= w && box.bottom <= h, `the input is in the window: ${JSON.stringify(box)}`);
        // A bad regex: said inline, nothing renamed.
        await input.fill('/(/');
        await input.press('Enter');
        await poll(async () => (await page.locator('.user-code.error').count()) === 1, 'the error shown');
        const err = await page.locator('#user-code-status').textContent();
        assert.ok(err.length > 0 && !err.includes('\n'), err);
        assert.equal(await input.getAttribute('aria-invalid'), 'true');
        assert.equal(await page.evaluate(() => window.memviz.linesTable.loadedFor !== null), true, 'the table was not reloaded');
        const status = await rect(page, '#user-code-status');
        assert.ok(status.right <= w + 0.5, `the error fits: ${JSON.stringify(status)}`);
        await shot(`${w}-user-code-error`);
        // torch/optim as the user's code: the optimizer's lines become sites of their own.
        await input.fill('torch/optim');
        await input.press('Enter');
        const after = await poll(async () => {
          const r = await page.evaluate(() => window.memviz.linesTable.load());
          return Array.isArray(r) && r.some((x) => x.file.includes('/torch/optim/') && x.kind === 'user') ? r : null;
        }, 'the optimizer lines as user sites');
        assert.equal(await page.locator('.user-code.error').count(), 0);
        assert.match(await page.locator('#user-code-status').textContent(), /^[\d,]+ frames? of your code$/);
        const cli = cliJson('lines', DEMO, '--user-code', 'torch/optim');
        assert.deepEqual(after.map((r) => [r.file, r.line, r.kind]), cli.rows.map((r) => [r.file, r.line, r.kind]), 'the CLI\'s rows under --user-code');
        const cells = await page.locator('#lines-rows tr.site-row td:first-child').allTextContents();
        assert.ok(cells.some((c) => c.includes('adamw.py')), cells.slice(0, 5).join('\n'));
        await shot(`${w}-user-code`);
        // In the link, and back from it.
        const hash = await page.evaluate(() => window.memviz.links.write());
        assert.match(hash, /[#&]user=torch%2Foptim(&|$)/);
        await input.fill('');
        await input.press('Enter');
        await poll(async () => {
          const r = await page.evaluate(() => window.memviz.linesTable.load());
          return Array.isArray(r) && !r.some((x) => x.file.includes('/torch/optim/'));
        }, 'the default rule again');
        await page.evaluate((hsh) => window.memviz.links.restore(hsh), hash);
        assert.equal(await input.inputValue(), 'torch/optim');
        await poll(async () => {
          const r = await page.evaluate(() => window.memviz.linesTable.load());
          return Array.isArray(r) && r.some((x) => x.file.includes('/torch/optim/') && x.kind === 'user');
        }, 'the link\'s user code restored');
        await page.evaluate(() => window.memviz.openTab(null));
      });

      test(`${w}x${h}: the OOM tab names the user's lines of a real OOM (models.py:174/181 update_nodes), as \`memviz oom --json\``, TEST, async (t) => {
        if (!fs.existsSync(OOM_FILE)) {
          t.skip(`${OOM_FILE} is not here`);
          return;
        }
        await fresh(w, h);
        await openFile(page, OOM_FILE);
        await page.evaluate(() => window.memviz.view({ method: 'set_device', device: 1 }));
        await page.evaluate(() => window.memviz.setView('state'));
        const cli = cliJson('oom', OOM_FILE).find((o) => o.device === 1);
        const k = await poll(() => page.evaluate(() => window.memviz.stateHistory.ooms[0]), 'the OOM event');
        assert.equal(k, cli.event);
        await page.evaluate((kk) => window.memviz.stateHistory.select(kk), k);
        await page.locator('#oom-panel').waitFor({ state: 'visible' });
        const lines = await page.locator('#oom-biggest .source-line').allTextContents();
        assert.deepEqual(lines, cli.biggest_live_sites.map((s) => s.label));
        const sites = await page.locator('#oom-biggest .site-line').allTextContents();
        assert.deepEqual(sites, cli.biggest_live_sites.map((s) => siteText({ label: s.label, detail: s.detail && s.detail.label })));
        assert.ok(lines.includes('models.py:174:update_nodes') && lines.includes('models.py:181:update_nodes'), lines.join('\n'));
        assert.ok(lines.every((l) => !l.startsWith('threading.py')), lines.join('\n'));
        assert.equal(await page.locator('#oom-biggest .kind-tag.kind-user').count(), lines.length);
        await page.locator('#oom-biggest').scrollIntoViewIfNeeded();
        await shot(`${w}-oom`);
      });
    }
  });
}
