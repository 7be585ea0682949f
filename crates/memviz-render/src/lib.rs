//! Draws instanced trapezoids in a caller-given data space with wgpu (WebGPU, WebGL2 baseline, native); knows nothing about snapshots.
//!
//! # How it works
//! There is one primitive, the [`Trapezoid`]: a quad whose left edge spans `[bottom0, top0]` at
//! `x0` and whose right edge spans `[bottom1, top1]` at `x1`. Rectangles (segment and block
//! maps, flamegraph boxes), axis lines (zero-height rectangles, drawn 1 px tall) and the stacked
//! polygons of a memory timeline (one trapezoid per allocation per step) are all trapezoids.
//!
//! 1. The caller lays its data out in **data space** (`f64`) and picks, per batch, an `f64`
//!    origin near the contents; instances are `f32` relative to it.
//! 2. [`Renderer::upload`] copies a batch into vertex buffers once ([`InstanceBatch`]).
//! 3. Per frame the caller describes the visible data window with a [`View`];
//!    [`Renderer::render`] composes `clip_from_data` with each batch origin in `f64`, writes one
//!    small uniform per batch, and draws every batch with `draw(0..6, 0..n)`. The vertex shader
//!    (`shader/trapezoid.wgsl`) widens each quad to at least one device pixel in x and y.
//!
//! The precision this scheme allows (the zoom cap) is worked out in [`view`]. The baseline is
//! WebGL2 ([`required_limits`]); colours are sRGB, identical on WebGPU and WebGL2
//! ([`surface`]). `context` (wasm32 only) makes a WebGPU-or-WebGL2 device for a canvas;
//! `offscreen` (native only) renders headlessly and reads pixels back for tests and screenshots.

pub mod gpu_data;
pub mod renderer;
pub mod surface;
pub mod view;

#[cfg(target_arch = "wasm32")]
pub mod context;
#[cfg(not(target_arch = "wasm32"))]
pub mod offscreen;

pub use gpu_data::{rgba, Trapezoid, ViewUniform};
pub use renderer::{
    required_limits, srgb_to_linear, DeviceTier, InstanceBatch, Renderer, TRAPEZOID_WGSL,
};
pub use surface::{surface_config, SurfaceChoice};
pub use view::{min_span, ClipFromData, View};

#[cfg(target_arch = "wasm32")]
pub use context::{create_for_canvas, Backend, Canvas, CanvasContext};
#[cfg(not(target_arch = "wasm32"))]
pub use offscreen::{render_offscreen, BatchData, Image, Offscreen, RenderError, OFFSCREEN_FORMAT};

/// Re-exported so callers use the exact wgpu this crate was built with.
pub use wgpu;
