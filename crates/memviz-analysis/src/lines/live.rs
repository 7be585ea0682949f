//! The table of what is alive at one timestep ([`live_table`]) (module documentation of
//! [`super`]).

use super::live_elements_at;
use crate::frames::element_stack;
use crate::site::SiteCache;
use crate::steps::{Steps, NO_EVENT};
use crate::timeline::{Element, Origin, Timeline};
use crate::versions::{self, Versions, NO_VERSION};
use memviz_snapshot::{Snapshot, StackId, NO_TIME};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// One element alive at a timestep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct LiveRow {
    pub element: u32,
    /// The address of the event / block / segment behind the element (0 for a pool envelope).
    pub addr: u64,
    pub size: u64,
    /// Timesteps since the element was pushed (0 for an element pushed at this step).
    pub age_steps: u32,
    /// `time_us` of this timestep's event minus that of the element's allocation, when both
    /// exist (never for memory present from the start).
    pub age_us: Option<i64>,
    /// Stream ordinal as the tooltip prints it (`stream n`): 0 is the default stream, others
    /// numbered in order of first appearance (SEMANTICS.md §2).
    pub stream: u64,
    /// The element's site in full ([`crate::site::Site::path`]: `filename:line:name`, an
    /// autograd node's name, or [`super::NO_FRAMES`]).
    pub top_frame: String,
    /// The tooltip's address label (`b<hex>_<v>`; `s<hex>_<v>` for segment elements).
    pub label: String,
}

/// Address, raw stream and allocation event of an element (shared with `search`).
pub(crate) fn element_addr_stream(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    el: &Element,
) -> (u64, u64, Option<u32>) {
    match el.origin {
        Origin::Alloc { event }
        | Origin::UnmatchedFree { event }
        | Origin::SegmentAlloc { event }
        | Origin::UnmatchedSegmentFree { event } => {
            let tr = snap.trace(device);
            let i = event as usize;
            let addr = tr.and_then(|t| t.addr(i)).unwrap_or(0);
            let stream = tr.and_then(|t| t.stream.get(i)).unwrap_or(0);
            let alloc = matches!(
                el.origin,
                Origin::Alloc { .. } | Origin::SegmentAlloc { .. }
            )
            .then_some(event);
            (addr, stream, alloc)
        }
        Origin::Ghost { block } => {
            let addr = snap.blocks.get(block as usize).map_or(0, |b| b.address);
            let stream = snap
                .segment_of_block(block)
                .filter(|s| s.device == device)
                .map_or(0, |s| s.stream);
            (addr, stream, None)
        }
        Origin::Segment { segment } => snap
            .segments
            .get(segment as usize)
            .map_or((0, 0, None), |s| (s.address, s.stream, None)),
        Origin::PoolInitial { pool } | Origin::PoolGrowth { pool } => (
            0,
            timeline.pools.get(pool as usize).map_or(0, |p| p.stream),
            None,
        ),
    }
}

/// The tooltip's address label of an element (shared with `search`); `streams` is only
/// needed for pool envelopes (`a,b,s<n>`).
pub(crate) fn element_label(
    versions: &Versions,
    streams: Option<&versions::StreamOrdinals>,
    timeline: &Timeline,
    el: &Element,
    addr: u64,
) -> String {
    let mut s = String::new();
    write_element_label(&mut s, versions, streams, timeline, el, addr);
    s
}

/// [`element_label`] appended to `out`.
pub(crate) fn write_element_label(
    out: &mut String,
    versions: &Versions,
    streams: Option<&versions::StreamOrdinals>,
    timeline: &Timeline,
    el: &Element,
    addr: u64,
) {
    use std::fmt::Write;
    let (prefix, version) = match el.origin {
        Origin::Alloc { event } | Origin::UnmatchedFree { event } => {
            ('b', versions.events.get(event as usize).copied())
        }
        Origin::SegmentAlloc { event } | Origin::UnmatchedSegmentFree { event } => {
            ('s', versions.events.get(event as usize).copied())
        }
        Origin::Ghost { block } => ('b', versions.blocks.get(block as usize).copied()),
        Origin::Segment { segment } => ('s', versions.segments.get(segment as usize).copied()),
        Origin::PoolInitial { pool } | Origin::PoolGrowth { pool } => {
            if let Some(p) = timeline.pools.get(pool as usize) {
                let s = streams.and_then(|s| s.get(p.stream)).unwrap_or(0);
                let _ = write!(out, "{},{},s{s}", p.id.0, p.id.1);
            }
            return;
        }
    };
    versions::write_address_label(out, prefix, addr, version.unwrap_or(NO_VERSION));
}

/// The elements alive at timestep `step` ([`live_elements_at`]) of `timeline` (built for
/// `device`), largest first (ties by element id). Empty for a step outside the layout.
pub fn live_table(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Steps,
    step: u32,
) -> Vec<LiveRow> {
    live_rows(snap, device, timeline, layout, step, usize::MAX).rows
}

/// [`live_rows`]: how many elements are alive and their bytes, and the largest of them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LiveRows {
    /// Elements alive at the step.
    pub count: usize,
    /// Σ their sizes (saturating).
    pub total_bytes: u64,
    /// The `limit` largest, as [`live_table`] orders them.
    pub rows: Vec<LiveRow>,
}

/// [`live_table`] cut to its first `limit` rows, with the count and bytes of every live
/// element: only the rows listed are formatted (a page lists the 2000 largest of what can be
/// millions).
pub fn live_rows(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Steps,
    step: u32,
    limit: usize,
) -> LiveRows {
    let mut live = live_elements_at(layout, step);
    live.retain(|&e| timeline.elements.get(e as usize).is_some());
    if live.is_empty() {
        return LiveRows::default();
    }
    let size = |e: u32| {
        timeline
            .elements
            .get(e as usize)
            .map_or(0, |el| el.size_bytes)
    };
    let count = live.len();
    let total_bytes = live.iter().fold(0u64, |a, &e| a.saturating_add(size(e)));
    live.sort_unstable_by(|&a, &b| size(b).cmp(&size(a)).then(a.cmp(&b)));
    live.truncate(limit);
    live.shrink_to_fit();
    let versions = versions::versions(snap, device);
    let streams = versions::stream_ordinals(snap);
    let tr = snap.trace(device);
    let time_of = |event: u32| -> Option<i64> {
        tr.and_then(|t| t.time_us(event as usize))
            .filter(|&t| t != NO_TIME)
    };
    let now = layout
        .step_event()
        .get(step as usize)
        .filter(|&e| e != NO_EVENT)
        .and_then(time_of);
    let mut sites = SiteCache::default_for(snap);
    let mut frame_cache: FxHashMap<StackId, String> = FxHashMap::default();
    let mut rows: Vec<LiveRow> = live
        .into_iter()
        .filter_map(|e| {
            let el = timeline.elements.get(e as usize)?;
            let (addr, raw_stream, alloc_event) = element_addr_stream(snap, device, timeline, el);
            let start = layout.span(e).map_or(0, |s| s.0);
            let age_us = match (now, alloc_event.and_then(time_of)) {
                (Some(n), Some(a)) => Some(n.saturating_sub(a)),
                _ => None,
            };
            let stack = element_stack(snap, device, el);
            let top_frame = frame_cache
                .entry(stack)
                .or_insert_with(|| sites.site(snap, stack).path())
                .clone();
            Some(LiveRow {
                element: e,
                addr,
                size: el.size_bytes,
                age_steps: step.saturating_sub(start),
                age_us,
                stream: u64::from(streams.get(raw_stream).unwrap_or(0)),
                top_frame,
                label: element_label(&versions, Some(&streams), timeline, el, addr),
            })
        })
        .collect();
    rows.sort_by(|a, b| b.size.cmp(&a.size).then(a.element.cmp(&b.element)));
    LiveRows {
        count,
        total_bytes,
        rows,
    }
}
