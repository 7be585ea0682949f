// Throughput of the wasm build in node: `node tests/web/bench_wasm.mjs FILE`.
// Pushes FILE (already in memory) in 1 MiB chunks into a fresh WebHandle in a fresh process (the
// cold case a user meets: V8's baseline tier, memory growing), then finish() (which also builds
// the summary). FILE is any snapshot the loader reads: a pickle, a snapshot saved as JSON
// (`cargo xtask bench` measures the JSON twin of its smallest generated snapshot too), gzip of
// either. Prints one JSON line: {"file","format","bytes","secs","mb_per_s"} (MB = 10^6 bytes;
// format: "pickle", "json" or "gzip", from the first bytes).
// Needs target/wasm-node (cargo xtask bench builds it).

import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const file = process.argv[2];
if (!file) {
  console.error('usage: node tests/web/bench_wasm.mjs FILE');
  process.exit(2);
}
const { WebHandle } = createRequire(import.meta.url)(path.join(ROOT, 'target/wasm-node/memviz_web.js'));

const CHUNK_BYTES = 1 << 20;
const bytes = fs.readFileSync(file);
const handle = new WebHandle();
const t0 = process.hrtime.bigint();
try {
  handle.reserve(bytes.length); // as the page does when it knows the file size
  for (let at = 0; at < bytes.length; at += CHUNK_BYTES) {
    handle.push(bytes.subarray(at, at + CHUNK_BYTES));
  }
  handle.finish();
} catch (err) {
  console.error(`bench_wasm: ${file}: ${err.message}`);
  process.exit(1);
} finally {
  handle.free();
}
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
const first = bytes.subarray(0, 64).toString('latin1').replace(/^\xef\xbb\xbf/, '').trimStart()[0];
const format = bytes[0] === 0x1f && bytes[1] === 0x8b ? 'gzip' : first === '{' || first === '[' ? 'json' : 'pickle';
console.log(JSON.stringify({ file, format, bytes: bytes.length, secs, mb_per_s: bytes.length / 1e6 / secs }));
