//! The answers the viewer gives the shell, one struct (or enum) each. The viewer builds these
//! values and never JSON: `memviz-web` serializes them (the only place JSON is made), and
//! `cargo xtask gen-types` writes their TypeScript declarations from the same definitions
//! (`ts-rs`) to `www/js/generated/`, which `tsc --checkJs` checks the shell against. The
//! [`crate::request::Request`] enum says which answer each request gets.
//!
//! Field names are the shell's: changing one changes the generated declarations, and `tsc`
//! then names every place in `www/js` that reads it.

use memviz_analysis::color::LegendEntry;
use memviz_analysis::layout::PointMode;
use memviz_analysis::leaks::LeakSuspect;
use memviz_analysis::lines::{LineRow, LiveRow};
use memviz_analysis::state::OomReport;
use memviz_analysis::tooltip::TooltipInfo;
use serde::Serialize;
use ts_rs::TS;

pub use crate::app::{AxisTicks, FileAccelerator, PhaseLabel, ViewKind};
pub use crate::camera::PlotGeometry;
pub use crate::ticks::Tick;

/// A panel or view that cannot fit in the memory left: the sentence saying so (what it needs,
/// what is free, and the command line that gives the same answer). Also the error of the app's
/// memory checks.
#[derive(Clone, Debug, PartialEq, Serialize, TS, thiserror::Error)]
#[error("{unavailable}")]
pub struct Unavailable {
    pub unavailable: String,
}

impl From<String> for Unavailable {
    fn from(unavailable: String) -> Self {
        Unavailable { unavailable }
    }
}

/// An answer, or why it cannot be made in the memory left.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
#[serde(untagged)]
pub enum Avail<T> {
    Ready(T),
    Unavailable(Unavailable),
}

impl<T> Avail<T> {
    /// `Ok` → the answer, `Err` → why it could not be made.
    #[must_use]
    pub fn from_result(r: Result<T, Unavailable>) -> Self {
        match r {
            Ok(v) => Avail::Ready(v),
            Err(u) => Avail::Unavailable(u),
        }
    }

    /// The answer, when it was made.
    #[must_use]
    pub fn ready(self) -> Option<T> {
        match self {
            Avail::Ready(v) => Some(v),
            Avail::Unavailable(_) => None,
        }
    }

    /// The sentence, when the answer could not be made.
    #[must_use]
    pub fn unavailable(&self) -> Option<&str> {
        match self {
            Avail::Ready(_) => None,
            Avail::Unavailable(u) => Some(&u.unavailable),
        }
    }
}

// ----- tooltips --------------------------------------------------------------------------------

/// The hover / pinned tooltip: of a timeline element, a State History map item or a flamegraph
/// frame. All three have `title`, `details`, `frames`, `forward_frames`, `text` (everything as
/// lines) and `pinned`.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
#[serde(untagged)]
pub enum Tooltip {
    Element(ElementTip),
    Item(ItemTip),
    Node(NodeTip),
    /// The tooltips' context cannot fit in memory.
    Unavailable(Unavailable),
}

impl Tooltip {
    /// The title line (empty for [`Tooltip::Unavailable`]).
    #[must_use]
    pub fn title(&self) -> &str {
        match self {
            Tooltip::Element(t) => &t.info.title,
            Tooltip::Item(t) => &t.lines.title,
            Tooltip::Node(t) => &t.lines.title,
            Tooltip::Unavailable(_) => "",
        }
    }

    /// The whole tooltip as lines (the sentence for [`Tooltip::Unavailable`]).
    #[must_use]
    pub fn text(&self) -> &str {
        match self {
            Tooltip::Element(t) => &t.text,
            Tooltip::Item(t) => &t.lines.text,
            Tooltip::Node(t) => &t.lines.text,
            Tooltip::Unavailable(u) => &u.unavailable,
        }
    }

    /// True when pinned.
    #[must_use]
    pub fn pinned(&self) -> bool {
        match self {
            Tooltip::Element(t) => t.pinned,
            Tooltip::Item(t) => t.lines.pinned,
            Tooltip::Node(t) => t.lines.pinned,
            Tooltip::Unavailable(_) => false,
        }
    }
}

/// A timeline element's tooltip: [`TooltipInfo`] (its `element`, address label, size, stack…).
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct ElementTip {
    #[serde(flatten)]
    pub info: TooltipInfo,
    pub text: String,
    pub pinned: bool,
    /// See [`TipLines::explanation_lines`].
    pub explanation_lines: u32,
    /// What each `frames` line is ([`line_kinds`]).
    pub kinds: Vec<String>,
    /// The site of the element's stack ([`crate::answer::SiteText`]; `null` for a pool
    /// envelope).
    pub site: Option<SiteText>,
}

/// What a State History map item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum MapItemKind {
    Segment,
    Block,
    Waste,
}

/// A State History map item: its kind and address (decimal text: addresses pass 2^53).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct MapItem {
    pub kind: MapItemKind,
    pub addr: String,
}

/// What every map item's and frame's tooltip says: the title line, notes, the stack (one
/// frame a line), the forward-pass stack, all of it as lines (`text`) and whether it is pinned.
#[derive(Clone, Debug, Default, PartialEq, Serialize, TS)]
pub struct TipLines {
    pub title: String,
    pub details: Vec<String>,
    pub frames: Vec<String>,
    /// Whether each `frames` line is a Python frame (empty: no grouping, e.g. a flamegraph path).
    pub python: Vec<bool>,
    pub forward_frames: Vec<String>,
    pub text: String,
    pub pinned: bool,
    /// How many of the last `frames` lines are memory_viz's explanation of a missing stack
    /// ([`explanation_lines`]): 0 when a stack was recorded.
    pub explanation_lines: u32,
    /// What each `frames` line is ([`line_kinds`]; empty when not classified).
    pub kinds: Vec<String>,
}

/// The site of an allocation (docs/sites.md §2): which rule named it (`user`, `library`,
/// `autograd`, `native`, `none`), its label (`model.py:39:forward`, `backward of mm`,
/// `<no frames>`) and, for a user site, the library line it called into
/// (`transformers/models/llama/modeling_llama.py:216:forward`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, TS)]
pub struct SiteText {
    pub kind: String,
    pub label: String,
    pub detail: Option<String>,
}

impl SiteText {
    /// The text of `site`.
    #[must_use]
    pub fn of(site: &memviz_analysis::site::Site) -> SiteText {
        SiteText {
            kind: site.kind.as_str().to_string(),
            label: site.label.clone(),
            detail: site.detail.as_ref().map(|d| d.label.clone()),
        }
    }

    /// `label → detail`, or the label alone.
    #[must_use]
    pub fn display(&self) -> String {
        match &self.detail {
            Some(d) => format!("{} → {d}", self.label),
            None => self.label.clone(),
        }
    }
}

/// What each line of a frame list is: `user`, `library`, `interpreter` or `native` for a
/// `file:line:name` frame (by [`memviz_analysis::site::frame_kind`] under `user`); a line that
/// continues a frame (an FX line, `<repeats k times>`, the rest of a name) is its frame's kind;
/// `note` for the rest (memory_viz's no-stack explanation, notes before the frames).
#[must_use]
pub fn line_kinds(lines: &[String], user: &memviz_analysis::site::UserCode) -> Vec<String> {
    let notes_from = lines.len() - explanation_lines(lines) as usize;
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut prev: Option<&'static str> = None;
    for (i, l) in lines.iter().enumerate() {
        let kind = if i >= notes_from {
            None
        } else if let Some((file, name)) = split_frame_line(l) {
            Some(memviz_analysis::site::frame_kind(file, name, user).as_str())
        } else {
            prev
        };
        prev = kind;
        out.push(kind.unwrap_or("note").to_string());
    }
    out
}

/// `(file, name)` of a `file:line:name` line: split at the first `:<digits>:`.
fn split_frame_line(line: &str) -> Option<(&str, &str)> {
    line.match_indices(':').find_map(|(i, _)| {
        let r = line.get(i + 1..)?;
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || r.as_bytes().get(digits) != Some(&b':') {
            return None;
        }
        Some((line.get(..i)?, r.get(digits + 1..)?))
    })
}

/// How many trailing lines of `frames` are memory_viz's no-frames explanation
/// ([`memviz_analysis::frames::NO_FRAMES_EXPLANATION`], what `format_stack` gives for an empty
/// stack): the shell shows them as text under "No stack recorded", not as frames. 0 otherwise.
#[must_use]
pub fn explanation_lines(frames: &[String]) -> u32 {
    let e = memviz_analysis::frames::NO_FRAMES_EXPLANATION;
    let tail = frames
        .len()
        .checked_sub(e.len())
        .and_then(|start| frames.get(start..));
    match tail {
        Some(t) if t.iter().zip(e.iter()).all(|(a, b)| a == b) => e.len() as u32,
        _ => 0,
    }
}

/// A State History map item's tooltip (`details` and `forward_frames` are empty).
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct ItemTip {
    #[serde(flatten)]
    pub lines: TipLines,
    pub item: MapItem,
    /// A block's site: of the stack that allocated it (`null` for a segment or waste).
    pub site: Option<SiteText>,
}

/// A flamegraph frame's tooltip: `frames` is the stack from the node to the root (innermost
/// first, as the details pane's heading says); `pinned` is false (a click zooms).
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct NodeTip {
    #[serde(flatten)]
    pub lines: TipLines,
    pub node: u32,
    pub info: Option<FlameNodeInfo>,
}

pub use memviz_analysis::flame::{NodeInfo as FlameNodeInfo, ValueUnit as FlameUnit};

// ----- the panel around the plot ---------------------------------------------------------------

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

// ----- the State History -----------------------------------------------------------------------

/// The selected event of the State History (`state_select`).
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct StateSelection {
    pub event: Option<usize>,
    pub count: usize,
    pub header: String,
    /// The event's row text.
    pub text: Option<String>,
    pub action: Option<String>,
    pub reserved_bytes: u64,
    pub allocated_bytes: u64,
    pub segments: usize,
    pub blocks: usize,
    pub rows: u32,
    /// The explanation, when the event is an `oom`.
    /// The event's stack ([`memviz_analysis::frames::format_stack`], filtered), innermost first.
    pub frames: Vec<String>,
    /// Whether each `frames` line is a Python frame.
    pub python: Vec<bool>,
    /// What each `frames` line is ([`line_kinds`]).
    pub kinds: Vec<String>,
    /// See [`TipLines::explanation_lines`].
    pub explanation_lines: u32,
    pub oom: Option<OomAnswer>,
    pub select_ms: f64,
    pub open_ms: f64,
    pub checkpoint_bytes: usize,
    pub interval: usize,
}

/// An `oom` event explained: [`OomReport`] with its sizes as text and a label per biggest block.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct OomAnswer {
    #[serde(flatten)]
    pub report: OomReport,
    pub biggest_live_text: Vec<BlockLabel>,
    pub requested: String,
    pub device_free: Option<String>,
    pub reserved_free: String,
    pub largest_free: String,
}

/// A block named in an OOM explanation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct BlockLabel {
    /// Decimal text (addresses pass 2^53).
    pub addr: String,
    pub size: String,
    pub text: String,
    /// Its site's display text ([`SiteText::display`]; `(no stack recorded)` without a stack).
    pub line: String,
    /// The site of the stack that allocated it (not of the free a restored block was undone
    /// from).
    pub site: SiteText,
}

/// What a row of the State History's event list is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RowKind {
    Oom,
    Snapshot,
    Segment,
    Block,
}

/// One row of the State History's event list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct StateRow {
    pub k: usize,
    pub text: String,
    pub kind: RowKind,
}

// ----- panels ----------------------------------------------------------------------------------

/// The search box's answer: how many allocations match and their bytes; `error` for a bad
/// regex; `unavailable` when the matches are counted but cannot be highlighted in the memory
/// left.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, TS)]
pub struct SearchAnswer {
    pub query: String,
    pub count: usize,
    pub bytes: u64,
    pub size: String,
    pub error: Option<String>,
    pub unavailable: Option<String>,
}

/// One row of the per-site table (`memviz_analysis::lines::site_table`), with its sizes as
/// text; its library lines as sub-rows of the same shape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct LineAnswer {
    #[serde(flatten)]
    pub row: LineRow,
    /// The row as shown: the site's label (`model.py:39:forward`, `backward of mm`), a sub-row's
    /// library line (`transformers/models/llama/modeling_llama.py:216:forward`), or
    /// `(no stack recorded)` for the no-frames row.
    pub site: String,
    /// `user`, `library`, `autograd`, `native` or `none` (a sub-row: `library`).
    pub kind: String,
    pub live: String,
    pub total: String,
    pub largest: String,
    /// The library lines the site's allocations went through (empty for a sub-row).
    pub detail: Vec<LineAnswer>,
}

/// One allocation alive at a moment, with its size and age as text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct LiveAnswerRow {
    #[serde(flatten)]
    pub row: LiveRow,
    pub size_text: String,
    /// How long it has been alive: wall-clock and timesteps when the trace has times, else
    /// timesteps (`3.2 ms (12 steps)`, `12 steps`).
    pub age_text: String,
    /// The site of its stack.
    pub site: SiteText,
}

/// "Alive at a moment": every allocation alive at `step` (at most
/// [`crate::app::LIVE_ROWS`] rows, largest first; `count` and `total` cover all).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct LiveAnswer {
    pub step: u32,
    pub count: usize,
    pub total: String,
    pub rows: Vec<LiveAnswerRow>,
}

/// Leak suspects of the current device (`memviz_analysis::leaks`), each with its size as text
/// and the frames shown.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct LeaksAnswer {
    pub settled_step: u32,
    pub settled_rule: String,
    pub suspects: Vec<SuspectAnswer>,
}

/// A leak suspect, its size as text and the frames shown.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct SuspectAnswer {
    #[serde(flatten)]
    pub suspect: LeakSuspect,
    pub size: String,
    pub shown: Vec<String>,
    /// What each `shown` line is ([`line_kinds`]).
    pub kinds: Vec<String>,
    /// The site the suspect is named after.
    pub site: SiteText,
}

/// One stack's live bytes in two files.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct DiffGroup {
    pub stack: Vec<String>,
    pub shown: Vec<String>,
    /// What each `shown` line is ([`line_kinds`]).
    pub kinds: Vec<String>,
    /// The group's site.
    pub site: SiteText,
    pub bytes_a: u64,
    pub bytes_b: u64,
    pub count_a: u64,
    pub count_b: u64,
    pub a: String,
    pub b: String,
    pub delta: String,
}

/// The comparison of the live allocations of two opened files (at most 500 groups, sorted
/// by growth; `group_count` counts all).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct DiffAnswer {
    pub a: String,
    pub b: String,
    pub group_count: usize,
    pub groups: Vec<DiffGroup>,
    pub segments_only_a: usize,
    pub segments_only_b: usize,
    pub segments_only_a_bytes: String,
    pub segments_only_b_bytes: String,
}

/// The user code set by `set_user_code`: its pattern (empty: the default rule) and how many
/// distinct frames of the current file are user code under it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct UserCodeAnswer {
    pub pattern: String,
    pub user_frames: u64,
}

/// One opened file's peak, final and reserved bytes on its default device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct FileRow {
    pub file: usize,
    pub name: String,
    pub device: i64,
    pub peak_live_bytes: u64,
    pub final_live_bytes: u64,
    pub reserved_bytes: u64,
    pub peak: String,
    #[serde(rename = "final")]
    #[ts(rename = "final")]
    pub final_: String,
    pub reserved: String,
    pub current: bool,
}

// ----- the flamegraph --------------------------------------------------------------------------

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

#[cfg(test)]
mod tests {
    use memviz_analysis::frames::NO_FRAMES_EXPLANATION as E;

    #[test]
    fn the_no_frames_explanation_is_counted_not_taken_for_frames() {
        let lines = |v: &[&str]| v.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        assert_eq!(super::explanation_lines(&lines(&E)), E.len() as u32);
        // After a map item's notes, still found; a recorded stack or part of it is not.
        let mut item = lines(&["note"]);
        item.extend(lines(&E));
        assert_eq!(super::explanation_lines(&item), E.len() as u32);
        assert_eq!(super::explanation_lines(&lines(&["a.py:1:f"])), 0);
        assert_eq!(super::explanation_lines(&lines(&E[1..])), 0);
        assert_eq!(super::explanation_lines(&[]), 0);
    }

    #[test]
    fn frame_lines_are_told_apart() {
        use memviz_analysis::site::UserCode;
        let lines: Vec<String> = [
            "alloc not recorded, stack trace for free:",
            "/home/me/train.py:88:main",
            "    >> FX: node=mm",
            "/usr/lib/python3.10/threading.py:982:run",
            "??:0:_PyEval_EvalFrameDefault",
            "??:0:at::native::mm",
            "<repeats 2 times>",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
        let kinds = super::line_kinds(&lines, &UserCode::default());
        assert_eq!(
            kinds,
            [
                "note",
                "user",
                "user",
                "library",
                "interpreter",
                "native",
                "native"
            ]
        );
        let threading = UserCode::parse("threading").expect("a pattern");
        assert_eq!(
            super::line_kinds(&lines, &threading)
                .get(3)
                .map(String::as_str),
            Some("user")
        );
        let mut none: Vec<String> = E.iter().map(|s| (*s).to_string()).collect();
        assert!(super::line_kinds(&none, &UserCode::default())
            .iter()
            .all(|k| k == "note"));
        none.clear();
        assert!(super::line_kinds(&none, &UserCode::default()).is_empty());
    }
}
