//! The typed, compact model of a PyTorch CUDA memory snapshot, built while the pickle streams in.
//!
//! # How it works
//! [`Loader`] sniffs the first bytes (pickle, gzip, or something else worth naming), then feeds
//! bytes to a [`memviz_pickle::Unpickler`] whose builder ([`builder::SnapshotBuilder`]) lowers
//! records as soon as they are complete: a dict with an `action` key becomes a row of trace
//! columns the moment its items arrive, block and segment dicts become [`Block`]s and
//! [`Segment`]s the same way, frame dicts become interned [`FrameId`]s and frame lists
//! interned [`StackId`]s the first time they are used (memo aliases make that once per list
//! object). Little else of the generic pickle tree is kept (settings, annotations), so the
//! transient memory is about the final model plus the memo (4 bytes per memoized value).
//! Every unknown key, unknown action and broken invariant (FORMAT.md §8) becomes a warning.

pub mod builder;
pub mod columns;
mod dump;
mod load;
mod model;
mod warnings;

pub use load::{load_slice, LoadError, Loader};
pub use memviz_pickle::StrId;
pub use model::*;
pub use warnings::Warnings;
