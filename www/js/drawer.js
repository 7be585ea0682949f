// drawer.js: the panels (source lines, alive at a moment, leaks, files, compare, settings,
// summary, the OOM explanation) as tabs of a drawer below the plot that opens above the fold.
// Each panel stays a <details> element, so a panel loads on its own `toggle` event as before;
// the drawer opens at most one of them and marks its tab. The divider above the tabs
// (`#drawer-splitter`: drag, or arrow keys / Page Up / Page Down / Home / End) sets the drawer's
// height, kept for the session; whatever it says, an open drawer leaves the plot at least half
// the window's height.

import { dragToResize } from './drag.js';

/** sessionStorage key of the drawer's height (CSS px). */
const HEIGHT_KEY = 'memviz-drawer-height';
/** The drawer's height before any choice: a share of the window (then clamped). */
const DEFAULT_FRACTION = 0.3;
const MIN_H = 80;
/** The plot keeps at least this share of the window's height. */
const PLOT_FRACTION = 0.5;

/** The stored height, or null. */
function storedHeight() {
  try {
    const v = Number(sessionStorage.getItem(HEIGHT_KEY));
    return Number.isFinite(v) && v > 0 ? v : null;
  } catch {
    return null; // storage blocked (a sandboxed iframe)
  }
}

/**
 * The divider between the plot and the open drawer.
 * @param {HTMLElement} splitter
 * @param {HTMLElement} body  `#drawer-body` (its max-height is `--drawer-h`)
 * @param {() => HTMLElement | null} plot  the canvas (replaced after a restart)
 */
function wireDivider(splitter, body, plot) {
  let wanted = storedHeight() ?? Math.round(window.innerHeight * DEFAULT_FRACTION);
  /**
   * Applies `wanted`, at most what leaves the plot half the window: the plot takes whatever
   * height the drawer leaves (flex), so the drawer may grow by the plot's excess over half.
   * Measured while the drawer is open (a closed one is applied when it opens).
   */
  const apply = () => {
    const p = plot();
    let h = Math.max(MIN_H, wanted);
    if (p && body.getClientRects().length > 0) {
      const max = body.getBoundingClientRect().height + p.getBoundingClientRect().height - window.innerHeight * PLOT_FRACTION;
      h = Math.max(MIN_H, Math.min(h, Math.floor(max)));
      splitter.setAttribute('aria-valuemax', String(Math.max(MIN_H, Math.floor(max))));
    }
    body.style.setProperty('--drawer-h', `${h}px`);
    splitter.setAttribute('aria-valuenow', String(h));
    splitter.setAttribute('aria-valuemin', String(MIN_H));
    return h;
  };
  /** @param {number} h */
  const set = (h) => {
    wanted = Math.round(Math.max(MIN_H, h));
    wanted = apply();
    try {
      sessionStorage.setItem(HEIGHT_KEY, String(wanted));
    } catch {
      // not kept: fine
    }
  };
  dragToResize(splitter, 'y', () => body.getBoundingClientRect().height, set, { preventDefault: true });
  splitter.addEventListener('keydown', (ev) => {
    const now = body.getBoundingClientRect().height;
    /** @type {Record<string, number>} */
    const to = {
      ArrowUp: now + 24, ArrowDown: now - 24, PageUp: now + 120, PageDown: now - 120, Home: window.innerHeight, End: MIN_H,
    };
    if (!(ev.key in to)) return;
    ev.preventDefault();
    set(to[ev.key]);
  });
  window.addEventListener('resize', () => { apply(); });
  return apply;
}

export class Drawer {
  /** @param {HTMLElement} tabs  the tab list (buttons with data-panel = a <details> id) */
  constructor(tabs) {
    this.tabs = tabs;
    /** @type {HTMLButtonElement[]} */
    this.buttons = Array.from(tabs.querySelectorAll('button[role="tab"]'));
    const splitter = document.getElementById('drawer-splitter');
    const body = document.getElementById('drawer-body');
    /** Re-applies the drawer's height (a panel opened or filled). */
    this.fit = splitter && body ? wireDivider(splitter, body, () => document.getElementById('plot')) : () => 0;
    for (const b of this.buttons) {
      const panel = this.panel(b);
      b.setAttribute('aria-controls', panel.id);
      panel.setAttribute('role', 'tabpanel');
      b.addEventListener('click', () => this.open(panel.id === this.openId() ? null : panel.id));
      panel.addEventListener('toggle', () => this.sync());
    }
  }

  /** @param {HTMLButtonElement} b @returns {HTMLDetailsElement} */
  panel(b) {
    return /** @type {HTMLDetailsElement} */ (document.getElementById(String(b.dataset.panel)));
  }

  /** The id of the open panel, or null. */
  openId() {
    const b = this.buttons.find((x) => this.panel(x).open);
    return b ? this.panel(b).id : null;
  }

  /**
   * Opens panel `id` (closing the others), or closes the drawer (null).
   * @param {string | null} id
   */
  open(id) {
    for (const b of this.buttons) {
      const p = this.panel(b);
      const on = p.id === id;
      if (on && b.hidden) b.hidden = false;
      if (p.open !== on) p.open = on;
    }
    this.sync();
  }

  /** Marks the open panel's tab (a panel opened by other code closes the rest). */
  sync() {
    const open = this.buttons.filter((b) => this.panel(b).open);
    // The last one opened wins: close the others.
    if (open.length > 1) {
      const keep = open.find((b) => b.getAttribute('aria-selected') !== 'true') || open[open.length - 1];
      for (const b of open) if (b !== keep) this.panel(b).open = false;
    }
    for (const b of this.buttons) b.setAttribute('aria-selected', String(this.panel(b).open));
    if (open.length > 0) requestAnimationFrame(() => { this.fit(); });
  }

  /**
   * Shows or hides a tab (a hidden tab's panel closes).
   * @param {string} id
   * @param {boolean} shown
   */
  setTab(id, shown) {
    const b = this.buttons.find((x) => x.dataset.panel === id);
    if (!b) return;
    b.hidden = !shown;
    if (!shown && this.panel(b).open) this.open(null);
  }
}
