// drag.js: resizing by dragging a divider, shared by the details pane's splitter (along x) and
// the drawer's (along y).

/**
 * While the primary button drags `handle`, calls `setSize(start + (from - at))`: `start` is
 * `size()` when the press began and `from`/`at` the pointer's coordinate along `axis` then and
 * now (so dragging towards the pane that grows, left or up, enlarges it).
 * @param {HTMLElement} handle
 * @param {'x' | 'y'} axis
 * @param {() => number} size
 * @param {(px: number) => void} setSize
 * @param {{ preventDefault?: boolean }} [opts]  preventDefault: no text selection while dragging
 */
export function dragToResize(handle, axis, size, setSize, opts = {}) {
  /** @param {PointerEvent} e */
  const at = (e) => (axis === 'x' ? e.clientX : e.clientY);
  handle.addEventListener('pointerdown', (ev) => {
    if (ev.button !== 0) return;
    if (opts.preventDefault) ev.preventDefault();
    handle.setPointerCapture(ev.pointerId);
    const from = at(ev);
    const start = size();
    /** @param {PointerEvent} e */
    const move = (e) => setSize(start + (from - at(e)));
    const up = () => {
      handle.removeEventListener('pointermove', move);
      handle.removeEventListener('pointerup', up);
    };
    handle.addEventListener('pointermove', move);
    handle.addEventListener('pointerup', up);
  });
}
