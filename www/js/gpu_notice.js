// gpu_notice.js: the one-line notice saying the page draws with WebGL2 because WebGPU failed
// (at start, or mid-session when the GPU device was lost), and the page's record of the backend
// in use (`body[data-memviz-backend]`, the header's `#backend` title). bridge.js calls it; the
// text is the worker's (Rust's reason, one line), set with textContent only.

/** The notice element (made on first use, just above the viewer). @type {HTMLElement | null} */
let notice = null;

/** @returns {HTMLElement} */
function element() {
  if (notice !== null) return notice;
  const el = document.createElement('div');
  el.id = 'gpu-notice';
  el.setAttribute('role', 'status');
  // One line, whatever the reason's length (the whole text is in the title).
  Object.assign(el.style, {
    display: 'flex', alignItems: 'center', gap: '.5rem', flex: '0 0 auto', margin: '.35rem 0 0',
    padding: '.2rem .6rem', fontSize: '.85rem', borderLeft: '.3rem solid #b7791f',
    background: 'light-dark(#fff8e1, #3a2f12)', borderRadius: '.35rem',
  });
  const text = document.createElement('span');
  text.className = 'gpu-notice-text';
  Object.assign(text.style, { flex: '1 1 auto', minWidth: '0', whiteSpace: 'nowrap', overflow: 'hidden', textOverflow: 'ellipsis' });
  const close = document.createElement('button');
  close.type = 'button';
  close.className = 'secondary icon';
  close.textContent = '×';
  close.title = 'Dismiss';
  close.setAttribute('aria-label', 'Dismiss this notice');
  Object.assign(close.style, { flex: '0 0 auto', padding: '0 .45rem', minWidth: '0', lineHeight: '1.3' });
  close.addEventListener('click', () => { el.hidden = true; });
  el.append(text, close);
  const viewer = document.getElementById('viewer');
  if (viewer !== null && viewer.parentElement !== null) viewer.before(el);
  else document.body.prepend(el);
  notice = el;
  return el;
}

/**
 * Shows `text` as the one-line GPU notice ('' hides it).
 * @param {string} text
 */
export function showGpuNotice(text) {
  if (text === '' && notice === null) return;
  const el = element();
  const span = /** @type {HTMLElement} */ (el.firstChild);
  span.textContent = text;
  el.title = text;
  el.hidden = text === '';
}

/** The notice's text ('' when hidden). */
export function gpuNoticeText() {
  return notice === null || notice.hidden ? '' : notice.title;
}

/**
 * The sentence for the notice when WebGPU was passed over or failed.
 * @param {string} backend  the backend drawing now (`WebGL2`, or '' when none)
 * @param {string} reason  why WebGPU failed (the worker's text)
 * @param {boolean} midSession  true when it failed after drawing (the files stayed open)
 */
export function noticeFor(backend, reason, midSession) {
  const why = reason.replace(/[.\s]+$/, '');
  if (backend === '') return `The GPU failed (${why}) and no other way to draw works here: nothing can be drawn; the files stay open with their summaries.`;
  return midSession
    ? `WebGPU stopped working (${why}): drawing with ${backend} now; your files stay open.`
    : `WebGPU does not work here (${why}): drawing with ${backend} instead.`;
}

/**
 * Records the backend in use on the page (`body[data-memviz-backend]`, `#backend`'s title).
 * @param {{backend: string, adapter: string}} info
 */
export function showBackend(info) {
  document.body.dataset.memvizBackend = info.backend ? info.backend.toLowerCase() : 'none';
  const label = document.getElementById('backend');
  if (label !== null) {
    label.textContent = info.backend ? 'GPU drawing' : 'cannot draw here';
    label.title = info.backend ? `${info.backend}${info.adapter ? `: ${info.adapter}` : ''}` : info.adapter;
  }
}
