//! [`AddrMap`] (a map by address kept as one sorted `Vec`), [`State`] built from it, and the
//! undo rules of §6.2–6.3 written once over [`Store`] so that they run on a [`State`] and on the
//! history's overlay alike.
//!
//! A `BTreeMap<u64, Blk>` holds its 32-byte entries in nodes of 11 that are about 60 % full:
//! the final state of a 150 MB tiled real file (115 k segments, 151 k blocks) took 20.3 MB as
//! two B-trees and takes 10.3 MB as two sorted vectors. A [`State`] is read (packed into a map,
//! hovered) far more than it is changed; the few changes an undo pass makes go to an overlay
//! (`history::Work`) and are merged in once.

use std::ops::{Bound, RangeBounds};

use super::{Blk, Event, Kind, Seg, Src};
use crate::devices::SegmentsOf;
use memviz_snapshot::{BlockState as FileBlockState, Snapshot};

/// A map from address to `V`: entries sorted by address in one `Vec`. Lookups and ranges are
/// binary searches; [`AddrMap::insert`] and [`AddrMap::remove`] move the tail (O(n)), which is
/// fine for tests and small states (bulk changes go through the history's overlay).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddrMap<V> {
    entries: Vec<(u64, V)>,
}

impl<V> Default for AddrMap<V> {
    fn default() -> Self {
        AddrMap {
            entries: Vec::new(),
        }
    }
}

/// Iterator over `(&address, &value)` in address order.
pub type Iter<'a, V> =
    std::iter::Map<std::slice::Iter<'a, (u64, V)>, fn(&'a (u64, V)) -> (&'a u64, &'a V)>;

fn pair<V>(e: &(u64, V)) -> (&u64, &V) {
    (&e.0, &e.1)
}

impl<V> AddrMap<V> {
    /// From entries sorted by address with no duplicate (the caller's promise; checked by
    /// `debug_assert`).
    pub(crate) fn from_sorted(entries: Vec<(u64, V)>) -> Self {
        debug_assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
        AddrMap { entries }
    }

    fn find(&self, addr: u64) -> Result<usize, usize> {
        self.entries.binary_search_by_key(&addr, |e| e.0)
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    #[must_use]
    pub fn get(&self, addr: &u64) -> Option<&V> {
        let i = self.find(*addr).ok()?;
        self.entries.get(i).map(|e| &e.1)
    }

    pub fn get_mut(&mut self, addr: &u64) -> Option<&mut V> {
        let i = self.find(*addr).ok()?;
        self.entries.get_mut(i).map(|e| &mut e.1)
    }

    #[must_use]
    pub fn contains_key(&self, addr: &u64) -> bool {
        self.find(*addr).is_ok()
    }

    /// Inserts or replaces; the old value.
    pub fn insert(&mut self, addr: u64, v: V) -> Option<V> {
        match self.find(addr) {
            Ok(i) => self
                .entries
                .get_mut(i)
                .map(|e| std::mem::replace(&mut e.1, v)),
            Err(i) => {
                self.entries.insert(i.min(self.entries.len()), (addr, v));
                None
            }
        }
    }

    pub fn remove(&mut self, addr: &u64) -> Option<V> {
        let i = self.find(*addr).ok()?;
        (i < self.entries.len()).then(|| self.entries.remove(i).1)
    }

    pub fn iter(&self) -> Iter<'_, V> {
        self.entries.iter().map(pair as fn(&(u64, V)) -> (&u64, &V))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &u64> + ExactSizeIterator + '_ {
        self.entries.iter().map(|e| &e.0)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator + '_ {
        self.entries.iter().map(|e| &e.1)
    }

    /// The entries whose address is in `range` (empty when the range is inverted, where a
    /// `BTreeMap` would panic).
    pub fn range(&self, range: impl RangeBounds<u64>) -> Iter<'_, V> {
        let lo = match range.start_bound() {
            Bound::Included(&a) => self.entries.partition_point(|e| e.0 < a),
            Bound::Excluded(&a) => self.entries.partition_point(|e| e.0 <= a),
            Bound::Unbounded => 0,
        };
        let hi = match range.end_bound() {
            Bound::Included(&a) => self.entries.partition_point(|e| e.0 <= a),
            Bound::Excluded(&a) => self.entries.partition_point(|e| e.0 < a),
            Bound::Unbounded => self.entries.len(),
        };
        self.entries
            .get(lo..hi.max(lo))
            .unwrap_or(&[])
            .iter()
            .map(pair as fn(&(u64, V)) -> (&u64, &V))
    }

    /// The entry with the largest address `≤ addr`.
    #[must_use]
    pub fn at_or_before(&self, addr: u64) -> Option<(u64, &V)> {
        let i = self
            .entries
            .partition_point(|e| e.0 <= addr)
            .checked_sub(1)?;
        self.entries.get(i).map(|e| (e.0, &e.1))
    }

    /// Heap bytes of the entries.
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<(u64, V)>()
    }

    pub(crate) fn as_slice(&self) -> &[(u64, V)] {
        &self.entries
    }
}

impl<'a, V> IntoIterator for &'a AddrMap<V> {
    type Item = (&'a u64, &'a V);
    type IntoIter = Iter<'a, V>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Segments and live blocks by address, with the header's totals kept up to date.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct State {
    pub segments: AddrMap<Seg>,
    pub blocks: AddrMap<Blk>,
    /// Σ segment sizes.
    pub reserved_bytes: u64,
    /// Σ block `requested` (pending blocks included), as memory_viz's header.
    pub allocated_bytes: u64,
    /// Undo steps that found nothing to undo (the reference throws on some of them).
    pub inconsistencies: u32,
}

/// Sorted, deduplicated map from entries in insertion order (a later entry at the same
/// address replaces the earlier one), and the total `weight` would have after inserting them
/// one by one with [`State::insert_segment`]'s saturating bookkeeping.
fn sorted_with_total<V: Copy>(
    mut items: Vec<(u64, V)>,
    weight: impl Fn(&V) -> u64,
) -> (AddrMap<V>, u64) {
    let mut addrs: Vec<u64> = items.iter().map(|e| e.0).collect();
    addrs.sort_unstable();
    let dup = addrs.windows(2).any(|w| w.first() == w.get(1));
    drop(addrs);
    let total = if dup {
        // Rare (a file listing an address twice): replay the insertions exactly.
        let mut m: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
        let mut t = 0u64;
        for (a, v) in &items {
            if let Some(old) = m.insert(*a, weight(v)) {
                t = t.saturating_sub(old);
            }
            t = t.saturating_add(weight(v));
        }
        t
    } else {
        // Saturating additions alone give the same total in any order.
        items
            .iter()
            .fold(0u64, |t, (_, v)| t.saturating_add(weight(v)))
    };
    // Stable: of equal addresses the last inserted is last, and it is the one kept.
    items.sort_by_key(|e| e.0);
    items.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            *kept = *later;
        }
        same
    });
    items.shrink_to_fit();
    (AddrMap::from_sorted(items), total)
}

impl State {
    /// The final snapshot's state of `device` (§6.1).
    #[must_use]
    pub fn from_snapshot(snap: &Snapshot, device: i64) -> State {
        Self::from_snapshot_in(snap, SegmentsOf::Scan(device))
    }

    /// [`State::from_snapshot`] of the device whose final segments are `segments` (every device
    /// in turn: from one [`crate::devices::DeviceSegments`]).
    #[must_use]
    pub fn from_snapshot_in(snap: &Snapshot, segments: SegmentsOf<'_>) -> State {
        let mut segs: Vec<(u64, Seg)> = Vec::new();
        let mut blocks: Vec<(u64, Blk)> = Vec::new();
        for (si, seg) in segments.iter(snap) {
            segs.push((
                seg.address,
                Seg {
                    size: seg.total_size,
                    stream: seg.stream,
                    pool: seg.pool_id,
                    src: Src::final_index(si),
                },
            ));
            let first = seg.blocks.0 as usize;
            for (j, b) in snap.segment_blocks(seg).iter().enumerate() {
                let pending = match b.state {
                    FileBlockState::ActiveAllocated => false,
                    FileBlockState::ActivePendingFree => true,
                    _ => continue,
                };
                blocks.push((
                    b.address,
                    Blk {
                        size: b.size,
                        requested: b.requested_size,
                        pending,
                        src: Src::final_index(first.saturating_add(j)),
                    },
                ));
            }
        }
        let (segments, reserved_bytes) = sorted_with_total(segs, |s| s.size);
        let (blocks, allocated_bytes) = sorted_with_total(blocks, |b| b.requested);
        State {
            segments,
            blocks,
            reserved_bytes,
            allocated_bytes,
            inconsistencies: 0,
        }
    }

    /// Inserts (or replaces) the segment at `addr`, keeping `reserved_bytes` right.
    pub fn insert_segment(&mut self, addr: u64, seg: Seg) {
        if let Some(old) = self.segments.insert(addr, seg) {
            self.reserved_bytes = self.reserved_bytes.saturating_sub(old.size);
        }
        self.reserved_bytes = self.reserved_bytes.saturating_add(seg.size);
    }

    /// Removes the segment at `addr`, keeping `reserved_bytes` right.
    pub fn remove_segment(&mut self, addr: u64) -> Option<Seg> {
        let old = self.segments.remove(&addr)?;
        self.reserved_bytes = self.reserved_bytes.saturating_sub(old.size);
        Some(old)
    }

    /// Inserts (or replaces) the block at `addr`, keeping `allocated_bytes` right.
    pub fn insert_block(&mut self, addr: u64, blk: Blk) {
        if let Some(old) = self.blocks.insert(addr, blk) {
            self.allocated_bytes = self.allocated_bytes.saturating_sub(old.requested);
        }
        self.allocated_bytes = self.allocated_bytes.saturating_add(blk.requested);
    }

    /// Removes the block at `addr`, keeping `allocated_bytes` right.
    pub fn remove_block(&mut self, addr: u64) -> Option<Blk> {
        let old = self.blocks.remove(&addr)?;
        self.allocated_bytes = self.allocated_bytes.saturating_sub(old.requested);
        Some(old)
    }

    /// Undoes `e` (§6.2): the state before `e` from the state after it.
    pub fn undo(&mut self, e: &Event) {
        undo(self, e);
    }

    /// Heap bytes of the entries.
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.segments.heap_bytes() + self.blocks.heap_bytes()
    }

    /// The free byte ranges `(address, length)` of the segment at `seg_addr`: the segment minus
    /// its live blocks.
    #[must_use]
    pub fn free_ranges(&self, seg_addr: u64) -> Vec<(u64, u64)> {
        let Some(seg) = self.segments.get(&seg_addr) else {
            return Vec::new();
        };
        let end = seg_addr.saturating_add(seg.size);
        let mut out = Vec::new();
        let mut at = seg_addr;
        for (&a, b) in self.blocks.range(seg_addr..end) {
            if a > at {
                out.push((at, a - at));
            }
            at = at.max(a.saturating_add(b.size));
        }
        if end > at {
            out.push((at, end - at));
        }
        out
    }
}

/// What the undo rules read and change: a [`State`], or the history's overlay on one.
pub(crate) trait Store {
    fn seg(&self, addr: u64) -> Option<Seg>;
    /// The segment with the largest address `≤ addr`.
    fn seg_at_or_before(&self, addr: u64) -> Option<(u64, Seg)>;
    /// Inserts or replaces, keeping `reserved_bytes` right.
    fn put_seg(&mut self, addr: u64, seg: Seg);
    fn take_seg(&mut self, addr: u64) -> Option<Seg>;
    fn blk(&self, addr: u64) -> Option<Blk>;
    /// Inserts or replaces, keeping `allocated_bytes` right.
    fn put_blk(&mut self, addr: u64, blk: Blk);
    fn take_blk(&mut self, addr: u64) -> Option<Blk>;
    fn inconsistent(&mut self);
}

impl Store for State {
    fn seg(&self, addr: u64) -> Option<Seg> {
        self.segments.get(&addr).copied()
    }
    fn seg_at_or_before(&self, addr: u64) -> Option<(u64, Seg)> {
        self.segments.at_or_before(addr).map(|(a, s)| (a, *s))
    }
    fn put_seg(&mut self, addr: u64, seg: Seg) {
        self.insert_segment(addr, seg);
    }
    fn take_seg(&mut self, addr: u64) -> Option<Seg> {
        self.remove_segment(addr)
    }
    fn blk(&self, addr: u64) -> Option<Blk> {
        self.blocks.get(&addr).copied()
    }
    fn put_blk(&mut self, addr: u64, blk: Blk) {
        self.insert_block(addr, blk);
    }
    fn take_blk(&mut self, addr: u64) -> Option<Blk> {
        self.remove_block(addr)
    }
    fn inconsistent(&mut self) {
        self.inconsistencies = self.inconsistencies.saturating_add(1);
    }
}

/// Undoes `e` (§6.2) on `s`: the state before `e` from the state after it.
pub(crate) fn undo(s: &mut impl Store, e: &Event) {
    let restored = Blk {
        size: e.size,
        requested: e.size,
        pending: false,
        src: Src::row(e.row),
    };
    let ok = match e.kind {
        Kind::Free => {
            s.put_blk(e.addr, restored);
            true
        }
        Kind::FreeCompleted => {
            s.put_blk(
                e.addr,
                Blk {
                    pending: true,
                    ..restored
                },
            );
            true
        }
        Kind::FreeRequested => match s.blk(e.addr) {
            Some(b) => {
                s.put_blk(
                    e.addr,
                    Blk {
                        pending: false,
                        ..b
                    },
                );
                true
            }
            None => false,
        },
        Kind::Alloc => s.take_blk(e.addr).is_some(),
        Kind::SegmentFree => {
            s.put_seg(e.addr, Seg::of_event(e));
            true
        }
        Kind::SegmentAlloc => s.take_seg(e.addr).is_some(),
        Kind::SegmentUnmap => {
            unmap_undo(s, e);
            true
        }
        Kind::SegmentMap => map_undo(s, e),
        Kind::Other => true,
    };
    if !ok {
        s.inconsistent();
    }
}

/// Undoing an unmap (§6.3): insert the range, coalesce with the next and previous segment
/// when they touch it and have the same stream.
fn unmap_undo(s: &mut impl Store, e: &Event) {
    let mut addr = e.addr;
    let mut seg = Seg::of_event(e);
    let end = addr.saturating_add(seg.size);
    if let Some(next) = s.seg(end) {
        if next.stream == seg.stream {
            s.take_seg(end);
            seg.size = seg.size.saturating_add(next.size);
        }
    }
    let prev = addr.checked_sub(1).and_then(|a| s.seg_at_or_before(a));
    if let Some((prev_addr, prev)) = prev {
        if prev_addr.saturating_add(prev.size) == addr && prev.stream == seg.stream {
            s.take_seg(prev_addr);
            seg.size = seg.size.saturating_add(prev.size);
            // The lower segment's label, stack and pool stay (memory_viz grows `prev`).
            seg.src = prev.src;
            seg.pool = prev.pool;
            addr = prev_addr;
        }
    }
    s.put_seg(addr, seg);
}

/// Undoing a map (§6.3): shrink the containing segment from the front or the back, or split
/// it. False when no segment contains the range.
fn map_undo(s: &mut impl Store, e: &Event) -> bool {
    let start = e.addr;
    let end = start.saturating_add(e.size);
    let Some((seg_addr, seg)) = s.seg_at_or_before(start) else {
        return false;
    };
    let seg_end = seg_addr.saturating_add(seg.size);
    if end > seg_end {
        return false;
    }
    s.take_seg(seg_addr);
    if seg_addr < start {
        s.put_seg(
            seg_addr,
            Seg {
                size: start - seg_addr,
                ..seg
            },
        );
    }
    if end < seg_end {
        // Shrunk from the front, the segment keeps its label at the new address; the upper
        // part of a split is memory_viz's event segment object moved up: it takes the undone
        // event's label version and stack (at its own address).
        let src = if seg_addr < start {
            Src::row(e.row)
        } else {
            seg.src
        };
        s.put_seg(
            end,
            Seg {
                size: seg_end - end,
                src,
                ..seg
            },
        );
    }
    true
}

/// Applies `e` forwards (the state after `e` from the state before it): the mirror of
/// [`State::undo`], for checking the undo path against a forward simulation. Blocks it creates
/// have `requested == size` (the trace has no requested size).
pub fn apply(state: &mut State, e: &Event) {
    match e.kind {
        Kind::Alloc => state.insert_block(
            e.addr,
            Blk {
                size: e.size,
                requested: e.size,
                pending: false,
                src: Src::row(e.row),
            },
        ),
        Kind::Free | Kind::FreeCompleted => {
            state.remove_block(e.addr);
        }
        Kind::FreeRequested => {
            if let Some(b) = state.blocks.get_mut(&e.addr) {
                b.pending = true;
            }
        }
        Kind::SegmentAlloc => state.insert_segment(e.addr, Seg::of_event(e)),
        Kind::SegmentFree => {
            state.remove_segment(e.addr);
        }
        // Forwards, a map adds the range (merged like an undone unmap) and an unmap removes it.
        Kind::SegmentMap => unmap_undo(state, e),
        Kind::SegmentUnmap => {
            map_undo(state, e);
        }
        Kind::Other => {}
    }
}
