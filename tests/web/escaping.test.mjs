// Escaping (issue 7, item 3): every string from a snapshot is data, shown literally and never as
// markup, in every place the page shows one. `generate.py xss` writes xss.pickle, whose frame
// filenames and names, FX fields, compile_context, user_metadata, `annotate` texts,
// forward_frames, external_annotations names, allocator_settings keys and values, an unknown
// action and an unknown top-level key carry HTML and script payloads (tests/fixtures/README.md).
// The built page (dist/) is served under a sub-path and driven in headless Debian Chromium
// (WebGL2) through the contract of www/README.md. For each place the payload must be in the
// DOM as text (textContent has the literal `<img src=x onerror=…>`) and no element may come
// from it; at the end nothing ran (`window.__pwned` undefined, no dialog), no element or event
// handler attribute was ever created from a payload (a MutationObserver from before the page's
// scripts) and no request left dist/ (an `<img src=x>` would ask for `…/x`).
// Run by `cargo xtask test`, or: node --test tests/web/escaping.test.mjs
// Needs dist/ and target/release/memviz (`cargo build --release -p memviz-cli`); writes its
// fixture to target/escaping-fixtures/ and screenshots to target/screenshots/escaping-*.png.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { serveDist } from './serve_dist.mjs';
import {
  ROOT, DIST, SCREENSHOTS, TIMEOUT_MS, generate, poll, startChromium,
  requireBuilt, cliJson, viewerState, pagePoint, mapPoint, search,
} from './browser.mjs';

const FIXTURES = path.join(ROOT, 'target/escaping-fixtures');
const XSS = path.join(FIXTURES, 'xss.pickle');
const SUB_PATH = '/escaping/sub/';
const TEST = { timeout: 120_000 };
const MiB = 1024 * 1024;

// The payloads of generate.py's fx_xss (XSS_* there), character for character.
const IMG = '<img src=x onerror="window.__pwned=1">';
const SCRIPT = '<script>window.__pwned=2</script>';
const SVG = '"><svg onload=window.__pwned=3>';
const JS_URL = 'javascript:window.__pwned=4';
const TEXTAREA = '</textarea><b>bold</b>';
const TEMPLATE = '{{7*7}}';
const TEMPLATE_LITERAL = '${window.__pwned=5}';
const SEMI_NEWLINE = 'semi;colon\nnext <i>line</i>';
const RTL = 'rtl\u202eevil.exe\u202c';
const ZERO_WIDTH = 'zero\u200bwidth\u200d\ufeffjoin';
const FAKE_FRAME = `/src/fake.py:12:${IMG}`;
const LONG_HEAD = `long_${IMG}`;
const ROOT_DIR = '/home/user/xss';
const STEP0 = `${IMG} ProfilerStep#0`;
/** The forward_frames of the `model.py` allocations (trace entries and blocks). */
const FORWARD = `    x = ${SCRIPT}; ${TEMPLATE}`;
/** Every payload that must show up somewhere on the page. */
const PAYLOADS = { IMG, SCRIPT, SVG, JS_URL, TEXTAREA, TEMPLATE, TEMPLATE_LITERAL, SEMI_NEWLINE, RTL, ZERO_WIDTH, FAKE_FRAME, LONG_HEAD };

/** The file is opened under these names (a File name is a string from outside too; no `/`). */
const NAME_A = `${IMG}${TEMPLATE_LITERAL}.pickle`;
const NAME_B = `${SVG}${TEMPLATE}.pickle`;
const NAME_BROKEN = `${IMG}-broken.pickle`;

/** Elements a payload could create; none may exist in the panels (the page's own markup has none). */
const FORBIDDEN = 'img, script, svg, math, b, i, u, a, textarea, iframe, frame, object, embed, style, link, meta, base, form, video, audio, source, template';

let server;
let baseUrl;
/** Requests the static server could not answer from dist/ under the sub-path. */
const misses = [];

before(async () => {
  requireBuilt();
  fs.mkdirSync(FIXTURES, { recursive: true });
  generate(XSS, 'xss', XSS);
  server = await serveDist(DIST, SUB_PATH, (miss) => misses.push(miss));
  baseUrl = `http://127.0.0.1:${server.address().port}${SUB_PATH}`;
});

after(async () => {
  if (server) await new Promise((resolve) => server.close(resolve));
});

// ----- the browser -------------------------------------------------------------------------

/**
 * Runs in the page before its own scripts: records every element of a forbidden kind and every
 * `on…` / `javascript:` attribute that is ever inserted into the document once it has loaded
 * (the page's own static markup is checked by the final DOM scan instead).
 */
function installWatch(forbidden) {
  window.__xssLog = [];
  const check = (el) => {
    if (!(el instanceof Element)) return;
    for (const e of [el, ...el.querySelectorAll('*')]) {
      // (The page's own "Copy stack" fallback appends a bare <textarea> to body for a moment; it
      // may be gone again when this runs.)
      const ownTextarea = e.localName === 'textarea' && e.attributes.length === 0
        && (e.parentNode === document.body || e.parentNode === null);
      if (e.matches(forbidden) && !ownTextarea) {
        window.__xssLog.push(`element <${e.localName}> in ${e.parentElement ? e.parentElement.id || e.parentElement.localName : '?'}`);
      }
      for (const a of e.attributes) {
        if (/^on/i.test(a.name) || (/^\s*javascript:/i.test(a.value) && /^(href|src|action|formaction|xlink:href)$/i.test(a.name))) {
          window.__xssLog.push(`attribute ${a.name}=${a.value.slice(0, 60)} on <${e.localName}>`);
        }
      }
    }
  };
  const start = () => {
    new MutationObserver((records) => {
      for (const r of records) {
        if (r.type === 'childList') r.addedNodes.forEach(check);
        else if (r.type === 'attributes') check(r.target);
      }
    }).observe(document, { childList: true, subtree: true, attributes: true, attributeFilter: ['onerror', 'onload', 'onclick', 'onmouseover', 'onfocus', 'href', 'src', 'srcdoc', 'action'] });
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
}

/**
 * Starts Chromium on a fresh profile with the page (WebGL2). Returns `{page, log, close()}`;
 * `log` collects page errors and console errors, dialogs, and every request URL.
 */
async function launch() {
  const { context, page, close } = await startChromium([], 'memviz-escaping-');
  const log = { errors: [], dialogs: [], requests: [] };
  context.on('request', (r) => log.requests.push(r.url()));
  await context.addInitScript(installWatch, FORBIDDEN);
  page.on('dialog', (d) => {
    log.dialogs.push(`${d.type()}: ${d.message()}`);
    d.dismiss().catch(() => {});
  });
  page.on('pageerror', (err) => log.errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => { if (msg.type() === 'error') log.errors.push(`console: ${msg.text()}`); });
  page.on('worker', (worker) => {
    worker.on('console', (msg) => { if (msg.type() === 'error') log.errors.push(`worker console: ${msg.text()}`); });
  });
  await page.goto(`${baseUrl}?backend=webgl2`);
  await page.waitForFunction(() => window.memviz !== undefined && document.body.dataset.memvizBackend !== undefined,
    null, { timeout: TIMEOUT_MS });
  return { page, log, close };
}

// ----- page helpers ---------------------------------------


/** Opens `buffer` as a file named `name` through `#file-input`; resolves with the final state. */
async function openAs(page, name, buffer) {
  await page.evaluate(() => {
    window.__stateLog = [];
    if (!window.__stateObserver) {
      window.__stateObserver = new MutationObserver(() => window.__stateLog.push(document.body.dataset.memvizState));
      window.__stateObserver.observe(document.body, { attributes: true, attributeFilter: ['data-memviz-state'] });
    }
  });
  await page.setInputFiles('#file-input', { name, mimeType: 'application/octet-stream', buffer });
  await page.waitForFunction(() => {
    const log = window.__stateLog;
    const i = log.indexOf('loading');
    return i >= 0 && log.length > i + 1 && document.body.dataset.memvizState !== 'loading';
  }, null, { timeout: TIMEOUT_MS });
  return page.evaluate(() => document.body.dataset.memvizState);
}

/** Moves the mouse to `at` and waits for a tooltip whose text passes `ok`; returns the text. */
async function tooltipAt(page, at, what, ok = () => true) {
  await page.mouse.move(at.x, at.y);
  await poll(async () => {
    const t = await tooltipText(page);
    return t !== null && ok(t);
  }, `tooltip (${what}) at ${JSON.stringify(at)}`, 20_000);
  return tooltipText(page);
}

/** The text of the tooltip shown (title + body), or null when hidden. */
function tooltipText(page) {
  return page.evaluate(() => {
    const t = document.getElementById('tooltip');
    return t.hidden ? null : `${document.getElementById('tooltip-title').textContent}\n${document.getElementById('tooltip-body').textContent}`;
  });
}

/** Opens a panel of the drawer by its tab (idempotent: a click on an open tab would close it). */
async function openPanel(page, id) {
  if (!(await page.evaluate((x) => document.getElementById(x).open, id))) await page.click(`#tabs button[data-panel="${id}"]`);
}

/**
 * The place `selector` shows each of `needles` as text and holds no element a payload could
 * create, and no element in it has an `on…` attribute. Returns its textContent.
 */
async function assertLiteral(page, selector, needles, what) {
  const r = await page.evaluate(([sel, forbidden]) => {
    const roots = [...document.querySelectorAll(sel)];
    const all = roots.flatMap((root) => [root, ...root.querySelectorAll('*')]);
    return {
      found: roots.length,
      text: roots.map((root) => root.textContent).join('\n'),
      titles: all.map((e) => e.getAttribute('title') || '').join('\n'),
      forbidden: all.filter((e) => e.matches(forbidden)).map((e) => e.outerHTML.slice(0, 120)),
      handlers: all.flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => `${e.localName} ${a.name}`)),
    };
  }, [selector, FORBIDDEN]);
  assert.ok(r.found > 0, `${what}: ${selector} exists`);
  for (const n of needles) {
    assert.ok(r.text.includes(n), `${what} shows ${JSON.stringify(n.slice(0, 80))} literally; it shows ${JSON.stringify(r.text.slice(0, 600))}`);
  }
  assert.deepEqual(r.forbidden, [], `${what}: no element made from a payload`);
  assert.deepEqual(r.handlers, [], `${what}: no event handler attribute`);
  return r;
}

/** Scrolls `selector` into view and screenshots the viewport (a full page can be very tall). */
async function shotAt(page, selector, name) {
  await page.locator(selector).first().scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(SCREENSHOTS, `escaping-${name}.png`) });
}

/** Screenshots the top `maxHeight` px of `selector`'s box (the page can be very tall). */
async function shotOf(page, selector, name, maxHeight = 700) {
  const box = await page.locator(selector).first().evaluate((e) => {
    const r = e.getBoundingClientRect();
    return { x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height };
  });
  const clip = { x: Math.max(0, box.x - 4), y: Math.max(0, box.y - 4), width: Math.min(1200, box.width + 8), height: Math.min(maxHeight, box.height + 8) };
  await page.screenshot({ path: path.join(SCREENSHOTS, `escaping-${name}.png`), fullPage: true, clip });
}

// ----- the suite -----------------------------------------------------------------------------

describe('escaping: xss.pickle shows every payload as text and runs none (WebGL2)', () => {
  /** @type {Awaited<ReturnType<typeof launch>>} */
  let b;
  let page;
  let xss;
  /** The page's own <script> elements once it has started (their count must never change). */
  let scripts;
  before(async () => {
    xss = fs.readFileSync(XSS);
    b = await launch();
    page = b.page;
    scripts = await page.evaluate(() => [...document.scripts].map((s) => s.src));
  });
  after(async () => {
    if (b) await b.close();
  });

  test('opened under a hostile name: file name, file list, summary table, legend', TEST, async () => {
    assert.equal(await openAs(page, NAME_A, xss), 'ready');
    assert.equal(await page.locator('#file-name').textContent(), NAME_A);
    assert.deepEqual(await page.locator('#file-select option').allTextContents(), [NAME_A]);
    await assertLiteral(page, '#file-select', [NAME_A], 'the file list');
    await assertLiteral(page, '#file-name', [NAME_A], 'the file name');
    await openPanel(page, 'summary');
    // The unknown action and the unknown top-level key are named in the summary's warnings.
    await assertLiteral(page, '#summary-table', [IMG, SVG], 'the summary table');
    await assertLiteral(page, '#legend', [IMG, SCRIPT], 'the legend');
    await shotOf(page, '#legend-wrap', 'legend', 500);
    await shotOf(page, '#summary', 'summary', 400);
  });

  test('timeline tooltip: hover and pinned, on every allocation; Copy stack copies the text', TEST, async () => {
    await page.evaluate(() => window.memviz.setView('active'));
    const st = await viewerState(page);
    // The first allocation (12 MiB, the `<img …>.py:11` weights) lies at the bottom for the whole trace.
    const at = await pagePoint(page, (st.full_x[0] + st.full_x[1]) / 2, 6 * MiB);
    const hovered = await tooltipAt(page, at, 'the weights', (t) => t.includes(SCRIPT));
    for (const s of [`${ROOT_DIR}/${IMG}.py:11:${SCRIPT}`, `train.py:42:${JS_URL}`, `0/0 ${SCRIPT}`, `meta ${IMG} ${TEMPLATE}`, `weights ${TEXTAREA}`]) {
      assert.ok(hovered.includes(s), `the hover tooltip shows ${s} literally: ${hovered}`);
    }
    await assertLiteral(page, '#tooltip', [SCRIPT, IMG, TEXTAREA], 'the hover tooltip');
    await shotOf(page, '#viewer', 'tooltip-hover', 800);
    await page.mouse.click(at.x, at.y);
    await page.locator('#tooltip-actions').waitFor({ state: 'visible' });
    await assertLiteral(page, '#tooltip', [SCRIPT, IMG, JS_URL, TEXTAREA], 'the pinned tooltip');
    await page.click('#copy-stack');
    const copied = await poll(() => page.evaluate(() => window.memviz.lastCopied), 'copy stack');
    assert.ok(copied.includes(`${IMG}.py:11:${SCRIPT}`), `Copy stack copies the text: ${copied}`);
    // (A click on the plot would unpin, but this wide tooltip covers the point: unpin by the API.)
    await page.evaluate(() => window.memviz.pin(-1));
    await page.locator('#tooltip').waitFor({ state: 'hidden' });
    // Every allocation's tooltip, pinned through the API: together they show every payload.
    const texts = [];
    for (let e = 0; e < st.elements; e += 1) {
      const tip = await page.evaluate((x) => window.memviz.pin(x), e);
      assert.ok(tip && tip.pinned, `element ${e} pins`);
      const r = await assertLiteral(page, '#tooltip', [], `the tooltip of element ${e}`);
      // Only the pane's own structure (facts, lists, the folded C++ row): nothing a payload made.
      assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('#tooltip-title *, #tooltip-body *')]
        .map((e) => e.localName).filter((n) => !['dl', 'dt', 'dd', 'pre', 'ol', 'li', 'div', 'details', 'summary', 'span'].includes(n))), []);
      texts.push(r.text);
      if (r.text.includes(LONG_HEAD)) await shotOf(page, '#viewer', 'tooltip-long-name', 900);
      if (r.text.includes(FORWARD)) await shotOf(page, '#viewer', 'tooltip-pinned', 900);
    }
    const all = texts.join('\n');
    for (const [k, s] of Object.entries(PAYLOADS)) assert.ok(all.includes(s), `some tooltip shows ${k} literally`);
    for (const s of [FORWARD, `node=node_${IMG}`, `target=target_${SCRIPT}`, `y = ${TEXTAREA} + ${TEMPLATE_LITERAL}`,
      `${TEXTAREA} annotated step 0 ${IMG}`, `Torch-Compiled Region: 1/0 ${SVG}`, `"note": "${JS_URL}"`]) {
      assert.ok(all.includes(s), `some tooltip shows ${s} literally`);
    }
    const long = texts.find((t) => t.includes(LONG_HEAD));
    assert.ok(long.includes(`${LONG_HEAD}${'\u00e9xxxxxxxxx'.repeat(10)}`) && long.includes(`xxx${SCRIPT}`), 'the 10 000-character name is whole');
    await page.evaluate(() => window.memviz.pin(-1));
  });

  test('annotation phase labels', TEST, async () => {
    // A label shows its name elided in the middle (the step number kept); its title is the name.
    const labels = await poll(async () => {
      const n = await page.locator('#phase-labels span').evaluateAll((es) => es.map((e) => ({ text: e.textContent, title: e.title })));
      return n.length > 0 ? n : null;
    }, 'phase labels');
    const names = labels.map((l) => l.title);
    assert.ok(names.includes(STEP0), `the phase ${STEP0} is named literally: ${JSON.stringify(names)}`);
    assert.ok(names.includes(SCRIPT), `the nested phase ${SCRIPT} is named literally`);
    for (const { text, title } of labels) {
      const [head, tail] = text.split('\u2026');
      assert.ok(text === title || (title.startsWith(head) && title.endsWith(tail)), `${JSON.stringify(text)} is ${JSON.stringify(title)} elided in the middle`);
    }
    await assertLiteral(page, '#phase-labels', [STEP0.slice(0, 12), SCRIPT.slice(0, 8), 'ProfilerStep#0'.slice(-6)], 'the phase labels');
    const titles = await page.locator('#phase-labels span').evaluateAll((s) => s.map((x) => x.title));
    assert.deepEqual(titles, names, 'each label\'s title is its name, literally');
    // Zoomed to the first iteration: its labels are wider, still shown as text.
    const st = await viewerState(page);
    await page.evaluate(([x0, x1]) => window.memviz.view({ method: 'set_x_window', x0, x1 }), [st.full_x[0], st.full_x[0] + (st.full_x[1] - st.full_x[0]) / 4]);
    await poll(async () => (await page.locator('#phase-labels span').count()) > 0, 'phase labels after zoom');
    await assertLiteral(page, '#phase-labels', [STEP0.slice(0, 12), SCRIPT.slice(0, 8)], 'the phase labels (zoomed)');
    const zoomed = await page.locator('#phase-labels span').evaluateAll((es) => es.map((e) => e.title));
    assert.ok(zoomed.includes(STEP0), `the zoomed labels' titles name ${STEP0}: ${JSON.stringify(zoomed)}`);
    await shotOf(page, '#plot-wrap', 'phases', 60);
    await page.evaluate(() => window.memviz.view({ method: 'fit' }));
  });

  test('Allocator settings panel', TEST, async () => {
    await openPanel(page, 'settings');
    const rows = await page.locator('#settings-rows tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
    const row = (k) => rows.find((r) => r[0] === k);
    assert.deepEqual(row(SCRIPT).slice(0, 2), [SCRIPT, SVG], JSON.stringify(rows));
    assert.deepEqual(row(JS_URL).slice(0, 2), [JS_URL, TEXTAREA]);
    assert.equal(row('PYTORCH_CUDA_ALLOC_CONF')[1], `max_split_size_mb:128,${IMG}`);
    assert.equal(row('last_allocator_settings')[1], `${TEMPLATE} ${TEMPLATE_LITERAL}`);
    await assertLiteral(page, '#settings', [SCRIPT, SVG, JS_URL, TEXTAREA, IMG, TEMPLATE, TEMPLATE_LITERAL], 'the settings panel');
    await shotAt(page, '#settings', 'settings');
  });

  test('search status; the source-lines table equals `memviz lines`; a row\'s highlight status names its line', TEST, async () => {
    const run = (q) => search(page, q);
    let r = await run(SCRIPT);
    assert.ok(r.count > 0 && !r.error, `the payload is found as text: ${JSON.stringify(r)}`);
    assert.match(await page.locator('#search-status').textContent(), /^\d+ match(es)?, /);
    r = await run(TEXTAREA);
    assert.ok(r.count > 0, 'annotate texts are searched');
    r = await run('/<img src=x onerror="window\\.__pwned=1">\\.py/');
    assert.ok(r.count > 0 && !r.error, `a regex finds the file: ${JSON.stringify(r)}`);
    await assertLiteral(page, '#search-box', [], 'the search box');
    assert.equal(await page.inputValue('#search-input'), '/<img src=x onerror="window\\.__pwned=1">\\.py/');
    await run('');

    await openPanel(page, 'lines-panel');
    const rows = await page.evaluate(() => window.memviz.linesTable.load());
    const cli = cliJson('lines', XSS);
    assert.deepEqual(rows.map((x) => [x.file, x.line, x.name]), cli.rows.map((x) => [x.file, x.line, x.name]), 'the same rows as the CLI');
    // Each row names its site (docs/sites.md: `basename:line:name`), literally.
    const cells = await page.locator('#lines-rows tr td:first-child .site-text').allTextContents();
    assert.deepEqual([...cells].sort(), cli.rows.map((x) => x.label).sort(), 'each row is its site, literally');
    await assertLiteral(page, '#lines-table', [`${IMG}.py:11:${SCRIPT}`, `:23:${SVG}`, `.py:49:${TEMPLATE_LITERAL}`,
      `semi;colon.py:3:${SEMI_NEWLINE}`, `${RTL}.py:8:${ZERO_WIDTH}${IMG}`, `.py:8:${FAKE_FRAME}`, `leak_${IMG}.py:77:cache_${SCRIPT}`],
    'the source-lines table');
    const i = rows.findIndex((x) => x.file === `${ROOT_DIR}/${IMG}.py` && x.line === 11);
    assert.ok(i >= 0);
    await page.locator('#lines-rows tr').nth(i).click();
    const status = await poll(async () => {
      const t = await page.locator('#search-status').textContent();
      return /highlighted$/.test(t) ? t : null;
    }, 'line highlight status');
    assert.match(status, /^1 allocations from /);
    assert.ok(status.includes(`${IMG}.py:11`), status); // the file's base name
    await assertLiteral(page, '#search-status', [`${IMG}.py:11`], 'the search status');
    await shotAt(page, '#lines-panel', 'lines');
    await page.locator('#lines-rows tr').nth(i).click(); // clear
  });

  test('alive at a moment (live table)', TEST, async () => {
    await openPanel(page, 'live-panel');
    const r = await page.evaluate(() => window.memviz.liveTable.show(-2));
    assert.ok(r.rows.length > 0);
    const frames = r.rows.map((x) => x.top_frame).join('\n');
    assert.ok(frames.includes(SCRIPT), frames);
    await assertLiteral(page, '#live-rows', [`${IMG}.py:11:${SCRIPT}`, SVG, FAKE_FRAME], 'the live table');
    await shotAt(page, '#live-panel', 'live');
  });

  test('leak suspects equal `memviz leaks`', TEST, async () => {
    await openPanel(page, 'leaks-panel');
    const report = await page.evaluate(() => window.memviz.leaksPanel.load());
    const cli = cliJson('leaks', XSS);
    assert.deepEqual(report.suspects.map((x) => x.explanation), cli.suspects.map((x) => x.explanation));
    assert.ok(report.suspects.some((x) => x.kind === 'iteration_growth'), 'the leaking stack is a suspect');
    assert.ok(report.settled_rule.includes(STEP0), report.settled_rule);
    await assertLiteral(page, '#leaks-panel', [report.suspects[0].explanation, `leak_${IMG}.py:77:cache_${SCRIPT}`, STEP0], 'the leaks panel');
    await shotAt(page, '#leaks-panel', 'leaks');
  });

  test('deep link: the hash and "Copy link" carry a hostile search as URL-encoded text; restoring it searches it', TEST, async () => {
    await page.evaluate(() => window.memviz.setView('active'));
    await search(page, IMG); // its own result: an earlier highlight may still be set
    await poll(async () => (await viewerState(page)).highlighted !== null, 'search');
    await page.evaluate(() => window.memviz.pin(0));
    const hash = await page.evaluate(() => window.memviz.links.write());
    assert.equal(await page.evaluate(() => location.hash), hash);
    assert.doesNotMatch(hash, /[<>"{}$ ]/, `the hash is URL-encoded: ${hash}`);
    const params = new URLSearchParams(hash.slice(1));
    assert.equal(params.get('q'), IMG);
    assert.equal(params.get('pin'), '0');
    await page.evaluate(() => { window.memviz.lastCopied = null; });
    await page.click('#copy-link');
    const copied = await poll(() => page.evaluate(() => window.memviz.lastCopied), 'copy link');
    assert.equal(copied, await page.evaluate(() => location.href));
    assert.ok(copied.endsWith(hash));
    // Another hostile hash (raw, not encoded) is applied as data: the search box gets the text.
    const raw = `#view=<script>&q=${SCRIPT}&pin=<b>&x=1,${TEMPLATE_LITERAL}`;
    await page.evaluate((h) => window.memviz.links.restore(h), raw);
    assert.equal(await page.inputValue('#search-input'), SCRIPT);
    assert.equal((await viewerState(page)).view, 'active');
    await page.evaluate((h) => window.memviz.links.restore(h), hash);
    assert.equal(await page.inputValue('#search-input'), IMG);
    await assertLiteral(page, '#view-controls', [], 'the view controls');
    await shotOf(page, '#viewer', 'link', 200);
    await page.evaluate(() => window.memviz.pin(-1));
    await page.fill('#search-input', '');
    await page.press('#search-input', 'Enter');
  });

  test('Allocator State History: rows, header, search, the OOM panel, map hover and pin texts', TEST, async () => {
    await page.evaluate(() => window.memviz.setView('state'));
    const h = () => page.evaluate(() => ({ count: window.memviz.stateHistory.count, selected: window.memviz.stateHistory.selected }));
    const { count } = await h();
    assert.ok(count > 50, `events: ${count}`);
    // The unknown action (its name is a payload) is the event before the final `snapshot`.
    const sel = await page.evaluate((k) => window.memviz.stateHistory.select(k), count - 2);
    assert.ok(sel.text.startsWith(IMG), `the row names the unknown action literally: ${sel.text}`);
    const row = page.locator(`#state-rows .row[data-k="${count - 2}"]`);
    await row.waitFor({ state: 'attached' });
    assert.ok((await row.textContent()).startsWith(`${count - 2}: ${IMG}`));
    await assertLiteral(page, '#state-rows', [IMG], 'the event list');
    await assertLiteral(page, '#state-header', [IMG], 'the State History header');
    // Event search with a payload query.
    await page.fill('#state-search', 'window.__pwned=1');
    await page.press('#state-search', 'Enter');
    const found = await poll(async () => {
      const t = await page.locator('#state-search-status').textContent();
      return /^(match at event \d+|no match)$/.test(t) ? t : null;
    }, 'state search');
    assert.match(found, /^match at event \d+$/);
    await assertLiteral(page, '#state-panel', [IMG], 'the State History panel');
    await shotOf(page, '#viewer', 'state', 900);
    // The OOM event: its panel, then each of its biggest live blocks pinned in the map.
    await page.locator('#state-ooms button').first().click();
    await page.locator('#oom-panel').waitFor({ state: 'visible' });
    const oomSel = await poll(async () => {
      const s = await page.evaluate(() => window.memviz.stateHistory.selection);
      return s && s.oom ? s : null;
    }, 'oom selection');
    await assertLiteral(page, '#oom-panel', [], 'the OOM panel');
    const pinned = [];
    const titles = [];
    for (const item of oomSel.oom.biggest_live_text) {
      const tip = await page.evaluate((a) => window.memviz.stateHistory.focus(a), item.addr);
      assert.equal(typeof tip?.title, 'string', `block ${item.addr} pins`);
      // This block's tooltip, not the one before it (the tooltip stays visible between them).
      const title = tip.title;
      titles.push(title);
      await poll(async () => (await page.locator('#tooltip').isVisible())
        && (await page.locator('#tooltip-title').textContent()) === title, `the map tooltip of ${item.addr}`);
      pinned.push((await assertLiteral(page, '#tooltip', [], `the map tooltip of ${item.addr}`)).text);
    }
    const all = pinned.join('\n');
    for (const s of [`${IMG}.py:11:${SCRIPT}`, FAKE_FRAME, `${RTL}.py:8:${ZERO_WIDTH}${IMG}`, SVG, FORWARD]) {
      assert.ok(all.includes(s), `a map tooltip shows ${s} literally: ${all}`);
    }
    await page.locator('#oom-biggest button').first().click();
    // The loop above left the last block pinned: wait for the first one's tooltip.
    await poll(async () => (await page.evaluate(() => window.memviz.tooltip() && window.memviz.tooltip().pinned))
      && (await page.locator('#tooltip-title').textContent()) === titles[0], 'the tooltip of the OOM panel\'s biggest block');
    await assertLiteral(page, '#tooltip', [SCRIPT], 'the tooltip of the OOM panel\'s biggest block');
    await shotOf(page, '#viewer', 'oom', 1100);
    // Hover (not pinned) over the biggest block in the map.
    await page.evaluate((k) => window.memviz.stateHistory.select(k), count - 1);
    await page.evaluate(() => window.memviz.view({ method: 'fit' })); // focus() zoomed in on a block
    const biggest = oomSel.oom.biggest_live_text[0].addr;
    const text = await tooltipAt(page, await mapPoint(page, 'block', biggest), 'map hover', (t) => t.includes(SCRIPT));
    assert.ok(text.includes(`${IMG}.py:11:${SCRIPT}`), text);
    await assertLiteral(page, '#tooltip', [SCRIPT, IMG], 'the map hover tooltip');
    await shotOf(page, '#viewer', 'state-map-hover', 900);
    await page.mouse.move(1, 1);
  });

  test('flamegraph: labels, hover tooltips, breadcrumb, phase choices and search status', TEST, async () => {
    await page.evaluate(() => window.memviz.setView('flame'));
    let info = await page.evaluate(() => window.memviz.flameControls.refresh());
    assert.ok(info.labels.length > 0, 'wide frames are named');
    await assertLiteral(page, '#flame-labels', [SCRIPT, SVG, FAKE_FRAME], 'the flamegraph labels');
    const spans = await page.locator('#flame-labels span').evaluateAll((s) => s.map((x) => [x.textContent, x.title]));
    for (const [text, title] of spans) assert.ok(title.endsWith(text), `a label is its frame's name: ${text} / ${title}`);
    const options = await page.locator('#flame-at option').allTextContents();
    assert.ok(options.includes(`phase ${STEP0} (bytes × lifetime within it)`), JSON.stringify(options));
    assert.ok(options.includes(`phase ${SCRIPT} (bytes × lifetime within it)`));
    await assertLiteral(page, '#flame-controls', [STEP0, SCRIPT], 'the flamegraph controls');
    await shotOf(page, '#viewer', 'flame', 900);
    // Hover every node: the tooltips show the frames literally (the drawer closed and the details
    // pane folded: the chart is as wide as the page, so the narrowest nodes get a pixel).
    await page.evaluate(() => window.memviz.openTab(null));
    await page.click('#details-toggle');
    await page.locator('#plot').scrollIntoViewIfNeeded();
    const box = await page.locator('#plot').boundingBox();
    const texts = [];
    const nodes = Math.min(info.state.nodes, 80);
    for (let n = 1; n < nodes; n += 1) {
      const c = (await page.evaluate((x) => window.memviz.view({ method: 'flame_node_center', node: x }), n)).result;
      if (!Array.isArray(c)) continue;
      await page.mouse.move(box.x + c[0], box.y + c[1]);
      const tip = await poll(async () => {
        const t = await page.evaluate(() => window.memviz.tooltip());
        return t && t.node === n ? t : null;
      }, `tooltip of node ${n}`, 20_000).catch(() => null);
      if (tip === null) continue; // a node narrower than a pixel
      // The pane fills once the pointer rests: wait for this node's title there.
      await page.waitForFunction((t) => document.getElementById('tooltip-title').textContent === t, tip.title);
      texts.push((await assertLiteral(page, '#tooltip', [], `the tooltip of node ${n}`)).text);
      if (texts.length === 4) await shotOf(page, '#viewer', 'flame-tooltip', 900);
    }
    await page.click('#details-toggle');
    const all = texts.join('\n');
    for (const s of [SCRIPT, SVG, IMG, TEMPLATE_LITERAL, FAKE_FRAME, LONG_HEAD, `${TEXTAREA}.py:5:forward`, `cache_${SCRIPT}`]) {
      assert.ok(all.includes(s), `a flamegraph tooltip shows ${s.slice(0, 60)} literally`);
    }
    // Zoom into the deepest node with a payload: the breadcrumb names the frames.
    const deep = info.labels.find((l) => l.text.includes(`${IMG}.py:11:${SCRIPT}`));
    assert.ok(deep, 'the weights frame is labelled');
    const c = (await page.evaluate((x) => window.memviz.view({ method: 'flame_node_center', node: x }), deep.node)).result;
    await page.mouse.click(box.x + c[0], box.y + c[1]);
    await poll(async () => (await viewerState(page)).flame_view.zoom_path.length > 1, 'zoomed in');
    info = await page.evaluate(() => window.memviz.flameControls.refresh());
    const crumbs = await page.locator('#flame-breadcrumb button').allTextContents();
    // A chip names the function first and the file last; its title is the whole frame.
    assert.ok(crumbs.includes(`${SCRIPT} · ${IMG}.py:11`), JSON.stringify(crumbs));
    const titles = await page.locator('#flame-breadcrumb button').evaluateAll((bs) => bs.map((b) => b.title));
    assert.ok(titles.some((t) => t.startsWith(`${ROOT_DIR}/${IMG}.py:11:${SCRIPT} (`)), JSON.stringify(titles));
    await assertLiteral(page, '#flame-breadcrumb', [SCRIPT, JS_URL], 'the breadcrumb');
    await shotOf(page, '#viewer', 'flame-zoomed', 900);
    await page.locator('#flame-breadcrumb button').first().click();
    await poll(async () => (await viewerState(page)).flame_view.zoom_path.length === 1, 'zoomed out');
    // A payload phase as a time range, and a search marking matches.
    await page.selectOption('#flame-at', { label: `phase ${STEP0} (bytes × lifetime within it)` });
    await poll(async () => (await viewerState(page)).flame_view.step_range, 'phase range');
    await page.selectOption('#flame-at', 'peak');
    await search(page, SCRIPT);
    await poll(async () => (await viewerState(page)).flame_view.matched !== null, 'matches marked');
    await page.evaluate(() => window.memviz.flameControls.refresh());
    assert.match(await page.locator('#flame-status').textContent(), /search matches/);
    await assertLiteral(page, '#flame-status', [], 'the flamegraph status');
    await page.fill('#search-input', '');
    await page.press('#search-input', 'Enter');
    await page.mouse.move(1, 1);
    await page.evaluate(() => window.memviz.setView('active'));
  });

  test('opened twice under hostile names: files side by side, compare two snapshots, diff flamegraph', TEST, async () => {
    assert.equal(await openAs(page, NAME_B, xss), 'ready');
    assert.equal(await page.locator('#file-name').textContent(), NAME_B);
    assert.deepEqual(await page.locator('#file-select option').allTextContents(), [NAME_A, NAME_B]);
    const demo = await page.evaluate(() => window.memviz.open('assets/demo.pickle').then((r) => r.state));
    assert.equal(demo, 'ready');
    await openPanel(page, 'files-panel');
    const files = await page.evaluate(() => window.memviz.filesAndCompare.loadFiles());
    assert.deepEqual(files.map((f) => f.name), [NAME_A, NAME_B, 'assets/demo.pickle'].map((n, i) => (i < 2 ? n : files[2].name)));
    await assertLiteral(page, '#files-rows', [NAME_A, NAME_B], 'the opened files table');
    await openPanel(page, 'compare-panel');
    await assertLiteral(page, '#compare-a', [NAME_A, NAME_B], 'compare A');
    await assertLiteral(page, '#compare-b', [NAME_A, NAME_B], 'compare B');
    const same = await page.evaluate(() => window.memviz.filesAndCompare.compare(0, 1));
    assert.deepEqual([same.group_count, same.segments_only_a, same.segments_only_b], [0, 0, 0], 'the file against itself');
    // B = the hostile file, A = the demo: its stacks grew, so they come first.
    await page.selectOption('#compare-a', '2');
    await page.selectOption('#compare-b', '0');
    const r = await page.evaluate(() => window.memviz.filesAndCompare.compare(2, 0));
    assert.ok(r.group_count > 0);
    const stacks = r.groups.map((g) => g.stack.join('\n')).join('\n');
    assert.ok(stacks.includes(`${IMG}.py:11:${SCRIPT}`), 'the groups carry the frames');
    await assertLiteral(page, '#compare-rows', [`${ROOT_DIR}/${IMG}.py:11:${SCRIPT}`, FAKE_FRAME, `${RTL}.py:8:${ZERO_WIDTH}${IMG}`, `cache_${SCRIPT}`],
      'the compare table');
    await assertLiteral(page, '#compare-panel', [], 'the compare panel');
    await shotAt(page, '#compare-panel', 'compare');
    // The diff flamegraph of the two hostile names: its choice and status name them.
    await page.locator('#compare-a').scrollIntoViewIfNeeded();
    await page.selectOption('#compare-a', '0');
    await page.selectOption('#compare-b', '1');
    await page.click('#compare-flame');
    const d = await poll(async () => { const x = (await viewerState(page)).flame_view; return x && x.diff ? x : null; }, 'diff flamegraph');
    assert.deepEqual([d.diff.a, d.diff.b], [NAME_A, NAME_B]);
    // The viewer answers flame_diff (seen in its state) one drawn frame before the page names
    // the choice in the select, so wait for the select.
    const want = `compare ${NAME_A} → ${NAME_B} (red: grew, blue: shrank)`;
    const chosen = await poll(async () => {
      const t = await page.locator('#flame-at option:checked').textContent();
      return t === want ? t : null;
    }, 'the diff choice in #flame-at');
    assert.equal(chosen, want);
    await page.evaluate(() => window.memviz.flameControls.refresh());
    await assertLiteral(page, '#flame-controls', [NAME_A, NAME_B], 'the diff flamegraph controls');
    await assertLiteral(page, '#flame-labels', [SCRIPT], 'the diff flamegraph labels');
    await shotOf(page, '#viewer', 'flame-diff', 900);
    await page.selectOption('#flame-at', 'peak');
    await page.evaluate(() => window.memviz.setView('active'));
  });

  test('an unreadable file: the alert names its hostile name as text', TEST, async () => {
    // Cut before any whole segment or event: an error (a later cut would open partially).
    assert.equal(await openAs(page, NAME_BROKEN, xss.subarray(0, 40)), 'error');
    const alert = await assertLiteral(page, '#error', [`"${NAME_BROKEN}"`], 'the alert');
    assert.match(alert.text, /^Could not open "/);
    await shotOf(page, '#error', 'error', 300);
  });

  test('nothing ran: no __pwned, no dialog, no element or handler from a payload, no request outside dist/, no errors', TEST, async () => {
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.equal(await page.evaluate(() => typeof window.__pwned), 'undefined');
    for (const w of page.workers()) assert.equal(await w.evaluate(() => typeof self.__pwned), 'undefined', 'nor in a worker');
    assert.deepEqual(b.log.dialogs, [], 'no dialog opened');
    assert.deepEqual(await page.evaluate(() => window.__xssLog), [], 'no forbidden element or attribute was ever inserted');
    const dom = await page.evaluate((forbidden) => {
      const all = [...document.querySelectorAll('*')];
      return {
        forbidden: all.filter((e) => e.matches(forbidden) && e.localName !== 'script' && !(e.localName === 'link' && e.parentElement === document.head)
          && !(e.localName === 'meta' && e.parentElement === document.head)).map((e) => e.outerHTML.slice(0, 120)),
        handlers: all.flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => `${e.localName} ${a.name}`)),
        scripts: [...document.scripts].map((s) => s.src),
        title: document.title,
      };
    }, FORBIDDEN);
    assert.deepEqual(dom.forbidden, []);
    assert.deepEqual(dom.handlers, []);
    assert.deepEqual(dom.scripts, scripts, 'no script element was added');
    assert.equal(dom.title, 'memviz: PyTorch CUDA memory snapshots');
    assert.deepEqual(misses, [], 'every request was answered from dist/ under the sub-path');
    const foreign = b.log.requests.filter((u) => !u.startsWith(baseUrl) && !/^(blob|data):/.test(u));
    assert.deepEqual(foreign, [], 'no request outside dist/');
    assert.deepEqual(b.log.requests.filter((u) => /\/x$|pwned/.test(u)), [], 'nothing asked for `x`');
    // The one expected error is the truncated file's (reported by the page, not thrown).
    assert.deepEqual(b.log.errors, []);
  });
});
