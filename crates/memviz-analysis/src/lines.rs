//! Per-source-line attribution (memlab's `LineProfiler`, from the snapshot) and the table of
//! what is alive at one timestep (its `MemReporter`).
//!
//! # Line table
//! Every element of a timeline (for [`crate::timeline::build`]: allocations, unmatched frees
//! and ghost blocks) is attributed to one source location of its stack
//! ([`crate::frames::element_stack`]; an unmatched free's stack is the free site's):
//! 1. the innermost frame kept by §7's frame filter ([`crate::frames::keep_frame`]) that passes
//!    [`LineOptions`]: with `skip_cpp` only Python frames (a `.py` file, or a `<…>` pseudo-file
//!    such as `<ipython-input-3-…>` / `<stdin>`), with `skip_torch` no torch internals
//!    ([`is_internal_frame`]: files under `torch/`, `<frozen …>`, FX's generated
//!    `<eval_with_key>`, and C++/CPython frames of `c10::` / `at::` / `torch::` / `Py…`);
//! 2. else (no frame qualifies: a backward-pass stack without Python frames, say) the innermost
//!    kept frame that is not the allocator's own plumbing (`…Allocator…`, `at::empty…`, as
//!    [`crate::frames::innermost_user_frame`] skips them; otherwise every C++-only stack would
//!    land on `DeviceCachingAllocator::malloc`), else the innermost kept frame;
//! 3. else (an empty stack, or every frame filtered out) the row `<no frames>` (line 0, no
//!    name).
//!
//! A row is one `(filename, line, name)`: for Python frames that is one `filename:line` (a line
//! lives in one function), while C++ frames, which have no line numbers (`??:0`), stay apart by
//! symbol. [`line_elements`] takes `filename:line` only and returns every row of it;
//! [`row_elements`] one row.
//!
//! The attribution is computed once per interned stack, not per element: O(elements + Σ frames
//! of the distinct stacks).
//!
//! Per row: `count` = the timeline elements attributed to it, `total_bytes` = Σ their sizes
//! (so Σ over rows = every byte the timeline shows: allocations in the trace plus memory
//! present at the start), `largest_bytes` = the largest of them, `live_at_peak_bytes` = Σ sizes
//! of those alive at [`Layout::peak_step`] ([`live_elements_at`]; Σ over rows = the peak).
//!
//! # Live table
//! [`live_table`] lists the elements alive at any timestep, largest first, with address, age
//! (timesteps, and µs when both events have `time_us`), stream, the attributed frame and the
//! tooltip's address label.

use crate::frames::{element_stack, keep_frame};
use crate::layout::{Layout, NO_EVENT, SLIDE_STEPS};
use crate::timeline::{Element, Origin, Timeline};
use crate::tooltip::{self, Versions, NO_VERSION};
use memviz_snapshot::{FrameId, Snapshot, StackId, StrId, NO_TIME};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Which frames may carry an allocation in the line table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineOptions {
    /// Skip torch's own frames ([`is_internal_frame`]). Default true.
    pub skip_torch: bool,
    /// Skip frames that are not Python ([`is_python_file`]). Default true.
    pub skip_cpp: bool,
}

impl Default for LineOptions {
    fn default() -> Self {
        LineOptions {
            skip_torch: true,
            skip_cpp: true,
        }
    }
}

impl LineOptions {
    /// Every kept frame qualifies (`memviz lines --all-frames`): the innermost frame after §7's
    /// filter.
    pub const ALL_FRAMES: LineOptions = LineOptions {
        skip_torch: false,
        skip_cpp: false,
    };
}

/// The file of the row of elements with no usable frame.
pub const NO_FRAMES: &str = "<no frames>";

/// One source location of the line table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct LineRow {
    /// Full filename as recorded ([`NO_FRAMES`] for the no-frames row).
    pub file: String,
    pub line: i64,
    /// Function (or C++ symbol) name; empty for the no-frames row.
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

/// Python source: a `.py` file or a `<…>` pseudo-file (`<stdin>`, `<string>`,
/// `<ipython-input-…>`).
pub fn is_python_file(file: &str) -> bool {
    file.ends_with(".py")
        || file.ends_with(".pyw")
        || (file.starts_with('<') && file.ends_with('>'))
}

const TORCH_CPP_NAMESPACES: [&str; 6] = ["c10::", "at::", "torch::", "caffe2::", "aten::", "THP"];
const CPYTHON_NAMES: [&str; 5] = [
    "method_vectorcall",
    "slot_tp_",
    "cfunction_",
    "vectorcall",
    "dynamo_",
];

/// `ns` occurs in `name` at the start of an identifier (`at::` in `at::empty`, not in
/// `flat::x`).
fn has_namespace(name: &str, ns: &str) -> bool {
    name.match_indices(ns).any(|(i, _)| {
        name[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

/// torch's own frames (and the interpreter's), skipped by [`LineOptions::skip_torch`]:
/// * Python files inside the `torch` package (`…/torch/…`, `…\torch\…`, `torch/…`),
///   `<frozen …>` and FX's generated `<eval_with_key>.N`;
/// * other frames (C++) whose symbol is in torch's namespaces (`c10::`, `at::`, `torch::`,
///   `caffe2::`, `aten::`, `THP…`) or is CPython's / dynamo's C machinery (`Py…`, `_Py…`,
///   `method_vectorcall…`, `slot_tp_…`, `dynamo_…`).
pub fn is_internal_frame(file: &str, name: &str) -> bool {
    if file.contains("/torch/")
        || file.contains("\\torch\\")
        || file.starts_with("torch/")
        || file.starts_with("torch\\")
        || file.starts_with("<frozen")
        || file.starts_with("<eval_with_key")
    {
        return true;
    }
    if is_python_file(file) {
        return false;
    }
    TORCH_CPP_NAMESPACES.iter().any(|p| has_namespace(name, p))
        || name.starts_with("Py")
        || name.starts_with("_Py")
        || CPYTHON_NAMES.iter().any(|p| name.contains(p))
}

use crate::frames::is_allocator_plumbing;

/// The frame a stack is attributed to (module documentation), or `None` for `<no frames>`.
pub fn attributed_frame(snap: &Snapshot, stack: StackId, opts: LineOptions) -> Option<FrameId> {
    let mut fallback_any: Option<FrameId> = None;
    let mut fallback_plain: Option<FrameId> = None;
    for &id in snap.stack(stack) {
        let Some(f) = snap.frame(id) else {
            continue;
        };
        if !keep_frame(snap, f) {
            continue;
        }
        let file = snap.str(f.filename);
        let name = snap.str(f.name);
        if (!opts.skip_cpp || is_python_file(file))
            && (!opts.skip_torch || !is_internal_frame(file, name))
        {
            return Some(id);
        }
        fallback_any.get_or_insert(id);
        if fallback_plain.is_none() && !is_allocator_plumbing(name) {
            fallback_plain = Some(id);
        }
    }
    fallback_plain.or(fallback_any)
}

/// `filename:line:name` of [`attributed_frame`], or [`NO_FRAMES`].
pub fn attributed_text(snap: &Snapshot, stack: StackId, opts: LineOptions) -> String {
    match attributed_frame(snap, stack, opts).and_then(|id| snap.frame(id)) {
        Some(f) => format!("{}:{}:{}", snap.str(f.filename), f.line, snap.str(f.name)),
        None => NO_FRAMES.to_string(),
    }
}

/// A row's identity: (filename, line, name), or `None` for `<no frames>`.
type Key = Option<(StrId, i64, StrId)>;

/// Row index per element, computed once per distinct stack and looked up per element as it
/// is needed (no per-element vector: a panel over tens of millions of events stays small).
struct Attribution<'s> {
    snap: &'s Snapshot,
    device: i64,
    opts: LineOptions,
    keys: Vec<Key>,
    per_stack: Vec<u32>,
    other_stacks: FxHashMap<StackId, u32>,
    index: FxHashMap<Key, u32>,
}

const UNSEEN: u32 = u32::MAX;

impl<'s> Attribution<'s> {
    fn new(snap: &'s Snapshot, device: i64, opts: LineOptions) -> Self {
        Attribution {
            snap,
            device,
            opts,
            keys: Vec::new(),
            per_stack: vec![UNSEEN; snap.stacks.len()],
            other_stacks: FxHashMap::default(),
            index: FxHashMap::default(),
        }
    }

    /// The row of `el` (an index into `keys`).
    fn row(&mut self, el: &Element) -> u32 {
        let snap = self.snap;
        let stack = element_stack(snap, self.device, el);
        let cached = match self.per_stack.get(stack.0 as usize) {
            Some(&r) => r,
            None => self.other_stacks.get(&stack).copied().unwrap_or(UNSEEN),
        };
        if cached != UNSEEN {
            return cached;
        }
        let key: Key = attributed_frame(snap, stack, self.opts)
            .and_then(|id| snap.frame(id))
            .map(|f| (f.filename, f.line, f.name));
        let next = self.keys.len() as u32;
        let keys = &mut self.keys;
        let row = *self.index.entry(key).or_insert_with(|| {
            keys.push(key);
            next
        });
        match self.per_stack.get_mut(stack.0 as usize) {
            Some(slot) => *slot = row,
            None => {
                self.other_stacks.insert(stack, row);
            }
        }
        row
    }
}

fn key_text(snap: &Snapshot, key: &Key) -> (String, i64, String) {
    match key {
        Some((file, line, name)) => (
            snap.str(*file).to_string(),
            *line,
            snap.str(*name).to_string(),
        ),
        None => (NO_FRAMES.to_string(), 0, String::new()),
    }
}

/// The elements drawn (and counted in [`Layout::live_at_step`]) during timestep `step`: those
/// of [`Layout::elements_at`], plus the freed element of a slide in progress (its bytes still
/// count until the slide ends). Σ sizes = `layout.live_at_step[step]`. Element order: bottom
/// first, the sliding element last.
pub fn live_elements_at(layout: &Layout, step: u32) -> Vec<u32> {
    let mut out: Vec<u32> = layout
        .elements_at(step)
        .into_iter()
        .map(|(_, e)| e)
        .collect();
    let live: u64 = out
        .iter()
        .fold(0u64, |a, &e| a.saturating_add(layout.height_bytes(e)));
    let want = layout.live_at_step().get(step as usize).unwrap_or(0);
    if live < want {
        let i = layout.slides.partition_point(|s| s.step <= step);
        if let Some(s) = i.checked_sub(1).and_then(|i| layout.slides.get(i)) {
            if step < s.step.saturating_add(SLIDE_STEPS) {
                if let Some(e) = layout.element_at_order(s.order) {
                    if !out.contains(&e) {
                        out.push(e);
                    }
                }
            }
        }
    }
    out
}

/// The per-source-line table of `timeline` (built for `device`), sorted by live bytes at the
/// peak, then total bytes, both descending (then count descending, then file, line, name).
pub fn line_table(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Layout,
    opts: LineOptions,
) -> Vec<LineRow> {
    let mut at = Attribution::new(snap, device, opts);
    let mut acc: Vec<(u64, u64, u64, u64)> = Vec::new();
    for el in &timeline.elements {
        let row = at.row(el) as usize;
        if acc.len() <= row {
            acc.resize(row + 1, (0, 0, 0, 0));
        }
        if let Some(a) = acc.get_mut(row) {
            a.1 = a.1.saturating_add(el.size_bytes);
            a.2 = a.2.saturating_add(1);
            a.3 = a.3.max(el.size_bytes);
        }
    }
    if layout.step_count() > 0 {
        for e in live_elements_at(layout, layout.peak_step) {
            let Some(el) = timeline.elements.get(e as usize) else {
                continue;
            };
            let row = at.row(el) as usize;
            if let Some(a) = acc.get_mut(row) {
                a.0 = a.0.saturating_add(el.size_bytes);
            }
        }
    }
    acc.resize(at.keys.len(), (0, 0, 0, 0));
    let mut rows: Vec<LineRow> = at
        .keys
        .iter()
        .zip(acc)
        .map(|(key, (live, total, count, largest))| {
            let (file, line, name) = key_text(snap, key);
            LineRow {
                file,
                line,
                name,
                live_at_peak_bytes: live,
                total_bytes: total,
                count,
                largest_bytes: largest,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.live_at_peak_bytes
            .cmp(&a.live_at_peak_bytes)
            .then(b.total_bytes.cmp(&a.total_bytes))
            .then(b.count.cmp(&a.count))
            .then_with(|| a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
            .then_with(|| a.name.cmp(&b.name))
    });
    rows
}

fn elements_where(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    opts: LineOptions,
    pred: impl Fn(&str, i64, &str) -> bool,
) -> Vec<u32> {
    let mut at = Attribution::new(snap, device, opts);
    let mut hit: Vec<bool> = Vec::new();
    let mut out = Vec::new();
    for (i, el) in timeline.elements.iter().enumerate() {
        let row = at.row(el) as usize;
        while let Some(k) = at.keys.get(hit.len()) {
            let (f, l, n) = key_text(snap, k);
            hit.push(pred(&f, l, &n));
        }
        if hit.get(row).copied().unwrap_or(false) {
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

/// One element alive at a timestep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct LiveRow {
    pub element: u32,
    /// The address of the event / block / segment behind the element (0 for a pool envelope).
    pub addr: u64,
    pub size: u64,
    /// Timesteps since the element was pushed (0 for an element pushed at this step).
    pub age_steps: u32,
    /// `time_us` of this timestep's event minus that of the element's allocation, when both
    /// exist (never for memory present from the start).
    pub age_us: Option<i64>,
    /// Stream ordinal as the tooltip prints it (`stream n`): 0 is the default stream, others
    /// numbered in order of first appearance (SEMANTICS.md §2).
    pub stream: u64,
    /// `filename:line:name` of the frame the line table attributes the element to (default
    /// [`LineOptions`]), or [`NO_FRAMES`].
    pub top_frame: String,
    /// The tooltip's address label (`b<hex>_<v>`; `s<hex>_<v>` for segment elements).
    pub label: String,
}

/// Address, raw stream and allocation event of an element (shared with `search`).
pub(crate) fn element_addr_stream(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    el: &Element,
) -> (u64, u64, Option<u32>) {
    match el.origin {
        Origin::Alloc { event }
        | Origin::UnmatchedFree { event }
        | Origin::SegmentAlloc { event }
        | Origin::UnmatchedSegmentFree { event } => {
            let tr = snap.trace(device);
            let i = event as usize;
            let addr = tr.and_then(|t| t.addr(i)).unwrap_or(0);
            let stream = tr.and_then(|t| t.stream.get(i)).unwrap_or(0);
            let alloc = matches!(
                el.origin,
                Origin::Alloc { .. } | Origin::SegmentAlloc { .. }
            )
            .then_some(event);
            (addr, stream, alloc)
        }
        Origin::Ghost { block } => {
            let addr = snap.blocks.get(block as usize).map_or(0, |b| b.address);
            let stream = snap
                .segment_of_block(block)
                .filter(|s| s.device == device)
                .map_or(0, |s| s.stream);
            (addr, stream, None)
        }
        Origin::Segment { segment } => snap
            .segments
            .get(segment as usize)
            .map_or((0, 0, None), |s| (s.address, s.stream, None)),
        Origin::PoolInitial { pool } | Origin::PoolGrowth { pool } => (
            0,
            timeline.pools.get(pool as usize).map_or(0, |p| p.stream),
            None,
        ),
    }
}

/// The tooltip's address label of an element (shared with `search`); `streams` is only
/// needed for pool envelopes (`a,b,s<n>`).
pub(crate) fn element_label(
    versions: &Versions,
    streams: Option<&tooltip::StreamOrdinals>,
    timeline: &Timeline,
    el: &Element,
    addr: u64,
) -> String {
    let mut s = String::new();
    write_element_label(&mut s, versions, streams, timeline, el, addr);
    s
}

/// [`element_label`] appended to `out`.
pub(crate) fn write_element_label(
    out: &mut String,
    versions: &Versions,
    streams: Option<&tooltip::StreamOrdinals>,
    timeline: &Timeline,
    el: &Element,
    addr: u64,
) {
    use std::fmt::Write;
    let (prefix, version) = match el.origin {
        Origin::Alloc { event } | Origin::UnmatchedFree { event } => {
            ('b', versions.events.get(event as usize).copied())
        }
        Origin::SegmentAlloc { event } | Origin::UnmatchedSegmentFree { event } => {
            ('s', versions.events.get(event as usize).copied())
        }
        Origin::Ghost { block } => ('b', versions.blocks.get(block as usize).copied()),
        Origin::Segment { segment } => ('s', versions.segments.get(segment as usize).copied()),
        Origin::PoolInitial { pool } | Origin::PoolGrowth { pool } => {
            if let Some(p) = timeline.pools.get(pool as usize) {
                let s = streams.and_then(|s| s.get(p.stream)).unwrap_or(0);
                let _ = write!(out, "{},{},s{s}", p.id.0, p.id.1);
            }
            return;
        }
    };
    tooltip::write_address_label(out, prefix, addr, version.unwrap_or(NO_VERSION));
}

/// The elements alive at timestep `step` ([`live_elements_at`]) of `timeline` (built for
/// `device`), largest first (ties by element id). Empty for a step outside the layout.
pub fn live_table(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Layout,
    step: u32,
) -> Vec<LiveRow> {
    live_rows(snap, device, timeline, layout, step, usize::MAX).rows
}

/// [`live_rows`]: how many elements are alive and their bytes, and the largest of them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LiveRows {
    /// Elements alive at the step.
    pub count: usize,
    /// Σ their sizes (saturating).
    pub total_bytes: u64,
    /// The `limit` largest, as [`live_table`] orders them.
    pub rows: Vec<LiveRow>,
}

/// [`live_table`] cut to its first `limit` rows, with the count and bytes of every live
/// element: only the rows listed are formatted (a page lists the 2000 largest of what can be
/// millions).
pub fn live_rows(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Layout,
    step: u32,
    limit: usize,
) -> LiveRows {
    let mut live = live_elements_at(layout, step);
    live.retain(|&e| timeline.elements.get(e as usize).is_some());
    if live.is_empty() {
        return LiveRows::default();
    }
    let size = |e: u32| {
        timeline
            .elements
            .get(e as usize)
            .map_or(0, |el| el.size_bytes)
    };
    let count = live.len();
    let total_bytes = live.iter().fold(0u64, |a, &e| a.saturating_add(size(e)));
    live.sort_unstable_by(|&a, &b| size(b).cmp(&size(a)).then(a.cmp(&b)));
    live.truncate(limit);
    live.shrink_to_fit();
    let versions = tooltip::versions(snap, device);
    let streams = tooltip::stream_ordinals(snap);
    let tr = snap.trace(device);
    let time_of = |event: u32| -> Option<i64> {
        tr.and_then(|t| t.time_us(event as usize))
            .filter(|&t| t != NO_TIME)
    };
    let now = layout
        .step_event()
        .get(step as usize)
        .filter(|&e| e != NO_EVENT)
        .and_then(time_of);
    let opts = LineOptions::default();
    let mut frame_cache: FxHashMap<StackId, String> = FxHashMap::default();
    let mut rows: Vec<LiveRow> = live
        .into_iter()
        .filter_map(|e| {
            let el = timeline.elements.get(e as usize)?;
            let (addr, raw_stream, alloc_event) = element_addr_stream(snap, device, timeline, el);
            let start = layout.span(e).map_or(0, |s| s.0);
            let age_us = match (now, alloc_event.and_then(time_of)) {
                (Some(n), Some(a)) => Some(n.saturating_sub(a)),
                _ => None,
            };
            let stack = element_stack(snap, device, el);
            let top_frame = frame_cache
                .entry(stack)
                .or_insert_with(|| attributed_text(snap, stack, opts))
                .clone();
            Some(LiveRow {
                element: e,
                addr,
                size: el.size_bytes,
                age_steps: step.saturating_sub(start),
                age_us,
                stream: u64::from(streams.get(raw_stream).unwrap_or(0)),
                top_frame,
                label: element_label(&versions, Some(&streams), timeline, el, addr),
            })
        })
        .collect();
    rows.sort_by(|a, b| b.size.cmp(&a.size).then(a.element.cmp(&b.element)));
    LiveRows {
        count,
        total_bytes,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_classes() {
        assert!(is_python_file("/a/b.py"));
        assert!(is_python_file("<ipython-input-3-abc>"));
        assert!(!is_python_file("??"));
        assert!(!is_python_file(""));
        assert!(is_internal_frame(
            "/env/site-packages/torch/nn/modules/module.py",
            "_call_impl"
        ));
        assert!(is_internal_frame(
            "C:\\venv\\Lib\\torch\\functional.py",
            "einsum"
        ));
        assert!(is_internal_frame("<frozen runpy>", "_run_code"));
        assert!(is_internal_frame(
            "??",
            "at::native::add(at::Tensor const&)"
        ));
        assert!(is_internal_frame("??", "_PyEval_EvalFrameDefault"));
        assert!(!is_internal_frame("/home/u/model.py", "forward"));
        assert!(!is_internal_frame("myext.cpp", "my_kernel_launch"));
        assert!(!is_internal_frame("/home/u/at::odd.py", "x"));
        assert!(!is_internal_frame("lib.cpp", "myflat::run()"));
        assert!(is_internal_frame("lib.cpp", "void c10::impl::call()"));
    }
}
