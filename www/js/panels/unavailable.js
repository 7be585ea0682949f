// panels/unavailable.js: how a panel says it cannot fit in memory.
//
// A panel that cannot fit in the memory the page has left answers `{"unavailable": sentence}`
// (Rust's sentence: what it needs, what is free, the command line that gives the same answer):
// it is shown as text in the panel's own status line and, as a view that cannot fit is, in the
// notice above the file (`onUnavailable`).

/** Shows a panel's "cannot fit" sentence in the page's notice (set by main.js). */
/** @type {(text: string) => void} */
let notify = (_text) => {};

/** Sets what shows a panel's "cannot fit" sentence outside the panel. */
/** @param {(text: string) => void} fn */
export function onUnavailable(fn) {
  notify = fn;
}

/** @typedef {import('../generated/Unavailable').Unavailable} Unavailable */

/**
 * True when `r` (an answer) says it cannot fit in memory (an `Unavailable`); its sentence is
 * then also handed to the notice.
 * @param {unknown} r
 * @returns {r is Unavailable}
 */
export function isUnavailable(r) {
  if (r === null || typeof r !== 'object' || Array.isArray(r) || !('unavailable' in r) || typeof r.unavailable !== 'string') return false;
  notify(r.unavailable);
  return true;
}

/**
 * Rust's sentence when `r` (an answer) says it cannot fit in memory, else null (see
 * `isUnavailable`).
 * @param {unknown} r
 * @returns {string | null}
 */
export function unavailable(r) {
  return isUnavailable(r) ? r.unavailable : null;
}
