//! Headless rendering into a texture and reading it back (native only): for tests, screenshots
//! and any CLI that wants a picture.
//!
//! # How it works
//! [`Offscreen::new`] creates a wgpu instance with every native backend (narrow it with the usual
//! `WGPU_BACKEND=vulkan|gl` variable), asks for an adapter (a real GPU first, then a fallback /
//! software one such as lavapipe or llvmpipe), and a device with WebGL2 limits (so tests exercise
//! the browser baseline). [`Offscreen::render`] draws into an `Rgba8UnormSrgb` texture of the
//! view's size, copies it into a buffer with rows padded to 256 bytes, maps it, and strips the
//! padding. Validation errors are captured with an error scope and returned, so a bad call is a
//! [`RenderError`], not a panic; so is a machine without any adapter.

use std::fmt;
use std::sync::mpsc;

use crate::gpu_data::Trapezoid;
use crate::renderer::{required_limits, DeviceTier, InstanceBatch, Renderer};
use crate::view::View;

/// The format offscreen images are rendered in: sRGB like the browser canvases, so the bytes
/// read back are what a screen would show.
pub const OFFSCREEN_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;

/// Why offscreen rendering failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RenderError {
    /// No adapter at all, not even a software one (the message says what was tried).
    NoAdapter(String),
    /// The adapter refused to create a device.
    RequestDevice(String),
    /// The image size is zero or larger than the device allows.
    InvalidSize {
        /// Requested width in pixels.
        width: u32,
        /// Requested height in pixels.
        height: u32,
        /// The device's `max_texture_dimension_2d`.
        max: u32,
    },
    /// wgpu reported a validation or out-of-memory error while rendering.
    Gpu(String),
    /// Mapping the readback buffer failed.
    Readback(String),
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAdapter(why) => write!(f, "no wgpu adapter (not even a software one): {why}"),
            Self::RequestDevice(why) => write!(f, "the adapter refused to create a device: {why}"),
            Self::InvalidSize { width, height, max } => {
                write!(
                    f,
                    "image size {width}x{height} px: expected 1..={max} on each axis"
                )
            }
            Self::Gpu(why) => write!(f, "GPU error while rendering offscreen: {why}"),
            Self::Readback(why) => write!(f, "reading the offscreen image back failed: {why}"),
        }
    }
}

impl std::error::Error for RenderError {}

/// Why [`Image::write_png`] failed: its Display is the path, then the file system's or the
/// encoder's message.
#[derive(Debug)]
pub enum PngError {
    /// Creating the folder or the file failed (`path`: the one that failed).
    Io {
        /// The folder or file.
        path: std::path::PathBuf,
        /// The file system's error.
        error: std::io::Error,
    },
    /// Encoding or writing the image failed.
    Encode {
        /// The file.
        path: std::path::PathBuf,
        /// The encoder's error.
        error: png::EncodingError,
    },
}

impl fmt::Display for PngError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, error } => write!(f, "{}: {error}", path.display()),
            Self::Encode { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for PngError {}

/// An RGBA8 image, sRGB-encoded, rows top to bottom, no padding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes.
    pub rgba: Vec<u8>,
}

impl Image {
    /// Writes the image as an 8-bit RGBA PNG (sRGB), creating the parent folder.
    ///
    /// # Errors
    /// A [`PngError`]: the file system's or the encoder's, with the path.
    pub fn write_png(&self, path: &std::path::Path) -> Result<(), PngError> {
        let io = |path: &std::path::Path| {
            let path = path.to_path_buf();
            move |error| PngError::Io { path, error }
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let file = std::fs::File::create(path).map_err(io(path))?;
        let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), self.width, self.height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
        encoder
            .write_header()
            .and_then(|mut w| w.write_image_data(&self.rgba))
            .map_err(|error| PngError::Encode {
                path: path.to_path_buf(),
                error,
            })
    }
}

impl Image {
    /// The pixel at column `x`, row `y` (row 0 at the top), or `None` outside the image.
    #[must_use]
    pub fn pixel(&self, x: u32, y: u32) -> Option<[u8; 4]> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = (y as usize * self.width as usize + x as usize) * 4;
        let p = self.rgba.get(i..i + 4)?;
        Some([p[0], p[1], p[2], p[3]])
    }
}

/// Instances for [`render_offscreen`]: relative to `origin`, like [`Renderer::upload`] takes them.
#[derive(Clone, Copy, Debug)]
pub struct BatchData<'a> {
    /// Data-space point the instances are relative to.
    pub origin: [f64; 2],
    /// The instances.
    pub instances: &'a [Trapezoid],
}

/// A headless device plus a [`Renderer`] for [`OFFSCREEN_FORMAT`].
#[derive(Debug)]
pub struct Offscreen {
    device: wgpu::Device,
    queue: wgpu::Queue,
    renderer: Renderer,
    adapter_info: wgpu::AdapterInfo,
}

impl Offscreen {
    /// Finds an adapter (hardware first, then a fallback/software one) and creates a device with
    /// WebGL2 limits.
    ///
    /// # Errors
    /// [`RenderError::NoAdapter`] when the machine has none; [`RenderError::RequestDevice`].
    pub fn new() -> Result<Self, RenderError> {
        pollster::block_on(Self::new_async())
    }

    async fn new_async() -> Result<Self, RenderError> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let mut tried = Vec::new();
        let mut adapter = None;
        for force_fallback_adapter in [false, true] {
            let options = wgpu::RequestAdapterOptions {
                force_fallback_adapter,
                ..wgpu::RequestAdapterOptions::default()
            };
            match instance.request_adapter(&options).await {
                Ok(found) => {
                    adapter = Some(found);
                    break;
                }
                Err(e) => tried.push(format!(
                    "force_fallback_adapter={force_fallback_adapter}: {e}"
                )),
            }
        }
        let Some(adapter) = adapter else {
            return Err(RenderError::NoAdapter(tried.join("; ")));
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("memviz-render offscreen"),
                required_features: wgpu::Features::empty(),
                required_limits: required_limits(&adapter.limits()),
                ..wgpu::DeviceDescriptor::default()
            })
            .await
            .map_err(|e| RenderError::RequestDevice(e.to_string()))?;
        let renderer = Renderer::new(&device, OFFSCREEN_FORMAT);
        Ok(Self {
            device,
            queue,
            renderer,
            adapter_info: adapter.get_info(),
        })
    }

    /// What the adapter is (name, backend, device type: `Cpu` for lavapipe / llvmpipe).
    #[must_use]
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.adapter_info
    }

    /// For tests: an offscreen device, or `None` (with a `SKIPPED` note naming `test`) when the
    /// machine has no adapter, unless `MEMVIZ_REQUIRE_GPU=1` (then that is a panic, as any
    /// other error is).
    ///
    /// # Panics
    /// Without an adapter under `MEMVIZ_REQUIRE_GPU=1`, or when the device cannot be created.
    #[must_use]
    #[allow(clippy::panic)]
    pub fn for_test(test: &str) -> Option<Offscreen> {
        match Offscreen::new() {
            Ok(o) => {
                let info = o.adapter_info();
                eprintln!(
                    "{test}: adapter {:?} ({:?}, {:?})",
                    info.name, info.backend, info.device_type
                );
                Some(o)
            }
            Err(RenderError::NoAdapter(why))
                if std::env::var_os("MEMVIZ_REQUIRE_GPU").is_none_or(|v| v != "1") =>
            {
                eprintln!("SKIPPED {test}: no wgpu adapter on this machine ({why})");
                None
            }
            Err(e) => panic!("{test}: {e}"),
        }
    }

    /// [`DeviceTier::Native`] (offscreen rendering never runs in a browser).
    #[must_use]
    pub fn tier(&self) -> DeviceTier {
        DeviceTier::from_backend(self.adapter_info.backend)
    }

    /// The device, e.g. for [`crate::renderer::upload_chunked`].
    #[must_use]
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// Uploads instances once; see [`Renderer::upload`].
    #[must_use]
    pub fn upload(&self, origin: [f64; 2], instances: &[Trapezoid]) -> InstanceBatch {
        self.renderer.upload(&self.device, origin, instances)
    }

    /// Renders `batches` over `clear` (sRGB-encoded RGBA) into a `view.viewport_px` image.
    ///
    /// # Errors
    /// [`RenderError::InvalidSize`], [`RenderError::Gpu`], [`RenderError::Readback`].
    pub fn render(
        &mut self,
        view: &View,
        clear: [f64; 4],
        batches: &[&InstanceBatch],
    ) -> Result<Image, RenderError> {
        let (width, height) = view.viewport_px;
        let max = self.device.limits().max_texture_dimension_2d;
        if width == 0 || height == 0 || width > max || height > max {
            return Err(RenderError::InvalidSize { width, height, max });
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom_scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let result = self.render_and_copy(view, clear, batches, width, height);
        let oom = pollster::block_on(oom_scope.pop());
        let validation = pollster::block_on(scope.pop());
        if let Some(e) = validation.or(oom) {
            return Err(RenderError::Gpu(e.to_string()));
        }
        result
    }

    fn render_and_copy(
        &mut self,
        view: &View,
        clear: [f64; 4],
        batches: &[&InstanceBatch],
        width: u32,
        height: u32,
    ) -> Result<Image, RenderError> {
        let size = wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        };
        let texture = self.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("memviz-render offscreen target"),
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: OFFSCREEN_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        let target = texture.create_view(&wgpu::TextureViewDescriptor::default());
        self.renderer
            .render(&self.device, &self.queue, &target, clear, view, batches);

        let unpadded_row = width * 4;
        let align = wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let padded_row = unpadded_row.div_ceil(align) * align;
        let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("memviz-render offscreen readback"),
            size: u64::from(padded_row) * u64::from(height),
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        });
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("memviz-render offscreen readback"),
            });
        encoder.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture: &texture,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::TexelCopyBufferInfo {
                buffer: &readback,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(padded_row),
                    rows_per_image: Some(height),
                },
            },
            size,
        );
        self.queue.submit([encoder.finish()]);

        let (sender, receiver) = mpsc::channel();
        readback.map_async(wgpu::MapMode::Read, .., move |result| {
            // The receiver outlives the poll below; a failed send only means nobody listens.
            let _ = sender.send(result);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| RenderError::Readback(e.to_string()))?;
        match receiver.try_recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(RenderError::Readback(e.to_string())),
            Err(e) => {
                return Err(RenderError::Readback(format!(
                    "map_async did not complete: {e}"
                )))
            }
        }
        let mut rgba = Vec::with_capacity(unpadded_row as usize * height as usize);
        {
            let mapped = readback
                .get_mapped_range(..)
                .map_err(|e| RenderError::Readback(e.to_string()))?;
            for row in mapped.chunks_exact(padded_row as usize) {
                rgba.extend_from_slice(&row[..unpadded_row as usize]);
            }
        }
        readback.unmap();
        Ok(Image {
            width,
            height,
            rgba,
        })
    }
}

/// One-shot convenience: creates an [`Offscreen`] device, uploads `batches`, renders once.
/// Creating a device is slow (tens to hundreds of ms); keep an [`Offscreen`] for many images.
///
/// # Errors
/// See [`Offscreen::new`] and [`Offscreen::render`].
pub fn render_offscreen(
    view: &View,
    clear: [f64; 4],
    batches: &[BatchData<'_>],
) -> Result<Image, RenderError> {
    let mut offscreen = Offscreen::new()?;
    let uploaded: Vec<InstanceBatch> = batches
        .iter()
        .map(|b| offscreen.upload(b.origin, b.instances))
        .collect();
    let refs: Vec<&InstanceBatch> = uploaded.iter().collect();
    offscreen.render(view, clear, &refs)
}
