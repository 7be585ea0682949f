//! Why an allocation failed (`oom` events), from the state at that event.

use memviz_snapshot::{Action, Snapshot};

use super::{History, State};

/// Why an allocation failed: the numbers at an `oom` event and a one-line verdict.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
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
    /// `fragmentation` or `out_of_memory`.
    pub kind: &'static str,
    pub verdict: String,
    /// The biggest live blocks at that moment: `(address, size)`, largest first (at most 10).
    pub biggest_live: Vec<(u64, u64)>,
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
    use crate::format::size_short as sz;
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
    let dev = device_free.unwrap_or(0);
    let (kind, verdict) = if largest >= requested {
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
                sz(state.allocated_bytes)
            ),
        )
    };
    let mut biggest: Vec<(u64, u64)> = state.blocks.iter().map(|(&a, b)| (a, b.size)).collect();
    biggest.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    biggest.truncate(10);
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
    }
}

impl History {
    /// A report for every `oom` event of the trace.
    #[must_use]
    pub fn oom_reports(&self, snap: &Snapshot) -> Vec<OomReport> {
        let tr = snap.trace(self.device);
        self.events(snap)
            .enumerate()
            .filter(|(_, e)| {
                tr.and_then(|t| t.action(e.row as usize))
                    .is_some_and(|a| a == Action::Oom)
            })
            .filter_map(|(k, e)| {
                let state = self.state_after(snap, k)?;
                let device_free = tr.and_then(|t| t.device_free_of(e.row));
                Some(explain_oom(
                    &state,
                    k,
                    e.size,
                    device_free,
                    e.stream,
                    e.pool,
                ))
            })
            .collect()
    }
}
