//! [`Work`]: the state during an undo pass, as the final state plus an overlay of what differs
//! (the history's checkpoints are such overlays, encoded).

use std::collections::{BTreeMap, BTreeSet};

use super::map::{AddrMap, State, Store};
use super::{Blk, Seg};

/// The state during an undo pass: the final state plus an overlay of the entries that differ
/// from it (`None`: absent here, present there). An entry that becomes equal to the final
/// one again leaves the overlay, so the overlay is exactly the difference.
pub(super) struct Work<'b> {
    base: &'b State,
    pub(super) segs: BTreeMap<u64, Option<Seg>>,
    pub(super) blocks: BTreeMap<u64, Option<Blk>>,
    pub(super) reserved: u64,
    pub(super) allocated: u64,
    pub(super) inconsistencies: u32,
    /// The addresses of `segs` whose value is `Some`.
    present: BTreeSet<u64>,
    /// Per final segment (by index in `base.segments`): 1 when the overlay does not shadow it.
    /// [`Store::seg_at_or_before`] finds the last unshadowed one with it instead of walking back
    /// over shadowed ones (a trace that removed 30 k segments and then maps above them took
    /// minutes: each map walked all 30 k).
    unshadowed: Fenwick,
}

/// A Fenwick tree of 0/1 counts over final-segment indices.
struct Fenwick(Vec<u32>);

impl Fenwick {
    /// `n` ones.
    fn ones(n: usize) -> Self {
        // Node i (1-based) covers i & -i entries.
        Fenwick((0..=n).map(|i| (i & i.wrapping_neg()) as u32).collect())
    }

    fn add(&mut self, i: usize, delta: i32) {
        let mut i = i + 1;
        while let Some(x) = self.0.get_mut(i) {
            *x = x.wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Σ entries `0..=i`.
    fn prefix(&self, i: usize) -> u32 {
        let (mut i, mut s) = (i + 1, 0u32);
        while i > 0 {
            s = s.wrapping_add(self.0.get(i).copied().unwrap_or(0));
            i &= i - 1;
        }
        s
    }

    /// The smallest index whose prefix sum reaches `c` (≥ 1).
    fn find(&self, mut c: u32) -> Option<usize> {
        let n = self.0.len().saturating_sub(1);
        let mut pos = 0usize;
        let mut step = n.checked_next_power_of_two().unwrap_or(0);
        while step > 0 {
            let next = pos + step;
            if let Some(&v) = self.0.get(next).filter(|_| next <= n) {
                if v < c {
                    pos = next;
                    c -= v;
                }
            }
            step /= 2;
        }
        (pos < n).then_some(pos)
    }
}

impl<'b> Work<'b> {
    pub(super) fn new(base: &'b State) -> Self {
        Work {
            base,
            segs: BTreeMap::new(),
            blocks: BTreeMap::new(),
            reserved: base.reserved_bytes,
            allocated: base.allocated_bytes,
            inconsistencies: base.inconsistencies,
            present: BTreeSet::new(),
            unshadowed: Fenwick::ones(base.segments.len()),
        }
    }

    /// The final segment index of `addr`, if the final state has one there.
    fn base_index(&self, addr: u64) -> Option<usize> {
        self.base
            .segments
            .as_slice()
            .binary_search_by_key(&addr, |e| e.0)
            .ok()
    }

    /// Records that the overlay now has (`Some(is_some)`) or lacks (`None`) an entry at `addr`.
    fn track(&mut self, addr: u64, before: Option<bool>, after: Option<bool>) {
        match after {
            Some(true) => {
                self.present.insert(addr);
            }
            _ => {
                self.present.remove(&addr);
            }
        }
        if before.is_some() != after.is_some() {
            if let Some(i) = self.base_index(addr) {
                self.unshadowed.add(i, if after.is_some() { -1 } else { 1 });
            }
        }
    }

    /// Rebuilds `present` and `unshadowed` from `segs` (after `segs` was set whole).
    pub(super) fn index_overlay(&mut self) {
        self.present = self
            .segs
            .iter()
            .filter(|(_, v)| v.is_some())
            .map(|(&a, _)| a)
            .collect();
        self.unshadowed = Fenwick::ones(self.base.segments.len());
        let shadowed: Vec<usize> = self
            .segs
            .keys()
            .filter_map(|&a| self.base_index(a))
            .collect();
        for i in shadowed {
            self.unshadowed.add(i, -1);
        }
    }

    fn set_seg(&mut self, addr: u64, v: Option<Seg>) {
        let before = self.segs.get(&addr).map(Option::is_some);
        if self.base.segments.get(&addr).copied() == v {
            self.segs.remove(&addr);
        } else {
            self.segs.insert(addr, v);
        }
        let after = self.segs.get(&addr).map(Option::is_some);
        self.track(addr, before, after);
    }

    fn set_blk(&mut self, addr: u64, v: Option<Blk>) {
        if self.base.blocks.get(&addr).copied() == v {
            self.blocks.remove(&addr);
        } else {
            self.blocks.insert(addr, v);
        }
    }

    pub(super) fn overlay_len(&self) -> usize {
        self.segs.len() + self.blocks.len()
    }

    /// The final state with the overlay merged in.
    pub(super) fn into_state(self) -> State {
        State {
            segments: merge(&self.base.segments, &self.segs),
            blocks: merge(&self.base.blocks, &self.blocks),
            reserved_bytes: self.reserved,
            allocated_bytes: self.allocated,
            inconsistencies: self.inconsistencies,
        }
    }
}

fn merge<V: Copy>(base: &AddrMap<V>, over: &BTreeMap<u64, Option<V>>) -> AddrMap<V> {
    let len = over.iter().fold(base.len(), |n, (a, v)| {
        let n = if v.is_some() { n + 1 } else { n };
        if base.contains_key(a) {
            n.saturating_sub(1)
        } else {
            n
        }
    });
    let mut out: Vec<(u64, V)> = Vec::with_capacity(len);
    let mut it = over.iter().peekable();
    for &(a, v) in base.as_slice() {
        let mut replaced = false;
        while let Some((&oa, ov)) = it.peek() {
            if oa > a {
                break;
            }
            if let Some(x) = ov {
                out.push((oa, *x));
            }
            replaced = oa == a;
            it.next();
        }
        if !replaced {
            out.push((a, v));
        }
    }
    out.extend(it.filter_map(|(&a, v)| v.map(|x| (a, x))));
    AddrMap::from_sorted(out)
}

impl Store for Work<'_> {
    fn seg(&self, addr: u64) -> Option<Seg> {
        match self.segs.get(&addr) {
            Some(v) => *v,
            None => self.base.segments.get(&addr).copied(),
        }
    }
    fn seg_at_or_before(&self, addr: u64) -> Option<(u64, Seg)> {
        // The overlay's last present entry, and the last final segment it does not shadow.
        let over = self
            .present
            .range(..=addr)
            .next_back()
            .and_then(|&a| Some((a, (*self.segs.get(&a)?)?)));
        let upto = self
            .base
            .segments
            .as_slice()
            .partition_point(|e| e.0 <= addr);
        let base = upto
            .checked_sub(1)
            .map(|i| self.unshadowed.prefix(i))
            .filter(|&c| c > 0)
            .and_then(|c| self.unshadowed.find(c))
            .and_then(|i| self.base.segments.as_slice().get(i))
            .map(|&(a, s)| (a, s));
        match (over, base) {
            (Some(o), Some(b)) => Some(if b.0 > o.0 { b } else { o }),
            (o, b) => o.or(b),
        }
    }
    fn put_seg(&mut self, addr: u64, seg: Seg) {
        if let Some(old) = self.seg(addr) {
            self.reserved = self.reserved.saturating_sub(old.size);
        }
        self.reserved = self.reserved.saturating_add(seg.size);
        self.set_seg(addr, Some(seg));
    }
    fn take_seg(&mut self, addr: u64) -> Option<Seg> {
        let old = self.seg(addr)?;
        self.reserved = self.reserved.saturating_sub(old.size);
        self.set_seg(addr, None);
        Some(old)
    }
    fn blk(&self, addr: u64) -> Option<Blk> {
        match self.blocks.get(&addr) {
            Some(v) => *v,
            None => self.base.blocks.get(&addr).copied(),
        }
    }
    fn put_blk(&mut self, addr: u64, blk: Blk) {
        if let Some(old) = self.blk(addr) {
            self.allocated = self.allocated.saturating_sub(old.requested);
        }
        self.allocated = self.allocated.saturating_add(blk.requested);
        self.set_blk(addr, Some(blk));
    }
    fn take_blk(&mut self, addr: u64) -> Option<Blk> {
        let old = self.blk(addr)?;
        self.allocated = self.allocated.saturating_sub(old.requested);
        self.set_blk(addr, None);
        Some(old)
    }
    fn inconsistent(&mut self) {
        self.inconsistencies = self.inconsistencies.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Src;

    fn seg(size: u64) -> Seg {
        Seg {
            size,
            stream: 0,
            pool: (0, 0),
            src: Src::UNKNOWN,
        }
    }

    #[test]
    fn fenwick_finds_the_kth_one() {
        let mut f = Fenwick::ones(10);
        assert_eq!(f.prefix(9), 10);
        f.add(3, -1);
        f.add(4, -1);
        assert_eq!(f.prefix(4), 3);
        assert_eq!(f.find(3), Some(2));
        assert_eq!(f.find(4), Some(5));
        assert_eq!(f.find(9), None);
        assert_eq!(Fenwick::ones(0).find(1), None);
    }

    /// The overlay's `seg_at_or_before` answers as the merged state does, whatever was removed
    /// or added over the final segments.
    #[test]
    fn seg_at_or_before_matches_the_merged_state() {
        let mut base = State::default();
        for i in 0..40u64 {
            base.insert_segment(i * 100, seg(50));
        }
        let mut x = 12345u64;
        let mut rnd = |n: u64| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 33) % n
        };
        let mut w = Work::new(&base);
        for step in 0..3000 {
            let a = rnd(45) * 100 + if rnd(4) == 0 { 30 } else { 0 };
            if rnd(2) == 0 {
                w.take_seg(a);
            } else {
                w.put_seg(a, seg(if rnd(3) == 0 { 60 } else { 50 }));
            }
            if step % 500 == 0 {
                // A decoded overlay: the indexes rebuilt from `segs` whole.
                w.index_overlay();
            }
            let q = rnd(4600);
            let want = {
                let merged = Work {
                    base: &base,
                    segs: w.segs.clone(),
                    blocks: BTreeMap::new(),
                    reserved: 0,
                    allocated: 0,
                    inconsistencies: 0,
                    present: BTreeSet::new(),
                    unshadowed: Fenwick::ones(0),
                }
                .into_state();
                merged.segments.at_or_before(q).map(|(a, s)| (a, *s))
            };
            assert_eq!(w.seg_at_or_before(q), want, "step {step}, query {q}");
        }
    }
}
