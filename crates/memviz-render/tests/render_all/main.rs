//! memviz-render's integration tests in one binary (one link of wgpu: docs/ci.md).
#![cfg(not(target_arch = "wasm32"))]

mod offscreen;
mod shaders;
