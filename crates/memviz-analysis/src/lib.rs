//! Pure, deterministic analyses over the snapshot model: timeline pairing, live bytes, summaries.

pub mod format;
pub mod summary;
pub mod timeline;
