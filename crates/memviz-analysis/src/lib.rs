//! Pure, deterministic analyses over the snapshot model: timeline pairing, live bytes, summaries,
//! the Active Memory Timeline layout with its hit test, tooltips, frames and colours, the
//! allocator state after any event (checkpointed).

pub mod annotations;
pub mod color;
pub mod devices;
pub mod diff;
pub mod flame;
pub mod format;
pub mod frames;
pub mod layout;
pub mod leaks;
pub mod lines;
pub mod search;
pub mod segmap;
pub mod state;
pub mod steps;
pub mod summary;
pub mod timeline;
pub mod tooltip;

#[cfg(test)]
mod test_util;
