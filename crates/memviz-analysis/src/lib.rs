//! Pure, deterministic analyses over the snapshot model: timeline pairing, live bytes, summaries,
//! the Active Memory Timeline's timestep model, frames and sites, the allocator state after any
//! event (checkpointed), lines, leaks, flame, diff, ranks. What is drawn (the layout's
//! geometry and hit test, colours, tooltip text, segment maps) is memviz-present's.
//!
//! Every analysis is linear (or n log n) in the model: no loop over devices rescans all
//! segments ([`devices::DeviceSegments`]), no loop over iterations rescans all stacks, and
//! stack and phase texts are made once per distinct frame or name, not per use.

pub mod allocations;
pub mod annotations;
pub mod devices;
pub mod diff;
pub mod flame;
pub mod format;
pub mod frames;
pub mod leaks;
pub mod lines;
pub mod memory_viz;
pub mod query;
pub mod ranks;
pub mod search;
pub mod site;
pub mod state;
pub mod steps;
pub mod summary;
pub mod timeline;
pub mod versions;

#[cfg(test)]
mod test_util;
