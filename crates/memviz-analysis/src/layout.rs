//! The Active Memory Timeline layout (SEMANTICS.md §3.4) with **every element drawn**: no
//! 15 000-element cap and no summarized band. The geometry is memory_viz's, with the §9 fixes:
//! the y range is the maximum over all timesteps (never clipped), and there is no band to lag.
//!
//! # How it works
//! *Timesteps.* The initially-present elements ([`Timeline::initially_present`], bottom first)
//! are stacked at timestep 0 without a step. Every alloc/free step of the timeline then costs one
//! timestep; a free whose element is not on top of the stack costs three more, during which
//! everything above it slides down by the freed size (a linear ramp from `t` to `t + 3`). The
//! freed bytes are still counted during the slide. [`Layout::live_at_step`] (memory_viz's
//! `max_at_time`) has one value per timestep, [`Layout::step_event`] maps each timestep to the
//! trace event that produced it (the three slide steps map to the free's event).
//!
//! *Stack order.* Elements are pushed on top and never move up, so the stack order of two live
//! elements is their push order ([`Layout::order`]). An element's bottom at any `x` is therefore
//! "bytes of the live elements pushed before it" plus, during a slide, the part of the freed
//! element that has not yet slid away. At most one slide is in progress at any `x`: the step
//! after a slide window starts at its end.
//!
//! *Polylines.* Per element memory_viz emits `(t_push, base)`, then `(t, b)` and `(t + 3, b − s)`
//! for every free of size `s` below it during its life, then `(t_end, b_last)`. Each free costs
//! two points for every element above it, which is inherent to that output, so the build runs
//! in two passes:
//! 1. a replay with a lazily popped stack (the top is the live element with the largest push
//!    order; a free is O(1) amortised) records push/end steps, base bottoms, the list of
//!    *slides* (frees that had something above: step, order, size; the shared "offset change"
//!    list) and, with a Fenwick tree over push orders, each element's number of slides below it.
//!    That gives the exact point count in O((elements + steps) · log elements) before anything
//!    big is allocated;
//! 2. in [`PointMode::Exact`] (the default), a second replay with a sorted stack fills the flat
//!    polylines ([`Layout::point_offsets`] / [`Layout::point_steps`] /
//!    [`Layout::point_bottoms`], 12 bytes per point). Finding the freed slot is a binary search;
//!    the removal's memmove touches only the elements above, which get two points each anyway.
//!
//! In [`PointMode::Compact`] no polyline is stored: an element's points are derived on demand
//! from its push step, base and the slides list: `bottom(t) = base − Σ s_f · ramp(t − t_f)` over
//! the slides `f` during its life whose order is below its own. A min-tree over the slides'
//! orders makes that enumeration output-sensitive (O((k + 1) log slides) for `k` points), so
//! [`Layout::pieces`] and [`Layout::points`] give the same output in both modes. Exact mode
//! falls back to compact when the exact polylines would exceed
//! [`LayoutOptions::max_exact_points`] (an explicit, reported decision, never a silent cap).
//! [`Layout::clipped_points`] gives a polyline clipped to a viewport in O(log + points inside)
//! in both modes, which is what a renderer of a compact layout draws from.
//!
//! Measured (release, 2 busy cores): the 150 MB synthetic trace (1.23 M events, 409 k elements,
//! 1.97 M timesteps, 384 k slides) needs 66 M exact points: compact builds in 70–85 ms into
//! 62 MB (hit index 15 MB included), exact in 0.7–1.1 s into 850 MB. The largest real corpus
//! file (7.8 k elements) needs 1 M points: 5–8 ms, 12.8 MB exact, 1 MB compact. A hit test takes
//! 2–6 µs.
//!
//! *Hit testing.* The timesteps are cut into buckets of [`HIT_BUCKET_STEPS`]; a segment tree
//! over the buckets holds each element in the O(log) canonical nodes that its life covers
//! entirely (lists sorted by push order, with cumulative sizes), and each bucket holds the
//! elements that start or end inside it. The bytes below push order `o` at `x` are then a sum of
//! O(log buckets) binary searches plus one bucket scan, and they grow with `o`, so the element
//! under `(x, y)` is a binary search over push orders: O(log² · log) per query, independent of
//! the number of points. Cost: 12 bytes per (element, canonical node) entry, plus 4 bytes per
//! bucket entry and per node (see [`Layout::hit_index_heap_bytes`]).

use crate::steps::StepValues;
use crate::timeline::Timeline;

mod reference;
pub use reference::reference_series;

/// [`Layout::step_event`] of a timestep with no trace event (the flat-graph quirk of §3.2, where
/// an initially-present element is moved into the actions).
pub const NO_EVENT: u32 = u32::MAX;
/// Timesteps per hit-index bucket.
pub const HIT_BUCKET_STEPS: u32 = 64;
/// Timesteps a slide lasts.
pub const SLIDE_STEPS: u32 = 3;
const NO_ORDER: u32 = u32::MAX;
/// `end_step` of an element still live at the end (its span ends at the last timestep): kept
/// apart from one freed by the last action, so [`Layout::free_step`] can tell them apart.
const NO_END: u32 = u32::MAX;
/// Slides per leaf of the compact mode's min-tree (scanned linearly).
const SLIDE_BLOCK: usize = 16;

/// How per-element polylines are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
pub enum PointMode {
    /// Every point of every element stored flat (memory_viz's output, 12 bytes per point).
    #[default]
    Exact,
    /// No stored points: derived on demand from push steps, bases and the slides list.
    Compact,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutOptions {
    pub mode: PointMode,
    /// In exact mode, use compact instead when the polylines would need more points than this
    /// (and always above `u32::MAX`). Default 2^24 points (192 MiB of points): a 150 MB
    /// synthetic trace needs 66 M points (0.8 GB), the largest real corpus file 1 M.
    pub max_exact_points: u64,
}

impl Default for LayoutOptions {
    fn default() -> Self {
        LayoutOptions {
            mode: PointMode::Exact,
            max_exact_points: 1 << 24,
        }
    }
}

/// A free that had something above it: every live element with a larger push order slides down
/// by the freed element's size ([`Layout::slide_size`]) between `step` and `step + 3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Slide {
    pub step: u32,
    /// Push order of the freed element.
    pub order: u32,
}

/// One trapezoid of an element: from `(x0_step, bottom0_bytes)` to `(x1_step, bottom1_bytes)`,
/// `height_bytes` high.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub x0_step: u32,
    pub x1_step: u32,
    pub bottom0_bytes: u64,
    pub bottom1_bytes: u64,
    pub height_bytes: u64,
}

/// The stacked layout of one device's timeline. Element ids are the [`Timeline`]'s.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    mode: PointMode,
    height_bytes: Vec<u64>,
    start_step: Vec<u32>,
    end_step: Vec<u32>,
    base_bytes: Vec<u64>,
    order: Vec<u32>,
    by_order: Vec<u32>,
    /// Timesteps (see [`crate::steps`] for the per-action columns below).
    steps: u32,
    /// Live bytes after each action ([`Layout::live_at_step`]).
    action_live: Vec<u64>,
    /// The trace event of each action ([`Layout::step_event`]).
    action_event: Vec<u32>,
    /// `max(live_at_step)` (0 when there are no timesteps): the y range.
    pub peak_bytes: u64,
    /// The first timestep reaching [`Layout::peak_bytes`].
    pub peak_step: u32,
    /// Frees with something above them, in step order (the shared offset-change list).
    pub slides: Vec<Slide>,
    exact_point_count: u64,
    fell_back: bool,
    point_offsets: Vec<u32>,
    point_steps: Vec<u32>,
    point_bottoms: Vec<u64>,
    /// Min push order per node over blocks of [`SLIDE_BLOCK`] slides (compact mode only),
    /// `2 * slide_tree_size` long.
    slide_tree: Vec<u32>,
    slide_tree_size: usize,
    /// Built on first use (hover, a compact polyline, the live set): the first frame does not
    /// wait for it, and a layout never hovered never pays for it.
    hit: std::sync::OnceLock<HitIndex>,
}

/// Builds the layout with [`LayoutOptions::default`].
pub fn build(timeline: &Timeline) -> Layout {
    Layout::build(timeline, LayoutOptions::default())
}

struct Fenwick(Vec<u32>);
impl Fenwick {
    fn new(n: usize) -> Self {
        Fenwick(vec![0; n + 1])
    }
    fn add(&mut self, i: usize) {
        let mut i = i + 1;
        while i < self.0.len() {
            self.0[i] = self.0[i].saturating_add(1);
            i += i & i.wrapping_neg();
        }
    }
    /// Sum over indices `< i`.
    fn prefix(&self, i: usize) -> u32 {
        let mut i = i.min(self.0.len().saturating_sub(1));
        let mut s = 0u32;
        while i > 0 {
            s = s.saturating_add(self.0[i]);
            i &= i - 1;
        }
        s
    }
}

struct PointSink {
    steps: Vec<u32>,
    bottoms: Vec<u64>,
    cursor: Vec<u32>,
}
impl PointSink {
    fn write(&mut self, e: usize, step: u32, bottom: u64) {
        let Some(c) = self.cursor.get_mut(e) else {
            return;
        };
        if let (Some(s), Some(b)) = (
            self.steps.get_mut(*c as usize),
            self.bottoms.get_mut(*c as usize),
        ) {
            *s = step;
            *b = bottom;
            *c += 1;
        }
    }
}

/// The replay order of §3.2/§3.4: initially present elements (after the flat-graph quirk), then
/// the actions as `(element, event)`.
fn replay_lists(timeline: &Timeline) -> (Vec<u32>, Vec<(u32, u32)>) {
    let mut initial = timeline.initially_present.clone();
    let mut actions: Vec<(u32, u32)> = timeline
        .steps
        .iter()
        .map(|s| (s.element, s.event))
        .collect();
    if actions.is_empty() {
        if let Some(last) = initial.pop() {
            actions.push((last, NO_EVENT));
        }
    }
    (initial, actions)
}

impl Layout {
    pub fn build(timeline: &Timeline, options: LayoutOptions) -> Layout {
        let n = timeline.elements.len();
        let (initial, actions) = replay_lists(timeline);
        let mut l = Layout {
            height_bytes: timeline.elements.iter().map(|e| e.size_bytes).collect(),
            start_step: vec![0; n],
            end_step: vec![0; n],
            base_bytes: vec![0; n],
            order: vec![NO_ORDER; n],
            by_order: Vec::with_capacity(n),
            ..Layout::default()
        };
        // Slides below each element: (slides so far at push) then (slides below during its life).
        let mut slide_count: Vec<u32> = vec![0; n];
        let mut fenwick = Fenwick::new(n);
        // Lazy stack of push orders: the last entry is always live.
        let mut stack: Vec<u32> = Vec::new();
        let mut ended: Vec<bool> = vec![false; n];
        let mut drawn: u64 = 0;
        let mut t: u32 = 0;
        l.action_live.reserve_exact(actions.len());
        l.action_event.reserve_exact(actions.len());

        let push = |l: &mut Layout,
                    stack: &mut Vec<u32>,
                    slide_count: &mut [u32],
                    drawn: &mut u64,
                    t: u32,
                    e: usize| {
            let o = l.by_order.len() as u32;
            l.order[e] = o;
            l.by_order.push(e as u32);
            l.start_step[e] = t;
            l.base_bytes[e] = *drawn;
            *drawn = drawn.saturating_add(l.height_bytes[e]);
            stack.push(o);
            slide_count[e] = l.slides.len() as u32;
        };
        for &e in &initial {
            let e = e as usize;
            if e < n && l.order[e] == NO_ORDER {
                push(&mut l, &mut stack, &mut slide_count, &mut drawn, t, e);
            }
        }
        for &(e, event) in &actions {
            let e = e as usize;
            if e >= n {
                continue;
            }
            if l.order[e] == NO_ORDER {
                push(&mut l, &mut stack, &mut slide_count, &mut drawn, t, e);
                l.push_action(drawn, event, t);
                t = t.saturating_add(1);
            } else {
                l.push_action(drawn, event, t);
                t = t.saturating_add(1);
                if ended[e] {
                    // Cannot come from timeline::build (an element is pushed and freed once).
                    continue;
                }
                ended[e] = true;
                l.end_step[e] = t;
                let o = l.order[e];
                slide_count[e] = fenwick.prefix(o as usize).saturating_sub(slide_count[e]);
                if stack.last() == Some(&o) {
                    stack.pop();
                    while let Some(&top) = stack.last() {
                        match l.by_order.get(top as usize) {
                            Some(&x) if ended[x as usize] => {
                                stack.pop();
                            }
                            _ => break,
                        }
                    }
                } else {
                    l.slides.push(Slide { step: t, order: o });
                    fenwick.add(o as usize);
                    t = t.saturating_add(SLIDE_STEPS);
                }
                drawn = drawn.saturating_sub(l.height_bytes[e]);
            }
        }
        // Still on the stack at the end.
        let mut points: u64 = 0;
        for &e in &l.by_order {
            let e = e as usize;
            if !ended[e] {
                l.end_step[e] = NO_END;
                slide_count[e] = fenwick
                    .prefix(l.order[e] as usize)
                    .saturating_sub(slide_count[e]);
            }
            points += 2 + 2 * slide_count[e] as u64;
        }
        l.exact_point_count = points;
        l.steps = t;
        l.slides.shrink_to_fit();

        let exact = options.mode == PointMode::Exact
            && points <= options.max_exact_points
            && points < u32::MAX as u64;
        l.fell_back = options.mode == PointMode::Exact && !exact;
        if exact {
            l.mode = PointMode::Exact;
            l.fill_points(&initial, &actions, &slide_count);
        } else {
            l.mode = PointMode::Compact;
            l.build_slide_tree();
        }
        l
    }

    /// Pass 2 of exact mode: replay with a sorted stack and write every point.
    fn fill_points(&mut self, initial: &[u32], actions: &[(u32, u32)], slide_count: &[u32]) {
        let n = self.height_bytes.len();
        let mut offsets = Vec::with_capacity(n + 1);
        let mut acc: u32 = 0;
        offsets.push(0);
        for (&o, &c) in self.order.iter().zip(slide_count) {
            if o != NO_ORDER {
                acc = acc.saturating_add(2 + 2 * c);
            }
            offsets.push(acc);
        }
        let total = acc as usize;
        let mut out = PointSink {
            steps: vec![0u32; total],
            bottoms: vec![0u64; total],
            cursor: offsets[..n].to_vec(),
        };
        // The same replay as pass 1, now with real removals.
        let mut stack: Vec<u32> = Vec::new();
        let mut seen = vec![false; n];
        let mut ended = vec![false; n];
        let mut last_bottom: Vec<u64> = self.base_bytes.clone();
        let mut t: u32 = 0;
        for &e in initial {
            let e = e as usize;
            if e < n && self.order[e] != NO_ORDER && !seen[e] {
                seen[e] = true;
                stack.push(self.order[e]);
                out.write(e, t, self.base_bytes[e]);
            }
        }
        for &(e, _) in actions {
            let e = e as usize;
            if e >= n || self.order[e] == NO_ORDER {
                continue;
            }
            if !seen[e] {
                seen[e] = true;
                stack.push(self.order[e]);
                out.write(e, t, self.base_bytes[e]);
                t = t.saturating_add(1);
                continue;
            }
            t = t.saturating_add(1);
            if ended[e] {
                continue;
            }
            ended[e] = true;
            let o = self.order[e];
            out.write(e, t, last_bottom[e]);
            let Ok(pos) = stack.binary_search(&o) else {
                continue;
            };
            let size = self.height_bytes[e];
            if pos + 1 < stack.len() {
                for &above in &stack[pos + 1..] {
                    let Some(&x) = self.by_order.get(above as usize) else {
                        continue;
                    };
                    let x = x as usize;
                    let b = last_bottom[x];
                    let nb = b.saturating_sub(size);
                    out.write(x, t, b);
                    out.write(x, t.saturating_add(SLIDE_STEPS), nb);
                    last_bottom[x] = nb;
                }
                t = t.saturating_add(SLIDE_STEPS);
            }
            stack.remove(pos);
        }
        for &o in &stack {
            if let Some(&x) = self.by_order.get(o as usize) {
                out.write(x as usize, t, last_bottom[x as usize]);
            }
        }
        self.point_offsets = offsets;
        self.point_steps = out.steps;
        self.point_bottoms = out.bottoms;
    }

    /// One action's timestep `t`: its live bytes and event, and the peak so far.
    fn push_action(&mut self, drawn: u64, event: u32, t: u32) {
        if drawn > self.peak_bytes || self.action_live.is_empty() {
            self.peak_bytes = drawn;
            self.peak_step = t;
        }
        self.action_live.push(drawn);
        self.action_event.push(event);
    }

    fn build_slide_tree(&mut self) {
        let size = self.slides.len().div_ceil(SLIDE_BLOCK).next_power_of_two();
        let mut tree = vec![NO_ORDER; 2 * size];
        for (i, s) in self.slides.iter().enumerate() {
            let leaf = &mut tree[size + i / SLIDE_BLOCK];
            *leaf = (*leaf).min(s.order);
        }
        for i in (1..size).rev() {
            tree[i] = tree[2 * i].min(tree[2 * i + 1]);
        }
        self.slide_tree = tree;
        self.slide_tree_size = size;
    }

    /// The mode actually used ([`PointMode::Compact`] after a fallback).
    pub fn mode(&self) -> PointMode {
        self.mode
    }
    /// True when exact mode was asked for but the points exceeded the limit.
    pub fn fell_back_to_compact(&self) -> bool {
        self.fell_back
    }
    /// Points memory_viz would emit for all elements (whether or not they are stored).
    pub fn exact_point_count(&self) -> u64 {
        self.exact_point_count
    }
    /// Points held in memory (0 in compact mode).
    pub fn stored_point_count(&self) -> usize {
        self.point_steps.len()
    }
    /// Number of timesteps: the x range is `[0, steps]`.
    pub fn step_count(&self) -> u32 {
        self.steps
    }
    /// Live bytes during each timestep (memory_viz's `max_at_time`): the freed bytes still count
    /// during a slide.
    pub fn live_at_step(&self) -> StepValues<'_, u64> {
        StepValues::new(&self.action_live, &self.slides, self.steps)
    }
    /// The trace event behind each timestep ([`NO_EVENT`] for none); the slide of a free
    /// repeats its event. Non-decreasing apart from a [`NO_EVENT`] step.
    pub fn step_event(&self) -> StepValues<'_, u32> {
        StepValues::new(&self.action_event, &self.slides, self.steps)
    }
    /// Bytes a slide moves down: the size of the freed element.
    pub fn slide_size(&self, slide: &Slide) -> u64 {
        self.element_at_order(slide.order)
            .map_or(0, |e| self.height_bytes(e))
    }
    pub fn element_count(&self) -> usize {
        self.height_bytes.len()
    }
    pub fn height_bytes(&self, element: u32) -> u64 {
        self.height_bytes
            .get(element as usize)
            .copied()
            .unwrap_or(0)
    }
    /// Push order (stack position among everything ever pushed), `None` if never drawn.
    pub fn order(&self, element: u32) -> Option<u32> {
        self.order
            .get(element as usize)
            .copied()
            .filter(|&o| o != NO_ORDER)
    }
    /// The element with push order `order`.
    pub fn element_at_order(&self, order: u32) -> Option<u32> {
        self.by_order.get(order as usize).copied()
    }
    /// `[first, last]` timestep of the element's polygon.
    pub fn span(&self, element: u32) -> Option<(u32, u32)> {
        self.order(element)?;
        let e = element as usize;
        Some((*self.start_step.get(e)?, self.end_of(e)))
    }
    /// The timestep of the element's free (its span ends right after it), `None` if it is
    /// never freed (or never drawn).
    pub fn free_step(&self, element: u32) -> Option<u32> {
        self.order(element)?;
        let end = *self.end_step.get(element as usize)?;
        (end != NO_END).then(|| end.saturating_sub(1))
    }
    /// The end of element `e`'s span (the last timestep for one never freed).
    fn end_of(&self, e: usize) -> u32 {
        match self.end_step.get(e) {
            Some(&NO_END) => self.steps,
            Some(&end) => end,
            None => 0,
        }
    }
    /// Bottom when pushed; `base + height` is memory_viz's "total memory used after allocation".
    pub fn base_bytes(&self, element: u32) -> Option<u64> {
        self.order(element)?;
        self.base_bytes.get(element as usize).copied()
    }
    /// Flat polylines (exact mode): element `e`'s points are `point_offsets[e]..point_offsets[e+1]`.
    pub fn point_offsets(&self) -> &[u32] {
        &self.point_offsets
    }
    pub fn point_steps(&self) -> &[u32] {
        &self.point_steps
    }
    pub fn point_bottoms(&self) -> &[u64] {
        &self.point_bottoms
    }

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
        let (start, end) = (self.start_step[e], self.end_of(e));
        let lo = self.slides.partition_point(|s| s.step <= start);
        let hi = self.slides.partition_point(|s| s.step < end);
        let bottom = self.base_bytes[e];
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

    /// Live bytes at `x_step` (interpolated during slides), as the plot's outline shows it.
    pub fn live_bytes_at(&self, x_step: f64) -> f64 {
        if !(0.0..self.step_count() as f64).contains(&x_step) {
            return 0.0;
        }
        self.hit_index()
            .bytes_below(self, self.by_order.len() as u32, x_step)
    }

    /// The element drawn at `(x_step, y_bytes)`, if any. O(log² n · log steps), no allocation.
    pub fn hit(&self, x_step: f64, y_bytes: f64) -> Option<u32> {
        if !(0.0..self.step_count() as f64).contains(&x_step) || y_bytes.is_nan() || y_bytes < 0.0 {
            return None;
        }
        // Largest order o with bytes_below(o) <= y (bytes_below grows with o; bytes_below(0) = 0).
        let (mut lo, mut hi) = (0u32, self.by_order.len() as u32);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.hit_index().bytes_below(self, mid, x_step) <= y_bytes {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let e = *self.by_order.get(lo as usize)?;
        let (start, end) = (self.start_step[e as usize], self.end_of(e as usize));
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
            let Some(&e) = self.by_order.get(o as usize) else {
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
    fn hit_index(&self) -> &HitIndex {
        self.hit.get_or_init(|| HitIndex::build(self))
    }

    /// The slide in progress during timestep `step`: (freed element's push order, bytes not
    /// yet slid away). Everything pushed after it sits that much higher.
    pub fn slide_at_step(&self, step: u32) -> Option<(u32, f64)> {
        slide_at(self, f64::from(step))
    }

    /// Approximate heap bytes of the layout, hit index included.
    pub fn heap_bytes(&self) -> usize {
        (self.height_bytes.capacity() + self.base_bytes.capacity() + self.action_live.capacity())
            * 8
            + (self.start_step.capacity()
                + self.end_step.capacity()
                + self.order.capacity()
                + self.by_order.capacity()
                + self.action_event.capacity()
                + self.point_offsets.capacity()
                + self.point_steps.capacity()
                + self.slide_tree.capacity())
                * 4
            + self.point_bottoms.capacity() * 8
            + self.slides.capacity() * std::mem::size_of::<Slide>()
            + self.hit.get().map_or(0, HitIndex::heap_bytes)
    }
    /// Heap bytes of the layout without the hit index (built or not).
    pub fn heap_bytes_without_hit(&self) -> usize {
        self.heap_bytes() - self.hit.get().map_or(0, HitIndex::heap_bytes)
    }
    /// Heap bytes of the hit index alone (building it if it is not built yet).
    pub fn hit_index_heap_bytes(&self) -> usize {
        self.hit_index().heap_bytes()
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
                    let e = *self.layout.by_order.get(self.order as usize)? as usize;
                    return Some((*self.layout.start_step.get(e)?, self.bottom));
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

/// Bucketed stabbing index over timesteps (see the module docs).
#[derive(Clone, Debug, Default)]
struct HitIndex {
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
    fn build(l: &Layout) -> HitIndex {
        let steps = u64::from(l.steps);
        let bs = HIT_BUCKET_STEPS as u64;
        let buckets = steps.div_ceil(bs).max(1) as usize;
        let tree_size = buckets.next_power_of_two();
        // Elements live at the end extend to the whole tree (one root entry for those live
        // throughout): no query reaches past the last timestep.
        let full_end = tree_size as u64 * bs;
        // (full bucket range, partial buckets) of an element.
        let classify = |e: usize| -> (usize, usize, [Option<usize>; 2]) {
            let start = l.start_step[e] as u64;
            let mut end = l.end_of(e) as u64;
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
        for &e in &l.by_order {
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
        for (o, &e) in l.by_order.iter().enumerate() {
            let (fb, lb, parts) = classify(e as usize);
            let h = l.height_bytes[e as usize];
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

    fn heap_bytes(&self) -> usize {
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
    fn slide_at(&self, l: &Layout, x: f64) -> Option<(u32, f64)> {
        slide_at(l, x)
    }

    /// Bytes of the elements live at `x` with push order `< o`, plus the part of a sliding free
    /// below `o` not yet slid away: the bottom at `x` of the element with order `o`.
    fn bytes_below(&self, l: &Layout, o: u32, x: f64) -> f64 {
        let (settled, sliding) = self.below_parts(l, o, x);
        settled as f64 + sliding
    }

    /// [`HitIndex::bytes_below`] as (live elements below, part of a sliding free below).
    fn below_parts(&self, l: &Layout, o: u32, x: f64) -> (u64, f64) {
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
                let Some(&e) = l.by_order.get(v as usize) else {
                    continue;
                };
                let e = e as usize;
                if (l.start_step[e] as f64) <= x && x < l.end_of(e) as f64 {
                    sum = sum.saturating_add(l.height_bytes[e]);
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
    fn live_orders(&self, l: &Layout, x: f64) -> Vec<u32> {
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
                if let Some(&e) = l.by_order.get(v as usize) {
                    let e = e as usize;
                    if (l.start_step[e] as f64) <= x && x < l.end_of(e) as f64 {
                        out.push(v);
                    }
                }
            }
        }
        out
    }
}

/// The slide in progress at `x`: (freed order, bytes not yet slid away).
fn slide_at(l: &Layout, x: f64) -> Option<(u32, f64)> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{Element, Origin, Step, Timeline};

    fn el(size: u64, origin: Origin) -> Element {
        Element {
            size_bytes: size,
            origin,
            free_event: None,
        }
    }

    /// The §3.6 vector as a timeline.
    fn vector() -> Timeline {
        Timeline {
            elements: vec![
                el(5, Origin::UnmatchedFree { event: 0 }),
                el(20, Origin::Alloc { event: 1 }),
                el(25, Origin::Alloc { event: 2 }),
                el(3, Origin::Alloc { event: 4 }),
                el(10, Origin::Ghost { block: 0 }),
            ],
            initially_present: vec![4, 0],
            steps: [
                (0, 0, false),
                (1, 1, true),
                (2, 2, true),
                (1, 3, false),
                (3, 4, true),
                (3, 5, false),
            ]
            .iter()
            .map(|&(element, event, is_alloc)| Step {
                element,
                event,
                is_alloc,
            })
            .collect(),
            ..Timeline::default()
        }
    }

    /// A deterministic random timeline: `n` operations on a live set, some initial elements.
    fn random_timeline(seed: u64, ops: usize, initial: usize) -> Timeline {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut rnd = move |m: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % m.max(1)
        };
        let mut t = Timeline::default();
        let mut live: Vec<u32> = Vec::new();
        for _ in 0..initial {
            let id = t.elements.len() as u32;
            t.elements
                .push(el(1 + rnd(1000), Origin::Ghost { block: id }));
            t.initially_present.push(id);
            live.push(id);
        }
        for ev in 0..ops as u32 {
            if live.is_empty() || rnd(100) < 55 {
                let id = t.elements.len() as u32;
                t.elements.push(el(rnd(1000), Origin::Alloc { event: ev }));
                t.steps.push(Step {
                    element: id,
                    event: ev,
                    is_alloc: true,
                });
                live.push(id);
            } else {
                let k = rnd(live.len() as u64) as usize;
                let id = live.remove(k);
                t.steps.push(Step {
                    element: id,
                    event: ev,
                    is_alloc: false,
                });
            }
        }
        t
    }

    fn check_against_reference(t: &Timeline) {
        check_sampled(t, 4);
    }

    fn check_sampled(t: &Timeline, samples_per_step: u32) {
        let (series, max_at_time) = reference_series(t);
        for mode in [PointMode::Exact, PointMode::Compact] {
            let l = Layout::build(
                t,
                LayoutOptions {
                    mode,
                    ..LayoutOptions::default()
                },
            );
            assert_eq!(l.mode(), mode);
            assert_eq!(l.live_at_step(), max_at_time, "{mode:?}");
            assert_eq!(l.step_event().len(), max_at_time.len());
            let total: usize = series.iter().map(|s| s.len()).sum();
            assert_eq!(l.exact_point_count() as usize, total);
            for (e, s) in series.iter().enumerate() {
                let got: Vec<(u32, u64)> = l.points(e as u32).collect();
                assert_eq!(&got, s, "{mode:?} element {e}");
            }
            assert_eq!(l.peak_bytes, max_at_time.iter().copied().max().unwrap_or(0));
            // Hit test and bottoms agree with the polylines.
            for k in 0..(l.step_count() * samples_per_step) {
                let x = (k as f64 + 0.5) / samples_per_step as f64;
                let at = l.elements_at(x as u32);
                for (e, _) in series.iter().enumerate() {
                    let e = e as u32;
                    let Some((a, b)) = l.span(e) else { continue };
                    if !((a as f64) <= x && x < b as f64) {
                        continue;
                    }
                    let bottom = l.bottom_at(e, x).expect("in span");
                    let via_index = l.hit_index().bytes_below(&l, l.order(e).expect("drawn"), x);
                    assert!((bottom - via_index).abs() < 1e-6, "{mode:?} e{e} x{x}");
                    let h = l.height_bytes(e) as f64;
                    if h > 0.0 {
                        assert_eq!(l.hit(x, bottom + h / 2.0), Some(e), "x {x} e {e}");
                    }
                    let step = x as u32;
                    if (a..b).contains(&step) {
                        assert!(at.iter().any(|p| p.1 == e), "elements_at {step} misses {e}");
                    }
                }
                assert_eq!(l.hit(x, l.live_bytes_at(x) + 1.0), None);
            }
            // Clipping to a window gives the same geometry as the full polyline.
            let steps = l.step_count() as f64;
            for (e, s) in series.iter().enumerate() {
                for (x0, x1) in [
                    (0.0, steps),
                    (1.5, steps / 2.0 + 0.25),
                    (steps / 3.0, steps - 1.0),
                ] {
                    let clipped = l.clipped_points(e as u32, x0, x1);
                    let full: Vec<(f64, f64)> =
                        s.iter().map(|&(a, b)| (a as f64, b as f64)).collect();
                    for w in clipped.windows(2) {
                        assert!(w[0].0 <= w[1].0, "{mode:?} e{e} {clipped:?}");
                    }
                    for &(x, y) in &clipped {
                        let want = interpolate(&full, x);
                        assert!(
                            (want - y).abs() < 1e-6,
                            "{mode:?} e{e} ({x0},{x1}) at {x}: {y} vs {want}; {clipped:?} {full:?}"
                        );
                    }
                    // Every full point inside the window is kept.
                    for &(x, _) in full.iter().filter(|p| p.0 > x0 && p.0 < x1) {
                        assert!(clipped.iter().any(|p| p.0 == x), "{mode:?} e{e} lost {x}");
                    }
                }
            }
        }
    }

    /// The bottom of a polyline at `x` (the right-most segment on vertical jumps).
    fn interpolate(p: &[(f64, f64)], x: f64) -> f64 {
        let i = p.partition_point(|q| q.0 <= x);
        if i == 0 {
            return p[0].1;
        }
        if i == p.len() {
            return p[i - 1].1;
        }
        let (a, b) = (p[i - 1], p[i]);
        a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0)
    }

    #[test]
    fn semantics_vector() {
        let t = vector();
        let l = build(&t);
        assert_eq!(l.live_at_step(), [15, 30, 55, 55, 55, 55, 55, 38, 38]);
        assert_eq!(l.peak_bytes, 55);
        assert_eq!(l.peak_step, 2);
        let pts = |e| l.points(e).collect::<Vec<_>>();
        assert_eq!(pts(4), [(0, 0), (9, 0)]);
        assert_eq!(pts(0), [(0, 10), (1, 10)]);
        assert_eq!(pts(1), [(1, 10), (4, 10)]);
        assert_eq!(pts(2), [(2, 30), (4, 30), (7, 10), (9, 10)]);
        assert_eq!(pts(3), [(7, 35), (9, 35)]);
        assert_eq!(l.step_event(), [0, 1, 2, 3, 3, 3, 3, 4, 5]);
        assert_eq!(l.slides, [Slide { step: 4, order: 2 }]);
        assert_eq!(l.slide_size(&l.slides[0]), 20);
        let pieces: Vec<Piece> = l.pieces(2).collect();
        assert_eq!(pieces.len(), 3);
        assert_eq!(
            pieces[1],
            Piece {
                x0_step: 4,
                x1_step: 7,
                bottom0_bytes: 30,
                bottom1_bytes: 10,
                height_bytes: 25
            }
        );
        assert_eq!(l.hit(4.5, 29.0), Some(2));
        assert_eq!(l.hit(4.5, 25.0), None, "the gap the freed element leaves");
        assert_eq!(l.hit(4.5, 5.0), Some(4));
        assert_eq!(l.hit(8.5, 36.0), Some(3));
        assert_eq!(l.hit(9.0, 1.0), None);
        assert_eq!(l.hit(-0.5, 1.0), None);
        assert_eq!(l.hit(f64::NAN, 1.0), None);
        assert_eq!(l.elements_at(0), [(0.0, 4), (10.0, 0)]);
        assert_eq!(l.elements_at(7), [(0.0, 4), (10.0, 2), (35.0, 3)]);
        check_against_reference(&t);
    }

    #[test]
    fn random_timelines_match_the_reference() {
        for seed in 0..40 {
            let t = random_timeline(seed, 10 + seed as usize * 7, (seed % 5) as usize);
            check_against_reference(&t);
        }
        // Long enough to span several hit buckets and tree levels.
        check_sampled(&random_timeline(99, 900, 30), 1);
    }

    #[test]
    fn flat_graph_quirk_and_empty() {
        let empty = build(&Timeline::default());
        assert_eq!(empty.step_count(), 0);
        assert_eq!(empty.peak_bytes, 0);
        assert_eq!(empty.hit(0.0, 0.0), None);
        assert!(empty.elements_at(0).is_empty());
        let t = Timeline {
            elements: vec![
                el(7, Origin::Ghost { block: 0 }),
                el(9, Origin::Ghost { block: 1 }),
            ],
            initially_present: vec![1, 0],
            ..Timeline::default()
        };
        let l = build(&t);
        assert_eq!(l.live_at_step(), [16]);
        assert_eq!(l.step_event(), [NO_EVENT]);
        assert_eq!(l.points(1).collect::<Vec<_>>(), [(0, 0), (1, 0)]);
        assert_eq!(l.points(0).collect::<Vec<_>>(), [(0, 9), (1, 9)]);
        check_against_reference(&t);
    }

    #[test]
    fn exact_falls_back_to_compact_over_the_limit() {
        let t = random_timeline(7, 300, 10);
        let l = Layout::build(
            &t,
            LayoutOptions {
                mode: PointMode::Exact,
                max_exact_points: 10,
            },
        );
        assert_eq!(l.mode(), PointMode::Compact);
        assert!(l.fell_back_to_compact());
        assert_eq!(l.stored_point_count(), 0);
        let exact = build(&t);
        for e in 0..t.elements.len() as u32 {
            assert!(l.points(e).eq(exact.points(e)));
        }
    }

    #[test]
    fn garbage_timelines_do_not_panic() {
        let t = Timeline {
            elements: vec![
                el(u64::MAX, Origin::Alloc { event: 0 }),
                el(3, Origin::Ghost { block: 0 }),
            ],
            initially_present: vec![1, 1, 7],
            steps: vec![
                Step {
                    element: 0,
                    event: 0,
                    is_alloc: true,
                },
                Step {
                    element: 9,
                    event: 1,
                    is_alloc: true,
                },
                Step {
                    element: 1,
                    event: 2,
                    is_alloc: false,
                },
                Step {
                    element: 1,
                    event: 3,
                    is_alloc: false,
                },
                Step {
                    element: 0,
                    event: 4,
                    is_alloc: false,
                },
                Step {
                    element: 0,
                    event: 5,
                    is_alloc: true,
                },
            ],
            ..Timeline::default()
        };
        for mode in [PointMode::Exact, PointMode::Compact] {
            let l = Layout::build(
                &t,
                LayoutOptions {
                    mode,
                    ..LayoutOptions::default()
                },
            );
            for e in 0..3 {
                let _ = l.pieces(e).count();
                let _ = l.bottom_at(e, 1.0);
            }
            for x in 0..10 {
                let _ = l.hit(x as f64, 1.0);
                let _ = l.elements_at(x);
            }
        }
    }
}
