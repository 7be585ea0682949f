//! [`App`]'s one `impl`: it hands every request, input and frame to the view shown (through
//! the registry), to `current::Current` (requests) or to `now::Now` (answers).

use std::rc::Rc;

use memviz_analysis::flame::FrameMode;
use memviz_analysis::site::{Site, UserCode};
use memviz_analysis::timeline::Timeline;
use memviz_present::layout::Layout;
use memviz_render::View;
use memviz_snapshot::{DeviceTrace, Snapshot, StackId};

use super::timeline::{Gate, Settle, TimelineView};
use super::{classes, current, files::LoadedFile, flame, now, panels, timeline_data};
use super::{device::DeviceData, selection::Selection};
use super::{App, AxisTicks, DrawableView, FlameAt, ViewKind};
use crate::answer::{
    Avail, DeviceRow, DiffAnswer, FlameInfo, FlamePhase, FlameState, LeaksAnswer, LegendRow,
    LineAnswer, LiveAnswer, MapItemKind, Panel, SearchAnswer, SettingRow, StateRow, StateSelection,
    Tooltip, Unavailable, UserCodeAnswer, ViewerState,
};
use crate::camera::{Camera, PlotGeometry};
use crate::memory::Memory;
use crate::registry::{EmptyView, ViewClass, Views};
use crate::scene::Batch;
use crate::state_view::StateView;
use crate::theme::Theme;
use crate::view::{FrameOutput, FrameSource};

impl App {
    /// An app showing `snap` (named `name`) on its default device in a 1024 × 576 canvas.
    #[must_use]
    pub fn new(name: &str, snap: Snapshot) -> Self {
        let mut app = App::new_empty();
        app.add_file(name, snap);
        app
    }

    /// An app whose views are checked against `memory` ([`crate::cache`]): the page's worker's.
    #[must_use]
    pub fn with_memory(name: &str, snap: Snapshot, memory: Memory) -> Self {
        let mut app = App::new_empty();
        app.views.set_memory(Some(memory));
        app.add_file(name, snap);
        app
    }

    /// An app with no file yet; the views it can show are registered here.
    #[must_use]
    pub fn new_empty() -> Self {
        let geom = PlotGeometry::new(1024.0, 576.0, 1.0);
        let mut views = Views::new(None);
        classes::register(&mut views);
        App {
            files: Vec::new(),
            sel: Selection {
                file: 0,
                device: 0,
                shown: ViewKind::Active,
                timeline: ViewKind::Active,
            },
            geom,
            views,
            theme: Theme::LIGHT,
            time_axis: false,
            needs_redraw: true,
            user_code: UserCode::default(),
            empty: EmptyView::new(geom),
            whatif: Default::default(),
        }
    }

    /// Registers a view class, replacing the class of its kind ([`crate::registry`]).
    pub fn register_view(&mut self, class: ViewClass) {
        self.views.register(class);
    }

    /// Adds a file and makes it current (a file without a trace on the State History).
    pub fn add_file(&mut self, name: &str, snap: Snapshot) {
        let no_trace = !snap.segments.is_empty() && snap.traces.iter().all(DeviceTrace::is_empty);
        self.files
            .push(LoadedFile::new(name, snap, &self.user_code));
        self.select_file(self.files.len() - 1);
        if no_trace && self.sel.shown.is_timeline() {
            self.set_view(ViewKind::State);
        }
    }

    /// Makes file `index` current on its first device with an `oom` event, else its default.
    pub fn select_file(&mut self, index: usize) -> bool {
        let Some(f) = self.files.get(index) else {
            return false;
        };
        let oom = f.device_rows.iter().find(|r| r.ooms > 0);
        let device = oom.map_or_else(|| f.snap.default_device(), |r| r.device);
        self.sel.file = index;
        self.set_device(device);
        true
    }

    /// The snapshot of file `index`.
    #[must_use]
    pub fn file_snapshot(&self, index: usize) -> Option<&Snapshot> {
        self.files.get(index).map(|f| &*f.snap)
    }

    /// The index of the current file.
    #[must_use]
    pub fn current_file(&self) -> usize {
        self.sel.file
    }

    /// The loaded files' names.
    #[must_use]
    pub fn file_names(&self) -> Vec<&str> {
        self.files.iter().map(|f| f.name.as_str()).collect()
    }

    /// The current snapshot.
    #[must_use]
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.files.get(self.sel.file).map(|f| &*f.snap)
    }

    /// The current device.
    #[must_use]
    pub fn device(&self) -> i64 {
        self.sel.device
    }

    /// Switches device (building its timeline once) and fits the camera.
    pub fn set_device(&mut self, device: i64) {
        self.sel.device = device;
        let kind = self.sel.timeline;
        self.ensure(kind);
        if let Some(v) = self.timeline_mut(kind) {
            v.reset_camera();
        }
        self.needs_redraw = true;
        if self.sel.shown != kind {
            self.ensure(self.sel.shown);
        }
    }

    /// The user code sites are named with.
    #[must_use]
    pub fn user_code(&self) -> &UserCode {
        &self.user_code
    }

    /// Shows `kind` (built on first use; a timeline's camera fitted).
    pub fn set_view(&mut self, kind: ViewKind) {
        if !kind.is_timeline() {
            return self.cur().show(kind);
        }
        if let Some(v) = self.timeline_mut(self.sel.timeline) {
            v.ui.hover = None;
        }
        self.sel.shown = kind;
        if kind != self.sel.timeline || !self.views.is_built(self.sel.key(kind)) {
            self.sel.timeline = kind;
            self.set_device(self.sel.device);
        }
        self.needs_redraw = true;
    }

    /// What the canvas shows.
    #[must_use]
    pub fn view(&self) -> ViewKind {
        self.sel.shown
    }

    /// Why the view shown is missing (it could not fit in memory), if it is.
    #[must_use]
    pub fn unavailable(&self) -> Option<&str> {
        self.views.unavailable(self.sel.key(self.sel.shown))
    }

    /// The layout of the timeline shown.
    #[must_use]
    pub fn layout(&self) -> Option<&Layout> {
        self.data().map(|d| &*d.layout)
    }

    /// The timeline of the timeline shown.
    #[must_use]
    pub fn timeline(&self) -> Option<&Timeline> {
        self.data().map(|d| &*d.timeline)
    }

    /// True when the plot is a windowed scene (rebuilt when the camera settles).
    #[must_use]
    pub fn is_windowed(&self) -> bool {
        self.data().is_some_and(|d| d.windowed)
    }

    /// The state history of the current file and device (built on first use).
    pub fn state_view(&mut self) -> Option<&StateView> {
        self.cur().ensure(ViewKind::State);
        self.views
            .get_as::<StateView>(self.sel.key(ViewKind::State))
    }

    /// The annotation phases of the Active Memory Timeline (ranges for [`App::flame_set`]).
    #[must_use]
    pub fn flame_phases(&self) -> Vec<FlamePhase> {
        flame::phases(timeline_data(&self.views, self.sel.key(ViewKind::Active)))
    }

    /// Sets the canvas size in CSS px and the device pixel ratio; every built view follows.
    pub fn resize(&mut self, css_w: f64, css_h: f64, device_pixel_ratio: f64) {
        self.geom = PlotGeometry::new(css_w, css_h, device_pixel_ratio);
        self.empty.resize(css_w, css_h, device_pixel_ratio);
        for v in self.views.all_mut() {
            v.resize(css_w, css_h, device_pixel_ratio);
        }
    }

    to_view! {
        /// Shows everything.
        fn fit();
        /// Wheel/pinch zoom by `factor` (> 1 zooms in) anchored at a canvas point.
        fn zoom_at(css_x: f64, css_y: f64, factor: f64);
        /// Drag-pan by CSS px.
        fn pan_by(dx: f64, dy: f64);
        /// Pointer pressed: a drag pans (in the timeline's overview strip, brushes).
        fn pointer_down(css_x: f64, css_y: f64);
    }

    /// A key, as the view shown reads it (`a`/`d` pan, `w`/`s` zoom, `0` fits): true if used.
    pub fn key(&mut self, key: &str) -> bool {
        self.with_view(Gate::closed(), |_, v| v.key(key)) == Some(true)
    }

    /// A wheel event: `delta_y` in CSS px (negative = zoom in).
    pub fn wheel(&mut self, css_x: f64, css_y: f64, delta_y: f64) {
        if delta_y.is_finite() {
            let factor = 2f64.powf(-delta_y.clamp(-600.0, 600.0) / 300.0);
            self.zoom_at(css_x, css_y, factor);
        }
    }

    /// Double click: fit.
    pub fn double_click(&mut self) {
        self.fit();
    }

    /// Pointer moved: continues a drag (which looks nothing up), else hovers. The tooltip.
    pub fn pointer_move(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let f = |snap: &Snapshot, v: &mut dyn DrawableView| v.pointer_move(snap, css_x, css_y);
        let tip = match self.timeline_of(self.sel.timeline) {
            Some(v) if v.ui.dragging() => self.with_view(Gate::closed(), f).flatten(),
            _ => self.gated(css_x, css_y, false, f),
        };
        self.finish_tip(tip)
    }

    /// Pointer released: without travel, a click (pins / unpins; centres in the overview).
    pub fn pointer_up(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let tip = self.gated(css_x, css_y, true, |s, v| v.pointer_up(s, css_x, css_y));
        self.finish_tip(tip)
    }

    /// Hover: the pinned tooltip, else the element's under the point (x < -1e8: leaving).
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

    /// The element under a canvas point of the timeline shown (`panels::element_at`).
    #[must_use]
    pub fn element_at(&self, css_x: f64, css_y: f64) -> Option<u32> {
        let key = self.sel.key(self.sel.timeline);
        panels::element_at(&self.views, key, [css_x, css_y])
    }

    /// The pinned element.
    #[must_use]
    pub fn pinned(&self) -> Option<u32> {
        self.timeline_of(self.sel.timeline)?.ui.pinned
    }

    /// Pins `element` of the timeline shown (a deep link's); an unknown one unpins.
    pub fn pin(&mut self, element: i64) -> Option<Tooltip> {
        self.needs_redraw = true;
        let n = self.data().map_or(0, |d| d.layout.element_count());
        let Some(e) = u32::try_from(element).ok().filter(|&e| (e as usize) < n) else {
            self.timeline_mut(self.sel.timeline)?.ui.pinned = None;
            return None;
        };
        let tips = self.ensure_tooltips();
        let tip = self
            .timeline_shown(Gate { hit: true, tips })
            .and_then(|(snap, v)| v.pin(&snap, e));
        self.finish_tip(tip)
    }

    /// The timelines' overview brush: shows `[x0, x1)` and fits y to the live bytes there.
    pub fn set_x_window(&mut self, x0: f64, x1: f64) {
        if let Some((_, v)) = self.timeline_shown(Gate::closed()) {
            v.set_x_window(x0, x1);
        }
    }

    /// Shows `x0..x1` (the axis's unit) and bytes `y0..y1` of the timeline: a deep link's view.
    pub fn set_window(&mut self, x0: f64, x1: f64, y0: f64, y1: f64) {
        if let Some((_, v)) = self.timeline_shown(Gate::closed()) {
            v.set_window(x0, x1, y0, y1);
        }
    }

    /// Puts the timelines' x axis on wall-clock time (where usable) or event order (default).
    pub fn set_time_axis(&mut self, on: bool) {
        self.time_axis = on;
        let _ = self.timeline_mut(self.sel.timeline);
        self.needs_redraw = true;
    }

    /// Draws the canvas's non-data colours light or dark; data colours stay.
    pub fn set_theme(&mut self, dark: bool) {
        let theme = Theme::of(dark);
        if self.theme != theme {
            self.theme = theme;
            self.needs_redraw = true;
            // Views take it when reached; this redraws the one shown now.
            let _ = self.with_view(Gate::closed(), |_, v| v.set_theme(&theme));
        }
    }

    /// The canvas theme ([`App::set_theme`]).
    #[must_use]
    pub fn theme(&self) -> Theme {
        self.theme
    }

    /// Once per animation frame (monotonic ms; see [`super::SETTLE_MS`]): true to redraw.
    pub fn tick(&mut self, now_ms: f64) -> bool {
        let app = self.needs_redraw;
        self.with_view(Gate::closed(), |_, v| v.tick(now_ms)) == Some(true) || app
    }

    /// Rebuilds a windowed scene for the current camera now (no-op for static scenes).
    pub fn settle(&mut self) {
        if let Some((_, v)) = self.timeline_shown(Gate::closed()) {
            v.settle();
        }
    }

    /// True while a windowed scene waits for the camera to settle (keep calling [`App::tick`]).
    #[must_use]
    pub fn is_settling(&self) -> bool {
        self.sel.shown == self.sel.timeline
            && (self.timeline_of(self.sel.shown)).is_some_and(|v| v.ui.settle != Settle::Still)
    }

    /// True when the next frame would differ from the last one drawn.
    #[must_use]
    pub fn needs_redraw(&self) -> bool {
        self.needs_redraw || self.shown_view().is_some_and(|v| v.needs_redraw())
    }

    /// Returns and clears the redraw flag (the app's and the view shown's).
    pub fn take_needs_redraw(&mut self) -> bool {
        let key = self.sel.shown_key(&self.views);
        let view = key.and_then(|k| self.views.get_mut(k));
        let view = view.is_some_and(|v| v.take_needs_redraw());
        std::mem::replace(&mut self.needs_redraw, false) || view
    }

    /// The plot batches (data space) of the view shown and their generation within it.
    #[must_use]
    pub fn plot_batches(&self) -> (u64, &[Batch]) {
        self.shown_view().map_or((0, &[]), |v| v.batches())
    }

    /// The view of the whole canvas for this frame.
    #[must_use]
    pub fn canvas_view(&self) -> View {
        self.shown_view()
            .map_or_else(|| self.empty.canvas_view(), |v| v.canvas_view())
    }

    /// The per-frame overlay of the view shown, in the canvas view's data space.
    pub fn overlay(&mut self) -> Batch {
        self.with_view(Gate::closed(), |_, v| v.overlay())
            .unwrap_or_else(|| Batch::unbounded([0.0, 0.0], Vec::new()))
    }

    /// The frame to draw now from the view shown ([`FrameOutput`]); clears the redraw flag.
    pub fn frame(&mut self) -> FrameOutput<'_> {
        // The overlay first: reaching the view hands it the theme, which may rebuild batches.
        let overlay = self.overlay();
        self.take_needs_redraw();
        let source = FrameSource {
            file: self.sel.file,
            device: self.sel.device,
            kind: self.sel.shown_kind(&self.views),
        };
        let (view, clear) = (self.canvas_view(), self.theme.clear());
        let (generation, batches) = self.plot_batches();
        FrameOutput {
            source,
            generation,
            batches,
            overlay,
            view,
            clear,
        }
    }

    /// The last scene build time of the timeline shown, ms.
    #[must_use]
    pub fn scene_build_ms(&self) -> f64 {
        self.data().map_or(0.0, |d| d.scene.build_ms)
    }

    /// The canvas geometry.
    #[must_use]
    pub fn geometry(&self) -> &PlotGeometry {
        &self.geom
    }

    /// The camera of the timeline shown (a camera over nothing when it is not built).
    #[must_use]
    pub fn camera(&self) -> &Camera {
        let v = self.timeline_of(self.sel.timeline);
        v.map_or(&self.empty.camera, |v| &v.ui.camera)
    }

    /// The highlighted element count, when a highlight is set.
    #[must_use]
    pub fn highlighted(&self) -> Option<usize> {
        let kind = self.sel.panel_kind();
        let d = self.timeline_of(kind)?.data()?;
        d.highlight.as_ref().map(|(e, _)| e.len())
    }

    from_now! {
        axis_ticks() -> AxisTicks;
        legend(n: usize) -> Vec<LegendRow>;
        devices() -> Vec<DeviceRow>;
        allocator_settings() -> Vec<SettingRow>;
        state() -> ViewerState;
        panel(legend_entries: usize) -> Panel;
        no_trace_note() -> String;
    }

    to_current! {
        pub fn search(query: &str, only: bool) -> Option<SearchAnswer>;
        pub fn set_highlight(elements: Option<Vec<u32>>, only: bool);
        pub fn lines(all_frames: bool) -> Avail<Vec<LineAnswer>>;
        pub fn highlight_line(file: &str, line: i64, name: &str, all_frames: bool) -> Result<usize, Unavailable>;
        pub fn live(step: i64) -> Option<Avail<LiveAnswer>>;
        pub fn leaks() -> Option<Avail<LeaksAnswer>>;
        pub fn diff(a: usize, b: usize) -> Option<Avail<DiffAnswer>>;
        pub fn flame_diff(a: usize, b: usize, frames: Option<FrameMode>) -> Option<Avail<FlameState>>;
        pub fn flame_set(at: FlameAt, lifetime: bool, frames: Option<FrameMode>) -> Option<Avail<FlameState>>;
        pub fn flame_info() -> Option<FlameInfo>;
        pub fn flame_zoom_to(node: u32) -> bool;
        pub fn flame_node_center(node: u32) -> Option<[f64; 2]>;
        pub fn state_select(k: i64) -> Option<StateSelection>;
        pub fn state_rows(start: usize, count: usize) -> Vec<StateRow>;
        pub fn state_ooms() -> Vec<usize>;
        pub fn state_search(query: &str, from: i64, forward: bool) -> i64;
        pub fn state_focus(addr: u64) -> Option<Tooltip>;
        pub fn state_item_center(kind: MapItemKind, addr: u64) -> Option<[f64; 2]>;
        pub fn site_of_stack(stack: StackId) -> Option<Site>;
        pub fn set_user_code(pattern: &str) -> Result<UserCodeAnswer, String>;
        fn finish_tip(tip: Option<Tooltip>) -> Option<Tooltip>;
        fn ensure_tooltips() -> Result<(), Unavailable>;
    }

    /// Answers one request of the shell ([`crate::request::dispatch`]; `dispatch.rs`).
    pub fn request(&mut self, req: crate::request::Request) -> crate::request::Reply {
        crate::request::dispatch(self, req)
    }

    /// Puts the timeline shown on the chosen x axis (see [`App::set_time_axis`]).
    pub(super) fn sync_axis(&mut self) {
        let _ = self.timeline_mut(self.sel.timeline);
    }

    /// The files, registry and selection, for one request ([`current::Current`]).
    pub(super) fn cur(&mut self) -> current::Current<'_> {
        current::Current {
            files: &mut self.files,
            views: &mut self.views,
            sel: &mut self.sel,
            user_code: &mut self.user_code,
            geom: &self.geom,
            theme: self.theme,
            needs_redraw: &mut self.needs_redraw,
        }
    }

    /// The files, registry and selection, for one answer ([`now::Now`]).
    pub(super) fn now(&self) -> now::Now<'_> {
        now::Now {
            files: &self.files,
            views: &self.views,
            sel: self.sel,
            user_code: &self.user_code,
            geom: &self.geom,
        }
    }

    /// Builds the `kind` view when missing and it fits ([`current::Current::ensure`]).
    pub(super) fn ensure(&mut self, kind: ViewKind) -> bool {
        let ok = self.cur().ensure(kind);
        let _ = self.timeline_mut(kind);
        ok
    }

    /// The timeline of `kind` of the current file and device, when built.
    pub(super) fn timeline_of(&self, kind: ViewKind) -> Option<&TimelineView> {
        self.views.get_as::<TimelineView>(self.sel.key(kind))
    }

    /// The timeline of `kind`, when built, on the app's x axis and theme.
    pub(super) fn timeline_mut(&mut self, kind: ViewKind) -> Option<&mut TimelineView> {
        let (time_axis, theme) = (self.time_axis, self.theme);
        let v = self.views.get_as_mut::<TimelineView>(self.sel.key(kind))?;
        v.set_theme(&theme);
        v.set_sim(self.whatif.curve_for(self.sel.file, self.sel.device, kind));
        if v.ui.time_axis != time_axis {
            v.ui.time_axis = time_axis;
            v.sync_axis();
        }
        Some(v)
    }

    /// The built data of the timeline shown.
    pub(super) fn data(&self) -> Option<&DeviceData> {
        self.timeline_of(self.sel.timeline)?.data()
    }

    /// The view the canvas draws, when built.
    pub(super) fn shown_view(&self) -> Option<&dyn crate::registry::View> {
        self.views.get(self.sel.shown_key(&self.views)?)
    }

    /// Runs `f` on the view drawn (the empty one when none is built), `gate` for a timeline.
    pub(super) fn with_view<R>(
        &mut self,
        gate: Gate,
        f: impl FnOnce(&Snapshot, &mut dyn DrawableView) -> R,
    ) -> Option<R> {
        let snap = Rc::clone(&self.files.get(self.sel.file)?.snap);
        let Some(key) = self.sel.shown_key(&self.views) else {
            return Some(f(&snap, &mut self.empty));
        };
        if let Some(t) = self.timeline_mut(key.kind) {
            t.gate = gate;
        }
        let theme = self.theme;
        let v = self.views.get_mut(key)?;
        v.set_theme(&theme);
        Some(f(&snap, v))
    }

    /// The timeline shown as its own type, for what only a timeline has (windows, pins).
    pub(super) fn timeline_shown(
        &mut self,
        gate: Gate,
    ) -> Option<(Rc<Snapshot>, &mut TimelineView)> {
        if self.sel.shown != self.sel.timeline {
            return None;
        }
        let snap = Rc::clone(&self.files.get(self.sel.file)?.snap);
        let v = self.timeline_mut(self.sel.timeline)?;
        v.gate = gate;
        Some((snap, v))
    }

    /// Runs `f` once a pointer event passed [`current::Current::gate`], else says why not.
    pub(super) fn gated(
        &mut self,
        css_x: f64,
        css_y: f64,
        click: bool,
        f: impl FnOnce(&Snapshot, &mut dyn DrawableView) -> Option<Tooltip>,
    ) -> Option<Tooltip> {
        match self.cur().gate(css_x, css_y, click) {
            Ok(gate) => self.with_view(gate, f).flatten(),
            Err(why) => Some(Tooltip::Unavailable(why)),
        }
    }
}
