//! The timelines (Active Memory, Cached Segments, Private Pools: SEMANTICS §3–5) as a
//! [`DrawableView`](crate::view::DrawableView). Their state that outlives a switch to another
//! view ([`TimelineUi`]: the kind, camera, hover, pin, drag) is the app's; a [`TimelineView`]
//! borrows it together with the built data of the current (file, device, kind) for one call.
//!
//! What the app decides before a hover or a click (whether the hit index and the tooltips fit
//! in memory, which may release other views) arrives as a [`Gate`], so the view itself never
//! touches the other files, devices or views.
//!
//! - `timeline.rs`: the state types ([`TimelineUi`], [`Frame`], [`Gate`], [`Settle`]), the x
//!   axis ([`axis_map`]) and the timeline's JSON state;
//! - `timeline/camera.rs`: the axis sync, camera moves, zoom cap and windows;
//! - `timeline/hover.rs`: the element under the pointer, its tooltip and the pin;
//! - `timeline/windowed.rs`: the windowed scene's rebuild once the camera settles;
//! - `timeline/overview.rs`: the overview strip's columns;
//! - `timeline/drawable.rs`: the `DrawableView` impl (input, drags, frames).

use std::rc::Rc;

use memviz_snapshot::Snapshot;

use super::device::DeviceData;
use super::ViewKind;
use crate::answer::{SceneKind, TimelineState, Unavailable};
use crate::camera::{Camera, PlotGeometry};
use crate::xaxis::AxisMap;

mod camera;
mod drawable;
mod hover;
mod overview;
mod windowed;

/// Camera idle time after which a windowed scene is rebuilt, ms.
pub const SETTLE_MS: f64 = 120.0;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Drag {
    None,
    Pan {
        last: [f64; 2],
        start: [f64; 2],
        moved: bool,
    },
    Brush {
        start_x: f64,
    },
}

/// Windowed scenes: whether the camera moved since the scene was last built around it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Settle {
    /// The scene matches the camera.
    Still,
    /// The camera moved; the next tick starts the idle clock.
    Moved,
    /// The camera has not moved since this time (ms).
    MovedSince(f64),
}

/// What every view's frame shares: the batches' generation and the redraw flag.
#[derive(Clone, Copy, Debug)]
pub(super) struct Frame {
    /// Bumped whenever the plot batches change (the GPU side re-uploads).
    pub generation: u64,
    pub needs_redraw: bool,
    /// The canvas's non-data colours (the overlay's; [`crate::App::set_theme`]).
    pub theme: crate::theme::Theme,
}

/// What the app checked before a pointer event reaches the timeline.
#[derive(Clone, Debug)]
pub(super) struct Gate {
    /// The hit index is built or fits: the element under the pointer may be looked up.
    pub hit: bool,
    /// The tooltips' context is built or fits, or the sentence saying why not.
    pub tips: Result<(), Unavailable>,
}

impl Gate {
    /// For calls that neither look elements up nor make tooltips.
    pub fn closed() -> Self {
        Gate {
            hit: false,
            tips: Ok(()),
        }
    }
}

/// The timelines' state kept across view switches.
pub(super) struct TimelineUi {
    /// The timeline kind shown: `Active`, `Segments` or `Pools`.
    pub kind: ViewKind,
    pub camera: Camera,
    pub hover: Option<u32>,
    pub pinned: Option<u32>,
    /// True when wall-clock time was chosen for the x axis (it is shown where the trace has
    /// usable times, `crate::step_time`; elsewhere the axis is event order).
    pub time_axis: bool,
    /// True while the camera's x is time (µs), false while it is timesteps: what the axis
    /// shown is ([`TimelineView::sync_axis`] keeps it so).
    pub camera_time: bool,
    pub settle: Settle,
    /// Timestep of the last click in the plot.
    pub last_click_step: Option<u32>,
    drag: Drag,
    overview_cols: Vec<u64>,
    overview_key: (usize, i64, ViewKind, u32, bool),
}

impl TimelineUi {
    pub fn new() -> Self {
        TimelineUi {
            kind: ViewKind::Active,
            camera: Camera::new(1, 1),
            hover: None,
            pinned: None,
            time_axis: false,
            camera_time: false,
            settle: Settle::Still,
            last_click_step: None,
            drag: Drag::None,
            overview_cols: Vec::new(),
            overview_key: (usize::MAX, 0, ViewKind::Active, 0, false),
        }
    }

    /// True while a drag (pan or brush) is in progress.
    pub fn dragging(&self) -> bool {
        self.drag != Drag::None
    }

    /// Caps the zoom at what the batches' `f32` instances can show without jitter.
    pub fn update_zoom_cap(&mut self, geom: &PlotGeometry, data: Option<&DeviceData>) {
        let (px_w, px_h) = geom.plot_px();
        // Both scene kinds are tiled; the cap follows the current batches' largest extent.
        // (A windowed scene is rebuilt around each settled window, so its cap deepens as one
        // zooms in and settles.)
        let (ex, ey) = data.map_or((0.0, 0.0), |d| (d.scene.extent[0], d.scene.extent[1]));
        let min_x = memviz_render::min_span(ex, px_w).max(1.0);
        let min_y = memviz_render::min_span(ey, px_h).max(1.0);
        self.camera.set_zoom_cap(min_x, min_y);
    }

    /// The x (the axis's unit) at a canvas x inside the overview strip.
    pub fn overview_step_at(&self, geom: &PlotGeometry, css_x: f64) -> f64 {
        let o = geom.overview;
        let f = ((css_x - o.left) / o.width()).clamp(0.0, 1.0);
        self.camera.full_x.0 + f * (self.camera.full_x.1 - self.camera.full_x.0)
    }
}

/// The x axis of `data`: time when `time` and the trace has usable times, else event order.
pub(super) fn axis_map<'a>(
    time: bool,
    snap: &'a Snapshot,
    device: i64,
    data: Option<&'a DeviceData>,
) -> AxisMap<'a> {
    // Only the time axis needs the step times (built on first use).
    let index = data
        .filter(|_| time)
        .and_then(|d| Some((d.step_time(snap, device)?, &d.layout)));
    match (time, index, snap.trace(device)) {
        (true, Some((index, layout)), Some(tr)) => AxisMap::Time(index.with(tr, layout)),
        _ => AxisMap::Steps,
    }
}

/// A timeline of one (file, device, kind) in the view registry: its state (camera, hover,
/// pin, drag, settle), its frame (batches' generation, redraw flag, theme) and the data built
/// for it ([`DeviceData`]; the Private Pools view of a device without a private pool shares
/// the Active Memory Timeline's timeline and layout by `Rc`).
pub(in crate::app) struct TimelineView {
    pub ui: TimelineUi,
    pub frame: Frame,
    pub geom: PlotGeometry,
    pub snap: Rc<Snapshot>,
    /// The built timeline (none only for the stand-in of a timeline that could not be built).
    pub data: Option<DeviceData>,
    pub file: usize,
    pub device: i64,
    /// What the app checked before the pointer event being answered.
    pub gate: Gate,
    /// The what-if tab's simulated reserved curve drawn over it, when shown.
    pub sim: Option<super::whatif::curve::SimPlot>,
}

impl TimelineView {
    /// The timeline of (file, device, `kind`) over `data`, its camera fitted.
    pub(in crate::app) fn new(
        snap: Rc<Snapshot>,
        file: usize,
        device: i64,
        kind: ViewKind,
        geom: PlotGeometry,
        data: Option<DeviceData>,
    ) -> Self {
        let mut ui = TimelineUi::new();
        ui.kind = kind;
        let mut v = TimelineView {
            ui,
            frame: Frame {
                generation: crate::view::next_generation(),
                needs_redraw: true,
                theme: crate::theme::Theme::LIGHT,
            },
            geom,
            snap,
            data,
            file,
            device,
            gate: Gate::closed(),
            sim: None,
        };
        v.reset_camera();
        v
    }

    /// Fits the camera to the whole timeline in timesteps, unpins, and puts it back on the
    /// chosen axis (what showing a device or a timeline kind does).
    pub(in crate::app) fn reset_camera(&mut self) {
        let (steps, peak) = self
            .data()
            .map(|d| (d.layout.step_count(), d.layout.peak_bytes))
            .unwrap_or((0, 0));
        self.ui.hover = None;
        self.ui.pinned = None;
        self.ui.camera = Camera::new(steps, peak);
        self.ui.camera_time = false;
        self.ui.settle = Settle::Still;
        self.update_zoom_cap();
        self.frame.generation = crate::view::next_generation();
        self.frame.needs_redraw = true;
        self.sync_axis();
    }

    pub(in crate::app) fn data(&self) -> Option<&DeviceData> {
        self.data.as_ref()
    }

    fn is_windowed(&self) -> bool {
        self.data().is_some_and(|d| d.windowed)
    }

    /// True when the trace has usable times (the time axis can be shown).
    pub(in crate::app) fn has_time(&self) -> bool {
        self.data()
            .is_some_and(|d| d.step_time(&self.snap, self.device).is_some())
    }

    /// The x axis the camera is in.
    pub(in crate::app) fn xmap(&self) -> AxisMap<'_> {
        axis_map(self.ui.camera_time, &self.snap, self.device, self.data())
    }
}

impl crate::registry::View for TimelineView {
    fn write_state(&self, state: &mut crate::answer::ViewerState) {
        state.timeline = state_value(&self.ui, self.data(), self.has_time());
    }
}

/// The timeline's state: the camera, the layout's counts and the scene.
pub(super) fn state_value(
    ui: &TimelineUi,
    data: Option<&DeviceData>,
    has_time: bool,
) -> TimelineState {
    let c = &ui.camera;
    let d = data;
    TimelineState {
        x_range: [c.x_range.0, c.x_range.1],
        y_range: [c.y_range.0, c.y_range.1],
        full_x: [c.full_x.0, c.full_x.1],
        full_y: [c.full_y.0, c.full_y.1],
        min_span: [c.min_span.0, c.min_span.1],
        steps: d.map_or(0, |d| d.layout.step_count()),
        elements: d.map_or(0, |d| d.layout.element_count() as u32),
        peak_bytes: d.map_or(0, |d| d.layout.peak_bytes),
        peak_step: d.map_or(0, |d| d.layout.peak_step),
        layout_mode: d.map(|d| d.layout.mode()),
        fell_back_to_compact: d.is_some_and(|d| d.layout.fell_back_to_compact()),
        scene: if d.is_some_and(|d| d.windowed) {
            SceneKind::Windowed
        } else {
            SceneKind::Static
        },
        instances: d.map_or(0, |d| d.scene.instance_count()),
        batches: d.map_or(0, |d| d.scene.batches.len()),
        scene_build_ms: d.map_or(0.0, |d| d.scene.build_ms),
        has_time,
        hover: ui.hover,
        pinned: ui.pinned,
        last_click_step: ui.last_click_step,
        phases: d.map_or(0, |d| d.phases.len()),
    }
}
