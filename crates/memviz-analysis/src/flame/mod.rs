//! The memory flamegraph: live bytes by call stack at one moment of the Active Memory Timeline
//! (or bytes × lifetime over the whole trace), as folded stacks (the `flamegraph.pl` /
//! speedscope / inferno input) and as a flame/icicle tree with zoom, breadcrumb, hit test and
//! tooltips for a renderer. Plain data: nothing here draws.
//!
//! # Moments
//! [`At`] names a moment; [`resolve`] turns it into a [`Moment`] on a [`Steps`]:
//! * [`At::Peak`] and [`At::Step`] are timesteps of the layout (SEMANTICS.md §3.4). The live set
//!   at timestep `s` is what the plot draws there: every element whose span contains `s`, plus
//!   the element whose free is sliding during `s` (memory_viz's `max_at_time` still counts the
//!   freed bytes during the 3-step slide). So the total at `s` is exactly
//!   [`Steps::live_at_step`]`[s]`, and at the peak [`Steps::peak_bytes`] (= the summary's
//!   `peak_live_bytes`). Note that at a free's own timestep the freed element is still live (the
//!   reference counts a free before removing it).
//! * [`At::Event`]`(k)` is the state right after trace event `k` (an index into the device's
//!   trace list as stored in the file, i.e. before free pairs are merged, the numbering of
//!   [`crate::timeline::Step::event`]): the elements present at the start or allocated by an
//!   event `≤ k`, minus those freed by an event `≤ k` (a merged `free_requested` +
//!   `free_completed` pair frees at the request). [`Moment::step`] is then the last timestep
//!   drawn for an event `≤ k` (0 if none), a locator only: a free's bytes are gone after the
//!   event although its own timestep still counts them.
//!
//! # Stacks
//! An element's stack is [`crate::frames::element_stack`] (the alloc's, the free's for an
//! unmatched free, the block's for a ghost). Frames are printed `filename:line:name` (the first
//! line of [`crate::frames::frame_text`]: FX annotations are left out), root first (memory_viz
//! stores innermost first). [`FlameOptions::frames`] ([`FrameMode`]) chooses the frames: the
//! user's with library calls collapsed, the Python frames, or all (the `modes` module). Repeats
//! are kept (recursion shows as depth). An element with no frames gets the single frame
//! [`NO_FRAMES`]; one whose frames are all left out gets its site or [`ALL_FILTERED`].
//!
//! # Folded text
//! One line per distinct stack, `frame;frame;…;frame value`, sorted. The format has no escape
//! mechanism, so [`folded_text`] replaces a `;` inside a frame by `；` (U+FF1B FULLWIDTH
//! SEMICOLON) and a line break or other control character by a space; stacks that become equal
//! after that are merged.
//!
//! # Cost
//! [`folded`] is O(elements + distinct stacks · frames) (live bytes are summed per interned
//! stack before any string is made), plus O(log² timesteps) for [`At::Event`].

use std::collections::BTreeMap;

use crate::frames::element_stack;
use crate::site::{SiteCache, UserCode};
use crate::steps::{Steps, SLIDE_STEPS};
use crate::timeline::Timeline;
use memviz_snapshot::{Snapshot, StackId};
use rustc_hash::FxHashMap;

/// The single frame of an element whose stack is empty.
pub const NO_FRAMES: &str = "<no frames>";
/// The single frame of an element whose frames the filter dropped entirely.
pub const ALL_FILTERED: &str = "<all frames filtered>";
/// The name of a [`FlameTree`]'s root (as `flamegraph.pl` calls it).
pub const ROOT_NAME: &str = "all";

/// A moment of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// The first timestep reaching the peak ([`Steps::peak_step`]).
    Peak,
    /// A timestep of the layout (`0..step_count`).
    Step(u32),
    /// Right after this trace event (an index into the device's trace, `0..len`).
    Event(u32),
}

/// An [`At`] resolved against a layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moment {
    /// `Step(s)` (for `Peak`, `s` = the peak step) or `Event(k)`.
    pub at: At,
    /// The timestep shown for the moment (for an event: where it is drawn; see the module docs).
    pub step: u32,
}

/// What [`folded`] measures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlameOptions {
    /// Which frames become nodes ([`FrameMode`]; [`FrameMode::default_for`] a file).
    pub frames: FrameMode,
    /// What counts as the user's code ([`FrameMode::MyCode`], and the sites of stacks without
    /// a Python frame).
    pub user: UserCode,
    /// false: live bytes at the moment. true: Σ bytes × lifetime over the whole trace, the
    /// lifetime in timesteps: an element counts during every timestep the plot counts it
    /// (its span, plus the 3-step slide of its free), so elements present at the start count
    /// from 0 and never-freed ones to the end, and the total is Σ [`Steps::live_at_step`] (the
    /// area under the outline). The moment is ignored.
    pub lifetime: bool,
    /// Half-open window `[from, to)` of timesteps for lifetime mode (clamped to the layout);
    /// `None`: the whole trace. Ignored for a moment.
    pub step_range: Option<(u32, u32)>,
}

/// One folded stack: frames root first, and bytes (or byte·timesteps in lifetime mode).
pub type FoldedEntry = (Vec<String>, u64);

/// Why an [`At`] does not resolve: it is out of range (the message names the valid range).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// A timestep past the layout's `steps`.
    #[error("timestep {step} out of range: the timeline has {steps} timesteps")]
    Step { step: u32, steps: u32 },
    /// An event past the device's trace of `events` events.
    #[error(
        "event {event} out of range: the device's trace has {events} events (0 to {})",
        .events.saturating_sub(1)
    )]
    Event { event: u32, events: usize },
}

/// Resolve `at` on the layout (and, for [`At::Event`], the device's trace length `events`).
/// Errors name the valid range. A layout with no timesteps resolves `Peak` to step 0 (nothing is
/// live).
pub fn resolve(layout: &Steps, events: usize, at: At) -> Result<Moment, ResolveError> {
    let steps = layout.step_count();
    match at {
        At::Peak => Ok(Moment {
            at: At::Step(layout.peak_step),
            step: layout.peak_step,
        }),
        At::Step(s) if s < steps => Ok(Moment { at, step: s }),
        At::Step(step) => Err(ResolveError::Step { step, steps }),
        At::Event(k) if (k as usize) < events => {
            // step_event is non-decreasing (NO_EVENT only on the single flat-graph step).
            let j = layout.step_event().partition_point(|&e| e <= k);
            Ok(Moment {
                at,
                step: j.saturating_sub(1) as u32,
            })
        }
        At::Event(event) => Err(ResolveError::Event { event, events }),
    }
}

/// The elements live at `moment`, each once, ascending.
pub fn live_elements(timeline: &Timeline, layout: &Steps, moment: &Moment) -> Vec<u32> {
    match moment.at {
        At::Event(k) => {
            // From the layout, not the timeline's steps (a viewer drops those once the layout is
            // built: 12 bytes per action): an element pushed by an action is live once its push
            // timestep's event is ≤ k, and every element is dead once its free timestep's is.
            // `step_event` is non-decreasing, so both are comparisons with `j`.
            let j = layout.step_event().partition_point(|&e| e <= k);
            let n = timeline.elements.len();
            let mut live = vec![false; n];
            for &e in &timeline.initially_present {
                if let Some(l) = live.get_mut(e as usize) {
                    *l = true;
                }
            }
            (0..n as u32)
                .filter(|&e| {
                    let pushed = live.get(e as usize).copied().unwrap_or(false)
                        || layout.span(e).is_some_and(|(a, _)| (a as usize) < j);
                    pushed && layout.free_step(e).is_none_or(|f| (f as usize) >= j)
                })
                .collect()
        }
        At::Peak | At::Step(_) => {
            let s = match moment.at {
                At::Step(s) => s,
                _ => layout.peak_step,
            };
            if s >= layout.step_count() {
                return Vec::new();
            }
            let sliding = sliding_at(layout, s);
            (0..layout.element_count() as u32)
                .filter(|&e| {
                    Some(e) == sliding || layout.span(e).is_some_and(|(a, b)| a <= s && s < b)
                })
                .collect()
        }
    }
}

/// The element whose free is sliding during timestep `s`, if any.
fn sliding_at(layout: &Steps, s: u32) -> Option<u32> {
    let i = layout.slides.partition_point(|x| x.step <= s);
    let slide = layout.slides.get(i.checked_sub(1)?)?;
    (s < slide.step.saturating_add(SLIDE_STEPS))
        .then(|| layout.element_at_order(slide.order))
        .flatten()
}

/// Value per interned stack: what [`folded`] sums before printing (live bytes at `at`, or
/// byte·timesteps with [`FlameOptions::lifetime`]); the input of [`write_folded_text`] and
/// [`write_folded_json`].
pub fn stack_values(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Steps,
    at: At,
    opts: &FlameOptions,
) -> FxHashMap<StackId, u64> {
    values_by_stack(snap, device, timeline, layout, at, opts, None)
}

/// Value per interned stack.
fn values_by_stack(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Steps,
    at: At,
    opts: &FlameOptions,
    keep: Option<&[u32]>,
) -> FxHashMap<StackId, u64> {
    let mut by_stack: FxHashMap<StackId, u64> = FxHashMap::default();
    let mut add = |e: u32, v: u64| {
        if keep.is_some_and(|k| k.binary_search(&e).is_err()) {
            return;
        }
        if let Some(el) = timeline.elements.get(e as usize) {
            let st = element_stack(snap, device, el);
            let slot = by_stack.entry(st).or_insert(0);
            *slot = slot.saturating_add(v);
        }
    };
    if opts.lifetime {
        let steps = layout.step_count();
        let (from, to) = opts.step_range.unwrap_or((0, steps));
        let (from, to) = (from.min(steps), to.min(steps));
        // Slide windows by element: [end, end + 3) after its span.
        let mut slid = vec![false; layout.element_count()];
        for s in &layout.slides {
            if let Some(x) = layout
                .element_at_order(s.order)
                .and_then(|e| slid.get_mut(e as usize))
            {
                *x = true;
            }
        }
        for e in 0..layout.element_count() as u32 {
            let Some((a, b)) = layout.span(e) else {
                continue;
            };
            let b = if slid[e as usize] {
                b.saturating_add(SLIDE_STEPS)
            } else {
                b
            };
            let len = b.min(to).saturating_sub(a.max(from)) as u64;
            if len > 0 {
                add(e, layout.height_bytes(e).saturating_mul(len));
            }
        }
    } else {
        let events = snap.trace(device).map_or(0, |t| t.len());
        let Ok(moment) = resolve(layout, events, at) else {
            return by_stack;
        };
        for e in live_elements(timeline, layout, &moment) {
            add(e, layout.height_bytes(e));
        }
    }
    by_stack
}

/// Live bytes (or byte·timesteps) by stack at `at` on `device`: one entry per distinct printed
/// stack (frames root first), zero values left out, sorted by stack. An [`At`] that does not
/// resolve ([`resolve`]) gives no entries.
pub fn folded(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Steps,
    at: At,
    opts: &FlameOptions,
) -> Vec<FoldedEntry> {
    folded_of(snap, device, timeline, layout, at, opts, None)
}

/// [`folded`] counting only the elements in `keep` (sorted ascending), e.g. search matches;
/// `None`: every element.
pub fn folded_of(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Steps,
    at: At,
    opts: &FlameOptions,
    keep: Option<&[u32]>,
) -> Vec<FoldedEntry> {
    let by_stack = values_by_stack(snap, device, timeline, layout, at, opts, keep);
    entries_by_frames(snap, by_stack, opts.frames, &opts.user)
}

/// Values per interned stack → folded entries: stacks printed by [`stack_frames`], equal
/// printed stacks merged, zero values left out, sorted.
pub(crate) fn entries_by_frames(
    snap: &Snapshot,
    by_stack: FxHashMap<StackId, u64>,
    mode: FrameMode,
    user: &UserCode,
) -> Vec<FoldedEntry> {
    let mut sites = SiteCache::new(snap, user.clone());
    let mut merged: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for (stack, v) in by_stack {
        if v == 0 {
            continue;
        }
        let slot = merged
            .entry(stack_frames(snap, stack, mode, &mut sites))
            .or_insert(0);
        *slot = slot.saturating_add(v);
    }
    merged.into_iter().collect()
}

/// Σ values, saturating.
pub fn total(entries: &[FoldedEntry]) -> u64 {
    entries.iter().fold(0u64, |a, e| a.saturating_add(e.1))
}

/// A frame made safe for one folded line: `;` → `；` (U+FF1B), control characters (line
/// breaks included) → space.
pub fn escape_frame(frame: &str) -> String {
    frame
        .chars()
        .map(|c| match c {
            ';' => '\u{FF1B}',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// The stack part of a folded line: frames escaped by [`escape_frame`], joined by `;`
/// ([`NO_FRAMES`] for none).
pub fn folded_key(frames: &[String]) -> String {
    if frames.is_empty() {
        return NO_FRAMES.to_string();
    }
    frames
        .iter()
        .map(|f| escape_frame(f))
        .collect::<Vec<_>>()
        .join(";")
}

/// The folded-stacks text: `frame;frame;frame value` lines (each ending in `\n`), frames
/// escaped by [`escape_frame`], stacks equal after escaping merged, sorted. A stack with no
/// frames at all prints [`NO_FRAMES`].
pub fn folded_text(entries: &[FoldedEntry]) -> String {
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    for (frames, v) in entries {
        let slot = lines.entry(folded_key(frames)).or_insert(0);
        *slot = slot.saturating_add(*v);
    }
    let mut out = String::new();
    for (k, v) in lines {
        out.push_str(&k);
        out.push(' ');
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

mod folded;
mod modes;
mod tree;
pub use folded::*;
pub use modes::{has_user_frames, is_collapsed, stack_frames, FrameMode};
pub use tree::*;
