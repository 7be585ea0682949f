//! memviz-viewer's integration tests in one binary (one link of wgpu and the viewer instead of
//! one per file: docs/ci.md), a module per subject. Run one subject with
//! `cargo test -p memviz-viewer --test viewer_all SUBJECT::`.
#![cfg(not(target_arch = "wasm32"))]

mod column_lod;
mod common;
mod filter;
mod flame_reserved;
mod flame_view;
mod highlight_recolor;
mod module_graph;
mod no_trace;
mod panels;
mod registry;
mod sites;
mod time_axis;
mod ts_types;
mod viewer;
mod views;
mod whatif;
