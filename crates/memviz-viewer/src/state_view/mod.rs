//! [`StateView`]: the Allocator State History (SEMANTICS §6) of one (file, device): the merged
//! event list, the selected event, and the map of every segment and block after it, drawn as
//! rectangles through the same renderer and camera as the timeline.
//!
//! # How it works
//! Opening builds a [`History`] once (an index of the merged events into the trace, and
//! checkpoints of the allocator state within [`BYTES_PER_EVENT`] bytes per event), so selecting
//! an event replays at most `interval` undo steps from the nearest later checkpoint. The selected [`State`] is
//! packed by [`SegMap::build`] (§6.5: rows of segments sorted by size, blocks inside, rounding
//! waste in red) into map units (x ∈ [0, 200], one unit per row in y); data space here is
//! x = map x, y = −map y (row 0 at the top). The map is one scene uploaded per selection; zoom
//! and pan only move the camera. A hover finds the topmost item with [`SegMap::hit`] and
//! returns its §6.5 text in the timeline tooltip's JSON shape.

mod input;
mod scene;
mod selection;

use memviz_present::segmap::{Item, SegMap};
use memviz_analysis::site::SiteCache;
use memviz_analysis::state::{AllocRows, History, RowContext, State, BYTES_PER_EVENT};
use memviz_snapshot::{Snapshot, StackId};

use crate::answer::{StateSelection, StateViewState};
use crate::camera::{Camera, PlotGeometry};
use crate::pane::Pane;
use crate::scene::Batch;
use crate::theme::Theme;

/// Margin around the map, CSS px.
const MARGIN_CSS: f64 = 8.0;

/// One device's state history, its selection and its map.
pub struct StateView {
    history: History,
    ctx: RowContext,
    /// The `alloc` row behind a block restored by undoing its free (built on first use), so
    /// a block is named by the stack that allocated it.
    allocs: AllocRows,
    selected: Option<usize>,
    state: State,
    map: SegMap,
    /// Geometry, camera, redraw flag and drag state.
    pane: Pane,
    hover: Option<Item>,
    pinned: Option<Item>,
    /// The selected event's block or segment in the map (outlined), when it is there.
    event_item: Option<Item>,
    generation: u64,
    batches: Vec<Batch>,
    /// Colours of the segments, borders and hover outline (light or dark).
    theme: Theme,
    /// Build time of the history (events + checkpoints), ms.
    pub open_ms: f64,
    /// Time of the last selection (replay + map), ms.
    pub select_ms: f64,
}

impl StateView {
    /// Builds the history of `device` and selects the last event (as memory_viz does).
    #[must_use]
    pub fn new(snap: &Snapshot, device: i64, geom: &PlotGeometry) -> Self {
        let t0 = crate::scene::now_ms();
        let history = History::build_within(snap, device, BYTES_PER_EVENT);
        let ctx = RowContext::new(snap, device);
        let state = history.final_state(snap);
        let map = SegMap::build(&state);
        let mut v = StateView {
            selected: history.len().checked_sub(1),
            history,
            ctx,
            allocs: AllocRows::new(),
            state,
            map,
            pane: Pane::new(geom.css_w, geom.css_h, geom.device_pixel_ratio, MARGIN_CSS),
            hover: None,
            pinned: None,
            event_item: None,
            generation: 0,
            theme: Theme::LIGHT,
            batches: Vec::new(),
            open_ms: 0.0,
            select_ms: 0.0,
        };
        v.event_item = v.find_event_item(snap);
        v.rebuild_scene(true);
        v.open_ms = crate::scene::now_ms() - t0;
        v
    }

    /// Number of events in the list.
    #[must_use]
    pub fn event_count(&self) -> usize {
        self.history.len()
    }

    /// The selected event (`None`: no events; the map shows the final snapshot).
    #[must_use]
    pub fn selected(&self) -> Option<usize> {
        self.selected
    }

    /// The state shown.
    #[must_use]
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The map shown.
    #[must_use]
    pub fn map(&self) -> &SegMap {
        &self.map
    }

    /// Heap bytes of the checkpoints.
    #[must_use]
    pub fn checkpoint_bytes(&self) -> usize {
        self.history.checkpoint_bytes()
    }

    /// Selects event `k` (clamped to the list): replays from the nearest checkpoint and
    /// rebuilds the map. Returns the selection ([`StateView::selection`]), its sites named by
    /// `sites` (made for `snap`).
    pub fn select(&mut self, snap: &Snapshot, k: i64, sites: &mut SiteCache) -> StateSelection {
        let n = self.history.len();
        if n > 0 {
            let k = if k < 0 {
                n - 1
            } else {
                (k as usize).min(n - 1)
            };
            let t0 = crate::scene::now_ms();
            if self.selected != Some(k) {
                if let Some(s) = self.history.state_after(snap, k) {
                    self.state = s;
                    self.map = SegMap::build(&self.state);
                    self.selected = Some(k);
                    self.hover = None;
                    self.pinned = None;
                    self.event_item = self.find_event_item(snap);
                    self.rebuild_scene(false);
                }
            }
            self.select_ms = crate::scene::now_ms() - t0;
        }
        self.selection(snap, sites)
    }

    /// The stack that allocated the block at `addr` of the state shown
    /// ([`AllocRows::stack`]: not the free's of a block restored by undoing it).
    pub fn block_stack(&mut self, snap: &Snapshot, addr: u64) -> Option<StackId> {
        let b = self.state.blocks.get(&addr)?;
        Some(self.allocs.stack(snap, self.history.device, b))
    }

    /// The map item the selected event names: the block at its address (an alloc, or a free
    /// whose block is still in the map as inactive), else the segment at it.
    fn find_event_item(&self, snap: &Snapshot) -> Option<Item> {
        let e = self.history.event(snap, self.selected?)?;
        [Item::Block(e.addr), Item::Segment(e.addr)]
            .into_iter()
            .find(|&i| self.map.rect_of(i).is_some())
    }

    /// The camera (data window of the map).
    #[must_use]
    pub fn camera(&self) -> &Camera {
        &self.pane.camera
    }

    /// The view's state: camera, selection, counts.
    #[must_use]
    pub fn view_state(&self) -> StateViewState {
        StateViewState {
            event: self.selected,
            count: self.history.len(),
            x_range: [self.pane.camera.x_range.0, self.pane.camera.x_range.1],
            y_range: [self.pane.camera.y_range.0, self.pane.camera.y_range.1],
            rows: self.map.rows,
            rects: self.map.rect_count(),
            segments: self.state.segments.len(),
            blocks: self.state.blocks.len(),
            reserved_bytes: self.state.reserved_bytes,
            allocated_bytes: self.state.allocated_bytes,
            hover: self.hover.map(|i| format!("{i:?}")),
            pinned: self.pinned.map(|i| format!("{i:?}")),
            open_ms: self.open_ms,
            select_ms: self.select_ms,
            checkpoint_bytes: self.history.checkpoint_bytes(),
        }
    }
}
