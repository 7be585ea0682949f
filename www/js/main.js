// main.js: boots the page and owns its state (`document.body.dataset.memvizState`: empty,
// loading, ready or error). Streams a source through bridge.js and shows Rust's strings as
// text. See www/README.md for the contract the tests rely on.

import { SnapshotLoader, wasmReady } from './bridge.js';
import { openSource, wireFileInputs } from './file_drop.js';

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const els = {
  input: /** @type {HTMLInputElement} */ ($('file-input')),
  demo: $('demo-button'),
  overlay: $('drop-overlay'),
  progress: $('progress'),
  alert: $('error'),
  table: $('summary-table'),
  json: $('summary-json'),
  fileName: $('file-name'),
};

const WHAT_TO_DO = 'Check that it is a snapshot saved by torch.cuda.memory._dump_snapshot() '
  + '(a pickle, optionally gzip-compressed), then open it again or choose another file.';

/** Bumped by every open(); a load that is no longer current stops at its next chunk. */
let generation = 0;

function setState(state) {
  document.body.dataset.memvizState = state;
}

function showError(message) {
  els.alert.textContent = message;
  els.alert.hidden = false;
  els.progress.textContent = '';
  setState('error');
}

function progressText(name, bytesRead, total) {
  const read = bytesRead.toLocaleString('en-US');
  if (total === null || total <= 0) return `Reading ${name}: ${read} bytes`;
  const percent = Math.min(100, Math.floor((bytesRead * 100) / total));
  return `Reading ${name}: ${read} of ${total.toLocaleString('en-US')} bytes (${percent}%)`;
}

/**
 * Opens a snapshot. Resolves (never rejects) when done, with
 * `{state: 'ready', json}`, `{state: 'error', message}` or `{state: 'cancelled'}`
 * (another open() started meanwhile).
 * @param {File | Blob | ArrayBuffer | ArrayBufferView | string} src
 */
async function open(src) {
  const mine = ++generation;
  setState('loading');
  els.alert.hidden = true;
  els.alert.textContent = '';
  els.table.textContent = '';
  els.json.textContent = '';
  els.fileName.textContent = '';
  els.progress.textContent = 'Starting…';

  let name = typeof src === 'string' ? src : (src instanceof File ? src.name : 'the data');
  let loader = null;
  let source = null;
  try {
    loader = await SnapshotLoader.create();
    source = await openSource(src);
    name = source.name;
    if (source.total !== null) loader.reserve(source.total);
    els.progress.textContent = progressText(name, 0, source.total);
    for await (const chunk of source.chunks) {
      if (mine !== generation) {
        source.cancel();
        return { state: 'cancelled' };
      }
      loader.push(chunk);
      els.progress.textContent = progressText(name, loader.bytesRead(), source.total);
    }
    if (mine !== generation) return { state: 'cancelled' };
    const { json, table } = loader.finish();
    els.fileName.textContent = name;
    els.table.textContent = table;
    els.json.textContent = json;
    els.progress.textContent = `Read ${name}: ${loader.bytesRead().toLocaleString('en-US')} bytes`;
    setState('ready');
    return { state: 'ready', json };
  } catch (err) {
    if (source !== null) source.cancel();
    if (mine !== generation) return { state: 'cancelled' };
    const detail = err instanceof Error ? err.message : String(err);
    const message = SnapshotLoader.hasPanicked()
      ? `memviz hit an internal error (a bug) while reading "${name}": ${detail}. Reload the page and try again; `
        + 'if it happens again, please report it with the file.'
      : `Could not open "${name}": ${detail}. ${WHAT_TO_DO}`;
    showError(message);
    return { state: 'error', message };
  } finally {
    if (loader !== null) loader.dispose();
  }
}

window.memviz = { open };

wireFileInputs(els.input, els.overlay, (file) => { open(file); });
els.demo.addEventListener('click', () => { open('assets/demo.pickle'); });
setState('empty');
wasmReady().catch((err) => showError(`${err.message}.`));
