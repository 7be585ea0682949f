//! The panels' tables: search, per-site lines, alive at a moment, leak suspects, the
//! comparison of two files, user code and the opened files.

use memviz_analysis::leaks::LeakSuspect;
use memviz_analysis::lines::{LineRow, LiveRow};
use serde::Serialize;
use ts_rs::TS;

use super::SiteText;
// Named by the doc comments' links only.
#[cfg(doc)]
use super::line_kinds;

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
