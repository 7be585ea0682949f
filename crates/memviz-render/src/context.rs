//! Getting a device for a `<canvas>`: WebGPU when the browser has it, WebGL2 otherwise (wasm32
//! only).
//!
//! # How it works
//! A canvas can hold one kind of context for its whole life: once `getContext("webgpu")` ran,
//! `getContext("webgl2")` returns null, and the other way round. So the order matters:
//! 1. **WebGPU**: ask `navigator.gpu` for an adapter (`wgpu::util::is_browser_webgpu_supported`),
//!    then create the instance (`Backends::BROWSER_WEBGPU`), adapter and device *without touching
//!    the canvas*; only when all of that worked is the canvas surface created. Any failure up to
//!    there leaves the canvas free for WebGL2.
//! 2. **WebGL2**: an instance with `Backends::GL`; the surface must come first (the GL context
//!    *is* the canvas's), then an adapter compatible with it, then the device.
//!
//! Both request WebGL2 limits ([`required_limits`]), so the same code runs on either, and pick
//! the surface format with [`surface_config`] (a plain 8-bit format on both, so colours match).

use crate::renderer::{required_limits, DeviceTier};
use crate::surface::{surface_config, SurfaceChoice};

/// Which browser API to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// WebGPU when the browser offers a working adapter and device, else WebGL2.
    #[default]
    Auto,
    /// WebGPU only (an error without it): for tests that must not silently fall back.
    WebGpu,
    /// WebGL2 only, even when WebGPU exists.
    WebGl2,
}

impl Backend {
    /// Parses a `?backend=` value: `auto`, `webgpu`, `webgl` or `webgl2` (ASCII case-insensitive).
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "auto" | "" => Some(Self::Auto),
            "webgpu" => Some(Self::WebGpu),
            "webgl" | "webgl2" => Some(Self::WebGl2),
            _ => None,
        }
    }
}

/// The canvas to draw into: a page `<canvas>` or an `OffscreenCanvas` (in a Web Worker, after
/// `transferControlToOffscreen()`).
#[derive(Clone, Debug)]
pub enum Canvas {
    /// A `<canvas>` element on the page (main thread).
    Html(web_sys::HtmlCanvasElement),
    /// An `OffscreenCanvas` (main thread or worker).
    Offscreen(web_sys::OffscreenCanvas),
}

impl Canvas {
    fn size(&self) -> (u32, u32) {
        match self {
            Canvas::Html(c) => (c.width(), c.height()),
            Canvas::Offscreen(c) => (c.width(), c.height()),
        }
    }

    fn target(self) -> wgpu::SurfaceTarget<'static> {
        match self {
            Canvas::Html(c) => wgpu::SurfaceTarget::Canvas(c),
            Canvas::Offscreen(c) => wgpu::SurfaceTarget::OffscreenCanvas(c),
        }
    }
}

/// Why [`create_for_canvas`] gave no context: its Display is a sentence for the page, with each
/// backend's reason.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CanvasError {
    /// [`Backend::WebGpu`] was requested and WebGPU failed.
    #[error("WebGPU was requested but is not available: {0}")]
    WebGpuRequested(BackendError),
    /// [`Backend::WebGl2`] was requested and WebGL2 failed.
    #[error("WebGL2 was requested but is not available: {0}")]
    WebGl2Requested(BackendError),
    /// [`Backend::Auto`]: both failed.
    #[error(
        "This browser offers neither WebGPU nor WebGL2, which memviz needs to draw. \
         WebGPU: {webgpu}. WebGL2: {webgl2}."
    )]
    Neither {
        /// Why WebGPU failed.
        webgpu: BackendError,
        /// Why WebGL2 failed.
        webgl2: BackendError,
    },
}

/// Why one browser API gave no device for the canvas.
#[derive(Clone, Debug, thiserror::Error)]
pub enum BackendError {
    /// `navigator.gpu` is missing or its `requestAdapter()` gave no adapter (checked before the
    /// canvas is touched).
    #[error("navigator.gpu is missing or requestAdapter() returned no adapter")]
    NoBrowserWebGpu,
    /// The instance found no adapter.
    #[error("no adapter: {0}")]
    NoAdapter(wgpu::RequestAdapterError),
    /// The adapter refused to create a device.
    #[error("no device: {0}")]
    NoDevice(wgpu::RequestDeviceError),
    /// The canvas refused the context of `api` ("WebGPU" or "WebGL2").
    #[error("the canvas refused a {api} context: {error}")]
    CanvasRefused {
        /// The API asked for.
        api: &'static str,
        /// wgpu's error.
        error: wgpu::CreateSurfaceError,
    },
    /// The surface offers no texture format for the adapter.
    #[error("the surface offers no texture format for this adapter")]
    NoSurfaceFormat,
}

/// A configured canvas surface with its device.
#[derive(Debug)]
pub struct CanvasContext {
    /// The canvas surface, configured with `surface.config`.
    pub surface: wgpu::Surface<'static>,
    /// The device (WebGL2 limits).
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// WebGPU or WebGL2.
    pub tier: DeviceTier,
    /// The configuration in use and the format to render with (build the
    /// [`Renderer`](crate::Renderer) for `surface.render_format`, and make frame views with
    /// [`SurfaceChoice::frame_view`]).
    pub choice: SurfaceChoice,
    /// The adapter's description, for logs and an "about" line.
    pub adapter_info: wgpu::AdapterInfo,
}

impl CanvasContext {
    /// The format to build the [`Renderer`](crate::Renderer) for.
    #[must_use]
    pub fn render_format(&self) -> wgpu::TextureFormat {
        self.choice.render_format
    }

    /// Reconfigures the surface for a new size in device pixels (0 is raised to 1); a no-op when
    /// the size did not change.
    pub fn resize(&mut self, width_px: u32, height_px: u32) {
        let (width, height) = (width_px.max(1), height_px.max(1));
        let max = self.device.limits().max_texture_dimension_2d;
        let (width, height) = (width.min(max), height.min(max));
        if (width, height) != (self.choice.config.width, self.choice.config.height) {
            self.choice.config.width = width;
            self.choice.config.height = height;
            self.surface.configure(&self.device, &self.choice.config);
        }
    }
}

/// Creates a surface and device for `canvas`: WebGPU first (for [`Backend::Auto`]), WebGL2 as the
/// fallback. The surface is configured at the canvas's current `width` × `height`.
///
/// # Errors
/// A [`CanvasError`], whose Display is a readable sentence (for the page), when the requested
/// backend, or for `Auto` neither backend, is available, with each backend's reason.
pub async fn create_for_canvas(
    canvas: Canvas,
    prefer: Backend,
) -> Result<CanvasContext, CanvasError> {
    let size = canvas.size();
    match prefer {
        Backend::WebGpu => try_webgpu(canvas, size)
            .await
            .map_err(CanvasError::WebGpuRequested),
        Backend::WebGl2 => try_webgl2(canvas, size)
            .await
            .map_err(CanvasError::WebGl2Requested),
        Backend::Auto => match try_webgpu(canvas.clone(), size).await {
            Ok(context) => Ok(context),
            Err(webgpu) => try_webgl2(canvas, size)
                .await
                .map_err(|webgl2| CanvasError::Neither { webgpu, webgl2 }),
        },
    }
}

async fn try_webgpu(canvas: Canvas, size: (u32, u32)) -> Result<CanvasContext, BackendError> {
    if !wgpu::util::is_browser_webgpu_supported().await {
        return Err(BackendError::NoBrowserWebGpu);
    }
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::BROWSER_WEBGPU;
    let instance = wgpu::Instance::new(desc);
    let adapter = instance
        .request_adapter(&wgpu::RequestAdapterOptions::default())
        .await
        .map_err(BackendError::NoAdapter)?;
    let (device, queue) = request_device(&adapter).await?;
    // Only now claim the canvas for WebGPU (see the module docs).
    let surface =
        instance
            .create_surface(canvas.target())
            .map_err(|error| BackendError::CanvasRefused {
                api: "WebGPU",
                error,
            })?;
    finish(surface, &adapter, device, queue, size)
}

async fn try_webgl2(canvas: Canvas, size: (u32, u32)) -> Result<CanvasContext, BackendError> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::GL;
    let instance = wgpu::Instance::new(desc);
    let surface =
        instance
            .create_surface(canvas.target())
            .map_err(|error| BackendError::CanvasRefused {
                api: "WebGL2",
                error,
            })?;
    let adapter = instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            compatible_surface: Some(&surface),
            ..wgpu::RequestAdapterOptions::default()
        })
        .await
        .map_err(BackendError::NoAdapter)?;
    let (device, queue) = request_device(&adapter).await?;
    finish(surface, &adapter, device, queue, size)
}

async fn request_device(
    adapter: &wgpu::Adapter,
) -> Result<(wgpu::Device, wgpu::Queue), BackendError> {
    adapter
        .request_device(&wgpu::DeviceDescriptor {
            label: Some("memviz-render canvas"),
            required_features: wgpu::Features::empty(),
            required_limits: required_limits(&adapter.limits()),
            ..wgpu::DeviceDescriptor::default()
        })
        .await
        .map_err(BackendError::NoDevice)
}

fn finish(
    surface: wgpu::Surface<'static>,
    adapter: &wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    (width, height): (u32, u32),
) -> Result<CanvasContext, BackendError> {
    let caps = surface.get_capabilities(adapter);
    let mut choice = surface_config(&caps, width, height).ok_or(BackendError::NoSurfaceFormat)?;
    let max = device.limits().max_texture_dimension_2d;
    choice.config.width = choice.config.width.min(max);
    choice.config.height = choice.config.height.min(max);
    surface.configure(&device, &choice.config);
    let adapter_info = adapter.get_info();
    Ok(CanvasContext {
        surface,
        device,
        queue,
        tier: DeviceTier::from_backend(adapter_info.backend),
        choice,
        adapter_info,
    })
}
