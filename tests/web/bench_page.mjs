// Page benchmark: the built viewer (dist/) in headless Debian Chromium, opening big snapshots.
//
//   node tests/web/bench_page.mjs FILE... [--backend webgl2|webgpu|both] [--rounds N]
//        [--dist DIR] [--native-ms MS,MS,...] [--timeout-s S]
//
// `cargo xtask bench-page` builds everything, generates the snapshots and runs this. For every
// FILE and backend, each round launches a FRESH Chromium (new user-data-dir: a cold tab), opens
// the page from a tiny static server (dist/ under a sub-path), waits for the worker to report
// its backend, then "drops" FILE with setInputFiles('#file-input', FILE) (Chromium reads the
// local path; the bytes never cross the DevTools protocol) and measures:
//   - drop → first frame: `memviz.lastOpen.firstFrameMs` (page clock, from the input's change
//     event to the first frame drawn at the final canvas size), plus its parseMs / totalMs /
//     drawMs, and the wall time seen from node (setInputFiles → data-memviz-state=ready);
//     and the first frame part by part (`breakdown`: read, parse, model, each step of the first
//     view, draw, present) with the page's main-thread task time over the open;
//   - 10 zoom/pan steps (`memviz.view({method: 'zoom_at' | 'pan_by' | 'key', …})`), each timed in the page
//     with performance.now() around the awaited call (input → worker → frame drawn), with the
//     worker's CPU `frameMs`; then it keeps asking for frames until none was drawn for 250 ms:
//     "settled" = input → the step's last frame drawn (windowed scenes are rebuilt 120 ms after
//     the camera stops), "presented" = input → the frame slot after it (includes SwiftShader's
//     rasterisation in the GPU process, which `frameMs` and the step time do not);
//   - with --views: every view and panel in turn (Cached Segments, Private Pools, State History
//     with an event selected, flamegraph, back to Active with an element hovered (its hit index),
//     search, source lines, alive at the peak, leaks), with the worker's wasm memory after each
//     (it never shrinks: the largest it needed so far) and the page's notice (a view that cannot
//     fit says so there);
//   - memory after the steps: `memviz.stats()` (the worker's wasm memory, the page's JS heap),
//     the worker's JS heap (CDP Runtime.getHeapUsage), and from /proc every process of that
//     Chromium (VmRSS, VmHWM): the renderer (largest `--type=renderer`: it hosts the page and
//     its worker), the GPU process (SwiftShader draws there) and the sum (RSS, and PSS which
//     counts shared pages once), plus the largest sum sampled every 250 ms during the round.
// The baseline of the same run: the native CLI (`target/release/memviz bench FILE`: parse +
// model), run here unless `--native-ms` gives it (one value per FILE); ratio = browser drop →
// first frame / native parse. Prints one JSON line per (file, backend), then a Markdown table.
// Exits 1 when any round failed (the row says why); a benchmark, not a timed test.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveDist } from './serve_dist.mjs';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(ROOT, 'target/release/memviz');
const CHROMIUM = '/usr/bin/chromium';
const SUB_PATH = '/bench/page/';
const CHROMIUM_ARGS = [
  '--headless=new', '--no-sandbox', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--disable-quic', '--enable-precise-memory-info',
];
/** WebGPU on SwiftShader (Vulkan) needs all of these together. */
const WEBGPU_ARGS = [
  '--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-vulkan=swiftshader',
  '--use-angle=swiftshader', '--enable-unsafe-swiftshader',
];
const VIEWPORT = { width: 1200, height: 800 };
const START_TIMEOUT_MS = 60_000;
/** A step has settled once no frame was drawn for this long (App's SETTLE_MS is 120). */
const QUIET_MS = 250;
const SETTLE_CAP_MS = 15_000;
const SAMPLE_MS = 250;
const MB = 1e6;

const USAGE = 'usage: node tests/web/bench_page.mjs FILE... [--backend webgl2|webgpu|both] [--rounds N] '
  + '[--dist DIR] [--native-ms MS,MS,...] [--timeout-s S] [--views]';

function parseArgs(argv) {
  const opts = { files: [], backends: ['webgl2', 'webgpu'], rounds: 1, dist: path.join(ROOT, 'dist'), nativeMs: null, timeoutMs: 300_000, views: false };
  for (let i = 0; i < argv.length; i += 1) {
    let arg = argv[i];
    let value = null;
    if (arg.startsWith('--') && arg.includes('=')) [arg, value] = [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)];
    const next = () => {
      if (value !== null) return value;
      i += 1;
      if (i >= argv.length) throw new Error(`${arg} wants a value\n${USAGE}`);
      return argv[i];
    };
    switch (arg) {
      case '--backend': {
        const b = next();
        if (!['webgl2', 'webgpu', 'both'].includes(b)) throw new Error(`--backend wants webgl2, webgpu or both, got ${b}`);
        opts.backends = b === 'both' ? ['webgl2', 'webgpu'] : [b];
        break;
      }
      case '--rounds':
        opts.rounds = Number(next());
        if (!Number.isInteger(opts.rounds) || opts.rounds < 1) throw new Error('--rounds wants a whole number ≥ 1');
        break;
      case '--dist': opts.dist = path.resolve(next()); break;
      case '--native-ms': opts.nativeMs = next().split(',').map(Number); break;
      case '--timeout-s': opts.timeoutMs = Number(next()) * 1000; break;
      case '--views': opts.views = true; break;
      case '-h': case '--help': console.log(USAGE); process.exit(0); break;
      default:
        if (arg.startsWith('-')) throw new Error(`unknown option ${arg}\n${USAGE}`);
        opts.files.push(path.resolve(arg));
    }
  }
  if (opts.files.length === 0) throw new Error(USAGE);
  for (const f of opts.files) if (!fs.existsSync(f)) throw new Error(`no such file: ${f}`);
  if (opts.nativeMs !== null && (opts.nativeMs.length !== opts.files.length || opts.nativeMs.some((v) => !(v > 0)))) {
    throw new Error('--native-ms wants one positive number per FILE');
  }
  if (!(opts.timeoutMs > 0)) throw new Error('--timeout-s wants a positive number');
  return opts;
}

const log = (msg) => process.stderr.write(`bench_page: ${msg}\n`);

// ----- the static server ----------------------------------------------------------------------

function startServer(dist) {
  return serveDist(dist, SUB_PATH, (miss) => log(`404 ${miss} (rebuilt meanwhile?)`));
}

// ----- Chromium's processes, from /proc ---------------------------------------------------------

function readProc(pid, name) {
  try { return fs.readFileSync(`/proc/${pid}/${name}`, 'utf8'); } catch { return null; }
}

/** VmRSS and VmHWM in bytes (0 when gone). */
function memOf(pid) {
  const status = readProc(pid, 'status') || '';
  const kb = (key) => {
    const m = status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm'));
    return m ? Number(m[1]) * 1024 : 0;
  };
  const rollup = readProc(pid, 'smaps_rollup') || '';
  const pss = rollup.match(/^Pss:\s+(\d+) kB/m);
  return { rss: kb('VmRSS'), hwm: kb('VmHWM'), pss: pss ? Number(pss[1]) * 1024 : 0 };
}

/**
 * Every live process of the Chromium started with `userDataDir`: the ones whose command line
 * names it, and all their descendants (renderers are children of the zygote, which does not).
 * @returns {{pid: number, type: string, rss: number, hwm: number}[]}
 */
function chromiumProcesses(userDataDir) {
  const parent = new Map();
  const roots = new Set();
  const cmdlines = new Map();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    const stat = readProc(pid, 'stat');
    if (stat === null) continue;
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    parent.set(pid, ppid);
    const cmd = (readProc(pid, 'cmdline') || '').split('\0');
    cmdlines.set(pid, cmd);
    if (cmd.some((a) => a === `--user-data-dir=${userDataDir}`)) roots.add(pid);
  }
  const inTree = (pid) => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; p = parent.get(p), hops += 1) if (roots.has(p)) return true;
    return false;
  };
  const out = [];
  for (const [pid, cmd] of cmdlines) {
    if (!inTree(pid)) continue;
    // Chromium rewrites its children's argv into one space-separated string (setproctitle).
    const typeArg = cmd.join(' ').match(/(?:^|\s)--type=(\S+)/);
    const type = typeArg ? typeArg[1] : (roots.has(pid) ? 'browser' : path.basename((cmd[0] || '?').split(' ')[0]));
    out.push({ pid, type, ...memOf(pid) });
  }
  return out;
}

function summarizeProcesses(procs) {
  const largest = (type) => procs.filter((p) => p.type === type).sort((a, b) => b.rss - a.rss)[0] || null;
  const renderer = largest('renderer');
  const gpu = largest('gpu-process');
  return {
    renderer,
    gpu,
    totalRss: procs.reduce((s, p) => s + p.rss, 0),
    totalHwm: procs.reduce((s, p) => s + p.hwm, 0),
    /** Proportional set size: shared pages (zygote, libraries) counted once overall. */
    totalPss: procs.reduce((s, p) => s + p.pss, 0),
    list: procs.map((p) => `${p.type}:${Math.round(p.rss / MB)}MB`),
  };
}

/** Samples the sum of RSS (and the largest renderer RSS) every SAMPLE_MS until stopped. */
function startSampler(userDataDir) {
  const peak = { totalRss: 0, rendererRss: 0, gpuRss: 0, samples: 0 };
  const sample = () => {
    const s = summarizeProcesses(chromiumProcesses(userDataDir));
    peak.totalRss = Math.max(peak.totalRss, s.totalRss);
    peak.rendererRss = Math.max(peak.rendererRss, s.renderer ? s.renderer.rss : 0);
    peak.gpuRss = Math.max(peak.gpuRss, s.gpu ? s.gpu.rss : 0);
    peak.samples += 1;
    return s;
  };
  const timer = setInterval(sample, SAMPLE_MS);
  return { peak, sample, stop() { clearInterval(timer); } };
}

// ----- one round: a fresh Chromium opening one file ------------------------------------------------

/** Installed before the page's scripts: records the worker's `frame` messages (time, frameMs). */
function instrumentWorker() {
  const frames = [];
  window.__benchFrames = frames;
  const Base = window.Worker;
  window.Worker = class extends Base {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (ev) => {
        if (ev.data && ev.data.type === 'frame') frames.push({ t: performance.now(), frameMs: ev.data.frameMs });
      });
    }
  };
}

/** The 10 zoom/pan steps, in canvas CSS px inside the plot rectangle. */
function stepPlan(plot) {
  const w = plot.right - plot.left;
  const h = plot.bottom - plot.top;
  const zoom = (fx, fy, factor) => ({ method: 'zoom_at', x: plot.left + fx * w, y: plot.top + fy * h, factor });
  const pan = (dx, dy) => ({ method: 'pan_by', dx, dy });
  const key = (k) => ({ method: 'key', key: k });
  return [
    zoom(0.3, 0.5, 1.6),
    pan(0.2 * w, 0),
    zoom(0.6, 0.7, 1.6),
    pan(-0.3 * w, 0.1 * h),
    key('d'),
    zoom(0.5, 0.5, 1.6),
    pan(0.25 * w, 0),
    key('-'),
    zoom(0.4, 0.5, 1 / 1.6),
    key('0'),
  ];
}

/**
 * Runs in the page. Each step: `ms` = performance.now() around the awaited view() (input →
 * worker → frame encoded and answered); then no-op `view('state')` calls (each waits for the
 * worker's next animation frame, which Chromium only grants once the compositor took the
 * previous frame) until no frame was drawn for `quietMs`: `settledMs` = input → the step's last
 * drawn frame (a windowed scene is rebuilt 120 ms after the camera stops), `presentedMs` =
 * input → the next frame slot after it (the step's final pixels were taken: SwiftShader's
 * rasterisation in the GPU process is included here, not in `ms` or `frameMs`).
 */
async function runSteps({ plan, quietMs, capMs }) {
  const frames = window.__benchFrames;
  const out = [];
  for (const request of plan) {
    const seen = frames.length;
    const t0 = performance.now();
    const { frameMs } = await window.memviz.view(request);
    const ms = performance.now() - t0;
    let lastFrameAt = frames.length > seen ? frames[frames.length - 1].t : t0;
    let presentedAt = null;
    for (;;) {
      const before = frames.length;
      await window.memviz.view({ method: 'state' });
      const now = performance.now();
      if (frames.length !== before) {
        lastFrameAt = frames[frames.length - 1].t;
        presentedAt = null;
      } else {
        if (presentedAt === null) presentedAt = now;
        if (now - lastFrameAt >= quietMs || now - t0 >= capMs) break;
      }
    }
    const presentedMs = presentedAt - t0;
    const mine = frames.slice(seen);
    out.push({
      method: request.method,
      args: Object.entries(request).filter(([k]) => k !== 'method').map(([, v]) => v),
      ms,
      frameMs,
      frames: mine.length,
      settledMs: Math.max(ms, lastFrameAt - t0),
      settleFrameMs: mine.length > 0 ? mine[mine.length - 1].frameMs : frameMs,
      presentedMs,
    });
  }
  return out;
}

/**
 * Runs in the page: every view and panel in turn, each awaited (its frame drawn, its rows
 * loaded), with the worker's wasm memory after it and the notice shown (a view that cannot fit
 * says why there).
 */
async function walkViews() {
  const m = window.memviz;
  const notice = () => (document.getElementById('notice').hidden ? '' : document.getElementById('notice').textContent);
  const steps = [
    ['segments', () => m.setView('segments')],
    ['pools', () => m.setView('pools')],
    ['state', async () => { await m.setView('state'); if (m.stateHistory.count > 0) await m.stateHistory.select(Math.floor(m.stateHistory.count / 2)); }],
    ['flame', () => m.setView('flame')],
    ['active', () => m.setView('active')],
    ['hover', () => m.pin(0).then(() => m.pin(-1))],
    ['search', async () => { const box = document.getElementById('search-input'); box.value = 'forward'; await m.searchBox.run(); }],
    ['lines', () => m.linesTable.load()],
    ['live at peak', () => m.liveTable.show(-2)],
    ['leaks', () => m.leaksPanel.load()],
  ];
  const out = [];
  for (const [name, run] of steps) {
    const t0 = performance.now();
    let error = null;
    try { await run(); } catch (err) { error = String(err && err.message ? err.message : err).slice(0, 300); }
    const ms = performance.now() - t0;
    const s = await m.stats();
    out.push({ name, ms, wasmMemoryBytes: s.wasmMemoryBytes, heapBytes: s.heapBytes, notice: notice().slice(0, 300), error });
  }
  return out;
}

/** The worker's JS heap through a second CDP session (auto-attach, unflattened). */
async function workerHeapBytes(cdp) {
  const attached = [];
  const onAttach = (ev) => { if (ev.targetInfo && ev.targetInfo.type === 'worker') attached.push(ev.sessionId); };
  cdp.on('Target.attachedToTarget', onAttach);
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  for (let i = 0; i < 20 && attached.length === 0; i += 1) await new Promise((r) => setTimeout(r, 50));
  cdp.off('Target.attachedToTarget', onAttach);
  if (attached.length === 0) return null;
  const sessionId = attached[0];
  const reply = new Promise((resolve) => {
    const onMessage = (ev) => {
      if (ev.sessionId !== sessionId) return;
      const msg = JSON.parse(ev.message);
      if (msg.id === 1) {
        cdp.off('Target.receivedMessageFromTarget', onMessage);
        resolve(msg.result ? msg.result.usedSize : null);
      }
    };
    cdp.on('Target.receivedMessageFromTarget', onMessage);
  });
  await cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id: 1, method: 'Runtime.getHeapUsage' }) });
  return Promise.race([reply, new Promise((r) => setTimeout(() => r(null), 5000))]);
}

function oneLine(text) {
  return String(text).replace(/\s+/g, ' ').replaceAll('"', "'").slice(0, 400);
}

async function runRound(baseUrl, file, backend, timeoutMs, views) {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memviz-bench-chromium-'));
  const result = { ok: false, error: null, problems: [] };
  let context = null;
  let sampler = null;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      args: backend === 'webgpu' ? [...CHROMIUM_ARGS, ...WEBGPU_ARGS] : CHROMIUM_ARGS,
      viewport: VIEWPORT,
      timeout: START_TIMEOUT_MS,
    });
    sampler = startSampler(userDataDir);
    const page = context.pages()[0] || await context.newPage();
    // A renderer crash (out of memory, …) rejects whatever is awaited at the time, with when.
    const crash = new Promise((resolve, reject) => page.on('crash', () => reject(new Error('the renderer process crashed (page "crash" event; out of memory?)'))));
    crash.catch(() => {});
    let phase = 'starting';
    const guard = (promise) => {
      promise.catch(() => {});
      return Promise.race([promise, crash]).catch((err) => {
        throw new Error(`${err.message.split('\n')[0]} (${phase})`);
      });
    };
    page.on('pageerror', (err) => result.problems.push(`pageerror: ${oneLine(err.message)}`));
    page.on('console', (msg) => { if (msg.type() === 'error') result.problems.push(`console: ${oneLine(msg.text())}`); });
    await page.addInitScript(instrumentWorker);
    await page.goto(`${baseUrl}?backend=${backend}`, { timeout: START_TIMEOUT_MS });
    await page.waitForFunction(() => window.memviz !== undefined && document.body.dataset.memvizBackend !== undefined,
      null, { timeout: START_TIMEOUT_MS });
    result.backendUsed = await page.evaluate(() => document.body.dataset.memvizBackend);
    result.adapter = await page.evaluate(() => document.getElementById('backend').title || '');
    if (result.backendUsed !== backend) {
      const why = await page.evaluate(() => document.getElementById('error').textContent);
      throw new Error(`asked for ${backend}, the page draws with ${result.backendUsed}: ${why}`);
    }
    const cdp = await context.newCDPSession(page);
    // The page's main-thread task time over the open (Chrome's TaskDuration, seconds).
    await cdp.send('Performance.enable');
    const taskSeconds = async () => {
      const { metrics } = await cdp.send('Performance.getMetrics');
      const m = metrics.find((x) => x.name === 'TaskDuration');
      return m ? m.value : null;
    };
    const task0 = await taskSeconds();

    // Drop → first frame.
    await page.evaluate(() => { window.memviz.lastOpen = null; });
    const wall0 = performance.now();
    const since = () => `${((performance.now() - wall0) / 1000).toFixed(1)} s after the drop`;
    phase = 'while opening';
    await guard(page.setInputFiles('#file-input', file, { timeout: timeoutMs }));
    await guard(page.waitForFunction(() => {
      const s = document.body.dataset.memvizState;
      return s === 'error' || (s === 'ready' && window.memviz.lastOpen !== null);
    }, null, { timeout: timeoutMs })).catch((err) => { throw new Error(`${err.message}, ${since()}`); });
    result.wallMs = performance.now() - wall0;
    const state = await page.evaluate(() => document.body.dataset.memvizState);
    if (state !== 'ready') {
      const why = await page.evaluate(() => document.getElementById('error').textContent);
      throw new Error(`the page says ${state} ${(result.wallMs / 1000).toFixed(1)} s after the drop: ${why}`);
    }
    result.lastOpen = await page.evaluate(() => window.memviz.lastOpen);
    const task1 = await taskSeconds();
    result.mainThreadMs = task0 !== null && task1 !== null ? (task1 - task0) * 1000 : null;
    const st = await page.evaluate(() => window.memviz.state());
    result.viewer = {
      elements: st.elements,
      instances: st.instances,
      batches: st.batches,
      scene: st.scene,
      layoutMode: st.layout_mode,
      fellBackToCompact: st.fell_back_to_compact,
      sceneBuildMs: st.scene_build_ms,
      steps: st.steps,
      plot: st.geometry.plot,
    };

    // Let the first frames settle (windowed scene rebuilt, rasterised), then the zoom/pan steps.
    phase = 'after the first frame';
    const [settle] = await guard(page.evaluate(runSteps, { plan: [['state']], quietMs: QUIET_MS, capMs: SETTLE_CAP_MS }));
    result.openSettledMs = settle.settledMs;
    result.openPresentedMs = settle.presentedMs;
    phase = 'during the zoom/pan steps';
    result.steps = await guard(page.evaluate(runSteps, { plan: stepPlan(st.geometry.plot), quietMs: QUIET_MS, capMs: SETTLE_CAP_MS }));

    // Memory.
    phase = 'reading memory';
    const stats = await guard(page.evaluate(() => window.memviz.stats()));
    if (views) {
      phase = 'walking the views';
      result.views = await guard(page.evaluate(walkViews));
    }
    const heap = await guard(cdp.send('Runtime.getHeapUsage'));
    result.memory = {
      wasmMemoryBytes: stats.wasmMemoryBytes,
      jsHeapBytes: stats.jsHeapBytes,
      cdpPageHeapBytes: heap.usedSize,
      workerHeapBytes: await workerHeapBytes(cdp).catch(() => null),
    };
    const procs = summarizeProcesses(chromiumProcesses(userDataDir));
    result.processes = procs;
    result.ok = true;
  } catch (err) {
    result.error = oneLine(err instanceof Error ? err.message.split('\n')[0] : err);
  } finally {
    if (sampler !== null) {
      if (!result.processes) {
        try { result.processes = summarizeProcesses(chromiumProcesses(userDataDir)); } catch { /* gone */ }
      }
      sampler.stop();
      result.peak = { ...sampler.peak };
    }
    if (context !== null) await context.close().catch(() => {});
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
  return result;
}

// ----- summaries ------------------------------------------------------------------------------

function median(values) {
  const v = values.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

function max(values) {
  const v = values.filter((x) => typeof x === 'number' && Number.isFinite(x));
  return v.length === 0 ? null : Math.max(...v);
}

const r1 = (x) => (x === null || x === undefined ? null : Math.round(x * 10) / 10);
const mb = (bytes) => (bytes === null || bytes === undefined ? null : r1(bytes / MB));

function nativeParseMs(file) {
  if (!fs.existsSync(CLI)) return null;
  const out = spawnSync(CLI, ['bench', file], { encoding: 'utf8' });
  if (out.status !== 0) {
    log(`native baseline failed on ${file}: ${out.stderr}`);
    return null;
  }
  const line = out.stdout.split('\n').find((l) => l.trim().startsWith('{'));
  return line ? JSON.parse(line).secs * 1000 : null;
}

/**
 * Where an open's time to the first frame went, in order (ms; the parts add up to
 * firstFrameMs): `read` waiting for the file's bytes (the worker's read loop less its parsing),
 * `parse` the pickle VM and model builder on the pushed chunks, `model` finishing the model,
 * then each step of building the first view as the viewer's phase hook reports it (timeline,
 * layout, colors, step_time, column_stack, first_scene, …), `view` the rest of the build,
 * `draw` the first draw's CPU time in the worker (scene upload and draw calls), `present` from
 * there to the page's first frame (the message to the page, the GPU process's raster, and the
 * page's start: its post to the worker and canvas set-up, which the worker's clock does not
 * see). `mainThreadMs` is the page's main-thread task time over the open (not on the path: the
 * worker parses and draws).
 */
function breakdown(open) {
  if (!open || open.pushMs === undefined) return null;
  const parts = [['read', open.parseMs - open.pushMs], ['parse', open.pushMs], ['model', open.modelMs - open.parseMs]];
  let at = open.modelMs;
  for (const [name, , t] of open.memory && open.memory.steps ? open.memory.steps : []) {
    if (typeof t !== 'number' || t > open.finishMs) continue;
    parts.push([name, t - at]);
    at = t;
  }
  parts.push(['view', open.finishMs - at], ['draw', open.firstDrawMs - open.finishMs], ['present', open.firstFrameMs - open.firstDrawMs]);
  // One name per part (a step reported twice adds up).
  const out = {};
  for (const [name, ms] of parts) out[name] = r1((out[name] || 0) + ms);
  return out;
}

function summarize(file, backend, nativeMs, rounds) {
  const good = rounds.filter((r) => r.ok);
  const steps = good.flatMap((r) => r.steps);
  const last = good.length > 0 ? good[good.length - 1] : null;
  const firstFrame = median(good.map((r) => r.lastOpen.firstFrameMs));
  // The breakdown of an open comes from one round (the median one, the faster of the middle two
  // for an even count), so that its parts add up.
  const byFirstFrame = [...good].sort((a, b) => a.lastOpen.firstFrameMs - b.lastOpen.firstFrameMs);
  const mid = byFirstFrame.length > 0 ? byFirstFrame[Math.floor((byFirstFrame.length - 1) / 2)] : null;
  const peakOf = (proc, sampled) => max(rounds.flatMap((r) => [r.processes && r.processes[proc] ? r.processes[proc].hwm : null, r.peak ? r.peak[sampled] : null]));
  const allProcs = rounds.map((r) => r.processes).filter(Boolean);
  const errors = rounds.filter((r) => !r.ok).map((r) => r.error);
  return {
    file: path.basename(file),
    path: file,
    fileMB: r1(fs.statSync(file).size / MB),
    backend,
    backendUsed: rounds.map((r) => r.backendUsed).find(Boolean) || null,
    adapter: rounds.map((r) => r.adapter).find(Boolean) || null,
    rounds: rounds.length,
    okRounds: good.length,
    error: errors.length > 0 ? errors.join(' | ') : null,
    firstFrameMs: r1(firstFrame),
    firstFrameMsRounds: good.map((r) => r1(r.lastOpen.firstFrameMs)),
    wallMsRounds: good.map((r) => r1(r.wallMs)),
    medianRoundFirstFrameMs: mid ? r1(mid.lastOpen.firstFrameMs) : null,
    wallMs: mid ? r1(mid.wallMs) : null,
    parseMs: mid ? r1(mid.lastOpen.parseMs) : null,
    totalMs: mid ? r1(mid.lastOpen.totalMs) : null,
    drawMs: mid ? r1(mid.lastOpen.drawMs) : null,
    /** The median round's time to the first frame, part by part (`breakdown`). */
    breakdown: mid ? breakdown(mid.lastOpen) : null,
    mainThreadMs: mid ? r1(mid.mainThreadMs) : null,
    openSettledMs: mid ? r1(mid.openSettledMs) : null,
    openPresentedMs: mid ? r1(mid.openPresentedMs) : null,
    nativeMs: r1(nativeMs),
    ratio: firstFrame !== null && nativeMs ? Math.round((firstFrame / nativeMs) * 100) / 100 : null,
    stepMedianMs: r1(median(steps.map((s) => s.ms))),
    stepMaxMs: r1(max(steps.map((s) => s.ms))),
    workerFrameMedianMs: r1(median(steps.map((s) => s.frameMs))),
    workerFrameMaxMs: r1(max(steps.map((s) => s.frameMs))),
    settledMedianMs: r1(median(steps.map((s) => s.settledMs))),
    settledMaxMs: r1(max(steps.map((s) => s.settledMs))),
    presentedMedianMs: r1(median(steps.map((s) => s.presentedMs))),
    presentedMaxMs: r1(max(steps.map((s) => s.presentedMs))),
    stepsLastRound: last ? last.steps.map((s) => `${s.method}(${s.args.map((a) => (typeof a === 'number' ? r1(a) : a)).join(',')}) ${r1(s.ms)}/${r1(s.settledMs)}/${r1(s.presentedMs)} ms frames ${s.frames} frameMs ${r1(s.frameMs)}/${r1(s.settleFrameMs)}`) : [],
    wasmMB: mb(max(good.map((r) => r.memory.wasmMemoryBytes))),
    /** Wasm memory after opening (and the zoom/pan steps) over the file's bytes. */
    wasmPerFile: last ? Math.round(last.memory.wasmMemoryBytes / fs.statSync(file).size * 1000) / 1000 : null,
    /** With --views (the last round): wasm memory after each view and panel, over the file. */
    views: last && last.views ? last.views.map((v) => ({
      name: v.name,
      ms: r1(v.ms),
      wasmMB: mb(v.wasmMemoryBytes),
      wasmPerFile: Math.round(v.wasmMemoryBytes / fs.statSync(file).size * 1000) / 1000,
      heapMB: mb(v.heapBytes),
      notice: v.notice || null,
      error: v.error,
    })) : null,
    jsHeapMB: mb(max(good.map((r) => r.memory.jsHeapBytes))),
    workerJsHeapMB: mb(max(good.map((r) => r.memory.workerHeapBytes))),
    rendererRssMB: mb(max(allProcs.map((p) => (p.renderer ? p.renderer.rss : null)))),
    // Peak: VmHWM, or the largest RSS sampled during the round when the process died before.
    rendererHwmMB: mb(peakOf('renderer', 'rendererRss')),
    rendererPeakSampledMB: mb(max(rounds.map((r) => (r.peak ? r.peak.rendererRss : null)))),
    gpuRssMB: mb(max(allProcs.map((p) => (p.gpu ? p.gpu.rss : null)))),
    gpuHwmMB: mb(peakOf('gpu', 'gpuRss')),
    totalRssMB: mb(max(allProcs.map((p) => p.totalRss))),
    totalPssMB: mb(max(allProcs.map((p) => p.totalPss))),
    totalPeakSampledMB: mb(max(rounds.map((r) => (r.peak ? r.peak.totalRss : null)))),
    processes: allProcs.length > 0 ? allProcs[allProcs.length - 1].list : [],
    elements: last ? last.viewer.elements : null,
    instances: last ? last.viewer.instances : null,
    scene: last ? last.viewer.scene : null,
    layoutMode: last ? last.viewer.layoutMode : null,
    fellBackToCompact: last ? last.viewer.fellBackToCompact : null,
    sceneBuildMs: last ? r1(last.viewer.sceneBuildMs) : null,
    problems: [...new Set(rounds.flatMap((r) => r.problems))].slice(0, 5),
  };
}

const cell = (v) => (v === null || v === undefined ? '–' : String(v));

function table(rows) {
  const lines = [
    '| file | MB | backend | drop→first frame ms (median) | native parse ms | ratio | zoom/pan step ms median / max | settled / presented ms median | worker frame ms median / max | wasm memory MB | JS heap MB (page / worker) | renderer RSS MB (peak VmHWM) | GPU process RSS MB (peak VmHWM) | all processes RSS MB (peak sampled) [PSS] |',
    '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const ff = r.error && r.okRounds === 0 ? `FAILED: ${r.error}` : `${cell(r.firstFrameMs)}${r.error ? ` (some rounds FAILED: ${r.error})` : ''}`;
    lines.push(`| ${r.file} | ${r.fileMB} | ${r.backend} | ${ff} | ${cell(r.nativeMs)} | ${cell(r.ratio)} | ${cell(r.stepMedianMs)} / ${cell(r.stepMaxMs)} | ${cell(r.settledMedianMs)} / ${cell(r.presentedMedianMs)} | ${cell(r.workerFrameMedianMs)} / ${cell(r.workerFrameMaxMs)} | ${cell(r.wasmMB)} | ${cell(r.jsHeapMB)} / ${cell(r.workerJsHeapMB)} | ${cell(r.rendererRssMB)} (${cell(r.rendererHwmMB)}) | ${cell(r.gpuRssMB)} (${cell(r.gpuHwmMB)}) | ${cell(r.totalRssMB)} (${cell(r.totalPeakSampledMB)}) [${cell(r.totalPssMB)}] |`);
  }
  lines.push('', 'Where the time of an open goes (ms, the median round; page clock except node wall):', '',
    '| file | backend | read + parse (parseMs) | + finish, layout, first draw (totalMs) | first frame at final size (firstFrameMs) | node wall: setInputFiles → ready | then settled (windowed rebuild, raster) | allocations | instances drawn | scene |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const r of rows) {
    lines.push(`| ${r.file} | ${r.backend} | ${cell(r.parseMs)} | ${cell(r.totalMs)} | ${cell(r.medianRoundFirstFrameMs)} | ${cell(r.wallMs)} | ${cell(r.openSettledMs)} | ${cell(r.elements)} | ${cell(r.instances)} | ${cell(r.scene)} |`);
  }
  const parts = [...new Set(rows.flatMap((r) => Object.keys(r.breakdown || {})))];
  if (parts.length > 0) {
    lines.push('', 'The first frame, part by part (ms, the median round; the parts add up to the first frame):', '',
      `| file | backend | first frame | ${parts.join(' | ')} | page main thread |`,
      `|---|---|---:|${parts.map(() => '---:|').join('')}---:|`);
    for (const r of rows.filter((x) => x.breakdown)) {
      lines.push(`| ${r.file} | ${r.backend} | ${cell(r.medianRoundFirstFrameMs)} | ${parts.map((p) => cell(r.breakdown[p])).join(' | ')} | ${cell(r.mainThreadMs)} |`);
    }
  }
  for (const r of rows.filter((x) => x.views)) {
    lines.push('', `Views of ${r.file} (${r.fileMB} MB, ${r.backend}; after opening: wasm ${cell(r.wasmPerFile)}× the file):`, '',
      '| view / panel | ms | wasm memory MB | × file | Rust heap MB | notice / error |', '|---|---:|---:|---:|---:|---|');
    for (const v of r.views) {
      lines.push(`| ${v.name} | ${cell(v.ms)} | ${cell(v.wasmMB)} | ${cell(v.wasmPerFile)} | ${cell(v.heapMB)} | ${cell(v.error || v.notice)} |`);
    }
  }
  return lines.join('\n');
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error(err.message);
    process.exit(2);
  }
  if (!fs.existsSync(path.join(opts.dist, 'index.html'))) {
    console.error(`${opts.dist}/index.html is missing: build the page first (trunk --config trunk.toml build --release --offline)`);
    process.exit(2);
  }
  const server = await startServer(opts.dist);
  const baseUrl = `http://127.0.0.1:${server.address().port}${SUB_PATH}`;
  const rows = [];
  try {
    for (const [i, file] of opts.files.entries()) {
      const nativeMs = opts.nativeMs ? opts.nativeMs[i] : nativeParseMs(file);
      for (const backend of opts.backends) {
        const rounds = [];
        for (let round = 1; round <= opts.rounds; round += 1) {
          log(`${path.basename(file)} ${backend} round ${round}/${opts.rounds}: fresh Chromium`);
          const r = await runRound(baseUrl, file, backend, opts.timeoutMs, opts.views);
          log(r.ok
            ? `  first frame ${r1(r.lastOpen.firstFrameMs)} ms (parse ${r1(r.lastOpen.parseMs)}, total ${r1(r.lastOpen.totalMs)}, wall ${r1(r.wallMs)}), steps median ${r1(median(r.steps.map((s) => s.ms)))} ms`
            : `  FAILED: ${r.error}`);
          if (r.ok && r.lastOpen.memory) {
            // [wasm memory, Rust heap, Rust heap high-water] after each phase of the open.
            const { steps, ...phases } = r.lastOpen.memory;
            const m = [...Object.entries(phases), ...(steps || [])]
              .map(([phase, [wasm, now, peak]]) => `${phase} ${mb(wasm)}/${mb(now)}/${mb(peak)}`);
            log(`  memory MB (wasm / heap / heap high-water) after: ${m.join(', ')}`);
          }
          rounds.push(r);
        }
        const row = summarize(file, backend, nativeMs, rounds);
        rows.push(row);
        console.log(JSON.stringify(row));
      }
    }
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  console.log(`\n${table(rows)}\n`);
  console.log(`MB = 10^6 bytes. Chromium ${CHROMIUM} headless, viewport ${VIEWPORT.width}×${VIEWPORT.height}, a fresh browser per round; `
    + 'drop→first frame: memviz.lastOpen.firstFrameMs (median of rounds); ratio = that / native `memviz bench` parse+model; '
    + 'steps: 10 zoom/pan calls per round (input → worker → frame drawn), settled: until the last frame the step caused (windowed scenes rebuild 120 ms after the camera stops), '
    + 'presented: until the frame slot after that one (includes the GPU process rasterising it; worker frame ms is CPU only); '
    + 'memory after the steps, max over rounds; RSS from /proc (renderer = largest --type=renderer, it hosts the page and its worker).');
  if (rows.some((r) => r.error)) process.exit(1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
