//! The State History's answers: the selected event, an `oom` explained, the event list's rows.

use memviz_analysis::state::OomReport;
use serde::Serialize;
use ts_rs::TS;

use super::SiteText;
// Named by the doc comments' links only.
#[cfg(doc)]
use super::{line_kinds, TipLines};

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
