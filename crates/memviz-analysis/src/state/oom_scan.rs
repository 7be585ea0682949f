//! [`OomScan`]: every `oom` event of a device explained in one backward pass, with the numbers
//! of [`super::explain_oom`] kept up to date as events are undone.
//!
//! # Why
//! Explaining each `oom` event from its own state (rebuild the final state, undo back to the
//! event, scan every segment's free ranges) costs the state's size per event: a 560 KB file of
//! 100 k `oom` events over 1,000 blocks took 7 s and 1.6 GB, and the cost grows with events ×
//! state. Here the state is undone once, from the end back to the first event, and what a
//! report needs is maintained as it changes:
//! * *Free bytes and the largest free block.* Blocks are keyed by address in a fixed table of
//!   every address a block can have (the final blocks' and the trace's block events'), and a
//!   segment tree over it holds, for every live block, the gap between it and the live block
//!   before it. With live blocks that do not overlap (always, for a real allocator), a
//!   segment's free ranges are the gap before its first block, the gaps of its other blocks and
//!   the gap after its last one: O(log n) per segment. Each segment's free bytes and largest
//!   free range are cached; a change of a block or segment marks only the segment containing it
//!   stale, and the totals (free bytes in all; the largest free range per stream and pool) are
//!   updated when a report needs them.
//! * *The biggest live blocks.* A set ordered by (size descending, address).
//! * Consecutive reports over an unchanged state share their numbers.
//!
//! Reports come out in event order: the pass runs backwards and keeps 32 bytes per `oom` event,
//! and each report's text is made when it is taken.
//!
//! Overlapping blocks or segments (a hostile file; never a real allocator) make the cached gaps
//! meaningless: the segments concerned are then scanned block by block as
//! [`super::State::free_ranges`] does, which is exact but costs their blocks per report. That
//! work is bounded by [`WORK_LIMIT`]; past it the scan stops with an error that says why.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use memviz_snapshot::{Action, Snapshot, StackId};
use rustc_hash::{FxHashMap, FxHashSet};

use super::history::{absorbed, event_at, prev_row};
use super::map::{undo, Store};
use super::oom::{verdict, Numbers, OomReport, BIGGEST};
use super::{Blk, Seg, State};
use crate::devices::SegmentsOf;

/// Most block and segment visits the exact fallback (overlapping blocks or segments) may make
/// before the scan gives up (about a second of work).
pub const WORK_LIMIT: u64 = 1 << 27;

/// Why [`OomScan`] could not explain a device's `oom` events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OomScanError {
    /// The memory for part of the scan (`what`: block addresses, reports, the block index)
    /// could not be reserved.
    #[error("device {device}: not enough memory for the {what} of its {ooms} oom events")]
    NoMemory {
        device: i64,
        what: &'static str,
        ooms: usize,
    },
    /// Blocks or segments overlap, and explaining the states exactly passes [`WORK_LIMIT`].
    #[error(
        "device {device}: explaining its {ooms} oom events would take more than \
         {WORK_LIMIT} steps: its blocks or segments overlap (a real allocator's \
         never do), so each state is scanned in full"
    )]
    TooMuchWork { device: i64, ooms: usize },
}

/// Aggregate of a run of block gaps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Node {
    /// Σ gaps (saturating; within one segment it never saturates: the gaps fit in it).
    sum: u64,
    max: u64,
    /// Blocks overlapping the live block before them.
    bad: u32,
}

fn join(a: Node, b: Node) -> Node {
    Node {
        sum: a.sum.saturating_add(b.sum),
        max: a.max.max(b.max),
        bad: a.bad.saturating_add(b.bad),
    }
}

/// A bottom-up segment tree of [`Node`]s over the block address table.
struct GapTree {
    n: usize,
    t: Vec<Node>,
}

impl GapTree {
    /// `None` when its memory cannot be had.
    fn new(n: usize) -> Option<Self> {
        let mut t = Vec::new();
        t.try_reserve_exact(n.checked_mul(2)?).ok()?;
        t.resize(2 * n, Node::default());
        Some(GapTree { n, t })
    }

    /// Fills the internal nodes from the leaves.
    fn rebuild(&mut self) {
        for p in (1..self.n).rev() {
            let (l, r) = (self.node(2 * p), self.node(2 * p + 1));
            if let Some(x) = self.t.get_mut(p) {
                *x = join(l, r);
            }
        }
    }

    fn node(&self, p: usize) -> Node {
        self.t.get(p).copied().unwrap_or_default()
    }

    fn set_leaf(&mut self, i: usize, v: Node) {
        if let Some(x) = self.t.get_mut(i + self.n) {
            *x = v;
        }
    }

    fn set(&mut self, i: usize, v: Node) {
        let mut p = i + self.n;
        if p >= self.t.len() {
            return;
        }
        self.set_leaf(i, v);
        while p > 1 {
            p /= 2;
            let j = join(self.node(2 * p), self.node(2 * p + 1));
            if let Some(x) = self.t.get_mut(p) {
                *x = j;
            }
        }
    }

    /// The aggregate of leaves `[l, r)`.
    fn query(&self, l: usize, r: usize) -> Node {
        let (mut l, mut r) = (l + self.n, r.min(self.n) + self.n);
        let mut acc = Node::default();
        while l < r {
            if l & 1 == 1 {
                acc = join(acc, self.node(l));
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                acc = join(acc, self.node(r));
            }
            l /= 2;
            r /= 2;
        }
        acc
    }
}

/// A segment's free bytes and largest free range, and the (stream, pool) it belongs to.
#[derive(Clone, Copy, Debug)]
struct SegStats {
    free: u64,
    max: u64,
    key: (u64, (i64, i64)),
}

/// The state during the backward pass, with the report numbers kept up to date.
struct Live {
    segs: BTreeMap<u64, Seg>,
    blocks: BTreeMap<u64, Blk>,
    reserved: u64,
    allocated: u64,
    inconsistencies: u32,
    /// Every address a block can have, sorted.
    addrs: Vec<u64>,
    gaps: GapTree,
    /// A block at an address missing from `addrs` (impossible; then every segment is scanned).
    untracked: bool,
    by_size: BTreeSet<(Reverse<u64>, u64)>,
    /// Neighbouring segments that overlap (then a block change may concern any segment).
    seg_overlaps: usize,
    /// Segments whose cached numbers are stale (not in the totals), or all of them.
    dirty: FxHashSet<u64>,
    all_dirty: bool,
    cache: FxHashMap<u64, SegStats>,
    /// Σ cached free bytes.
    free: u128,
    /// Per (stream, pool): the cached segments' largest free ranges, as a multiset.
    largest: FxHashMap<(u64, (i64, i64)), BTreeMap<u64, u32>>,
    /// Something changed since the last report / since the last biggest-blocks list.
    changed: bool,
    blocks_changed: bool,
    /// Block and segment visits of the exact fallback.
    work: u64,
}

fn overlaps(a: u64, seg: &Seg, next: u64) -> bool {
    a.saturating_add(seg.size) > next
}

impl Live {
    /// `None` when the gap tree's memory cannot be had.
    fn new(base: &State, addrs: Vec<u64>) -> Option<Live> {
        let n = addrs.len();
        let gaps = GapTree::new(n)?;
        let mut live = Live {
            segs: base.segments.iter().map(|(&a, &s)| (a, s)).collect(),
            blocks: base.blocks.iter().map(|(&a, &b)| (a, b)).collect(),
            reserved: base.reserved_bytes,
            allocated: base.allocated_bytes,
            inconsistencies: base.inconsistencies,
            addrs,
            gaps,
            untracked: false,
            by_size: base
                .blocks
                .iter()
                .map(|(&a, b)| (Reverse(b.size), a))
                .collect(),
            seg_overlaps: 0,
            dirty: FxHashSet::default(),
            all_dirty: true,
            cache: FxHashMap::default(),
            free: 0,
            largest: FxHashMap::default(),
            changed: true,
            blocks_changed: true,
            work: 0,
        };
        let mut prev_end: Option<u64> = None;
        for (&a, b) in &live.blocks {
            match live.addrs.binary_search(&a) {
                Ok(i) => {
                    let v = gap_node(a, prev_end);
                    live.gaps.set_leaf(i, v);
                }
                Err(_) => live.untracked = true,
            }
            prev_end = Some(a.saturating_add(b.size));
        }
        live.gaps.rebuild();
        let mut prev: Option<(u64, Seg)> = None;
        for (&a, s) in &live.segs {
            if let Some((p, ps)) = prev {
                live.seg_overlaps += usize::from(overlaps(p, &ps, a));
            }
            prev = Some((a, *s));
        }
        Some(live)
    }

    /// The gap entry of the live block at `a` (from the live block before it).
    fn refresh_gap(&mut self, a: u64) {
        let Ok(i) = self.addrs.binary_search(&a) else {
            if self.blocks.contains_key(&a) {
                self.untracked = true;
            }
            return;
        };
        let v = if self.blocks.contains_key(&a) {
            let prev_end = self
                .blocks
                .range(..a)
                .next_back()
                .map(|(&p, b)| p.saturating_add(b.size));
            gap_node(a, prev_end)
        } else {
            Node::default()
        };
        self.gaps.set(i, v);
    }

    /// Takes segment `a`'s cached numbers out of the totals and marks it stale.
    fn invalidate(&mut self, a: u64) {
        if let Some(st) = self.cache.remove(&a) {
            self.free = self.free.saturating_sub(u128::from(st.free));
            if let Some(m) = self.largest.get_mut(&st.key) {
                if let Some(c) = m.get_mut(&st.max) {
                    *c = c.saturating_sub(1);
                    if *c == 0 {
                        m.remove(&st.max);
                    }
                }
            }
        }
        self.dirty.insert(a);
    }

    /// After a change of the live block at `a`: its gap, the next block's, and the segment
    /// holding it.
    fn block_changed(&mut self, a: u64) {
        self.changed = true;
        self.blocks_changed = true;
        self.refresh_gap(a);
        if let Some(next) = self
            .blocks
            .range(a.saturating_add(1)..)
            .next()
            .map(|e| *e.0)
        {
            if next > a {
                self.refresh_gap(next);
            }
        }
        if self.seg_overlaps > 0 {
            self.all_dirty = true;
        } else if let Some((&s, seg)) = self.segs.range(..=a).next_back() {
            if a < s.saturating_add(seg.size) {
                self.invalidate(s);
            }
        }
    }

    /// The overlap count of the neighbours around segment address `a`, as pairs (before, after).
    fn neighbour_overlaps(&self, a: u64) -> usize {
        let prev = self.segs.range(..a).next_back();
        let next = self.segs.range(a.saturating_add(1)..).next();
        let here = self.segs.get(&a);
        match here {
            Some(h) => {
                prev.map_or(0, |(&p, ps)| usize::from(overlaps(p, ps, a)))
                    + next.map_or(0, |(&n, _)| usize::from(overlaps(a, h, n)))
            }
            None => match (prev, next) {
                (Some((&p, ps)), Some((&n, _))) => usize::from(overlaps(p, ps, n)),
                _ => 0,
            },
        }
    }

    /// Replaces the segment entry at `a` (`None`: removes it), keeping the overlap count and the
    /// cache right.
    fn set_segment(&mut self, a: u64, v: Option<Seg>) {
        self.changed = true;
        let before = self.neighbour_overlaps(a);
        self.invalidate(a);
        match v {
            Some(s) => {
                self.segs.insert(a, s);
            }
            None => {
                self.segs.remove(&a);
                self.dirty.remove(&a);
            }
        }
        let after = self.neighbour_overlaps(a);
        self.seg_overlaps = (self.seg_overlaps + after).saturating_sub(before);
    }

    fn set_block(&mut self, a: u64, v: Option<Blk>) {
        if let Some(old) = self.blocks.get(&a) {
            self.by_size.remove(&(Reverse(old.size), a));
        }
        match v {
            Some(b) => {
                self.by_size.insert((Reverse(b.size), a));
                self.blocks.insert(a, b);
            }
            None => {
                self.blocks.remove(&a);
            }
        }
        self.block_changed(a);
    }

    /// Segment `a`'s numbers: from the gap tree when its blocks do not overlap, else by a scan.
    fn segment_stats(&mut self, a: u64, seg: &Seg) -> SegStats {
        let key = (seg.stream, seg.pool);
        let end = a.saturating_add(seg.size);
        let first = self.blocks.range(a..end).next().map(|(&x, b)| (x, *b));
        let last = self.blocks.range(a..end).next_back().map(|(&x, b)| (x, *b));
        let (Some((fa, _)), Some((la, lb))) = (first, last) else {
            let free = end - a;
            return SegStats {
                free,
                max: free,
                key,
            };
        };
        let pos = |x: u64| self.addrs.binary_search(&x).ok();
        if !self.untracked {
            if let (Some(pf), Some(pl)) = (pos(fa), pos(la)) {
                let inner = self.gaps.query(pf + 1, pl + 1);
                if inner.bad == 0 {
                    let head = fa - a;
                    let tail = end.saturating_sub(la.saturating_add(lb.size));
                    return SegStats {
                        free: head.saturating_add(inner.sum).saturating_add(tail),
                        max: head.max(inner.max).max(tail),
                        key,
                    };
                }
            }
        }
        // Overlapping blocks: [`State::free_ranges`]'s walk, exactly.
        let (mut free, mut max) = (0u64, 0u64);
        let mut at = a;
        for (&x, b) in self.blocks.range(a..end) {
            self.work += 1;
            if x > at {
                free = free.saturating_add(x - at);
                max = max.max(x - at);
            }
            at = at.max(x.saturating_add(b.size));
        }
        if end > at {
            free = free.saturating_add(end - at);
            max = max.max(end - at);
        }
        SegStats { free, max, key }
    }

    /// Brings every stale segment's numbers into the totals.
    fn settle(&mut self) {
        if self.all_dirty {
            self.all_dirty = false;
            self.cache.clear();
            self.largest.clear();
            self.free = 0;
            self.dirty = self.segs.keys().copied().collect();
            self.work += self.segs.len() as u64;
        }
        let stale: Vec<u64> = self.dirty.drain().collect();
        for a in stale {
            let Some(seg) = self.segs.get(&a).copied() else {
                continue;
            };
            let st = self.segment_stats(a, &seg);
            self.free = self.free.saturating_add(u128::from(st.free));
            *self
                .largest
                .entry(st.key)
                .or_default()
                .entry(st.max)
                .or_insert(0) += 1;
            self.cache.insert(a, st);
        }
    }

    fn largest_of(&self, key: (u64, (i64, i64))) -> u64 {
        self.largest
            .get(&key)
            .and_then(|m| m.keys().next_back().copied())
            .unwrap_or(0)
    }
}

/// The gap entry of a live block at `a` after a live block ending at `prev_end`.
fn gap_node(a: u64, prev_end: Option<u64>) -> Node {
    match prev_end {
        Some(e) if e > a => Node {
            sum: 0,
            max: 0,
            bad: 1,
        },
        Some(e) => Node {
            sum: a - e,
            max: a - e,
            bad: 0,
        },
        None => Node::default(),
    }
}

impl Store for Live {
    fn seg(&self, addr: u64) -> Option<Seg> {
        self.segs.get(&addr).copied()
    }
    fn seg_at_or_before(&self, addr: u64) -> Option<(u64, Seg)> {
        self.segs.range(..=addr).next_back().map(|(&a, &s)| (a, s))
    }
    fn put_seg(&mut self, addr: u64, seg: Seg) {
        if let Some(old) = self.seg(addr) {
            self.reserved = self.reserved.saturating_sub(old.size);
        }
        self.reserved = self.reserved.saturating_add(seg.size);
        self.set_segment(addr, Some(seg));
    }
    fn take_seg(&mut self, addr: u64) -> Option<Seg> {
        let old = self.seg(addr)?;
        self.reserved = self.reserved.saturating_sub(old.size);
        self.set_segment(addr, None);
        Some(old)
    }
    fn blk(&self, addr: u64) -> Option<Blk> {
        self.blocks.get(&addr).copied()
    }
    fn put_blk(&mut self, addr: u64, blk: Blk) {
        if let Some(old) = self.blk(addr) {
            self.allocated = self.allocated.saturating_sub(old.requested);
        }
        self.allocated = self.allocated.saturating_add(blk.requested);
        self.set_block(addr, Some(blk));
    }
    fn take_blk(&mut self, addr: u64) -> Option<Blk> {
        let old = self.blk(addr)?;
        self.allocated = self.allocated.saturating_sub(old.requested);
        self.set_block(addr, None);
        Some(old)
    }
    fn inconsistent(&mut self) {
        self.inconsistencies = self.inconsistencies.saturating_add(1);
    }
}

/// The numbers of one `oom` event.
#[derive(Clone, Copy, Debug)]
struct Record {
    /// Index in the merged event list.
    k: usize,
    /// Trace row.
    row: u32,
    /// Index into [`OomScan::stats`].
    stats: u32,
    largest: u64,
}

/// Numbers shared by the reports of one state.
#[derive(Clone, Copy, Debug)]
struct Stats {
    reserved: u64,
    allocated: u64,
    reserved_free: u64,
    /// Index into [`OomScan::biggest`].
    biggest: u32,
}

/// Every `oom` event of a device, explained ([`OomReport`]), in event order. Built by one
/// backward pass over the trace (the module documentation); iterate it for the reports.
pub struct OomScan<'s> {
    snap: &'s Snapshot,
    device: i64,
    records: Vec<Record>,
    stats: Vec<Stats>,
    biggest: Vec<Vec<(u64, u64, StackId)>>,
}

impl<'s> OomScan<'s> {
    /// The `oom` events of `device`. `Err` only for a state with overlapping blocks or segments
    /// whose exact explanation passes [`WORK_LIMIT`], or when the memory for the scan is not there.
    pub fn new(snap: &'s Snapshot, device: i64) -> Result<Self, OomScanError> {
        Self::new_in(snap, device, SegmentsOf::Scan(device))
    }

    /// [`OomScan::new`] with the device's final segments given (every device in turn).
    pub fn new_in(
        snap: &'s Snapshot,
        device: i64,
        segments: SegmentsOf<'_>,
    ) -> Result<Self, OomScanError> {
        let mut allocs = super::AllocRows::new();
        let mut scan = OomScan {
            snap,
            device,
            records: Vec::new(),
            stats: Vec::new(),
            biggest: Vec::new(),
        };
        let Some(tr) = snap.trace(device) else {
            return Ok(scan);
        };
        // Merged events, `oom` events, and every address a block can have.
        let mut events = 0usize;
        let mut ooms = 0usize;
        let mut last_row = None;
        let mut addrs: Vec<u64> = Vec::new();
        for (r, action) in tr.actions().enumerate() {
            if absorbed(tr, r) {
                continue;
            }
            events += 1;
            last_row = Some(r);
            match action {
                Action::Oom => ooms += 1,
                Action::Alloc | Action::FreeRequested | Action::FreeCompleted => {
                    addrs.push(tr.addr(r).unwrap_or(0));
                }
                _ => {}
            }
        }
        let (Some(mut r), true) = (last_row, ooms > 0) else {
            return Ok(scan);
        };
        let base = State::from_snapshot_in(snap, segments);
        let no_memory = |what: &'static str| OomScanError::NoMemory { device, what, ooms };
        addrs
            .try_reserve_exact(base.blocks.len())
            .map_err(|_| no_memory("block addresses"))?;
        addrs.extend(base.blocks.keys().copied());
        addrs.sort_unstable();
        addrs.dedup();
        addrs.shrink_to_fit();
        // The gap tree takes 48 bytes per address, the reports 32 per oom event: reserved
        // fallibly, so a state too large for the memory left is an error, not an abort.
        scan.records
            .try_reserve_exact(ooms)
            .map_err(|_| no_memory("reports"))?;
        let mut live = Live::new(&base, addrs).ok_or_else(|| no_memory("block index"))?;
        drop(base);
        for k in (0..events).rev() {
            let e = event_at(tr, r);
            if tr.action(r) == Some(Action::Oom) {
                if live.changed || scan.stats.is_empty() {
                    live.settle();
                    if live.work > WORK_LIMIT {
                        return Err(OomScanError::TooMuchWork { device, ooms });
                    }
                    if live.blocks_changed || scan.biggest.is_empty() {
                        let top: Vec<(u64, u64, StackId)> = live
                            .by_size
                            .iter()
                            .take(BIGGEST)
                            .map(|&(Reverse(size), a)| {
                                let stack = live
                                    .blocks
                                    .get(&a)
                                    .map_or(StackId::EMPTY, |b| allocs.stack(snap, device, b));
                                (a, size, stack)
                            })
                            .collect();
                        if scan.biggest.last() != Some(&top) {
                            scan.biggest.push(top);
                        }
                        live.blocks_changed = false;
                    }
                    let reserved_free = u64::try_from(live.free).unwrap_or(u64::MAX);
                    scan.stats.push(Stats {
                        reserved: live.reserved,
                        allocated: live.allocated,
                        reserved_free,
                        biggest: scan.biggest.len().saturating_sub(1) as u32,
                    });
                    live.changed = false;
                }
                scan.records.push(Record {
                    k,
                    row: r as u32,
                    stats: scan.stats.len().saturating_sub(1) as u32,
                    largest: live.largest_of((e.stream, e.pool)),
                });
            }
            undo(&mut live, &e);
            if k > 0 {
                r = prev_row(tr, r);
            }
        }
        scan.records.reverse();
        Ok(scan)
    }

    /// Number of reports.
    #[must_use]
    pub fn len(&self) -> usize {
        self.records.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Report `i` (in event order).
    #[must_use]
    pub fn report(&self, i: usize) -> Option<OomReport> {
        let rec = self.records.get(i)?;
        let st = self.stats.get(rec.stats as usize)?;
        let tr = self.snap.trace(self.device)?;
        let e = event_at(tr, rec.row as usize);
        let device_free = tr.device_free_of(rec.row);
        let (kind, verdict) = verdict(Numbers {
            requested: e.size,
            device_free,
            reserved_free: st.reserved_free,
            largest: rec.largest,
            allocated: st.allocated,
        });
        let biggest = self
            .biggest
            .get(st.biggest as usize)
            .map_or(&[][..], Vec::as_slice);
        Some(OomReport {
            event: rec.k,
            requested_bytes: e.size,
            device_free_bytes: device_free,
            reserved_bytes: st.reserved,
            allocated_bytes: st.allocated,
            reserved_free_bytes: st.reserved_free,
            largest_free_block_bytes: rec.largest,
            stream: e.stream,
            pool: e.pool,
            kind,
            verdict,
            biggest_live: biggest.iter().map(|&(a, size, _)| (a, size)).collect(),
            biggest_live_stacks: biggest.iter().map(|&(_, _, stack)| stack).collect(),
        })
    }
}

impl<'s> IntoIterator for OomScan<'s> {
    type Item = OomReport;
    type IntoIter = Reports<'s>;
    fn into_iter(self) -> Reports<'s> {
        Reports {
            scan: self,
            next: 0,
        }
    }
}

/// The reports of an [`OomScan`], in event order, each made as it is taken.
pub struct Reports<'s> {
    scan: OomScan<'s>,
    next: usize,
}

impl Iterator for Reports<'_> {
    type Item = OomReport;
    fn next(&mut self) -> Option<OomReport> {
        let r = self.scan.report(self.next)?;
        self.next += 1;
        Some(r)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.scan.len().saturating_sub(self.next);
        (n, Some(n))
    }
}
