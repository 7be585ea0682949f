//! The views drawn on the canvas behind one trait, [`DrawableView`]: the timelines
//! (`app::timeline`), the Allocator State History ([`crate::state_view::StateView`]) and the
//! flamegraph ([`crate::flame_view::FlameView`]). [`crate::App`] keeps which one is shown in
//! one [`ActiveView`] and sends every input, frame and question to it through the trait; a new
//! view implements the trait and adds a variant (see ARCHITECTURE.md, "How to add a view").

use memviz_render::View;
use memviz_snapshot::Snapshot;

use crate::answer::Tooltip;
pub use crate::kinds::ViewKind;

use crate::scene::Batch;
use crate::theme::Theme;

/// Pointer travel (CSS px) under which a press-release is a click, not a drag.
pub const CLICK_SLOP_CSS: f64 = 4.0;

/// A new batches generation, unique in the process: a view that replaces its batches takes
/// one, so a view released and built again for the same [`FrameSource`] never repeats the
/// generation of the batches the GPU side holds (which would skip the upload).
pub fn next_generation() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// What one frame's plot batches belong to: the file, device and view kind they were built
/// for. With [`FrameOutput::generation`] it tells the GPU side when to upload them again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameSource {
    /// The file's index in the app (files are only ever added, so an index names one file).
    pub file: usize,
    /// The device.
    pub device: i64,
    /// The view kind (a timeline kind, the State History or the flamegraph).
    pub kind: ViewKind,
}

/// What one frame draws: the view shown's plot batches (uploaded again only when `source` or
/// `generation` changes), its per-frame overlay, the view of the whole canvas and the clear
/// colour. [`crate::App::frame`] composes it; [`crate::GpuScene`] draws it.
#[derive(Debug)]
pub struct FrameOutput<'a> {
    /// What the plot batches belong to.
    pub source: FrameSource,
    /// The plot batches' generation within `source` (changes when they must be uploaded).
    pub generation: u64,
    /// The plot batches, in data space.
    pub batches: &'a [Batch],
    /// The overlay (axes, masks, outlines), drawn after the plot; uploaded every frame.
    pub overlay: Batch,
    /// The view of the whole canvas (its `x_range`/`y_range` are a superset of the plot's).
    pub view: View,
    /// The clear colour (sRGB RGBA, 0..1).
    pub clear: [f64; 4],
}

/// Which view the canvas shows. The timeline kind shown (Active, Segments or Pools) is the
/// timeline's own state: it is kept while another view is shown, and shown again after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ActiveView {
    /// One of the timelines (memory_viz's Active Memory, Cached Segment, Private Pools).
    #[default]
    Timeline,
    /// The Allocator State History.
    State,
    /// The memory flamegraph.
    Flame,
}

/// A view drawn on the canvas: it owns its camera and hover state, answers the pointer, the
/// wheel and the keys in canvas CSS px, and gives the batches and overlay of each frame.
/// Tooltips are [`Tooltip`] values; each view also has a typed state of its own (`state()`),
/// which the app puts in [`crate::answer::ViewerState`].
pub trait DrawableView {
    /// The canvas was resized (CSS px and device pixel ratio).
    fn resize(&mut self, css_w: f64, css_h: f64, dpr: f64);
    /// Shows everything.
    fn fit(&mut self);
    /// Zooms by `factor` (> 1 zooms in) around a canvas point.
    fn zoom_at(&mut self, css_x: f64, css_y: f64, factor: f64);
    /// Pans by CSS px.
    fn pan_by(&mut self, dx: f64, dy: f64);
    /// A key; true when it was used.
    fn key(&mut self, key: &str) -> bool;
    /// Pointer pressed.
    fn pointer_down(&mut self, css_x: f64, css_y: f64);
    /// Pointer moved: a drag continues, else a hover; the tooltip to show, if any.
    fn pointer_move(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip>;
    /// Pointer released: a press-release without travel is a click; the tooltip to show.
    fn pointer_up(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip>;
    /// Hover at a canvas point; the tooltip to show, if any.
    fn hover(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip>;
    /// The pointer left the canvas.
    fn pointer_leave(&mut self);
    /// A click (pins or unpins); the tooltip to show.
    fn click(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip>;
    /// The per-frame overlay (axes, masks, outlines), in the canvas view's data space.
    fn overlay(&mut self) -> Batch;
    /// The canvas theme changed (the app calls it before every use; cheap when unchanged).
    /// Views whose non-data colours are fixed may ignore it.
    fn set_theme(&mut self, _theme: &Theme) {}
    /// The plot batches and their generation (it changes when they must be uploaded).
    fn batches(&self) -> (u64, &[Batch]);
    /// The view of the whole canvas for this frame.
    fn canvas_view(&self) -> View;
    /// True when the next frame would differ from the last one drawn.
    fn needs_redraw(&self) -> bool;
    /// Returns and clears the redraw flag.
    fn take_needs_redraw(&mut self) -> bool;
    /// Once per animation frame (monotonic ms): true when a redraw is needed.
    fn tick(&mut self, _now_ms: f64) -> bool {
        self.needs_redraw()
    }
}
