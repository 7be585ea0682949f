//! The app's side of the Allocator State History (a view of the registry, built on first use
//! for the current file and device): its selection, rows, OOM events, search and focus.

use memviz_snapshot::Snapshot;

use super::current::Current;
use super::ViewKind;
use crate::answer::{MapItemKind, StateRow, StateSelection, Tooltip};
use crate::state_view::StateView;

impl Current<'_> {
    /// The state history of the current file and device, built on first use, with the file's
    /// snapshot and site cache.
    fn sv_built(
        &mut self,
    ) -> Option<(
        &Snapshot,
        &mut memviz_analysis::site::SiteCache,
        &mut StateView,
    )> {
        self.ensure(ViewKind::State);
        let key = self.sel.key(ViewKind::State);
        let f = self.files.get_mut(self.sel.file)?;
        let v = self.views.get_as_mut::<StateView>(key)?;
        Some((&f.snap, &mut f.sites, v))
    }

    /// The state history shown, when the State History view is on.
    fn sv(&mut self) -> Option<(&Snapshot, &mut StateView)> {
        if self.sel.shown != ViewKind::State {
            return None;
        }
        self.sv_built().map(|(snap, _, v)| (snap, v))
    }

    /// Selects event `k` of the state history (-1: the last): the selection.
    pub fn state_select(&mut self, k: i64) -> Option<StateSelection> {
        *self.needs_redraw = true;
        let (snap, sites, v) = self.sv_built()?;
        Some(v.select(snap, k, sites))
    }

    /// Rows of the state history's event list ([`StateView::rows`]).
    pub fn state_rows(&mut self, start: usize, count: usize) -> Vec<StateRow> {
        self.sv_built()
            .map(|(snap, _, v)| v.rows(snap, start, count))
            .unwrap_or_default()
    }

    /// The indices of the `oom` events of the state history.
    pub fn state_ooms(&mut self) -> Vec<usize> {
        self.sv_built()
            .map(|(snap, _, v)| v.oom_events(snap))
            .unwrap_or_default()
    }

    /// The next (or previous) event whose row contains `query`, or -1.
    pub fn state_search(&mut self, query: &str, from: i64, forward: bool) -> i64 {
        self.sv_built()
            .map_or(-1, |(snap, _, v)| v.search(snap, query, from, forward))
    }

    /// Pins and shows the block at `addr` in the map; its tooltip.
    pub fn state_focus(&mut self, addr: u64) -> Option<Tooltip> {
        *self.needs_redraw = true;
        let tip = {
            let (snap, v) = self.sv()?;
            v.focus(snap, addr)
        };
        self.finish_tip(tip)
    }

    /// Canvas CSS px of the centre of a map item (a segment, block or waste at `addr`).
    pub fn state_item_center(&mut self, kind: MapItemKind, addr: u64) -> Option<[f64; 2]> {
        use memviz_present::segmap::Item;
        let item = match kind {
            MapItemKind::Segment => Item::Segment(addr),
            MapItemKind::Block => Item::Block(addr),
            MapItemKind::Waste => Item::Waste(addr),
        };
        let (_, v) = self.sv()?;
        v.item_center_css(item)
    }
}
