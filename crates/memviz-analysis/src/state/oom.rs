//! Why an allocation failed (`oom` events), from the state at that event.

use memviz_snapshot::Snapshot;

use super::{History, State};

/// Why an allocation failed: the numbers at an `oom` event and a one-line verdict.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
pub struct OomReport {
    /// Index of the `oom` event in the merged list.
    pub event: usize,
    pub requested_bytes: u64,
    /// What the device still had (`device_free` of the event), when recorded.
    pub device_free_bytes: Option<u64>,
    pub reserved_bytes: u64,
    pub allocated_bytes: u64,
    /// Free bytes inside reserved segments (all streams and pools).
    pub reserved_free_bytes: u64,
    /// The largest free block in reserved segments of the request's stream and pool.
    pub largest_free_block_bytes: u64,
    pub stream: u64,
    pub pool: (i64, i64),
    /// `fragmentation`, `out_of_memory` or `allocation_failed` (the device had room for the
    /// segment the request needed).
    pub kind: &'static str,
    pub verdict: String,
    /// The biggest live blocks at that moment: `(address, size)`, largest first (at most 10).
    pub biggest_live: Vec<(u64, u64)>,
    /// The stack that allocated each of [`OomReport::biggest_live`] ([`super::AllocRows`]; name
    /// them with
    /// [`crate::site::SiteCache`]); empty from [`explain_oom`], which has no snapshot: fill
    /// them with [`OomReport::fill_stacks`].
    #[serde(skip)]
    #[ts(skip)]
    pub biggest_live_stacks: Vec<memviz_snapshot::StackId>,
}

impl OomReport {
    /// Sets [`OomReport::biggest_live_stacks`] from `state` (the state the report was made
    /// from, of `device` of `snap`).
    pub fn fill_stacks(&mut self, snap: &Snapshot, device: i64, state: &State) {
        let mut allocs = super::AllocRows::new();
        self.biggest_live_stacks = self
            .biggest_live
            .iter()
            .map(|(a, _)| {
                state
                    .blocks
                    .get(a)
                    .map_or(memviz_snapshot::StackId::EMPTY, |b| {
                        allocs.stack(snap, device, b)
                    })
            })
            .collect();
    }
}

/// The segment the caching allocator asks the driver for when no free block holds a request of
/// `size` bytes (FORMAT.md §8, `get_allocation_size`): 2 MiB for requests up to 1 MiB, 20 MiB
/// for requests below 10 MiB, else the request rounded up to a multiple of 2 MiB.
#[must_use]
pub fn segment_size_for(size: u64) -> u64 {
    const MIB: u64 = 1 << 20;
    if size <= MIB {
        2 * MIB
    } else if size < 10 * MIB {
        20 * MIB
    } else {
        size.div_ceil(2 * MIB).saturating_mul(2 * MIB)
    }
}

/// The numbers a verdict is made of.
#[derive(Clone, Copy, Debug)]
pub(super) struct Numbers {
    pub(super) requested: u64,
    pub(super) device_free: Option<u64>,
    pub(super) reserved_free: u64,
    pub(super) largest: u64,
    pub(super) allocated: u64,
}

/// `fragmentation`, `out_of_memory` or `allocation_failed`, and the one-line verdict.
pub(super) fn verdict(n: Numbers) -> (&'static str, String) {
    use crate::format::size_short as sz;
    let Numbers {
        requested,
        reserved_free,
        largest,
        allocated,
        ..
    } = n;
    let dev = n.device_free.unwrap_or(0);
    if largest >= requested {
        (
            "fragmentation",
            format!(
                "A free block of {} in a reserved segment of this stream could hold the {} requested, \
                 but the allocator did not use it (a size-class or split rule); \
                 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True usually avoids this.",
                sz(largest),
                sz(requested)
            ),
        )
    } else if reserved_free >= requested {
        (
            "fragmentation",
            format!(
                "Fragmentation: {} is free inside reserved segments, but the largest free block of \
                 this stream is {}, smaller than the {} requested; \
                 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True or fewer long-lived allocations would help.",
                sz(reserved_free),
                sz(largest),
                sz(requested)
            ),
        )
    } else if dev >= requested {
        // No free block holds the request: it needs a new segment, whose size is the request
        // rounded up, so the device's free bytes must hold that, not the request.
        let segment = segment_size_for(requested);
        if dev >= segment {
            (
                "allocation_failed",
                format!(
                    "The request needs a new segment: no free block of this stream holds the {} requested \
                     (the largest is {}), and the device reported {} free, enough for the new {} segment, \
                     so allocating that segment failed for another reason (a limit set with \
                     torch.cuda.set_per_process_memory_fraction, or another process using the memory at that moment).",
                    sz(requested),
                    sz(largest),
                    sz(dev),
                    sz(segment)
                ),
            )
        } else if reserved_free.saturating_add(dev) >= segment {
            (
                "fragmentation",
                format!(
                    "The request needs a new segment: no free block of this stream holds the {} requested \
                     (the largest is {}), and the new segment takes {} (the request rounded up as the caching \
                     allocator does), more than the {} free on the device; releasing cached segments \
                     (torch.cuda.empty_cache(), {} free in them) or expandable segments would help.",
                    sz(requested),
                    sz(largest),
                    sz(segment),
                    sz(dev),
                    sz(reserved_free)
                ),
            )
        } else {
            (
                "out_of_memory",
                format!(
                    "Out of memory: the request needs a new segment of {} (the {} requested rounded up as the \
                     caching allocator does), more than the {} free on the device, and no free block of this \
                     stream holds it (the largest is {}); live allocations hold {}.",
                    sz(segment),
                    sz(requested),
                    sz(dev),
                    sz(largest),
                    sz(allocated)
                ),
            )
        }
    } else if reserved_free.saturating_add(dev) >= requested {
        (
            "fragmentation",
            format!(
                "Memory held in the cache: {} free in reserved segments plus {} free on the device would \
                 hold the {} requested, but neither alone does; releasing cached segments \
                 (torch.cuda.empty_cache()) or expandable segments would help.",
                sz(reserved_free),
                sz(dev),
                sz(requested)
            ),
        )
    } else {
        (
            "out_of_memory",
            format!(
                "Genuinely out of memory: {} requested, with only {} free in reserved segments and {} \
                 on the device; live allocations hold {}.",
                sz(requested),
                sz(reserved_free),
                sz(dev),
                sz(allocated)
            ),
        )
    }
}

/// Explains a request of `requested` bytes on `stream` / `pool` that failed in `state`.
#[must_use]
pub fn explain_oom(
    state: &State,
    event: usize,
    requested: u64,
    device_free: Option<u64>,
    stream: u64,
    pool: (i64, i64),
) -> OomReport {
    let mut reserved_free = 0u64;
    let mut largest = 0u64;
    for (&a, seg) in &state.segments {
        for (_, len) in state.free_ranges(a) {
            reserved_free = reserved_free.saturating_add(len);
            if seg.stream == stream && seg.pool == pool {
                largest = largest.max(len);
            }
        }
    }
    let (kind, verdict) = verdict(Numbers {
        requested,
        device_free,
        reserved_free,
        largest,
        allocated: state.allocated_bytes,
    });
    let mut biggest: Vec<(u64, u64)> = state.blocks.iter().map(|(&a, b)| (a, b.size)).collect();
    biggest.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    biggest.truncate(BIGGEST);
    OomReport {
        event,
        requested_bytes: requested,
        device_free_bytes: device_free,
        reserved_bytes: state.reserved_bytes,
        allocated_bytes: state.allocated_bytes,
        reserved_free_bytes: reserved_free,
        largest_free_block_bytes: largest,
        stream,
        pool,
        kind,
        verdict,
        biggest_live: biggest,
        biggest_live_stacks: Vec::new(),
    }
}

/// Live blocks listed by a report ([`OomReport::biggest_live`]).
pub(super) const BIGGEST: usize = 10;

impl History {
    /// A report for every `oom` event of the trace, in order: [`super::OomScan`]'s one
    /// backward pass, or (only when that refuses a state with overlapping blocks or segments
    /// as too costly) each event's state rebuilt from the checkpoints.
    #[must_use]
    pub fn oom_reports(&self, snap: &Snapshot) -> Vec<OomReport> {
        match super::OomScan::new(snap, self.device) {
            Ok(scan) => scan.into_iter().collect(),
            Err(_) => self.oom_reports_each(snap),
        }
    }

    pub(super) fn oom_reports_each(&self, snap: &Snapshot) -> Vec<OomReport> {
        let tr = snap.trace(self.device);
        self.events(snap)
            .enumerate()
            .filter(|(_, e)| {
                tr.and_then(|t| t.action(e.row as usize))
                    .is_some_and(|a| a == memviz_snapshot::Action::Oom)
            })
            .filter_map(|(k, e)| {
                let state = self.state_after(snap, k)?;
                let device_free = tr.and_then(|t| t.device_free_of(e.row));
                let mut r = explain_oom(&state, k, e.size, device_free, e.stream, e.pool);
                r.fill_stacks(snap, self.device, &state);
                Some(r)
            })
            .collect()
    }
}
