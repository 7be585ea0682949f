//! The stack of live elements swept left to right for the column level of detail
//! ([`crate::scene::build_columns`]): a Fenwick tree of heights (bytes below a push order, the
//! element at a height) and a max tree (the largest element between two push orders), updated
//! by the pushes and pops between two sampled timesteps.

use memviz_analysis::layout::Layout;

/// The stack of live elements at the sampled timesteps of [`build_columns`], swept left to
/// right. Elements are the window's candidates (live at the first sample, or pushed before the
/// last), indexed densely in push order.
pub(crate) struct ColumnStack {
    /// Push order of each candidate, ascending.
    orders: Vec<u32>,
    /// Element of each candidate.
    elements: Vec<u32>,
    /// Height of each candidate while live, else 0.
    live_height: Vec<u64>,
    /// Fenwick tree over `live_height` (1-based).
    fenwick: Vec<u64>,
    /// Max tree over candidates: the live candidate with the largest height in a node's range
    /// (`NONE` for none); leaves at `size + i`.
    max_tree: Vec<u32>,
    size: usize,
    /// Updates per sample: candidate index, high bit set for a pop.
    updates: Vec<u32>,
    update_offsets: Vec<u32>,
    /// Samples applied so far.
    applied: usize,
}

const NONE: u32 = u32::MAX;
const POP: u32 = 1 << 31;

impl ColumnStack {
    pub(crate) fn new(layout: &Layout, samples: &[(u32, u32)]) -> Self {
        let (Some(&(_, first)), Some(&(_, last))) = (samples.first(), samples.last()) else {
            return Self::empty();
        };
        // Push orders are in timestep order: the elements live at `first` were pushed before
        // order `lo` (a scan, so the hit index is not needed for a first frame), and those
        // pushed after `first` up to `last` are the range `lo..hi`.
        let span_of = |o: u32| layout.element_at_order(o).and_then(|e| layout.span(e));
        let start_of = |o: u32| span_of(o).map_or(u32::MAX, |s| s.0);
        let total = layout.element_count().min(u32::MAX as usize) as u32;
        let lo = partition_point_u32(total, |o| start_of(o) <= first);
        let hi = partition_point_u32(total, |o| start_of(o) <= last);
        let mut orders: Vec<u32> = (0..lo)
            .filter(|&o| span_of(o).is_some_and(|s| s.1 > first))
            .collect();
        orders.extend(lo..hi);
        if orders.len() >= (POP as usize) {
            return Self::empty();
        }
        let elements: Vec<u32> = orders
            .iter()
            .map(|&o| layout.element_at_order(o).unwrap_or(0))
            .collect();
        let m = orders.len();
        let size = m.max(1);
        let mut st = ColumnStack {
            orders,
            elements,
            live_height: vec![0; m],
            fenwick: vec![0; m + 1],
            max_tree: vec![NONE; 2 * size],
            size,
            updates: Vec::new(),
            update_offsets: Vec::new(),
            applied: 0,
        };
        // Bucket each push and pop by the first sample it affects (counting sort).
        let bucket = |step: u32| samples.partition_point(|&(_, s)| s < step);
        let mut counts = vec![0u32; samples.len() + 1];
        let each = |st: &mut ColumnStack, f: &mut dyn FnMut(usize, u32)| {
            for i in 0..m {
                let e = st.elements.get(i).copied().unwrap_or(0);
                let Some((s0, s1)) = layout.span(e) else {
                    continue;
                };
                let add = if s0 <= first { 0 } else { bucket(s0) };
                let pop = if s1 > last { samples.len() } else { bucket(s1) };
                if add >= pop {
                    continue;
                }
                f(add, i as u32);
                if pop < samples.len() {
                    f(pop, i as u32 | POP);
                }
            }
        };
        each(&mut st, &mut |k, _| {
            if let Some(c) = counts.get_mut(k) {
                *c += 1;
            }
        });
        let mut offsets = Vec::with_capacity(counts.len() + 1);
        let mut acc = 0u32;
        offsets.push(0);
        for c in &counts {
            acc += c;
            offsets.push(acc);
        }
        let mut fill = offsets.clone();
        let mut updates = vec![0u32; acc as usize];
        each(&mut st, &mut |k, v| {
            if let Some(at) = fill.get_mut(k) {
                if let Some(slot) = updates.get_mut(*at as usize) {
                    *slot = v;
                }
                *at += 1;
            }
        });
        st.updates = updates;
        st.update_offsets = offsets;
        st
    }

    fn empty() -> Self {
        ColumnStack {
            orders: Vec::new(),
            elements: Vec::new(),
            live_height: Vec::new(),
            fenwick: vec![0],
            max_tree: vec![NONE; 2],
            size: 1,
            updates: Vec::new(),
            update_offsets: Vec::new(),
            applied: 0,
        }
    }

    /// Applies the pushes and pops up to and including sample `k`.
    pub(crate) fn advance_to(&mut self, k: usize, layout: &Layout) {
        while self.applied <= k {
            let a = self.update_offsets.get(self.applied).copied().unwrap_or(0) as usize;
            let b = self
                .update_offsets
                .get(self.applied + 1)
                .copied()
                .unwrap_or(0) as usize;
            for j in a..b {
                let v = self.updates.get(j).copied().unwrap_or(0);
                let i = (v & !POP) as usize;
                let h = if v & POP != 0 {
                    0
                } else {
                    self.elements.get(i).map_or(0, |&e| layout.height_bytes(e))
                };
                self.set(i, h);
            }
            self.applied += 1;
        }
    }

    fn set(&mut self, i: usize, h: u64) {
        let Some(old) = self.live_height.get_mut(i) else {
            return;
        };
        let prev = std::mem::replace(old, h);
        let mut j = i + 1;
        while j < self.fenwick.len() {
            if let Some(f) = self.fenwick.get_mut(j) {
                *f = f.wrapping_add(h).wrapping_sub(prev);
            }
            j += j & j.wrapping_neg();
        }
        let mut node = self.size + i;
        if let Some(leaf) = self.max_tree.get_mut(node) {
            *leaf = if h > 0 { i as u32 } else { NONE };
        }
        // Up the max tree: a push stops below an ancestor holding an element at least as tall;
        // a pop recomputes the whole path (so no ancestor keeps a popped element).
        let me = i as u32;
        while node > 1 {
            node /= 2;
            let cur = self.max_tree.get(node).copied().unwrap_or(NONE);
            let best = if h > prev {
                if self.height(cur) >= h && cur != me {
                    break;
                }
                me
            } else {
                let l = self.max_tree.get(2 * node).copied().unwrap_or(NONE);
                let r = self.max_tree.get(2 * node + 1).copied().unwrap_or(NONE);
                self.larger(l, r)
            };
            if let Some(n) = self.max_tree.get_mut(node) {
                *n = best;
            }
        }
    }

    fn height(&self, i: u32) -> u64 {
        if i == NONE {
            return 0;
        }
        self.live_height.get(i as usize).copied().unwrap_or(0)
    }

    fn larger(&self, a: u32, b: u32) -> u32 {
        if self.height(b) > self.height(a) {
            b
        } else {
            a
        }
    }

    /// Live bytes of candidates `0..i`.
    fn prefix(&self, i: usize) -> u64 {
        let mut j = i.min(self.fenwick.len().saturating_sub(1));
        let mut sum = 0u64;
        while j > 0 {
            sum = sum.wrapping_add(self.fenwick.get(j).copied().unwrap_or(0));
            j &= j - 1;
        }
        sum
    }

    /// The live candidate whose bytes contain `y` (stack bytes, no slide gap), if any.
    fn at_height(&self, y: f64) -> Option<usize> {
        if y < 0.0 {
            return None;
        }
        let m = self.fenwick.len() - 1;
        let mut pos = 0usize;
        let mut rem = y;
        let mut step = m.checked_next_power_of_two().unwrap_or(0);
        while step > 0 {
            let next = pos + step;
            if next <= m {
                let f = self.fenwick.get(next).copied().unwrap_or(0) as f64;
                if f <= rem {
                    pos = next;
                    rem -= f;
                }
            }
            step /= 2;
        }
        (pos < m).then_some(pos)
    }

    /// The live candidate with the largest height in `a..=b`.
    fn largest_in(&self, a: usize, b: usize) -> u32 {
        let mut best = NONE;
        let (mut l, mut r) = (a + self.size, b + self.size + 1);
        while l < r {
            if l & 1 == 1 {
                best = self.larger(best, self.max_tree.get(l).copied().unwrap_or(NONE));
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                best = self.larger(best, self.max_tree.get(r).copied().unwrap_or(NONE));
            }
            l /= 2;
            r /= 2;
        }
        best
    }

    /// Calls `f(row, element)` for each pixel row of `[wy0, wy1)` (`px` bytes tall) that the
    /// stack at timestep `step` reaches: the largest element in the row, rows ascending.
    pub(crate) fn rows(
        &self,
        layout: &Layout,
        step: u32,
        wy0: f64,
        wy1: f64,
        px: f64,
        mut f: impl FnMut(i64, u32),
    ) {
        let m = self.orders.len();
        if m == 0 {
            return;
        }
        // A slide in progress leaves a gap of `part` bytes above the freed element's slot.
        let (gap_at, gap) = match layout.slide_at_step(step) {
            Some((so, part)) => (
                self.prefix(self.orders.partition_point(|&o| o <= so)) as f64,
                part.max(0.0),
            ),
            None => (f64::INFINITY, 0.0),
        };
        let total = self.prefix(m) as f64 + gap;
        // Stack bytes to drawn bytes and back.
        let locate = |y: f64| -> Option<usize> {
            if y < gap_at {
                self.at_height(y)
            } else if y < gap_at + gap {
                None
            } else {
                self.at_height(y - gap)
            }
        };
        let top_of = |i: usize| -> f64 {
            let t = self.prefix(i + 1) as f64;
            if t > gap_at {
                t + gap
            } else {
                t
            }
        };
        let y_end = wy1.min(total);
        let mut row = ((0.0 - wy0) / px).floor().max(0.0) as i64;
        let eps = (px * 1e-6).max(1e-9);
        // The element at the top of the last row, and its top: usually the next row's bottom.
        let mut carry: Option<(usize, f64)> = None;
        loop {
            let ylo = wy0 + row as f64 * px;
            if ylo >= y_end {
                break;
            }
            let yhi = (ylo + px).min(total);
            let a = match carry {
                Some((i, top)) if ylo < top && !(gap_at..gap_at + gap).contains(&ylo) => Some(i),
                _ => locate(ylo).or_else(|| locate(gap_at + gap)),
            };
            let b = locate(yhi - eps).or_else(|| locate(gap_at - eps));
            carry = b.map(|i| (i, top_of(i)));
            match (a, b) {
                (Some(a), Some(b)) if a == b => {
                    let e = self.elements.get(a).copied().unwrap_or(0);
                    // Every row inside this element takes its colour at once.
                    let last = ((top_of(a) - wy0) / px).floor() as i64;
                    let through = last.max(row + 1);
                    for r in row..through {
                        f(r, e);
                    }
                    row = through;
                    continue;
                }
                (Some(a), Some(b)) if a < b => {
                    let best = self.largest_in(a, b);
                    if let Some(&e) = self.elements.get(best as usize) {
                        f(row, e);
                    }
                }
                _ => {}
            }
            row += 1;
        }
    }
}

/// The first `i` in `0..n` for which `pred(i)` is false (`pred` true then false).
fn partition_point_u32(n: u32, pred: impl Fn(u32) -> bool) -> u32 {
    let (mut lo, mut hi) = (0u32, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}
