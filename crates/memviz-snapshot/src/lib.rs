//! The typed, compact model of a PyTorch CUDA memory snapshot, built while the pickle streams in.
//!
//! # How it works
//! [`Loader`] sniffs the first bytes (pickle, gzip, or something else worth naming), then feeds
//! bytes to a [`memviz_pickle::Unpickler`] whose builder ([`builder::SnapshotBuilder`]) lowers
//! records as soon as they are complete: a dict with an `action` key becomes a row of trace
//! columns the moment its items arrive, frame dicts become interned [`FrameId`]s and frame lists
//! interned [`StackId`]s the first time they are used (memo aliases make that once per list
//! object). Nothing else of the generic pickle tree is kept, so the transient memory is the
//! final model plus the memo. Segments, blocks and settings are few and are read at the end.
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
