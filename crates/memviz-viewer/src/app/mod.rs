//! [`App`]: the loaded files, the current device, the camera, hover/pin state, dirty flags, and
//! everything the shell asks for (ticks, tooltips, legend, JSON state).

use std::collections::HashMap;
use std::rc::Rc;

use memviz_analysis::layout::{Layout, LayoutOptions};
use memviz_analysis::steps::StepValues;
use memviz_analysis::timeline::{self, Timeline};
use memviz_analysis::tooltip::{tooltip, TooltipContext};
use memviz_analysis::{color, layout};
use memviz_render::{rgba, Trapezoid, View};
use memviz_snapshot::Snapshot;
use serde_json::json;

mod panels;
pub use panels::{unavailable_json, LIVE_ROWS};

use crate::camera::{Camera, PlotGeometry, RectCss, Y_HEADROOM};
use crate::flame_view::FlameView;
use crate::memory::{unavailable_message, view_bytes_per_event, Memory, Panel};
use crate::scene::{self, Batch, PlotScene, STATIC_MAX_POINTS};
use crate::state_view::StateView;
use crate::step_time::StepTimeIndex;
use crate::ticks::{self, Tick};

/// Camera idle time after which a windowed scene is rebuilt, ms.
pub const SETTLE_MS: f64 = 120.0;
/// Pointer travel (CSS px) under which a press-release is a click, not a drag.
pub const CLICK_SLOP_CSS: f64 = 4.0;
/// Background colour (sRGB RGBA, 0..1).
pub const CLEAR: [f64; 4] = [1.0, 1.0, 1.0, 1.0];

const BG: u32 = rgba(255, 255, 255, 255);
const AXIS: u32 = rgba(90, 90, 90, 255);
const GRID: u32 = rgba(0, 0, 0, 28);
const PEAK: u32 = rgba(220, 30, 30, 230);
const PEAK_LINE: u32 = rgba(220, 30, 30, 110);
const OVERVIEW_BG: u32 = rgba(244, 244, 246, 255);
const OVERVIEW_FILL: u32 = rgba(70, 110, 170, 255);
const BRUSH: u32 = rgba(30, 100, 220, 50);
const BRUSH_EDGE: u32 = rgba(30, 100, 220, 220);
const HOVER_EDGE: u32 = rgba(0, 0, 0, 255);

/// Everything built once per (file, device).
struct DeviceData {
    /// Shared by the Active Memory Timeline and the Private Pools view of a device without a
    /// private pool (where the two are equal, `timeline::has_private_pool`).
    timeline: Rc<Timeline>,
    layout: Rc<Layout>,
    /// Colours drawn: `base_colors` with the highlight applied.
    colors: Vec<u8>,
    base_colors: Vec<u8>,
    /// The highlighted elements (sorted) and whether the others are hidden, when set.
    highlight: Option<(Vec<u32>, bool)>,
    /// `external_annotations` phases with their band row (nesting level, < PHASE_ROWS).
    phases: Vec<(memviz_analysis::annotations::Phase, u32)>,
    tips: Option<TooltipContext>,
    /// Relative time (µs since the first timed event) per timestep, non-decreasing, when the
    /// trace has times (derived on demand from the step events).
    step_time_us: Option<StepTimeIndex>,
    /// Static scene, or the latest windowed one.
    scene: PlotScene,
    windowed: bool,
    /// Instances per column of the last column level of detail.
    column_density: f64,
}

/// One loaded snapshot file.
pub struct LoadedFile {
    pub name: String,
    pub snap: Snapshot,
    devices: HashMap<(i64, ViewKind), DeviceData>,
}

/// What the canvas shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewKind {
    /// Active Memory Timeline (SEMANTICS §3).
    Active,
    /// Active Cached Segment Timeline (§4, with `segment_map` / `segment_unmap`).
    Segments,
    /// Allocated Memory incl. Private Pools (§5, pool envelopes).
    Pools,
    /// Allocator State History (§6): the event list and the segment map.
    State,
    /// Memory flamegraph: live bytes by stack at a moment (or × lifetime), an icicle chart.
    Flame,
}

impl ViewKind {
    /// `active`, `segments`, `pools` or `state`.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "active" => Self::Active,
            "segments" => Self::Segments,
            "pools" => Self::Pools,
            "state" => Self::State,
            "flame" => Self::Flame,
            _ => return None,
        })
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Segments => "segments",
            Self::Pools => "pools",
            Self::State => "state",
            Self::Flame => "flame",
        }
    }
}

/// Both axes' ticks, positions in canvas CSS px.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AxisTicks {
    /// x ticks: `pos_css_px` is a canvas x.
    pub x: Vec<Tick>,
    /// y ticks: `pos_css_px` is a canvas y.
    pub y: Vec<Tick>,
    /// `"time"` or `"timesteps"`.
    pub x_unit: &'static str,
    /// Labels of the annotation phases wide enough to name (CSS px, clipped to the plot).
    pub phases: Vec<PhaseLabel>,
}

/// A phase band's label position.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PhaseLabel {
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub name: String,
}

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

/// The viewer's state (no GPU, no platform).
pub struct App {
    files: Vec<LoadedFile>,
    current: usize,
    device: i64,
    geom: PlotGeometry,
    camera: Camera,
    hover: Option<u32>,
    pinned: Option<u32>,
    time_axis: bool,
    drag: Drag,
    /// Bumped whenever the plot batches change (the GPU side re-uploads).
    generation: u64,
    needs_redraw: bool,
    /// Windowed scenes: the camera moved since the last rebuild, first seen at this time.
    unsettled_since: Option<Option<f64>>,
    overview_cols: Vec<u64>,
    overview_key: (usize, i64, ViewKind, u32),
    /// The timeline kind shown (never `State`).
    kind: ViewKind,
    /// True while the Allocator State History is shown instead of the timeline.
    show_state: bool,
    /// The state history of (file, device), built on first use.
    state_view: Option<((usize, i64), StateView)>,
    /// Timestep of the last click in the plot.
    last_click_step: Option<u32>,
    /// True while the flamegraph is shown instead of the timeline.
    show_flame: bool,
    /// The flamegraph of (file, device), built on first use.
    flame_view: Option<((usize, i64), FlameView)>,
    /// The memory probe and budget views are checked against (none: every view is built).
    memory: Option<Memory>,
    /// A view that could not be built for lack of memory, and why.
    unavailable: Option<(ViewKind, String)>,
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

    fn new_empty() -> Self {
        App {
            files: Vec::new(),
            current: 0,
            device: 0,
            geom: PlotGeometry::new(1024.0, 576.0, 1.0),
            camera: Camera::new(1, 1),
            hover: None,
            pinned: None,
            time_axis: false,
            drag: Drag::None,
            generation: 0,
            needs_redraw: true,
            unsettled_since: None,
            overview_cols: Vec::new(),
            overview_key: (usize::MAX, 0, ViewKind::Active, 0),
            kind: ViewKind::Active,
            show_state: false,
            state_view: None,
            last_click_step: None,
            show_flame: false,
            flame_view: None,
            memory: None,
            unavailable: None,
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
                    .is_some_and(|s| !timeline::has_private_pool(s, self.device))
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

    /// Adds a file and makes it current (on its default device).
    pub fn add_file(&mut self, name: &str, snap: Snapshot) {
        self.files.push(LoadedFile {
            name: name.to_string(),
            snap,
            devices: HashMap::new(),
        });
        self.select_file(self.files.len() - 1);
    }

    /// Makes file `index` current; false when there is no such file.
    pub fn select_file(&mut self, index: usize) -> bool {
        let Some(f) = self.files.get(index) else {
            return false;
        };
        let device = f.snap.default_device();
        self.current = index;
        self.set_device(device);
        true
    }

    /// The snapshot of file `index`.
    #[must_use]
    pub fn file_snapshot(&self, index: usize) -> Option<&Snapshot> {
        self.files.get(index).map(|f| &f.snap)
    }

    /// The index of the current file.
    #[must_use]
    pub fn current_file(&self) -> usize {
        self.current
    }

    /// The loaded files' names.
    #[must_use]
    pub fn file_names(&self) -> Vec<&str> {
        self.files.iter().map(|f| f.name.as_str()).collect()
    }

    /// The current snapshot.
    #[must_use]
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.files.get(self.current).map(|f| &f.snap)
    }

    /// The current device.
    #[must_use]
    pub fn device(&self) -> i64 {
        self.device
    }

    /// Switches device (building its timeline and layout once) and fits the camera.
    pub fn set_device(&mut self, device: i64) {
        self.device = device;
        self.hover = None;
        self.pinned = None;
        let key = (device, self.kind);
        let built = self
            .files
            .get(self.current)
            .is_some_and(|f| f.devices.contains_key(&key));
        if !built && self.fits(self.kind) {
            if let Some(f) = self.files.get_mut(self.current) {
                let data = build_device(&f.snap, device, self.kind, &f.devices);
                f.devices.insert(key, data);
            }
        }
        if let Some(f) = self.files.get(self.current) {
            self.time_axis = f
                .devices
                .get(&key)
                .is_some_and(|d| d.step_time_us.is_some());
        }
        let (steps, peak) = self
            .data()
            .map(|d| (d.layout.step_count(), d.layout.peak_bytes))
            .unwrap_or((0, 0));
        self.camera = Camera::new(steps, peak);
        self.update_zoom_cap();
        self.generation += 1;
        self.needs_redraw = true;
        self.unsettled_since = None;
        if self.show_state {
            self.ensure_state_view();
        }
        if self.show_flame {
            self.ensure_flame_view();
        }
    }

    // ----- views ------------------------------------------------------------------------------

    /// Shows `kind`: a timeline kind (its timeline and layout built for the current device on
    /// first use, camera fitted) or the Allocator State History.
    pub fn set_view(&mut self, kind: ViewKind) {
        self.show_flame = kind == ViewKind::Flame;
        if kind == ViewKind::Flame {
            self.show_state = false;
            self.hover = None;
            self.ensure_flame_view();
            self.sync_flame_matches();
        } else if kind == ViewKind::State {
            self.show_state = true;
            self.hover = None;
            self.ensure_state_view();
        } else {
            self.show_state = false;
            if kind != self.kind {
                self.kind = kind;
                self.set_device(self.device);
            }
        }
        self.generation += 1;
        self.needs_redraw = true;
    }

    /// What the canvas shows.
    #[must_use]
    pub fn view(&self) -> ViewKind {
        if self.show_flame {
            ViewKind::Flame
        } else if self.show_state {
            ViewKind::State
        } else {
            self.kind
        }
    }

    fn ensure_flame_view(&mut self) {
        let key = (self.current, self.device);
        if self.flame_view.as_ref().is_some_and(|(k, _)| *k == key) {
            return;
        }
        if !self.fits(ViewKind::Flame) {
            self.flame_view = None;
            return;
        }
        let geom = self.geom;
        let device = self.device;
        let Some(f) = self.files.get_mut(self.current) else {
            self.flame_view = None;
            return;
        };
        if !f.devices.contains_key(&(device, ViewKind::Active)) {
            let data = build_device(&f.snap, device, ViewKind::Active, &f.devices);
            f.devices.insert((device, ViewKind::Active), data);
        }
        let Some(data) = f.devices.get(&(device, ViewKind::Active)) else {
            self.flame_view = None;
            return;
        };
        let mut fv = FlameView::new(&f.snap, device, &data.timeline, &data.layout, &geom);
        if data.highlight.is_some() {
            fv.set_matches(
                &f.snap,
                device,
                &data.timeline,
                &data.layout,
                data.highlight.clone(),
            );
        }
        self.flame_view = Some((key, fv));
    }

    /// Gives the flamegraph the Active Memory Timeline's highlight (search matches, a source
    /// line's allocations) of the current (file, device).
    fn sync_flame_matches(&mut self) {
        let device = self.device;
        let Some(((cur, dev), fv)) = self.flame_view.as_mut() else {
            return;
        };
        if (*cur, *dev) != (self.current, device) {
            return;
        }
        let Some(f) = self.files.get(*cur) else {
            return;
        };
        if let Some(d) = f.devices.get(&(device, ViewKind::Active)) {
            fv.set_matches(&f.snap, device, &d.timeline, &d.layout, d.highlight.clone());
            self.needs_redraw = true;
        }
    }

    /// Shows the diff flamegraph of files `a` and `b` (live allocations of the final state, all
    /// devices; `all_frames`: every frame) in the flamegraph view. Returns its state JSON
    /// (`null` for an unknown file).
    pub fn flame_diff(&mut self, a: usize, b: usize, all_frames: bool) -> String {
        use memviz_analysis::diff::live_folded;
        use memviz_analysis::flame::{FlameTree, ValueUnit};
        if self.files.get(a).is_none() || self.files.get(b).is_none() {
            return "null".into();
        }
        if let Err(why) = self.check_pair(Panel::FlameDiff, a, b) {
            return unavailable_json(&why);
        }
        let tree = {
            let (Some(fa), Some(fb)) = (self.files.get(a), self.files.get(b)) else {
                return "null".into();
            };
            let tree = FlameTree::build_diff(
                &live_folded(&fa.snap, None, all_frames),
                &live_folded(&fb.snap, None, all_frames),
                ValueUnit::Bytes,
            );
            (tree, fa.name.clone(), fb.name.clone())
        };
        self.set_view(ViewKind::Flame);
        self.needs_redraw = true;
        match self.flame_view.as_mut() {
            Some((_, fv)) => fv.show_diff(tree.0, &tree.1, &tree.2),
            None => "null".into(),
        }
    }

    /// The flamegraph shown, when the flamegraph view is on.
    fn fv(&mut self) -> Option<(&Snapshot, &mut FlameView)> {
        if !self.show_flame {
            return None;
        }
        let (key, fv) = self.flame_view.as_mut()?;
        if *key != (self.current, self.device) {
            return None;
        }
        let snap = &self.files.get(key.0)?.snap;
        Some((snap, fv))
    }

    /// Rebuilds the flamegraph at a moment: `at` = `peak`, `click` (the last clicked timestep,
    /// else the peak) or a timestep number; `lifetime`: bytes × lifetime over the trace. A time
    /// range gives bytes × lifetime within it: `at` = `range:<from>:<to>` (timesteps, half-open)
    /// or `phase:<i>` (the range of phase `i` of [`App::flame_phases`]). Returns the flamegraph
    /// state JSON.
    pub fn flame_set(&mut self, at: &str, lifetime: bool, all_frames: bool) -> String {
        use memviz_analysis::flame::{At, FlameOptions};
        self.ensure_flame_view();
        if self.flame_view.is_some() {
            if let Err(why) = self.check_panel(Panel::FlameMoment, ViewKind::Active, false) {
                return unavailable_json(&why);
            }
        }
        let device = self.device;
        let Some(f) = self.files.get(self.current) else {
            return "null".into();
        };
        let (Some(d), Some((_, fv))) = (
            f.devices.get(&(device, ViewKind::Active)),
            self.flame_view.as_mut(),
        ) else {
            return "null".into();
        };
        let range = if let Some(i) = at.strip_prefix("phase:") {
            i.parse::<usize>()
                .ok()
                .and_then(|i| d.phases.get(i))
                .map(|(p, _)| (p.start_step, p.end_step))
        } else if let Some(r) = at.strip_prefix("range:") {
            let mut it = r.split(':').map(|x| x.parse::<u32>().ok());
            match (it.next().flatten(), it.next().flatten()) {
                (Some(a), Some(b)) if a <= b => Some((a, b)),
                _ => None,
            }
        } else {
            None
        };
        let moment = match at {
            "click" => self.last_click_step.map_or(At::Peak, At::Step),
            n => n.parse::<u32>().map_or(At::Peak, At::Step),
        };
        self.needs_redraw = true;
        let opts = FlameOptions {
            all_frames,
            lifetime: lifetime || range.is_some(),
            step_range: range,
        };
        fv.set_options(&f.snap, device, &d.timeline, &d.layout, moment, opts)
    }

    /// The `external_annotations` phases of the current device's Active Memory Timeline (time
    /// ranges for [`App::flame_set`]), JSON `[{index, name, start_step, end_step}]`, at most
    /// 1000, in start order.
    #[must_use]
    pub fn flame_phases(&self) -> String {
        let Some(d) = self
            .files
            .get(self.current)
            .and_then(|f| f.devices.get(&(self.device, ViewKind::Active)))
        else {
            return "[]".into();
        };
        let list: Vec<serde_json::Value> = d
            .phases
            .iter()
            .enumerate()
            .take(1000)
            .map(|(i, (p, _))| {
                json!({"index": i, "name": p.name, "start_step": p.start_step, "end_step": p.end_step})
            })
            .collect();
        json!(list).to_string()
    }

    /// The flamegraph's breadcrumb, labels and state, JSON `{breadcrumb, labels, state}`.
    pub fn flame_info(&mut self) -> String {
        self.ensure_flame_view();
        match self.flame_view.as_ref() {
            Some((_, fv)) => format!(
                "{{\"breadcrumb\":{},\"labels\":{},\"state\":{}}}",
                fv.breadcrumb_json(),
                fv.labels_json(),
                fv.state_json()
            ),
            None => "null".into(),
        }
    }

    /// Zooms the flamegraph to a node of the full tree (from the breadcrumb).
    pub fn flame_zoom_to(&mut self, node: u32) -> bool {
        self.needs_redraw = true;
        self.fv().is_some_and(|(_, fv)| fv.zoom_to(node))
    }

    /// Canvas CSS px of a flamegraph node's centre (in the current zoom).
    pub fn flame_node_center(&mut self, node: u32) -> Option<[f64; 2]> {
        let (_, fv) = self.fv()?;
        fv.node_center_css(node)
    }

    fn ensure_state_view(&mut self) {
        let key = (self.current, self.device);
        if self.state_view.as_ref().is_some_and(|(k, _)| *k == key) {
            return;
        }
        if !self.fits(ViewKind::State) {
            self.state_view = None;
            return;
        }
        self.state_view = self
            .files
            .get(self.current)
            .map(|f| (key, StateView::new(&f.snap, self.device, &self.geom)));
    }

    /// The state history shown, when the State History view is on.
    fn sv(&mut self) -> Option<(&Snapshot, &mut StateView)> {
        if !self.show_state {
            return None;
        }
        let (key, sv) = self.state_view.as_mut()?;
        if *key != (self.current, self.device) {
            return None;
        }
        let snap = &self.files.get(key.0)?.snap;
        Some((snap, sv))
    }

    /// The state history of the current file and device (built on first use).
    pub fn state_view(&mut self) -> Option<&StateView> {
        self.ensure_state_view();
        self.state_view.as_ref().map(|(_, v)| v)
    }

    /// Selects event `k` of the state history (-1: the last); the selection JSON
    /// ([`StateView::selection_json`]).
    pub fn state_select(&mut self, k: i64) -> String {
        self.ensure_state_view();
        self.needs_redraw = true;
        let Some(f) = self.files.get(self.current) else {
            return "null".into();
        };
        match self.state_view.as_mut() {
            Some((_, v)) => v.select(&f.snap, k),
            None => "null".into(),
        }
    }

    /// Rows of the state history's event list, JSON ([`StateView::rows_json`]).
    pub fn state_rows(&mut self, start: usize, count: usize) -> String {
        self.ensure_state_view();
        match (self.files.get(self.current), self.state_view.as_ref()) {
            (Some(f), Some((_, v))) => v.rows_json(&f.snap, start, count),
            _ => "[]".into(),
        }
    }

    /// The `oom` events of the state history, JSON array of indices.
    pub fn state_ooms(&mut self) -> String {
        self.ensure_state_view();
        match (self.files.get(self.current), self.state_view.as_ref()) {
            (Some(f), Some((_, v))) => v.oom_events_json(&f.snap),
            _ => "[]".into(),
        }
    }

    /// The next (or previous) event whose row contains `query`, or -1.
    pub fn state_search(&mut self, query: &str, from: i64, forward: bool) -> i64 {
        self.ensure_state_view();
        match (self.files.get(self.current), self.state_view.as_ref()) {
            (Some(f), Some((_, v))) => v.search(&f.snap, query, from, forward),
            _ => -1,
        }
    }

    /// Pins and shows the block at `addr` in the map; its tooltip JSON.
    pub fn state_focus(&mut self, addr: u64) -> Option<String> {
        self.needs_redraw = true;
        let (snap, v) = self.sv()?;
        v.focus(snap, addr)
    }

    /// Canvas CSS px of the centre of a map item (`segment`, `block` or `waste` at `addr`).
    pub fn state_item_center(&mut self, kind: &str, addr: u64) -> Option<[f64; 2]> {
        use memviz_analysis::segmap::Item;
        let item = match kind {
            "segment" => Item::Segment(addr),
            "block" => Item::Block(addr),
            "waste" => Item::Waste(addr),
            _ => return None,
        };
        let (_, v) = self.sv()?;
        v.item_center_css(item)
    }

    /// `allocator_settings` as readable rows, JSON `[{key, value, meaning}]` (empty when the
    /// file has none).
    #[must_use]
    pub fn allocator_settings(&self) -> String {
        let Some(snap) = self.snapshot() else {
            return "[]".into();
        };
        crate::settings::rows_json(snap)
    }

    /// The timestep of the last click on the plot (pinned or not), when there was one.
    #[must_use]
    pub fn last_click_step(&self) -> Option<u32> {
        self.last_click_step
    }

    /// The highlighted element count, when a highlight is set.
    #[must_use]
    pub fn highlighted(&self) -> Option<usize> {
        self.parts()?.1.highlight.as_ref().map(|(e, _)| e.len())
    }

    fn data(&self) -> Option<&DeviceData> {
        self.files
            .get(self.current)?
            .devices
            .get(&(self.device, self.kind))
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
        let (px_w, px_h) = self.geom.plot_px();
        // Both scene kinds are tiled; the cap follows the current batches' largest extent.
        // (A windowed scene is rebuilt around each settled window, so its cap deepens as one
        // zooms in and settles.)
        let (ex, ey) = self
            .data()
            .map_or((0.0, 0.0), |d| (d.scene.extent[0], d.scene.extent[1]));
        let min_x = memviz_render::min_span(ex, px_w).max(1.0);
        let min_y = memviz_render::min_span(ey, px_h).max(1.0);
        self.camera.set_zoom_cap(min_x, min_y);
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
        self.update_zoom_cap();
        self.camera_moved();
    }

    #[must_use]
    pub fn geometry(&self) -> &PlotGeometry {
        &self.geom
    }

    #[must_use]
    pub fn camera(&self) -> &Camera {
        &self.camera
    }

    fn camera_moved(&mut self) {
        self.needs_redraw = true;
        if self.is_windowed() {
            self.unsettled_since = Some(None);
        }
    }

    /// Whole trace, `y ∈ [0, peak × 1.05]`.
    pub fn fit(&mut self) {
        if let Some((_, f)) = self.fv() {
            f.fit();
            return;
        }
        if let Some((_, v)) = self.sv() {
            v.fit();
            return;
        }
        self.camera.fit();
        self.camera_moved();
    }

    /// Wheel/pinch zoom by `factor` (> 1 zooms in) anchored at the cursor.
    pub fn zoom_at(&mut self, css_x: f64, css_y: f64, factor: f64) {
        if let Some((_, f)) = self.fv() {
            f.zoom_at(css_x, css_y, factor);
            return;
        }
        if let Some((_, v)) = self.sv() {
            v.zoom_at(css_x, css_y, factor);
            return;
        }
        self.camera.zoom_at(&self.geom, [css_x, css_y], factor);
        self.camera_moved();
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
        if let Some((_, f)) = self.fv() {
            f.pan_by(dx_css, dy_css);
            return;
        }
        if let Some((_, v)) = self.sv() {
            v.pan_by(dx_css, dy_css);
            return;
        }
        self.camera.pan_by(&self.geom, dx_css, dy_css);
        self.camera_moved();
    }

    /// Double click: fit.
    pub fn double_click(&mut self) {
        self.fit();
    }

    /// Keyboard: `a`/`d`/`ArrowLeft`/`ArrowRight` pan x, `ArrowUp`/`ArrowDown` pan y,
    /// `w`/`s` zoom x in/out around the centre, `+`/`=`/`-` zoom both axes, `0` fits.
    /// Returns true when the key was used.
    pub fn key(&mut self, key: &str) -> bool {
        if let Some((_, f)) = self.fv() {
            return f.key(key);
        }
        if let Some((_, v)) = self.sv() {
            return v.key(key);
        }
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

    /// The overview brush: shows timesteps `[x0, x1)` and fits y to
    /// `max(live_at_step over the window) × 1.05`.
    pub fn set_x_window(&mut self, x0: f64, x1: f64) {
        if self.show_state || self.show_flame || !x0.is_finite() || !x1.is_finite() {
            return;
        }
        let (lo, hi) = if x0 <= x1 { (x0, x1) } else { (x1, x0) };
        let (hi, top) = {
            let Some(d) = self.data() else { return };
            let live = d.layout.live_at_step();
            let n = live.len();
            let hi = hi.max(lo + 1.0);
            let a = lo.floor().clamp(0.0, n as f64) as usize;
            let b = hi.ceil().clamp(0.0, n as f64) as usize;
            let top = live.range(a, b.max(a)).max().unwrap_or(d.layout.peak_bytes);
            (hi, top)
        };
        self.camera.x_range = (lo, hi);
        self.camera.y_range = (0.0, (top.max(1) as f64) * Y_HEADROOM);
        self.camera.clamp();
        self.camera_moved();
    }

    /// Timestep at a canvas x inside the overview strip.
    #[must_use]
    pub fn overview_step_at(&self, css_x: f64) -> f64 {
        let o = self.geom.overview;
        let f = ((css_x - o.left) / o.width()).clamp(0.0, 1.0);
        self.camera.full_x.0 + f * (self.camera.full_x.1 - self.camera.full_x.0)
    }

    /// Pointer pressed: a drag in the plot pans, in the overview brushes.
    pub fn pointer_down(&mut self, css_x: f64, css_y: f64) {
        if let Some((_, f)) = self.fv() {
            f.pointer_down(css_x, css_y);
            return;
        }
        if let Some((_, v)) = self.sv() {
            v.pointer_down(css_x, css_y);
            return;
        }
        let pos = [css_x, css_y];
        if self.geom.overview.contains(pos) {
            self.drag = Drag::Brush { start_x: css_x };
        } else {
            self.drag = Drag::Pan {
                last: pos,
                start: pos,
                moved: false,
            };
        }
    }

    /// Pointer moved: continues a drag, else hovers. Returns the tooltip JSON to show, if any.
    pub fn pointer_move(&mut self, css_x: f64, css_y: f64) -> Option<String> {
        if let Some((snap, f)) = self.fv() {
            return f.pointer_move(snap, css_x, css_y);
        }
        if let Some((snap, v)) = self.sv() {
            return v.pointer_move(snap, css_x, css_y);
        }
        match self.drag {
            Drag::Pan { last, start, moved } => {
                let moved = moved || (css_x - start[0]).hypot(css_y - start[1]) > CLICK_SLOP_CSS;
                if moved {
                    self.pan_by(css_x - last[0], css_y - last[1]);
                }
                self.drag = Drag::Pan {
                    last: if moved { [css_x, css_y] } else { last },
                    start,
                    moved,
                };
                None
            }
            Drag::Brush { start_x } => {
                let (a, b) = (self.overview_step_at(start_x), self.overview_step_at(css_x));
                if (css_x - start_x).abs() > 2.0 {
                    self.set_x_window(a, b);
                }
                None
            }
            Drag::None => self.hover(css_x, css_y),
        }
    }

    /// Pointer released: a press-release without travel is a click (pins / unpins), a click in
    /// the overview centres the window there. Returns the tooltip JSON to show.
    pub fn pointer_up(&mut self, css_x: f64, css_y: f64) -> Option<String> {
        if let Some((snap, f)) = self.fv() {
            return f.pointer_up(snap, css_x, css_y);
        }
        if let Some((snap, v)) = self.sv() {
            return v.pointer_up(snap, css_x, css_y);
        }
        let drag = std::mem::replace(&mut self.drag, Drag::None);
        match drag {
            Drag::Pan {
                moved: false,
                start,
                ..
            } if (css_x - start[0]).hypot(css_y - start[1]) <= CLICK_SLOP_CSS => {
                self.click(css_x, css_y)
            }
            Drag::Brush { start_x } if (css_x - start_x).abs() <= 2.0 => {
                let c = self.overview_step_at(css_x);
                let half = (self.camera.x_range.1 - self.camera.x_range.0) * 0.5;
                self.set_x_window(c - half, c + half);
                None
            }
            _ => self.hover(css_x, css_y),
        }
    }

    // ----- scene -----------------------------------------------------------------------------

    /// Call once per animation frame with a monotonic time: rebuilds a windowed scene once the
    /// camera has been still for [`SETTLE_MS`]. Returns true when a redraw is needed.
    pub fn tick(&mut self, now_ms: f64) -> bool {
        if self.show_state || self.show_flame {
            return self.needs_redraw();
        }
        if let Some(since) = self.unsettled_since {
            match since {
                None => self.unsettled_since = Some(Some(now_ms)),
                Some(t) if now_ms - t >= SETTLE_MS => self.settle(),
                Some(_) => {}
            }
        }
        self.needs_redraw
    }

    /// Rebuilds a windowed scene for the current camera now (no-op for static scenes).
    pub fn settle(&mut self) {
        self.unsettled_since = None;
        if !self.is_windowed() {
            return;
        }
        let cam = self.camera;
        let (px_w, px_h) = self.geom.plot_px();
        let Some(d) = self
            .files
            .get_mut(self.current)
            .and_then(|f| f.devices.get_mut(&(self.device, self.kind)))
        else {
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
        let dpr = self.geom.device_pixel_ratio.max(1.0);
        d.scene = if (x1 - x0) / f64::from(columns) >= scene::COLUMN_LOD_STEPS_PER_PX {
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
            let mut built = scene::build_columns(&d.layout, &d.colors, window, cols, tol);
            if built.instance_count() > scene::COLUMN_LOD_BUDGET && cols != half {
                cols = half;
                built = scene::build_columns(&d.layout, &d.colors, window, cols, tol);
            }
            d.column_density = built.instance_count() as f64 / f64::from(cols);
            built
        } else {
            scene::build_windowed(&d.layout, &d.colors, window, columns, y_tol)
        };
        self.update_zoom_cap();
        self.generation += 1;
        self.needs_redraw = true;
    }

    /// True while a windowed scene waits for the camera to settle (keep calling [`App::tick`]).
    #[must_use]
    pub fn is_settling(&self) -> bool {
        !self.show_state && !self.show_flame && self.unsettled_since.is_some()
    }

    /// True when the next frame would differ from the last one drawn.
    #[must_use]
    pub fn needs_redraw(&self) -> bool {
        self.needs_redraw
            || (self.show_flame
                && self
                    .flame_view
                    .as_ref()
                    .is_some_and(|(_, v)| v.needs_redraw()))
            || (self.show_state
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
        let sv = fv
            | self
                .state_view
                .as_mut()
                .is_some_and(|(_, v)| v.take_needs_redraw());
        std::mem::replace(&mut self.needs_redraw, false) || sv
    }

    /// The plot batches (data space) and their generation (changes when they must be uploaded).
    #[must_use]
    pub fn plot_batches(&self) -> (u64, &[Batch]) {
        if self.show_flame {
            if let Some((_, v)) = self.flame_view.as_ref() {
                let (g, b) = v.batches();
                return (
                    g.wrapping_mul(4).wrapping_add(2) ^ (self.generation << 32),
                    b,
                );
            }
        }
        if self.show_state {
            if let Some((_, v)) = self.state_view.as_ref() {
                let (g, b) = v.batches();
                // Distinct from the timeline's generations, so switching re-uploads.
                return (
                    g.wrapping_mul(2).wrapping_add(1) ^ (self.generation << 32),
                    b,
                );
            }
        }
        (
            self.generation,
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
        if self.show_flame {
            if let Some((_, v)) = self.flame_view.as_ref() {
                return v.canvas_view();
            }
        }
        if self.show_state {
            if let Some((_, v)) = self.state_view.as_ref() {
                return v.canvas_view();
            }
        }
        self.camera.canvas_view(&self.geom)
    }

    fn overview_columns(&mut self) -> &[u64] {
        let cols = (self.geom.overview.width().round().max(1.0)) as u32;
        let key = (self.current, self.device, self.kind, cols);
        if self.overview_key != key {
            self.overview_key = key;
            self.overview_cols = match self.data() {
                Some(d) => decimate_max(d.layout.live_at_step(), cols as usize),
                None => Vec::new(),
            };
        }
        &self.overview_cols
    }

    /// The per-frame overlay in the canvas view's data space: peak marker, grid, gutter masks,
    /// axes and tick marks, overview strip and brush, hover outline. Drawn after the plot.
    pub fn overlay(&mut self) -> Batch {
        if let Some((_, f)) = self.fv() {
            return f.overlay();
        }
        if let Some((_, v)) = self.sv() {
            return v.overlay();
        }
        let cols = self.overview_columns().to_vec();
        let geom = self.geom;
        let cam = self.camera;
        let origin = cam.data_from_css_px(&geom, [0.0, geom.css_h]);
        let mut out: Vec<Trapezoid> = Vec::new();
        let to_data = |p: [f64; 2]| cam.data_from_css_px(&geom, p);
        let rect = |out: &mut Vec<Trapezoid>, r: RectCss, color: u32| {
            let a = to_data([r.left, r.bottom]);
            let b = to_data([r.right, r.top]);
            out.push(Trapezoid::rect(
                (a[0] - origin[0]) as f32,
                (b[0] - origin[0]) as f32,
                (a[1] - origin[1]) as f32,
                (b[1] - origin[1]) as f32,
                color,
            ));
        };
        let p = geom.plot;
        let ticks = self.axis_ticks();
        // Grid lines over the plot (faint), under the masks.
        for t in &ticks.y {
            rect(
                &mut out,
                RectCss {
                    left: p.left,
                    right: p.right,
                    top: t.pos_css_px,
                    bottom: t.pos_css_px,
                },
                GRID,
            );
        }
        // Peak marker: a faint horizontal line at the peak, a triangle above the peak step.
        if let Some(d) = self.data() {
            let peak = d.layout.peak_bytes as f64;
            let px = cam.css_px_from_data(&geom, [f64::from(d.layout.peak_step), peak]);
            rect(
                &mut out,
                RectCss {
                    left: p.left,
                    right: p.right,
                    top: px[1],
                    bottom: px[1],
                },
                PEAK_LINE,
            );
            if p.contains(px)
                || (px[0] >= p.left
                    && px[0] <= p.right
                    && px[1] >= p.top - 12.0
                    && px[1] <= p.bottom)
            {
                let (x, y) = (px[0], px[1]);
                let a = to_data([x - 6.0, y - 10.0]);
                let m = to_data([x, y]);
                let b = to_data([x + 6.0, y - 10.0]);
                let (ox, oy) = (origin[0], origin[1]);
                out.push(Trapezoid::new(
                    (a[0] - ox) as f32,
                    (m[0] - ox) as f32,
                    [(a[1] - oy) as f32, (a[1] - oy) as f32],
                    [(m[1] - oy) as f32, (a[1] - oy) as f32],
                    PEAK,
                ));
                out.push(Trapezoid::new(
                    (m[0] - ox) as f32,
                    (b[0] - ox) as f32,
                    [(m[1] - oy) as f32, (b[1] - oy) as f32],
                    [(b[1] - oy) as f32, (b[1] - oy) as f32],
                    PEAK,
                ));
            }
        }
        // Hover / pinned element outline: its pieces inside the window, as hairlines.
        if let (Some(e), Some(d)) = (self.pinned.or(self.hover), self.data()) {
            let h = d.layout.height_bytes(e) as f64;
            let pts = d.layout.clipped_points(e, cam.x_range.0, cam.x_range.1);
            for w in pts.windows(2).take(4096) {
                let (Some(&(xa, ba)), Some(&(xb, bb))) = (w.first(), w.get(1)) else {
                    continue;
                };
                for off in [0.0, h] {
                    out.push(Trapezoid::new(
                        (xa - origin[0]) as f32,
                        (xb - origin[0]) as f32,
                        [(ba + off - origin[1]) as f32; 2],
                        [(bb + off - origin[1]) as f32; 2],
                        HOVER_EDGE,
                    ));
                }
            }
        }
        // Annotation phases: bands at the top of the plot, a faint line where each starts.
        if let Some(d) = self.data() {
            let mut drawn = 0;
            for (i, (ph, row)) in d.phases.iter().enumerate() {
                let x0 = cam.css_px_from_data(&geom, [f64::from(ph.start_step), 0.0])[0];
                let x1 = cam.css_px_from_data(&geom, [f64::from(ph.end_step), 0.0])[0];
                if x1 < p.left || x0 > p.right || drawn > 4000 {
                    continue;
                }
                drawn += 1;
                let top = p.top + f64::from(*row) * PHASE_ROW_CSS;
                let (l, r) = (x0.max(p.left), x1.min(p.right));
                rect(
                    &mut out,
                    RectCss {
                        left: l,
                        right: r.max(l),
                        top,
                        bottom: top + PHASE_ROW_CSS - 1.0,
                    },
                    PHASE_COLORS[i % 2],
                );
                if x1 - x0 >= 8.0 && x0 >= p.left {
                    rect(
                        &mut out,
                        RectCss {
                            left: x0,
                            right: x0,
                            top,
                            bottom: p.bottom,
                        },
                        PHASE_EDGE,
                    );
                }
            }
        }
        // Masks over the gutters (the plot's instances extend past the window).
        let (w, hgt) = (geom.css_w, geom.css_h);
        for r in [
            RectCss {
                left: 0.0,
                right: p.left,
                top: 0.0,
                bottom: hgt,
            },
            RectCss {
                left: p.right,
                right: w,
                top: 0.0,
                bottom: hgt,
            },
            RectCss {
                left: 0.0,
                right: w,
                top: 0.0,
                bottom: p.top,
            },
            RectCss {
                left: 0.0,
                right: w,
                top: p.bottom,
                bottom: hgt,
            },
        ] {
            rect(&mut out, r, BG);
        }
        // Axes and tick marks.
        rect(
            &mut out,
            RectCss {
                left: p.left,
                right: p.left,
                top: p.top,
                bottom: p.bottom,
            },
            AXIS,
        );
        rect(
            &mut out,
            RectCss {
                left: p.left,
                right: p.right,
                top: p.bottom,
                bottom: p.bottom,
            },
            AXIS,
        );
        for t in &ticks.y {
            rect(
                &mut out,
                RectCss {
                    left: p.left - 5.0,
                    right: p.left,
                    top: t.pos_css_px,
                    bottom: t.pos_css_px,
                },
                AXIS,
            );
        }
        for t in &ticks.x {
            rect(
                &mut out,
                RectCss {
                    left: t.pos_css_px,
                    right: t.pos_css_px,
                    top: p.bottom,
                    bottom: p.bottom + 5.0,
                },
                AXIS,
            );
        }
        // Overview strip: total memory per column (max), then the brush.
        let o = geom.overview;
        rect(&mut out, o, OVERVIEW_BG);
        let full_top = cam.full_y.1.max(1.0);
        let n = cols.len().max(1) as f64;
        for (i, &v) in cols.iter().enumerate() {
            let frac = (v as f64 / full_top).clamp(0.0, 1.0);
            if frac <= 0.0 {
                continue;
            }
            let l = o.left + o.width() * (i as f64 / n);
            let r = o.left + o.width() * ((i + 1) as f64 / n);
            rect(
                &mut out,
                RectCss {
                    left: l,
                    right: r,
                    top: o.bottom - frac * o.height(),
                    bottom: o.bottom,
                },
                OVERVIEW_FILL,
            );
        }
        let fx = |x: f64| {
            let f = (x - cam.full_x.0) / (cam.full_x.1 - cam.full_x.0);
            o.left + f.clamp(0.0, 1.0) * o.width()
        };
        let (b0, b1) = (fx(cam.x_range.0), fx(cam.x_range.1));
        rect(
            &mut out,
            RectCss {
                left: b0,
                right: b1,
                top: o.top,
                bottom: o.bottom,
            },
            BRUSH,
        );
        rect(
            &mut out,
            RectCss {
                left: b0,
                right: b0,
                top: o.top,
                bottom: o.bottom,
            },
            BRUSH_EDGE,
        );
        rect(
            &mut out,
            RectCss {
                left: b1,
                right: b1,
                top: o.top,
                bottom: o.bottom,
            },
            BRUSH_EDGE,
        );
        Batch::unbounded(origin, out)
    }

    // ----- text for the shell ----------------------------------------------------------------

    /// Selects the x axis: wall-clock time (only when the trace has `time_us`) or timesteps.
    pub fn set_time_axis(&mut self, on: bool) {
        self.time_axis = on && self.data().is_some_and(|d| d.step_time_us.is_some());
        self.needs_redraw = true;
    }

    /// Ticks of both axes for the current camera, inside the plot, increasing.
    #[must_use]
    pub fn axis_ticks(&self) -> AxisTicks {
        if self.show_state || self.show_flame {
            return AxisTicks {
                x: Vec::new(),
                y: Vec::new(),
                x_unit: "none",
                phases: Vec::new(),
            };
        }
        let cam = &self.camera;
        let g = &self.geom;
        let p = g.plot;
        let xpos = |x: f64| cam.css_px_from_data(g, [x, 0.0])[0];
        let ypos = |y: f64| cam.css_px_from_data(g, [0.0, y])[1];
        let y = ticks::byte_ticks(cam.y_range.0, cam.y_range.1, p.height(), ypos);
        let trace = self
            .files
            .get(self.current)
            .and_then(|f| f.snap.trace(self.device));
        let times = self
            .data()
            .zip(trace)
            .and_then(|(d, tr)| Some(d.step_time_us.as_ref()?.with(tr, &d.layout)))
            .filter(|_| self.time_axis);
        let (x, x_unit) = match times {
            Some(t) => (
                ticks::time_ticks(cam.x_range.0, cam.x_range.1, p.width(), &t, xpos),
                "time",
            ),
            None => (
                ticks::step_ticks(cam.x_range.0, cam.x_range.1, p.width(), xpos),
                "timesteps",
            ),
        };
        let inside_x = |t: &Tick| t.pos_css_px >= p.left - 0.5 && t.pos_css_px <= p.right + 0.5;
        let inside_y = |t: &Tick| t.pos_css_px >= p.top - 0.5 && t.pos_css_px <= p.bottom + 0.5;
        let mut phases = Vec::new();
        if let Some(d) = self.data() {
            for (ph, row) in &d.phases {
                let x0 = xpos(f64::from(ph.start_step)).max(p.left);
                let x1 = xpos(f64::from(ph.end_step)).min(p.right);
                if x1 - x0 >= 40.0 && phases.len() < 200 {
                    phases.push(PhaseLabel {
                        left: x0,
                        right: x1,
                        top: p.top + f64::from(*row) * PHASE_ROW_CSS,
                        name: ph.name.clone(),
                    });
                }
            }
        }
        AxisTicks {
            x: x.into_iter().filter(inside_x).collect(),
            y: y.into_iter().filter(inside_y).collect(),
            x_unit,
            phases,
        }
    }

    /// The element under a canvas point, if any.
    #[must_use]
    pub fn element_at(&self, css_x: f64, css_y: f64) -> Option<u32> {
        if !self.geom.plot.contains([css_x, css_y]) {
            return None;
        }
        if !self.hit_index_fits_now() {
            return None;
        }
        let [x, y] = self.camera.data_from_css_px(&self.geom, [css_x, css_y]);
        self.data()?.layout.hit(x, y)
    }

    fn tooltip_json(&mut self, element: u32, pinned: bool) -> Option<String> {
        if let Err(why) = self.ensure_tooltips() {
            return Some(unavailable_json(&why));
        }
        let geom = self.geom;
        let f = self.files.get_mut(self.current)?;
        let snap = &f.snap;
        let d = f.devices.get_mut(&(self.device, self.kind))?;
        let _ = geom;
        let ctx = d
            .tips
            .get_or_insert_with(|| TooltipContext::new(snap, self.device));
        let info = tooltip(snap, ctx, &d.timeline, &d.layout, element)?;
        let mut v = serde_json::to_value(&info).ok()?;
        if let Some(obj) = v.as_object_mut() {
            obj.insert("text".into(), json!(info.text()));
            obj.insert("pinned".into(), json!(pinned));
        }
        Some(v.to_string())
    }

    /// Hover at a canvas point: the pinned tooltip if one is pinned, else the tooltip
    /// (`TooltipInfo` JSON plus `text` and `pinned`) of the element under the point.
    pub fn hover(&mut self, css_x: f64, css_y: f64) -> Option<String> {
        if let Some((_, f)) = self.fv() {
            if css_x < -1.0e8 {
                f.pointer_leave();
            }
            return f.hover(css_x, css_y);
        }
        if let Some((snap, v)) = self.sv() {
            if css_x < -1.0e8 {
                v.pointer_leave();
            }
            return v.hover(snap, css_x, css_y);
        }
        if self.pinned.is_none() && self.geom.plot.contains([css_x, css_y]) {
            if let Err(why) = self.ensure_hit_index() {
                return Some(unavailable_json(&why));
            }
        }
        let hit = self.element_at(css_x, css_y);
        if hit != self.hover {
            self.hover = hit;
            self.needs_redraw = true;
        }
        match self.pinned {
            Some(p) => self.tooltip_json(p, true),
            None => self.tooltip_json(hit?, false),
        }
    }

    /// Click: pins the element under the point (or unpins when one is pinned).
    pub fn click(&mut self, css_x: f64, css_y: f64) -> Option<String> {
        if let Some((_, f)) = self.fv() {
            return f.click(css_x, css_y);
        }
        if let Some((snap, v)) = self.sv() {
            return v.click(snap, css_x, css_y);
        }
        self.needs_redraw = true;
        if self.geom.plot.contains([css_x, css_y]) {
            let x = self.camera.data_from_css_px(&self.geom, [css_x, css_y])[0];
            let steps = self.data().map_or(0, |d| d.layout.step_count());
            if x.is_finite() && steps > 0 {
                self.last_click_step = Some((x.max(0.0) as u32).min(steps - 1));
            }
        }
        if self.pinned.take().is_some() {
            return self.hover(css_x, css_y);
        }
        if self.geom.plot.contains([css_x, css_y]) {
            if let Err(why) = self.ensure_hit_index() {
                return Some(unavailable_json(&why));
            }
        }
        let hit = self.element_at(css_x, css_y)?;
        self.pinned = Some(hit);
        self.hover = Some(hit);
        self.tooltip_json(hit, true)
    }

    /// The pinned element.
    #[must_use]
    pub fn pinned(&self) -> Option<u32> {
        self.pinned
    }

    /// Pins the tooltip of `element` of the timeline shown (a deep link's selection); a
    /// negative or unknown element unpins. Returns the pinned tooltip JSON, if any.
    pub fn pin(&mut self, element: i64) -> Option<String> {
        self.needs_redraw = true;
        let n = self.data().map_or(0, |d| d.layout.element_count());
        match u32::try_from(element).ok().filter(|&e| (e as usize) < n) {
            Some(e) if !self.show_state && !self.show_flame => {
                self.pinned = Some(e);
                self.hover = Some(e);
                self.tooltip_json(e, true)
            }
            _ => {
                self.pinned = None;
                None
            }
        }
    }

    /// Sets the visible window of the timeline (timesteps `x0..x1`, bytes `y0..y1`), clamped
    /// to what the camera allows; a deep link's view. Non-finite values are ignored.
    pub fn set_window(&mut self, x0: f64, x1: f64, y0: f64, y1: f64) {
        if self.show_state || self.show_flame || ![x0, x1, y0, y1].iter().all(|v| v.is_finite()) {
            return;
        }
        self.camera.x_range = (x0.min(x1), x0.max(x1));
        self.camera.y_range = (y0.min(y1), y0.max(y1));
        self.camera.clamp();
        self.camera_moved();
    }

    /// The `n` largest allocation sites at the peak, JSON (`LegendEntry` list).
    #[must_use]
    pub fn legend(&self, n: usize) -> String {
        serde_json::to_string(&self.legend_entries(n)).unwrap_or_else(|_| "[]".into())
    }

    /// The file's devices, JSON: `[{device, events, segments, current}]`.
    #[must_use]
    pub fn devices(&self) -> String {
        let Some(snap) = self.snapshot() else {
            return "[]".into();
        };
        let list: Vec<serde_json::Value> = snap
            .devices()
            .into_iter()
            .map(|dev| {
                json!({
                    "device": dev,
                    "events": snap.trace(dev).map_or(0, |t| t.len()),
                    "segments": snap.segments.iter().filter(|s| s.device == dev).count(),
                    "current": dev == self.device,
                })
            })
            .collect();
        json!(list).to_string()
    }

    /// Backend-agnostic state, JSON (for tests and the shell's status line).
    #[must_use]
    pub fn state_json(&self) -> String {
        let c = &self.camera;
        let d = self.data();
        json!({
            "file": self.current,
            "files": self.file_names(),
            "device": self.device,
            "x_range": [c.x_range.0, c.x_range.1],
            "y_range": [c.y_range.0, c.y_range.1],
            "full_x": [c.full_x.0, c.full_x.1],
            "full_y": [c.full_y.0, c.full_y.1],
            "min_span": [c.min_span.0, c.min_span.1],
            "steps": d.map_or(0, |d| d.layout.step_count()),
            "elements": d.map_or(0, |d| d.layout.element_count()),
            "peak_bytes": d.map_or(0, |d| d.layout.peak_bytes),
            "peak_step": d.map_or(0, |d| d.layout.peak_step),
            "layout_mode": d.map(|d| d.layout.mode()),
            "fell_back_to_compact": d.is_some_and(|d| d.layout.fell_back_to_compact()),
            "scene": if self.is_windowed() { "windowed" } else { "static" },
            "instances": d.map_or(0, |d| d.scene.instance_count()),
            "batches": d.map_or(0, |d| d.scene.batches.len()),
            "scene_build_ms": self.scene_build_ms(),
            "x_axis": self.axis_ticks().x_unit,
            "has_time": d.is_some_and(|d| d.step_time_us.is_some()),
            "hover": self.hover,
            "pinned": self.pinned,
            "view": self.view().name(),
            "highlighted": self.highlighted(),
            "last_click_step": self.last_click_step,
            "phases": self.data().map_or(0, |d| d.phases.len()),
            "flame_view": if self.show_flame {
                self.flame_view.as_ref().map(|(_, v)| v.state_json())
            } else {
                None
            },
            "state_view": if self.show_state {
                self.state_view.as_ref().map(|(_, v)| v.state_json())
            } else {
                None
            },
            "geometry": self.geom,
        })
        .to_string()
    }
}

/// Exact polylines only where the static scene draws them all: above [`STATIC_MAX_POINTS`] the
/// windowed scene derives what it draws, and stored points (12 bytes each, up to 2^24 by
/// default) cost 735 bytes per trace entry on a 20 MB tiled file (wasm memory 11× the file).
pub const VIEWER_LAYOUT: LayoutOptions = LayoutOptions {
    mode: layout::PointMode::Exact,
    max_exact_points: STATIC_MAX_POINTS,
};

/// The timeline and layout of (device, kind): `built`'s when they are the same (the Private
/// Pools view of a device without a private pool shows the Active Memory Timeline: on a 150 MB
/// file that is 38.7 bytes per trace entry not spent twice), else built.
fn build_device(
    snap: &Snapshot,
    device: i64,
    kind: ViewKind,
    built: &HashMap<(i64, ViewKind), DeviceData>,
) -> DeviceData {
    let shared = match kind {
        ViewKind::Pools | ViewKind::Active if !timeline::has_private_pool(snap, device) => {
            [ViewKind::Active, ViewKind::Pools]
                .iter()
                .find_map(|k| built.get(&(device, *k)))
                .map(|d| (Rc::clone(&d.timeline), Rc::clone(&d.layout)))
        }
        _ => None,
    };
    let (timeline, layout) = shared.unwrap_or_else(|| {
        let mut timeline = match kind {
            ViewKind::Segments => timeline::build_segments(snap, device),
            ViewKind::Pools => timeline::build_pools(snap, device),
            ViewKind::Active | ViewKind::State | ViewKind::Flame => timeline::build(snap, device),
        };
        crate::memory::phase("timeline");
        let layout = layout::Layout::build_dropping_steps(&mut timeline, VIEWER_LAYOUT);
        crate::memory::phase("layout");
        (Rc::new(timeline), Rc::new(layout))
    });
    let colors = color::element_colors(snap, device, &timeline);
    crate::memory::phase("colors");
    let step_time_us = StepTimeIndex::build(snap, device, &layout);
    crate::memory::phase("step_time");
    let windowed = layout.exact_point_count() > STATIC_MAX_POINTS;
    let scene = initial_scene(&layout, &colors, windowed);
    crate::memory::phase("first_scene");
    let phases = phase_rows(memviz_analysis::annotations::phases(snap, device, &layout));
    crate::memory::phase("annotation_phases");
    DeviceData {
        timeline,
        layout,
        base_colors: colors.clone(),
        highlight: None,
        phases,
        colors,
        tips: None,
        step_time_us,
        column_density: 0.0,
        scene,
        windowed,
    }
}

/// Rows of phase bands drawn at the top of the plot.
pub const PHASE_ROWS: u32 = 3;
/// Height of one phase band, CSS px.
pub const PHASE_ROW_CSS: f64 = 7.0;
const PHASE_COLORS: [u32; 2] = [rgba(120, 90, 200, 150), rgba(60, 150, 170, 150)];
const PHASE_EDGE: u32 = rgba(120, 90, 200, 90);

/// Phases with a band row each: the first row whose previous phase ended by this one's start
/// (nesting goes one row down); phases needing more than [`PHASE_ROWS`] rows are left out.
fn phase_rows(
    phases: Vec<memviz_analysis::annotations::Phase>,
) -> Vec<(memviz_analysis::annotations::Phase, u32)> {
    let mut ends = [0u32; PHASE_ROWS as usize];
    let mut used = [false; PHASE_ROWS as usize];
    let mut out = Vec::new();
    for p in phases {
        let row = (0..PHASE_ROWS as usize).find(|&r| !used[r] || ends[r] <= p.start_step);
        if let Some(r) = row {
            used[r] = true;
            ends[r] = p.end_step;
            out.push((p, r as u32));
        }
    }
    out
}

/// Columns of the first scene of a windowed layout: coarse, so the first frame comes soon; the
/// camera's first settle (right after the first frame) rebuilds it at the canvas's width.
pub const FIRST_SCENE_COLUMNS: u32 = 384;

/// The first scene of a layout: static, or the column level of detail of the whole trace.
fn initial_scene(layout: &Layout, colors: &[u8], windowed: bool) -> PlotScene {
    if windowed {
        let steps = f64::from(layout.step_count().max(1));
        let peak = layout.peak_bytes as f64 * Y_HEADROOM;
        scene::build_columns(
            layout,
            colors,
            [0.0, steps, 0.0, peak.max(1.0)],
            FIRST_SCENE_COLUMNS,
            peak.max(1.0) / 512.0,
        )
    } else {
        scene::build_static(layout, colors)
    }
}

/// Max of `values` over `cols` equal column ranges.
fn decimate_max(values: StepValues<'_, u64>, cols: usize) -> Vec<u64> {
    let n = values.len();
    if n == 0 || cols == 0 {
        return Vec::new();
    }
    // In u64: `c * n` passes 2^32 on wasm32 (usize) for traces of a few million steps.
    let at = |c: usize| (c as u64 * n as u64 / cols as u64) as usize;
    (0..cols)
        .map(|c| {
            let a = at(c);
            let b = at(c + 1).max(a + 1).min(n);
            values.range(a, b).max().unwrap_or(0)
        })
        .collect()
}
