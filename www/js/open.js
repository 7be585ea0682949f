// open.js: opening files (open() and openAll(), every way in goes through them), the progress
// and the cancel button (a worker that does not answer a cancel is replaced: session.js).

import { els, page, setState } from './page_state.js';
import { showError, clearError, sentence } from './status.js';
import { startViewer, restartViewer, resize, sendTheme } from './session.js';
import { plotHint } from './parts.js';
import { showTooltip } from './input.js';
import { links } from './page_panels.js';
import { showPanel } from './controls.js';

/** @typedef {import('./page_state.js').OpenSource} OpenSource */
/** @typedef {import('./page_state.js').OpenResult} OpenResult */

const WHAT_TO_DO = 'Check that it is a snapshot saved by torch.cuda.memory._dump_snapshot() '
  + '(a pickle, JSON or torch.save file, optionally gzip-compressed), then open it again or choose another file.';

/**
 * Opens a snapshot. Resolves (never rejects) once the first frame is drawn, with
 * `{state: 'ready', json, timings}`, `{state: 'error', message}` or `{state: 'cancelled'}`.
 * @param {OpenSource} src
 * @param {{keepError?: boolean}} [options]  keepError: the alert stays (a restart's reopening)
 * @returns {Promise<OpenResult>}
 */
export async function open(src, { keepError = false } = {}) {
  if (page.restarting !== null && !keepError) await page.restarting;
  if (page.current !== null && page.client !== null) page.client.cancel(page.current.id);
  const mine = { id: -1 };
  const t0 = performance.now();
  page.current = mine;
  setState('loading');
  if (!keepError) clearError();
  let name = typeof src === 'string' ? src : (src instanceof File ? src.name : 'the data');
  els.loading.hidden = false;
  els.bar.removeAttribute('value');
  els.progress.textContent = 'Starting…';
  try {
    const c = await startViewer();
    if (page.current !== mine) return { state: 'cancelled' };
    // Lay the plot out before the file goes to the worker, so its first frame has the right size.
    const firstFile = page.filesOpen === 0;
    els.viewer.hidden = false;
    if (firstFile) document.body.dataset.layout = 'app';
    resize();
    const { id, done } = c.open(src);
    mine.id = id;
    const msg = await done;
    if (page.current === mine) {
      page.current = null;
      els.loading.hidden = true;
    }
    if (msg.type === 'cancelled') {
      if (document.body.dataset.memvizState === 'loading') setState(page.filesOpen > 0 ? 'ready' : 'empty');
      return { state: 'cancelled' };
    }
    if (msg.name) name = msg.name;
    if (msg.type !== 'opened' && firstFile && page.filesOpen === 0) {
      els.viewer.hidden = true;
      delete document.body.dataset.layout;
    }
    if (msg.type === 'failed' && msg.crashed) {
      // The worker died: onCrash says so and restarts it.
      return { state: 'error', message: msg.message, crashed: true };
    }
    if (msg.type === 'failed') {
      const message = msg.panicked
        ? `memviz hit an internal error (a bug) while reading "${name}": ${sentence(msg.message)} Reload the page and `
          + 'try again; if it happens again, please report it with the file.'
        // Too big for the page, or a download that failed: the sentence says what to do.
        : msg.kind === 'too_big' || msg.kind === 'download'
          ? `Could not open "${name}": ${sentence(msg.message)}`
          : `Could not open "${name}": ${sentence(msg.message)} ${WHAT_TO_DO}`;
      if (page.current === null) showError(message);
      return { state: 'error', message };
    }
    page.filesOpen += 1;
    page.openedSources.push({ src, name: msg.name });
    plotHint.show();
    // The viewer keeps its colours from its first file on (before one, nothing keeps them).
    if (firstFile) sendTheme(c);
    showPanel(msg.panel, msg.table, msg.summary);
    showTooltip(null);
    // The worker drew the first frame before answering.
    // firstFrameMs: from this call to the worker's word that the first frame was drawn (the
    // summary and the legend come after it); readyMs: to everything shown.
    const now = performance.now();
    const timings = {
      ...msg.timings, firstFrameMs: (msg.drawnAt || now) - t0, readyMs: now - t0, bytes: msg.bytes,
    };
    window.memviz.lastOpen = { name, ...timings };
    if (page.pendingHash !== '') {
      const hash = page.pendingHash;
      page.pendingHash = '';
      await links.restore(hash);
    }
    if (page.current === null) setState('ready');
    links.schedule();
    return { state: 'ready', json: msg.summary, timings, notice: msg.notice || '' };
  } catch (err) {
    const message = `Could not open "${name}": ${err instanceof Error ? err.message : String(err)}`;
    if (page.current === mine) {
      page.current = null;
      els.loading.hidden = true;
    }
    showError(message);
    return { state: 'error', message };
  }
}

/**
 * Opens files one after another (a chooser's or a drop's several files, or the ?url= list: each
 * opens, the last one shown); stops at a cancel. Resolves with their results.
 * @param {(File | string)[]} files
 */
export async function openAll(files) {
  /** @type {OpenResult[]} */
  const results = [];
  for (const f of files) {
    const r = await open(f);
    results.push(r);
    if (r.state === 'cancelled') break;
  }
  return results;
}

/** A worker that does not answer a cancel within this many ms is stuck: it is replaced. */
const CANCEL_GRACE_MS = 3000;

/** Wires the cancel button: it stops the open in progress (the files already open stay). */
export function wireCancel() {
  els.cancel.addEventListener('click', () => {
    if (page.current === null || page.client === null || page.current.id <= 0) return;
    const stuck = page.current;
    page.client.cancel(stuck.id);
    // A worker inside one long step (or dead) cannot see the cancel: replace it, keep the files.
    setTimeout(() => {
      if (page.current === stuck) {
        restartViewer(page.openedSources.slice(), 'Cancelled: the viewer was busy and was restarted with the files it had open.');
      }
    }, CANCEL_GRACE_MS);
  });
}
