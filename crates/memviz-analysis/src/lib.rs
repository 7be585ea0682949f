//! Pure, deterministic analyses over the snapshot model: timeline pairing, live bytes, summaries,
//! the Active Memory Timeline layout with its hit test, tooltips, frames and colours.

pub mod color;
pub mod format;
pub mod frames;
pub mod layout;
pub mod summary;
pub mod timeline;
pub mod tooltip;
