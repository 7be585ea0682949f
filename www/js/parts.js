// parts.js: the parts of the page that need no other module of the shell: the details pane
// beside the plot, the drawer of panels, the keyboard help and the plot's first-use hint.

import { DetailsPane } from './details.js';
import { Drawer } from './drawer.js';
import { wireHelp, firstUseHint } from './help.js';
import { $, els } from './page_state.js';

export const details = new DetailsPane({
  pane: $('details-pane'),
  splitter: $('pane-splitter'),
  toggle: $('details-toggle'),
  tooltip: $('tooltip'),
  title: $('tooltip-title'),
  body: $('tooltip-body'),
  actions: $('tooltip-actions'),
  empty: $('details-empty'),
  emptyText: $('details-empty-text'),
  hint: $('hover-hint'),
});
export const drawer = new Drawer($('tabs'));
export const help = wireHelp({ dialog: $('help'), open: $('help-button'), close: $('help-close') });
export const plotHint = firstUseHint($('plot-hint'));
plotHint.watch(els.canvas);
