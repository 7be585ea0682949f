//! Folded lines of reserved memory (`memviz segments` / `memviz memory`, SEMANTICS.md §8
//! "Folded-stack lines"): one line per block of every final segment,
//! `stream_<s>;seg_<address>;<state>;<frames> <bytes>` (or without the `seg_` level), frames
//! filtered (§7), root first, `basename:line:name`. Free space and rounding gaps are frames of
//! their own ([`FREE`], [`GAPS`]), so the lines of a segment add up to its blocks' sizes (see
//! the module documentation of [`super`] for where this differs from the reference).

use std::io::{self, Write};

use memviz_snapshot::{Block, BlockState, Segment, Snapshot, StackId};
use rustc_hash::FxHashMap;

use crate::flame::{escape_frame, FoldedEntry, ALL_FILTERED};
use crate::frames::{basename, keep_frame};

/// The frame of a block whose stack is empty.
pub const NON_PYTHON: &str = "<non-python>";
/// The frame of a legacy `history` entry without frames.
pub const NO_CONTEXT: &str = "<no-context>";
/// The frame of an active block's rounding: `size − requested_size`.
pub const GAPS: &str = "<gaps>";
/// The frame of an inactive block: free space inside the segment.
pub const FREE: &str = "<free>";
/// The state level of a segment's bytes that no block covers.
pub const UNACCOUNTED: &str = "<unaccounted>";

/// Whether the lines have a `seg_<address>` level (`memviz segments`) or not (`memviz memory`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReservedBy {
    /// `stream_<s>;seg_<address>;<state>;…`
    Segment,
    /// `stream_<s>;<state>;…`
    Stream,
}

/// A block state as the file spells it (`unknown` for a state memviz does not know).
#[must_use]
pub fn state_name(s: BlockState) -> &'static str {
    match s {
        BlockState::ActiveAllocated => "active_allocated",
        BlockState::ActivePendingFree => "active_pending_free",
        BlockState::Inactive => "inactive",
        BlockState::Unknown => "unknown",
    }
}

/// Whether a level is reserved memory that no tensor uses (free space, rounding gaps, an
/// inactive block, bytes no block covers): the flamegraph gives those a neutral colour.
#[must_use]
pub fn is_marker_frame(name: &str) -> bool {
    [FREE, GAPS, UNACCOUNTED, "inactive"].contains(&name)
}

/// The printed frames of stacks, made once per stack.
struct StackTexts<'s> {
    snap: &'s Snapshot,
    by_stack: FxHashMap<StackId, Vec<String>>,
}

impl<'s> StackTexts<'s> {
    /// The frames of `stack`, root first, escaped for a folded line; `empty` when it has none.
    fn get(&mut self, stack: StackId, empty: &str) -> &[String] {
        let snap = self.snap;
        self.by_stack.entry(stack).or_insert_with(|| {
            let ids = snap.stack(stack);
            if ids.is_empty() {
                return vec![empty.to_string()];
            }
            let v: Vec<String> = ids
                .iter()
                .rev()
                .filter_map(|&id| snap.frame(id))
                .filter(|f| keep_frame(snap, f))
                .map(|f| {
                    escape_frame(&format!(
                        "{}:{}:{}",
                        basename(snap.str(f.filename)),
                        f.line,
                        snap.str(f.name)
                    ))
                })
                .collect();
            if v.is_empty() {
                vec![ALL_FILTERED.to_string()]
            } else {
                v
            }
        })
    }
}

/// What a line's frames are: a stack (a block's, or a legacy `history` entry's), or a marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LineFrames {
    Block(StackId),
    History(StackId),
    Gaps,
    Free,
    Unaccounted,
}

/// Calls `f(segment index, segment, state, kind, frames, bytes)` for every line of reserved memory
/// of `device` (`None`: every device), segments in file order, blocks in address order; lines
/// of 0 bytes are left out. `frames` are escaped ([`escape_frame`]) and root first; `state` is
/// [`state_name`] or [`UNACCOUNTED`] (with no frames).
pub fn for_each_reserved(
    snap: &Snapshot,
    device: Option<i64>,
    mut f: impl FnMut(usize, &Segment, &'static str, LineFrames, &[String], u64),
) {
    let mut texts = StackTexts {
        snap,
        by_stack: FxHashMap::default(),
    };
    let gaps = [GAPS.to_string()];
    let free = [FREE.to_string()];
    for (si, seg) in snap.segments.iter().enumerate() {
        if device.is_some_and(|d| d != seg.device) {
            continue;
        }
        let mut covered = 0u64;
        for b in snap.segment_blocks(seg) {
            covered = covered.saturating_add(b.size);
            let state = state_name(b.state);
            if b.state == BlockState::Inactive {
                if b.size > 0 {
                    f(si, seg, state, LineFrames::Free, &free, b.size);
                }
                continue;
            }
            let accounted = block_lines(snap, b, &mut texts, &mut |kind, frames, v| {
                f(si, seg, state, kind, frames, v);
            });
            let gap = b.size.saturating_sub(accounted);
            if gap > 0 {
                f(si, seg, state, LineFrames::Gaps, &gaps, gap);
            }
        }
        let rest = seg.total_size.saturating_sub(covered);
        if rest > 0 {
            f(si, seg, UNACCOUNTED, LineFrames::Unaccounted, &[], rest);
        }
    }
}

/// The stack lines of an active block (one per legacy `history` entry, else one), each capped
/// so that they never add up past the block's size; returns their sum.
fn block_lines(
    snap: &Snapshot,
    b: &Block,
    texts: &mut StackTexts<'_>,
    f: &mut dyn FnMut(LineFrames, &[String], u64),
) -> u64 {
    let history = snap
        .history
        .get(b.history.0 as usize..b.history.1 as usize)
        .unwrap_or(&[]);
    let mut left = b.size;
    if history.is_empty() {
        let v = b.requested_size.min(left);
        if v > 0 {
            f(
                LineFrames::Block(b.stack),
                texts.get(b.stack, NON_PYTHON),
                v,
            );
        }
        return v;
    }
    for h in history {
        let v = h.real_size.min(left);
        left -= v;
        if v > 0 {
            f(
                LineFrames::History(h.stack),
                texts.get(h.stack, NO_CONTEXT),
                v,
            );
        }
    }
    b.size - left
}

/// The first levels of a line: `stream_<s>;seg_<address>` or `stream_<s>`.
fn prefix(seg: &Segment, by: ReservedBy) -> String {
    match by {
        ReservedBy::Segment => format!("stream_{};seg_{}", seg.stream, seg.address),
        ReservedBy::Stream => format!("stream_{}", seg.stream),
    }
}

/// Writes the folded lines ([`for_each_reserved`]), one per line of a block, in file order
/// (a flamegraph merges equal stacks).
pub fn write_reserved(
    w: &mut dyn Write,
    snap: &Snapshot,
    device: Option<i64>,
    by: ReservedBy,
) -> io::Result<()> {
    let mut result = Ok(());
    let mut last: Option<(usize, String)> = None;
    for_each_reserved(snap, device, |si, seg, state, _, frames, v| {
        if result.is_err() {
            return;
        }
        let p = match &last {
            Some((i, p)) if *i == si => p,
            _ => &last.insert((si, prefix(seg, by))).1,
        };
        result = (|| {
            write!(w, "{p};{state}")?;
            for fr in frames {
                write!(w, ";{fr}")?;
            }
            writeln!(w, " {v}")
        })();
    });
    result
}

/// The folded lines as entries (levels root first: stream, segment, state, frames), for a
/// [`crate::flame::FlameTree`]. Lines of one segment (or stream) with the same state and stack
/// are summed first, so a segment of many blocks from one stack costs one entry.
#[must_use]
pub fn reserved_entries(snap: &Snapshot, device: Option<i64>, by: ReservedBy) -> Vec<FoldedEntry> {
    type Key<'k> = (u64, u64, &'k str, LineFrames);
    let mut index: FxHashMap<Key<'static>, usize> = FxHashMap::default();
    let mut out: Vec<FoldedEntry> = Vec::new();
    for_each_reserved(snap, device, |_, seg, state, kind, frames, v| {
        let address = match by {
            ReservedBy::Segment => seg.address,
            ReservedBy::Stream => 0,
        };
        let key = (seg.stream, address, state, kind);
        if let Some(e) = index.get(&key).and_then(|&i| out.get_mut(i)) {
            e.1 = e.1.saturating_add(v);
            return;
        }
        let mut levels = Vec::with_capacity(frames.len() + 3);
        levels.push(format!("stream_{}", seg.stream));
        if by == ReservedBy::Segment {
            levels.push(format!("seg_{}", seg.address));
        }
        levels.push(state.to_string());
        levels.extend(frames.iter().cloned());
        index.insert(key, out.len());
        out.push((levels, v));
    });
    out
}
