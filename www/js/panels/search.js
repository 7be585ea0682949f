// panels/search.js: the search box (matches highlighted on the timeline, count and bytes shown,
// "only matches" hides the rest). The answer is Rust's (crates/memviz-viewer `search`), placed
// with textContent only.
import { Panel } from './panel.js';
import { unavailable } from './unavailable.js';

/** @typedef {import('../generated/SearchAnswer').SearchAnswer} Search */
/** @typedef {import('../bridge.js').Call} Call */

/** @typedef {{input: HTMLInputElement, only: HTMLInputElement, status: HTMLElement}} SearchElements */

/** The search box. @extends {Panel<SearchElements>} */
export class SearchBox extends Panel {
  /**
   * @param {SearchElements} els @param {Call} call
   * @param {() => void} [after]  after each answer (the filter's count of what matches both)
   */
  constructor(els, call, after = () => {}) {
    super(els, call);
    this.after = after;
    /** The last answer (parsed), or null. @type {Search | null} */
    this.result = null;
    this.runOnTyping(els.input, () => this.run());
    els.only.addEventListener('change', () => this.run());
  }

  /** Runs the query in the box; resolves with Rust's answer after the frame is drawn. */
  async run() {
    const q = this.els.input.value;
    const { result } = await this.call({ method: 'search', query: q, only: this.els.only.checked }, { waitFrame: true });
    // An `Unavailable` instead when the search cannot fit in memory (checked first).
    const r = result;
    this.result = r;
    const why = unavailable(r);
    if (why !== null) {
      this.els.status.textContent = why;
    } else if (r === null || r.query === '') {
      this.els.status.textContent = '';
    } else if (r.error) {
      this.els.status.textContent = `bad pattern: ${r.error}`;
    } else {
      this.els.status.textContent = `${r.count.toLocaleString('en-US')} match${r.count === 1 ? '' : 'es'}, ${r.size}`;
    }
    this.after();
    return r;
  }

  /** A new file, device or view: the highlight is gone, so is the query. */
  reset() {
    this.els.input.value = '';
    this.els.status.textContent = '';
    this.result = null;
  }
}
