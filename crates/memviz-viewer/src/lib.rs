//! Platform-agnostic Active Memory Timeline viewer state: camera, plot geometry, scene batches, axis ticks, hover/pin tooltips, drawn with memviz-render.
//!
//! # How it works
//! [`App`] holds the loaded snapshot files (a `Vec` with a current index), the current device
//! (default: the longest trace, first on ties) and, per (file, device), the `Timeline`, the
//! `Layout` (every element, memory_viz's stacking, SEMANTICS §3), the per-site colours and the
//! plot scene, all built once on first use.
//!
//! *Spaces.* Data space is x = timesteps (event order), or µs after the first event on the
//! wall-clock time axis ([`xaxis`]: the layout stays in timesteps, what is drawn and the camera
//! are in the axis's unit), y = bytes (`f64`). The [`Camera`] is the data window
//! shown in the plot rectangle of the [`PlotGeometry`] (CSS px: a left gutter for y labels, a
//! bottom gutter for x labels, the overview strip below). `data_from_css_px` /
//! `css_px_from_data` convert; [`Camera::canvas_view`] is the memviz-render
//! [`View`](memviz_render::View) of the *whole canvas* so that the plot rectangle shows exactly
//! the window (its `clip_from_data` is the frame's transform).
//!
//! *Scene.* The plot is [`scene::Batch`]es of trapezoids in data space, each with an `f64`
//! origin and a bounding box (batches outside the view are not drawn):
//! - traces up to [`scene::STATIC_MAX_POINTS`] polyline points: a **static** scene, every piece
//!   of every element, tiled 16 × 16, uploaded once per device (a zoom or pan only changes the
//!   view uniform);
//! - bigger traces (and every compact layout): a **windowed** scene, rebuilt around the camera
//!   window when the camera has been still for [`app::SETTLE_MS`] ([`App::tick`] /
//!   [`App::settle`]); frames in between draw the previous one. Zoomed in (under
//!   [`scene::COLUMN_LOD_STEPS_PER_PX`] timesteps per pixel) it is every element's
//!   `Layout::clipped_points`, simplified to one column per device pixel and half a pixel in y;
//!   zoomed out it is the **column level of detail** ([`scene::build_columns`]): per CSS-pixel
//!   column the stack at the column's highest timestep, cut into runs at least a pixel tall,
//!   merged with identical runs of the neighbouring columns. Its size depends on the canvas, not
//!   on the trace, which keeps software-rendered frames cheap.
//!
//! A small overlay, rebuilt every frame in the same data space, draws the grid, the peak marker
//! (a line at the peak and a triangle over the peak step), the hover/pinned outline, opaque
//! masks over the gutters (the plot's instances extend past the window; there is no scissor),
//! the axes and tick marks, and the overview strip (total memory per column, by max) with its
//! brush. [`GpuScene`] uploads and draws all of it with one `View` through a
//! `memviz_render::Renderer` (browser) or an `Offscreen` (native, tests, screenshots).
//!
//! *Measured* (release, llvmpipe, 2 busy cores, 1280 × 720 canvas, offscreen frames include
//! the texture readback; `cargo run -p memviz-viewer --release --example zoom_bench -- FILE`):
//! the real 3.7 MB corpus file (7.8 k elements, 1 M points, windowed) takes 15–50 ms per
//! zoom/pan frame and 2–155 ms per settle rebuild; the 135 MB synthetic file (409 k elements,
//! compact layout) 17–80 ms per frame (the slowest with the whole trace shown, under 50 ms from
//! a 4× zoom on) and 35–180 ms per settle rebuild. The camera step itself is < 0.01 ms; a hover
//! < 0.5 ms.
//!
//! *Zoom cap.* Instances are `f32` relative to their batch origin, so the camera never shows a
//! span below `memviz_render::min_span(batch extent, plot px)` per axis (and never below one
//! timestep / one byte): no jitter. Tiling keeps the x extent to 1/16 of the trace; the y
//! extent is bounded by the tallest element above its tile's origin.
//!
//! *Text.* The GPU draws no text: [`App::axis_ticks`] gives tick positions and labels (binary
//! units for bytes; 1-2-5 timesteps, or 1-2-5 µs/ms/s relative to the first event, linear, on
//! the time axis),
//! [`App::hover`] / [`App::click`] give the memory_viz tooltip (`TooltipInfo` JSON plus `text`),
//! [`App::legend`] and [`App::devices`] give JSON, and the shell places them as text.

pub mod answer;
pub mod cache;
pub mod app;
pub mod camera;
mod column_stack;
pub mod flame_view;
pub mod gpu;
pub mod kinds;
pub mod memory;
pub mod pane;
pub mod registry;
mod phase;
pub mod request;
pub mod scene;
pub mod settings;
pub mod state_view;
mod step_time;
pub mod theme;
pub mod ticks;
pub mod view;
pub mod xaxis;

pub use answer::{AxisTicks, FlameAt};
pub use app::{App, VIEWER_LAYOUT};
pub use camera::{Camera, PlotGeometry, RectCss};
pub use gpu::GpuScene;
pub use kinds::ViewKind;
pub use request::{Reply, Request};
pub use scene::{Batch, PlotScene};
pub use theme::Theme;
pub use ticks::Tick;
pub use view::{ActiveView, DrawableView};
