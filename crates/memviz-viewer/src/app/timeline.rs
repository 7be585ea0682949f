//! The timelines (Active Memory, Cached Segments, Private Pools: SEMANTICS §3–5) as a
//! [`DrawableView`]. Their state that outlives a switch to another view ([`TimelineUi`]: the
//! kind, camera, hover, pin, drag) is the app's; a [`TimelineView`] borrows it together with the
//! built data of the current (file, device, kind) for one call.
//!
//! What the app decides before a hover or a click (whether the hit index and the tooltips fit
//! in memory, which may release other views) arrives as a [`Gate`], so the view itself never
//! touches the other files, devices or views.

use memviz_analysis::tooltip::{tooltip, TooltipContext};
use memviz_render::View;
use memviz_snapshot::Snapshot;

use super::device::{decimate_max, DeviceData};
use super::ViewKind;
use crate::answer::{ElementTip, SceneKind, TimelineState, Tooltip, Unavailable};
use crate::camera::{Camera, PlotGeometry, Y_HEADROOM};
use crate::scene::{self, Batch};
use crate::view::{DrawableView, CLICK_SLOP_CSS};
use crate::xaxis::{AxisMap, XMap};

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
    let index = data.and_then(|d| Some((d.step_time_us.as_ref()?, &d.layout)));
    match (time, index, snap.trace(device)) {
        (true, Some((index, layout)), Some(tr)) => AxisMap::Time(index.with(tr, layout)),
        _ => AxisMap::Steps,
    }
}

/// The timeline of the current (file, device, kind), borrowed for one call.
pub(super) struct TimelineView<'a> {
    pub ui: &'a mut TimelineUi,
    pub frame: &'a mut Frame,
    pub geom: &'a PlotGeometry,
    pub snap: &'a Snapshot,
    /// The built timeline (none when it could not fit in memory).
    pub data: Option<&'a mut DeviceData>,
    pub file: usize,
    pub device: i64,
    pub gate: Gate,
}

impl TimelineView<'_> {
    pub(super) fn data(&self) -> Option<&DeviceData> {
        self.data.as_deref()
    }

    fn is_windowed(&self) -> bool {
        self.data().is_some_and(|d| d.windowed)
    }

    /// The x axis the camera is in.
    pub(super) fn xmap(&self) -> AxisMap<'_> {
        axis_map(self.ui.camera_time, self.snap, self.device, self.data())
    }

    /// Puts the camera and the scene on the chosen x axis (time where the trace has usable
    /// times): the camera's window is carried over through the timesteps it shows, the scene
    /// is rebuilt in the axis's unit (it replaces the other, never kept beside it). A no-op when
    /// both already are.
    pub fn sync_axis(&mut self) {
        let on = self.ui.time_axis && self.data().is_some_and(|d| d.step_time_us.is_some());
        if self.ui.camera_time != on {
            let cam = self.ui.camera;
            let n = f64::from(self.data().map_or(1, |d| d.layout.step_count().max(1)));
            let (old, new) = (
                self.xmap(),
                axis_map(on, self.snap, self.device, self.data()),
            );
            let (s0, s1) = (
                old.step_of_axis(cam.x_range.0),
                old.step_of_axis(cam.x_range.1),
            );
            let full_x = (new.axis_of_step(0.0), new.axis_of_step(n));
            let x_range = (new.axis_of_step(s0), new.axis_of_step(s1));
            drop((old, new));
            let cam = &mut self.ui.camera;
            cam.full_x = full_x;
            cam.x_range = x_range;
            self.ui.camera_time = on;
            // The zoom cap is in the old unit until the scene below is rebuilt.
            cam.min_span.0 = 1e-3;
            cam.clamp();
            self.ui.overview_key.0 = usize::MAX;
            self.camera_moved();
        }
        if self.data().is_some_and(|d| d.scene.x_time != on) {
            if self.is_windowed() {
                self.settle();
            } else {
                let scene = {
                    let Some(d) = self.data() else { return };
                    let map = self.xmap();
                    scene::build_static_on(&d.layout, &d.colors, &map)
                };
                if let Some(d) = self.data.as_deref_mut() {
                    d.scene = scene;
                }
                self.update_zoom_cap();
                self.frame.generation += 1;
                self.frame.needs_redraw = true;
            }
        }
    }

    fn camera_moved(&mut self) {
        self.frame.needs_redraw = true;
        if self.is_windowed() {
            self.ui.settle = Settle::Moved;
        }
    }

    fn update_zoom_cap(&mut self) {
        let data = self.data.as_deref();
        self.ui.update_zoom_cap(self.geom, data);
    }

    /// The element under a canvas point, when the gate let the hit index answer.
    pub fn element_at(&self, css_x: f64, css_y: f64) -> Option<u32> {
        if !self.geom.plot.contains([css_x, css_y]) || !self.gate.hit {
            return None;
        }
        let [x, y] = self.ui.camera.data_from_css_px(self.geom, [css_x, css_y]);
        let step = self.xmap().step_of_axis(x);
        self.data()?.layout.hit(step, y)
    }

    /// The tooltip of `element` ([`Tooltip::Element`]).
    pub fn tooltip(&mut self, snap: &Snapshot, element: u32, pinned: bool) -> Option<Tooltip> {
        if let Err(why) = &self.gate.tips {
            return Some(Tooltip::Unavailable(why.clone()));
        }
        let device = self.device;
        let d = self.data.as_deref_mut()?;
        let ctx = d
            .tips
            .get_or_insert_with(|| TooltipContext::new(snap, device));
        let info = tooltip(snap, ctx, &d.timeline, &d.layout, element)?;
        let text = info.text();
        let explanation_lines = crate::answer::explanation_lines(&info.frames);
        Some(Tooltip::Element(ElementTip {
            info,
            text,
            pinned,
            explanation_lines,
            // The app adds the frame kinds and the site (`App::finish_tip`: it has the
            // file's site cache).
            kinds: Vec::new(),
            site: None,
        }))
    }

    /// Pins `element` (a deep link's selection); its tooltip.
    pub fn pin(&mut self, snap: &Snapshot, element: u32) -> Option<Tooltip> {
        self.ui.pinned = Some(element);
        self.ui.hover = Some(element);
        self.tooltip(snap, element, true)
    }

    /// The overview brush: shows `[x0, x1)` (the axis's unit) and fits y to
    /// `max(live_at_step over the timesteps shown) × 1.05`.
    pub fn set_x_window(&mut self, x0: f64, x1: f64) {
        if !x0.is_finite() || !x1.is_finite() {
            return;
        }
        let (lo, hi) = if x0 <= x1 { (x0, x1) } else { (x1, x0) };
        let (hi, top) = {
            let Some(d) = self.data() else { return };
            let map = self.xmap();
            let live = d.layout.live_at_step();
            let n = live.len();
            let hi = hi.max(lo + 1.0);
            let a = map.step_of_axis(lo).floor().clamp(0.0, n as f64) as usize;
            let b = map.step_of_axis(hi).ceil().clamp(0.0, n as f64) as usize;
            let top = live.range(a, b.max(a)).max().unwrap_or(d.layout.peak_bytes);
            (hi, top)
        };
        let cam = &mut self.ui.camera;
        cam.x_range = (lo, hi);
        cam.y_range = (0.0, (top.max(1) as f64) * Y_HEADROOM);
        cam.clamp();
        self.camera_moved();
    }

    /// Shows `x0..x1` (the axis's unit) and bytes `y0..y1`, clamped to what the camera allows.
    pub fn set_window(&mut self, x0: f64, x1: f64, y0: f64, y1: f64) {
        if ![x0, x1, y0, y1].iter().all(|v| v.is_finite()) {
            return;
        }
        let cam = &mut self.ui.camera;
        cam.x_range = (x0.min(x1), x0.max(x1));
        cam.y_range = (y0.min(y1), y0.max(y1));
        cam.clamp();
        self.camera_moved();
    }

    /// Rebuilds a windowed scene for the current camera now (no-op for static scenes).
    pub fn settle(&mut self) {
        self.ui.settle = Settle::Still;
        if !self.is_windowed() {
            return;
        }
        let cam = self.ui.camera;
        let geom = *self.geom;
        let (px_w, px_h) = geom.plot_px();
        let time = self.ui.camera_time;
        let (snap, device) = (self.snap, self.device);
        let Some(d) = self.data.as_deref_mut() else {
            return;
        };
        let w = cam.x_range.1 - cam.x_range.0;
        let h = cam.y_range.1 - cam.y_range.0;
        // Half a window of margin on each side, but no columns outside the data.
        let x0 = (cam.x_range.0 - 0.5 * w).max(cam.full_x.0);
        let x1 = (cam.x_range.1 + 0.5 * w).min(cam.full_x.1).max(x0 + 1e-9);
        let window = [x0, x1, cam.y_range.0 - 0.5 * h, cam.y_range.1 + 0.5 * h];
        let columns = (f64::from(px_w) * (x1 - x0) / w.max(1e-9)).clamp(1.0, 65536.0) as u32;
        let y_tol = 0.5 * h / f64::from(px_h.max(1));
        // Two or more timesteps per device-pixel column: the column level of detail, sampled
        // per CSS pixel (so a high-DPR screen does not quadruple the instances).
        let dpr = geom.device_pixel_ratio.max(1.0);
        let map = axis_map(time, snap, device, Some(d));
        let window_steps = map.step_of_axis(x1) - map.step_of_axis(x0);
        let built = if window_steps / f64::from(columns) >= scene::COLUMN_LOD_STEPS_PER_PX {
            let css_columns = (f64::from(columns) / dpr).max(1.0) as u32;
            // Very busy stacks sample every other CSS pixel to keep frames cheap: decided from
            // the instances per column of the previous build (rebuilt once if that was wrong).
            let tol = 2.0 * y_tol * dpr;
            let half = (css_columns / 2).max(1);
            let mut cols =
                if d.column_density * f64::from(css_columns) > scene::COLUMN_LOD_BUDGET as f64 {
                    half
                } else {
                    css_columns
                };
            let mut built = scene::build_columns_on(&d.layout, &d.colors, window, cols, tol, &map);
            if built.instance_count() > scene::COLUMN_LOD_BUDGET && cols != half {
                cols = half;
                built = scene::build_columns_on(&d.layout, &d.colors, window, cols, tol, &map);
            }
            (built, Some(cols))
        } else {
            let built =
                scene::build_windowed_on(&d.layout, &d.colors, window, columns, y_tol, &map);
            (built, None)
        };
        drop(map);
        let (built, cols) = built;
        if let Some(cols) = cols {
            d.column_density = built.instance_count() as f64 / f64::from(cols);
        }
        d.scene = built;
        self.update_zoom_cap();
        self.frame.generation += 1;
        self.frame.needs_redraw = true;
    }

    pub(super) fn overview_columns(&mut self) -> Vec<u64> {
        let cols = (self.geom.overview.width().round().max(1.0)) as u32;
        let key = (
            self.file,
            self.device,
            self.ui.kind,
            cols,
            self.ui.camera_time,
        );
        if self.ui.overview_key != key {
            self.ui.overview_key = key;
            let map = self.xmap();
            let cols = match self.data() {
                Some(d) if map.is_time() => {
                    decimate_max_on(d, &map, self.ui.camera.full_x, cols as usize)
                }
                Some(d) => decimate_max(d.layout.live_at_step(), cols as usize),
                None => Vec::new(),
            };
            drop(map);
            self.ui.overview_cols = cols;
        }
        self.ui.overview_cols.clone()
    }
}

impl DrawableView for TimelineView<'_> {
    /// The app has set the new geometry; the zoom cap follows it.
    fn resize(&mut self, _css_w: f64, _css_h: f64, _dpr: f64) {
        self.update_zoom_cap();
        self.camera_moved();
    }

    /// Whole trace, `y ∈ [0, peak × 1.05]`.
    fn fit(&mut self) {
        self.ui.camera.fit();
        self.camera_moved();
    }

    fn zoom_at(&mut self, css_x: f64, css_y: f64, factor: f64) {
        self.ui.camera.zoom_at(self.geom, [css_x, css_y], factor);
        self.camera_moved();
    }

    fn pan_by(&mut self, dx: f64, dy: f64) {
        self.ui.camera.pan_by(self.geom, dx, dy);
        self.camera_moved();
    }

    /// `a`/`d`/`ArrowLeft`/`ArrowRight` pan x, `ArrowUp`/`ArrowDown` pan y, `w`/`s` zoom x
    /// in/out around the centre, `+`/`=`/`-` zoom both axes, `0` fits.
    fn key(&mut self, key: &str) -> bool {
        let p = self.geom.plot;
        let centre = [(p.left + p.right) * 0.5, (p.top + p.bottom) * 0.5];
        let below = [centre[0], p.bottom + 1.0];
        let step_x = p.width() * 0.15;
        let step_y = p.height() * 0.15;
        match key {
            "a" | "A" | "ArrowLeft" => self.pan_by(step_x, 0.0),
            "d" | "D" | "ArrowRight" => self.pan_by(-step_x, 0.0),
            "ArrowUp" => self.pan_by(0.0, step_y),
            "ArrowDown" => self.pan_by(0.0, -step_y),
            "w" | "W" => self.zoom_at(below[0], below[1], 1.5),
            "s" | "S" => self.zoom_at(below[0], below[1], 1.0 / 1.5),
            "+" | "=" => self.zoom_at(centre[0], centre[1], 1.5),
            "-" | "_" => self.zoom_at(centre[0], centre[1], 1.0 / 1.5),
            "0" => self.fit(),
            _ => return false,
        }
        true
    }

    /// A drag in the plot pans, in the overview brushes.
    fn pointer_down(&mut self, css_x: f64, css_y: f64) {
        let pos = [css_x, css_y];
        self.ui.drag = if self.geom.overview.contains(pos) {
            Drag::Brush { start_x: css_x }
        } else {
            Drag::Pan {
                last: pos,
                start: pos,
                moved: false,
            }
        };
    }

    fn pointer_move(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        match self.ui.drag {
            Drag::Pan { last, start, moved } => {
                let moved = moved || (css_x - start[0]).hypot(css_y - start[1]) > CLICK_SLOP_CSS;
                if moved {
                    self.pan_by(css_x - last[0], css_y - last[1]);
                }
                self.ui.drag = Drag::Pan {
                    last: if moved { [css_x, css_y] } else { last },
                    start,
                    moved,
                };
                None
            }
            Drag::Brush { start_x } => {
                let a = self.ui.overview_step_at(self.geom, start_x);
                let b = self.ui.overview_step_at(self.geom, css_x);
                if (css_x - start_x).abs() > 2.0 {
                    self.set_x_window(a, b);
                }
                None
            }
            Drag::None => self.hover(snap, css_x, css_y),
        }
    }

    /// A press-release without travel is a click (pins / unpins); a click in the overview
    /// centres the window there.
    fn pointer_up(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let drag = std::mem::replace(&mut self.ui.drag, Drag::None);
        match drag {
            Drag::Pan {
                moved: false,
                start,
                ..
            } if (css_x - start[0]).hypot(css_y - start[1]) <= CLICK_SLOP_CSS => {
                self.click(snap, css_x, css_y)
            }
            Drag::Brush { start_x } if (css_x - start_x).abs() <= 2.0 => {
                let c = self.ui.overview_step_at(self.geom, css_x);
                let half = (self.ui.camera.x_range.1 - self.ui.camera.x_range.0) * 0.5;
                self.set_x_window(c - half, c + half);
                None
            }
            _ => self.hover(snap, css_x, css_y),
        }
    }

    /// The pinned tooltip if one is pinned, else the tooltip of the element under the point.
    fn hover(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let hit = self.element_at(css_x, css_y);
        if hit != self.ui.hover {
            self.ui.hover = hit;
            self.frame.needs_redraw = true;
        }
        match self.ui.pinned {
            Some(p) => self.tooltip(snap, p, true),
            None => self.tooltip(snap, hit?, false),
        }
    }

    /// A hover far outside the canvas clears the hover; nothing else to do.
    fn pointer_leave(&mut self) {}

    /// Pins the element under the point, or unpins when one is pinned; remembers the timestep.
    fn click(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        self.frame.needs_redraw = true;
        if self.geom.plot.contains([css_x, css_y]) {
            let x = self.ui.camera.data_from_css_px(self.geom, [css_x, css_y])[0];
            let x = self.xmap().step_of_axis(x);
            let steps = self.data().map_or(0, |d| d.layout.step_count());
            if x.is_finite() && steps > 0 {
                self.ui.last_click_step = Some((x.max(0.0) as u32).min(steps - 1));
            }
        }
        if self.ui.pinned.take().is_some() {
            return self.hover(snap, css_x, css_y);
        }
        let hit = self.element_at(css_x, css_y)?;
        self.pin(snap, hit)
    }

    /// The per-frame overlay in the canvas view's data space ([`TimelineView::draw_overlay`]).
    fn overlay(&mut self) -> Batch {
        self.draw_overlay()
    }

    fn batches(&self) -> (u64, &[Batch]) {
        (
            self.frame.generation,
            self.data()
                .map(|d| d.scene.batches.as_slice())
                .unwrap_or(&[]),
        )
    }

    fn canvas_view(&self) -> View {
        self.ui.camera.canvas_view(self.geom)
    }

    fn needs_redraw(&self) -> bool {
        self.frame.needs_redraw
    }

    fn take_needs_redraw(&mut self) -> bool {
        std::mem::replace(&mut self.frame.needs_redraw, false)
    }

    /// Rebuilds a windowed scene once the camera has been still for [`SETTLE_MS`].
    fn tick(&mut self, now_ms: f64) -> bool {
        match self.ui.settle {
            Settle::Still => {}
            Settle::Moved => self.ui.settle = Settle::MovedSince(now_ms),
            Settle::MovedSince(t) if now_ms - t >= SETTLE_MS => self.settle(),
            Settle::MovedSince(_) => {}
        }
        self.frame.needs_redraw
    }
}

/// Max of the live bytes over `cols` equal columns of the axis range `full` (the timesteps
/// whose span meets each column).
fn decimate_max_on(d: &DeviceData, map: &AxisMap<'_>, full: (f64, f64), cols: usize) -> Vec<u64> {
    let values = d.layout.live_at_step();
    let n = values.len();
    if n == 0 || cols == 0 {
        return Vec::new();
    }
    let w = (full.1 - full.0) / cols as f64;
    let step_at = |c: usize| map.step_of_axis(full.0 + c as f64 * w);
    (0..cols)
        .map(|c| {
            let a = (step_at(c).floor().max(0.0) as usize).min(n - 1);
            let b = (step_at(c + 1).ceil().max(0.0) as usize).clamp(a + 1, n);
            values.range(a, b).max().unwrap_or(0)
        })
        .collect()
}

/// The timeline's state: the camera, the layout's counts and the scene.
pub(super) fn state_value(ui: &TimelineUi, data: Option<&DeviceData>) -> TimelineState {
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
        has_time: d.is_some_and(|d| d.step_time_us.is_some()),
        hover: ui.hover,
        pinned: ui.pinned,
        last_click_step: ui.last_click_step,
        phases: d.map_or(0, |d| d.phases.len()),
    }
}
