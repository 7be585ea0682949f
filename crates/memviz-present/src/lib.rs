//! Presentation of the analyses: what the viewer draws and the text it shows, over
//! memviz-analysis's domain model. The Active Memory Timeline [`layout`] (memviz-analysis's
//! timestep model with the exact polylines or their compact derivation, and the hit index),
//! stable per-site [`color`]s and the legend, the timeline [`tooltip`] text (§7) and the
//! allocator state's segment map ([`segmap`], §6.5: rects, hit test, hover texts).
//!
//! No GPU, browser or wasm dependency: the CLI's tests and the fuzz targets use it natively.

pub mod color;
pub mod layout;
pub mod segmap;
pub mod tooltip;
