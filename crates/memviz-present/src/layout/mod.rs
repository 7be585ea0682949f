//! The Active Memory Timeline layout (SEMANTICS.md §3.4) with **every element drawn**: no
//! 15 000-element cap and no summarized band. The geometry is memory_viz's, with the §9 fixes:
//! the y range is the maximum over all timesteps (never clipped), and there is no band to lag.
//! The timesteps, stack order and slides are memviz-analysis's [`Steps`] (its module
//! documentation), which a [`Layout`] holds and derefs to; this module adds what is drawn.
//!
//! *Polylines.* Per element memory_viz emits `(t_push, base)`, then `(t, b)` and `(t + 3, b − s)`
//! for every free of size `s` below it during its life, then `(t_end, b_last)`. Each free costs
//! two points for every element above it, which is inherent to that output, so the build runs
//! in two passes:
//! 1. the step model's replay ([`Steps::build_counting`]) gives the exact point count (and each
//!    element's slides below it) before anything big is allocated;
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

use memviz_analysis::steps::{Slide, Steps, NO_ORDER, SLIDE_STEPS};
use memviz_analysis::timeline::Timeline;

mod build;
mod exact;
mod hit;
mod points;
mod reference;
#[cfg(test)]
mod tests;
use hit::HitIndex;
pub use memviz_analysis::steps::NO_EVENT;
pub use points::{Pieces, Points};
pub use reference::reference_series;

/// Timesteps per hit-index bucket.
pub const HIT_BUCKET_STEPS: u32 = 64;
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

/// The stacked layout of one device's timeline: its step model ([`Steps`], which it derefs
/// to, so a `&Layout` is a `&Steps` for the analyses) and the drawn geometry. Element ids are
/// the [`Timeline`]'s.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    steps: Steps,
    mode: PointMode,
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

impl std::ops::Deref for Layout {
    type Target = Steps;
    fn deref(&self) -> &Steps {
        &self.steps
    }
}

/// Builds the layout with [`LayoutOptions::default`].
pub fn build(timeline: &Timeline) -> Layout {
    Layout::build(timeline, LayoutOptions::default())
}

impl Layout {
    /// The step model the layout draws.
    pub fn steps(&self) -> &Steps {
        &self.steps
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

    /// Approximate heap bytes of the layout, step model and hit index included.
    pub fn heap_bytes(&self) -> usize {
        self.steps.heap_bytes()
            + (self.point_offsets.capacity()
                + self.point_steps.capacity()
                + self.slide_tree.capacity())
                * 4
            + self.point_bottoms.capacity() * 8
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
