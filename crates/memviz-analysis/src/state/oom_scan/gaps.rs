//! The gap tree of [`super::OomScan`]: for every live block, the gap between it and the live
//! block before it, over the fixed table of every address a block can have, so a segment's
//! free bytes and largest free range are a range query (O(log n)).

/// Aggregate of a run of block gaps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Node {
    /// Σ gaps (saturating; within one segment it never saturates: the gaps fit in it).
    pub(super) sum: u64,
    pub(super) max: u64,
    /// Blocks overlapping the live block before them.
    pub(super) bad: u32,
}

fn join(a: Node, b: Node) -> Node {
    Node {
        sum: a.sum.saturating_add(b.sum),
        max: a.max.max(b.max),
        bad: a.bad.saturating_add(b.bad),
    }
}

/// A bottom-up segment tree of [`Node`]s over the block address table.
pub(super) struct GapTree {
    n: usize,
    t: Vec<Node>,
}

impl GapTree {
    /// `None` when its memory cannot be had.
    pub(super) fn new(n: usize) -> Option<Self> {
        let mut t = Vec::new();
        t.try_reserve_exact(n.checked_mul(2)?).ok()?;
        t.resize(2 * n, Node::default());
        Some(GapTree { n, t })
    }

    /// Fills the internal nodes from the leaves.
    pub(super) fn rebuild(&mut self) {
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

    pub(super) fn set_leaf(&mut self, i: usize, v: Node) {
        if let Some(x) = self.t.get_mut(i + self.n) {
            *x = v;
        }
    }

    pub(super) fn set(&mut self, i: usize, v: Node) {
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
    pub(super) fn query(&self, l: usize, r: usize) -> Node {
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

/// The gap entry of a live block at `a` after a live block ending at `prev_end`.
pub(super) fn gap_node(a: u64, prev_end: Option<u64>) -> Node {
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
