//! [`OomScan`]: every `oom` event of a device explained in one backward pass, with the numbers
//! of [`super::explain_oom`] kept up to date as events are undone.
//!
//! # Why
//! Explaining each `oom` event from its own state (rebuild the final state, undo back to the
//! event, scan every segment's free ranges) costs the state's size per event: a 560 KB file of
//! 100 k `oom` events over 1,000 blocks took 7 s and 1.6 GB, and the cost grows with events ×
//! state. Here the state is undone once, from the end back to the first event, and what a
//! report needs is maintained as it changes:
//! * *Free bytes and the largest free block.* Blocks are keyed by address in a fixed table of
//!   every address a block can have (the final blocks' and the trace's block events'), and a
//!   segment tree over it holds, for every live block, the gap between it and the live block
//!   before it. With live blocks that do not overlap (always, for a real allocator), a
//!   segment's free ranges are the gap before its first block, the gaps of its other blocks and
//!   the gap after its last one: O(log n) per segment. Each segment's free bytes and largest
//!   free range are cached; a change of a block or segment marks only the segment containing it
//!   stale, and the totals (free bytes in all; the largest free range per stream and pool) are
//!   updated when a report needs them.
//! * *The biggest live blocks.* A set ordered by (size descending, address).
//! * Consecutive reports over an unchanged state share their numbers.
//!
//! Reports come out in event order: the pass runs backwards and keeps 32 bytes per `oom` event,
//! and each report's text is made when it is taken.
//!
//! Overlapping blocks or segments (a hostile file; never a real allocator) make the cached gaps
//! meaningless: the segments concerned are then scanned block by block as
//! [`super::State::free_ranges`] does, which is exact but costs their blocks per report. That
//! work is bounded by [`WORK_LIMIT`]; past it the scan stops with an error that says why.

use std::cmp::Reverse;

use memviz_snapshot::{Action, Snapshot, StackId};

use super::history::{absorbed, event_at, prev_row};
use super::map::undo;
use super::oom::{verdict, Numbers, OomReport, BIGGEST};
use super::State;
use crate::devices::SegmentsOf;

mod gaps;
mod live;
use live::Live;

/// Most block and segment visits the exact fallback (overlapping blocks or segments) may make
/// before the scan gives up (about a second of work).
pub const WORK_LIMIT: u64 = 1 << 27;

/// Why [`OomScan`] could not explain a device's `oom` events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OomScanError {
    /// The memory for part of the scan (`what`: block addresses, reports, the block index)
    /// could not be reserved.
    #[error("device {device}: not enough memory for the {what} of its {ooms} oom events")]
    NoMemory {
        device: i64,
        what: &'static str,
        ooms: usize,
    },
    /// Blocks or segments overlap, and explaining the states exactly passes [`WORK_LIMIT`].
    #[error(
        "device {device}: explaining its {ooms} oom events would take more than \
         {WORK_LIMIT} steps: its blocks or segments overlap (a real allocator's \
         never do), so each state is scanned in full"
    )]
    TooMuchWork { device: i64, ooms: usize },
}

/// The numbers of one `oom` event.
#[derive(Clone, Copy, Debug)]
struct Record {
    /// Index in the merged event list.
    k: usize,
    /// Trace row.
    row: u32,
    /// Index into [`OomScan::stats`].
    stats: u32,
    largest: u64,
}

/// Numbers shared by the reports of one state.
#[derive(Clone, Copy, Debug)]
struct Stats {
    reserved: u64,
    allocated: u64,
    reserved_free: u64,
    /// Index into [`OomScan::biggest`].
    biggest: u32,
}

/// Every `oom` event of a device, explained ([`OomReport`]), in event order. Built by one
/// backward pass over the trace (the module documentation); iterate it for the reports.
pub struct OomScan<'s> {
    snap: &'s Snapshot,
    device: i64,
    records: Vec<Record>,
    stats: Vec<Stats>,
    biggest: Vec<Vec<(u64, u64, StackId)>>,
}

impl<'s> OomScan<'s> {
    /// The `oom` events of `device`. `Err` only for a state with overlapping blocks or segments
    /// whose exact explanation passes [`WORK_LIMIT`], or when the memory for the scan is not there.
    pub fn new(snap: &'s Snapshot, device: i64) -> Result<Self, OomScanError> {
        Self::new_in(snap, device, SegmentsOf::Scan(device))
    }

    /// [`OomScan::new`] with the device's final segments given (every device in turn).
    pub fn new_in(
        snap: &'s Snapshot,
        device: i64,
        segments: SegmentsOf<'_>,
    ) -> Result<Self, OomScanError> {
        let mut allocs = super::AllocRows::new();
        let mut scan = OomScan {
            snap,
            device,
            records: Vec::new(),
            stats: Vec::new(),
            biggest: Vec::new(),
        };
        let Some(tr) = snap.trace(device) else {
            return Ok(scan);
        };
        // Merged events, `oom` events, and every address a block can have.
        let mut events = 0usize;
        let mut ooms = 0usize;
        let mut last_row = None;
        let mut addrs: Vec<u64> = Vec::new();
        for (r, action) in tr.actions().enumerate() {
            if absorbed(tr, r) {
                continue;
            }
            events += 1;
            last_row = Some(r);
            match action {
                Action::Oom => ooms += 1,
                Action::Alloc | Action::FreeRequested | Action::FreeCompleted => {
                    addrs.push(tr.addr(r).unwrap_or(0));
                }
                _ => {}
            }
        }
        let (Some(mut r), true) = (last_row, ooms > 0) else {
            return Ok(scan);
        };
        let base = State::from_snapshot_in(snap, segments);
        let no_memory = |what: &'static str| OomScanError::NoMemory { device, what, ooms };
        addrs
            .try_reserve_exact(base.blocks.len())
            .map_err(|_| no_memory("block addresses"))?;
        addrs.extend(base.blocks.keys().copied());
        addrs.sort_unstable();
        addrs.dedup();
        addrs.shrink_to_fit();
        // The gap tree takes 48 bytes per address, the reports 32 per oom event: reserved
        // fallibly, so a state too large for the memory left is an error, not an abort.
        scan.records
            .try_reserve_exact(ooms)
            .map_err(|_| no_memory("reports"))?;
        let mut live = Live::new(&base, addrs).ok_or_else(|| no_memory("block index"))?;
        drop(base);
        for k in (0..events).rev() {
            let e = event_at(tr, r);
            if tr.action(r) == Some(Action::Oom) {
                if live.changed || scan.stats.is_empty() {
                    live.settle();
                    if live.work > WORK_LIMIT {
                        return Err(OomScanError::TooMuchWork { device, ooms });
                    }
                    if live.blocks_changed || scan.biggest.is_empty() {
                        let top: Vec<(u64, u64, StackId)> = live
                            .by_size
                            .iter()
                            .take(BIGGEST)
                            .map(|&(Reverse(size), a)| {
                                let stack = live
                                    .blocks
                                    .get(&a)
                                    .map_or(StackId::EMPTY, |b| allocs.stack(snap, device, b));
                                (a, size, stack)
                            })
                            .collect();
                        if scan.biggest.last() != Some(&top) {
                            scan.biggest.push(top);
                        }
                        live.blocks_changed = false;
                    }
                    let reserved_free = u64::try_from(live.free).unwrap_or(u64::MAX);
                    scan.stats.push(Stats {
                        reserved: live.reserved,
                        allocated: live.allocated,
                        reserved_free,
                        biggest: scan.biggest.len().saturating_sub(1) as u32,
                    });
                    live.changed = false;
                }
                scan.records.push(Record {
                    k,
                    row: r as u32,
                    stats: scan.stats.len().saturating_sub(1) as u32,
                    largest: live.largest_of((e.stream, e.pool)),
                });
            }
            undo(&mut live, &e);
            if k > 0 {
                r = prev_row(tr, r);
            }
        }
        scan.records.reverse();
        Ok(scan)
    }

    /// Number of reports.
    #[must_use]
    pub fn len(&self) -> usize {
        self.records.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Report `i` (in event order).
    #[must_use]
    pub fn report(&self, i: usize) -> Option<OomReport> {
        let rec = self.records.get(i)?;
        let st = self.stats.get(rec.stats as usize)?;
        let tr = self.snap.trace(self.device)?;
        let e = event_at(tr, rec.row as usize);
        let device_free = tr.device_free_of(rec.row);
        let (kind, verdict) = verdict(Numbers {
            requested: e.size,
            device_free,
            reserved_free: st.reserved_free,
            largest: rec.largest,
            allocated: st.allocated,
        });
        let biggest = self
            .biggest
            .get(st.biggest as usize)
            .map_or(&[][..], Vec::as_slice);
        Some(OomReport {
            event: rec.k,
            requested_bytes: e.size,
            device_free_bytes: device_free,
            reserved_bytes: st.reserved,
            allocated_bytes: st.allocated,
            reserved_free_bytes: st.reserved_free,
            largest_free_block_bytes: rec.largest,
            stream: e.stream,
            pool: e.pool,
            kind,
            verdict,
            biggest_live: biggest.iter().map(|&(a, size, _)| (a, size)).collect(),
            biggest_live_stacks: biggest.iter().map(|&(_, _, stack)| stack).collect(),
        })
    }
}

impl<'s> IntoIterator for OomScan<'s> {
    type Item = OomReport;
    type IntoIter = Reports<'s>;
    fn into_iter(self) -> Reports<'s> {
        Reports {
            scan: self,
            next: 0,
        }
    }
}

/// The reports of an [`OomScan`], in event order, each made as it is taken.
pub struct Reports<'s> {
    scan: OomScan<'s>,
    next: usize,
}

impl Iterator for Reports<'_> {
    type Item = OomReport;
    fn next(&mut self) -> Option<OomReport> {
        let r = self.scan.report(self.next)?;
        self.next += 1;
        Some(r)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.scan.len().saturating_sub(self.next);
        (n, Some(n))
    }
}
