//! Driving the model from a device trace (ALLOCATOR.md §9): the state at the trace's start,
//! the recorded device pressure, `empty_cache` calls, and the answers.

mod outcome;
mod seed;
mod validation;

pub use outcome::{Fragmentation, OomAt, Outcome};
pub use validation::{validate, Counts, Difference, Validation};

use crate::model::{round_size, Model, Piece, SegEvent, SegKind};
use crate::settings::Settings;
use memviz_snapshot::{Action, DeviceTrace, Snapshot, StackId};
use rustc_hash::FxHashMap;
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

/// One segment of the state at the trace's start.
#[derive(Clone, Debug)]
pub(crate) struct SeedSeg {
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
///
/// [`State::undo`]: memviz_analysis::state::State::undo
pub struct Prepared<'a> {
    pub snap: &'a Snapshot,
    pub device: i64,
    /// The settings the file was recorded under ([`Settings::from_snapshot`]).
    pub recorded: Settings,
    pub warnings: Vec<String>,
    pub(crate) seeds: Vec<SeedSeg>,
    /// Reserved bytes at the start as recorded.
    pub(crate) initial_reserved: u64,
    /// Final segments in private pools (address → pool), to route allocations.
    pub(crate) private_segments: FxHashMap<u64, (i64, i64)>,
    /// Recorded segment events: (kind, size, row).
    pub(crate) recorded_events: Vec<SegEvent>,
    pub(crate) recorded_peak: u64,
    /// [`Prepared::recorded_capacity`].
    pub(crate) recorded_capacity: Option<u64>,
}

fn pool_of(tr: &DeviceTrace, row: usize) -> Option<(i64, i64)> {
    let r = u32::try_from(row).ok()?;
    tr.pool_id
        .binary_search_by_key(&r, |p| p.0)
        .ok()
        .and_then(|j| tr.pool_id.get(j))
        .map(|p| p.1)
}

/// Recorded segment frees and what they were.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Run {
    /// Inside a malloc (followed by its new segment, or by an `oom`): the device was full.
    Pressure,
    /// Anything else: `torch.cuda.empty_cache()`.
    EmptyCache,
}

pub(crate) fn classify_run(tr: &DeviceTrace, start: usize) -> Run {
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

impl Prepared<'_> {
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
            recorded_capacity: if opts.capacity.is_none() && opts.recorded_pressure {
                self.recorded_capacity
            } else {
                None
            },
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
        // Without a capacity, every malloc is held to the device's limit the trace shows.
        let device_cap = if hints { self.recorded_capacity } else { None };
        let mut pressure = false;
        let mut seg_hint: Option<u64> = None;
        let mut prev_action: Option<Action> = None;
        let mut heap_peak = m.heap_bytes();
        // The first OOM at trace event `i` (its site is named after the replay).
        let oom_at =
            |i: usize, size: u64, stream: u64, recorded: bool, cap: Option<u64>, free| OomAt {
                event: i as u64,
                merged_event: memviz_analysis::state::merged_index(snap, self.device, i as u64),
                requested: size,
                rounded: round_size(settings, size),
                stream,
                stack: tr.stack(i).unwrap_or(StackId::EMPTY),
                site: None,
                recorded,
                capacity: cap,
                free,
            };
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
                    let mut cap = opts.capacity.or(device_cap);
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
                                out.first_oom = Some(oom_at(i, size, stream, false, cap, free));
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
                        device_free
                            .map(|f| shadow.reserved.saturating_add(f))
                            .or(device_cap)
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
                                out.first_oom = Some(oom_at(i, size, stream, true, cap, free));
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
