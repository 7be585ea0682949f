//! Per-source-line attribution (memlab's `LineProfiler`, from the snapshot) and the table of
//! what is alive at one timestep (its `MemReporter`).
//!
//! # Line table
//! Every element of a timeline (for [`crate::timeline::build`]: allocations, unmatched frees
//! and ghost blocks) is attributed to the *site* of its stack ([`crate::site`]: the innermost
//! user frame; else the innermost library Python frame; else the autograd node; else the
//! innermost native frame that is not allocator or dispatcher plumbing; else `<no frames>`);
//! [`crate::frames::element_stack`] gives an element's stack (an unmatched free's is the free
//! site's). With [`LineOptions::ALL_FRAMES`] (`--all-frames`) it is the innermost frame kept by
//! §7's filter instead, whatever its kind.
//!
//! A row is one `(filename, line, name)`: for Python frames that is one `filename:line` (a line
//! lives in one function), while C++ frames, which have no line numbers (`??:0`), stay apart by
//! symbol; an autograd site is file [`crate::site::AUTOGRAD_FILE`], line 0, the node's name.
//! [`line_elements`] takes `filename:line` only and returns every row of it; [`row_elements`]
//! one row. [`site_table`] gives the same rows with their kind and, under each, the library
//! lines its elements went through (each element's [`crate::site::Site::detail`]).
//!
//! The attribution is computed once per interned stack, not per element: O(elements + Σ frames
//! of the distinct stacks).
//!
//! Per row: `count` = the timeline elements attributed to it, `total_bytes` = Σ their sizes
//! (so Σ over rows = every byte the timeline shows: allocations in the trace plus memory
//! present at the start), `largest_bytes` = the largest of them, `live_at_peak_bytes` = Σ sizes
//! of those alive at [`Steps::peak_step`] ([`live_elements_at`]; Σ over rows = the peak).
//! A detail row counts the elements of its site that have that library line (elements without
//! a detail are in no detail row).
//!
//! # Live table
//! [`live_table`] lists the elements alive at any timestep, largest first, with address, age
//! (timesteps, and µs when both events have `time_us`), stream, the attributed frame and the
//! tooltip's address label.

mod live;

pub(crate) use live::{element_addr_stream, write_element_label};
pub use live::{live_rows, live_table, LiveRow, LiveRows};

use crate::frames::{element_stack, keep_frame};
use crate::site::{FrameKind, SiteCache, SiteKind};
use crate::steps::Steps;
use crate::timeline::{Element, Timeline};
use memviz_snapshot::{FrameId, Snapshot, StackId};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Which frames may carry an allocation in the line table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineOptions {
    /// Attribute to the stack's site ([`crate::site`]), the default. When false
    /// (`--all-frames`), to the innermost frame kept by §7's filter, torch and C++ included.
    pub sites: bool,
}

impl Default for LineOptions {
    fn default() -> Self {
        LineOptions { sites: true }
    }
}

impl LineOptions {
    /// Every kept frame qualifies (`memviz lines --all-frames`): the innermost frame after §7's
    /// filter.
    pub const ALL_FRAMES: LineOptions = LineOptions { sites: false };
}

/// The file of the row of elements with no usable frame.
pub const NO_FRAMES: &str = crate::site::NO_FRAMES;

/// One source location of the line table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct LineRow {
    /// Full filename as recorded ([`NO_FRAMES`] for the no-frames row,
    /// [`crate::site::AUTOGRAD_FILE`] for an autograd node's).
    pub file: String,
    pub line: i64,
    /// Function (or C++ symbol, or autograd node) name; empty for the no-frames row.
    pub name: String,
    /// Σ sizes of the row's elements alive at the layout's peak timestep.
    pub live_at_peak_bytes: u64,
    /// Σ sizes of the row's elements (every element of the timeline counts once).
    pub total_bytes: u64,
    /// Number of the row's elements.
    pub count: u64,
    /// Size of the row's largest element.
    pub largest_bytes: u64,
}

/// One site of [`site_table`]: a [`LineRow`] with its kind and label, and the library lines
/// below it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct SiteRow {
    #[serde(flatten)]
    pub row: LineRow,
    /// `user`, `library`, `autograd`, `native` or `none`.
    pub kind: SiteKind,
    /// The site's short label ([`crate::site::Site::label`]: `model.py:39:forward`,
    /// `backward of mm`).
    pub label: String,
    /// The library lines the site's elements went through ([`crate::site::Site::detail`]),
    /// ordered as the rows are; `file`, `line`, `name` are the library frame's.
    pub detail: Vec<LineRow>,
}

/// Python source ([`crate::site::is_python_file`]).
pub use crate::site::is_python_file;

/// The innermost frame kept by §7's filter (`--all-frames`).
fn innermost_kept(snap: &Snapshot, stack: StackId) -> Option<FrameId> {
    snap.stack(stack)
        .iter()
        .copied()
        .find(|&id| snap.frame(id).is_some_and(|f| keep_frame(snap, f)))
}

/// The frame a stack is attributed to: its site's frame ([`crate::site`], default user code;
/// `None` for an autograd site or `<no frames>`), or with [`LineOptions::ALL_FRAMES`] the
/// innermost kept frame.
pub fn attributed_frame(snap: &Snapshot, stack: StackId, opts: LineOptions) -> Option<FrameId> {
    if !opts.sites {
        return innermost_kept(snap, stack);
    }
    let site = crate::site::site_of(snap, stack, &crate::site::UserCode::default());
    match site.kind {
        SiteKind::Autograd | SiteKind::None => None,
        _ => site.frame,
    }
}

/// `filename:line:name` of what a stack is attributed to ([`crate::site::Site::path`]; an
/// autograd site's node; [`NO_FRAMES`]).
pub fn attributed_text(snap: &Snapshot, stack: StackId, opts: LineOptions) -> String {
    if opts.sites {
        return crate::site::site_of(snap, stack, &crate::site::UserCode::default()).path();
    }
    match innermost_kept(snap, stack).and_then(|id| snap.frame(id)) {
        Some(f) => format!("{}:{}:{}", snap.str(f.filename), f.line, snap.str(f.name)),
        None => NO_FRAMES.to_string(),
    }
}

/// A row's identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    kind: SiteKind,
    file: String,
    line: i64,
    name: String,
    label: String,
}

impl Key {
    fn of(snap: &Snapshot, stack: StackId, opts: LineOptions, sites: &mut SiteCache) -> Key {
        if opts.sites {
            let s = sites.site(snap, stack);
            return Key {
                kind: s.kind,
                file: s.file.clone(),
                line: s.line,
                name: s.name.clone(),
                label: s.label.clone(),
            };
        }
        match innermost_kept(snap, stack).and_then(|id| snap.frame(id).map(|f| (id, f))) {
            Some((id, f)) => {
                let kind = match sites.frame_kind(snap, id) {
                    FrameKind::User => SiteKind::User,
                    FrameKind::Library => SiteKind::Library,
                    FrameKind::Interpreter | FrameKind::Native => SiteKind::Native,
                };
                let file = snap.str(f.filename);
                Key {
                    kind,
                    file: file.to_string(),
                    line: f.line,
                    name: snap.str(f.name).to_string(),
                    label: format!(
                        "{}:{}:{}",
                        crate::frames::basename(file),
                        f.line,
                        snap.str(f.name)
                    ),
                }
            }
            None => Key {
                kind: SiteKind::None,
                file: NO_FRAMES.to_string(),
                line: 0,
                name: String::new(),
                label: NO_FRAMES.to_string(),
            },
        }
    }
}

/// A detail row's identity: (file, line, name) of the library frame.
type DetailKey = (String, i64, String);

/// Row (and detail row) per element, computed once per distinct stack and looked up per
/// element as it is needed (no per-element vector: a panel over tens of millions of events
/// stays small).
struct Attribution<'s, 'c> {
    snap: &'s Snapshot,
    device: i64,
    opts: LineOptions,
    sites: &'c mut SiteCache,
    keys: Vec<Key>,
    index: FxHashMap<Key, u32>,
    /// (row, library frame) of each detail row.
    details: Vec<(u32, DetailKey)>,
    detail_index: FxHashMap<(u32, DetailKey), u32>,
    per_stack: Vec<(u32, u32)>,
    other_stacks: FxHashMap<StackId, (u32, u32)>,
}

const UNSEEN: u32 = u32::MAX;
const NO_DETAIL: u32 = u32::MAX;

impl<'s, 'c> Attribution<'s, 'c> {
    fn new(snap: &'s Snapshot, device: i64, opts: LineOptions, sites: &'c mut SiteCache) -> Self {
        Attribution {
            snap,
            device,
            opts,
            sites,
            keys: Vec::new(),
            index: FxHashMap::default(),
            details: Vec::new(),
            detail_index: FxHashMap::default(),
            per_stack: vec![(UNSEEN, NO_DETAIL); snap.stacks.len()],
            other_stacks: FxHashMap::default(),
        }
    }

    /// The row of `el` (an index into `keys`) and its detail row (into `details`, or
    /// [`NO_DETAIL`]).
    fn row(&mut self, el: &Element) -> (u32, u32) {
        let snap = self.snap;
        let stack = element_stack(snap, self.device, el);
        let cached = match self.per_stack.get(stack.0 as usize) {
            Some(&r) => r,
            None => self
                .other_stacks
                .get(&stack)
                .copied()
                .unwrap_or((UNSEEN, NO_DETAIL)),
        };
        if cached.0 != UNSEEN {
            return cached;
        }
        let key = Key::of(snap, stack, self.opts, self.sites);
        let next = self.keys.len() as u32;
        let keys = &mut self.keys;
        let row = *self.index.entry(key.clone()).or_insert_with(|| {
            keys.push(key);
            next
        });
        let detail = if self.opts.sites {
            self.sites
                .site(snap, stack)
                .detail
                .as_ref()
                .map(|d| (d.file.clone(), d.line, d.name.clone()))
        } else {
            None
        };
        let sub = match detail {
            Some(d) => {
                let next = self.details.len() as u32;
                let details = &mut self.details;
                *self
                    .detail_index
                    .entry((row, d.clone()))
                    .or_insert_with(|| {
                        details.push((row, d));
                        next
                    })
            }
            None => NO_DETAIL,
        };
        match self.per_stack.get_mut(stack.0 as usize) {
            Some(slot) => *slot = (row, sub),
            None => {
                self.other_stacks.insert(stack, (row, sub));
            }
        }
        (row, sub)
    }
}

/// The elements drawn (and counted in [`Steps::live_at_step`]) during timestep `step`
/// ([`Steps::live_elements`]): bottom first, the sliding element last.
pub fn live_elements_at(steps: &Steps, step: u32) -> Vec<u32> {
    steps.live_elements(step)
}

/// Live at peak, total, count, largest.
#[derive(Clone, Copy, Default)]
struct Acc(u64, u64, u64, u64);

impl Acc {
    fn add(&mut self, size: u64) {
        self.1 = self.1.saturating_add(size);
        self.2 = self.2.saturating_add(1);
        self.3 = self.3.max(size);
    }

    fn row(self, file: String, line: i64, name: String) -> LineRow {
        LineRow {
            file,
            line,
            name,
            live_at_peak_bytes: self.0,
            total_bytes: self.1,
            count: self.2,
            largest_bytes: self.3,
        }
    }
}

fn bump(acc: &mut Vec<Acc>, i: u32) -> Option<&mut Acc> {
    let i = i as usize;
    if acc.len() <= i {
        acc.resize(i + 1, Acc::default());
    }
    acc.get_mut(i)
}

fn row_order(a: &LineRow, b: &LineRow) -> std::cmp::Ordering {
    b.live_at_peak_bytes
        .cmp(&a.live_at_peak_bytes)
        .then(b.total_bytes.cmp(&a.total_bytes))
        .then(b.count.cmp(&a.count))
        .then_with(|| a.file.cmp(&b.file))
        .then(a.line.cmp(&b.line))
        .then_with(|| a.name.cmp(&b.name))
}

/// The per-site table of `timeline` (built for `device`) with each site's library lines
/// ([`SiteRow::detail`]), sites classified by `sites` (its [`crate::site::UserCode`]);
/// sorted by live bytes at the peak, then total bytes, both descending (then count
/// descending, then file, line, name); detail rows the same way.
pub fn site_table(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Steps,
    opts: LineOptions,
    sites: &mut SiteCache,
) -> Vec<SiteRow> {
    let mut at = Attribution::new(snap, device, opts, sites);
    let mut acc: Vec<Acc> = Vec::new();
    let mut sub: Vec<Acc> = Vec::new();
    for el in &timeline.elements {
        let (row, d) = at.row(el);
        if let Some(a) = bump(&mut acc, row) {
            a.add(el.size_bytes);
        }
        if d != NO_DETAIL {
            if let Some(a) = bump(&mut sub, d) {
                a.add(el.size_bytes);
            }
        }
    }
    if layout.step_count() > 0 {
        for e in live_elements_at(layout, layout.peak_step) {
            let Some(el) = timeline.elements.get(e as usize) else {
                continue;
            };
            let (row, d) = at.row(el);
            if let Some(a) = bump(&mut acc, row) {
                a.0 = a.0.saturating_add(el.size_bytes);
            }
            if d != NO_DETAIL {
                if let Some(a) = bump(&mut sub, d) {
                    a.0 = a.0.saturating_add(el.size_bytes);
                }
            }
        }
    }
    acc.resize(at.keys.len(), Acc::default());
    sub.resize(at.details.len(), Acc::default());
    let mut details: Vec<Vec<LineRow>> = vec![Vec::new(); at.keys.len()];
    for ((row, (file, line, name)), a) in at.details.drain(..).zip(sub) {
        if let Some(d) = details.get_mut(row as usize) {
            d.push(a.row(file, line, name));
        }
    }
    let mut rows: Vec<SiteRow> = at
        .keys
        .drain(..)
        .zip(acc)
        .zip(details)
        .map(|((key, a), mut detail)| {
            detail.sort_by(row_order);
            SiteRow {
                row: a.row(key.file, key.line, key.name),
                kind: key.kind,
                label: key.label,
                detail,
            }
        })
        .collect();
    rows.sort_by(|a, b| row_order(&a.row, &b.row));
    rows
}

/// The per-source-line table of `timeline` (built for `device`): [`site_table`] with the
/// default user code, without kinds and details.
pub fn line_table(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Steps,
    opts: LineOptions,
) -> Vec<LineRow> {
    let mut sites = SiteCache::default_for(snap);
    site_table(snap, device, timeline, layout, opts, &mut sites)
        .into_iter()
        .map(|r| r.row)
        .collect()
}

fn elements_where(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    opts: LineOptions,
    pred: impl Fn(&str, i64, &str) -> bool,
) -> Vec<u32> {
    let mut sites = SiteCache::default_for(snap);
    let mut at = Attribution::new(snap, device, opts, &mut sites);
    let mut hit: Vec<bool> = Vec::new();
    let mut out = Vec::new();
    for (i, el) in timeline.elements.iter().enumerate() {
        let (row, _) = at.row(el);
        while let Some(k) = at.keys.get(hit.len()) {
            hit.push(pred(&k.file, k.line, &k.name));
        }
        if hit.get(row as usize).copied().unwrap_or(false) {
            out.push(i as u32);
        }
    }
    out
}

/// The elements attributed to `file:line` (every row with that file and line, whatever the
/// name; `<no frames>` is file [`NO_FRAMES`], line 0), ascending.
pub fn line_elements(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    opts: LineOptions,
    file: &str,
    line: i64,
) -> Vec<u32> {
    elements_where(snap, device, timeline, opts, |f, l, _| {
        f == file && l == line
    })
}

/// The elements of exactly one row of [`line_table`] (same `opts`), ascending.
pub fn row_elements(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    opts: LineOptions,
    row: &LineRow,
) -> Vec<u32> {
    elements_where(snap, device, timeline, opts, |f, l, n| {
        f == row.file && l == row.line && n == row.name
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_files() {
        assert!(is_python_file("/a/b.py"));
        assert!(is_python_file("<ipython-input-3-abc>"));
        assert!(!is_python_file("??"));
        assert!(!is_python_file(""));
    }
}
