// main.js: boots the page (`document.body.dataset.memvizState`: empty, loading, ready or error).
// Files go to the viewer worker through bridge.js; everything shown comes back from Rust as
// JSON/text and is placed with textContent only (snapshot strings are data). See www/README.md
// for the contract the tests rely on, and page_state.js for the modules this one wires together:
// it connects the hooks through which the lower modules call the upper ones (the modules import
// one way, never in a cycle, whose evaluation order would leave bindings unset at load), then
// wires the page's controls in order.

import { wireFileInputs } from './file_drop.js';
import { EmbedHost, urlParams, showLinkWait } from './share.js';
import { wireTheme } from './help.js';
import { $, els, page, query, setState } from './page_state.js';
import { showError, sentence } from './status.js';
import { connectSession, startViewer, setTheme, view } from './session.js';
import { connectTooltip, showTooltip, wireCanvas, copyStack } from './input.js';
import { flameControls, links } from './page_panels.js';
import { showTicks } from './plot_chrome.js';
import { showPanel, wireControls } from './controls.js';
import { open, openAll, wireCancel } from './open.js';
import { installApi } from './test_api.js';

/** Applies a parent's `view`, `device` and `range` (embedding protocol). */
/** @param {{view?: string, device?: number, range?: number[]}} m */
async function applyEmbed(m) {
  if (m.view) await window.memviz.setView(m.view);
  if (m.device !== undefined && Number.isInteger(m.device)) await view({ method: 'set_device', device: m.device });
  if (m.range) await view({ method: 'set_x_window', x0: m.range[0], x1: m.range[1] });
  const st = await window.memviz.state();
  return { view: st ? st.view : null, device: st ? st.device : null };
}

const embed = new EmbedHost({
  open: (src, title) => open(typeof src === 'string' ? src : new File([src], title)),
  apply: applyEmbed,
}, query.get('origin'));

connectSession({
  frame(ticks) {
    showTicks(ticks);
    flameControls.onFrame();
    if (page.filesOpen > 0) links.schedule();
  },
  tooltip: showTooltip,
  panel: showPanel,
  wireCanvas,
  reopen: (src) => open(src, { keepError: true }),
});
connectTooltip((tip) => {
  embed.selection(tip);
  if (page.filesOpen > 0) links.schedule();
});

wireTheme($('theme-toggle'), setTheme);

/** `?mode=embedded`: an iframe in another page; the chrome it does not need is hidden. */
const embedded = query.get('mode') === 'embedded';
if (embedded) document.body.dataset.mode = 'embedded';
showLinkWait($('link-wait'), page.pendingHash);

wireCancel();
wireControls();

$('copy-link').addEventListener('click', () => links.copy($('link-status')));
// A document with no address of its own (the report in a notebook's <iframe srcdoc>, or one
// opened from a blob: or data: URL) has no link that could reopen this view.
if (['about:', 'blob:', 'data:'].includes(location.protocol)) $('copy-link').hidden = true;

els.copy.addEventListener('click', copyStack);
wireCanvas(els.canvas);

installApi();

wireFileInputs(els.input, els.overlay, (files) => { openAll(files); });
els.demo.addEventListener('click', () => { open('assets/demo.pickle'); });
setState('empty');
startViewer().catch((err) => showError(sentence(err.message)));
// Each ?url= in turn (`memviz open A B`: several), the last one shown.
const startUrls = urlParams();
if (startUrls.length > 0) openAll(startUrls);
