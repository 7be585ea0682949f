// share.js: what makes a view shareable. Deep links (the URL hash holds the view, file, device,
// visible window, selection, search and the "Your code" setting; back/forward step through them), the embedding protocol
// (a parent page sends a snapshot by postMessage; see docs/embedding.md) and `?url=`. Nothing
// here reads snapshot data: states come from Rust's JSON and go back as method calls.

import { VIEWS as VIEW_LIST } from './generated/views.js';

/** The views a link or a parent may name (the `#view-select` values: the generated list's kinds). @type {ReadonlyArray<string>} */
export const VIEWS = Object.freeze(VIEW_LIST.map((v) => v.kind));
const MAX_TEXT = 4096;
/** The whole-number fields of a link. @type {('file' | 'device' | 'pin' | 'event' | 'node')[]} */
const INT_KEYS = ['file', 'device', 'pin', 'event', 'node'];

/**
 * What a link holds (every field may be missing).
 * @typedef {object} LinkState
 * @property {string} [view]
 * @property {number} [file]  the file's index among the opened files
 * @property {string} [name]  the file's name (links before it name only the index)
 * @property {number} [device]
 * @property {number} [pin]  the pinned timeline element
 * @property {number} [event]  the State History's selected event
 * @property {number} [node]  the flamegraph's zoom
 * @property {number[]} [x]  the visible window `[from, to]`, in the x axis's unit: timesteps, or
 *   µs after the first event when `axis` is `time` (links without `axis` are in timesteps)
 * @property {string} [axis]  `time` on the wall-clock time axis
 * @property {number[]} [y]
 * @property {string} [at]  the flamegraph's moment
 * @property {string} [frames]  the flamegraph's frames (`my_code`, `python`, `all`); links before
 *   it have none: their `node` was a node of a tree that is no longer built (frames filtered by
 *   memory_viz's rule), so it is not restored
 * @property {string} [q]  the search
 * @property {boolean} [only]  "only matches"
 * @property {string} [flt]  the structured filter (panels/filter.js; the grammar of `memviz query`)
 * @property {string} [user]  the "Your code" setting (docs/sites.md), when one is applied
 * @property {string} [wif]  the "What if" tab's settings as a conf string (`''`: PyTorch's
 *   defaults), once the tab was used
 * @property {string} [wcap]  its capacity: `''` (the recorded device), a preset's GiB, `custom:N`
 */

/**
 * `Number.isInteger` that also tells the type checker the value is a number.
 * @param {unknown} v
 * @returns {v is number}
 */
function isInt(v) {
  return Number.isInteger(v);
}

/** A finite number from text, or null. @param {unknown} text */
function num(text) {
  if (typeof text !== 'string' || text === '' || text.length > 40) return null;
  const v = Number(text);
  return Number.isFinite(v) ? v : null;
}

/** `a,b` → [a, b] (finite), or null. @param {unknown} text */
function pair(text) {
  if (typeof text !== 'string') return null;
  const parts = text.split(',');
  if (parts.length !== 2) return null;
  const a = num(parts[0]);
  const b = num(parts[1]);
  return a === null || b === null ? null : [a, b];
}

/** A number short enough for a link, exact enough to restore the same view. @param {number} v */
function short(v) {
  return String(Number(v.toPrecision(12)));
}

/**
 * A link state → the hash (`#view=…&file=…&device=…&axis=time&x=a,b&y=a,b&pin=…&event=…&at=…&node=…&q=…&only=1&flt=…&user=…`).
 * Fields that are null or undefined are left out.
 * @param {LinkState} s
 * @returns {string}
 */
export function encodeHash(s) {
  const p = new URLSearchParams();
  if (s.view) p.set('view', s.view);
  for (const k of INT_KEYS) {
    if (isInt(s[k])) p.set(k, String(s[k]));
  }
  if (s.name) p.set('name', s.name.slice(0, MAX_TEXT));
  if (s.axis === 'time') p.set('axis', 'time');
  if (s.x) p.set('x', s.x.map(short).join(','));
  if (s.y) p.set('y', s.y.map(short).join(','));
  if (s.at) p.set('at', s.at);
  if (s.frames) p.set('frames', s.frames);
  if (s.q) p.set('q', s.q);
  if (s.only) p.set('only', '1');
  if (s.flt) p.set('flt', s.flt.slice(0, MAX_TEXT));
  if (s.user) p.set('user', s.user.slice(0, MAX_TEXT));
  if (typeof s.wif === 'string') {
    p.set('wif', s.wif.slice(0, MAX_TEXT));
    if (s.wcap) p.set('wcap', s.wcap);
  }
  const text = p.toString();
  return text === '' ? '' : `#${text}`;
}

/**
 * The hash → a link state; anything malformed is left out (never an error).
 * @param {unknown} hash
 * @returns {LinkState}
 */
export function decodeHash(hash) {
  /** @type {LinkState} */
  const out = {};
  if (typeof hash !== 'string' || hash.length > 4 * MAX_TEXT) return out;
  const p = new URLSearchParams(hash.replace(/^#/, ''));
  const view = p.get('view');
  if (view !== null && VIEWS.includes(view)) out.view = view;
  for (const k of INT_KEYS) {
    const v = num(p.get(k));
    if (v !== null && isInt(v) && Math.abs(v) < 2 ** 31) out[k] = v;
  }
  const name = p.get('name');
  if (name !== null && name !== '' && name.length <= MAX_TEXT) out.name = name;
  const x = pair(p.get('x'));
  const y = pair(p.get('y'));
  if (p.get('axis') === 'time') out.axis = 'time';
  if (x) out.x = x;
  if (y) out.y = y;
  const at = p.get('at');
  if (at !== null && /^(peak|click|lifetime|reserved|diff|phase:\d{1,6}|range:\d{1,10}:\d{1,10}|\d{1,10})$/.test(at)) out.at = at;
  const frames = p.get('frames');
  if (frames !== null && ['my_code', 'python', 'all'].includes(frames)) out.frames = frames;
  const q = p.get('q');
  if (q !== null && q.length <= MAX_TEXT) out.q = q;
  if (p.get('only') === '1') out.only = true;
  const flt = p.get('flt');
  if (flt !== null && flt !== '' && flt.length <= MAX_TEXT) out.flt = flt;
  const user = p.get('user');
  if (user !== null && user !== '' && user.length <= MAX_TEXT) out.user = user;
  const wif = p.get('wif');
  if (wif !== null && wif.length <= MAX_TEXT) {
    out.wif = wif;
    const wcap = p.get('wcap');
    if (wcap !== null && /^(\d{1,6}(\.\d{1,6})?|custom:\d{0,6}(\.\d{0,6})?)$/.test(wcap)) out.wcap = wcap;
  }
  return out;
}

/**
 * What a deep link opened without its file waits for, as a sentence (null: not a link to a
 * view): the view it shows and the file it expects, by name (a link before names were kept
 * gives the file's place among the files opened).
 * @param {string} hash
 * @returns {string | null}
 */
export function linkWaitText(hash) {
  const s = decodeHash(hash);
  if (s.view === undefined && s.name === undefined && s.file === undefined) return null;
  const view = VIEW_LIST.find((v) => v.kind === s.view)?.label ?? 'view';
  const what = s.device !== undefined ? `the ${view} (device ${s.device})` : `the ${view}`;
  const file = s.name !== undefined
    ? `“${s.name}”`
    : isInt(s.file) && s.file > 0 ? `the file it was made from (file ${s.file + 1} of those opened; the link does not name it)` : 'the snapshot it was made from (the link does not name it)';
  return `This link shows ${what} of ${file}. The file is not in the link: open it (Open files…, or drop it here) and the link's view comes back.`;
}

/**
 * Shows `linkWaitText(hash)` in `el` (hidden when the hash is no link to a view). main.css hides
 * it once a file is open.
 * @param {HTMLElement} el
 * @param {string} hash
 */
export function showLinkWait(el, hash) {
  const text = hash === '' ? null : linkWaitText(hash);
  el.textContent = text || '';
  el.hidden = text === null;
}

/** The parts of a link state whose change is a new history entry (not the camera). @param {LinkState} s */
function major(s) {
  return JSON.stringify([s.view, s.file, s.device, s.pin, s.event, s.at, s.frames, s.node, s.q, s.only, s.flt, s.user, s.wif, s.wcap]);
}

/**
 * What DeepLinks asks the page: `state()` → Rust's viewer state (parsed), `call(method, args,
 * opts)` → worker call, `setView(name)`, `search()` → `{q, only}` of the search box,
 * `setSearch(q, only)` (runs it), `flameAt()` / `setFlameAt(value)` (the flamegraph's moment
 * select), `stateSelect(k)`, `pin(element)` (pins and shows a timeline element's tooltip;
 * negative: unpins), `userCode()` / `setUserCode(pattern)` (the "Your code" setting applied;
 * '' for the default rule).
 * @typedef {object} LinkHooks
 * @property {() => Promise<import('./generated/ViewerState').ViewerState | null>} state
 * @property {import('./bridge.js').Call} call
 * @property {(name: string) => Promise<unknown>} setView
 * @property {() => {q: string, only: boolean}} search
 * @property {(q: string, only: boolean) => Promise<void>} setSearch
 * @property {() => string} [filter]  the structured filter's text
 * @property {(text: string) => Promise<void>} [setFilter]  sets and runs it ('' clears)
 * @property {() => string} flameAt
 * @property {(value: string) => Promise<void>} setFlameAt
 * @property {() => string} [flameFrames]  the flamegraph's frames select
 * @property {(value: string) => Promise<void>} [setFlameFrames]
 * @property {(k: number) => Promise<unknown>} stateSelect
 * @property {(element: number) => Promise<unknown>} pin
 * @property {() => string} userCode
 * @property {(pattern: string) => Promise<unknown>} setUserCode
 * @property {() => {conf: string, cap: string} | null} [whatIf]  the "What if" tab's settings, once used
 * @property {(conf: string, cap: string) => Promise<unknown>} [setWhatIf]
 */

/** Keeps the URL hash in step with the view and restores a hash. */
export class DeepLinks {
  /** @param {LinkHooks} hooks */
  constructor(hooks) {
    this.hooks = hooks;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.timer = undefined;
    this.restoring = false;
    /** After a restore the next write replaces the entry (never drops the forward history). */
    this.replaceNext = false;
    /** Set when this document cannot hold history entries (write() then keeps the hash to itself). */
    this.noHistory = false;
    /** The restores in progress, in order. @type {Promise<void>} */
    this.queue = Promise.resolve();
    /** The hash this page wrote or restored last. */
    this.last = location.hash;
    window.addEventListener('popstate', () => {
      // While a restore runs, `last` still names the entry it started from: a back then a
      // quick forward would look like no change, so every step is queued then.
      if (this.restoring || location.hash !== this.last) this.restore(location.hash);
    });
  }

  /**
   * The link state of what is shown now.
   * @returns {Promise<LinkState | null>}
   */
  async current() {
    const st = await this.hooks.state();
    if (st === null) return null;
    /** @type {LinkState} */
    const s = { view: st.view, file: st.file, device: st.device };
    const name = isInt(st.file) ? st.files[st.file] : undefined;
    if (typeof name === 'string' && name !== '') s.name = name;
    const { q, only } = this.hooks.search();
    const flt = this.hooks.filter ? this.hooks.filter() : '';
    const user = this.hooks.userCode();
    if (user) s.user = user;
    const w = this.hooks.whatIf ? this.hooks.whatIf() : null;
    if (w) {
      s.wif = w.conf;
      if (w.cap) s.wcap = w.cap;
    }
    if (st.view === 'state') {
      if (st.state_view && isInt(st.state_view.event)) s.event = st.state_view.event;
    } else if (st.view === 'flame') {
      const f = st.flame_view;
      s.at = this.hooks.flameAt();
      if (this.hooks.flameFrames) s.frames = this.hooks.flameFrames();
      if (f && isInt(f.root) && f.root > 0) s.node = f.root;
      if (q) Object.assign(s, { q, only });
      if (flt) Object.assign(s, { flt, only });
    } else {
      if (st.x_axis === 'time') s.axis = 'time';
      s.x = st.x_range;
      s.y = st.y_range;
      if (isInt(st.pinned)) s.pin = st.pinned;
      if (q) Object.assign(s, { q, only });
      if (flt) Object.assign(s, { flt, only });
    }
    return s;
  }

  /** Writes the hash a little after the view stops changing. */
  schedule() {
    if (this.restoring) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => { this.write(); }, 300);
  }

  /** Writes the hash now: a new history entry when more than the camera changed. */
  async write() {
    if (this.restoring) return null;
    const s = await this.current();
    if (s === null) return null;
    const hash = encodeHash(s);
    if (hash === this.last) {
      this.replaceNext = false;
      return hash;
    }
    const before = decodeHash(this.last);
    const url = `${location.pathname}${location.search}${hash}`;
    // A document that cannot have such history entries (an <iframe srcdoc>, as memviz.show puts
    // the report in a notebook: about:srcdoc with an opaque origin) throws here; the view still
    // works, only without a link in the address bar.
    if (!this.noHistory) {
      try {
        if (this.last === '' || this.replaceNext || major(before) === major(decodeHash(hash))) {
          history.replaceState(null, '', url);
        } else {
          history.pushState(null, '', url);
        }
      } catch {
        this.noHistory = true;
      }
    }
    this.last = hash;
    this.replaceNext = false;
    return hash;
  }

  /**
   * Restores a hash (after its file is open); resolves when every part is applied. Restores run
   * one after the other (back, back, forward quickly: each waits for the one before).
   * @param {string} hash
   */
  restore(hash) {
    const run = this.queue.then(() => this.restoreNow(hash));
    this.queue = run.catch(() => {});
    return run;
  }

  /** @param {string} hash */
  async restoreNow(hash) {
    const s = decodeHash(hash);
    this.restoring = true;
    clearTimeout(this.timer);
    try {
      const h = this.hooks;
      const st = await h.state();
      if (st === null) return;
      // The file of that name when it is open (the order files are opened in may differ from
      // the link's), else the index (a link before names were kept).
      const named = s.name === undefined ? -1 : st.files.indexOf(s.name);
      const file = named >= 0 ? named : s.file;
      if (isInt(file) && file !== st.file && file >= 0 && file < st.files.length) {
        await h.call({ method: 'select_file', index: file }, { waitFrame: true, panel: true });
      }
      // What counts as the user's code names every site: before the view is restored.
      if ((s.user || '') !== h.userCode()) await h.setUserCode(s.user || '');
      if (s.wif !== undefined && h.setWhatIf) await h.setWhatIf(s.wif, s.wcap || '');
      if (s.view) await h.setView(s.view);
      const now = await h.state();
      if (isInt(s.device) && now !== null && s.device !== now.device) {
        await h.call({ method: 'set_device', device: s.device }, { waitFrame: true, panel: true });
      }
      const view = s.view || st.view;
      if (view === 'state') {
        if (isInt(s.event)) await h.stateSelect(s.event);
      } else if (view === 'flame') {
        if (s.at) await h.setFlameAt(s.at);
        if (s.frames && h.setFlameFrames) await h.setFlameFrames(s.frames);
        await h.setSearch(s.q || '', Boolean(s.only));
        if (h.setFilter) await h.setFilter(s.flt || '');
        // A link without `frames` predates the frame modes: its node is not one of these trees.
        if (isInt(s.node) && s.frames) await h.call({ method: 'flame_zoom_to', node: s.node }, { waitFrame: true });
      } else {
        await h.setSearch(s.q || '', Boolean(s.only));
        if (h.setFilter) await h.setFilter(s.flt || '');
        // The axis first: `x` is in its unit. A time link on a file without usable times keeps
        // event order and leaves the window alone.
        const time = s.axis === 'time';
        const before = await h.state();
        if (before !== null && (before.x_axis === 'time') !== time) {
          await h.call({ method: 'set_time_axis', on: time }, { waitFrame: true, panel: true });
        }
        const after = await h.state();
        const sameAxis = after !== null && (after.x_axis === 'time') === time;
        if (s.x && s.y && sameAxis) await h.call({ method: 'set_window', x0: s.x[0], x1: s.x[1], y0: s.y[0], y1: s.y[1] }, { waitFrame: true });
        await h.pin(isInt(s.pin) ? s.pin : -1);
      }
    } finally {
      this.restoring = false;
      this.last = location.hash;
    }
    // What was restored replaces its entry (it may differ slightly: a clamped window, a pin
    // that no longer exists), so the forward history stays.
    this.replaceNext = true;
    await this.write();
  }

  /** Copies the link of what is shown; resolves with it. @param {HTMLElement | null} [status] */
  async copy(status) {
    await this.write();
    const link = location.href;
    try {
      await navigator.clipboard.writeText(link);
      if (status) status.textContent = 'link copied';
    } catch (_) {
      if (status) status.textContent = 'copy this link from the address bar';
    }
    window.memviz.lastCopied = link;
    return link;
  }
}

// ----- embedding ------------------------------------------------------------------------------

/**
 * Why a parent's message is refused, or null when `m` (the `memviz` object) is well formed.
 * @param {any} m  anything another window sent
 * @returns {string | null}
 */
export function checkEmbedMessage(m) {
  if (m === null || typeof m !== 'object' || Array.isArray(m)) return 'the memviz message must be an object';
  const known = ['type', 'buffer', 'url', 'title', 'view', 'device', 'range'];
  const extra = Object.keys(m).filter((k) => !known.includes(k));
  if (extra.length > 0) return `unknown keys: ${extra.slice(0, 5).join(', ').slice(0, 200)}`;
  if (m.type !== undefined && m.type !== 'ping') return 'the only message type a parent sends is "ping"';
  if (m.buffer !== undefined && m.url !== undefined) return 'send either buffer or url, not both';
  if (m.buffer !== undefined) {
    const ok = m.buffer instanceof ArrayBuffer || ArrayBuffer.isView(m.buffer) || m.buffer instanceof Blob;
    // (Its size is checked where every file's is: the worker refuses one over the page's limit
    // before reading it, and the parent gets that message as an `error`.)
    if (!ok) return 'buffer must be an ArrayBuffer, a typed array or a Blob';
  }
  if (m.url !== undefined && (typeof m.url !== 'string' || m.url.length === 0 || m.url.length > MAX_TEXT)) {
    return `url must be a non-empty string of at most ${MAX_TEXT} characters`;
  }
  if (m.title !== undefined && (typeof m.title !== 'string' || m.title.length > 256)) return 'title must be a string of at most 256 characters';
  if (m.view !== undefined && !VIEWS.includes(m.view)) return `view must be one of ${VIEWS.join(', ')}`;
  if (m.device !== undefined && !(isInt(m.device) && m.device >= 0 && m.device < 2 ** 31)) return 'device must be a device number';
  if (m.range !== undefined && !(Array.isArray(m.range) && m.range.length === 2 && m.range.every((/** @type {unknown} */ v) => typeof v === 'number' && Number.isFinite(v)))) {
    return 'range must be [from, to] in timesteps';
  }
  return null;
}

/**
 * How the page's open() ended: ready (`json`: Rust's summary; `timings` in ms; `notice`: why the
 * file is incomplete, or ''), an error (Rust's sentence, or the shell's), or cancelled.
 * @typedef {{state: 'ready', json: string, timings: object, notice: string}
 *   | {state: 'error', message: string, crashed?: boolean}
 *   | {state: 'cancelled'}} OpenResult
 */

/**
 * What EmbedHost asks the page: `open(src, title)` → open()'s result, `apply({view, device,
 * range})` → what is shown after.
 * @typedef {object} EmbedHooks
 * @property {(src: string | Blob | ArrayBuffer, title: string) => Promise<OpenResult>} open
 * @property {(m: {view?: string, device?: number, range?: number[]}) => Promise<{view: string | null, device: number | null}>} apply
 */

/**
 * The viewer's side of the embedding protocol (docs/embedding.md). Accepts messages from the
 * parent (or opener) window only, from `allowedOrigin` when given.
 */
export class EmbedHost {
  /**
   * @param {EmbedHooks} hooks
   * @param {string | null} allowedOrigin
   */
  constructor(hooks, allowedOrigin) {
    this.hooks = hooks;
    this.allowedOrigin = allowedOrigin;
    /** Where replies go (the window of the last accepted message) and its origin. @type {Window | null} */
    this.peer = null;
    this.peerOrigin = '*';
    /** The selection last told (JSON), so each change is told once. @type {string | undefined} */
    this.lastSelection = undefined;
    window.addEventListener('message', (ev) => { this.onMessage(ev); });
  }

  /** @param {MessageEvent} ev */
  accepts(ev) {
    const fromPeer = ev.source !== null && ev.source !== window
      && (ev.source === window.parent || ev.source === window.opener);
    if (!fromPeer) return false;
    return !this.allowedOrigin || ev.origin === this.allowedOrigin;
  }

  /**
   * @param {string} type
   * @param {object} fields
   */
  reply(type, fields) {
    if (this.peer === null) return;
    try {
      this.peer.postMessage({ memviz: { type, ...fields } }, this.peerOrigin);
    } catch (_) {
      // The parent went away.
    }
  }

  /** @param {MessageEvent} ev */
  async onMessage(ev) {
    if (!this.accepts(ev)) return;
    try {
      await this.handle(ev);
    } catch (e) {
      this.reply('error', { message: `the viewer failed on that message: ${e instanceof Error ? e.message : String(e)}` });
    }
  }

  /** @param {MessageEvent} ev  accepted: from the parent or opener window */
  async handle(ev) {
    this.peer = /** @type {Window} */ (ev.source);
    this.peerOrigin = ev.origin && ev.origin !== 'null' ? ev.origin : '*';
    const data = ev.data;
    if (data === 'PING') {
      this.reply('ready', { version: 1 });
      return;
    }
    if (data === null || typeof data !== 'object' || !('memviz' in data)) return; // not for us
    const m = data.memviz;
    const why = checkEmbedMessage(m);
    if (why !== null) {
      this.reply('error', { message: `message refused: ${why}` });
      return;
    }
    if (m.type === 'ping') {
      this.reply('ready', { version: 1 });
      return;
    }
    // A url is fetched with the viewer's own origin and cookies: only a page of that origin may
    // ask for one, else any site could embed the viewer and read back a private snapshot's
    // summary. Another origin sends the bytes it has (buffer).
    if (m.url !== undefined && ev.origin !== location.origin) {
      this.reply('error', { message: `message refused: url is accepted only from a page of the viewer's origin (${location.origin}); send the snapshot as buffer` });
      return;
    }
    if (m.buffer === undefined && m.url === undefined) {
      const r = await this.hooks.apply(m);
      this.reply('applied', { view: r.view });
      return;
    }
    let src = m.url !== undefined ? m.url : m.buffer;
    if (ArrayBuffer.isView(src)) src = src.buffer.slice(src.byteOffset, src.byteOffset + src.byteLength);
    const title = m.title !== undefined ? m.title : (m.url !== undefined ? m.url : 'snapshot');
    const r = await this.hooks.open(src, title);
    if (r.state !== 'ready') {
      this.reply('error', { message: (r.state === 'error' && r.message) || `opening ${title} was ${r.state}` });
      return;
    }
    const applied = await this.hooks.apply(m);
    this.reply('loaded', { title, view: applied.view, device: applied.device, summary: JSON.parse(r.json) });
  }

  /** Tells the parent what is pinned (`null`: nothing), once per change. @param {import('./generated/ElementTip').ElementTip | import('./generated/ItemTip').ItemTip | import('./generated/NodeTip').NodeTip | null} tip */
  selection(tip) {
    const sel = tip && tip.pinned ? { title: tip.title, element: 'element' in tip ? tip.element : 'node' in tip ? tip.node : null } : null;
    const key = JSON.stringify(sel);
    if (key === this.lastSelection) return;
    this.lastSelection = key;
    this.reply('selection', { selection: sel });
  }
}

// ----- ?url= ----------------------------------------------------------------------------------

/** The `?url=` of the page, resolved against it, or null. */
export function urlParam() {
  return urlParams()[0] ?? null;
}

/**
 * Every `?url=` of the page in order (`memviz open A B` names several), resolved against it;
 * empty, too long or unparsable ones are left out.
 * @returns {string[]}
 */
export function urlParams() {
  /** @type {string[]} */
  const out = [];
  for (const u of new URLSearchParams(location.search).getAll('url')) {
    if (u === '' || u.length > MAX_TEXT) continue;
    try {
      out.push(new URL(u, location.href).href);
    } catch (_) {
      // not a URL: left out
    }
  }
  return out;
}
