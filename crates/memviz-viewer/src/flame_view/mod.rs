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
    self, At, FlameOptions, FlameRect, FlameTree, FrameMode, NodeId, ValueUnit, ROOT_NAME,
};
use memviz_analysis::format::{count, size_long};
use memviz_present::layout::Layout;
use memviz_analysis::site::UserCode;
use memviz_analysis::timeline::Timeline;
use memviz_render::{rgba, Trapezoid, View};
use memviz_snapshot::Snapshot;

use crate::camera::{Camera, PlotGeometry};
use crate::pane::{push_outline, Pane};
use crate::scene::Batch;
use crate::view::DrawableView;

mod input;
mod text;
mod zoom;

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
    /// Whether the file has frames of the user's code under `opts.user` (the default frame
    /// mode is then [`FrameMode::MyCode`]).
    has_user: bool,
}

impl FlameView {
    /// The flamegraph of `device` at the peak (live bytes, the default frame mode) under the
    /// default user code.
    #[must_use]
    pub fn new(
        snap: &Snapshot,
        device: i64,
        timeline: &Timeline,
        layout: &Layout,
        geom: &PlotGeometry,
    ) -> Self {
        Self::with_user_code(snap, device, timeline, layout, geom, UserCode::default())
    }

    /// The flamegraph of `device` at the peak (live bytes), `user` naming the user's code:
    /// frames [`FrameMode::MyCode`] when the file has frames of it, else [`FrameMode::Python`].
    #[must_use]
    pub fn with_user_code(
        snap: &Snapshot,
        device: i64,
        timeline: &Timeline,
        layout: &Layout,
        geom: &PlotGeometry,
        user: UserCode,
    ) -> Self {
        let has_user = flame::has_user_frames(snap, &user);
        let opts = FlameOptions {
            frames: if has_user {
                FrameMode::MyCode
            } else {
                FrameMode::Python
            },
            user,
            ..FlameOptions::default()
        };
        let mut v = FlameView {
            tree: FlameTree::build(&[], ValueUnit::Bytes),
            opts: opts.clone(),
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
            has_user,
        };
        v.set_options(snap, device, timeline, layout, At::Peak, opts);
        v
    }

    /// The default frame mode of this file: [`FrameMode::MyCode`] when it has frames of the
    /// user's code, else [`FrameMode::Python`].
    #[must_use]
    pub fn default_frames(&self) -> FrameMode {
        if self.has_user {
            FrameMode::MyCode
        } else {
            FrameMode::Python
        }
    }

    /// Whether the file has frames of the user's code (under the view's user code).
    #[must_use]
    pub fn has_user_frames(&self) -> bool {
        self.has_user
    }

    /// Takes `user` as the user's code from the next build on ([`FlameView::default_frames`]
    /// follows it at once); the tree shown is not rebuilt.
    pub fn set_user_code(&mut self, snap: &Snapshot, user: &UserCode) {
        if *user != self.opts.user {
            self.has_user = flame::has_user_frames(snap, user);
            self.opts.user = user.clone();
        }
    }

    /// Rebuilds the tree at `at` (a timestep, an event or the peak), or over the whole trace in
    /// bytes × lifetime when `lifetime`, with the frames of `frames`; the zoom goes back
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
        frames: FrameMode,
    ) -> FlameState {
        let opts = FlameOptions {
            frames,
            user: self.opts.user.clone(),
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
        if opts.user != self.opts.user {
            self.has_user = flame::has_user_frames(snap, &opts.user);
        }
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
    /// blue where it shrank, grey where equal; widths are the larger side; `frames`: the mode
    /// it was built with (the state reports it). Set a moment ([`FlameView::set_options`]) to
    /// leave it.
    pub fn show_diff(
        &mut self,
        tree: FlameTree,
        a: &str,
        b: &str,
        frames: FrameMode,
    ) -> FlameState {
        self.tree = tree;
        self.opts.frames = frames;
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
        // The frame mode and user code stay: the next moment is built with them.
        self.opts = FlameOptions {
            frames: self.opts.frames,
            user: std::mem::take(&mut self.opts.user),
            ..FlameOptions::default()
        };
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
        let (at, opts) = (self.at, self.opts.clone());
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
    pub fn options(&self) -> &FlameOptions {
        &self.opts
    }
}
