// The wasm build (target/wasm-node, `wasm-bindgen --target nodejs`) against the native CLI:
// for the demo snapshot and every file in ../shared/corpus/real, fed in 64 KiB chunks, the
// summary JSON must equal `target/release/memviz summary FILE --json`.
// Run by `cargo xtask test` (which builds both first), or: node --test tests/web/wasm_node.test.mjs

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const WASM_JS = path.join(ROOT, 'target/wasm-node/memviz_web.js');
// `cargo xtask test` runs its tests' own build (MEMVIZ_CLI=target/ci/memviz); by hand, the
// release build.
const CLI = process.env.MEMVIZ_CLI
  ? path.resolve(process.env.MEMVIZ_CLI)
  : path.join(ROOT, 'target/release/memviz');
const CORPUS = path.resolve(ROOT, '../shared/corpus/real');
const CHUNK_BYTES = 64 * 1024;

for (const [what, file] of [['the node wasm build', WASM_JS], ['the native CLI', CLI]]) {
  if (!fs.existsSync(file)) {
    throw new Error(`${path.relative(ROOT, file)} is missing: build ${what} first (cargo xtask test does)`);
  }
}
const { WebHandle } = createRequire(import.meta.url)(WASM_JS);

/** The demo snapshot: trunk's hook writes www/assets/demo.pickle; otherwise make one in target/. */
function demoFile() {
  const inWww = path.join(ROOT, 'www/assets/demo.pickle');
  if (fs.existsSync(inWww)) return inWww;
  const made = path.join(ROOT, 'target/web-test/demo.pickle');
  if (!fs.existsSync(made)) {
    fs.mkdirSync(path.dirname(made), { recursive: true });
    execFileSync('python3', ['tests/fixtures/generate.py', 'demo', made], { cwd: ROOT, stdio: 'inherit' });
  }
  return made;
}

/** Feeds `bytes` to a fresh WebHandle in chunks; returns {json, table, bytesRead} or {error}. */
function loadWasm(bytes, chunkBytes = CHUNK_BYTES) {
  const handle = new WebHandle();
  try {
    for (let at = 0; at < bytes.length; at += chunkBytes) {
      handle.push(bytes.subarray(at, at + chunkBytes));
    }
    const bytesRead = handle.bytes_read();
    const json = handle.finish();
    return { json, table: handle.summary_table(), bytesRead };
  } catch (err) {
    assert.ok(err instanceof Error, `wasm threw a non-Error: ${err}`);
    return { error: err.message };
  } finally {
    handle.free();
  }
}

/** `memviz summary FILE --json`: {json} or {error} (non-zero exit). */
function loadNative(file) {
  const out = spawnSync(CLI, ['summary', file, '--json'], { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (out.status !== 0) return { error: (out.stderr || '').trim() || `exit ${out.status}` };
  return { json: out.stdout };
}

function assertSameAsNative(file) {
  const bytes = fs.readFileSync(file);
  const wasm = loadWasm(bytes);
  const native = loadNative(file);
  assert.equal(WebHandle.has_panicked(), false, 'the wasm module panicked');
  if (native.error !== undefined) {
    assert.ok(wasm.error !== undefined, `native failed (${native.error}) but wasm succeeded`);
    return;
  }
  assert.equal(wasm.error, undefined, `wasm failed where native succeeded: ${wasm.error}`);
  assert.deepEqual(JSON.parse(wasm.json), JSON.parse(native.json));
  assert.equal(wasm.bytesRead, bytes.length, 'bytes_read after the last push');
  assert.ok(wasm.table.length > 0, 'summary_table is empty');
}

test('demo snapshot: wasm summary equals native', () => {
  assertSameAsNative(demoFile());
});

test('demo snapshot: chunk size does not change the result; gzip gives the same summary', () => {
  const bytes = fs.readFileSync(demoFile());
  const whole = loadWasm(bytes, bytes.length || 1);
  assert.equal(whole.error, undefined, whole.error);
  for (const chunk of [1 << 20, 7777, 1001]) {
    assert.equal(loadWasm(bytes, chunk).json, whole.json, `chunks of ${chunk} bytes`);
  }
  const gz = loadWasm(zlib.gzipSync(bytes), CHUNK_BYTES);
  assert.equal(gz.error, undefined, gz.error);
  assert.deepEqual(JSON.parse(gz.json), JSON.parse(whole.json));
});

test('garbage, empty input and a file cut before anything whole throw an Error with a message; a file cut mid-trace opens with a warning; the module stays usable', () => {
  const garbage = loadWasm(new TextEncoder().encode('this is not a pickle\n'.repeat(100)));
  assert.ok(garbage.error && garbage.error.length > 0, 'garbage must be rejected with a message');
  const empty = loadWasm(new Uint8Array(0));
  assert.ok(empty.error && empty.error.length > 0, 'empty input must be rejected with a message');
  const bytes = fs.readFileSync(demoFile());
  const cutEarly = loadWasm(bytes.subarray(0, 300));
  assert.ok(cutEarly.error && /truncated/.test(cutEarly.error), 'a file cut before its first whole record must be rejected');
  const half = loadWasm(bytes.subarray(0, Math.floor(bytes.length / 2)));
  assert.equal(half.error, undefined, 'a file cut mid-trace opens what was read before the cut');
  assert.match(JSON.parse(half.json).warnings[0], /^truncated file:/);
  assert.equal(WebHandle.has_panicked(), false);
  assert.equal(loadWasm(bytes).error, undefined, 'a good file after bad ones');
});

test('real corpus (../shared/corpus/real): wasm summary equals native', async (t) => {
  if (!fs.existsSync(CORPUS)) {
    t.skip(`${CORPUS} is absent: no real snapshots to compare`);
    return;
  }
  const files = fs.readdirSync(CORPUS)
    .filter((name) => !name.endsWith('.md') && fs.statSync(path.join(CORPUS, name)).isFile())
    .sort();
  assert.ok(files.length > 0, `no snapshot files in ${CORPUS}`);
  for (const name of files) {
    await t.test(name, () => assertSameAsNative(path.join(CORPUS, name)));
  }
});

// ----- the other containers (issue 28): JSON, gzip'd JSON and torch.save's zip -----------------

/** Twins of corpus pickles larger than this are deleted once read (the JSON runs to 114 MB). */
const TWIN_KEEP_PICKLE_BYTES = 400_000;
const TWINS = path.join(ROOT, 'target/web-test/twins');
const GENERATE = path.join(ROOT, 'tests/fixtures/generate.py');

/** `generate.py twins SRC` into target/web-test/twins (kept while newer than generate.py and formats.py): {json, 'json.gz', pt}. */
function twinsOf(src) {
  const out = twinsOf.paths(src);
  const writers = [GENERATE, path.join(ROOT, 'tests/fixtures/formats.py')].map((f) => fs.statSync(f).mtimeMs);
  const fresh = (f) => fs.existsSync(f) && writers.every((w) => fs.statSync(f).mtimeMs >= w);
  if (!Object.values(out).every(fresh)) {
    fs.mkdirSync(TWINS, { recursive: true });
    execFileSync('python3', [GENERATE, 'twins', src, TWINS], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return out;
}

/** Where `generate.py twins SRC` writes: {json, 'json.gz', pt}. */
twinsOf.paths = (src) => {
  const stem = path.basename(src).replace(/\.gz$/, '').replace(/\.[^.]+$/, '');
  return Object.fromEntries(['json', 'json.gz', 'pt'].map((e) => [e, path.join(TWINS, `${stem}.${e}`)]));
};

/** Each twin of `src`, in wasm, gives the summary the native CLI gives for `src` itself. */
function assertTwinsSameAsNative(src) {
  const native = loadNative(src);
  assert.equal(native.error, undefined, `native failed on ${src}: ${native.error}`);
  for (const [ext, twin] of Object.entries(twinsOf(src))) {
    const bytes = fs.readFileSync(twin);
    const wasm = loadWasm(bytes);
    assert.equal(WebHandle.has_panicked(), false, `${ext}: the wasm module panicked`);
    assert.equal(wasm.error, undefined, `${ext}: wasm failed: ${wasm.error}`);
    assert.deepEqual(JSON.parse(wasm.json), JSON.parse(native.json), `${ext} twin of ${path.basename(src)}`);
    assert.equal(wasm.bytesRead, bytes.length, `${ext}: bytes_read after the last push`);
  }
}

test('demo snapshot: its JSON, JSON.gz and .pt twins give the pickle\'s summary in wasm', () => {
  assertTwinsSameAsNative(demoFile());
});

test('every real corpus file: its JSON, JSON.gz and .pt twins give the pickle\'s summary in wasm', async (t) => {
  if (!fs.existsSync(CORPUS)) {
    t.skip(`${CORPUS} is absent: no real snapshots to compare`);
    return;
  }
  const files = fs.readdirSync(CORPUS)
    .filter((name) => !name.endsWith('.md') && fs.statSync(path.join(CORPUS, name)).isFile())
    .sort();
  assert.ok(files.length >= 10, `corpus files with twins: ${files.length}`);
  for (const name of files) {
    const src = path.join(CORPUS, name);
    await t.test(name, () => {
      assertTwinsSameAsNative(src);
      if (fs.statSync(src).size > TWIN_KEEP_PICKLE_BYTES) {
        for (const twin of Object.values(twinsOf.paths(src))) fs.rmSync(twin, { force: true });
      }
    });
  }
});
