//! The Active Memory Timeline's elements (SEMANTICS.md §3.1–3.2): allocations paired with their
//! frees, unmatched frees and ghost blocks as memory present from the start, and live bytes.
//! Two more views share the output type ([`Timeline`]), so the same layout, colours and
//! tooltips draw them: the Active Cached Segment Timeline ([`build_segments`], §4, with
//! expandable segments handled) and Allocated Memory incl. Private Pools ([`build_pools`], §5,
//! simplified).
//!
//! # How it works
//! One pass over a device's trace applies the annotate step's merge rule (a `free_completed`
//! right after its own `free_requested` is one `free` event that keeps the request's fields) and
//! pairs frees with the allocation remembered at their address. Frees with no remembered
//! allocation become elements present from the start (the allocation predates the trace), and
//! every `active_allocated` block of the final state not accounted for becomes a ghost element.
//!
//! *Segments.* [`build_segments`] keeps the live address ranges in a `BTreeMap` (start → end,
//! element), disjoint at all times. `segment_alloc` / `segment_map` add a range,
//! `segment_free` / `segment_unmap` remove one: every live range the removed range overlaps
//! ends at that step, and the parts of those ranges outside it (front, back, or both for a
//! middle unmap) start again as new elements at the same step, with the origin of the range
//! they came from. Bytes of a removed range that nothing in the trace mapped were mapped before
//! the trace started: one element present from the start, freed at that step (an unmatched
//! free). Within one event the frees come first, then the restarted parts, so a step never
//! shows more than was mapped. A `segment_free` also ends the whole live range that starts at
//! its address (cudaFree releases the whole allocation, whatever the size says). A map over live
//! ranges (impossible for a real allocator) replaces what it overlaps the same way. Each event removes the ranges it touches and adds at most three, so the whole pass
//! is O(n log n). At the end, the bytes of every final segment of the device not covered by a
//! live range become an element present from the start ([`Origin::Segment`]).
//!
//! *Private pools.* [`build_pools`] is [`build`] without the allocations of private pools
//! (pool id set and not `(0, 0)`); each pool `(id, stream)` instead gets an envelope that only
//! grows, to max(active bytes, reserved bytes) of the pool so far, drawn as elements that are
//! never freed: the starting envelope ([`Origin::PoolInitial`]) and one element per growth
//! ([`Origin::PoolGrowth`]). Reserved bytes start at Σ final `total_size` of the pool's
//! segments minus Σ the trace's segment deltas of the pool, and the deltas apply at their trace
//! positions.

use crate::devices::SegmentsOf;
use memviz_snapshot::{Action, BlockState, Snapshot};
use rustc_hash::FxHashMap;

mod pools;
mod segments;
pub use pools::SegmentIndex;
pub use pools::{build_pools, has_private_pool};
pub use segments::build_segments;

/// Where a timeline element comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// An `alloc` event (index into the device trace).
    Alloc { event: u32 },
    /// A free whose allocation is not in the trace (index of the free event that carries its
    /// fields: the `free_requested` of a merged pair, else the `free_completed`).
    UnmatchedFree { event: u32 },
    /// An `active_allocated` block of the final state with no allocation in the trace.
    Ghost { block: u32 },
    /// A `segment_alloc` or `segment_map` event (index into the device trace): the range it
    /// mapped, or the part of that range still mapped after a partial unmap split it.
    SegmentAlloc { event: u32 },
    /// Bytes of a `segment_free` / `segment_unmap` (index into the device trace) that no event
    /// of the trace mapped: mapped before the trace started.
    UnmatchedSegmentFree { event: u32 },
    /// The bytes of a final segment (index into [`Snapshot::segments`]) not mapped by the trace:
    /// present from the start, still there at the end.
    Segment { segment: u32 },
    /// The starting envelope of a private pool (index into [`Timeline::pools`]).
    PoolInitial { pool: u32 },
    /// A growth of a private pool's envelope (index into [`Timeline::pools`]).
    PoolGrowth { pool: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Element {
    pub size_bytes: u64,
    pub origin: Origin,
    /// Trace event index of the free, if freed within the trace.
    pub free_event: Option<u32>,
}

impl Element {
    pub fn present_at_start(&self) -> bool {
        !matches!(
            self.origin,
            Origin::Alloc { .. } | Origin::SegmentAlloc { .. } | Origin::PoolGrowth { .. }
        )
    }
}

/// One step of the timeline: an element appears or disappears.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub element: u32,
    pub event: u32,
    pub is_alloc: bool,
}

/// A private pool of a [`build_pools`] timeline: key `(id, stream)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolInfo {
    /// `segment_pool_id`, never `(0, 0)`.
    pub id: (i64, i64),
    /// Raw `cudaStream_t` value.
    pub stream: u64,
    /// Envelope height after all growth.
    pub capacity_bytes: u64,
    /// The pool's envelope elements in element order (the [`Origin::PoolInitial`] one first,
    /// if any), each with the envelope height once it is added.
    pub envelope: Vec<(u32, u64)>,
}

impl PoolInfo {
    /// The envelope height once `element` (one of this pool's envelope elements) is added.
    pub fn capacity_after(&self, element: u32) -> Option<u64> {
        self.envelope
            .binary_search_by_key(&element, |e| e.0)
            .ok()
            .and_then(|i| self.envelope.get(i))
            .map(|e| e.1)
    }
}

#[derive(Clone, Debug, Default)]
pub struct Timeline {
    pub elements: Vec<Element>,
    /// Elements present from the start, bottom of the stack first (the reference's order:
    /// ghosts from the last final-state block down, then unmatched frees, latest first; for
    /// [`build_segments`] pre-existing segments instead of ghosts; for [`build_pools`] the
    /// starting pool envelopes first).
    pub initially_present: Vec<u32>,
    /// Allocations and frees in trace order; empty after [`Timeline::drop_steps`].
    pub steps: Vec<Step>,
    pub start_live_bytes: u64,
    pub peak_live_bytes: u64,
    pub final_live_bytes: u64,
    /// Private pools ([`build_pools`] only; empty otherwise).
    pub pools: Vec<PoolInfo>,
}

impl Timeline {
    /// Frees the steps once the layout is built: nothing reads them after that (the layout has
    /// every step's timestep, live bytes and event; [`crate::flame::live_elements`] works from
    /// those). 12 bytes per action: on the 150 MB real-file tile (1.49 M actions, 2.24 M trace
    /// entries) 17.9 MB, 8.0 bytes per trace entry.
    /// [`crate::steps::Steps::build_dropping_steps`] frees them while it lays them out
    /// instead, so they are not held beside the whole layout.
    pub fn drop_steps(&mut self) {
        self.steps = Vec::new();
    }

    fn size_of(&self, element: u32) -> u64 {
        self.elements
            .get(element as usize)
            .map_or(0, |e| e.size_bytes)
    }

    /// Live bytes at the start, at the peak and at the end, from the elements and steps; the
    /// last step of a build, which also drops the vectors' growth slack.
    fn compute_live_bytes(&mut self) {
        self.elements.shrink_to_fit();
        self.steps.shrink_to_fit();
        let mut live: u64 = 0;
        for &i in &self.initially_present {
            live = live.saturating_add(self.size_of(i));
        }
        self.start_live_bytes = live;
        let mut peak = live;
        for s in &self.steps {
            let size = self.size_of(s.element);
            if s.is_alloc {
                live = live.saturating_add(size);
                peak = peak.max(live);
            } else {
                live = live.saturating_sub(size);
            }
        }
        self.peak_live_bytes = peak;
        self.final_live_bytes = live;
    }

    fn push_element(&mut self, size_bytes: u64, origin: Origin, free_event: Option<u32>) -> u32 {
        let id = self.elements.len() as u32;
        self.elements.push(Element {
            size_bytes,
            origin,
            free_event,
        });
        id
    }

    fn push_step(&mut self, element: u32, event: u32, is_alloc: bool) {
        self.steps.push(Step {
            element,
            event,
            is_alloc,
        });
    }
}

/// What the pairing pass ([`pair_trace`]) reports: an allocation, the free that ends one, and a
/// free of an allocation the trace does not have. [`build`] keeps elements and steps;
/// [`live_totals`] only sums.
trait PairSink {
    /// What is remembered of a live allocation until its free.
    type Key;
    fn alloc(&mut self, event: u32, size: u64) -> Self::Key;
    /// `event` is the free's carrier (the request merged with it, or the free itself).
    fn freed(&mut self, key: Self::Key, event: u32);
    fn unmatched(&mut self, event: u32, size: u64);
}

/// SEMANTICS §3.1's pairing of one device's trace: allocations remembered by address until
/// their `free_completed` (merged with the `free_requested` right before it, whose fields it
/// keeps). Returns what is still remembered at the end: the live allocations by address.
fn pair_trace<S: PairSink>(snap: &Snapshot, device: i64, sink: &mut S) -> FxHashMap<u64, S::Key> {
    let Some(tr) = snap.trace(device) else {
        return FxHashMap::default();
    };
    // Allocations are remembered by address key: where the address column is coded (a caching
    // allocator reuses few addresses), the key is a dense code and a table replaces the hash
    // map (its inserts and removes were 8 % of a wasm parse + summary).
    let mut remembered = match tr.addr_key_space() {
        Some(n) => LiveByKey::Dense(std::iter::repeat_with(|| None).take(n).collect()),
        None => {
            let allocs = tr.actions().filter(|a| *a == Action::Alloc).count();
            let mut m = FxHashMap::default();
            m.reserve(allocs.min(1 << 20));
            LiveByKey::Sparse(m)
        }
    };
    // The previous *output* event of the annotate step, if it is a free_requested: (key, index).
    let mut prev_request: Option<(u64, u32)> = None;
    for (i, action) in tr.actions().enumerate() {
        let ev = i as u32;
        let pending = prev_request.take();
        let key = tr.addr_key(i).unwrap_or(0);
        match action {
            Action::Alloc => {
                let k = sink.alloc(ev, tr.size(i).unwrap_or(0));
                remembered.insert(key, k);
            }
            Action::FreeRequested => prev_request = Some((key, ev)),
            Action::FreeCompleted => {
                // Merged with the request right before it, the free keeps the request's fields.
                let carrier = match pending {
                    Some((a, req)) if a == key => req,
                    _ => ev,
                };
                match remembered.remove(key) {
                    Some(k) => sink.freed(k, carrier),
                    None => sink.unmatched(carrier, tr.size(carrier as usize).unwrap_or(0)),
                }
            }
            _ => {}
        }
    }
    match remembered {
        LiveByKey::Sparse(m) => m,
        LiveByKey::Dense(d) => d
            .into_iter()
            .enumerate()
            .filter_map(|(code, k)| Some((tr.addr_of_key(code as u64), k?)))
            .collect(),
    }
}

/// [`pair_trace`]'s live allocations by address key.
enum LiveByKey<K> {
    /// Indexed by code (a coded address column).
    Dense(Vec<Option<K>>),
    /// By address (a raw address column).
    Sparse(FxHashMap<u64, K>),
}

impl<K> LiveByKey<K> {
    #[inline]
    fn insert(&mut self, key: u64, k: K) {
        match self {
            LiveByKey::Dense(d) => {
                if let Some(slot) = d.get_mut(key as usize) {
                    *slot = Some(k);
                }
            }
            LiveByKey::Sparse(m) => {
                m.insert(key, k);
            }
        }
    }

    #[inline]
    fn remove(&mut self, key: u64) -> Option<K> {
        match self {
            LiveByKey::Dense(d) => d.get_mut(key as usize).and_then(Option::take),
            LiveByKey::Sparse(m) => m.remove(&key),
        }
    }
}

/// Ghosts: the device's `active_allocated` blocks of the final state whose address is not
/// `live` after the trace, in block order: (block index, requested size).
fn ghost_blocks<'a>(
    snap: &'a Snapshot,
    segments: SegmentsOf<'a>,
    live: impl Fn(u64) -> bool + Copy + 'a,
) -> impl Iterator<Item = (u32, u64)> + 'a {
    segments.iter(snap).flat_map(move |(_, seg)| {
        (seg.blocks.0..seg.blocks.1).filter_map(move |bi| {
            let b = snap.blocks.get(bi as usize)?;
            (b.state == BlockState::ActiveAllocated && !live(b.address))
                .then_some((bi, b.requested_size))
        })
    })
}

/// [`build`]'s sink: every element and step, and the unmatched frees in trace order.
struct TimelineSink {
    t: Timeline,
    unmatched: Vec<u32>,
}

impl PairSink for TimelineSink {
    type Key = u32;
    fn alloc(&mut self, event: u32, size: u64) -> u32 {
        let id = self.t.push_element(size, Origin::Alloc { event }, None);
        self.t.push_step(id, event, true);
        id
    }
    fn freed(&mut self, id: u32, event: u32) {
        if let Some(e) = self.t.elements.get_mut(id as usize) {
            e.free_event = Some(event);
        }
        self.t.push_step(id, event, false);
    }
    fn unmatched(&mut self, event: u32, size: u64) {
        let id = (self.t).push_element(size, Origin::UnmatchedFree { event }, Some(event));
        self.unmatched.push(id);
        self.t.push_step(id, event, false);
    }
}

/// Pair a device's trace with its final state.
pub fn build(snap: &Snapshot, device: i64) -> Timeline {
    let mut sink = TimelineSink {
        t: Timeline::default(),
        unmatched: Vec::new(),
    };
    if let Some(tr) = snap.trace(device) {
        let allocs = tr.actions().filter(|a| *a == Action::Alloc).count();
        let frees = tr.actions().filter(|a| *a == Action::FreeCompleted).count();
        // Allocations, unmatched frees (a guess: 1/8 of the frees) and ghosts (at most the
        // active blocks): reserved at once, trimmed at the end. Growing by doubling when the
        // ghosts came last took up to twice the elements (20 MB more on the 150 MB real-file
        // tile, whose 113 k ghosts passed the reservation).
        let active = ghost_blocks(snap, SegmentsOf::Scan(device), |_| false).count();
        sink.t.elements.reserve_exact(allocs + frees / 8 + active);
        sink.t.steps.reserve_exact(allocs + frees);
    }
    let remembered = pair_trace(snap, device, &mut sink);
    let TimelineSink { mut t, unmatched } = sink;
    // Ghosts: live blocks of the final state that the trace does not account for.
    let mut ghosts = Vec::new();
    let live = |a| remembered.contains_key(&a);
    for (block, size) in ghost_blocks(snap, SegmentsOf::Scan(device), live) {
        let id = t.elements.len() as u32;
        t.elements.push(Element {
            size_bytes: size,
            origin: Origin::Ghost { block },
            free_event: None,
        });
        ghosts.push(id);
    }
    // Reference order: [unmatched frees…, ghosts…] reversed, so the last final-state block is at
    // the bottom and the earliest unmatched free on top.
    t.initially_present = unmatched.into_iter().chain(ghosts).rev().collect();
    t.compute_live_bytes();
    t
}

/// What [`crate::summary`] needs of a [`build`] timeline: its element count and live bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveTotals {
    pub elements: u64,
    pub start_live_bytes: u64,
    pub peak_live_bytes: u64,
    pub final_live_bytes: u64,
}

/// [`live_totals`]' sink: counts and exact sums (i128), the size of each live allocation.
#[derive(Default)]
struct TotalsSink {
    elements: u64,
    start: u128,
    d: i128,
    peak_d: i128,
}

impl PairSink for TotalsSink {
    type Key = u64;
    fn alloc(&mut self, _event: u32, size: u64) -> u64 {
        self.elements += 1;
        self.d += i128::from(size);
        self.peak_d = self.peak_d.max(self.d);
        size
    }
    fn freed(&mut self, size: u64, _event: u32) {
        self.d -= i128::from(size);
    }
    fn unmatched(&mut self, _event: u32, size: u64) {
        self.elements += 1;
        self.start += u128::from(size);
        self.d -= i128::from(size);
    }
}

/// The totals of [`build`]`(snap, device)` without keeping its elements and steps (which cost
/// about 48 bytes per allocation: 1.2 GB for a 2 GB trace, measured). The same pairing pass
/// ([`pair_trace`]), remembering only each live allocation's size; live bytes are summed
/// exactly (in i128) and equal `build`'s saturating sums whenever no sum exceeds `u64::MAX`,
/// the only case in which they could differ (then this falls back to `build`).
pub fn live_totals(snap: &Snapshot, device: i64) -> LiveTotals {
    live_totals_in(snap, device, SegmentsOf::Scan(device))
}

/// [`live_totals`] with the device's final segments given (every device in turn: from one
/// [`crate::devices::DeviceSegments`], rather than a scan of all segments per device).
pub fn live_totals_in(snap: &Snapshot, device: i64, segments: SegmentsOf<'_>) -> LiveTotals {
    let mut sink = TotalsSink::default();
    let remembered = pair_trace(snap, device, &mut sink);
    for (_, size) in ghost_blocks(snap, segments, |a| remembered.contains_key(&a)) {
        sink.elements += 1;
        sink.start += u128::from(size);
    }
    let TotalsSink {
        elements,
        start,
        d,
        peak_d,
    } = sink;
    // start + d never goes below 0 (a free takes away one live element once); it fits when
    // its maximum does.
    let peak = i128::try_from(start)
        .ok()
        .and_then(|s| s.checked_add(peak_d));
    let fin = i128::try_from(start).ok().and_then(|s| s.checked_add(d));
    match (
        u64::try_from(start),
        peak.and_then(|p| u64::try_from(p).ok()),
        fin.and_then(|f| u64::try_from(f).ok()),
    ) {
        (Ok(s), Some(p), Some(f)) => LiveTotals {
            elements,
            start_live_bytes: s,
            peak_live_bytes: p,
            final_live_bytes: f,
        },
        _ => {
            let t = build(snap, device);
            LiveTotals {
                elements: t.elements.len() as u64,
                start_live_bytes: t.start_live_bytes,
                peak_live_bytes: t.peak_live_bytes,
                final_live_bytes: t.final_live_bytes,
            }
        }
    }
}
