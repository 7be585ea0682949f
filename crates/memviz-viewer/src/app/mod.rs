//! [`App`]: the loaded files, the current device, which view is shown ([`ActiveView`]) and
//! everything the shell asks for (ticks, tooltips, legend, JSON state).
//!
//! - `mod.rs`: devices and view switching, and the dispatch of input and frames to the view
//!   shown through [`DrawableView`];
//! - `files.rs`: the loaded files, their device lists, and which one is current;
//! - `device.rs`: what is built per (file, device, timeline kind);
//! - `timeline.rs`: the timelines as a [`DrawableView`], their overlay and axis ticks;
//! - `state.rs`, `flame.rs`: the app's side of the State History and the flamegraph;
//! - `panels.rs`: the panels beside the plot and the memory checks of what they build.

use memviz_analysis::layout::Layout;
use memviz_analysis::site::UserCode;
use memviz_analysis::timeline::Timeline;
use memviz_render::View;
use memviz_snapshot::Snapshot;

mod device;
mod dispatch;
mod files;
mod flame;
mod overlay;
mod panels;
mod sites;
mod state;
mod text;
mod timeline;

pub use crate::answer::FlameAt;
pub use device::{FIRST_SCENE_COLUMNS, PHASE_ROWS, PHASE_ROW_CSS, VIEWER_LAYOUT};
pub use files::{FileAccelerator, LoadedFile};
pub use overlay::{AxisTicks, PhaseLabel};
pub use panels::LIVE_ROWS;
pub use timeline::SETTLE_MS;

use crate::answer::{Tooltip, Unavailable};
use crate::camera::{Camera, PlotGeometry};
use crate::flame_view::FlameView;
use crate::memory::{unavailable_message, view_bytes_per_event, Memory};
use crate::scene::Batch;
use crate::state_view::StateView;
use crate::theme::Theme;
pub use crate::view::{ActiveView, DrawableView, ViewKind, CLICK_SLOP_CSS};
use crate::xaxis::XMap;
use device::{build_device, DeviceData};
use timeline::{Frame, Gate, Settle, TimelineUi, TimelineView};

/// Background colour of the light theme (sRGB RGBA, 0..1); the app's is
/// `App::theme().clear()`.
pub const CLEAR: [f64; 4] = [1.0, 1.0, 1.0, 1.0];

/// The viewer's state (no GPU, no platform).
pub struct App {
    files: Vec<LoadedFile>,
    current: usize,
    device: i64,
    geom: PlotGeometry,
    frame: Frame,
    /// Which view the canvas shows.
    active: ActiveView,
    /// The timelines' camera, hover, pin and kind (kept while another view is shown).
    timeline: TimelineUi,
    /// The state history of (file, device), built on first use.
    state_view: Option<((usize, i64), StateView)>,
    /// The flamegraph of (file, device), built on first use.
    flame_view: Option<((usize, i64), FlameView)>,
    /// The memory probe and budget views are checked against (none: every view is built).
    memory: Option<Memory>,
    /// A view that could not be built for lack of memory, and why.
    unavailable: Option<(ViewKind, String)>,
    /// Which Python files count as the user's code (`App::set_user_code`); each file's
    /// `LoadedFile::sites` classifies with it.
    user_code: UserCode,
}

impl App {
    /// An app showing `snap` (named `name`) on its default device in a 1024 × 576 canvas.
    #[must_use]
    pub fn new(name: &str, snap: Snapshot) -> Self {
        let mut app = App::new_empty();
        app.add_file(name, snap);
        app
    }

    /// An app like [`App::new`] whose views are checked against `memory` before they are built
    /// (see [`crate::memory`]): the page's worker passes its heap probe and budget.
    #[must_use]
    pub fn with_memory(name: &str, snap: Snapshot, memory: Memory) -> Self {
        let mut app = App::new_empty();
        app.memory = Some(memory);
        app.add_file(name, snap);
        app
    }

    /// An app with no file yet: every request answers as before the first file.
    #[must_use]
    pub fn new_empty() -> Self {
        App {
            files: Vec::new(),
            current: 0,
            device: 0,
            geom: PlotGeometry::new(1024.0, 576.0, 1.0),
            frame: Frame {
                generation: 0,
                needs_redraw: true,
                theme: Theme::LIGHT,
            },
            active: ActiveView::Timeline,
            timeline: TimelineUi::new(),
            state_view: None,
            flame_view: None,
            memory: None,
            unavailable: None,
            user_code: UserCode::default(),
        }
    }

    /// Why the view shown is missing (it could not fit in memory), if it is.
    #[must_use]
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable
            .as_ref()
            .filter(|(k, _)| *k == self.view())
            .map(|(_, m)| m.as_str())
    }

    /// True when a view of `kind` for the current file and device fits in memory. When it does
    /// not, the views of other files, devices and kinds are released first (they are rebuilt
    /// when shown again); when it still does not, [`App::unavailable`] says why.
    fn fits(&mut self, kind: ViewKind) -> bool {
        let Some(mem) = self.memory else {
            return true;
        };
        let events = self
            .snapshot()
            .and_then(|s| s.trace(self.device))
            .map_or(0, |t| t.len());
        let mut need = events as u64 * view_bytes_per_event(kind);
        let active_built = self
            .files
            .get(self.current)
            .is_some_and(|f| f.devices.contains_key(&(self.device, ViewKind::Active)));
        if kind == ViewKind::Flame && !active_built {
            need += events as u64 * view_bytes_per_event(ViewKind::Active);
        }
        // The Private Pools view of a device without a private pool shares the Active Memory
        // Timeline's timeline and layout (`build_device`): it adds its colours and scene only.
        let shares = |other: ViewKind| {
            self.files
                .get(self.current)
                .is_some_and(|f| f.devices.contains_key(&(self.device, other)))
                && self
                    .snapshot()
                    .is_some_and(|s| !memviz_analysis::timeline::has_private_pool(s, self.device))
        };
        if (kind == ViewKind::Pools && shares(ViewKind::Active))
            || (kind == ViewKind::Active && shares(ViewKind::Pools))
        {
            need = events as u64;
        }
        if need > mem.free() {
            self.release_views_but(&[kind]);
        }
        let free = mem.free();
        if need <= free {
            if self.unavailable.as_ref().is_some_and(|(k, _)| *k == kind) {
                self.unavailable = None;
            }
            return true;
        }
        self.unavailable = Some((kind, unavailable_message(kind, need, free, events)));
        false
    }

    /// Drops every built view except what showing the kinds in `keep` for the current file and
    /// device needs, and the current Active Memory Timeline: search, the tables, tooltips and
    /// the flamegraph read it, and rebuilding it later in a heap already grown to its 4 GiB
    /// ceiling can fail where the estimate saw room (a 4 GB file: State History released it,
    /// the flamegraph's rebuild then ran out of memory). A view that does not fit beside it
    /// says so instead.
    fn release_views_but(&mut self, keep: &[ViewKind]) {
        let (cur, dev) = (self.current, self.device);
        for (i, f) in self.files.iter_mut().enumerate() {
            f.devices.retain(|&(d, k), _| {
                i == cur && d == dev && (keep.contains(&k) || k == ViewKind::Active)
            });
        }
        // A view of another (file, device), or not one to show: released.
        let stale = |k: Option<(usize, i64)>, kind: ViewKind| {
            !keep.contains(&kind) || k != Some((cur, dev))
        };
        if stale(self.state_view.as_ref().map(|v| v.0), ViewKind::State) {
            self.state_view = None;
        }
        if stale(self.flame_view.as_ref().map(|v| v.0), ViewKind::Flame) {
            self.flame_view = None;
        }
    }

    /// The current device.
    #[must_use]
    pub fn device(&self) -> i64 {
        self.device
    }

    /// Switches device (building its timeline and layout once) and fits the camera.
    pub fn set_device(&mut self, device: i64) {
        self.device = device;
        self.timeline.hover = None;
        self.timeline.pinned = None;
        let kind = self.timeline.kind;
        let key = (device, kind);
        let built = self
            .files
            .get(self.current)
            .is_some_and(|f| f.devices.contains_key(&key));
        if !built && self.fits(kind) {
            if let Some(f) = self.files.get_mut(self.current) {
                let data = build_device(&f.snap, device, kind, &f.devices);
                f.devices.insert(key, data);
            }
        }
        let (steps, peak) = self
            .data()
            .map(|d| (d.layout.step_count(), d.layout.peak_bytes))
            .unwrap_or((0, 0));
        self.timeline.camera = Camera::new(steps, peak);
        self.timeline.camera_time = false;
        self.update_zoom_cap();
        self.frame.generation += 1;
        self.frame.needs_redraw = true;
        self.timeline.settle = Settle::Still;
        self.sync_axis();
        match self.active {
            ActiveView::State => self.ensure_state_view(),
            ActiveView::Flame => self.ensure_flame_view(),
            ActiveView::Timeline => {}
        }
    }

    // ----- views ------------------------------------------------------------------------------

    /// Shows `kind`: a timeline kind (its timeline and layout built for the current device on
    /// first use, camera fitted), the Allocator State History or the flamegraph.
    pub fn set_view(&mut self, kind: ViewKind) {
        match kind {
            ViewKind::Flame => {
                self.active = ActiveView::Flame;
                self.timeline.hover = None;
                self.ensure_flame_view();
                self.sync_flame_matches();
            }
            ViewKind::State => {
                self.active = ActiveView::State;
                self.timeline.hover = None;
                self.ensure_state_view();
            }
            ViewKind::Active | ViewKind::Segments | ViewKind::Pools => {
                self.active = ActiveView::Timeline;
                if kind != self.timeline.kind {
                    self.timeline.kind = kind;
                    self.set_device(self.device);
                }
            }
        }
        self.frame.generation += 1;
        self.frame.needs_redraw = true;
    }

    /// What the canvas shows.
    #[must_use]
    pub fn view(&self) -> ViewKind {
        match self.active {
            ActiveView::Flame => ViewKind::Flame,
            ActiveView::State => ViewKind::State,
            ActiveView::Timeline => self.timeline.kind,
        }
    }

    /// Which view the canvas shows.
    #[must_use]
    pub fn active_view(&self) -> ActiveView {
        self.active
    }

    /// The timestep of the last click on the plot (pinned or not), when there was one.
    #[must_use]
    pub fn last_click_step(&self) -> Option<u32> {
        self.timeline.last_click_step
    }

    /// The highlighted element count, when a highlight is set.
    #[must_use]
    pub fn highlighted(&self) -> Option<usize> {
        self.parts()?.1.highlight.as_ref().map(|(e, _)| e.len())
    }

    /// The built data of the timeline kind of the timeline view.
    fn data(&self) -> Option<&DeviceData> {
        self.files
            .get(self.current)?
            .devices
            .get(&(self.device, self.timeline.kind))
    }

    /// The snapshot and the data of [`App::timeline_kind`] (what search and the tables use).
    fn parts(&self) -> Option<(&Snapshot, &DeviceData)> {
        let f = self.files.get(self.current)?;
        Some((
            &f.snap,
            f.devices.get(&(self.device, self.timeline_kind()))?,
        ))
    }

    /// The layout of the current device.
    #[must_use]
    pub fn layout(&self) -> Option<&Layout> {
        self.data().map(|d| &*d.layout)
    }

    /// The timeline of the current device.
    #[must_use]
    pub fn timeline(&self) -> Option<&Timeline> {
        self.data().map(|d| &*d.timeline)
    }

    /// True when the plot is a windowed scene (rebuilt when the camera settles).
    #[must_use]
    pub fn is_windowed(&self) -> bool {
        self.data().is_some_and(|d| d.windowed)
    }

    fn update_zoom_cap(&mut self) {
        let data = self
            .files
            .get(self.current)
            .and_then(|f| f.devices.get(&(self.device, self.timeline.kind)));
        self.timeline.update_zoom_cap(&self.geom, data);
    }

    // ----- the view shown ---------------------------------------------------------------------

    /// True when the flamegraph is shown and built for the current file and device.
    fn flame_shown(&self) -> bool {
        self.active == ActiveView::Flame
            && self
                .flame_view
                .as_ref()
                .is_some_and(|(k, _)| *k == (self.current, self.device))
    }

    /// True when the State History is shown and built for the current file and device.
    fn state_shown(&self) -> bool {
        self.active == ActiveView::State
            && self
                .state_view
                .as_ref()
                .is_some_and(|(k, _)| *k == (self.current, self.device))
    }

    /// The timeline of the current (file, device, kind) as a view, for one call.
    fn timeline_view(&mut self, gate: Gate) -> Option<(&Snapshot, TimelineView<'_>)> {
        let key = (self.device, self.timeline.kind);
        let LoadedFile { snap, devices, .. } = self.files.get_mut(self.current)?;
        let view = TimelineView {
            ui: &mut self.timeline,
            frame: &mut self.frame,
            geom: &self.geom,
            snap,
            data: devices.get_mut(&key),
            file: self.current,
            device: self.device,
            gate,
        };
        Some((snap, view))
    }

    /// Runs `f` on the view shown: the flamegraph or the State History when shown and built,
    /// else the timeline (which also stands in while a view is unavailable).
    fn with_view<R>(
        &mut self,
        gate: Gate,
        f: impl FnOnce(&Snapshot, &mut dyn DrawableView) -> R,
    ) -> Option<R> {
        let theme = self.frame.theme;
        if self.flame_shown() {
            let (k, v) = self.flame_view.as_mut()?;
            v.set_theme(&theme);
            return Some(f(&self.files.get(k.0)?.snap, v));
        }
        if self.state_shown() {
            let (k, v) = self.state_view.as_mut()?;
            v.set_theme(&theme);
            return Some(f(&self.files.get(k.0)?.snap, v));
        }
        let (snap, mut view) = self.timeline_view(gate)?;
        Some(f(snap, &mut view))
    }

    /// What a pointer event at a canvas point needs checked before it reaches the timeline:
    /// the hit index when the point is in the plot (always for a click, else when nothing is
    /// pinned) and the tooltips when one will be shown. `Err`: the sentence to answer with.
    fn gate(&mut self, css_x: f64, css_y: f64, click: bool) -> Result<Gate, Unavailable> {
        if self.flame_shown() || self.state_shown() {
            return Ok(Gate::closed());
        }
        let in_plot = self.geom.plot.contains([css_x, css_y]);
        if in_plot && (click || self.timeline.pinned.is_none()) {
            self.ensure_hit_index()?;
        }
        let hit = self.hit_index_fits_now();
        let target = self
            .timeline
            .pinned
            .or_else(|| hit.then(|| self.element_at(css_x, css_y)).flatten());
        let tips = match target {
            Some(_) => self.ensure_tooltips(),
            None => Ok(()),
        };
        Ok(Gate { hit, tips })
    }

    /// Runs `f` (which answers a tooltip) on the view shown once [`App::gate`] passed; its
    /// sentence when it did not.
    fn gated(
        &mut self,
        css_x: f64,
        css_y: f64,
        click: bool,
        f: impl FnOnce(&Snapshot, &mut dyn DrawableView) -> Option<Tooltip>,
    ) -> Option<Tooltip> {
        match self.gate(css_x, css_y, click) {
            Ok(gate) => self.with_view(gate, f).flatten(),
            Err(why) => Some(Tooltip::Unavailable(why)),
        }
    }

    // ----- geometry and camera -------------------------------------------------------------

    /// Sets the canvas size in CSS px and the device pixel ratio.
    pub fn resize(&mut self, css_w: f64, css_h: f64, device_pixel_ratio: f64) {
        self.geom = PlotGeometry::new(css_w, css_h, device_pixel_ratio);
        if let Some((_, v)) = self.state_view.as_mut() {
            v.resize(css_w, css_h, device_pixel_ratio);
        }
        if let Some((_, v)) = self.flame_view.as_mut() {
            v.resize(css_w, css_h, device_pixel_ratio);
        }
        if let Some((_, mut v)) = self.timeline_view(Gate::closed()) {
            v.resize(css_w, css_h, device_pixel_ratio);
        }
    }

    #[must_use]
    pub fn geometry(&self) -> &PlotGeometry {
        &self.geom
    }

    /// The timelines' camera.
    #[must_use]
    pub fn camera(&self) -> &Camera {
        &self.timeline.camera
    }

    /// Shows everything.
    pub fn fit(&mut self) {
        self.with_view(Gate::closed(), |_, v| v.fit());
    }

    /// Wheel/pinch zoom by `factor` (> 1 zooms in) anchored at the cursor.
    pub fn zoom_at(&mut self, css_x: f64, css_y: f64, factor: f64) {
        self.with_view(Gate::closed(), |_, v| v.zoom_at(css_x, css_y, factor));
    }

    /// A wheel event: `delta_y` in CSS px (negative = zoom in).
    pub fn wheel(&mut self, css_x: f64, css_y: f64, delta_y: f64) {
        if delta_y.is_finite() {
            self.zoom_at(
                css_x,
                css_y,
                2f64.powf(-delta_y.clamp(-600.0, 600.0) / 300.0),
            );
        }
    }

    /// Drag-pan by CSS px.
    pub fn pan_by(&mut self, dx_css: f64, dy_css: f64) {
        self.with_view(Gate::closed(), |_, v| v.pan_by(dx_css, dy_css));
    }

    /// Double click: fit.
    pub fn double_click(&mut self) {
        self.fit();
    }

    /// Keyboard, as the view shown reads it (the timeline: `a`/`d`/arrows pan, `w`/`s` zoom x,
    /// `+`/`-` zoom both axes, `0` fits). Returns true when the key was used.
    pub fn key(&mut self, key: &str) -> bool {
        self.with_view(Gate::closed(), |_, v| v.key(key))
            .unwrap_or(false)
    }

    /// The overview brush: shows timesteps `[x0, x1)` and fits y to
    /// `max(live_at_step over the window) × 1.05`. Only on the timeline.
    pub fn set_x_window(&mut self, x0: f64, x1: f64) {
        if self.active != ActiveView::Timeline {
            return;
        }
        if let Some((_, mut v)) = self.timeline_view(Gate::closed()) {
            v.set_x_window(x0, x1);
        }
    }

    /// The x (timesteps, or µs on the time axis) at a canvas x inside the overview strip.
    #[must_use]
    pub fn overview_step_at(&self, css_x: f64) -> f64 {
        self.timeline.overview_step_at(&self.geom, css_x)
    }

    /// Pointer pressed: a drag pans (in the timeline's overview strip, brushes).
    pub fn pointer_down(&mut self, css_x: f64, css_y: f64) {
        self.with_view(Gate::closed(), |_, v| v.pointer_down(css_x, css_y));
    }

    /// Pointer moved: continues a drag, else hovers. Returns the tooltip to show, if any.
    pub fn pointer_move(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let f = |snap: &Snapshot, v: &mut dyn DrawableView| v.pointer_move(snap, css_x, css_y);
        if self.timeline.dragging() {
            // A drag looks nothing up.
            let tip = self.with_view(Gate::closed(), f).flatten();
            return self.finish_tip(tip);
        }
        let tip = self.gated(css_x, css_y, false, f);
        self.finish_tip(tip)
    }

    /// Pointer released: a press-release without travel is a click (pins / unpins), a click in
    /// the overview centres the window there. Returns the tooltip to show.
    pub fn pointer_up(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let tip = self.gated(css_x, css_y, true, |snap, v| {
            v.pointer_up(snap, css_x, css_y)
        });
        self.finish_tip(tip)
    }

    /// Hover at a canvas point: the pinned tooltip if one is pinned, else the tooltip
    /// ([`Tooltip::Element`]) of the element under the point. A point
    /// far outside the canvas (x < -1e8) is the pointer leaving it.
    pub fn hover(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let tip = self.gated(css_x, css_y, false, |snap, v| {
            if css_x < -1.0e8 {
                v.pointer_leave();
            }
            v.hover(snap, css_x, css_y)
        });
        self.finish_tip(tip)
    }

    /// Click: pins the element under the point (or unpins when one is pinned).
    pub fn click(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let tip = self.gated(css_x, css_y, true, |snap, v| v.click(snap, css_x, css_y));
        self.finish_tip(tip)
    }

    /// The element under a canvas point, if any.
    #[must_use]
    pub fn element_at(&self, css_x: f64, css_y: f64) -> Option<u32> {
        if !self.geom.plot.contains([css_x, css_y]) || !self.hit_index_fits_now() {
            return None;
        }
        let [x, y] = self
            .timeline
            .camera
            .data_from_css_px(&self.geom, [css_x, css_y]);
        let (snap, device, data) = (self.snapshot()?, self.device, self.data());
        let step =
            timeline::axis_map(self.timeline.camera_time, snap, device, data).step_of_axis(x);
        self.data()?.layout.hit(step, y)
    }

    /// The pinned element.
    #[must_use]
    pub fn pinned(&self) -> Option<u32> {
        self.timeline.pinned
    }

    /// Pins the tooltip of `element` of the timeline shown (a deep link's selection); a
    /// negative or unknown element unpins. Returns the pinned tooltip, if any.
    pub fn pin(&mut self, element: i64) -> Option<Tooltip> {
        self.frame.needs_redraw = true;
        let n = self.data().map_or(0, |d| d.layout.element_count());
        match u32::try_from(element).ok().filter(|&e| (e as usize) < n) {
            Some(e) if self.active == ActiveView::Timeline => {
                let tips = self.ensure_tooltips();
                let tip = {
                    let (snap, mut v) = self.timeline_view(Gate { hit: true, tips })?;
                    v.pin(snap, e)
                };
                self.finish_tip(tip)
            }
            _ => {
                self.timeline.pinned = None;
                None
            }
        }
    }

    /// Sets the visible window of the timeline (`x0..x1` in the x axis's unit, timesteps or µs;
    /// bytes `y0..y1`), clamped
    /// to what the camera allows; a deep link's view. Non-finite values are ignored.
    pub fn set_window(&mut self, x0: f64, x1: f64, y0: f64, y1: f64) {
        if self.active != ActiveView::Timeline {
            return;
        }
        if let Some((_, mut v)) = self.timeline_view(Gate::closed()) {
            v.set_window(x0, x1, y0, y1);
        }
    }

    // ----- frames -----------------------------------------------------------------------------

    /// Call once per animation frame with a monotonic time: rebuilds a windowed scene once the
    /// camera has been still for [`SETTLE_MS`]. Returns true when a redraw is needed.
    pub fn tick(&mut self, now_ms: f64) -> bool {
        if self.active != ActiveView::Timeline {
            return self.needs_redraw();
        }
        self.sync_axis();
        let redraw = self.frame.needs_redraw;
        self.timeline_view(Gate::closed())
            .map_or(redraw, |(_, mut v)| v.tick(now_ms))
    }

    /// Puts the timeline's camera and scene on the chosen x axis ([`TimelineView::sync_axis`]).
    fn sync_axis(&mut self) {
        if let Some((_, mut v)) = self.timeline_view(Gate::closed()) {
            v.sync_axis();
        }
    }

    /// Rebuilds a windowed scene for the current camera now (no-op for static scenes).
    pub fn settle(&mut self) {
        self.timeline.settle = Settle::Still;
        if let Some((_, mut v)) = self.timeline_view(Gate::closed()) {
            v.settle();
        }
    }

    /// True while a windowed scene waits for the camera to settle (keep calling [`App::tick`]).
    #[must_use]
    pub fn is_settling(&self) -> bool {
        self.active == ActiveView::Timeline && self.timeline.settle != Settle::Still
    }

    /// True when the next frame would differ from the last one drawn.
    #[must_use]
    pub fn needs_redraw(&self) -> bool {
        self.frame.needs_redraw
            || (self.active == ActiveView::Flame
                && self
                    .flame_view
                    .as_ref()
                    .is_some_and(|(_, v)| v.needs_redraw()))
            || (self.active == ActiveView::State
                && self
                    .state_view
                    .as_ref()
                    .is_some_and(|(_, v)| v.needs_redraw()))
    }

    /// Returns and clears the redraw flag.
    pub fn take_needs_redraw(&mut self) -> bool {
        let fv = self
            .flame_view
            .as_mut()
            .is_some_and(|(_, v)| v.take_needs_redraw());
        let sv = self
            .state_view
            .as_mut()
            .is_some_and(|(_, v)| v.take_needs_redraw());
        std::mem::replace(&mut self.frame.needs_redraw, false) || fv || sv
    }

    /// The plot batches (data space) and their generation (changes when they must be uploaded).
    #[must_use]
    pub fn plot_batches(&self) -> (u64, &[Batch]) {
        // Each view's generations are kept distinct (and the app's mixed in), so a switch
        // re-uploads.
        let mixed = |g: u64, times: u64, plus: u64| {
            g.wrapping_mul(times).wrapping_add(plus) ^ (self.frame.generation << 32)
        };
        if self.active == ActiveView::Flame {
            if let Some((_, v)) = self.flame_view.as_ref() {
                let (g, b) = v.batches();
                return (mixed(g, 4, 2), b);
            }
        }
        if self.active == ActiveView::State {
            if let Some((_, v)) = self.state_view.as_ref() {
                let (g, b) = v.batches();
                return (mixed(g, 2, 1), b);
            }
        }
        (
            self.frame.generation,
            self.data()
                .map(|d| d.scene.batches.as_slice())
                .unwrap_or(&[]),
        )
    }

    /// The last scene build time, ms.
    #[must_use]
    pub fn scene_build_ms(&self) -> f64 {
        self.data().map_or(0.0, |d| d.scene.build_ms)
    }

    /// The view of the whole canvas for this frame (see [`Camera::canvas_view`]).
    #[must_use]
    pub fn canvas_view(&self) -> View {
        if self.active == ActiveView::Flame {
            if let Some((_, v)) = self.flame_view.as_ref() {
                return v.canvas_view();
            }
        }
        if self.active == ActiveView::State {
            if let Some((_, v)) = self.state_view.as_ref() {
                return v.canvas_view();
            }
        }
        self.timeline.camera.canvas_view(&self.geom)
    }

    /// The per-frame overlay of the view shown, in the canvas view's data space. Drawn after
    /// the plot.
    pub fn overlay(&mut self) -> Batch {
        self.with_view(Gate::closed(), |_, v| v.overlay())
            .unwrap_or_else(|| Batch::unbounded([0.0, 0.0], Vec::new()))
    }
}
