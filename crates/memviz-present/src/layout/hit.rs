//! Hit testing and the live set at a timestep, through the bucketed [`HitIndex`].

use super::*;

impl Layout {
    /// Live bytes at `x_step` (interpolated during slides), as the plot's outline shows it.
    pub fn live_bytes_at(&self, x_step: f64) -> f64 {
        if !(0.0..self.step_count() as f64).contains(&x_step) {
            return 0.0;
        }
        self.hit_index()
            .bytes_below(self, self.drawn_count(), x_step)
    }

    /// The element drawn at `(x_step, y_bytes)`, if any. O(log² n · log steps), no allocation.
    pub fn hit(&self, x_step: f64, y_bytes: f64) -> Option<u32> {
        if !(0.0..self.step_count() as f64).contains(&x_step) || y_bytes.is_nan() || y_bytes < 0.0 {
            return None;
        }
        // Largest order o with bytes_below(o) <= y (bytes_below grows with o; bytes_below(0) = 0).
        let (mut lo, mut hi) = (0u32, self.drawn_count());
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.hit_index().bytes_below(self, mid, x_step) <= y_bytes {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let e = self.element_at_order(lo)?;
        let (start, end) = (self.start_of(e), self.end_of(e));
        let alive = (start as f64) <= x_step && x_step < end as f64;
        (alive
            && y_bytes
                < self.hit_index().bytes_below(self, lo, x_step) + self.height_bytes(e) as f64)
            .then_some(e)
    }

    /// The elements drawn during timestep `step` with their bottoms at `step` (interpolated
    /// during slides), bottom first. O(live · log live).
    pub fn elements_at(&self, step: u32) -> Vec<(f64, u32)> {
        if step >= self.step_count() {
            return Vec::new();
        }
        let x = step as f64;
        let mut orders = self.hit_index().live_orders(self, x);
        orders.sort_unstable();
        let slide = self.hit_index().slide_at(self, x);
        let mut below: u64 = 0;
        let mut out = Vec::with_capacity(orders.len());
        for o in orders {
            let Some(e) = self.element_at_order(o) else {
                continue;
            };
            let extra = match slide {
                Some((so, part)) if so < o => part,
                _ => 0.0,
            };
            out.push((below as f64 + extra, e));
            below = below.saturating_add(self.height_bytes(e));
        }
        out
    }

    /// The hit index, built on first use.
    pub(super) fn hit_index(&self) -> &HitIndex {
        self.hit.get_or_init(|| HitIndex::build(self))
    }

    /// The slide in progress during timestep `step`: (freed element's push order, bytes not
    /// yet slid away). Everything pushed after it sits that much higher.
    pub fn slide_at_step(&self, step: u32) -> Option<(u32, f64)> {
        slide_at(self, f64::from(step))
    }
}

/// Bucketed stabbing index over timesteps (see the module docs).
#[derive(Clone, Debug, Default)]
pub(super) struct HitIndex {
    /// Segment tree over buckets, `2 * tree_size` nodes; node `i`'s list is
    /// `node_order[node_off[i]..node_off[i+1]]` (push orders, ascending) with inclusive
    /// cumulative heights in `node_cum`.
    tree_size: usize,
    node_off: Vec<u32>,
    node_order: Vec<u32>,
    node_cum: Vec<u64>,
    /// Per bucket: elements that start or end strictly inside it (push orders, ascending).
    leaf_off: Vec<u32>,
    leaf_order: Vec<u32>,
}

impl HitIndex {
    pub(super) fn build(l: &Layout) -> HitIndex {
        let steps = u64::from(l.step_count());
        let bs = HIT_BUCKET_STEPS as u64;
        let buckets = steps.div_ceil(bs).max(1) as usize;
        let tree_size = buckets.next_power_of_two();
        // Elements live at the end extend to the whole tree (one root entry for those live
        // throughout): no query reaches past the last timestep.
        let full_end = tree_size as u64 * bs;
        // (full bucket range, partial buckets) of an element.
        let classify = |e: usize| -> (usize, usize, [Option<usize>; 2]) {
            let start = l.start_of(e as u32) as u64;
            let mut end = l.end_of(e as u32) as u64;
            if end >= steps {
                end = full_end;
            }
            if end <= start {
                return (0, 0, [None, None]);
            }
            let fb = start.div_ceil(bs) as usize;
            let lb = (end / bs) as usize;
            let sb = (start / bs) as usize;
            let eb = ((end - 1) / bs) as usize;
            let full = |j: usize| (j as u64) * bs >= start && (j as u64 + 1) * bs <= end;
            let p0 = (!full(sb)).then_some(sb);
            let p1 = (eb != sb && !full(eb)).then_some(eb);
            (fb, lb.max(fb), [p0, p1])
        };
        let canonical = |mut lo: usize, mut hi: usize, f: &mut dyn FnMut(usize)| {
            lo += tree_size;
            hi += tree_size;
            while lo < hi {
                if lo & 1 == 1 {
                    f(lo);
                    lo += 1;
                }
                if hi & 1 == 1 {
                    hi -= 1;
                    f(hi);
                }
                lo >>= 1;
                hi >>= 1;
            }
        };
        let mut node_cnt = vec![0u32; 2 * tree_size + 1];
        let mut leaf_cnt = vec![0u32; buckets + 1];
        for e in l.drawn_elements() {
            let (fb, lb, parts) = classify(e as usize);
            canonical(fb, lb, &mut |node| node_cnt[node] += 1);
            for b in parts.into_iter().flatten() {
                if let Some(c) = leaf_cnt.get_mut(b) {
                    *c += 1;
                }
            }
        }
        let to_offsets = |cnt: &mut Vec<u32>| {
            let mut acc = 0u32;
            for c in cnt.iter_mut() {
                let v = *c;
                *c = acc;
                acc = acc.saturating_add(v);
            }
        };
        to_offsets(&mut node_cnt);
        to_offsets(&mut leaf_cnt);
        let node_off = node_cnt;
        let leaf_off = leaf_cnt;
        let mut node_order = vec![0u32; *node_off.last().unwrap_or(&0) as usize];
        let mut node_cum = vec![0u64; node_order.len()];
        let mut leaf_order = vec![0u32; *leaf_off.last().unwrap_or(&0) as usize];
        let mut node_cur: Vec<u32> = node_off.clone();
        let mut leaf_cur: Vec<u32> = leaf_off.clone();
        for (o, e) in l.drawn_elements().enumerate() {
            let (fb, lb, parts) = classify(e as usize);
            let h = l.height_bytes(e);
            canonical(fb, lb, &mut |node| {
                let c = node_cur[node] as usize;
                if c < node_order.len() {
                    let prev = if c > node_off[node] as usize {
                        node_cum[c - 1]
                    } else {
                        0
                    };
                    node_order[c] = o as u32;
                    node_cum[c] = prev.saturating_add(h);
                    node_cur[node] += 1;
                }
            });
            for b in parts.into_iter().flatten() {
                if let Some(c) = leaf_cur.get_mut(b) {
                    if let Some(slot) = leaf_order.get_mut(*c as usize) {
                        *slot = o as u32;
                        *c += 1;
                    }
                }
            }
        }
        HitIndex {
            tree_size,
            node_off,
            node_order,
            node_cum,
            leaf_off,
            leaf_order,
        }
    }

    pub(super) fn heap_bytes(&self) -> usize {
        (self.node_off.capacity()
            + self.node_order.capacity()
            + self.leaf_off.capacity()
            + self.leaf_order.capacity())
            * 4
            + self.node_cum.capacity() * 8
    }

    fn bucket(&self, x: f64) -> usize {
        (x / HIT_BUCKET_STEPS as f64) as usize
    }

    /// The slide in progress at `x`: (freed order, bytes not yet slid away).
    pub(super) fn slide_at(&self, l: &Layout, x: f64) -> Option<(u32, f64)> {
        slide_at(l, x)
    }

    /// Bytes of the elements live at `x` with push order `< o`, plus the part of a sliding free
    /// below `o` not yet slid away: the bottom at `x` of the element with order `o`.
    pub(super) fn bytes_below(&self, l: &Layout, o: u32, x: f64) -> f64 {
        let (settled, sliding) = self.below_parts(l, o, x);
        settled as f64 + sliding
    }

    /// [`HitIndex::bytes_below`] as (live elements below, part of a sliding free below).
    pub(super) fn below_parts(&self, l: &Layout, o: u32, x: f64) -> (u64, f64) {
        let b = self.bucket(x);
        let mut sum: u64 = 0;
        let mut node = self.tree_size + b;
        while node >= 1 {
            if let (Some(&a), Some(&z)) = (self.node_off.get(node), self.node_off.get(node + 1)) {
                if let Some(list) = self.node_order.get(a as usize..z as usize) {
                    let k = list.partition_point(|&v| v < o);
                    if k > 0 {
                        sum = sum.saturating_add(
                            self.node_cum.get(a as usize + k - 1).copied().unwrap_or(0),
                        );
                    }
                }
            }
            node >>= 1;
        }
        if let (Some(&a), Some(&z)) = (self.leaf_off.get(b), self.leaf_off.get(b + 1)) {
            for &v in self.leaf_order.get(a as usize..z as usize).unwrap_or(&[]) {
                if v >= o {
                    break;
                }
                let Some(e) = l.element_at_order(v) else {
                    continue;
                };
                let e = e as usize;
                if (l.start_of(e as u32) as f64) <= x && x < l.end_of(e as u32) as f64 {
                    sum = sum.saturating_add(l.height_bytes(e as u32));
                }
            }
        }
        let extra = match self.slide_at(l, x) {
            Some((so, part)) if so < o => part,
            _ => 0.0,
        };
        (sum, extra)
    }

    /// Push orders of the elements live at `x` (unsorted).
    pub(super) fn live_orders(&self, l: &Layout, x: f64) -> Vec<u32> {
        let b = self.bucket(x);
        let mut out = Vec::new();
        let mut node = self.tree_size + b;
        while node >= 1 {
            if let (Some(&a), Some(&z)) = (self.node_off.get(node), self.node_off.get(node + 1)) {
                out.extend_from_slice(self.node_order.get(a as usize..z as usize).unwrap_or(&[]));
            }
            node >>= 1;
        }
        if let (Some(&a), Some(&z)) = (self.leaf_off.get(b), self.leaf_off.get(b + 1)) {
            for &v in self.leaf_order.get(a as usize..z as usize).unwrap_or(&[]) {
                if let Some(e) = l.element_at_order(v) {
                    let e = e as usize;
                    if (l.start_of(e as u32) as f64) <= x && x < l.end_of(e as u32) as f64 {
                        out.push(v);
                    }
                }
            }
        }
        out
    }
}

/// The slide in progress at `x`: (freed order, bytes not yet slid away).
pub(super) fn slide_at(l: &Layout, x: f64) -> Option<(u32, f64)> {
    let i = l.slides.partition_point(|s| (s.step as f64) <= x);
    let s = l.slides.get(i.checked_sub(1)?)?;
    let into = x - s.step as f64;
    (into < SLIDE_STEPS as f64).then(|| {
        (
            s.order,
            l.slide_size(s) as f64 * (1.0 - into / SLIDE_STEPS as f64),
        )
    })
}
