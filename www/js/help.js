// help.js: the keyboard help (`?` or the header's button opens it, Esc closes it), the one-line
// hint on the plot until the first interaction, and the light/dark toggle (the choice is kept
// in localStorage; without one the page follows prefers-color-scheme).

const THEME_KEY = 'memviz-theme';

/** Whether a key event is typing into a field (then `?` is a character, not the help). @param {KeyboardEvent} ev */
function typing(ev) {
  const t = ev.target;
  return t instanceof HTMLElement && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName));
}

/**
 * @param {{dialog: HTMLDialogElement, open: HTMLButtonElement, close: HTMLButtonElement}} els
 */
export function wireHelp(els) {
  const show = () => { if (!els.dialog.open) els.dialog.showModal(); };
  els.open.addEventListener('click', show);
  els.close.addEventListener('click', () => els.dialog.close());
  document.addEventListener('keydown', (ev) => {
    if (ev.key === '?' && !typing(ev) && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
      ev.preventDefault();
      if (els.dialog.open) els.dialog.close();
      else show();
    }
  });
  return { show, close: () => els.dialog.close(), isOpen: () => els.dialog.open };
}

/**
 * Shows `hint` (in the details pane, so it covers nothing of the plot) until the first wheel,
 * pointer press or key on `canvas`, or its close button (again after a restart replaces the
 * canvas: call `watch` with the new one). Its text says what the mouse does in the view shown.
 * @param {HTMLElement} hint  holds `.hint-text` and a close button
 */
export function firstUseHint(hint) {
  let used = false;
  const done = () => {
    used = true;
    hint.hidden = true;
  };
  const text = /** @type {HTMLElement} */ (hint.querySelector('.hint-text'));
  /** The hint's text shown (a view switch with the same one leaves it). */
  let shown = '';
  const close = hint.querySelector('button');
  if (close) close.addEventListener('click', done);
  return {
    /** Shows the hint (once a file is drawn) unless the plot was used. */
    show() { if (!used) hint.hidden = false; },
    /**
     * The view shown (its row of the generated list): the hint says what its mouse does.
     * @param {{hint: string}} view
     */
    setView(view) {
      if (text && shown !== view.hint) {
        shown = view.hint;
        text.textContent = `${view.hint} · `;
        const k = document.createElement('kbd');
        k.textContent = '?';
        text.append(k, ': all keys');
      }
    },
    /** @param {HTMLElement} canvas */
    watch(canvas) {
      for (const type of ['wheel', 'pointerdown', 'keydown']) canvas.addEventListener(type, done, { passive: true });
    },
  };
}

/** The theme in effect: the stored choice, else the system's. @returns {'light' | 'dark'} */
export function currentTheme() {
  const chosen = document.documentElement.dataset.theme;
  if (chosen === 'light' || chosen === 'dark') return chosen;
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

/**
 * Wires the toggle; `onChange(theme)` runs now and on every change (the toggle, or the system's
 * setting while no choice is stored).
 * @param {HTMLButtonElement} toggle
 * @param {(theme: 'light' | 'dark') => void} onChange
 */
export function wireTheme(toggle, onChange) {
  /** @type {string | null} */
  let stored;
  try {
    stored = localStorage.getItem(THEME_KEY);
  } catch {
    stored = null; // storage blocked (a sandboxed iframe): follow the system
  }
  if (stored === 'light' || stored === 'dark') document.documentElement.dataset.theme = stored;
  const apply = () => {
    const theme = currentTheme();
    toggle.setAttribute('aria-pressed', String(theme === 'dark'));
    toggle.title = theme === 'dark' ? 'Use light colours' : 'Use dark colours';
    onChange(theme);
  };
  toggle.addEventListener('click', () => {
    const next = currentTheme() === 'dark' ? 'light' : 'dark';
    document.documentElement.dataset.theme = next;
    try {
      localStorage.setItem(THEME_KEY, next);
    } catch {
      // not kept: fine
    }
    apply();
  });
  window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', apply);
  apply();
}
