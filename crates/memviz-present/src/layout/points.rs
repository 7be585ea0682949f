//! An element's polyline and trapezoids, in either [`PointMode`].

use super::*;

impl Layout {
    /// The element's polyline `(timestep, bottom_bytes)`, memory_viz's series, in either mode.
    pub fn points(&self, element: u32) -> Points<'_> {
        let e = element as usize;
        let Some(o) = self.order(element) else {
            return Points(PointsInner::Empty);
        };
        if self.mode == PointMode::Exact {
            let (a, b) = match (self.point_offsets.get(e), self.point_offsets.get(e + 1)) {
                (Some(&a), Some(&b)) => (a as usize, b as usize),
                _ => return Points(PointsInner::Empty),
            };
            return match (self.point_steps.get(a..b), self.point_bottoms.get(a..b)) {
                (Some(s), Some(bt)) => Points(PointsInner::Exact {
                    steps: s.iter(),
                    bottoms: bt.iter(),
                }),
                _ => Points(PointsInner::Empty),
            };
        }
        let (start, end) = (self.start_of(element), self.end_of(element));
        let lo = self.slides.partition_point(|s| s.step <= start);
        let hi = self.slides.partition_point(|s| s.step < end);
        let bottom = self.base_bytes(element).unwrap_or(0);
        Points(PointsInner::Compact(CompactPoints::new(
            self,
            o,
            (lo, hi),
            bottom,
            CompactState::Start,
            end,
        )))
    }

    /// The element's trapezoids, left to right (zero-width ones skipped).
    pub fn pieces(&self, element: u32) -> Pieces<'_> {
        Pieces {
            points: self.points(element),
            prev: None,
            height_bytes: self.height_bytes(element),
        }
    }

    /// The element's polyline clipped to `[x0_step, x1_step]`, with interpolated end points:
    /// what a viewport needs, in O(log + points inside) in both modes (compact mode starts the
    /// slide enumeration at `x0_step`). Empty when the span misses the range.
    pub fn clipped_points(&self, element: u32, x0_step: f64, x1_step: f64) -> Vec<(f64, f64)> {
        let Some((start, end)) = self.span(element) else {
            return Vec::new();
        };
        let a = x0_step.max(start as f64);
        let b = x1_step.min(end as f64);
        if a.is_nan() || b.is_nan() || a > b {
            return Vec::new();
        }
        let mut out = Vec::new();
        let Some(first) = self.bottom_at(element, a) else {
            return out;
        };
        out.push((a, first));
        let e = element as usize;
        if self.mode == PointMode::Exact {
            let (Some(&pa), Some(&pb)) = (self.point_offsets.get(e), self.point_offsets.get(e + 1))
            else {
                return out;
            };
            let steps = self
                .point_steps
                .get(pa as usize..pb as usize)
                .unwrap_or(&[]);
            let bottoms = self
                .point_bottoms
                .get(pa as usize..pb as usize)
                .unwrap_or(&[]);
            let i0 = steps.partition_point(|&s| (s as f64) <= a);
            let i1 = steps.partition_point(|&s| (s as f64) < b);
            for i in i0..i1.max(i0) {
                if let (Some(&s), Some(&bt)) = (steps.get(i), bottoms.get(i)) {
                    out.push((s as f64, bt as f64));
                }
            }
        } else if let Some(o) = self.order(element) {
            // Qualifying slides whose window ends after `a` and starts before `b`.
            let lo = self
                .slides
                .partition_point(|s| (s.step as f64) + (SLIDE_STEPS as f64) <= a)
                .max(self.slides.partition_point(|s| s.step <= start));
            let hi = self
                .slides
                .partition_point(|s| (s.step as f64) < b)
                .min(self.slides.partition_point(|s| s.step < end));
            let mut it = CompactPoints::new(self, o, (lo, hi), 0, CompactState::Slides, end);
            let mut running: Option<u64> = None;
            while let Some(sl) = it.next_slide() {
                let pre = *running.get_or_insert_with(|| {
                    self.hit_index()
                        .bytes_below(self, o, sl.step as f64)
                        .round() as u64
                });
                let post = pre.saturating_sub(self.slide_size(&sl));
                let t1 = sl.step.saturating_add(SLIDE_STEPS);
                if (sl.step as f64) > a {
                    out.push((sl.step as f64, pre as f64));
                }
                if (t1 as f64) > a && (t1 as f64) < b {
                    out.push((t1 as f64, post as f64));
                }
                running = Some(post);
            }
        }
        if b > a {
            if let Some(last) = self.bottom_at(element, b) {
                out.push((b, last));
            }
        }
        out
    }

    /// The element's bottom at `x_step` (linear between points), `None` outside its span.
    pub fn bottom_at(&self, element: u32, x_step: f64) -> Option<f64> {
        let (start, end) = self.span(element)?;
        if !(start as f64..=end as f64).contains(&x_step) {
            return None;
        }
        if self.mode == PointMode::Exact {
            let e = element as usize;
            let a = *self.point_offsets.get(e)? as usize;
            let b = *self.point_offsets.get(e + 1)? as usize;
            let steps = self.point_steps.get(a..b)?;
            let bottoms = self.point_bottoms.get(a..b)?;
            // First point with step > x.
            let i = steps.partition_point(|&s| (s as f64) <= x_step);
            if i == 0 {
                return bottoms.first().map(|&b| b as f64);
            }
            let (s0, b0) = (*steps.get(i - 1)?, *bottoms.get(i - 1)?);
            let Some((&s1, &b1)) = steps.get(i).zip(bottoms.get(i)) else {
                return Some(b0 as f64);
            };
            if s1 == s0 {
                return Some(b1 as f64);
            }
            let f = (x_step - s0 as f64) / (s1 - s0) as f64;
            return Some(b0 as f64 + (b1 as f64 - b0 as f64) * f);
        }
        let o = self.order(element)?;
        if x_step >= end as f64 {
            // Every slide window of the element ends by `end`: the settled bytes below just before.
            let x = (end.saturating_sub(1)).max(start) as f64;
            return Some(self.hit_index().below_parts(self, o, x).0 as f64);
        }
        Some(self.hit_index().bytes_below(self, o, x_step))
    }
}

#[derive(Clone, Copy, Debug)]
enum CompactState {
    Start,
    Slides,
    /// The second point of a slide, then back to `Slides`.
    SlideEnd(u32, u64),
    End,
    Done,
}

/// Iterator over an element's `(timestep, bottom_bytes)` points.
#[derive(Clone, Debug)]
pub struct Points<'a>(PointsInner<'a>);

#[derive(Clone, Debug)]
enum PointsInner<'a> {
    Empty,
    Exact {
        steps: std::slice::Iter<'a, u32>,
        bottoms: std::slice::Iter<'a, u64>,
    },
    Compact(CompactPoints<'a>),
}

#[derive(Clone, Debug)]
struct CompactPoints<'a> {
    layout: &'a Layout,
    order: u32,
    /// Slides with index in `lo..hi` happen during the element's life.
    lo: usize,
    hi: usize,
    /// Pending min-tree nodes `(node, first block, end block)`.
    dfs: Vec<(usize, usize, usize)>,
    /// Slides `scan.0..scan.1` of a leaf block still to look at.
    scan: (usize, usize),
    bottom: u64,
    state: CompactState,
    end: u32,
}

impl<'a> CompactPoints<'a> {
    fn new(
        layout: &'a Layout,
        order: u32,
        (lo, hi): (usize, usize),
        bottom: u64,
        state: CompactState,
        end: u32,
    ) -> Self {
        let dfs = if lo < hi {
            vec![(1, 0, layout.slide_tree_size)]
        } else {
            Vec::new()
        };
        CompactPoints {
            layout,
            order,
            lo,
            hi,
            dfs,
            scan: (0, 0),
            bottom,
            state,
            end,
        }
    }

    /// The next slide (in step order) during the element's life below its order.
    fn next_slide(&mut self) -> Option<Slide> {
        let l = self.layout;
        loop {
            while self.scan.0 < self.scan.1 {
                let s = l.slides.get(self.scan.0).copied();
                self.scan.0 += 1;
                if let Some(s) = s.filter(|s| s.order < self.order) {
                    return Some(s);
                }
            }
            let (node, a, b) = self.dfs.pop()?;
            if b * SLIDE_BLOCK <= self.lo
                || a * SLIDE_BLOCK >= self.hi
                || l.slide_tree.get(node).is_none_or(|&m| m >= self.order)
            {
                continue;
            }
            if b - a == 1 {
                self.scan = (self.lo.max(a * SLIDE_BLOCK), self.hi.min(b * SLIDE_BLOCK));
                continue;
            }
            let mid = (a + b) / 2;
            self.dfs.push((2 * node + 1, mid, b));
            self.dfs.push((2 * node, a, mid));
        }
    }

    fn next_point(&mut self) -> Option<(u32, u64)> {
        loop {
            match self.state {
                CompactState::Start => {
                    self.state = CompactState::Slides;
                    let e = self.layout.element_at_order(self.order)?;
                    return Some((self.layout.start_of(e), self.bottom));
                }
                CompactState::Slides => match self.next_slide() {
                    Some(s) => {
                        let b = self.bottom;
                        self.bottom = b.saturating_sub(self.layout.slide_size(&s));
                        self.state =
                            CompactState::SlideEnd(s.step.saturating_add(SLIDE_STEPS), self.bottom);
                        return Some((s.step, b));
                    }
                    None => self.state = CompactState::End,
                },
                CompactState::SlideEnd(step, b) => {
                    self.state = CompactState::Slides;
                    return Some((step, b));
                }
                CompactState::End => {
                    self.state = CompactState::Done;
                    return Some((self.end, self.bottom));
                }
                CompactState::Done => return None,
            }
        }
    }
}

impl Iterator for Points<'_> {
    type Item = (u32, u64);
    fn next(&mut self) -> Option<(u32, u64)> {
        match &mut self.0 {
            PointsInner::Empty => None,
            PointsInner::Exact { steps, bottoms } => Some((*steps.next()?, *bottoms.next()?)),
            PointsInner::Compact(c) => c.next_point(),
        }
    }
}

/// Iterator over an element's [`Piece`]s.
#[derive(Clone, Debug)]
pub struct Pieces<'a> {
    points: Points<'a>,
    prev: Option<(u32, u64)>,
    height_bytes: u64,
}

impl Iterator for Pieces<'_> {
    type Item = Piece;
    fn next(&mut self) -> Option<Piece> {
        loop {
            let p = self.points.next()?;
            let Some(prev) = self.prev.replace(p) else {
                continue;
            };
            if p.0 > prev.0 {
                return Some(Piece {
                    x0_step: prev.0,
                    x1_step: p.0,
                    bottom0_bytes: prev.1,
                    bottom1_bytes: p.1,
                    height_bytes: self.height_bytes,
                });
            }
        }
    }
}
