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

use memviz_analysis::segmap::{self, Item, SegMap};
use memviz_analysis::site::{SiteCache, SiteKind};
use memviz_analysis::state::{
    explain_oom, AllocRows, History, Kind, RowContext, State, BYTES_PER_EVENT,
};
use memviz_render::{rgba, Trapezoid, View};
use memviz_snapshot::{Action, Snapshot, StackId};

use crate::answer::{
    line_kinds, BlockLabel, ItemTip, MapItem, MapItemKind, OomAnswer, RowKind, SiteText, StateRow,
    StateSelection, StateViewState, TipLines, Tooltip,
};
use crate::camera::{Camera, PlotGeometry};
use crate::pane::{push_outline, Pane};
use crate::scene::Batch;
use crate::theme::Theme;
use crate::view::DrawableView;

/// Margin around the map, CSS px.
const MARGIN_CSS: f64 = 8.0;
/// A row is never drawn taller than this many CSS px when fitted.
const MAX_ROW_CSS: f64 = 48.0;
/// Rects per uploaded batch.
const BATCH_RECTS: usize = 1 << 15;
/// Map width in units (§6.5).
const MAP_W: f64 = 200.0;

/// Segment borders are drawn once a row is at least this many CSS px tall.
const BORDER_MIN_ROW_CSS: f64 = 5.0;
/// The selected event's block: a 2 px outline in the page's selection orange (both themes).
const EVENT_EDGE: u32 = rgba(240, 120, 0, 255);

fn color_of(c: [u8; 4]) -> u32 {
    rgba(c[0], c[1], c[2], c[3])
}

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

    /// The selected event: its row, the state's header and counts, and when the event is an
    /// `oom`, its explanation ([`OomAnswer`]: a label per biggest block, named by the site
    /// of the stack that allocated it, sizes as text).
    pub fn selection(&mut self, snap: &Snapshot, sites: &mut SiteCache) -> StateSelection {
        use memviz_analysis::format::size_long;
        let k = self.selected;
        let text = k.and_then(|k| self.history.row_text(snap, &self.ctx, k));
        let event = k.and_then(|k| self.history.event(snap, k));
        let tr = snap.trace(self.history.device);
        let is_oom = event
            .and_then(|e| tr.and_then(|t| t.action(e.row as usize)))
            .is_some_and(|a| a == Action::Oom);
        let oom = match (k, event) {
            (Some(k), Some(e)) if is_oom => {
                let device_free = tr.and_then(|t| t.device_free_of(e.row));
                let mut r = explain_oom(&self.state, k, e.size, device_free, e.stream, e.pool);
                // `OomReport::fill_stacks` with the view's `AllocRows` (built once per view).
                r.biggest_live_stacks = r
                    .biggest_live
                    .iter()
                    .map(|&(addr, _)| self.block_stack(snap, addr).unwrap_or(StackId::EMPTY))
                    .collect();
                Some(OomAnswer {
                    biggest_live_text: r
                        .biggest_live
                        .iter()
                        .zip(&r.biggest_live_stacks)
                        .map(|(&(addr, size), &stack)| {
                            let site = sites.site(snap, stack);
                            BlockLabel {
                                addr: addr.to_string(),
                                size: size_long(size),
                                text: self.item_title(snap, Item::Block(addr)),
                                line: if site.kind == SiteKind::None {
                                    "(no stack recorded)".to_string()
                                } else {
                                    site.display()
                                },
                                site: SiteText::of(site),
                            }
                        })
                        .collect(),
                    requested: size_long(r.requested_bytes),
                    device_free: r.device_free_bytes.map(size_long),
                    reserved_free: size_long(r.reserved_free_bytes),
                    largest_free: size_long(r.largest_free_block_bytes),
                    report: r,
                })
            }
            _ => None,
        };
        let frames = event.map_or_else(Vec::new, |e| {
            memviz_analysis::frames::format_stack(snap, e.stack, true)
        });
        StateSelection {
            event: k,
            python: memviz_analysis::frames::python_flags(&frames),
            kinds: line_kinds(&frames, sites.user_code()),
            explanation_lines: crate::answer::explanation_lines(&frames),
            frames,
            count: self.history.len(),
            header: segmap::header_text(&self.state),
            text,
            action: event.map(|e| e.action_name(snap, self.history.device).to_string()),
            reserved_bytes: self.state.reserved_bytes,
            allocated_bytes: self.state.allocated_bytes,
            segments: self.state.segments.len(),
            blocks: self.state.blocks.len(),
            rows: self.map.rows,
            oom,
            select_ms: self.select_ms,
            open_ms: self.open_ms,
            checkpoint_bytes: self.history.checkpoint_bytes(),
            interval: self.history.interval,
        }
    }

    /// Rows `[start, start + count)` of the event list (at most 1000).
    #[must_use]
    pub fn rows(&self, snap: &Snapshot, start: usize, count: usize) -> Vec<StateRow> {
        let n = self.history.len();
        let end = start.saturating_add(count.min(1000)).min(n);
        let tr = snap.trace(self.history.device);
        (start.min(end)..end)
            .filter_map(|k| {
                let e = self.history.event(snap, k)?;
                // One line a row: `(stream n)` follows the size instead of a line of its own,
                // and the default stream's `(stream 0)` is left out.
                let text = self.history.row_text(snap, &self.ctx, k)?;
                let text = match text.split_once('\n') {
                    Some((head, "(stream 0)")) => head.to_string(),
                    Some((head, rest)) => format!("{head}  {rest}"),
                    None => text,
                };
                let action = tr.and_then(|t| t.action(e.row as usize));
                let kind = match (action, e.kind) {
                    (Some(Action::Oom), _) => RowKind::Oom,
                    (Some(Action::Snapshot), _) => RowKind::Snapshot,
                    (
                        _,
                        Kind::SegmentAlloc
                        | Kind::SegmentFree
                        | Kind::SegmentMap
                        | Kind::SegmentUnmap,
                    ) => RowKind::Segment,
                    _ => RowKind::Block,
                };
                Some(StateRow { k, text, kind })
            })
            .collect()
    }

    /// The indices of the `oom` events.
    #[must_use]
    pub fn oom_events(&self, snap: &Snapshot) -> Vec<usize> {
        let tr = snap.trace(self.history.device);
        self.history
            .events(snap)
            .enumerate()
            .filter(|(_, e)| {
                tr.and_then(|t| t.action(e.row as usize))
                    .is_some_and(|a| a == Action::Oom)
            })
            .map(|(k, _)| k)
            .collect()
    }

    /// The next event after `from` (before it when `!forward`), wrapping around, whose row text
    /// contains `query` (case-insensitive); -1 when none does or the query is empty.
    #[must_use]
    pub fn search(&self, snap: &Snapshot, query: &str, from: i64, forward: bool) -> i64 {
        let n = self.history.len();
        let q = query.trim().to_lowercase();
        if n == 0 || q.is_empty() {
            return -1;
        }
        let start = if from < 0 {
            if forward {
                n - 1
            } else {
                0
            }
        } else {
            (from as usize).min(n - 1)
        };
        for i in 1..=n {
            let k = if forward {
                (start + i) % n
            } else {
                (start + n - (i % n)) % n
            };
            if let Some(t) = self.history.row_text(snap, &self.ctx, k) {
                if t.to_lowercase().contains(&q) {
                    return k as i64;
                }
            }
        }
        -1
    }

    // ----- scene -----------------------------------------------------------------------------

    fn fitted_rows(&self) -> f64 {
        let rows = f64::from(self.map.rows.max(1));
        let by_height = self.pane.geom.plot.height() / MAX_ROW_CSS;
        rows.max(by_height)
    }

    fn rebuild_scene(&mut self, refit: bool) {
        let mut batches = Vec::new();
        let mut cur: Vec<Trapezoid> = Vec::new();
        let push = |cur: &mut Vec<Trapezoid>, batches: &mut Vec<Batch>, t: Trapezoid| {
            cur.push(t);
            if cur.len() >= BATCH_RECTS {
                batches.push(Batch::unbounded([0.0, 0.0], std::mem::take(cur)));
            }
        };
        for r in self.map.rects() {
            let (x0, x1) = (r.x0 as f32, r.x1 as f32);
            let (bottom, top) = (-r.y1 as f32, -r.y0 as f32);
            // Segments' free space is a light grey, so that it shows even when the rows are
            // too thin for their borders (drawn by the overlay once a row is tall enough).
            let color = if matches!(r.item, Item::Segment(_)) {
                self.theme.segment_fill
            } else {
                color_of(r.color)
            };
            push(
                &mut cur,
                &mut batches,
                Trapezoid::rect(x0, x1, bottom, top, color),
            );
        }
        if !cur.is_empty() {
            batches.push(Batch::unbounded([0.0, 0.0], cur));
        }
        self.batches = batches;
        self.generation += 1;
        self.pane.needs_redraw = true;
        let rows = self.fitted_rows();
        let full_x = (-1.0, MAP_W + 1.0);
        let full_y = (-rows - 0.1, 0.1);
        if refit || self.pane.camera.full_x != full_x || self.pane.camera.full_y != full_y {
            self.pane.camera.full_x = full_x;
            self.pane.camera.full_y = full_y;
            self.pane.camera.set_zoom_cap(MAP_W / 1e6, 1e-3);
            if refit {
                self.pane.camera.fit();
            }
            self.pane.camera.clamp();
        }
    }

    /// The camera (data window of the map).
    #[must_use]
    pub fn camera(&self) -> &Camera {
        &self.pane.camera
    }

    // ----- camera and input ------------------------------------------------------------------

    /// The item under a canvas point.
    #[must_use]
    pub fn item_at(&self, css_x: f64, css_y: f64) -> Option<Item> {
        let [x, y] = self.pane.data_in_plot(css_x, css_y)?;
        self.map.hit(x, -y)
    }

    /// Canvas CSS px of an item's rect centre (for tests and jumps).
    #[must_use]
    pub fn item_center_css(&self, item: Item) -> Option<[f64; 2]> {
        let r = self.map.rect_of(item)?;
        Some(
            self.pane
                .camera
                .css_px_from_data(&self.pane.geom, [(r.x0 + r.x1) * 0.5, -(r.y0 + r.y1) * 0.5]),
        )
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

    fn item_title(&self, snap: &Snapshot, item: Item) -> String {
        self.map
            .item_text(snap, &self.ctx, &self.state, item)
            .and_then(|t| t.lines().next().map(str::to_string))
            .unwrap_or_default()
    }

    /// The tooltip of `item` ([`Tooltip::Item`]): its first line is the title, the rest the
    /// frames.
    #[must_use]
    pub fn item_tip(&self, snap: &Snapshot, item: Item, pinned: bool) -> Option<Tooltip> {
        let text = self.map.item_text(snap, &self.ctx, &self.state, item)?;
        let mut lines = text.lines().map(str::to_string);
        let title = lines.next().unwrap_or_default();
        let frames: Vec<String> = lines.collect();
        let (kind, addr) = match item {
            Item::Segment(a) => (MapItemKind::Segment, a),
            Item::Block(a) => (MapItemKind::Block, a),
            Item::Waste(a) => (MapItemKind::Waste, a),
        };
        Some(Tooltip::Item(ItemTip {
            lines: TipLines {
                title,
                python: memviz_analysis::frames::python_flags(&frames),
                explanation_lines: crate::answer::explanation_lines(&frames),
                frames,
                text,
                pinned,
                ..TipLines::default()
            },
            item: MapItem {
                kind,
                addr: addr.to_string(),
            },
            // The app adds the block's site and the frame kinds (it has the site cache).
            site: None,
        }))
    }

    /// Pins the block at `addr` (or the segment, when no block starts there) and centres the
    /// camera on it, zoomed so that it is at least a fifth of the plot wide. Returns its
    /// tooltip.
    pub fn focus(&mut self, snap: &Snapshot, addr: u64) -> Option<Tooltip> {
        let item = if self.state.blocks.contains_key(&addr) {
            Item::Block(addr)
        } else {
            Item::Segment(addr)
        };
        let r = self.map.rect_of(item)?;
        let cx = (r.x0 + r.x1) * 0.5;
        let cy = -(r.y0 + r.y1) * 0.5;
        let w = ((r.x1 - r.x0) * 5.0)
            .max(self.pane.camera.min_span.0)
            .min(self.pane.camera.x_range.1 - self.pane.camera.x_range.0);
        let h = (self.pane.camera.y_range.1 - self.pane.camera.y_range.0).min(w.max(8.0));
        self.pane.camera.x_range = (cx - w * 0.5, cx + w * 0.5);
        self.pane.camera.y_range = (cy - h * 0.5, cy + h * 0.5);
        self.pane.camera.clamp();
        self.pinned = Some(item);
        self.hover = Some(item);
        self.pane.needs_redraw = true;
        self.item_tip(snap, item, true)
    }
}

impl DrawableView for StateView {
    /// Sets the canvas size.
    fn resize(&mut self, css_w: f64, css_h: f64, dpr: f64) {
        self.pane.resize(css_w, css_h, dpr);
        self.rebuild_scene(false);
        self.pane.camera.clamp();
    }

    fn fit(&mut self) {
        self.pane.fit();
    }

    fn zoom_at(&mut self, css_x: f64, css_y: f64, factor: f64) {
        self.pane.zoom_at(css_x, css_y, factor);
    }

    fn pan_by(&mut self, dx: f64, dy: f64) {
        self.pane.pan_by(dx, dy);
    }

    /// Keys: `+`/`-` zoom, `0` fits, WASD / arrows pan.
    fn key(&mut self, key: &str) -> bool {
        self.pane.key(key)
    }

    fn pointer_down(&mut self, css_x: f64, css_y: f64) {
        self.pane.pointer_down(css_x, css_y);
    }

    fn pointer_move(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        if self.pane.drag_move(css_x, css_y) {
            None
        } else {
            self.hover(snap, css_x, css_y)
        }
    }

    fn pointer_up(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        if self.pane.release(css_x, css_y) {
            self.click(snap, css_x, css_y)
        } else {
            self.hover(snap, css_x, css_y)
        }
    }

    fn hover(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let hit = self.item_at(css_x, css_y);
        if hit != self.hover {
            self.hover = hit;
            self.pane.needs_redraw = true;
        }
        match self.pinned {
            Some(p) => self.item_tip(snap, p, true),
            None => self.item_tip(snap, hit?, false),
        }
    }

    fn pointer_leave(&mut self) {
        self.pane.cancel_drag();
        if self.hover.take().is_some() {
            self.pane.needs_redraw = true;
        }
    }

    fn click(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        self.pane.needs_redraw = true;
        if self.pinned.take().is_some() {
            return self.hover(snap, css_x, css_y);
        }
        let hit = self.item_at(css_x, css_y)?;
        self.pinned = Some(hit);
        self.hover = Some(hit);
        self.item_tip(snap, hit, true)
    }

    /// Hover/pinned outline and the margin masks.
    fn overlay(&mut self) -> Batch {
        let cam = self.pane.camera;
        let geom = self.pane.geom;
        let origin = self.pane.overlay_origin();
        let mut out = Vec::new();
        let rel = |x: f64, y: f64| ((x - origin[0]) as f32, (y - origin[1]) as f32);
        // Segment borders (black, 1 px) of the visible segments, when rows are tall enough.
        let row_css = geom.plot.height() / (cam.y_range.1 - cam.y_range.0).max(1e-9);
        if row_css >= BORDER_MIN_ROW_CSS {
            let (xl, xh) = cam.x_range;
            let (yl, yh) = (-cam.y_range.1, -cam.y_range.0);
            for r in self
                .map
                .rects()
                .take_while(|r| matches!(r.item, Item::Segment(_)))
            {
                if r.x1 < xl || r.x0 > xh || r.y1 < yl || r.y0 > yh {
                    continue;
                }
                let (x0, b) = rel(r.x0, -r.y1);
                let (x1, t) = rel(r.x1, -r.y0);
                push_outline(&mut out, [x0, x1, b, t], self.theme.map_border);
            }
        }
        if let Some(r) = self.event_item.and_then(|i| self.map.rect_of(i)) {
            let (x0, b) = rel(r.x0, -r.y1);
            let (x1, t) = rel(r.x1, -r.y0);
            push_outline(&mut out, [x0 - 1.0, x1 + 1.0, b - 1.0, t + 1.0], EVENT_EDGE);
            push_outline(&mut out, [x0, x1, b, t], EVENT_EDGE);
        }
        if let Some(r) = self.pinned.or(self.hover).and_then(|i| self.map.rect_of(i)) {
            let (x0, b) = rel(r.x0, -r.y1);
            let (x1, t) = rel(r.x1, -r.y0);
            push_outline(&mut out, [x0, x1, b, t], self.theme.map_hover);
        }
        self.pane.margin_masks(&mut out, origin);
        Batch::unbounded(origin, out)
    }

    /// Segments' fill, borders, hover outline and masks in `theme`'s colours (the map is
    /// rebuilt once when it changes).
    fn set_theme(&mut self, theme: &Theme) {
        if self.theme != *theme {
            self.theme = *theme;
            self.pane.bg = theme.bg;
            self.rebuild_scene(false);
        }
    }

    crate::pane::pane_view_methods!();
}
