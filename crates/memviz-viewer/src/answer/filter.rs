//! The structured filter's answer (`filter` request; `app/panels/filter.rs`).

use serde::Serialize;
use ts_rs::TS;

/// Where and why a filter does not parse (`memviz_analysis::query::FilterError`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, TS)]
pub struct FilterErrorAnswer {
    /// 0-based character offset into the filter's text.
    pub column: usize,
    pub message: String,
    /// `column N: message`, as the command line says it.
    pub text: String,
}

/// The filter box's answer: how many allocations of the Active Memory Timeline match and their
/// bytes, or why there is no answer (`error`: the filter does not parse, and nothing changed;
/// `unavailable`: not enough memory).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, TS)]
pub struct FilterAnswer {
    pub query: String,
    pub count: usize,
    pub bytes: u64,
    /// `bytes` as short text (`3.1GiB`: the status is narrow; `bytes` is exact).
    pub size: String,
    pub error: Option<FilterErrorAnswer>,
    /// What the filter accepted but may not mean (one sentence each).
    pub warnings: Vec<String>,
    pub unavailable: Option<String>,
    /// Set when the view shown does not draw the Active Memory Timeline, whose allocations the
    /// filter applies to (nothing is highlighted).
    pub note: Option<String>,
    /// With a search also set: how many allocations match both (what is highlighted).
    pub with_search: Option<usize>,
}
