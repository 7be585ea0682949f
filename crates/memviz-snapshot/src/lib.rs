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
