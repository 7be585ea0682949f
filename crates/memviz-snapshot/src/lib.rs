//! The typed, compact model of a PyTorch CUDA memory snapshot, built while the pickle streams in.
//!
//! # How it works
//! [`Loader`] sniffs the first bytes (pickle, gzip, or something else worth naming), then feeds
//! bytes to a [`memviz_pickle::Unpickler`] whose builder ([`builder::SnapshotBuilder`]) lowers
//! records as soon as they are complete: a dict with an `action` key becomes a row of trace
//! columns the moment its items arrive, block and segment dicts become [`Block`]s and
//! [`Segment`]s the same way, frame dicts become interned [`FrameId`]s and frame lists
//! interned [`StackId`]s the first time they are used (memo aliases make that once per list
//! object). Little else of the generic pickle tree is kept (settings, annotations), and the
//! builder's container slots and the memo shrink a run of trace entries to a word per 64, so
//! a parse's peak is about the final model plus a fifth of it (two 150 MB tiles: model 0.28x
//! and 0.35x the file, peak 0.36x and 0.45x as `mem_budget` counts it, its 4 MiB read buffer
//! included).
//! Every unknown key, unknown action and broken invariant (FORMAT.md §8) becomes a warning.
//!
//! # Bounded by the input
//! What a load builds grows at most linearly in the pickle bytes read (issue 14):
//! * made once per thing the file writes out (a row per entry dict, a frame per frame dict, a
//!   stack per frame list, a segment or block per dict, a slot per container, a memo slot per
//!   put, a value per VM stack push): at most about 40 bytes of heap per byte read at the
//!   peak (measured: 10 MB of one-byte opcodes, `]` or TUPLE1, peak at 29 to 39 MB of RSS per
//!   MB: the VM's 16-byte values above one MARK, the store's 8-byte words, container slots, and
//!   vectors doubling), far less for real files (the model is 0.3x a real file's size). A frame list filled in many batches is interned
//!   once, when first used, so a deep stack costs its frames and not a copy per batch; a dict
//!   filled one item at a time grows in place.
//! * made per *reference* (memo gets of a shared object: a stack interned again after its list
//!   grew, a trace list shared by devices, device traces, `forward_frames`, annotations,
//!   legacy history entries, a segment listed again) and values read back out of generic
//!   containers: charged to the [`builder::budget`], at most 4 bytes per byte read plus 16 MB
//!   (the heap can take about twice that while vectors double), past which the file is refused
//!   with "this file expands to more than N GB; …". A legacy `history` list shared by blocks
//!   is kept once (the blocks share its range). The JSON of `allocator_settings` and unknown
//!   keys is cut past 2 bytes per byte read plus 1 MB, with a warning.
//! * gzip input may decompress to at most 100 times its size plus 64 MB
//!   ([`GZIP_MAX_RATIO`]); real snapshots compress 9 to 40 times.
//!
//! Allocations sized by the file (the VM stack, memo, strings, container slots, trace columns,
//! stacks, frames) reserve fallibly: when memory runs out the load fails with a
//! [`LoadError`] ("out of memory: …"), never an abort.

pub mod accelerator;
pub mod builder;
pub mod columns;
mod dump;
pub mod json;
mod load;
mod model;
mod sniff;
mod warnings;
pub mod zip;

pub use load::{load_slice, LoadError, LoadErrorKind, Loader, GZIP_FLOOR, GZIP_MAX_RATIO};
pub use memviz_pickle::StrId;
pub use model::*;
pub use warnings::Warnings;
