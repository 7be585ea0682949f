//! One row per allocation of a device (issue 32): the elements of a [`Timeline`] (normally
//! [`crate::timeline::build`]'s, the Active Memory Timeline) in element order, so row `i` is
//! element `i`, with their events, address, size, stream, stack, lifetime and whether they are
//! alive at the timeline's peak.
//!
//! *The peak.* "Alive at the peak" is `memviz lines`' live-at-the-peak column: the elements of
//! [`crate::steps::Steps::live_elements`] at [`crate::steps::Steps::peak_step`]. [`allocations`]
//! finds the same set in one O(steps) pass over the timeline's steps, without the step model:
//! the replay's timestep of an allocation counts the bytes after it, that of a free the bytes
//! before it (the freed bytes still count during its timestep and slide), the peak is the first
//! action reaching the largest value, and the elements alive there are those pushed at or
//! before it and not freed before it. With no steps (the flat-graph quirk) the peak is the
//! start state. [`allocations_with_steps`] reads an already built step model instead (a timeline
//! whose steps were dropped); the tests check both agree.
//!
//! The site is not in the row: name it with [`crate::site::SiteCache::site`] of `row.stack`.

use crate::frames::element_stack;
use crate::lines::element_addr_stream;
use crate::steps::{Steps, NO_EVENT};
use crate::timeline::Timeline;
use memviz_snapshot::{Snapshot, StackId, NO_TIME};

/// One allocation (timeline element).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// Index into `timeline.elements`.
    pub element: u32,
    /// Trace row of the allocation; `None`: present at the trace's start.
    pub alloc_event: Option<u32>,
    /// Trace row of the free (as [`crate::timeline::Element::free_event`]); `None`: alive at
    /// the end.
    pub free_event: Option<u32>,
    pub addr: u64,
    pub size: u64,
    /// Raw `cudaStream_t`.
    pub stream: u64,
    /// [`crate::frames::element_stack`].
    pub stack: StackId,
    /// `time_us` of the allocation event (`None` when untimed or present at the start).
    pub alloc_us: Option<i64>,
    /// `time_us` of the free event (`None` when untimed or never freed).
    pub free_us: Option<i64>,
    /// Free (or the trace length) − allocation (or 0), in trace events.
    pub lifetime_events: u64,
    /// Free (or, never freed, the last timed event) − allocation, when both have times.
    pub lifetime_us: Option<i64>,
    /// Alive at the timeline's peak (the elements `memviz lines` counts live at the peak).
    pub alive_at_peak: bool,
}

/// The allocations of one device ([`allocations`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allocations {
    pub device: i64,
    /// Row `i` is element `i`.
    pub rows: Vec<Allocation>,
    /// Σ sizes of the rows alive at the peak.
    pub peak_bytes: u64,
    /// Trace row of the peak's event (`None`: the peak is the start state).
    pub peak_event: Option<u32>,
    /// Whether the device's trace has times (time terms of a filter match nothing otherwise).
    pub timed: bool,
}

/// The allocations of `timeline` (built for `device`, with its steps), peak by one pass over
/// the steps (module documentation).
pub fn allocations(snap: &Snapshot, device: i64, timeline: &Timeline) -> Allocations {
    let n = timeline.elements.len();
    let mut alive = vec![false; n];
    let (peak_event, _) = peak_by_steps(timeline, &mut alive);
    rows(snap, device, timeline, &alive, peak_event)
}

/// [`allocations`] with the peak read from `layout` (the step model of `timeline`), for a
/// timeline whose steps were dropped.
pub fn allocations_with_steps(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Steps,
) -> Allocations {
    let n = timeline.elements.len();
    let mut alive = vec![false; n];
    let mut peak_event = None;
    if layout.step_count() > 0 {
        for e in crate::lines::live_elements_at(layout, layout.peak_step) {
            if let Some(a) = alive.get_mut(e as usize) {
                *a = true;
            }
        }
        peak_event = layout
            .step_event()
            .get(layout.peak_step as usize)
            .filter(|&e| e != NO_EVENT);
    }
    rows(snap, device, timeline, &alive, peak_event)
}

/// Marks the elements alive at the peak; returns the peak's event and bytes.
fn peak_by_steps(timeline: &Timeline, alive: &mut [bool]) -> (Option<u32>, u64) {
    let size = |e: u32| {
        timeline
            .elements
            .get(e as usize)
            .map_or(0, |x| x.size_bytes)
    };
    let mark = |alive: &mut [bool], e: u32| {
        if let Some(a) = alive.get_mut(e as usize) {
            *a = true;
        }
    };
    let steps = &timeline.steps;
    if steps.is_empty() {
        // The flat-graph quirk: the only timestep shows everything present at the start.
        let mut bytes = 0u64;
        for &e in &timeline.initially_present {
            mark(alive, e);
            bytes = bytes.saturating_add(size(e));
        }
        return (None, bytes);
    }
    // Pass 1: the peak action, as the replay picks it (state per element: 0 never pushed,
    // 1 live, 2 ended; a repeated free, only in a hand-made timeline, changes nothing).
    const UNSEEN: u8 = 0;
    const LIVE: u8 = 1;
    const ENDED: u8 = 2;
    let start_state = || {
        let mut st = vec![UNSEEN; alive.len()];
        for &e in &timeline.initially_present {
            if let Some(x) = st.get_mut(e as usize) {
                *x = LIVE;
            }
        }
        st
    };
    let mut state = start_state();
    let mut drawn: u64 = state
        .iter()
        .enumerate()
        .filter(|(_, &s)| s == LIVE)
        .fold(0u64, |a, (e, _)| a.saturating_add(size(e as u32)));
    let (mut peak, mut peak_at) = (0u64, 0usize);
    for (i, s) in steps.iter().enumerate() {
        let Some(st) = state.get_mut(s.element as usize) else {
            continue;
        };
        let was = *st;
        if was == UNSEEN {
            *st = LIVE;
            drawn = drawn.saturating_add(size(s.element));
        }
        if drawn > peak || i == 0 {
            peak = drawn;
            peak_at = i;
        }
        if was == LIVE {
            *st = ENDED;
            drawn = drawn.saturating_sub(size(s.element));
        }
    }
    // Pass 2: alive there: pushed at or before it and not ended before it.
    let mut state = start_state();
    for s in steps.iter().take(peak_at) {
        if let Some(st) = state.get_mut(s.element as usize) {
            *st = if *st == UNSEEN { LIVE } else { ENDED };
        }
    }
    if let Some(s) = steps.get(peak_at) {
        if let Some(st) = state.get_mut(s.element as usize) {
            if *st == UNSEEN {
                *st = LIVE;
            }
        }
    }
    for (a, &st) in alive.iter_mut().zip(&state) {
        *a = st == LIVE;
    }
    (steps.get(peak_at).map(|s| s.event), peak)
}

fn rows(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    alive: &[bool],
    peak_event: Option<u32>,
) -> Allocations {
    let tr = snap.trace(device);
    let trace_len = tr.map_or(0, |t| t.len()) as u64;
    let timed = tr.is_some_and(|t| t.has_time());
    let time_of = |e: u32| -> Option<i64> {
        tr.and_then(|t| t.time_us(e as usize))
            .filter(|&t| t != NO_TIME)
    };
    let last_time = if timed {
        tr.and_then(|t| t.times().filter(|&t| t != NO_TIME).last())
    } else {
        None
    };
    let mut peak_bytes = 0u64;
    let rows = timeline
        .elements
        .iter()
        .enumerate()
        .map(|(i, el)| {
            let (addr, stream, alloc_event) = element_addr_stream(snap, device, timeline, el);
            let alloc_us = alloc_event.and_then(time_of);
            let free_us = el.free_event.and_then(time_of);
            let end = el.free_event.map_or(trace_len, u64::from);
            let start = alloc_event.map_or(0, u64::from);
            let lifetime_us = match (alloc_us, el.free_event) {
                (Some(a), Some(_)) => free_us.map(|f| f.saturating_sub(a)),
                (Some(a), None) => last_time.map(|l| l.saturating_sub(a)),
                (None, _) => None,
            };
            let alive_at_peak = alive.get(i).copied().unwrap_or(false);
            if alive_at_peak {
                peak_bytes = peak_bytes.saturating_add(el.size_bytes);
            }
            Allocation {
                element: i as u32,
                alloc_event,
                free_event: el.free_event,
                addr,
                size: el.size_bytes,
                stream,
                stack: element_stack(snap, device, el),
                alloc_us,
                free_us,
                lifetime_events: end.saturating_sub(start),
                lifetime_us,
                alive_at_peak,
            }
        })
        .collect();
    Allocations {
        device,
        rows,
        peak_bytes,
        peak_event,
        timed,
    }
}

// Tests: `crate::query::tests` (hand-made snapshots and the corpus, both peak paths).
