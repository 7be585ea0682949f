//! Driving the model from a device trace (ALLOCATOR.md §9): the state at the trace's start,
//! the recorded device pressure, `empty_cache` calls, and the answers.

use crate::consts::*;
use crate::model::{round_size, FreeAtOom, Model, Piece, SegEvent, SegKind};
use crate::settings::Settings;
use memviz_analysis::state::{Event, Kind, Source, State};
use memviz_snapshot::{Action, DeviceTrace, Snapshot, StackId};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// The replay was cancelled by its progress hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancelled;

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cancelled")
    }
}
impl std::error::Error for Cancelled {}

/// How often (in trace events) the progress hook is called.
pub const PROGRESS_EVERY: usize = 1 << 16;

/// How a replay runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The device's capacity in bytes; `None`: unknown (see [`Options::recorded_pressure`]).
    pub capacity: Option<u64>,
    /// Without a capacity: where the trace shows the device was full (segment frees inside a
    /// malloc, an `oom` with its `device_free`), that malloc gets the capacity the recording
    /// implies (reserved then, plus the new segment or `device_free`). Ignored with a capacity.
    pub recorded_pressure: bool,
    /// Stop at the first OOM of any kind (bisection).
    pub stop_at_first_oom: bool,
    /// Keep every segment event (for the answer's size lists and the validation).
    pub record_events: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            capacity: None,
            recorded_pressure: true,
            stop_at_first_oom: false,
            record_events: true,
        }
    }
}

/// Reserved minus allocated when reserved reached its peak.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Fragmentation {
    /// The trace event at which the peak was reached.
    pub event: u64,
    pub reserved: u64,
    pub allocated: u64,
    /// reserved − allocated.
    pub free: u64,
    pub largest_free_block: u64,
}

/// The first request the model could not satisfy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OomAt {
    /// Trace event index (row of the device trace).
    pub event: u64,
    /// Requested bytes (the `alloc`'s size; the `oom`'s rounded size at a recorded OOM).
    pub requested: u64,
    /// Rounded under the replayed settings.
    pub rounded: u64,
    pub stream: u64,
    /// The event's stack (name it with memviz's site classifier).
    #[serde(skip)]
    pub stack: StackId,
    /// The site's label by memviz's frame rules ([`crate::name_site`]); `None` until named.
    pub site: Option<String>,
    /// The trace recorded an `oom` here too.
    pub recorded: bool,
    /// The capacity the request was refused under.
    pub capacity: Option<u64>,
    pub free: FreeAtOom,
}

/// The answer of one replay of one device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    pub device: i64,
    /// The canonical conf string of the settings replayed (`""` = PyTorch's defaults).
    pub settings: String,
    pub capacity: Option<u64>,
    /// cudaMalloc sizes (expandable: mapped sizes) in event order.
    pub segment_allocs: Vec<u64>,
    /// cudaFree sizes (expandable: unmapped sizes) in event order.
    pub segment_frees: Vec<u64>,
    pub peak_reserved: u64,
    /// Peak of the allocator's allocated bytes (rounded block sizes, pending frees included).
    pub peak_allocated: u64,
    pub fragmentation_at_peak: Fragmentation,
    /// cudaMalloc calls plus page maps.
    pub cuda_mallocs: u64,
    /// cudaFree calls plus page unmaps.
    pub cuda_frees: u64,
    pub first_oom: Option<OomAt>,
    /// Requests refused (recorded `oom`s the model also refused count here).
    pub ooms: u64,
    /// Recorded `oom`s whose request the model satisfied (then released at once).
    pub recorded_ooms_fitted: u64,
    /// `empty_cache` calls replayed (recorded segment frees outside any malloc).
    pub empty_cache_calls: u64,
    /// Bytes reserved and allocated at the trace's start (the seeded state).
    pub initial_reserved: u64,
    pub initial_allocated: u64,
    /// The whole trace was replayed (false after an OOM the recording did not have, or with
    /// `stop_at_first_oom`).
    pub completed: bool,
    pub events: u64,
    /// Frees of addresses the model does not know, and the like.
    pub inconsistencies: u64,
    /// Filled by [`crate::min_capacity`] callers; `None` when not computed.
    pub min_capacity: Option<u64>,
    /// The model's segment events (kind, size, trace event), for the validation.
    #[serde(skip)]
    pub seg_events: Vec<SegEvent>,
    /// Peak heap bytes of the model's state.
    #[serde(skip)]
    pub model_heap_bytes: usize,
}

/// One segment of the state at the trace's start.
#[derive(Clone, Debug)]
struct SeedSeg {
    stream: u64,
    pool: (i64, i64),
    small: bool,
    expandable: bool,
    pieces: Vec<(u64, u64, Piece)>,
}

/// A device's trace made ready for replays: the state at its start (SEMANTICS.md §6's backward
/// replay from the final segments, through memviz-analysis's [`State::undo`]), the recorded
/// settings, and which recorded segment frees are `empty_cache` calls. Build it once and
/// replay it under many settings.
pub struct Prepared<'a> {
    pub snap: &'a Snapshot,
    pub device: i64,
    /// The settings the file was recorded under ([`Settings::from_snapshot`]).
    pub recorded: Settings,
    pub warnings: Vec<String>,
    seeds: Vec<SeedSeg>,
    /// Reserved bytes at the start as recorded.
    initial_reserved: u64,
    /// Final segments in private pools (address → pool), to route allocations.
    private_segments: FxHashMap<u64, (i64, i64)>,
    /// Recorded segment events: (kind, size, row).
    recorded_events: Vec<SegEvent>,
    recorded_peak: u64,
}

fn pool_of(tr: &DeviceTrace, row: usize) -> Option<(i64, i64)> {
    let r = u32::try_from(row).ok()?;
    tr.pool_id
        .binary_search_by_key(&r, |p| p.0)
        .ok()
        .and_then(|j| tr.pool_id.get(j))
        .map(|p| p.1)
}

fn event_at(tr: &DeviceTrace, row: usize, kind: Kind) -> Event {
    Event {
        row: row as u32,
        kind,
        addr: tr.addr(row).unwrap_or(0),
        size: tr.size(row).unwrap_or(0),
        stream: tr.stream.get(row).unwrap_or(0),
        stack: tr.stack(row).unwrap_or(StackId::EMPTY),
        pool: pool_of(tr, row).unwrap_or((0, 0)),
    }
}

/// The state before the first event: the final state with every event undone, last first
/// (the §2 merge: a `free_completed` right after its `free_requested` is one `free`).
fn initial_state(snap: &Snapshot, device: i64) -> State {
    let mut st = State::from_snapshot(snap, device);
    let Some(tr) = snap.trace(device) else {
        return st;
    };
    let mut r = tr.len();
    while r > 0 {
        r -= 1;
        let Some(action) = tr.action(r) else { continue };
        let kind = match action {
            Action::Alloc => Kind::Alloc,
            Action::FreeRequested => Kind::FreeRequested,
            Action::FreeCompleted => {
                if r > 0
                    && tr.action(r - 1) == Some(Action::FreeRequested)
                    && tr.addr(r - 1) == tr.addr(r)
                {
                    r -= 1;
                    st.undo(&event_at(tr, r, Kind::Free));
                    continue;
                }
                Kind::FreeCompleted
            }
            Action::SegmentAlloc => Kind::SegmentAlloc,
            Action::SegmentFree => Kind::SegmentFree,
            Action::SegmentMap => Kind::SegmentMap,
            Action::SegmentUnmap => Kind::SegmentUnmap,
            _ => continue,
        };
        st.undo(&event_at(tr, r, kind));
    }
    st
}

/// Recorded segment frees and what they were.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    /// Inside a malloc (followed by its new segment, or by an `oom`): the device was full.
    Pressure,
    /// Anything else: `torch.cuda.empty_cache()`.
    EmptyCache,
}

fn classify_run(tr: &DeviceTrace, start: usize) -> Run {
    let mut j = start;
    while matches!(
        tr.action(j),
        Some(Action::SegmentFree | Action::SegmentUnmap)
    ) {
        j += 1;
    }
    match tr.action(j) {
        Some(Action::SegmentAlloc | Action::SegmentMap | Action::Oom) => Run::Pressure,
        _ => Run::EmptyCache,
    }
}

/// A private pool id ((0, 0) = the default pool).
type PoolId = (i64, i64);

/// Recorded segments (address → (end, pool)) and reserved bytes, kept along the replay.
struct Shadow {
    ranges: BTreeMap<u64, (u64, (i64, i64))>,
    reserved: u64,
}

impl Shadow {
    fn insert(&mut self, addr: u64, size: u64, pool: (i64, i64)) {
        self.ranges.insert(addr, (addr.saturating_add(size), pool));
        self.reserved = self.reserved.saturating_add(size);
    }
    fn remove(&mut self, addr: u64, size: u64) {
        let end = addr.saturating_add(size);
        let hit: Vec<(u64, (u64, PoolId))> = self
            .ranges
            .range(..end)
            .rev()
            .take_while(|(_, v)| v.0 > addr)
            .map(|(k, v)| (*k, *v))
            .collect();
        for (s, (e, pool)) in hit {
            self.ranges.remove(&s);
            if s < addr {
                self.ranges.insert(s, (addr, pool));
            }
            if end < e {
                self.ranges.insert(end, (e, pool));
            }
        }
        self.reserved = self.reserved.saturating_sub(size);
    }
    fn pool_at(&self, addr: u64) -> Option<(i64, i64)> {
        self.ranges
            .range(..=addr)
            .next_back()
            .filter(|(_, v)| v.0 > addr)
            .map(|(_, v)| v.1)
    }
}

/// An expandable seed's reservation tail (unmapped address space after its last range).
const SEED_TAIL: u64 = 1 << 40;

impl<'a> Prepared<'a> {
    /// Builds the start state of `device` (segments and live blocks, with block sizes rounded
    /// under the recorded settings where the trace only knows the request).
    #[must_use]
    pub fn new(snap: &'a Snapshot, device: i64) -> Prepared<'a> {
        let (recorded, mut warnings) = Settings::from_snapshot(snap);
        let st = initial_state(snap, device);
        if st.inconsistencies > 0 {
            warnings.push(format!(
                "{} events of the backward replay found nothing to undo",
                st.inconsistencies
            ));
        }
        let tr = snap.trace(device);
        // Each start segment: small or large, expandable or not.
        let mut plain: Vec<SeedSeg> = Vec::new();
        let mut exp_groups: BTreeMap<(PoolId, u64, bool), Vec<(u64, u64)>> = BTreeMap::new();
        let mut exp_blocks: Vec<(u64, u64, Piece)> = Vec::new();
        for (&addr, seg) in st.segments.iter() {
            let end = addr.saturating_add(seg.size);
            let mut pieces: Vec<(u64, u64, Piece)> = Vec::new();
            let (expandable, typed_small) = match seg.src.get() {
                Source::Final(i) => {
                    let s = snap.segments.get(i as usize);
                    (
                        s.is_some_and(|s| s.is_expandable),
                        s.map(|s| snap.str(s.segment_type) == "small"),
                    )
                }
                Source::Row(r) => (
                    tr.and_then(|t| t.action(r as usize)) == Some(Action::SegmentUnmap),
                    None,
                ),
                Source::Unknown => (false, None),
            };
            let live: Vec<(u64, memviz_analysis::state::Blk)> =
                st.blocks.range(addr..end).map(|(a, b)| (*a, *b)).collect();
            let small = typed_small.unwrap_or_else(|| {
                if live.iter().any(|(_, b)| b.requested > SMALL_SIZE) {
                    false
                } else if expandable {
                    seg.size % LARGE_BUFFER != 0
                } else {
                    seg.size == SMALL_BUFFER
                }
            });
            let mut cur = addr;
            for (i, (a, b)) in live.iter().enumerate() {
                if *a < cur {
                    continue;
                }
                if *a > cur {
                    pieces.push((cur, *a - cur, Piece::Free));
                }
                let limit = live.get(i + 1).map_or(end, |n| n.0.min(end)).max(*a);
                let mut size = match b.src.get() {
                    Source::Final(_) => b.size,
                    _ => round_size(&recorded, b.requested),
                }
                .min(limit - *a);
                let gap = limit - *a - size;
                // A large-pool leftover of at most 1 MiB stays inside the block (§4).
                if !small && !expandable && gap > 0 && gap <= SMALL_SIZE {
                    size += gap;
                }
                if size == 0 {
                    continue;
                }
                let what = if b.pending {
                    Piece::Pending
                } else {
                    Piece::Allocated
                };
                pieces.push((*a, size, what));
                cur = *a + size;
            }
            if cur < end {
                pieces.push((cur, end - cur, Piece::Free));
            }
            if expandable {
                exp_groups
                    .entry((seg.pool, seg.stream, small))
                    .or_default()
                    .push((addr, end));
                exp_blocks.extend(pieces);
            } else {
                plain.push(SeedSeg {
                    stream: seg.stream,
                    pool: seg.pool,
                    small,
                    expandable: false,
                    pieces,
                });
            }
        }
        // Expandable ranges of one (pool, stream, kind) are one reservation: unmapped pieces
        // between them and after the last.
        for ((pool, stream, small), ranges) in exp_groups {
            let mut pieces = Vec::new();
            let mut cur: Option<u64> = None;
            for (s, e) in ranges {
                if let Some(c) = cur {
                    if s > c {
                        pieces.push((c, s - c, Piece::Unmapped));
                    }
                }
                pieces.extend(exp_blocks.iter().filter(|p| p.0 >= s && p.0 < e).copied());
                cur = Some(e);
            }
            if let Some(c) = cur {
                pieces.push((c, SEED_TAIL, Piece::Unmapped));
            }
            plain.push(SeedSeg {
                stream,
                pool,
                small,
                expandable: true,
                pieces,
            });
        }
        let private_segments = snap
            .segments
            .iter()
            .filter(|s| s.device == device && s.pool_id != (0, 0))
            .map(|s| (s.address, s.pool_id))
            .collect();
        // The recorded segment events and peak reserved.
        let mut recorded_events = Vec::new();
        let mut reserved = st.reserved_bytes;
        let mut peak = reserved;
        if let Some(tr) = tr {
            for (i, a) in tr.actions().enumerate() {
                let kind = match a {
                    Action::SegmentAlloc => SegKind::Alloc,
                    Action::SegmentFree => SegKind::Free,
                    Action::SegmentMap => SegKind::Map,
                    Action::SegmentUnmap => SegKind::Unmap,
                    _ => continue,
                };
                let size = tr.size(i).unwrap_or(0);
                if matches!(kind, SegKind::Alloc | SegKind::Map) {
                    reserved = reserved.saturating_add(size);
                    peak = peak.max(reserved);
                } else {
                    reserved = reserved.saturating_sub(size);
                }
                recorded_events.push(SegEvent {
                    kind,
                    size,
                    event: i as u32,
                });
            }
        }
        Prepared {
            snap,
            device,
            recorded,
            warnings,
            seeds: plain,
            initial_reserved: st.reserved_bytes,
            private_segments,
            recorded_events,
            recorded_peak: peak,
        }
    }

    /// The trace's own segment events (kind, size, row), in order.
    #[must_use]
    pub fn recorded_events(&self) -> &[SegEvent] {
        &self.recorded_events
    }

    /// The recorded peak of reserved bytes (start state plus segment events).
    #[must_use]
    pub fn recorded_peak_reserved(&self) -> u64 {
        self.recorded_peak
    }

    /// Replays the trace under `settings`. `progress(done, total)` is called every
    /// [`PROGRESS_EVERY`] events; returning `false` cancels.
    pub fn replay(
        &self,
        settings: &Settings,
        opts: &Options,
        progress: &mut dyn FnMut(usize, usize) -> bool,
    ) -> Result<Outcome, Cancelled> {
        let snap = self.snap;
        let mut m = Model::new(settings.clone(), opts.capacity);
        m.record_events = opts.record_events;
        // Trace address → model block.
        let mut live: FxHashMap<u64, u32> = FxHashMap::default();
        let mut shadow = Shadow {
            ranges: BTreeMap::new(),
            reserved: 0,
        };
        for s in &self.seeds {
            let pool = m.pool(s.pool, s.small);
            let ids = m.seed_segment(pool, s.stream, s.expandable, &s.pieces);
            for (p, id) in s.pieces.iter().zip(ids) {
                if matches!(p.2, Piece::Allocated | Piece::Pending) {
                    live.insert(p.0, id);
                }
                if p.2 != Piece::Unmapped {
                    // Contiguous mapped pieces are one recorded range each; fine for lookups.
                    shadow.ranges.insert(p.0, (p.0.saturating_add(p.1), s.pool));
                }
            }
        }
        shadow.reserved = self.initial_reserved;
        let initial_reserved = m.reserved;
        let initial_allocated = m.allocated;
        let mut out = Outcome {
            device: self.device,
            settings: settings.to_string(),
            capacity: opts.capacity,
            segment_allocs: Vec::new(),
            segment_frees: Vec::new(),
            peak_reserved: 0,
            peak_allocated: 0,
            fragmentation_at_peak: Fragmentation {
                event: 0,
                reserved: m.reserved,
                allocated: m.allocated,
                free: m.reserved.saturating_sub(m.allocated),
                largest_free_block: m.largest_free_block(),
            },
            cuda_mallocs: 0,
            cuda_frees: 0,
            first_oom: None,
            ooms: 0,
            recorded_ooms_fitted: 0,
            empty_cache_calls: 0,
            initial_reserved,
            initial_allocated,
            completed: true,
            events: 0,
            inconsistencies: 0,
            min_capacity: None,
            seg_events: Vec::new(),
            model_heap_bytes: 0,
        };
        let Some(tr) = snap.trace(self.device) else {
            return Ok(self.finish(m, out));
        };
        let n = tr.len();
        let hints = opts.capacity.is_none() && opts.recorded_pressure;
        let mut pressure = false;
        let mut seg_hint: Option<u64> = None;
        let mut prev_action: Option<Action> = None;
        let mut heap_peak = m.heap_bytes();
        for i in 0..n {
            if i % PROGRESS_EVERY == 0 {
                if !progress(i, n) {
                    return Err(Cancelled);
                }
                heap_peak = heap_peak.max(m.heap_bytes());
            }
            let Some(action) = tr.action(i) else { break };
            m.event = i as u32;
            out.events = i as u64 + 1;
            let addr = tr.addr(i).unwrap_or(0);
            let size = tr.size(i).unwrap_or(0);
            let stream = tr.stream.get(i).unwrap_or(0);
            match action {
                Action::Alloc => {
                    let pool = pool_of(tr, i)
                        .or_else(|| shadow.pool_at(addr))
                        .unwrap_or((0, 0));
                    let mut cap = opts.capacity;
                    if pressure {
                        // Frees right before a malloc that made a segment: its failure path,
                        // unless the cache could have served it, in which case they were an
                        // `empty_cache` call just before it.
                        if m.would_hit(size, stream, pool) {
                            m.empty_cache();
                            out.empty_cache_calls += 1;
                        } else if hints {
                            cap = Some(shadow.reserved);
                        }
                    }
                    pressure = false;
                    m.addr_hint = seg_hint.take();
                    match m.malloc(size, stream, pool, cap) {
                        Ok(id) => {
                            if live.insert(addr, id).is_some() {
                                out.inconsistencies += 1;
                            }
                        }
                        Err(free) => {
                            out.ooms += 1;
                            if out.first_oom.is_none() {
                                out.first_oom = Some(OomAt {
                                    event: i as u64,
                                    requested: size,
                                    rounded: round_size(settings, size),
                                    stream,
                                    stack: tr.stack(i).unwrap_or(StackId::EMPTY),
                                    site: None,
                                    recorded: false,
                                    capacity: cap,
                                    free,
                                });
                            }
                            out.completed = false;
                            break;
                        }
                    }
                    self.note_peak(&mut m, &mut out, i);
                }
                Action::FreeRequested => match live.get(&addr) {
                    Some(&id) => m.free_requested(id),
                    None => out.inconsistencies += 1,
                },
                Action::FreeCompleted => match live.remove(&addr) {
                    Some(id) => m.free_completed(id),
                    None => {
                        if prev_action != Some(Action::FreeRequested) {
                            out.inconsistencies += 1;
                        }
                    }
                },
                Action::SegmentAlloc | Action::SegmentMap => {
                    let pool = pool_of(tr, i)
                        .or_else(|| self.private_segments.get(&addr).copied())
                        .unwrap_or((0, 0));
                    shadow.insert(addr, size, pool);
                    if seg_hint.is_none() {
                        seg_hint = Some(addr);
                    }
                }
                Action::SegmentFree | Action::SegmentUnmap => {
                    let first = !matches!(
                        prev_action,
                        Some(Action::SegmentFree | Action::SegmentUnmap)
                    );
                    if first {
                        match classify_run(tr, i) {
                            Run::Pressure => pressure = true,
                            Run::EmptyCache => {
                                m.empty_cache();
                                out.empty_cache_calls += 1;
                                // Blocks the sync completed are gone from the trace's view too.
                            }
                        }
                    }
                    shadow.remove(addr, size);
                }
                Action::Oom => {
                    let device_free = tr.device_free_of(i as u32);
                    let cap = if hints {
                        device_free.map(|f| shadow.reserved.saturating_add(f))
                    } else {
                        opts.capacity
                    };
                    pressure = false;
                    seg_hint = None;
                    match m.malloc(size, stream, (0, 0), cap) {
                        Ok(id) => {
                            out.recorded_ooms_fitted += 1;
                            m.free_requested(id);
                            m.free_completed(id);
                        }
                        Err(free) => {
                            out.ooms += 1;
                            if out.first_oom.is_none() {
                                out.first_oom = Some(OomAt {
                                    event: i as u64,
                                    requested: size,
                                    rounded: round_size(settings, size),
                                    stream,
                                    stack: tr.stack(i).unwrap_or(StackId::EMPTY),
                                    site: None,
                                    recorded: true,
                                    capacity: cap,
                                    free,
                                });
                            }
                            if opts.stop_at_first_oom {
                                out.completed = false;
                                break;
                            }
                        }
                    }
                    self.note_peak(&mut m, &mut out, i);
                }
                _ => {}
            }
            if !matches!(action, Action::SegmentAlloc | Action::SegmentMap) {
                seg_hint = None;
            }
            prev_action = Some(action);
        }
        if !progress(n, n) {
            return Err(Cancelled);
        }
        out.model_heap_bytes = heap_peak.max(m.heap_bytes());
        Ok(self.finish(m, out))
    }

    /// After a malloc: the fragmentation at a new reserved peak.
    fn note_peak(&self, m: &mut Model, out: &mut Outcome, i: usize) {
        if m.peak_moved {
            m.peak_moved = false;
            out.fragmentation_at_peak = Fragmentation {
                event: i as u64,
                reserved: m.reserved,
                allocated: m.allocated,
                free: m.reserved.saturating_sub(m.allocated),
                largest_free_block: m.largest_free_block(),
            };
        }
    }

    fn finish(&self, m: Model, mut out: Outcome) -> Outcome {
        out.peak_reserved = m.peak_reserved;
        out.peak_allocated = m.peak_allocated;
        out.cuda_mallocs = m.cuda_mallocs;
        out.cuda_frees = m.cuda_frees;
        for e in &m.seg_events {
            match e.kind {
                SegKind::Alloc | SegKind::Map => out.segment_allocs.push(e.size),
                SegKind::Free | SegKind::Unmap => out.segment_frees.push(e.size),
            }
        }
        out.seg_events = m.seg_events;
        out
    }
}

/// Names the first OOM's site with memviz's frame classifier (the user's line first).
pub fn name_site(snap: &Snapshot, out: &mut Outcome) {
    if let Some(o) = out.first_oom.as_mut() {
        let mut cache = memviz_analysis::site::SiteCache::default_for(snap);
        o.site = Some(cache.site(snap, o.stack).label.clone());
    }
}

/// One replay of `device` under `settings` on a device of `capacity` bytes (`None`: the
/// recorded device, see [`Options::recorded_pressure`]), the first OOM's site named.
pub fn replay(
    snap: &Snapshot,
    device: i64,
    settings: &Settings,
    capacity: Option<u64>,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<Outcome, Cancelled> {
    let p = Prepared::new(snap, device);
    let opts = Options {
        capacity,
        ..Options::default()
    };
    let mut out = p.replay(settings, &opts, progress)?;
    name_site(snap, &mut out);
    Ok(out)
}

/// Model against recording, per kind and in order (issue 31 item 2).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Validation {
    pub device: i64,
    pub settings: String,
    pub recorded: Counts,
    pub model: Counts,
    /// Same kinds and sizes in the same order, and the same peak reserved.
    pub matches: bool,
    /// The same segment events at the same trace events, compared as a multiset per trace
    /// event (so only the order inside one release may differ), and the same peak reserved.
    pub matches_per_event: bool,
    /// The first position where the sequences differ: (index, recorded trace row or None,
    /// recorded (kind, size), model (kind, size)).
    pub first_difference: Option<Difference>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    pub index: usize,
    pub recorded: Option<SegEvent>,
    pub model: Option<SegEvent>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub segment_alloc: u64,
    pub segment_free: u64,
    pub segment_map: u64,
    pub segment_unmap: u64,
    pub peak_reserved: u64,
}

fn counts(events: &[SegEvent], peak: u64) -> Counts {
    let mut c = Counts {
        peak_reserved: peak,
        ..Counts::default()
    };
    for e in events {
        match e.kind {
            SegKind::Alloc => c.segment_alloc += 1,
            SegKind::Free => c.segment_free += 1,
            SegKind::Map => c.segment_map += 1,
            SegKind::Unmap => c.segment_unmap += 1,
        }
    }
    c
}

/// Replays `device` as recorded (recorded settings, recorded pressure) and compares the
/// model's segment events with the trace's.
pub fn validate(
    snap: &Snapshot,
    device: i64,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<Validation, Cancelled> {
    let p = Prepared::new(snap, device);
    let out = p.replay(&p.recorded, &Options::default(), progress)?;
    let rec = p.recorded_events();
    let first_difference = (0..rec.len().max(out.seg_events.len()))
        .find(|&k| {
            let (a, b) = (rec.get(k), out.seg_events.get(k));
            a.map(|e| (e.kind, e.size)) != b.map(|e| (e.kind, e.size))
        })
        .map(|index| Difference {
            index,
            recorded: rec.get(index).copied(),
            model: out.seg_events.get(index).copied(),
        });
    let recorded = counts(rec, p.recorded_peak_reserved());
    // The model's events carry the trace row they happened in; the recorded ones carry their
    // own row, which for a release is the row of its first event, so group both by the model's
    // notion: consecutive recorded segment events belong to the malloc or call that follows.
    let grouped = |v: &[SegEvent], by_row: bool| -> Vec<Vec<(u8, u64)>> {
        let mut out: Vec<Vec<(u8, u64)>> = Vec::new();
        let mut last: Option<u32> = None;
        for e in v {
            let key = e.event;
            let contiguous = last.is_some_and(|l| if by_row { key == l + 1 } else { key == l });
            if !contiguous {
                out.push(Vec::new());
            }
            if let Some(g) = out.last_mut() {
                g.push((e.kind as u8, e.size));
            }
            last = Some(key);
        }
        for g in &mut out {
            g.sort_unstable();
        }
        out
    };
    let matches_per_event = grouped(rec, true) == grouped(&out.seg_events, false)
        && p.recorded_peak_reserved() == out.peak_reserved;
    let model = counts(&out.seg_events, out.peak_reserved);
    Ok(Validation {
        device,
        settings: p.recorded.to_string(),
        matches: first_difference.is_none() && recorded.peak_reserved == model.peak_reserved,
        matches_per_event,
        recorded,
        model,
        first_difference,
    })
}
