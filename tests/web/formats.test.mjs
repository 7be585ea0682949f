// The other snapshot containers in the page (issue 28): a snapshot's JSON, gzip'd JSON and
// torch.save'd (.pt zip) twins, made by `generate.py twins` from a pickle, open by the file
// input, by `?url=` (also with `Content-Encoding: gzip`), as a buffer (the embedding path), by
// `memviz open` and in a `memviz html` report, and show the pickle's `memviz summary --json`; a
// snapshot without a trace (the segment list of torch.cuda.memory_snapshot()) opens on the
// Allocator State History with its segments, and each timeline says it has no trace and why; a
// torch.save checkpoint says it is one. Both backends (WebGL2, WebGPU on SwiftShader).
// Run by `cargo xtask test`, or: node --test tests/web/formats.test.mjs
// Needs dist/ and target/release/memviz built after it; writes its fixtures to
// target/formats-fixtures/ and screenshots to target/screenshots/formats-*.png.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { MIME } from './serve_dist.mjs';
import {
  ROOT, DIST, CLI, GENERATE, SCREENSHOTS, TIMEOUT_MS, BACKENDS, generate, poll, startChromium, requireBuilt,
  cliText, cliJson, viewerState, mapPoint,
} from './browser.mjs';

const CORPUS = path.resolve(ROOT, '../shared/corpus/real');
const FIXTURES = path.join(ROOT, 'target/formats-fixtures');
const SUB_PATH = '/sub/dir/';
const TEST = { timeout: 180_000 };
const TWIN_EXTS = ['json', 'json.gz', 'pt'];
/** The extensions the file input must offer (index.html `accept`). */
const ACCEPTED = ['.pickle', '.pkl', '.gz', '.json', '.json.gz', '.pt', '.pth'];
const TIMELINES = ['active', 'segments', 'pools'];

// ----- fixtures ------------------------------------------------------------------------------

const fixture = (name) => path.join(FIXTURES, name);
/** `x.pickle`, `x.pkl` → `x` (generate.py twins' stem). */
const stem = (file) => path.basename(file).replace(/\.gz$/, '').replace(/\.[^.]+$/, '');
/** The twins of `src`: {json, 'json.gz', pt} paths. */
const twinsOf = (src) => Object.fromEntries(TWIN_EXTS.map((e) => [e, fixture(`twins/${stem(src)}.${e}`)]));

/** A corpus file when the corpus is here, else `fallback`. */
function corpusOr(name, fallback) {
  const p = path.join(CORPUS, name);
  return fs.existsSync(p) ? p : fallback;
}

/** A traced snapshot (the real one when the corpus is here), and the generated multi-device one. */
let TRACED = [];
/** A snapshot without a trace: the segment list of torch.cuda.memory_snapshot(). */
let SEGMENT_LIST = '';
let CHECKPOINT = '';

const cliCache = new Map();
/** `memviz summary FILE --json` of the native CLI, parsed. */
function cliSummary(file) {
  if (!cliCache.has(file)) cliCache.set(file, cliJson('summary', file));
  return cliCache.get(file);
}

// ----- a server: dist/ and the fixtures under one sub-path (same origin, as ?url= needs) -----

/**
 * Serves dist/ under SUB_PATH, the fixtures' twins under `SUB_PATH/formats/NAME`, and
 * `SUB_PATH/encoded/STEM.json` as the bytes of STEM.json.gz with `Content-Encoding: gzip` (so
 * fetch() hands the page the JSON itself, as a server that compresses on the fly does).
 * `misses` collects requests that found nothing.
 */
function serve(misses) {
  const root = path.resolve(DIST);
  const send = (res, file, headers) => {
    let stat = null;
    try {
      stat = fs.statSync(file);
    } catch {
      stat = null;
    }
    if (stat === null || !stat.isFile()) return false;
    res.writeHead(200, { 'content-length': stat.size, 'cache-control': 'no-store', ...headers });
    fs.createReadStream(file).pipe(res);
    return true;
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    let rel = url.pathname.startsWith(SUB_PATH) ? decodeURIComponent(url.pathname.slice(SUB_PATH.length)) : null;
    let done = false;
    if (rel !== null && rel.startsWith('formats/')) {
      done = send(res, fixture(`twins/${path.basename(rel)}`), { 'content-type': 'application/octet-stream' });
    } else if (rel !== null && rel.startsWith('encoded/')) {
      done = send(res, fixture(`twins/${path.basename(rel)}.gz`), { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    } else if (rel !== null) {
      if (rel === '' || rel.endsWith('/')) rel += 'index.html';
      const file = path.resolve(root, rel);
      done = file.startsWith(root + path.sep) && send(res, file, { 'content-type': MIME[path.extname(file)] || 'application/octet-stream' });
    }
    if (!done) {
      misses.push(url.pathname);
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

let server;
let baseUrl;
const misses = [];

before(async () => {
  requireBuilt();
  fs.mkdirSync(fixture('twins'), { recursive: true });
  generate(fixture('small/multidevice.pickle'), 'small', fixture('small'));
  TRACED = [corpusOr('silmont2000__assignment2-systems__mem_snapshot.pickle', null), fixture('small/multidevice.pickle')]
    .filter((f) => f !== null);
  SEGMENT_LIST = corpusOr('Muduard__LayoutEditing__memory_snapshot.pkl', fixture('small/bare_list.pickle'));
  // generate() remakes a file older than generate.py; the twins come from formats.py too.
  const writer = fs.statSync(path.join(ROOT, 'tests/fixtures/formats.py')).mtimeMs;
  for (const src of [...TRACED, SEGMENT_LIST]) {
    const { pt } = twinsOf(src);
    if (fs.existsSync(pt) && fs.statSync(pt).mtimeMs < writer) fs.rmSync(pt);
    generate(pt, 'twins', src, fixture('twins'));
  }
  CHECKPOINT = fixture('checkpoint.pt');
  generate(CHECKPOINT, 'checkpoint', CHECKPOINT);
  server = await serve(misses);
  baseUrl = `http://127.0.0.1:${server.address().port}${SUB_PATH}`;
});

after(async () => {
  if (server) await new Promise((resolve) => server.close(resolve));
});

// ----- page helpers --------------------------------------------------------------------------

/** Chromium on the page with `query`; collects page errors. */
async function launch(args, query) {
  const b = await startChromium(args, 'memviz-formats-');
  const errors = [];
  b.page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  b.page.on('console', (msg) => { if (msg.type() === 'error') errors.push(`console: ${msg.text()}`); });
  // The screenshots' size, set once before the page loads: a resize while a view is being
  // built races with the worker's canvas.
  await b.page.setViewportSize({ width: 1440, height: 900 });
  await b.page.goto(`${baseUrl}${query}`);
  await b.page.waitForFunction(() => window.memviz !== undefined && document.body.dataset.memvizBackend !== undefined,
    null, { timeout: TIMEOUT_MS });
  return { ...b, errors };
}

/** Opens `file` through `#file-input`; resolves with the state it settles in. */
async function openWithInput(page, file) {
  await page.evaluate(() => {
    window.__log = [];
    window.__obs?.disconnect();
    window.__obs = new MutationObserver(() => window.__log.push(document.body.dataset.memvizState));
    window.__obs.observe(document.body, { attributes: true, attributeFilter: ['data-memviz-state'] });
  });
  await page.setInputFiles('#file-input', file);
  await page.waitForFunction(() => {
    const i = window.__log.indexOf('loading');
    return i >= 0 && window.__log.length > i + 1 && document.body.dataset.memvizState !== 'loading';
  }, null, { timeout: TIMEOUT_MS });
  return page.evaluate(() => document.body.dataset.memvizState);
}

const summaryJson = async (page) => JSON.parse(await page.locator('#summary-json').textContent());
const alertText = (page) => page.evaluate(() => {
  const e = document.getElementById('error');
  return e.hidden ? '' : e.textContent;
});

/** Shows opened file `index` and waits until it is the one shown. */
async function selectFile(page, index, name) {
  await page.selectOption('#file-select', String(index));
  await poll(async () => (await viewerState(page)).file === index, `file ${index}`);
  await page.waitForFunction((n) => document.getElementById('file-name').textContent === n, name);
}

/** Waits until the worker drew a frame at the canvas's current size (before a screenshot). */
async function drawnAtSize(page) {
  await poll(async () => {
    const [w, h] = await page.evaluate(() => [document.getElementById('plot').clientWidth, document.getElementById('plot').clientHeight]);
    const g = (await viewerState(page)).geometry;
    return g.css_w === w && g.css_h === h;
  }, 'the worker has the canvas size', 10_000);
  await page.evaluate(() => window.memviz.view({ method: 'state' })); // after the next frame
}

/** The no-trace note over the plot: its text, or null when hidden. */
const noTrace = (page) => page.evaluate(() => {
  const box = document.getElementById('no-trace');
  return box.hidden ? null : document.getElementById('no-trace-text').textContent;
});

/** Asserts the State History shows the final state `memviz state FILE --json` prints, with a segment in its map. */
async function assertFinalState(page, file, what) {
  const st = await viewerState(page);
  assert.equal(st.view, 'state', `${what}: the State History is shown`);
  const cli = cliJson('state', file);
  const sv = st.state_view;
  assert.ok(sv, `${what}: state().state_view`);
  for (const k of ['reserved_bytes', 'allocated_bytes', 'segments', 'blocks']) {
    assert.equal(sv[k], cli[k], `${what}: ${k} as memviz state`);
  }
  assert.match(await page.locator('#state-event').textContent(), /no trace events/, `${what}: the header says so`);
  assert.match(await page.locator('#state-totals').textContent(), /reserved/);
  // The map draws the segments: the first one `memviz segments` names has a centre in the plot.
  const first = /;seg_(\d+);/.exec(cliText('segments', file));
  assert.ok(first, `${what}: memviz segments names a segment`);
  // (Polled: a resize of the plot reaches the worker's canvas on a later frame.)
  let seen = null;
  try {
    await poll(async () => {
      const at = await mapPoint(page, 'segment', first[1]);
      const box = await page.locator('#plot').boundingBox();
      seen = { at, box };
      return at.x > box.x && at.x < box.x + box.width && at.y > box.y && at.y < box.y + box.height;
    }, `${what}: segment ${first[1]} drawn in the plot`, 10_000);
  } catch (err) {
    const st = await viewerState(page);
    throw new Error(`${err.message}: ${JSON.stringify({ ...seen, geometry: st.geometry, state_view: st.state_view })}`);
  }
}

// ----- the suite, once per backend ---------------------------------------------------------

for (const backend of BACKENDS) {
  describe(`other formats with ${backend.name}`, () => {
    let b;
    let page;
    const shot = (name) => path.join(SCREENSHOTS, `formats-${backend.name}-${name}.png`);

    before(async () => {
      b = await launch(backend.args, backend.query);
      page = b.page;
    });
    after(async () => {
      if (b) await b.close();
    });

    test('the file input offers every format and the start screen names them', TEST, async () => {
      const accept = (await page.locator('#file-input').getAttribute('accept')).split(',');
      for (const ext of ACCEPTED) assert.ok(accept.includes(ext), `accept lists ${ext}: ${accept}`);
      const intro = await page.locator('#intro-text').textContent();
      for (const word of ['_dump_snapshot()', 'pickle', 'JSON', 'torch.save', 'gzip', 'memory_snapshot()']) {
        assert.ok(intro.includes(word), `the start screen names ${word}: ${intro}`);
      }
      await page.screenshot({ path: shot('start') });
    });

    test('JSON, JSON.gz and .pt twins opened by the file input show the summary of their pickle', TEST, async () => {
      for (const src of [...TRACED, SEGMENT_LIST]) {
        const twins = twinsOf(src);
        for (const ext of TWIN_EXTS) {
          const what = path.basename(twins[ext]);
          const state = await openWithInput(page, twins[ext]);
          assert.equal(state, 'ready', `${what}: ${await alertText(page)}`);
          assert.equal(await page.locator('#file-name').textContent(), what);
          assert.deepEqual(await summaryJson(page), cliSummary(src), `${what}: the summary of ${path.basename(src)}`);
        }
      }
      assert.deepEqual(b.errors, []);
    });

    // Every corpus file's twins (issue 28: "summary equal … in the page"). One backend: the
    // summary is the model's, not the drawing's. Each file's twins are written, opened and
    // deleted before the next (the JSON twins are up to 114 MB each), and the page is reloaded
    // per file so wasm memory does not hold 75 models.
    test('every corpus file: its JSON, JSON.gz and .pt twins show the summary of the pickle', { timeout: 1_200_000, skip: backend.name !== 'webgl2' || !fs.existsSync(CORPUS) }, async () => {
      const dir = fixture('corpus-twins');
      const sources = fs.readdirSync(CORPUS).filter((n) => /\.(pickle|pkl)$/.test(n)).sort();
      assert.ok(sources.length > 0, 'the corpus has snapshots');
      for (const name of sources) {
        const src = path.join(CORPUS, name);
        fs.rmSync(dir, { recursive: true, force: true });
        fs.mkdirSync(dir, { recursive: true });
        const r = spawnSync('python3', [GENERATE, 'twins', src, dir], { encoding: 'utf8' });
        assert.equal(r.status, 0, `generate.py twins ${name}: ${r.stderr}`);
        await page.reload();
        await page.waitForFunction(() => window.memviz !== undefined && document.body.dataset.memvizBackend !== undefined,
          null, { timeout: TIMEOUT_MS });
        for (const ext of TWIN_EXTS) {
          const twin = path.join(dir, `${stem(src)}.${ext}`);
          const state = await openWithInput(page, twin);
          assert.equal(state, 'ready', `${path.basename(twin)}: ${await alertText(page)}`);
          assert.deepEqual(await summaryJson(page), cliSummary(src), `${path.basename(twin)}: the summary of ${name}`);
        }
      }
      fs.rmSync(dir, { recursive: true, force: true });
      assert.deepEqual(b.errors, []);
    });

    test('?url= opens the twins (one served with Content-Encoding: gzip), and a buffer opens as embedding sends it', TEST, async () => {
      const src = TRACED[0];
      const s = stem(src);
      const urls = [`formats/${s}.json`, `formats/${s}.json.gz`, `formats/${s}.pt`, `encoded/${s}.json`];
      const c = await launch(backend.args, `${backend.query}&${urls.map((u) => `url=${encodeURIComponent(u)}`).join('&')}`);
      try {
        await c.page.waitForFunction((n) => document.querySelectorAll('#file-select option').length === n
          && document.body.dataset.memvizState === 'ready', urls.length, { timeout: TIMEOUT_MS });
        const names = await c.page.locator('#file-select option').allTextContents();
        assert.deepEqual(names, [`${s}.json`, `${s}.json.gz`, `${s}.pt`, `${s}.json`].map((n, i) => (i === 3 ? `${n} (2)` : n)));
        for (let i = 0; i < urls.length; i++) {
          await selectFile(c.page, i, names[i]);
          assert.deepEqual(await summaryJson(c.page), cliSummary(src), `${urls[i]}: the summary of ${path.basename(src)}`);
        }
        // The embedding protocol's `buffer` goes through window.memviz.open(buffer).
        for (const ext of TWIN_EXTS) {
          const r = await c.page.evaluate(async (u) => {
            const buf = await (await fetch(u)).arrayBuffer();
            const x = await window.memviz.open(buf);
            return { state: x.state, json: x.json, message: x.message };
          }, `formats/${s}.${ext}`);
          assert.equal(r.state, 'ready', `buffer of ${s}.${ext}: ${r.message}`);
          assert.deepEqual(JSON.parse(r.json), cliSummary(src), `buffer of ${s}.${ext}`);
        }
        assert.deepEqual(c.errors, []);
      } finally {
        await c.close();
      }
    });

    test('a segment list opens on the State History with its segments; each timeline says it has no trace', TEST, async () => {
      const what = path.basename(SEGMENT_LIST);
      // Opened from a timeline, it lands on the State History.
      await page.evaluate(() => window.memviz.setView('active'));
      assert.equal(await openWithInput(page, SEGMENT_LIST), 'ready', await alertText(page));
      await page.evaluate(() => window.memviz.view({ method: 'state' }));
      await assertFinalState(page, SEGMENT_LIST, what);
      assert.equal(await noTrace(page), null, 'no note over the State History\'s map');
      const beside = page.locator('#state-no-trace');
      assert.equal(await beside.isVisible(), true, 'the sentence stands in for the empty event list');
      assert.match(await beside.textContent(), /^This snapshot has no trace: .*the map shows them, and there are no events to list/);
      assert.equal(await page.locator('#state-list').isVisible(), false, 'no empty list');
      await drawnAtSize(page);
      await page.screenshot({ path: shot('segment-list-state') });
      for (const view of TIMELINES) {
        await page.evaluate((v) => window.memviz.setView(v), view);
        const note = await noTrace(page);
        assert.ok(note !== null, `${view}: the plot says there is no trace`);
        assert.match(note, /^This snapshot has no trace: it is the segment list of torch\.cuda\.memory_snapshot\(\)/, view);
        assert.match(note, /Allocator State History/, view);
        assert.match(note, /_record_memory_history\(\)/, `${view}: says how to get a trace`);
        // Inside the plot, readable, and not covering the whole of it.
        const box = await page.locator('#no-trace').boundingBox();
        const plot = await page.locator('#plot').boundingBox();
        assert.ok(box.x >= plot.x && box.x + box.width <= plot.x + plot.width && box.y >= plot.y
          && box.y + box.height <= plot.y + plot.height / 2, `${view}: the note sits in the plot's upper half`);
        assert.ok((await viewerState(page)).elements > 0, `${view}: the flat step is drawn`);
        if (view === 'active') {
          await drawnAtSize(page);
          await page.screenshot({ path: shot('segment-list-timeline') });
        }
      }
      await page.click('#no-trace-state');
      await poll(async () => (await viewerState(page)).view === 'state', 'the button shows the State History');
      await page.locator('#state-no-trace').waitFor({ state: 'visible' });
      await page.evaluate(() => window.memviz.view({ method: 'state' }));
      await assertFinalState(page, SEGMENT_LIST, `${what} (after the button)`);
      // The segment list's twins open the same way.
      for (const ext of TWIN_EXTS) {
        const twin = twinsOf(SEGMENT_LIST)[ext];
        await page.evaluate(() => window.memviz.setView('active'));
        assert.equal(await openWithInput(page, twin), 'ready', await alertText(page));
        await page.evaluate(() => window.memviz.view({ method: 'state' }));
        await assertFinalState(page, SEGMENT_LIST, path.basename(twin));
      }
      // A traced file: no note; a device of it without a trace: the note names the device.
      const multi = fixture('small/multidevice.pickle');
      await page.evaluate(() => window.memviz.setView('active'));
      assert.equal(await openWithInput(page, multi), 'ready', await alertText(page));
      assert.equal((await viewerState(page)).view, 'active', 'a traced file stays on the timeline');
      assert.equal(await noTrace(page), null, 'a traced device has no note');
      await page.evaluate(() => window.memviz.setView('state'));
      assert.equal(await page.locator('#state-no-trace').isVisible(), false, 'a traced device lists its events');
      assert.equal(await page.locator('#state-list').isVisible(), true);
      await page.evaluate(() => window.memviz.setView('active'));
      await page.selectOption('#device-select', '1');
      await poll(async () => (await viewerState(page)).device === 1, 'device 1');
      await poll(async () => (await noTrace(page)) !== null, 'the note on device 1');
      assert.match(await noTrace(page), /^cuda:1 has no trace in this snapshot/);
      assert.deepEqual(b.errors, []);
    });

    test('a torch.save checkpoint is refused as one, naming the file; the page stays usable', TEST, async () => {
      const before = await page.locator('#file-select option').allTextContents();
      assert.equal(await openWithInput(page, CHECKPOINT), 'error');
      const text = await alertText(page);
      assert.ok(text.includes('checkpoint.pt'), `the alert names the file: ${text}`);
      assert.match(text, /checkpoint/i, `the alert says it is a checkpoint: ${text}`);
      assert.match(text, /not a memory snapshot/, text);
      assert.deepEqual(await page.locator('#file-select option').allTextContents(), before, 'not added');
      const src = TRACED[0];
      assert.equal(await openWithInput(page, twinsOf(src).json), 'ready', await alertText(page));
      assert.equal(await alertText(page), '', 'the next open clears the alert');
    });
  });
}

// ----- memviz open and memviz html --------------------------------------------------------------

/** `memviz open --no-browser --port 0 FILES…`: resolves with {url, stop()}. */
function startOpen(files) {
  const child = spawn(CLI, ['open', '--no-browser', '--port', '0', ...files], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve({ url: out.slice(0, nl).trim(), stop: () => child.kill() });
    });
    child.on('exit', (code) => reject(new Error(`memviz open exited ${code}: ${err}`)));
  });
}

describe('memviz open and memviz html with the other formats', () => {
  test('memviz open serves the twins and the page opens each with its pickle\'s summary', TEST, async () => {
    const src = TRACED[0];
    const files = [...Object.values(twinsOf(src)), twinsOf(SEGMENT_LIST).pt];
    const opened = await startOpen(files);
    const browser = await startChromium([], 'memviz-formats-open-');
    try {
      const { page } = browser;
      await page.goto(opened.url, { waitUntil: 'domcontentloaded' });
      await page.waitForFunction((n) => document.querySelectorAll('#file-select option').length === n
        && document.body.dataset.memvizState === 'ready', files.length, { timeout: TIMEOUT_MS });
      const names = await page.locator('#file-select option').allTextContents();
      assert.deepEqual(names, files.map((f) => path.basename(f)));
      // The last one, the segment list, is shown on the State History.
      assert.equal((await viewerState(page)).view, 'state');
      for (let i = 0; i < files.length; i++) {
        await selectFile(page, i, names[i]);
        assert.deepEqual(await summaryJson(page), cliSummary(i < 3 ? src : SEGMENT_LIST), names[i]);
      }
    } finally {
      await browser.close();
      opened.stop();
    }
  });

  test('memviz html of a .pt twin and of a segment list: the report opens from file:// with the summary', TEST, async () => {
    const dir = fixture('reports');
    fs.mkdirSync(dir, { recursive: true });
    const browser = await startChromium([], 'memviz-formats-report-');
    try {
      for (const [file, src] of [[twinsOf(TRACED[0]).pt, TRACED[0]], [twinsOf(TRACED[0])['json.gz'], TRACED[0]], [SEGMENT_LIST, SEGMENT_LIST]]) {
        const out = path.join(dir, `${path.basename(file)}.html`);
        cliText('html', file, '-o', out, '--dist', DIST);
        const { page } = browser;
        await page.goto(pathToFileURL(out).href);
        await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.memvizState), null, { timeout: TIMEOUT_MS });
        assert.equal(await page.evaluate(() => document.body.dataset.memvizState), 'ready', `${out}: ${await alertText(page)}`);
        assert.deepEqual(await summaryJson(page), cliSummary(src), path.basename(out));
        if (src === SEGMENT_LIST) {
          await page.evaluate(() => window.memviz.view({ method: 'state' }));
          await assertFinalState(page, SEGMENT_LIST, 'the report');
          await page.evaluate(() => window.memviz.setView('active'));
          assert.match(await noTrace(page), /no trace/);
        }
      }
    } finally {
      await browser.close();
    }
  });

  test('no request missed the server', () => {
    assert.deepEqual(misses, []);
  });
});
