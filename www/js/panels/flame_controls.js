// panels/flame_controls.js: the flamegraph's controls (the moment, the frames: my code / Python /
// all, the breadcrumb, the frame names over wide rects). The tree and its text are Rust's (flame_view).
import { setChildren } from '../dom.js';
import { Panel } from './panel.js';
import { isUnavailable, unavailable } from './unavailable.js';

/** @typedef {import('../bridge.js').Call} Call */
/** @typedef {import('../generated/FlamePhase').FlamePhase} FlamePhase */
/** @typedef {import('../generated/FlameState').FlameState} FlameState */
/** @typedef {import('../generated/FlameInfo').FlameInfo} FlameInfo */
/** @typedef {import('../generated/FlameAt').FlameAt} FlameAt */
/** @typedef {import('../generated/FrameMode').FrameMode} FrameMode */

/**
 * The moment of one of the select's options (its value is the page's own, also kept in deep
 * links: `peak`, `click`, `reserved` for the reserved memory at the end, or `phase:<index>` for
 * an annotation phase).
 * @param {string} value
 * @returns {FlameAt}
 */
function flameAt(value) {
  if (value === 'click') return { at: 'click' };
  if (value === 'reserved') return { at: 'reserved' };
  const phase = /^phase:(\d+)$/.exec(value);
  if (phase) return { at: 'phase', index: Number(phase[1]) };
  return { at: 'peak' };
}

/**
 * @typedef {object} FlameElements
 * @property {HTMLElement} controls
 * @property {HTMLSelectElement} at
 * @property {HTMLSelectElement} frames
 * @property {HTMLElement} breadcrumb
 * @property {HTMLElement} status
 * @property {HTMLElement} labels
 */

/**
 * The flamegraph's controls: the moment (peak, last click, whole trace, the reserved memory at
 * the end by segment and state, an annotation phase as a time range, or the diff of two files), the frames (my code: the
 * user's frames with library calls collapsed; Python; all frames; the default is Rust's, "my code" when the file has
 * frames of the user's code), the breadcrumb (click to zoom out to that
 * frame) and the frame names over wide rects.
 * @extends {Panel<FlameElements>}
 */
export class FlameControls extends Panel {
  /** @param {FlameElements} els @param {Call} call */
  constructor(els, call) {
    super(els, call);
    /** What the breadcrumb's chips show (it is rebuilt only when this changes). @type {string | null} */
    this.crumbKey = null;
    /** @type {FlameInfo | null} */
    this.info = null;
    this.shown = false;
    this.pending = false;
    /** `[a, b]` while the diff flamegraph is chosen. @type {[number, number] | null} */
    this.diff = null;
    /** Why the last choice could not be shown (Rust's sentence), or null. @type {string | null} */
    this.why = null;
    /** The moment select's fixed options (the phases are added per file). @type {HTMLOptionElement[]} */
    this.fixed = [...els.at.options].map((o) => /** @type {HTMLOptionElement} */ (o.cloneNode(true)));
    /** The frames chosen on the select, or null: the file's default (FlameState.frames says which). @type {FrameMode | null} */
    this.frames = null;
    els.at.addEventListener('change', () => this.apply());
    els.frames.addEventListener('change', () => {
      this.frames = /** @type {FrameMode} */ (els.frames.value);
      this.apply();
    });
  }

  /** Shows or hides the controls (the flamegraph view is shown or left). @param {boolean} on */
  show(on) {
    this.shown = on;
    this.els.controls.hidden = !on;
    if (!on) {
      this.els.labels.replaceChildren();
      delete document.body.dataset.flameAt;
    }
  }

  /** A new file or device in the flamegraph view: lists its phases, then builds at the choice. */
  async enter() {
    const { result } = await this.call({ method: 'flame_phases' });
    const phases = result;
    const keep = this.els.at.value;
    this.diff = null;
    const options = this.fixed.map((o) => /** @type {HTMLOptionElement} */ (o.cloneNode(true)));
    for (const p of phases) {
      const o = document.createElement('option');
      o.value = `phase:${p.index}`;
      o.textContent = `phase ${p.name} (bytes × lifetime within it)`;
      options.push(o);
    }
    setChildren(this.els.at, options);
    this.els.at.value = options.some((o) => o.value === keep) ? keep : 'peak';
    return this.apply();
  }

  /** Rebuilds at the chosen moment; resolves with the state JSON after the frame is drawn. */
  async apply() {
    const at = this.els.at.value;
    // main.css hides what does nothing on the reserved memory (the search and "all frames":
    // its stacks are the segments' blocks, every frame).
    document.body.dataset.flameAt = at;
    if (at === 'diff' && this.diff) return this.showDiff(this.diff[0], this.diff[1]);
    this.setDiffOption(null);
    const lifetime = at === 'lifetime';
    const { result } = await this.call({ method: 'flame_set', at: lifetime ? { at: 'peak' } : flameAt(at), lifetime, frames: this.frames }, { waitFrame: true });
    const st = result;
    this.showFrames(st);
    // Shown instead of the status until the next choice (the flamegraph stays as it was).
    this.why = unavailable(st);
    await this.refresh();
    return st;
  }

  /** Shows the diff flamegraph of opened files `a` and `b`; resolves with its state JSON. */
  /** @param {number} a @param {number} b */
  async showDiff(a, b) {
    this.diff = [a, b];
    const { result } = await this.call({ method: 'flame_diff', a, b, frames: this.frames }, { waitFrame: true });
    const st = result;
    this.showFrames(st);
    this.why = unavailable(st);
    this.setDiffOption(st && !isUnavailable(st) && st.diff ? `compare ${st.diff.a} → ${st.diff.b} (red: grew, blue: shrank)` : null);
    await this.refresh();
    return st;
  }

  /**
   * Shows the frames the flamegraph was built with on the select (the default when none was
   * chosen), and whether "my code" has anything to show in this file.
   * @param {FlameState | import('../generated/Unavailable').Unavailable | null} st
   */
  showFrames(st) {
    if (!st || isUnavailable(st) || !('frames' in st)) return;
    const s = /** @type {FlameState} */ (st);
    this.els.frames.value = s.frames;
    const mine = [...this.els.frames.options].find((o) => o.value === 'my_code');
    if (mine) mine.title = s.has_user_frames ? 'Your frames; the library calls between them collapsed into one [package] node' : 'This file has no frames of your code: every stack shows its Python frames';
  }

  /** Adds (text) or removes (null) the `diff` choice of the moment select. */
  /** @param {string | null} text */
  setDiffOption(text) {
    const old = [...this.els.at.options].find((o) => o.value === 'diff');
    if (text === null) {
      if (old) old.remove();
      this.diff = null;
      return;
    }
    const o = old || document.createElement('option');
    o.value = 'diff';
    o.textContent = text;
    if (!old) this.els.at.append(o);
    this.els.at.value = 'diff';
  }

  /** Fetches the breadcrumb, labels and state (after each drawn frame while shown). */
  async refresh() {
    if (!this.shown) return null;
    const { result } = await this.call({ method: 'flame_info' });
    const info = result;
    this.info = info;
    if (info === null) return null;
    const s = info.state;
    let status = `${s.total_text} in ${s.nodes.toLocaleString('en-US')} frames`;
    if (s.diff) status = `A ${s.diff.a_text} → B ${s.diff.b_text} (${s.diff.delta_text}) in ${s.nodes.toLocaleString('en-US')} frames`;
    if (s.matched_text !== null && s.matched_text !== undefined) status += `; search matches ${s.matched_text}`;
    this.els.status.textContent = this.why || status;
    // Rebuilt only when it changed: refresh runs after every drawn frame, and a chip replaced
    // between a press and its release would lose the click.
    const crumbKey = JSON.stringify(info.breadcrumb.map((c) => [c.node, c.chip, c.size, c.name]));
    if (crumbKey !== this.crumbKey) this.renderBreadcrumb(info, crumbKey);
    setChildren(this.els.labels, info.labels.map((l) => {
      const span = document.createElement('span');
      span.textContent = l.short || l.text;
      span.title = l.text;
      span.style.left = `${l.x_css}px`;
      span.style.top = `${l.y_css}px`;
      span.style.width = `${l.w_css}px`;
      span.style.height = `${l.h_css}px`;
      span.style.lineHeight = `${l.h_css}px`;
      return span;
    }));
    return info;
  }

  /**
   * The breadcrumb's chips (click one to zoom out to it); `key` names what they show.
   * @param {FlameInfo} info @param {string} key
   */
  renderBreadcrumb(info, key) {
    this.crumbKey = key;
    setChildren(this.els.breadcrumb, info.breadcrumb.map((c, i) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'secondary';
      b.textContent = i === 0 ? `all (${c.size})` : c.chip;
      b.title = `${c.name} (${c.size})`;
      b.disabled = i === info.breadcrumb.length - 1;
      b.addEventListener('click', async () => {
        await this.call({ method: 'flame_zoom_to', node: c.node }, { waitFrame: true });
        this.refresh();
      });
      return b;
    }));
  }

  /** After a drawn frame: refresh at most once per animation frame. */
  onFrame() {
    if (!this.shown || this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.refresh();
    });
  }
}
