//! What if: a model of PyTorch's CUDA caching allocator (`c10/cuda/CUDACachingAllocator.cpp`,
//! rules and versions in ALLOCATOR.md) that replays a snapshot's device trace under other
//! `PYTORCH_CUDA_ALLOC_CONF` settings and device capacities. Pure Rust, no GPU, no threads,
//! no clock: it runs natively and in the page's wasm worker. docs/whatif.md has the model, its
//! limits, how to read the answers and the validation against real files.
//!
//! # API
//! * [`Settings::parse`]`(conf) -> (Settings, warnings)`, [`Settings::from_snapshot`]`(snap)`
//!   (the file's `allocator_settings`, else PyTorch's defaults), [`Settings::with`] (keys over
//!   other settings); `Display` prints the canonical conf string.
//! * [`replay`]`(snap, device, &settings, capacity, &mut progress) -> Result<Outcome, Cancelled>`:
//!   one replay, the first OOM's site named. `progress(done, total) -> bool` is called every
//!   [`PROGRESS_EVERY`] events; `false` cancels.
//! * [`Prepared::new`]`(snap, device)`: the state at the trace's start (built once), then
//!   [`Prepared::replay`]`(&settings, &Options, progress)` as often as wanted.
//! * [`min_capacity`]`(&prepared, &settings, progress) -> Result<Option<u64>, Cancelled>`: the
//!   smallest capacity (multiple of 2 MiB) with no OOM, by bisection over replays.
//! * [`sweep`]`(&prepared, capacity, progress)`: [`ALTERNATIVES`] (recorded, expandable,
//!   max_split_size 128/256/512, roundup_power2_divisions 4/8, garbage_collection_threshold
//!   0.6), each with its outcome and smallest capacity.
//! * [`Job`]`::run`/`::sweep` and [`Bisect`]: the same, resumable, one replay per `step`
//!   (the page's worker reads its Cancel between two); [`Prepared::detach`] /
//!   [`Detached::attach`] keep the start state between calls; [`best_row`] of a sweep.
//! * [`validate`]`(snap, device, progress) -> Validation`: replayed as recorded, the model's
//!   segment_alloc/free/map/unmap sequence and peak reserved against the trace's own.
//!
//! [`Outcome`] serializes with the field names of `memviz whatif --json` (issue 31 item 4):
//! `device, settings, capacity, segment_allocs, segment_frees, peak_reserved, peak_allocated,
//! fragmentation_at_peak, cuda_mallocs, first_oom {event, requested, site, …}, min_capacity`,
//! plus a few more (`cuda_frees`, `ooms`, `completed`, …).
//!
//! # How it works
//! [`Model`] keeps blocks and segments in slabs (slots reused) and the free blocks of each
//! pool (small and large, default and each private pool) in a `BTreeSet` keyed
//! (stream, size, address): best fit is one `range` lookup. Its memory is proportional to
//! the live blocks and segments, never to the trace. The replay maps each trace address to
//! the model's block (the model's addresses differ), seeds the start state from the final
//! segments walked back (memviz-analysis's `State::undo`), replays recorded segment frees
//! outside any malloc as `empty_cache`, and, without a capacity, gives the mallocs where the
//! recording shows a full device the capacity the recording implies.

mod consts;
mod job;
mod model;
mod replay;
mod search;
mod settings;

pub use consts::MIB;
pub use job::{best_row, Bisect, Detached, Job};
pub use model::{allocation_size, round_size, FreeAtOom, Model, Piece, SegEvent, SegKind};
pub use replay::{
    name_site, replay, validate, Cancelled, Counts, Difference, Fragmentation, OomAt, Options,
    Outcome, Prepared, Validation, PROGRESS_EVERY,
};
pub use search::{min_capacity, sweep, SweepRow, ALTERNATIVES, CAPACITY_STEP};
pub use settings::{Settings, DIVISION_INTERVALS};
