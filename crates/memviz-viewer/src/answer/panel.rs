//! The panel around the plot and the viewer's state.

use memviz_present::color::LegendEntry;
use memviz_present::layout::PointMode;
use serde::Serialize;
use ts_rs::TS;

use super::{AxisTicks, FlameState, PlotGeometry, SiteText, ViewKind};

/// What the page shows around the plot after a file, device or view change.
#[derive(Clone, Debug, Default, PartialEq, Serialize, TS)]
pub struct Panel {
    pub files: Vec<String>,
    /// The current file (`null` before the first).
    pub file: Option<usize>,
    pub devices: Vec<DeviceRow>,
    pub legend: Vec<LegendRow>,
    pub ticks: Option<AxisTicks>,
    /// The current timeline's peak, as text.
    pub peak: String,
    pub state: Option<ViewerState>,
    pub view: Option<ViewKind>,
    pub settings: Vec<SettingRow>,
    /// Not an error: why the file is incomplete, or a view that cannot fit; else empty.
    pub notice: String,
    /// Why the device shown has no trace events (a snapshot taken without
    /// `_record_memory_history()`, the segment list of `torch.cuda.memory_snapshot()`, or a
    /// device nobody recorded), and what the view shows instead: said over the plot of a
    /// timeline and beside the State History's empty event list; else empty (and in the
    /// flamegraph).
    pub no_trace: String,
    /// Which accelerator wrote each opened file (as `files`).
    pub accelerators: Vec<FileAccelerator>,
}

/// One entry of the device list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct DeviceRow {
    pub device: i64,
    /// The device's name for the file's accelerator: `cuda:0`, `xpu:0`, `npu:0`, `mtia:0`.
    pub name: String,
    /// The device list's text: the name, `⚠ OOM ×N` and the events (`1 event`).
    pub label: String,
    pub events: usize,
    /// Its trace's `oom` events (the device list marks such a device).
    pub ooms: usize,
    pub segments: usize,
    pub current: bool,
}

/// One entry of the legend: an allocation site holding memory at the peak, and its size as text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct LegendRow {
    /// `label` is the legend's unique label (the site's, extended when two entries share it).
    #[serde(flatten)]
    pub entry: LegendEntry,
    pub size: String,
    /// The site of the entry's stack (`<private pools>`, kind `none`, for the pool envelopes).
    pub site: SiteText,
}

/// One row of the Allocator settings table (keys and values as text).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct SettingRow {
    pub key: String,
    pub value: String,
    pub meaning: String,
}

/// The viewer's state (the `state` request, and the panel's): the timeline's camera and
/// counts, what is shown and selected, and the view's own state.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct ViewerState {
    #[serde(flatten)]
    pub timeline: TimelineState,
    pub file: usize,
    pub files: Vec<String>,
    pub device: i64,
    /// `time`, `timesteps`, or `none` (a view without axes).
    pub x_axis: String,
    pub view: ViewKind,
    /// Elements highlighted by a search or a source line.
    pub highlighted: Option<usize>,
    pub flame_view: Option<FlameState>,
    pub state_view: Option<StateViewState>,
    pub geometry: PlotGeometry,
}

/// How a timeline is drawn: one static scene, or one rebuilt for the window shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum SceneKind {
    Static,
    Windowed,
}

/// The timeline's camera (timesteps × bytes), its layout's counts and its scene.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct TimelineState {
    pub x_range: [f64; 2],
    pub y_range: [f64; 2],
    pub full_x: [f64; 2],
    pub full_y: [f64; 2],
    pub min_span: [f64; 2],
    pub steps: u32,
    pub elements: u32,
    pub peak_bytes: u64,
    pub peak_step: u32,
    pub layout_mode: Option<PointMode>,
    pub fell_back_to_compact: bool,
    pub scene: SceneKind,
    pub instances: usize,
    pub batches: usize,
    pub scene_build_ms: f64,
    pub has_time: bool,
    pub hover: Option<u32>,
    pub pinned: Option<u32>,
    pub last_click_step: Option<u32>,
    pub phases: usize,
}

/// The State History's state: camera, selection, counts.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct StateViewState {
    pub event: Option<usize>,
    pub count: usize,
    pub x_range: [f64; 2],
    pub y_range: [f64; 2],
    pub rows: u32,
    pub rects: usize,
    pub segments: usize,
    pub blocks: usize,
    pub reserved_bytes: u64,
    pub allocated_bytes: u64,
    pub hover: Option<String>,
    pub pinned: Option<String>,
    pub open_ms: f64,
    pub select_ms: f64,
    pub checkpoint_bytes: usize,
}

/// Which accelerator wrote a file (`memviz_snapshot::accelerator`, docs/formats.md §3), one per
/// opened file in the `Panel` (an answer struct, kept here beside the code that makes it).
// (The doc above is also the generated TypeScript's, kept word for word: the struct moved here
// from `app::files`, whose `file_accelerator` makes it.)
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
pub struct FileAccelerator {
    /// "CUDA", "ROCm (HIP)", "Intel XPU", "MTIA", "Ascend NPU"; empty when nothing in the file says.
    pub label: String,
    /// The torch device type of its device names: `cuda` (ROCm's too, and without evidence),
    /// `xpu`, `mtia`, `npu`.
    pub device_prefix: String,
    /// What the page says ("CUDA snapshot"), and the evidence as a title; both empty when unknown.
    pub text: String,
    pub title: String,
}
