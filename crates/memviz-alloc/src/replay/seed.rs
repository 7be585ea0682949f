//! The state at the trace's start (the backward replay) and the recorded segment events.

use super::{pool_of, PoolId, Prepared, SeedSeg};
use crate::consts::*;
use crate::model::{round_size, Piece, SegEvent, SegKind};
use crate::settings::Settings;
use memviz_analysis::state::{Event, Kind, Source, State};
use memviz_snapshot::{Action, DeviceTrace, Snapshot, StackId};
use std::collections::BTreeMap;

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
        // The device's limit as the trace shows it: reserved plus `device_free` at each `oom`
        // (the smallest), and whether segments were freed inside a malloc (the device was full).
        let mut oom_limit: Option<u64> = None;
        let mut full = false;
        if let Some(tr) = tr {
            for (i, a) in tr.actions().enumerate() {
                if a == Action::Oom {
                    if let Some(f) = tr.device_free_of(i as u32) {
                        let l = reserved.saturating_add(f);
                        oom_limit = Some(oom_limit.map_or(l, |o| o.min(l)));
                    }
                }
                if matches!(a, Action::SegmentFree | Action::SegmentUnmap)
                    && i.checked_sub(1)
                        .and_then(|j| tr.action(j))
                        .is_none_or(|p| !matches!(p, Action::SegmentFree | Action::SegmentUnmap))
                    && super::classify_run(tr, i) == super::Run::Pressure
                {
                    full = true;
                }
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
            // Never below what the recording held; the trace's own numbers where it was full.
            recorded_capacity: match oom_limit {
                Some(l) => Some(l.max(peak)),
                None => full.then_some(peak),
            },
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

    /// The device's limit as the trace shows it, when it shows the device was full: the
    /// reserved bytes plus `device_free` at its `oom` entries (the smallest), else, when
    /// segments were freed inside a malloc, the recorded peak of reserved bytes; never below
    /// that peak. `None`: the trace never shows the limit.
    #[must_use]
    pub fn recorded_capacity(&self) -> Option<u64> {
        self.recorded_capacity
    }
}
