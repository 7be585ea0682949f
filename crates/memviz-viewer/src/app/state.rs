//! The app's side of the Allocator State History: built on first use for the current (file,
//! device), its selection, rows, OOM events, search and focus.

use memviz_snapshot::Snapshot;

use super::{ActiveView, App, DrawableView as _, ViewKind};
use crate::answer::{MapItemKind, StateRow, StateSelection, Tooltip};
use crate::state_view::StateView;

impl App {
    pub(super) fn ensure_state_view(&mut self) {
        let key = (self.current, self.device);
        if self.state_view.as_ref().is_some_and(|(k, _)| *k == key) {
            return;
        }
        if !self.fits(ViewKind::State) {
            self.state_view = None;
            return;
        }
        self.state_view = self
            .files
            .get(self.current)
            .map(|f| (key, StateView::new(&f.snap, self.device, &self.geom)));
        if let Some((_, v)) = self.state_view.as_mut() {
            v.set_theme(&self.frame.theme);
        }
    }

    /// The state history shown, when the State History view is on.
    fn sv(&mut self) -> Option<(&Snapshot, &mut StateView)> {
        if self.active != ActiveView::State {
            return None;
        }
        let (key, sv) = self.state_view.as_mut()?;
        if *key != (self.current, self.device) {
            return None;
        }
        let snap = &self.files.get(key.0)?.snap;
        Some((snap, sv))
    }

    /// The state history of the current file and device (built on first use).
    pub fn state_view(&mut self) -> Option<&StateView> {
        self.ensure_state_view();
        self.state_view.as_ref().map(|(_, v)| v)
    }

    /// Selects event `k` of the state history (-1: the last): the selection.
    pub fn state_select(&mut self, k: i64) -> Option<StateSelection> {
        self.ensure_state_view();
        self.frame.needs_redraw = true;
        let f = self.files.get_mut(self.current)?;
        let (_, v) = self.state_view.as_mut()?;
        Some(v.select(&f.snap, k, &mut f.sites))
    }

    /// Rows of the state history's event list ([`StateView::rows`]).
    pub fn state_rows(&mut self, start: usize, count: usize) -> Vec<StateRow> {
        self.ensure_state_view();
        match (self.files.get(self.current), self.state_view.as_ref()) {
            (Some(f), Some((_, v))) => v.rows(&f.snap, start, count),
            _ => Vec::new(),
        }
    }

    /// The indices of the `oom` events of the state history.
    pub fn state_ooms(&mut self) -> Vec<usize> {
        self.ensure_state_view();
        match (self.files.get(self.current), self.state_view.as_ref()) {
            (Some(f), Some((_, v))) => v.oom_events(&f.snap),
            _ => Vec::new(),
        }
    }

    /// The next (or previous) event whose row contains `query`, or -1.
    pub fn state_search(&mut self, query: &str, from: i64, forward: bool) -> i64 {
        self.ensure_state_view();
        match (self.files.get(self.current), self.state_view.as_ref()) {
            (Some(f), Some((_, v))) => v.search(&f.snap, query, from, forward),
            _ => -1,
        }
    }

    /// Pins and shows the block at `addr` in the map; its tooltip.
    pub fn state_focus(&mut self, addr: u64) -> Option<Tooltip> {
        self.frame.needs_redraw = true;
        let tip = {
            let (snap, v) = self.sv()?;
            v.focus(snap, addr)
        };
        self.finish_tip(tip)
    }

    /// Canvas CSS px of the centre of a map item (a segment, block or waste at `addr`).
    pub fn state_item_center(&mut self, kind: MapItemKind, addr: u64) -> Option<[f64; 2]> {
        use memviz_analysis::segmap::Item;
        let item = match kind {
            MapItemKind::Segment => Item::Segment(addr),
            MapItemKind::Block => Item::Block(addr),
            MapItemKind::Waste => Item::Waste(addr),
        };
        let (_, v) = self.sv()?;
        v.item_center_css(item)
    }
}
