//! The timestep model of the Active Memory Timeline (SEMANTICS.md §3.4): when each element is
//! pushed on the stack and when it ends, its bottom when pushed, the live bytes and trace event
//! of every timestep, the peak and the slides. The analyses (lines, leaks, flame, annotations,
//! ranks) read it; the drawn geometry (polylines, hit test) is memviz-present's `Layout`, which
//! holds one.
//!
//! # How it works
//! *Timesteps.* The initially-present elements ([`Timeline::initially_present`], bottom first)
//! are stacked at timestep 0 without a step. Every alloc/free step of the timeline then costs one
//! timestep; a free whose element is not on top of the stack costs three more, during which
//! everything above it slides down by the freed size (a linear ramp from `t` to `t + 3`). The
//! freed bytes are still counted during the slide. [`Steps::live_at_step`] (memory_viz's
//! `max_at_time`) has one value per timestep, [`Steps::step_event`] maps each timestep to the
//! trace event that produced it (the three slide steps map to the free's event).
//!
//! *Stack order.* Elements are pushed on top and never move up, so the stack order of two live
//! elements is their push order ([`Steps::order`]). An element's bottom at any `x` is therefore
//! "bytes of the live elements pushed before it" plus, during a slide, the part of the freed
//! element that has not yet slid away. At most one slide is in progress at any `x`: the step
//! after a slide window starts at its end.
//!
//! *The replay* ([`build`]) records push/end steps, base bottoms, the list of *slides* (frees
//! that had something above: step, order, size; the shared "offset change" list) and the number
//! of slides below each element during its life. Whether a free has something above is whether
//! its push order is the largest live one (a 64-ary bitset tree of the live orders); the slides
//! below an element are those below its order at its end (a bitset of the slides' orders with a
//! Fenwick tree per 64 of them) less those before its push (all below it). That gives the
//! exact point count of the drawn polylines ([`Steps::slides_below_total`]) in
//! O((elements + steps) · log elements), with about 8.3 bytes per element and the output's
//! columns, packed as they are produced (the `build` module has the memory).

use crate::timeline::Timeline;
use packed::Packed;

mod build;
pub mod packed;
#[doc(hidden)]
pub mod sets;
mod values;
pub use values::{StepIter, StepValues};

/// [`Steps::step_event`] of a timestep with no trace event (the flat-graph quirk of §3.2, where
/// an initially-present element is moved into the actions).
pub const NO_EVENT: u32 = u32::MAX;
/// Timesteps a slide lasts.
pub const SLIDE_STEPS: u32 = 3;
/// A push order for an element never drawn.
pub const NO_ORDER: u32 = u32::MAX;
/// `end_step` of an element still live at the end (its span ends at the last timestep): kept
/// apart from one freed by the last action, so [`Steps::free_step`] can tell them apart.
const NO_END: u32 = u32::MAX;
/// `start_step` of an element never drawn.
const NO_START: u32 = u32::MAX;

/// A free that had something above it: every live element with a larger push order slides down
/// by the freed element's size ([`Steps::slide_size`]) between `step` and `step + 3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Slide {
    pub step: u32,
    /// Push order of the freed element.
    pub order: u32,
}

/// The timestep model of one device's timeline. Element ids are the [`Timeline`]'s.
#[derive(Clone, Debug, Default)]
pub struct Steps {
    // The per-element and per-action columns are packed (frame of reference per 64 values,
    // [`packed`]): they were 44 bytes per element and action pair in vectors.
    height_bytes: Packed,
    start_step: Packed,
    /// [`NO_END`] for an element never freed.
    end_step: Packed,
    base_bytes: Packed,
    order: Packed,
    by_order: Packed,
    /// Timesteps (see [`values`] for the per-action columns below).
    steps: u32,
    /// Live bytes after each action ([`Steps::live_at_step`]).
    action_live: Packed,
    /// The trace event of each action ([`Steps::step_event`]).
    action_event: Packed,
    /// `max(live_at_step)` (0 when there are no timesteps): the y range.
    pub peak_bytes: u64,
    /// The first timestep reaching [`Steps::peak_bytes`].
    pub peak_step: u32,
    /// Frees with something above them, in step order (the shared offset-change list).
    pub slides: Vec<Slide>,
    /// Σ over drawn elements of the slides below them during their lives.
    slides_below_total: u64,
}

/// Builds the step model of `timeline`.
pub fn build(timeline: &Timeline) -> Steps {
    Steps::build(timeline)
}

impl Steps {
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
    /// Σ over drawn elements of the slides below them during their lives: memory_viz's
    /// polylines have `2 · (drawn + this)` points.
    pub fn slides_below_total(&self) -> u64 {
        self.slides_below_total
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
    /// The drawn elements in push order (bottom first among the live ones), read in sequence.
    pub fn drawn_elements(&self) -> impl Iterator<Item = u32> + '_ {
        self.by_order.iter::<u32>()
    }
    /// Number of elements drawn (push orders are `0..drawn_count`).
    pub fn drawn_count(&self) -> u32 {
        self.by_order.len() as u32
    }
    /// `[first, last]` timestep of the element's polygon.
    pub fn span(&self, element: u32) -> Option<(u32, u32)> {
        let e = element as usize;
        let start = self.start_step.get(e).filter(|&s: &u32| s != NO_START)?;
        Some((start, self.end_of(element)))
    }
    /// The timestep of the element's free (its span ends right after it), `None` if it is
    /// never freed (or never drawn).
    pub fn free_step(&self, element: u32) -> Option<u32> {
        self.order(element)?;
        let end: u32 = self.end_step.get(element as usize)?;
        (end != NO_END).then(|| end.saturating_sub(1))
    }
    /// The start of the element's span (0 for one never drawn).
    pub fn start_of(&self, element: u32) -> u32 {
        self.start_step
            .get(element as usize)
            .filter(|&s: &u32| s != NO_START)
            .unwrap_or(0)
    }
    /// The end of the element's span (the last timestep for one never freed, 0 for one never
    /// drawn).
    pub fn end_of(&self, element: u32) -> u32 {
        match self.end_step.get(element as usize) {
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

    /// The elements counted in [`Steps::live_at_step`] during timestep `step`, bottom first:
    /// those whose span holds it, then the freed element of a slide in progress (its bytes
    /// still count until the slide ends). Σ sizes = `live_at_step[step]`. One pass over the push orders, nothing allocated per
    /// element but the answer.
    pub fn live_elements(&self, step: u32) -> Vec<u32> {
        if step >= self.steps {
            return Vec::new();
        }
        let mut out: Vec<u32> = self
            .drawn_elements()
            .filter(|&e| self.span(e).is_some_and(|(a, b)| a <= step && step < b))
            .collect();
        let live: u64 = out
            .iter()
            .fold(0u64, |a, &e| a.saturating_add(self.height_bytes(e)));
        let want = self.live_at_step().get(step as usize).unwrap_or(0);
        let i = self.slides.partition_point(|s| s.step <= step);
        if live >= want {
            return out;
        }
        if let Some(s) = i.checked_sub(1).and_then(|i| self.slides.get(i)) {
            if step < s.step.saturating_add(SLIDE_STEPS) {
                if let Some(e) = self.element_at_order(s.order) {
                    if !out.contains(&e) {
                        out.push(e);
                    }
                }
            }
        }
        out
    }

    /// Approximate heap bytes of the step model.
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
            + self.slides.capacity() * std::mem::size_of::<Slide>()
    }
}
