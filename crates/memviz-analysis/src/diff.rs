//! Compare two snapshots (SEMANTICS.md §8 `compare`, §9–10: memory_viz's `compare` crashes on
//! every dict snapshot; this one works on both top-level shapes and sorts its output).
//!
//! # Rules
//! * *Live allocations* are the `active_allocated` blocks of the final segments, of one device
//!   (`device: Some(d)`) or of every device (`None`; stacks are then merged across devices).
//!   A block counts its `requested_size` (the user's request, as the Active Memory Timeline and
//!   memory_viz's flamegraph lines count it; the legacy fill of SEMANTICS §2 applies).
//! * They are grouped by *stack*: the block's frames, innermost first, filtered by memory_viz's
//!   drop lists ([`crate::frames::keep_frame`]) and printed by [`crate::frames::frame_text`]
//!   (`filename:line:name`, plus indented FX lines when present), without repeat elision. A block
//!   without frames (or whose frames are all filtered out) has the empty stack `[]`. Stacks are
//!   compared as text, so the two files need not share anything.
//! * A group is named by its site ([`crate::site`], [`DiffGroup::site`]) of the first snapshot
//!   it was seen in (the stack text is the same in both).
//! * A group has the bytes and block counts of the stack in A and in B. Groups whose bytes and
//!   counts are equal on both sides are omitted (a file compared with itself gives no group).
//!   Order: `bytes_b − bytes_a` descending (the biggest growth first, the biggest shrink last),
//!   ties by the stack's lines compared element-wise.
//! * *Segments* are keyed by `(device, address, total_size)`: memory_viz's `(address,
//!   total_size)` plus the device, so equal addresses on two devices never match. Keys are a
//!   multiset (a duplicated key in A needs two in B). `stream` is reported, not compared. Both
//!   lists are sorted by `(device, address, total_size, stream)`.

use crate::frames::{frame_text, keep_frame};
use crate::site::{Site, SiteCache, UserCode};
use memviz_snapshot::{BlockState, FrameId, Snapshot, StackId};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::rc::Rc;

/// Live bytes and block counts of one stack in A and in B.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DiffGroup {
    /// Filtered frames, innermost first (`filename:line:name`); `[]` for no frames.
    pub stack: Vec<String>,
    pub bytes_a: u64,
    pub bytes_b: u64,
    pub count_a: u64,
    pub count_b: u64,
    /// The stack's site ([`crate::site`]).
    pub site: Site,
}

/// A segment's identity for the comparison (`stream` is informational).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SegmentKey {
    pub device: i64,
    pub address: u64,
    pub total_size: u64,
    /// Raw `cudaStream_t` value.
    pub stream: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Diff {
    pub groups: Vec<DiffGroup>,
    pub segments_only_a: Vec<SegmentKey>,
    pub segments_only_b: Vec<SegmentKey>,
}

/// A stack as text lines: the frames kept by memory_viz's filter, innermost first, each as
/// [`frame_text`] (`filename:line:name`, FX lines included). Empty for no frames.
pub fn stack_lines(snap: &Snapshot, stack: StackId) -> Vec<String> {
    snap.stack(stack)
        .iter()
        .filter_map(|&id| snap.frame(id))
        .filter(|f| keep_frame(snap, f))
        .map(|f| frame_text(snap, f))
        .collect()
}

/// Groups of equal stack text, shared by any number of snapshots. A stack is the list of its
/// kept frames' text ids (each distinct [`frame_text`] stored once), so a group costs 4 bytes
/// per frame; the lines themselves ([`StackGroups::lines`]) are made only for what is shown.
/// (Keying groups by their `Vec<String>` lines, stored twice, took 88 bytes per frame of every
/// distinct stack.)
#[derive(Default)]
pub(crate) struct StackGroups {
    texts: Vec<Rc<str>>,
    text_index: FxHashMap<Rc<str>, u32>,
    keys: Vec<Rc<[u32]>>,
    index: FxHashMap<Rc<[u32]>, u32>,
}

impl StackGroups {
    fn text_id(&mut self, text: String) -> u32 {
        if let Some(&i) = self.text_index.get(text.as_str()) {
            return i;
        }
        let i = self.texts.len() as u32;
        let rc: Rc<str> = Rc::from(text);
        self.texts.push(Rc::clone(&rc));
        self.text_index.insert(rc, i);
        i
    }

    fn intern(&mut self, key: Vec<u32>) -> u32 {
        if let Some(&g) = self.index.get(key.as_slice()) {
            return g;
        }
        let g = self.keys.len() as u32;
        let rc: Rc<[u32]> = Rc::from(key);
        self.keys.push(Rc::clone(&rc));
        self.index.insert(rc, g);
        g
    }

    /// Number of groups.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The stack lines of group `g` ([`stack_lines`] of its stacks); empty past the end.
    pub(crate) fn lines(&self, g: usize) -> Vec<String> {
        self.keys.get(g).map_or_else(Vec::new, |k| {
            k.iter()
                .map(|&t| {
                    self.texts
                        .get(t as usize)
                        .map_or_else(String::new, |s| s.to_string())
                })
                .collect()
        })
    }
}

/// One snapshot's `StackId` → group cache (and `FrameId` → text id: `None` for a frame the
/// filter drops).
pub(crate) struct StackCache<'s> {
    snap: &'s Snapshot,
    ids: FxHashMap<StackId, u32>,
    frames: FxHashMap<FrameId, Option<u32>>,
}

impl<'s> StackCache<'s> {
    pub(crate) fn new(snap: &'s Snapshot) -> Self {
        StackCache {
            snap,
            ids: FxHashMap::default(),
            frames: FxHashMap::default(),
        }
    }

    pub(crate) fn group(&mut self, groups: &mut StackGroups, id: StackId) -> u32 {
        if let Some(&g) = self.ids.get(&id) {
            return g;
        }
        let snap = self.snap;
        let mut key = Vec::new();
        for &f in snap.stack(id) {
            let t = match self.frames.get(&f) {
                Some(&t) => t,
                None => {
                    let t = snap
                        .frame(f)
                        .filter(|fr| keep_frame(snap, fr))
                        .map(|fr| groups.text_id(frame_text(snap, fr)));
                    self.frames.insert(f, t);
                    t
                }
            };
            key.extend(t);
        }
        let g = groups.intern(key);
        self.ids.insert(id, g);
        g
    }
}

#[derive(Clone, Copy, Default)]
struct Acc {
    bytes: [u64; 2],
    count: [u64; 2],
}

fn segment_keys(snap: &Snapshot, device: Option<i64>) -> Vec<SegmentKey> {
    snap.segments
        .iter()
        .filter(|s| device.is_none_or(|d| s.device == d))
        .map(|s| SegmentKey {
            device: s.device,
            address: s.address,
            total_size: s.total_size,
            stream: s.stream,
        })
        .collect()
}

/// The keys of `mine` with no partner in `other` (multiset difference on
/// `(device, address, total_size)`), sorted.
fn only_in(mine: &[SegmentKey], other: &[SegmentKey]) -> Vec<SegmentKey> {
    let mut left: FxHashMap<(i64, u64, u64), u64> = FxHashMap::default();
    for k in other {
        *left.entry((k.device, k.address, k.total_size)).or_insert(0) += 1;
    }
    let mut out: Vec<SegmentKey> = mine
        .iter()
        .filter(
            |k| match left.get_mut(&(k.device, k.address, k.total_size)) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            },
        )
        .copied()
        .collect();
    out.sort_unstable();
    out
}

/// Compare the final states of `a` and `b` (see the module documentation).
pub fn diff(a: &Snapshot, b: &Snapshot, device: Option<i64>) -> Diff {
    let mut d = DiffBuilder::new(device);
    d.add(0, a);
    d.add(1, b);
    d.finish()
}

/// [`diff`] one snapshot at a time: what it needs of a snapshot (its live bytes per stack
/// group, its segment keys) is taken by [`DiffBuilder::add`], so the first snapshot can be
/// dropped before the second is loaded (`memviz diff` then holds one model, not two).
pub struct DiffBuilder {
    device: Option<i64>,
    groups: StackGroups,
    acc: Vec<Acc>,
    keys: [Vec<SegmentKey>; 2],
    user: UserCode,
    /// The site of each group, from the first snapshot it was seen in.
    sites: Vec<Option<Site>>,
}

impl DiffBuilder {
    #[must_use]
    pub fn new(device: Option<i64>) -> Self {
        DiffBuilder::with_user_code(device, UserCode::default())
    }

    /// [`DiffBuilder::new`] naming sites with `user`.
    #[must_use]
    pub fn with_user_code(device: Option<i64>, user: UserCode) -> Self {
        DiffBuilder {
            device,
            groups: StackGroups::default(),
            acc: Vec::new(),
            keys: [Vec::new(), Vec::new()],
            user,
            sites: Vec::new(),
        }
    }

    /// Adds `snap` as side A (`side` 0) or B (1; anything else is ignored).
    pub fn add(&mut self, side: usize, snap: &Snapshot) {
        if side > 1 {
            return;
        }
        let device = self.device;
        let mut cache = StackCache::new(snap);
        let mut sites = SiteCache::new(snap, self.user.clone());
        for seg in snap
            .segments
            .iter()
            .filter(|s| device.is_none_or(|d| s.device == d))
        {
            for blk in snap.segment_blocks(seg) {
                if blk.state != BlockState::ActiveAllocated {
                    continue;
                }
                let g = cache.group(&mut self.groups, blk.stack) as usize;
                if self.acc.len() <= g {
                    self.acc.resize(g + 1, Acc::default());
                }
                if self.sites.len() <= g {
                    self.sites.resize(g + 1, None);
                }
                if let Some(slot @ None) = self.sites.get_mut(g) {
                    *slot = Some(sites.site(snap, blk.stack).clone());
                }
                if let Some(x) = self.acc.get_mut(g) {
                    x.bytes[side] = x.bytes[side].saturating_add(blk.requested_size);
                    x.count[side] = x.count[side].saturating_add(1);
                }
            }
        }
        if let Some(k) = self.keys.get_mut(side) {
            *k = segment_keys(snap, device);
        }
    }

    /// The comparison of the two sides added.
    #[must_use]
    pub fn finish(self) -> Diff {
        let DiffBuilder {
            groups,
            mut acc,
            keys: [ka, kb],
            mut sites,
            ..
        } = self;
        acc.resize(groups.len(), Acc::default());
        let mut out: Vec<DiffGroup> = acc
            .into_iter()
            .enumerate()
            .filter(|(_, x)| x.bytes[0] != x.bytes[1] || x.count[0] != x.count[1])
            .map(|(g, x)| DiffGroup {
                stack: groups.lines(g),
                bytes_a: x.bytes[0],
                bytes_b: x.bytes[1],
                count_a: x.count[0],
                count_b: x.count[1],
                site: sites
                    .get_mut(g)
                    .and_then(Option::take)
                    .unwrap_or_else(Site::none),
            })
            .collect();
        let delta = |g: &DiffGroup| i128::from(g.bytes_b) - i128::from(g.bytes_a);
        out.sort_by(|x, y| delta(y).cmp(&delta(x)).then_with(|| x.stack.cmp(&y.stack)));
        Diff {
            groups: out,
            segments_only_a: only_in(&ka, &kb),
            segments_only_b: only_in(&kb, &ka),
        }
    }
}

/// Live bytes by stack in the final state, as folded stacks for a (diff) flamegraph: the
/// `active_allocated` blocks of one device (or all, `None`) counted as in [`diff`]
/// (`requested_size`), their stacks printed by [`crate::flame::stack_frames`] (root first,
/// the frames of `frames`, classified under `user`). Sorted by stack, zero values left out.
pub fn live_folded(
    snap: &Snapshot,
    device: Option<i64>,
    frames: crate::flame::FrameMode,
    user: &crate::site::UserCode,
) -> Vec<crate::flame::FoldedEntry> {
    crate::flame::entries_by_frames(snap, live_by_stack(snap, device), frames, user)
}

/// Live bytes per interned stack of the final state: the `active_allocated` blocks of one
/// device (or all, `None`), `requested_size` each.
pub(crate) fn live_by_stack(snap: &Snapshot, device: Option<i64>) -> FxHashMap<StackId, u64> {
    let mut by_stack: FxHashMap<StackId, u64> = FxHashMap::default();
    for seg in snap
        .segments
        .iter()
        .filter(|s| device.is_none_or(|d| s.device == d))
    {
        for blk in snap.segment_blocks(seg) {
            if blk.state == BlockState::ActiveAllocated {
                let slot = by_stack.entry(blk.stack).or_insert(0);
                *slot = slot.saturating_add(blk.requested_size);
            }
        }
    }
    by_stack
}

/// The differential folded text of two profiles (the `difffolded.pl` format that
/// `flamegraph.pl` draws as a diff): one line per stack of either side,
/// `frame;frame;… a b`, frames escaped as in [`crate::flame::folded_text`], sorted.
pub fn diff_folded_text(
    a: &[crate::flame::FoldedEntry],
    b: &[crate::flame::FoldedEntry],
) -> String {
    let mut lines: std::collections::BTreeMap<String, [u64; 2]> = Default::default();
    for (i, side) in [a, b].into_iter().enumerate() {
        for (frames, v) in side {
            let slot = lines
                .entry(crate::flame::folded_key(frames))
                .or_insert([0, 0]);
            slot[i] = slot[i].saturating_add(*v);
        }
    }
    let mut out = String::new();
    for (k, [x, y]) in lines {
        out.push_str(&format!("{k} {x} {y}\n"));
    }
    out
}
