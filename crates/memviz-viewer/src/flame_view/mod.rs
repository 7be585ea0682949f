//! [`FlameView`]: the memory flamegraph of one (file, device), drawn as an icicle chart (the
//! root at the top, callees below) through the same renderer and camera as the timeline.
//!
//! # How it works
//! [`flame::folded`] gives live bytes by stack at a moment of the Active Memory Timeline (the
//! peak by default, any timestep or trace event, or bytes × lifetime over the trace) and
//! [`FlameTree::build`] turns them into a tree, kept whole: zooming only changes the *zoom
//! root*, a node of that tree whose subtree [`FlameTree::rects`] lays out to the full width
//! (node ids everywhere, tooltips, breadcrumb and [`FlameView::zoom_to`] are ids of the full
//! tree).
//!
//! *Data space.* x ∈ [0, 1] is the zoom root's width; the row of depth `d` (0 = the zoom root)
//! is y ∈ [−d − 1, −d] (a small gap at its bottom), so y = 0 is the top. Every rect of the
//! subtree at least 1e-6 of the width wide is one [`Trapezoid`] (the shader widens thinner ones
//! to a device pixel), coloured by a warm palette from [`flame::color_hash`] of its name, in
//! batches with bounding boxes, uploaded once per tree or zoom (the generation changes); the
//! camera only moves the view. The overlay (rebuilt per frame) draws 1 px separators at the left
//! edge of visible rects wide enough to carry one, the hover outline and the margin masks.
//!
//! *Camera.* Fitted, the whole subtree shows (rows are never taller than [`MAX_ROW_CSS`]: a
//! shallow tree leaves space below). The wheel zooms at the cursor in x, and in y only until
//! rows reach [`MAX_ROW_CSS`]; a drag pans; a click without travel zooms into the node clicked
//! (clicking the zoom root zooms out one level).
//!
//! *Text.* The GPU draws none: [`FlameView::labels_json`] gives the rects wide enough for a
//! name, in CSS px, for the shell to overlay; tooltips and the breadcrumb are JSON.

use crate::answer::{
    Crumb, FlameDiffTotals, FlameLabel, FlameMoment, FlameState, NodeTip, TipLines, Tooltip,
};
use memviz_analysis::flame::{
    self, At, FlameOptions, FlameRect, FlameTree, NodeId, ValueUnit, ROOT_NAME,
};
use memviz_analysis::format::{count, size_long};
use memviz_analysis::layout::Layout;
use memviz_analysis::timeline::Timeline;
use memviz_render::{rgba, Trapezoid, View};
use memviz_snapshot::Snapshot;

use crate::camera::{Camera, PlotGeometry};
use crate::pane::{push_outline, Pane};
use crate::scene::Batch;
use crate::view::DrawableView;

mod text;

/// Margin around the chart, CSS px.
const MARGIN_CSS: f64 = 8.0;
/// A row is never drawn taller than this many CSS px (fitted or zoomed).
pub const MAX_ROW_CSS: f64 = 20.0;
/// The empty band at the bottom of each row, in rows.
const ROW_GAP: f64 = 0.08;
/// Rects narrower than this fraction of the zoom root are not drawn.
const MIN_RECT_W: f64 = 1e-6;
/// A label is given for rects at least this many CSS px wide (visible part).
pub const LABEL_MIN_CSS: f64 = 40.0;
/// … and rows at least this many CSS px tall.
const LABEL_MIN_ROW_CSS: f64 = 10.0;
/// Fitting shows the top rows at least this many CSS px tall (labels stay readable, as in
/// speedscope); deeper rows are reached by panning down.
const FIT_ROW_CSS: f64 = 17.0;
/// At most this many labels per call.
const MAX_LABELS: usize = 4000;
/// Visible rects at least this many CSS px wide get a separator at their left edge.
const SEPARATOR_MIN_CSS: f64 = 3.0;
/// Rects per uploaded batch.
const BATCH_RECTS: usize = 1 << 15;

const HOVER_EDGE: u32 = rgba(30, 100, 220, 255);
/// Nodes without search matches.
const DIM: u32 = rgba(226, 226, 226, 255);
/// Free space, rounding gaps and inactive blocks in the reserved-memory tree.
const NEUTRAL: u32 = rgba(176, 180, 186, 255);
/// A diff node whose sides are equal.
const SAME: u32 = rgba(214, 214, 214, 255);

/// The colour of a diff node with `a` bytes in A and `b` in B: [`SAME`] when equal, else
/// mixed from it toward red (growth) or blue (shrink) by `0.3 + 0.7 · |b − a| / max(a, b)`.
#[must_use]
pub fn diff_color(a: u64, b: u64) -> u32 {
    if a == b {
        return SAME;
    }
    let rel = a.abs_diff(b) as f64 / a.max(b) as f64;
    let t = 0.3 + 0.7 * rel.clamp(0.0, 1.0);
    let to: [f64; 3] = if b > a {
        [214.0, 39.0, 40.0]
    } else {
        [31.0, 119.0, 180.0]
    };
    let mix = |i: usize| (214.0 + (to[i] - 214.0) * t).round() as u8;
    rgba(mix(0), mix(1), mix(2), 255)
}

/// The colour of a frame name: flamegraph.pl's "hot" palette (reds, oranges, yellows) driven by
/// the bytes of `hash` (deterministic).
#[must_use]
pub fn warm_color(hash: u32) -> u32 {
    let [a, b, c, _] = hash.to_le_bytes();
    let v = |x: u8| f64::from(x) / 255.0;
    let r = 205.0 + 50.0 * v(a);
    let g = 230.0 * v(b);
    let bl = 55.0 * v(c);
    rgba(r as u8, g as u8, bl as u8, 255)
}

fn value_text(unit: ValueUnit, v: u64) -> String {
    match unit {
        ValueUnit::Bytes => size_long(v),
        ValueUnit::ByteSteps => format!("{} byte·steps", count(v)),
    }
}

/// The function name of a frame printed `filename:line:name` (what follows the first
/// `:<digits>:`), or the whole text when it has no such part (`all`, `<no frames>`).
#[must_use]
pub fn short_name(frame: &str) -> &str {
    let b = frame.as_bytes();
    let mut i = 0;
    while let Some(off) = frame.get(i..).and_then(|s| s.find(':')) {
        let start = i + off + 1;
        let digits = b
            .get(start..)
            .map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count());
        let end = start + digits;
        if digits > 0 && b.get(end) == Some(&b':') {
            if let Some(name) = frame.get(end + 1..).filter(|n| !n.is_empty()) {
                return name;
            }
        }
        i = start;
    }
    frame
}

/// A rect's place in data space: `(x0, x1, bottom, top)`.
fn rect_data(x0: f64, x1: f64, depth: u32) -> (f64, f64, f64, f64) {
    let top = -f64::from(depth);
    (x0, x1, top - 1.0 + ROW_GAP, top)
}

/// The flamegraph of one device at one moment, its zoom and its camera.
pub struct FlameView {
    tree: FlameTree,
    opts: FlameOptions,
    at: At,
    /// The timestep the moment resolves to (`None`: it does not resolve).
    at_step: Option<u32>,
    /// The zoom root, a node of `tree`.
    zoom_root: NodeId,
    /// The drawn rects of the zoom root's subtree ([`FlameTree::rects`] minus the thin ones).
    rects: Vec<FlameRect>,
    /// Rows of the zoom root's subtree (≥ 1).
    rows: u32,
    /// Geometry, camera, redraw flag and drag state.
    pane: Pane,
    hover: Option<NodeId>,
    generation: u64,
    batches: Vec<Batch>,
    /// Time of the last tree build (folded stacks + tree), ms.
    pub build_ms: f64,
    /// Search matches (sorted element ids of the Active Memory Timeline) and "only matches".
    matches: Option<(Vec<u32>, bool)>,
    /// Names of files A and B while a diff tree is shown.
    diff: Option<(String, String)>,
    /// The reserved-memory tree is shown ([`FlameView::show_reserved`]).
    reserved: bool,
}

impl FlameView {
    /// The flamegraph of `device` at the peak (frames filtered, live bytes).
    #[must_use]
    pub fn new(
        snap: &Snapshot,
        device: i64,
        timeline: &Timeline,
        layout: &Layout,
        geom: &PlotGeometry,
    ) -> Self {
        let mut v = FlameView {
            tree: FlameTree::build(&[], ValueUnit::Bytes),
            opts: FlameOptions::default(),
            at: At::Peak,
            at_step: None,
            zoom_root: 0,
            rects: Vec::new(),
            rows: 1,
            pane: Pane::new(geom.css_w, geom.css_h, geom.device_pixel_ratio, MARGIN_CSS),
            hover: None,
            generation: 0,
            batches: Vec::new(),
            build_ms: 0.0,
            matches: None,
            diff: None,
            reserved: false,
        };
        v.set_options(
            snap,
            device,
            timeline,
            layout,
            At::Peak,
            FlameOptions::default(),
        );
        v
    }

    /// Rebuilds the tree at `at` (a timestep, an event or the peak), or over the whole trace in
    /// bytes × lifetime when `lifetime`, with every frame when `all_frames`; the zoom goes back
    /// to the root and the camera fits. Returns [`FlameView::state`].
    // The shell's call, flat: the view's data plus the three controls.
    #[allow(clippy::too_many_arguments)]
    pub fn set_moment(
        &mut self,
        snap: &Snapshot,
        device: i64,
        timeline: &Timeline,
        layout: &Layout,
        at: At,
        lifetime: bool,
        all_frames: bool,
    ) -> FlameState {
        let opts = FlameOptions {
            all_frames,
            lifetime,
            step_range: None,
        };
        self.set_options(snap, device, timeline, layout, at, opts)
    }

    /// [`FlameView::set_moment`] with every option, e.g. a lifetime step range.
    pub fn set_options(
        &mut self,
        snap: &Snapshot,
        device: i64,
        timeline: &Timeline,
        layout: &Layout,
        at: At,
        opts: FlameOptions,
    ) -> FlameState {
        self.at = at;
        self.opts = opts;
        self.diff = None;
        self.reserved = false;
        self.rebuild_tree(snap, device, timeline, layout, false);
        self.state()
    }

    /// Marks search matches (element ids of the Active Memory Timeline this view was built
    /// from): nodes with matched bytes keep their colour, the others turn faint grey; `only`
    /// draws the flamegraph of the matches alone. `None` clears. The moment, options and (when
    /// the frame path still exists) the zoom are kept; the same matches again change nothing.
    pub fn set_matches(
        &mut self,
        snap: &Snapshot,
        device: i64,
        timeline: &Timeline,
        layout: &Layout,
        matches: Option<(Vec<u32>, bool)>,
    ) {
        let matches = matches.map(|(mut els, only)| {
            els.sort_unstable();
            els.dedup();
            (els, only)
        });
        if matches == self.matches {
            return;
        }
        self.matches = matches;
        if self.diff.is_none() && !self.reserved {
            self.rebuild_tree(snap, device, timeline, layout, true);
        }
    }

    /// Shows a diff tree ([`FlameTree::build_diff`]) of files `a` and `b`: red where B grew,
    /// blue where it shrank, grey where equal; widths are the larger side. Set a moment
    /// ([`FlameView::set_options`]) to leave it.
    pub fn show_diff(&mut self, tree: FlameTree, a: &str, b: &str) -> FlameState {
        self.tree = tree;
        self.diff = Some((a.to_owned(), b.to_owned()));
        self.reserved = false;
        self.at_step = None;
        self.zoom_root = 0;
        self.hover = None;
        self.pane.cancel_drag();
        self.rebuild_scene(true);
        self.state()
    }

    /// Shows the tree of reserved memory at the end (built from
    /// [`memviz_analysis::memory_viz::reserved_entries`]: stream, segment, block state, frames):
    /// free space, rounding gaps and inactive blocks in a neutral grey, the rest in the warm
    /// palette. Search matches do not apply (it is not a moment of the timeline). Set a moment
    /// ([`FlameView::set_options`]) to leave it.
    pub fn show_reserved(&mut self, tree: FlameTree) -> FlameState {
        let t0 = crate::scene::now_ms();
        self.tree = tree;
        self.diff = None;
        self.reserved = true;
        self.at = At::Peak;
        self.opts = FlameOptions::default();
        self.at_step = None;
        self.zoom_root = 0;
        self.hover = None;
        self.pane.cancel_drag();
        self.rebuild_scene(true);
        self.build_ms = crate::scene::now_ms() - t0;
        self.state()
    }

    /// Whether the reserved-memory tree is shown.
    #[must_use]
    pub fn is_reserved(&self) -> bool {
        self.reserved
    }

    /// Rebuilds the tree at `self.at` with `self.opts` and the matches; `keep_zoom`: zoom to
    /// the same frame path again when it exists, else the root.
    fn rebuild_tree(
        &mut self,
        snap: &Snapshot,
        device: i64,
        timeline: &Timeline,
        layout: &Layout,
        keep_zoom: bool,
    ) {
        let t0 = crate::scene::now_ms();
        let path: Vec<String> = if keep_zoom {
            self.stack_of(self.zoom_root)
        } else {
            Vec::new()
        };
        let (at, opts) = (self.at, self.opts);
        let unit = if opts.lifetime {
            ValueUnit::ByteSteps
        } else {
            ValueUnit::Bytes
        };
        self.tree = match &self.matches {
            None => FlameTree::build(
                &flame::folded(snap, device, timeline, layout, at, &opts),
                unit,
            ),
            Some((els, only)) => {
                let hits = flame::folded_of(snap, device, timeline, layout, at, &opts, Some(els));
                if *only {
                    FlameTree::build_marked(&hits, &hits, unit)
                } else {
                    let all = flame::folded(snap, device, timeline, layout, at, &opts);
                    FlameTree::build_marked(&all, &hits, unit)
                }
            }
        };
        let events = snap.trace(device).map_or(0, |t| t.len());
        self.at_step = flame::resolve(layout, events, at).ok().map(|m| m.step);
        self.zoom_root = self.find_path(&path).unwrap_or(0);
        self.hover = None;
        self.pane.cancel_drag();
        self.rebuild_scene(!keep_zoom);
        self.build_ms = crate::scene::now_ms() - t0;
    }

    /// The node reached from the root through children named `path`, if any.
    fn find_path(&self, path: &[String]) -> Option<NodeId> {
        let mut cur: NodeId = 0;
        for name in path {
            let n = self.tree.node(cur)?;
            cur = *n
                .children
                .iter()
                .find(|&&c| self.tree.node(c).is_some_and(|c| &c.name == name))?;
        }
        Some(cur)
    }

    /// The colour of a node: the warm palette; in a marked tree faint grey when nothing under it
    /// matched; in a diff tree red (B grew) or blue (B shrank), stronger with the relative
    /// change, grey when equal.
    fn node_color(&self, r: &FlameRect) -> u32 {
        let Some(n) = self.tree.node(r.node) else {
            return warm_color(r.color_hash);
        };
        if self.tree.diff {
            return diff_color(n.pair[0], n.pair[1]);
        }
        if self.tree.marked && n.matched == 0 {
            return DIM;
        }
        if self.reserved && memviz_analysis::memory_viz::is_marker_frame(&n.name) {
            return NEUTRAL;
        }
        warm_color(r.color_hash)
    }

    /// The whole tree (node ids of every method are ids of it).
    #[must_use]
    pub fn tree(&self) -> &FlameTree {
        &self.tree
    }

    /// The current zoom root.
    #[must_use]
    pub fn zoom_root(&self) -> NodeId {
        self.zoom_root
    }

    /// The rects drawn: `tree().rects(zoom_root())` minus those under 1e-6 of the width.
    #[must_use]
    pub fn rects(&self) -> &[FlameRect] {
        &self.rects
    }

    /// The options of the tree shown.
    #[must_use]
    pub fn options(&self) -> FlameOptions {
        self.opts
    }

    // ----- scene -----------------------------------------------------------------------------

    fn fitted_rows(&self) -> f64 {
        f64::from(self.rows.max(1)).max(self.pane.geom.plot.height() / MAX_ROW_CSS)
    }

    /// Relays out the zoom root's subtree, uploads it (a new generation) and sets the camera's
    /// limits; `refit` shows it whole.
    fn rebuild_scene(&mut self, refit: bool) {
        let root = self.zoom_root;
        self.rects = self
            .tree
            .rects(root)
            .into_iter()
            .filter(|r| r.node == root || r.x1 - r.x0 >= MIN_RECT_W)
            .collect();
        self.rows = self
            .rects
            .iter()
            .map(|r| r.depth.saturating_add(1))
            .max()
            .unwrap_or(1)
            .max(1);
        let mut batches = Vec::new();
        for chunk in self.rects.chunks(BATCH_RECTS) {
            let mut bbox = [
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::INFINITY,
                f64::NEG_INFINITY,
            ];
            let instances: Vec<Trapezoid> = chunk
                .iter()
                .map(|r| {
                    let (x0, x1, b, t) = rect_data(r.x0, r.x1, r.depth);
                    bbox = [
                        bbox[0].min(x0),
                        bbox[1].max(x1),
                        bbox[2].min(b),
                        bbox[3].max(t),
                    ];
                    let color = self.node_color(r);
                    Trapezoid::rect(x0 as f32, x1 as f32, b as f32, t as f32, color)
                })
                .collect();
            batches.push(Batch {
                origin: [0.0, 0.0],
                instances,
                bbox,
            });
        }
        self.batches = batches;
        self.generation += 1;
        self.pane.needs_redraw = true;
        self.set_camera_limits(refit);
    }

    fn set_camera_limits(&mut self, refit: bool) {
        let rows = self.fitted_rows();
        self.pane.camera.full_x = (0.0, 1.0);
        self.pane.camera.full_y = (-rows, 0.0);
        let (px_w, _) = self.pane.geom.plot_px();
        let min_x = memviz_render::min_span(1.0, px_w).clamp(1e-9, 1.0);
        let min_y = (self.pane.geom.plot.height() / MAX_ROW_CSS).clamp(1e-3, rows);
        self.pane.camera.min_span = (min_x, min_y);
        if refit {
            self.fit_top();
        }
        self.pane.camera.clamp();
    }

    /// Fits the width and as many rows from the root as are [`FIT_ROW_CSS`] tall.
    fn fit_top(&mut self) {
        self.pane.fit();
        let shown = (self.pane.geom.plot.height() / FIT_ROW_CSS).max(1.0);
        if f64::from(self.rows) > shown {
            self.pane.camera.y_range = (-shown, 0.0);
        }
    }

    /// The camera (data window of the chart).
    #[must_use]
    pub fn camera(&self) -> &Camera {
        &self.pane.camera
    }

    /// The chart's geometry (CSS px).
    #[must_use]
    pub fn geometry(&self) -> &PlotGeometry {
        &self.pane.geom
    }

    /// CSS px per data unit, (x, y).
    fn css_per_unit(&self) -> (f64, f64) {
        let cam = &self.pane.camera;
        (
            self.pane.geom.plot.width() / (cam.x_range.1 - cam.x_range.0).max(1e-12),
            self.pane.geom.plot.height() / (cam.y_range.1 - cam.y_range.0).max(1e-12),
        )
    }

    /// True when `node` is the zoom root or below it.
    fn in_zoom(&self, node: NodeId) -> bool {
        let mut cur = Some(node);
        let mut steps = 0usize;
        while let Some(id) = cur {
            if id == self.zoom_root {
                return true;
            }
            steps += 1;
            if steps > self.tree.nodes.len() {
                return false;
            }
            cur = self.tree.node(id).and_then(|n| n.parent);
        }
        false
    }

    /// A node's rect in data space under the current zoom, `(x0, x1, bottom, top)`.
    fn node_rect(&self, node: NodeId) -> Option<(f64, f64, f64, f64)> {
        if !self.in_zoom(node) {
            return None;
        }
        let r = self.tree.node(self.zoom_root)?;
        let n = self.tree.node(node)?;
        let (x0, x1) = if r.total > 0 {
            let w = r.total as f64;
            let x0 = n.x0.saturating_sub(r.x0) as f64 / w;
            (x0, x0 + n.total as f64 / w)
        } else {
            (0.0, 1.0)
        };
        Some(rect_data(x0, x1, n.depth.saturating_sub(r.depth)))
    }

    /// Zooms into `node` (an id of the full tree): its subtree fills the width. False for an
    /// unknown node or the current zoom root.
    pub fn zoom_to(&mut self, node: NodeId) -> bool {
        if self.tree.node(node).is_none() || node == self.zoom_root {
            return false;
        }
        self.zoom_root = node;
        self.hover = None;
        self.rebuild_scene(true);
        true
    }

    /// Zooms out one level (to the zoom root's parent). False at the full tree's root.
    pub fn zoom_out(&mut self) -> bool {
        match self.tree.node(self.zoom_root).and_then(|n| n.parent) {
            Some(p) => self.zoom_to(p),
            None => false,
        }
    }

    // ----- camera and input ------------------------------------------------------------------

    /// The node under a canvas point.
    #[must_use]
    pub fn node_at(&self, css_x: f64, css_y: f64) -> Option<NodeId> {
        let [x, y] = self.pane.data_in_plot(css_x, css_y)?;
        if !x.is_finite() || !y.is_finite() || y > 0.0 {
            return None;
        }
        let d = (-y).floor();
        if d >= f64::from(self.rows) {
            return None;
        }
        self.tree.hit_in(self.zoom_root, x, d as u32)
    }

    /// Canvas CSS px of a node's rect centre, when it is in the zoomed subtree.
    #[must_use]
    pub fn node_center_css(&self, node: NodeId) -> Option<[f64; 2]> {
        let (x0, x1, b, t) = self.node_rect(node)?;
        Some(
            self.pane
                .camera
                .css_px_from_data(&self.pane.geom, [(x0 + x1) * 0.5, (b + t) * 0.5]),
        )
    }

    /// Hover: the tooltip of the node under the point ([`FlameView::node_tooltip`]).
    pub fn hover_at(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let hit = self.node_at(css_x, css_y);
        if hit != self.hover {
            self.hover = hit;
            self.pane.needs_redraw = true;
        }
        self.node_tooltip(hit?)
    }

    /// A click: zooms into the node under the point, or out one level on the zoom root; then
    /// the tooltip under the point.
    pub fn click_at(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        if let Some(n) = self.node_at(css_x, css_y) {
            if n == self.zoom_root {
                self.zoom_out();
            } else {
                self.zoom_to(n);
            }
        }
        self.hover_at(css_x, css_y)
    }
}

impl DrawableView for FlameView {
    /// The clear colour and the 1 px separators between frames follow the theme.
    fn set_theme(&mut self, theme: &crate::theme::Theme) {
        if self.pane.bg != theme.bg {
            self.pane.bg = theme.bg;
            self.pane.needs_redraw = true;
        }
    }

    fn hover(&mut self, _snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        self.hover_at(css_x, css_y)
    }

    fn click(&mut self, _snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        self.click_at(css_x, css_y)
    }

    /// Sets the canvas size.
    fn resize(&mut self, css_w: f64, css_h: f64, dpr: f64) {
        let fitted = self.pane.camera.x_range == self.pane.camera.full_x
            && self.pane.camera.y_range.1 == 0.0;
        self.pane.resize(css_w, css_h, dpr);
        self.set_camera_limits(fitted);
    }

    fn fit(&mut self) {
        self.fit_top();
    }

    /// Zooms by `factor` (> 1 zooms in) at a canvas point: x, and y until rows are
    /// [`MAX_ROW_CSS`] tall.
    fn zoom_at(&mut self, css_x: f64, css_y: f64, factor: f64) {
        if !css_x.is_finite() || !css_y.is_finite() {
            return;
        }
        self.pane.zoom_at(css_x, css_y, factor);
    }

    fn pan_by(&mut self, dx: f64, dy: f64) {
        self.pane.pan_by(dx, dy);
    }

    /// Keys: `+`/`-` zoom, `0` fits, WASD / arrows pan, Backspace zooms out one level, Home
    /// back to the whole tree.
    fn key(&mut self, key: &str) -> bool {
        match key {
            "Backspace" => {
                self.zoom_out();
            }
            "Home" => {
                self.zoom_to(0);
            }
            _ => return self.pane.key(key),
        }
        true
    }

    fn pointer_down(&mut self, css_x: f64, css_y: f64) {
        self.pane.pointer_down(css_x, css_y);
    }

    fn pointer_move(&mut self, _snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        if self.pane.drag_move(css_x, css_y) {
            None
        } else {
            self.hover_at(css_x, css_y)
        }
    }

    fn pointer_up(&mut self, _snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        // A press and release at (about) the same place is a click (see [`Pane::release`]).
        if self.pane.release(css_x, css_y) {
            self.click_at(css_x, css_y)
        } else {
            self.hover_at(css_x, css_y)
        }
    }

    fn pointer_leave(&mut self) {
        self.pane.cancel_drag();
        if self.hover.take().is_some() {
            self.pane.needs_redraw = true;
        }
    }

    /// Separators, the hover outline and the margin masks.
    fn overlay(&mut self) -> Batch {
        let cam = self.pane.camera;
        let origin = self.pane.overlay_origin();
        let mut out = Vec::new();
        let rel = |x: f64, y: f64| ((x - origin[0]) as f32, (y - origin[1]) as f32);
        let (sx, _) = self.css_per_unit();
        let (xl, xh) = cam.x_range;
        let (yl, yh) = cam.y_range;
        for r in &self.rects {
            if (r.x1 - r.x0) * sx < SEPARATOR_MIN_CSS || r.x0 <= 0.0 {
                continue;
            }
            let (x0, x1, b, t) = rect_data(r.x0, r.x1, r.depth);
            if x1 < xl || x0 > xh || t < yl || b > yh {
                continue;
            }
            let (x, b) = rel(x0, b);
            let (_, t) = rel(x0, t);
            out.push(Trapezoid::rect(x, x, b, t, self.pane.bg));
        }
        if let Some((x0, x1, b, t)) = self.hover.and_then(|n| self.node_rect(n)) {
            let (x0, b) = rel(x0, b);
            let (x1, t) = rel(x1, t);
            push_outline(&mut out, [x0, x1, b, t], HOVER_EDGE);
        }
        self.pane.margin_masks(&mut out, origin);
        Batch::unbounded(origin, out)
    }

    crate::pane::pane_view_methods!();
}
