//! The structured filter over a device's allocations (issue 32): `size>=1MiB stream:0
//! site:/attention/ at:peak lifetime>10ms action:alloc file:model.py`, the same in the page, the
//! CLI (`memviz query`) and Python (`Snapshot.query`).
//!
//! # Grammar ([`parse_filter`])
//! Terms are separated by whitespace and must all hold; `-term` negates one. A term is
//! `FIELD OP VALUE` (OP one of `:` `=` `!=` `>` `>=` `<` `<=`) or a bare word / `"quoted text"`,
//! which is matched as the search box matches ([`crate::search::parse_query`]: a
//! case-insensitive substring, or `/regex/` / `/regex/i`) against the site's label and path and
//! every frame of the stack ([`crate::frames::frame_text`]). A value is a `"quoted string"`
//! (`\"` and `\\` escape; always a literal substring) or a run of non-space characters.
//!
//! | field | values | matches |
//! |---|---|---|
//! | `size` | `1MiB`, `512`, `1.5GB` (units B KiB MiB GiB KB MB GB) | the size, any OP (`:` is `=`) |
//! | `stream` | `0`, `7`, `0x7f..` | the raw `cudaStream_t` or its ordinal (`stream n` of the tooltip) |
//! | `site` | `text` or `/re/` | the site's label or path ([`crate::site::Site`]) |
//! | `frame` | `text` or `/re/` | any frame of the stack |
//! | `file` | `model.py`, `/re/` | the site's file (the user's line): whole name or a path suffix |
//! | `line` | `42` | the site's line, any OP (no line for autograd and `<no frames>` sites) |
//! | `action` | `alloc` `free` `start` (and trace action names) | made in the trace; freed in it; present at the start |
//! | `lifetime` | `100` (events) or `10ms` (`us` `ms` `s`) | [`Allocation::lifetime_events`] / `_us`, any OP |
//! | `at` | `peak`, `EVENT`, `12.5s` | alive at the peak; after trace row EVENT; at that time since the first event |
//! | `device` | `0` | the device the allocations are of |
//! | `phase` | `NAME` or `/re/` | allocated (by time) inside an annotation phase of that name |
//!
//! `!=` on a text field is its negation. A time term on a device without times, and `phase:`
//! on a device without annotation phases, match nothing and say so in
//! [`FilterMatches::warnings`]. Errors ([`FilterError`]) give the 0-based column (in
//! characters) of what is wrong: an unknown field, a bad operator, a bad number or unit, an
//! unterminated quote, a regex that does not compile.
//!
//! # Evaluation ([`filter`])
//! Per row the terms about the stack (`site`, `frame`, `file`, `line`, bare words) are read from
//! a bit mask computed once per distinct [`StackId`] (frames once per distinct frame), so a
//! filter costs O(rows + distinct stacks' frames), not O(rows × frames). Sites come only from
//! [`SiteCache::site`].

mod csv;
mod eval;
mod grammar;

#[cfg(test)]
pub(crate) mod tests;

pub use csv::{csv, CSV_HEADER};
pub use eval::filter;
pub use grammar::parse_filter;

use crate::allocations::Allocation;
use crate::search::Query;
use crate::site::SiteCache;
use memviz_snapshot::StackId;

/// The fields of a `FIELD:VALUE` term, as errors list them.
pub const FIELDS: &[&str] = &[
    "size", "stream", "site", "frame", "file", "line", "action", "lifetime", "at", "device",
    "phase",
];

/// Why a filter's text is no filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    /// 0-based character offset into the text of what is wrong.
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for FilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Counted from 1, as editors and compilers count columns.
        write!(f, "column {}: {}", self.column + 1, self.message)
    }
}

impl std::error::Error for FilterError {}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Op::Eq => a == b,
            Op::Ne => a != b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
}

/// What `action:` selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ActionSel {
    /// Made in the trace.
    Alloc,
    /// Freed in the trace.
    Free,
    /// Present at the start.
    Start,
    /// A trace action no allocation row stands for (`segment_alloc`, `oom`, …).
    Nothing,
}

/// A file test: whole name or path suffix, or a regex over the full name.
#[derive(Clone, Debug)]
pub(crate) enum FileMatch {
    Suffix(String),
    Pattern(Query),
}

/// One predicate of a term (before its negation).
#[derive(Clone, Debug)]
pub(crate) enum Pred {
    Size(Op, u64),
    /// Raw stream or ordinal.
    Stream(Op, u64),
    Site(Query),
    Frame(Query),
    File(FileMatch),
    Line(Op, i64),
    Action(ActionSel),
    LifetimeEvents(Op, u64),
    LifetimeUs(Op, i64),
    AtPeak,
    /// Alive after trace row `.0` (−1: at the start).
    AtEvent(i64),
    /// Alive at `.0` µs after the first timed event.
    AtTime(i64),
    Device(Op, i64),
    Phase(Query),
    /// A bare word: the site or any frame.
    Text(Query),
}

impl Pred {
    /// Read from the per-stack mask.
    fn is_stack_term(&self) -> bool {
        matches!(
            self,
            Pred::Site(_) | Pred::Frame(_) | Pred::File(_) | Pred::Line(..) | Pred::Text(_)
        )
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Term {
    pub(crate) negate: bool,
    /// The term's text.
    pub(crate) text: String,
    pub(crate) pred: Pred,
}

/// A parsed filter ([`parse_filter`]).
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub(crate) terms: Vec<Term>,
}

impl Filter {
    /// No terms: matches every row.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
    /// Number of terms.
    #[must_use]
    pub fn len(&self) -> usize {
        self.terms.len()
    }
}

/// The rows a filter keeps ([`filter`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilterMatches {
    /// Matching elements (= row indices), ascending.
    pub elements: Vec<u32>,
    pub count: usize,
    /// Σ sizes of the matching rows (saturating).
    pub bytes: u64,
    /// Terms that could not apply to this device (no times, no phases), one sentence each.
    pub warnings: Vec<String>,
}

/// The site columns of a row (label, file, line), through the one classifier.
pub fn site_columns(
    snap: &memviz_snapshot::Snapshot,
    sites: &mut SiteCache,
    stack: StackId,
) -> (String, String, i64) {
    let s = sites.site(snap, stack);
    (s.label.clone(), s.file.clone(), s.line)
}

/// A row's lifetime in µs as the CSV prints it.
pub(crate) fn lifetime_us_text(a: &Allocation) -> String {
    a.lifetime_us.map(|v| v.to_string()).unwrap_or_default()
}
