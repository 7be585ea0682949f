//! Sets of push orders for the layout's replay, at about a bit per order: the live orders with
//! their largest ([`TopSet`], which says whether a free has something above it), and the orders
//! of the slides so far with a count below an order ([`OrderCounts`], an element's slides below
//! it). They replace a lazy stack (4 bytes per pushed element not yet popped: 675 k entries on
//! the 150 MB real-file tile) and a Fenwick tree of `u32` per order.

/// A set of orders `0..n` in a 64-ary tree of bitsets: a bit per order, and above every level a
/// bit per non-empty word of it. Insert and remove touch one word per level until a word stays
/// non-empty; [`TopSet::max_below`] climbs to the first level with a set bit below and comes
/// down along the highest bits: O(log₆₄ n) each.
pub(super) struct TopSet {
    levels: Vec<Vec<u64>>,
}

impl TopSet {
    pub(super) fn new(n: usize) -> Self {
        let mut levels = Vec::new();
        let mut m = n.max(1);
        loop {
            let words = m.div_ceil(64);
            levels.push(vec![0u64; words]);
            if words == 1 {
                break;
            }
            m = words;
        }
        TopSet { levels }
    }

    pub(super) fn insert(&mut self, i: u32) {
        let mut i = i as usize;
        for level in &mut self.levels {
            let Some(w) = level.get_mut(i / 64) else {
                return;
            };
            let was = *w;
            *w |= 1 << (i % 64);
            if was != 0 {
                return;
            }
            i /= 64;
        }
    }

    pub(super) fn remove(&mut self, i: u32) {
        let mut i = i as usize;
        for level in &mut self.levels {
            let Some(w) = level.get_mut(i / 64) else {
                return;
            };
            *w &= !(1 << (i % 64));
            if *w != 0 {
                return;
            }
            i /= 64;
        }
    }

    /// The largest member below `i`.
    pub(super) fn max_below(&self, i: u32) -> Option<u32> {
        let mut i = i as usize;
        let mut k = 0;
        loop {
            let level = self.levels.get(k)?;
            // Past the end: every bit of the last word is below.
            let (w, mask) = if i / 64 < level.len() {
                (i / 64, (1u64 << (i % 64)) - 1)
            } else {
                (level.len().checked_sub(1)?, u64::MAX)
            };
            let word = level.get(w).copied().unwrap_or(0) & mask;
            if word != 0 {
                let mut j = w * 64 + highest(word)?;
                while k > 0 {
                    k -= 1;
                    let word = self.levels.get(k)?.get(j).copied()?;
                    j = j * 64 + highest(word)?;
                }
                return u32::try_from(j).ok();
            }
            if w == 0 {
                return None;
            }
            i = w;
            k += 1;
        }
    }
}

/// The index of the highest set bit.
fn highest(word: u64) -> Option<usize> {
    (word != 0).then(|| 63 - word.leading_zeros() as usize)
}

/// A set of orders `0..n` that only grows, with the number of members below an order: a bit per
/// order and a Fenwick tree of the members per word of 64 orders (1/8 + 1/16 byte per order).
pub struct OrderCounts {
    bits: Vec<u64>,
    /// 1-based Fenwick tree over `bits`' words.
    tree: Vec<u32>,
}

impl OrderCounts {
    pub fn new(n: usize) -> Self {
        let words = n.div_ceil(64);
        OrderCounts {
            bits: vec![0; words],
            tree: vec![0; words + 1],
        }
    }

    pub fn add(&mut self, o: u32) {
        let o = o as usize;
        let Some(word) = self.bits.get_mut(o / 64) else {
            return;
        };
        let bit = 1u64 << (o % 64);
        if *word & bit != 0 {
            return;
        }
        *word |= bit;
        let mut i = o / 64 + 1;
        while let Some(c) = self.tree.get_mut(i) {
            *c = c.wrapping_add(1);
            i += i & i.wrapping_neg();
        }
    }

    /// Members below `o`.
    pub fn below(&self, o: u32) -> u32 {
        let o = o as usize;
        let w = (o / 64).min(self.bits.len());
        let mut s = self
            .bits
            .get(w)
            .map_or(0, |&b| (b & ((1u64 << (o % 64)) - 1)).count_ones());
        // No count passes the number of orders (a u32): plain adds.
        let mut i = w;
        while i > 0 {
            s = s.wrapping_add(self.tree.get(i).copied().unwrap_or(0));
            i &= i - 1;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_agree_with_a_plain_one() {
        let n = 5000u32;
        let mut top = TopSet::new(n as usize);
        let mut counts = OrderCounts::new(n as usize);
        let mut plain = vec![false; n as usize];
        let mut added = vec![false; n as usize];
        let mut s: u64 = 12345;
        for round in 0..40_000u32 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let i = (s % u64::from(n)) as u32;
            if s.is_multiple_of(3) {
                top.remove(i);
                plain[i as usize] = false;
            } else {
                top.insert(i);
                plain[i as usize] = true;
            }
            if round.is_multiple_of(5) {
                counts.add(i);
                added[i as usize] = true;
            }
            let q = ((s >> 20) % u64::from(n + 1)) as u32;
            let want = (0..q).rev().find(|&j| plain[j as usize]);
            assert_eq!(top.max_below(q), want, "max below {q}");
            let below = added[..q as usize].iter().filter(|&&a| a).count() as u32;
            assert_eq!(counts.below(q), below);
        }
        let last = (0..n).rev().find(|&j| plain[j as usize]);
        assert_eq!(top.max_below(n + 1000), last);
        assert_eq!(top.max_below(u32::MAX), last);
        assert_eq!(TopSet::new(0).max_below(0), None);
        assert_eq!(OrderCounts::new(0).below(3), 0);
    }
}
