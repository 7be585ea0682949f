// drawer.js: the panels (source lines, alive at a moment, leaks, files, compare, settings,
// summary, the OOM explanation) as tabs of a drawer below the plot that opens above the fold.
// Each panel stays a <details> element, so a panel loads on its own `toggle` event as before;
// the drawer opens at most one of them and marks its tab.

export class Drawer {
  /** @param {HTMLElement} tabs  the tab list (buttons with data-panel = a <details> id) */
  constructor(tabs) {
    this.tabs = tabs;
    /** @type {HTMLButtonElement[]} */
    this.buttons = Array.from(tabs.querySelectorAll('button[role="tab"]'));
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
