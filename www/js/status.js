// status.js: the error banner and the file's notice (alerts.js), with the page's wording: a
// message from Rust ends in one full stop, and why nothing can be drawn stays under every error.

import { Alerts } from './alerts.js';
import { onUnavailable } from './panels/unavailable.js';
import { els, page, setState } from './page_state.js';

/** The banner (dismissable) and the notice; closing the banner leaves the `error` state. */
const alerts = new Alerts(els.alert, els.notice, () => {
  if (document.body.dataset.memvizState === 'error') setState(page.filesOpen > 0 ? 'ready' : 'empty');
});

/** @param {string} message */
export function showError(message) {
  alerts.setError(page.cannotDraw ? `${message}\n\n${page.cannotDraw}` : message);
  // The shown file's notice is not about this error: it steps aside until the banner closes.
  alerts.asideNotice(true);
  setState('error');
}

export function clearError() {
  alerts.setError(page.cannotDraw);
  alerts.asideNotice(false);
}

/**
 * The notice above the current file (not an error; Rust's text): why the file is incomplete
 * when it was cut before its end. Hidden when there is none.
 * @param {string} fileName
 * @param {unknown} notice
 */
export function showNotice(fileName, notice) {
  const text = typeof notice === 'string' ? notice : '';
  alerts.setNotice(text === '' ? '' : `${fileName}: ${sentence(text)}`);
}

// A panel, the tooltips or the hit index that cannot fit in memory: Rust's sentence in the
// notice, as for a view (until the next panel update replaces the notice).
onUnavailable((text) => showNotice(els.fileName.textContent, text));

/** `message` ending in one full stop (messages from Rust may end in `.`, `?` or `!`). @param {unknown} message */
export function sentence(message) {
  const m = String(message).trim();
  return /[.?!]$/.test(m) ? m : `${m}.`;
}
