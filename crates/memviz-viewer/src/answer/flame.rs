//! The flamegraph's answers: where it is taken, its state, labels, breadcrumb and phases.

use serde::Serialize;
use ts_rs::TS;

pub use memviz_analysis::flame::{NodeInfo as FlameNodeInfo, ValueUnit as FlameUnit};

/// Where the flamegraph is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, Serialize, TS)]
#[serde(tag = "at", rename_all = "snake_case")]
pub enum FlameAt {
    /// The peak of the Active Memory Timeline.
    Peak,
    /// The last clicked timestep (the peak before any click).
    Click,
    /// A timestep.
    Step { step: u32 },
    /// Bytes × lifetime within timesteps `[from, to)`.
    Range { from: u32, to: u32 },
    /// Bytes × lifetime within phase `index` of the `flame_phases` answer.
    Phase { index: usize },
    /// Reserved memory at the end (the final segments): by segment, block state and stack,
    /// free space and rounding gaps as frames of their own (`memviz segments`).
    Reserved,
}

/// The moment a flamegraph shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum FlameMoment {
    Peak,
    Step,
    Event,
}

/// A comparison flamegraph's two totals.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct FlameDiffTotals {
    /// The two files' names.
    pub a: String,
    pub b: String,
    pub a_total: u64,
    pub b_total: u64,
    pub a_text: String,
    pub b_text: String,
    pub delta_text: String,
}

/// The flamegraph's state: the moment, options, totals, zoom and camera.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct FlameState {
    pub at: FlameMoment,
    pub at_value: Option<u32>,
    pub at_step: Option<u32>,
    pub lifetime: bool,
    /// The frames shown: `my_code`, `python` or `all`.
    pub frames: memviz_analysis::flame::FrameMode,
    /// Whether the file has frames of the user's code (the default is then `my_code`).
    pub has_user_frames: bool,
    pub step_range: Option<[u32; 2]>,
    pub unit: FlameUnit,
    pub total_bytes: u64,
    pub total_text: String,
    pub root: u32,
    pub root_name: String,
    pub root_total: u64,
    pub zoom_path: Vec<u32>,
    pub nodes: usize,
    pub rects: usize,
    pub rows: u32,
    pub x_range: [f64; 2],
    pub y_range: [f64; 2],
    pub hover: Option<u32>,
    pub generation: u64,
    pub build_ms: f64,
    pub matched: Option<u64>,
    pub matched_text: Option<String>,
    pub only_matches: Option<bool>,
    pub diff: Option<FlameDiffTotals>,
}

/// A name to overlay on a flamegraph rect (canvas CSS px, the visible part).
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct FlameLabel {
    pub x_css: f64,
    pub y_css: f64,
    pub w_css: f64,
    pub h_css: f64,
    pub text: String,
    /// The function name alone.
    pub short: String,
    pub node: u32,
}

/// One step of the flamegraph's breadcrumb.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct Crumb {
    pub node: u32,
    pub name: String,
    /// The chip's text: the function name first, the file and line last (`forward ·
    /// model.py:12`), so neighbouring chips differ where they can be seen.
    pub chip: String,
    pub total: u64,
    pub size: String,
}

/// The flamegraph's breadcrumb, labels and state (`flame_info`).
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct FlameInfo {
    pub breadcrumb: Vec<Crumb>,
    pub labels: Vec<FlameLabel>,
    pub state: FlameState,
}

/// An annotation phase usable as a flamegraph time range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct FlamePhase {
    pub index: usize,
    pub name: String,
    pub start_step: u32,
    pub end_step: u32,
}
