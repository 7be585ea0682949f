//! The state of [`super::OomScan`]'s backward pass ([`Live`]), with the numbers of a report
//! (free bytes, the largest free range per stream and pool, the biggest live blocks) kept up to
//! date as events are undone.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::{FxHashMap, FxHashSet};

use super::gaps::{gap_node, GapTree, Node};
use crate::state::map::Store;
use crate::state::{Blk, Seg, State};

/// A segment's free bytes and largest free range, and the (stream, pool) it belongs to.
#[derive(Clone, Copy, Debug)]
struct SegStats {
    free: u64,
    max: u64,
    key: (u64, (i64, i64)),
}

/// The state during the backward pass, with the report numbers kept up to date.
pub(super) struct Live {
    segs: BTreeMap<u64, Seg>,
    pub(super) blocks: BTreeMap<u64, Blk>,
    pub(super) reserved: u64,
    pub(super) allocated: u64,
    inconsistencies: u32,
    /// Every address a block can have, sorted.
    addrs: Vec<u64>,
    gaps: GapTree,
    /// A block at an address missing from `addrs` (impossible; then every segment is scanned).
    untracked: bool,
    pub(super) by_size: BTreeSet<(Reverse<u64>, u64)>,
    /// Neighbouring segments that overlap (then a block change may concern any segment).
    seg_overlaps: usize,
    /// Segments whose cached numbers are stale (not in the totals), or all of them.
    dirty: FxHashSet<u64>,
    all_dirty: bool,
    cache: FxHashMap<u64, SegStats>,
    /// Σ cached free bytes.
    pub(super) free: u128,
    /// Per (stream, pool): the cached segments' largest free ranges, as a multiset.
    largest: FxHashMap<(u64, (i64, i64)), BTreeMap<u64, u32>>,
    /// Something changed since the last report / since the last biggest-blocks list.
    pub(super) changed: bool,
    pub(super) blocks_changed: bool,
    /// Block and segment visits of the exact fallback.
    pub(super) work: u64,
}

fn overlaps(a: u64, seg: &Seg, next: u64) -> bool {
    a.saturating_add(seg.size) > next
}

impl Live {
    /// `None` when the gap tree's memory cannot be had.
    pub(super) fn new(base: &State, addrs: Vec<u64>) -> Option<Live> {
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
    pub(super) fn settle(&mut self) {
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

    pub(super) fn largest_of(&self, key: (u64, (i64, i64))) -> u64 {
        self.largest
            .get(&key)
            .and_then(|m| m.keys().next_back().copied())
            .unwrap_or(0)
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
