//! The stack of live elements swept left to right for the column level of detail
//! ([`crate::scene::build_columns`]): a Fenwick tree of heights (bytes below a push order, the
//! element at a height) and a max tree (the largest element between two push orders), updated
//! by the pushes and pops between two sampled timesteps.

use memviz_present::layout::Layout;

/// The stack of live elements at the sampled timesteps of [`build_columns`], swept left to
/// right. Candidates are the elements live at one sample at least, indexed densely in push
/// order: an element pushed and popped between two samples is never drawn, so it is left out
/// (on the 2 GB training-loop tile the first scene's 384 samples see a fraction of the 8.6 M
/// elements, where every element pushed in the window was a candidate before: 142 MB).
///
/// About 25 bytes per candidate: its push order (4), the height and its Fenwick node (8 + 8), a
/// pop (4) and the max tree over blocks of [`BLOCK`] candidates. Pushes come in candidate order.
pub(crate) struct ColumnStack {
    /// Push order of each candidate, ascending.
    orders: Vec<u32>,
    m: usize,
    /// Height of each candidate while live, else 0.
    live_height: Vec<u64>,
    /// Fenwick tree over `live_height` (1-based).
    fenwick: Vec<u64>,
    /// Max tree over blocks of [`BLOCK`] candidates: the live candidate with the largest height
    /// in a node's range (`NONE` for none; ties: the lowest candidate); leaves at `size + b`.
    max_tree: Vec<u32>,
    size: usize,
    /// Pops per sample (candidate indices), counting-sorted by the sample they take effect at.
    pops: Vec<u32>,
    pop_offsets: Vec<u32>,
    /// The next candidate to push (pushes are in candidate order).
    next_push: usize,
    /// Samples applied so far.
    applied: usize,
    /// The sampled timesteps (ascending) and the last one.
    sample_steps: Vec<u32>,
}

const NONE: u32 = u32::MAX;
/// Candidates per leaf of the max tree: a pop rescans its leaf's block.
const BLOCK: usize = 16;

impl ColumnStack {
    pub(crate) fn new(layout: &Layout, samples: &[(u32, u32)]) -> Self {
        let (Some(&(_, first)), Some(&(_, last))) = (samples.first(), samples.last()) else {
            return Self::empty();
        };
        let steps: Vec<u32> = samples.iter().map(|&(_, s)| s).collect();
        // Push orders are in timestep order: every element pushed by `last` is a push order
        // below `hi`. Of those, the candidates are the ones live at a sample: live from sample
        // `add` up to (not including) sample `pop`.
        let span_of = |o: u32| layout.element_at_order(o).and_then(|e| layout.span(e));
        let start_of = |o: u32| span_of(o).map_or(u32::MAX, |s| s.0);
        let hi = partition_point_u32(layout.drawn_count(), |o| start_of(o) <= last);
        let bucket = |step: u32| steps.partition_point(|&s| s < step);
        let samples_live = |o: u32| -> Option<(usize, usize)> {
            let (s0, s1) = span_of(o)?;
            let add = if s0 <= first { 0 } else { bucket(s0) };
            let pop = if s1 > last { steps.len() } else { bucket(s1) };
            (add < pop).then_some((add, pop))
        };
        // The candidates and the sample each one pops at, found in one pass (an element's span
        // is decoded once: this pass is most of the first scene's column stack).
        let mut orders: Vec<u32> = Vec::new();
        let mut pop_at: Vec<u32> = Vec::new();
        for o in 0..hi {
            if let Some((_, pop)) = samples_live(o) {
                orders.push(o);
                pop_at.push(u32::try_from(pop).unwrap_or(u32::MAX));
            }
        }
        let m = orders.len();
        if m >= NONE as usize {
            return Self::empty();
        }
        // Bucket each pop by the sample it takes effect at (counting sort).
        let pop_bucket = |i: usize| -> Option<usize> {
            let pop = *pop_at.get(i)? as usize;
            (pop < steps.len()).then_some(pop)
        };
        let mut offsets = vec![0u32; steps.len() + 2];
        for i in 0..m {
            if let Some(c) = pop_bucket(i).and_then(|k| offsets.get_mut(k + 2)) {
                *c += 1;
            }
        }
        for k in 1..offsets.len() {
            let prev = offsets.get(k - 1).copied().unwrap_or(0);
            if let Some(c) = offsets.get_mut(k) {
                *c += prev;
            }
        }
        let mut pops = vec![0u32; offsets.last().copied().unwrap_or(0) as usize];
        for i in 0..m {
            if let Some(at) = pop_bucket(i).and_then(|k| offsets.get_mut(k + 1)) {
                if let Some(slot) = pops.get_mut(*at as usize) {
                    *slot = i as u32;
                }
                *at += 1;
            }
        }
        offsets.pop();
        drop(pop_at);
        let blocks = m.div_ceil(BLOCK).max(1);
        ColumnStack {
            orders,
            m,
            live_height: vec![0; m],
            fenwick: vec![0; m + 1],
            max_tree: vec![NONE; 2 * blocks],
            size: blocks,
            pops,
            pop_offsets: offsets,
            next_push: 0,
            applied: 0,
            sample_steps: steps,
        }
    }

    fn empty() -> Self {
        ColumnStack {
            orders: Vec::new(),
            m: 0,
            live_height: Vec::new(),
            fenwick: vec![0],
            max_tree: vec![NONE; 2],
            size: 1,
            pops: Vec::new(),
            pop_offsets: Vec::new(),
            next_push: 0,
            applied: 0,
            sample_steps: Vec::new(),
        }
    }

    /// Push order of candidate `i`.
    fn order(&self, i: usize) -> u32 {
        self.orders.get(i).copied().unwrap_or(NONE)
    }

    /// Element of candidate `i`.
    fn element(&self, layout: &Layout, i: usize) -> Option<u32> {
        layout.element_at_order(self.order(i))
    }

    /// Applies the pushes and pops up to and including sample `k`.
    pub(crate) fn advance_to(&mut self, k: usize, layout: &Layout) {
        while self.applied <= k {
            let Some(&step) = self.sample_steps.get(self.applied) else {
                break;
            };
            // Pushes: every candidate starting by this sample, unless it also ends by it.
            while self.next_push < self.m {
                let i = self.next_push;
                let e = self.element(layout, i);
                let Some((s0, s1)) = e.and_then(|e| layout.span(e)) else {
                    self.next_push += 1;
                    continue;
                };
                if s0 > step {
                    break;
                }
                self.next_push += 1;
                let last = self.sample_steps.last().copied().unwrap_or(0);
                if s1 <= step && s1 <= last {
                    continue;
                }
                self.set(i, e.map_or(0, |e| layout.height_bytes(e)));
            }
            let a = self.pop_offsets.get(self.applied).copied().unwrap_or(0) as usize;
            let b = self.pop_offsets.get(self.applied + 1).copied().unwrap_or(0) as usize;
            for j in a..b {
                let i = self.pops.get(j).copied().unwrap_or(0) as usize;
                self.set(i, 0);
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
        // The leaf: a push competes with its block's best; a pop rescans the block.
        let block = i / BLOCK;
        let mut node = self.size + block;
        let cur = self.max_tree.get(node).copied().unwrap_or(NONE);
        let leaf = if h > prev {
            self.larger(cur, i as u32)
        } else {
            let end = ((block + 1) * BLOCK).min(self.m);
            (block * BLOCK..end).fold(NONE, |best, c| self.larger(best, c as u32))
        };
        if leaf == cur && h > prev {
            return;
        }
        if let Some(l) = self.max_tree.get_mut(node) {
            *l = leaf;
        }
        // Up the max tree: a push stops below an ancestor holding a larger element; a pop
        // recomputes the whole path (so no ancestor keeps a popped element).
        while node > 1 {
            node /= 2;
            let l = self.max_tree.get(2 * node).copied().unwrap_or(NONE);
            let r = self.max_tree.get(2 * node + 1).copied().unwrap_or(NONE);
            let best = self.larger(l, r);
            let slot = self.max_tree.get(node).copied().unwrap_or(NONE);
            if best == slot && h > prev {
                break;
            }
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

    /// The taller of two candidates (`NONE` loses; ties: `a`, which keeps a row's colour
    /// from column to column where equal elements are stacked).
    fn larger(&self, a: u32, b: u32) -> u32 {
        let (ha, hb) = (self.height(a), self.height(b));
        if hb > ha {
            b
        } else if ha == 0 {
            NONE
        } else {
            a
        }
    }

    /// The number of candidates with push order `<= o`.
    fn candidates_up_to(&self, o: u32) -> usize {
        self.orders.partition_point(|&c| c <= o)
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
        let (ba, bb) = (a / BLOCK, b / BLOCK);
        let scan = |best: u32, r: std::ops::RangeInclusive<usize>| {
            r.fold(best, |best, c| self.larger(best, c as u32))
        };
        if ba == bb {
            return scan(NONE, a..=b);
        }
        let mut best = scan(NONE, a..=(ba + 1) * BLOCK - 1);
        best = scan(best, bb * BLOCK..=b);
        let (mut l, mut r) = (ba + 1 + self.size, bb + self.size);
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
        let m = self.m;
        if m == 0 {
            return;
        }
        // A slide in progress leaves a gap of `part` bytes above the freed element's slot.
        let (gap_at, gap) = match layout.slide_at_step(step) {
            Some((so, part)) => (self.prefix(self.candidates_up_to(so)) as f64, part.max(0.0)),
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
                    let e = self.element(layout, a).unwrap_or(0);
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
                    if let Some(e) = (best != NONE)
                        .then(|| self.element(layout, best as usize))
                        .flatten()
                    {
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
