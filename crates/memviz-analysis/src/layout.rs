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
//! 1. a replay records push/end steps, base bottoms, the list of *slides* (frees that had
//!    something above: step, order, size; the shared "offset change" list) and each element's
//!    number of slides below it. Whether a free has something above is whether its push order
//!    is the largest live one (a 64-ary bitset tree of the live orders); the slides below an
//!    element are those below its order at its end (a bitset of the slides' orders with a
//!    Fenwick tree per 64 of them) less those before its push (all below it). That gives the
//!    exact point count in O((elements + steps) · log elements) before anything big is
//!    allocated, with about 8.3 bytes per element and the output's columns, packed as they are
//!    produced (the `build` module has the memory);
//! 2. in [`PointMode::Exact`] (the default), a second replay with a sorted stack fills the flat
//!    polylines ([`Layout::point_offsets`] / [`Layout::point_steps`] /
//!    [`Layout::point_bottoms`], 12 bytes per point). Finding the freed slot is a binary search;
//!    the removal's memmove touches only the elements above, which get two points each anyway.
//!    It replays pass 1's columns (pushes by push order, frees by end step), not the steps.
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
use packed::Packed;

mod build;
mod exact;
mod hit;
pub mod packed;
mod points;
mod reference;
mod sets;
#[cfg(test)]
mod tests;
use hit::HitIndex;
pub use points::{Pieces, Points};
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
/// `start_step` of an element never drawn.
const NO_START: u32 = u32::MAX;
/// Slides per leaf of the compact mode's min-tree (scanned linearly).
const SLIDE_BLOCK: usize = 16;

/// How per-element polylines are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, ts_rs::TS)]
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
    // The per-element and per-action columns are packed (frame of reference per 64 values,
    // [`packed`]): they were 44 bytes per element and action pair in vectors.
    height_bytes: Packed,
    start_step: Packed,
    /// [`NO_END`] for an element never freed.
    end_step: Packed,
    base_bytes: Packed,
    order: Packed,
    by_order: Packed,
    /// Timesteps (see [`crate::steps`] for the per-action columns below).
    steps: u32,
    /// Live bytes after each action ([`Layout::live_at_step`]).
    action_live: Packed,
    /// The trace event of each action ([`Layout::step_event`]).
    action_event: Packed,
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

impl Layout {
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
        self.height_bytes.get(element as usize).unwrap_or(0)
    }
    /// Push order (stack position among everything ever pushed), `None` if never drawn.
    pub fn order(&self, element: u32) -> Option<u32> {
        self.order
            .get(element as usize)
            .filter(|&o: &u32| o != NO_ORDER)
    }
    /// The element with push order `order`.
    pub fn element_at_order(&self, order: u32) -> Option<u32> {
        self.by_order.get(order as usize)
    }
    /// Number of elements drawn (push orders are `0..drawn_count`).
    pub fn drawn_count(&self) -> u32 {
        self.by_order.len() as u32
    }
    /// `[first, last]` timestep of the element's polygon.
    pub fn span(&self, element: u32) -> Option<(u32, u32)> {
        let e = element as usize;
        let start = self.start_step.get(e).filter(|&s: &u32| s != NO_START)?;
        Some((start, self.end_of(e)))
    }
    /// The timestep of the element's free (its span ends right after it), `None` if it is
    /// never freed (or never drawn).
    pub fn free_step(&self, element: u32) -> Option<u32> {
        self.order(element)?;
        let end: u32 = self.end_step.get(element as usize)?;
        (end != NO_END).then(|| end.saturating_sub(1))
    }
    /// The start of element `e`'s span.
    fn start_of(&self, e: usize) -> u32 {
        self.start_step
            .get(e)
            .filter(|&s: &u32| s != NO_START)
            .unwrap_or(0)
    }
    /// The end of element `e`'s span (the last timestep for one never freed).
    fn end_of(&self, e: usize) -> u32 {
        match self.end_step.get(e) {
            Some(NO_END) => self.steps,
            Some(end) => end,
            None => 0,
        }
    }
    /// Bottom when pushed; `base + height` is memory_viz's "total memory used after allocation".
    pub fn base_bytes(&self, element: u32) -> Option<u64> {
        self.order(element)?;
        self.base_bytes.get(element as usize)
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

    /// Approximate heap bytes of the layout, hit index included.
    pub fn heap_bytes(&self) -> usize {
        [
            &self.height_bytes,
            &self.start_step,
            &self.end_step,
            &self.base_bytes,
            &self.order,
            &self.by_order,
            &self.action_live,
            &self.action_event,
        ]
        .iter()
        .map(|c| c.heap_bytes())
        .sum::<usize>()
            + (self.point_offsets.capacity()
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
