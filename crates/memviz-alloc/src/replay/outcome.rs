//! The answers of a replay: the outcome, its first OOM and the fragmentation at the peak.

use crate::model::{FreeAtOom, SegEvent};
use memviz_snapshot::StackId;
use serde::Serialize;

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
    /// The same event in the State History's numbering (`memviz_analysis::state::merged_index`:
    /// a free_requested + free_completed pair counts once), as `memviz oom` numbers events.
    pub merged_event: u64,
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
    /// Without a capacity: the device's limit the trace shows, which every malloc was held to
    /// ([`crate::Prepared::recorded_capacity`]); `None` with a capacity or when the trace never
    /// shows the limit (then the replay is unconstrained outside the recorded pressure points).
    pub recorded_capacity: Option<u64>,
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
