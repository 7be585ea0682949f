//! The trapezoid pipeline: [`Renderer`] (built once per device and target format) and
//! [`InstanceBatch`] (instance buffers, uploaded once per layout).
//!
//! # How it works
//! - `Renderer::new` builds the one render pipeline (`shader/trapezoid.wgsl`), a bind group layout
//!   with one dynamic-offset uniform binding, and a uniform buffer with one 256-byte-aligned
//!   [`ViewUniform`] slot per batch (grown on demand, never shrunk).
//! - `Renderer::upload` copies `&[Trapezoid]` into vertex buffers (step mode `Instance`), split so
//!   no buffer exceeds the device's `max_buffer_size`. Nothing else is ever uploaded per frame.
//! - Each frame, `render` (or `prepare` + `draw`) writes one `ViewUniform` per batch (the view
//!   composed with that batch's `f64` origin, see [`crate::view`]) in a single `write_buffer`,
//!   then draws each buffer with `draw(0..6, 0..n)`: the vertex shader expands every instance into
//!   two triangles, at least one device pixel wide and tall.
//! - Colours are sRGB-encoded. With a `…Srgb` target the shader decodes them to linear and the
//!   hardware re-encodes (blending happens in linear light); with a non-sRGB target they are
//!   written as they are (blending in sRGB space, as the web does). Opaque colours come out the
//!   same either way; the page's surfaces are plain on every backend ([`crate::surface_config`]).
//!
//! Everything here is WebGL2-compatible: vertex-buffer instancing, uniform buffers with dynamic
//! offsets, no storage buffers.

use wgpu::util::DeviceExt as _;

use crate::gpu_data::{Trapezoid, ViewUniform};
use crate::view::View;

/// WGSL source of the trapezoid pipeline.
pub const TRAPEZOID_WGSL: &str = include_str!("../shader/trapezoid.wgsl");

const INSTANCE_STRIDE: u64 = core::mem::size_of::<Trapezoid>() as u64;
/// Two triangles per trapezoid, no index buffer.
const VERTICES_PER_TRAPEZOID: u64 = 6;
const UNIFORM_SIZE: u64 = core::mem::size_of::<ViewUniform>() as u64;

const INSTANCE_ATTRIBUTES: [wgpu::VertexAttribute; 5] = wgpu::vertex_attr_array![
    0 => Float32x2, // x0, x1
    1 => Float32x2, // bottom0, top0
    2 => Float32x2, // bottom1, top1
    3 => Unorm8x4,  // color (sRGB-encoded RGBA8)
    4 => Uint32,    // flags
];

/// Which kind of device a [`Renderer`] runs on. WebGPU-only paths go behind this, never behind
/// scattered `cfg`s; the baseline (what every path must work with) is [`DeviceTier::WebGl2`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceTier {
    /// WebGL2 in a browser: the baseline.
    WebGl2,
    /// WebGPU in a browser.
    WebGpu,
    /// A native backend (Vulkan, Metal, DX12, GL), e.g. for offscreen rendering and tests.
    Native,
}

impl DeviceTier {
    /// The tier of an adapter's backend.
    #[must_use]
    pub fn from_backend(backend: wgpu::Backend) -> Self {
        match backend {
            wgpu::Backend::BrowserWebGpu => Self::WebGpu,
            wgpu::Backend::Gl if cfg!(target_arch = "wasm32") => Self::WebGl2,
            _ => Self::Native,
        }
    }

    /// A short name for logs and UI ("WebGL2", "WebGPU", "native").
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::WebGl2 => "WebGL2",
            Self::WebGpu => "WebGPU",
            Self::Native => "native",
        }
    }
}

/// The limits to request a device with: WebGL2's, so every tier runs the same code, but with the
/// adapter's texture size limits (a big canvas or screenshot must still fit).
#[must_use]
pub fn required_limits(adapter_limits: &wgpu::Limits) -> wgpu::Limits {
    wgpu::Limits::downlevel_webgl2_defaults().using_resolution(adapter_limits.clone())
}

/// Instances uploaded to the GPU once, drawn relative to an `f64` origin.
///
/// Cheap to keep around; dropping it frees the buffers.
#[derive(Debug)]
pub struct InstanceBatch {
    origin: [f64; 2],
    buffers: Vec<(wgpu::Buffer, u32)>,
    len: usize,
}

impl InstanceBatch {
    /// The data-space point the instances are relative to.
    #[must_use]
    pub fn origin(&self) -> [f64; 2] {
        self.origin
    }

    /// Number of instances.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there is nothing to draw.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of GPU buffers the instances were split into (0 when empty).
    #[must_use]
    pub fn buffer_count(&self) -> usize {
        self.buffers.len()
    }

    /// GPU memory held, in bytes.
    #[must_use]
    pub fn size_bytes(&self) -> u64 {
        self.buffers.iter().map(|(b, _)| b.size()).sum()
    }
}

/// Draws [`InstanceBatch`]es of [`Trapezoid`]s into a colour target of one fixed format.
#[derive(Debug)]
pub struct Renderer {
    pipeline: wgpu::RenderPipeline,
    bind_group_layout: wgpu::BindGroupLayout,
    uniform_buffer: wgpu::Buffer,
    uniform_bind_group: wgpu::BindGroup,
    /// Number of `ViewUniform` slots in `uniform_buffer`.
    uniform_slots: usize,
    /// Bytes between slots (the device's `min_uniform_buffer_offset_alignment`, at least 32).
    uniform_stride: u64,
    target_format: wgpu::TextureFormat,
    /// Reused CPU copy of the uniform slots.
    staging: Vec<u8>,
}

impl Renderer {
    /// Builds the pipeline for render targets of `target_format` (the format of the texture
    /// *view* drawn into: use the `…Srgb` one when the surface has an sRGB view format).
    #[must_use]
    pub fn new(device: &wgpu::Device, target_format: wgpu::TextureFormat) -> Self {
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("memviz-render trapezoid.wgsl"),
            source: wgpu::ShaderSource::Wgsl(TRAPEZOID_WGSL.into()),
        });
        let bind_group_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("memviz-render view uniform"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::VERTEX,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: true,
                    min_binding_size: wgpu::BufferSize::new(UNIFORM_SIZE),
                },
                count: None,
            }],
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("memviz-render trapezoids"),
            bind_group_layouts: &[Some(&bind_group_layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("memviz-render trapezoids"),
            layout: Some(&layout),
            vertex: wgpu::VertexState {
                module: &shader,
                entry_point: Some("vs_main"),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                buffers: &[Some(wgpu::VertexBufferLayout {
                    array_stride: INSTANCE_STRIDE,
                    // Not instanced: each trapezoid is stored once per corner (see
                    // `upload_chunked`), because software rasterisers (SwiftShader, which
                    // headless Chrome uses) run an instanced draw one instance at a time.
                    step_mode: wgpu::VertexStepMode::Vertex,
                    attributes: &INSTANCE_ATTRIBUTES,
                })],
            },
            primitive: wgpu::PrimitiveState {
                topology: wgpu::PrimitiveTopology::TriangleList,
                // Flipped axes or x1 < x0 reverse the winding: never cull.
                cull_mode: None,
                ..wgpu::PrimitiveState::default()
            },
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &shader,
                entry_point: Some("fs_main"),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format: target_format,
                    blend: Some(wgpu::BlendState::ALPHA_BLENDING),
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        });
        let uniform_stride =
            u64::from(device.limits().min_uniform_buffer_offset_alignment).max(UNIFORM_SIZE);
        let (uniform_buffer, uniform_bind_group) =
            Self::create_uniforms(device, &bind_group_layout, uniform_stride, 1);
        Self {
            pipeline,
            bind_group_layout,
            uniform_buffer,
            uniform_bind_group,
            uniform_slots: 1,
            uniform_stride,
            target_format,
            staging: Vec::new(),
        }
    }

    /// The colour format this renderer draws into.
    #[must_use]
    pub fn target_format(&self) -> wgpu::TextureFormat {
        self.target_format
    }

    /// Uploads `instances` (relative to `origin`) once. Split into several buffers when one would
    /// exceed the device's `max_buffer_size`. An empty slice makes an empty batch (no buffers).
    #[must_use]
    pub fn upload(
        &self,
        device: &wgpu::Device,
        origin: [f64; 2],
        instances: &[Trapezoid],
    ) -> InstanceBatch {
        let max_instances =
            (device.limits().max_buffer_size / (INSTANCE_STRIDE * VERTICES_PER_TRAPEZOID)).max(1);
        upload_chunked(device, origin, instances, max_instances)
    }

    /// Writes this frame's uniforms (one per batch, in order). Call before [`Renderer::draw`]
    /// with the same `view` and `batches`; [`Renderer::render`] does both.
    pub fn prepare(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        view: &View,
        batches: &[&InstanceBatch],
    ) {
        if batches.len() > self.uniform_slots {
            let slots = batches.len().next_power_of_two();
            let (buffer, bind_group) =
                Self::create_uniforms(device, &self.bind_group_layout, self.uniform_stride, slots);
            self.uniform_buffer = buffer;
            self.uniform_bind_group = bind_group;
            self.uniform_slots = slots;
        }
        if batches.is_empty() {
            return;
        }
        let flags = if self.target_format.is_srgb() {
            ViewUniform::FLAG_TARGET_IS_SRGB
        } else {
            0
        };
        let clip_from_data = view.clip_from_data();
        let stride = usize::try_from(self.uniform_stride).unwrap_or(256);
        self.staging.clear();
        self.staging.resize(stride * batches.len(), 0);
        for (slot, batch) in self.staging.chunks_exact_mut(stride).zip(batches) {
            let uniform = clip_from_data.view_uniform(batch.origin, view.viewport_px, flags);
            slot[..bytemuck::bytes_of(&uniform).len()]
                .copy_from_slice(bytemuck::bytes_of(&uniform));
        }
        queue.write_buffer(&self.uniform_buffer, 0, &self.staging);
    }

    /// Records the draws of `batches` into an open render pass (after [`Renderer::prepare`]).
    pub fn draw(&self, pass: &mut wgpu::RenderPass<'_>, batches: &[&InstanceBatch]) {
        pass.set_pipeline(&self.pipeline);
        for (slot, batch) in batches.iter().enumerate().take(self.uniform_slots) {
            if batch.is_empty() {
                continue;
            }
            let Ok(offset) = u32::try_from(slot as u64 * self.uniform_stride) else {
                break;
            };
            pass.set_bind_group(0, &self.uniform_bind_group, &[offset]);
            for (buffer, count) in &batch.buffers {
                pass.set_vertex_buffer(0, buffer.slice(..));
                // `count` ≤ u32::MAX / 6 (see `upload_chunked`).
                pass.draw(0..count.saturating_mul(VERTICES_PER_TRAPEZOID as u32), 0..1);
            }
        }
    }

    /// Clears `target` to `clear` (sRGB-encoded RGBA, like the instance colours) and draws
    /// `batches` in order (later on top), in one render pass, then submits.
    pub fn render(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        target: &wgpu::TextureView,
        clear: [f64; 4],
        view: &View,
        batches: &[&InstanceBatch],
    ) {
        self.prepare(device, queue, view, batches);
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("memviz-render frame"),
        });
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("memviz-render trapezoids"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: target,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(self.clear_color(clear)),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            self.draw(&mut pass, batches);
        }
        queue.submit([encoder.finish()]);
    }

    /// `clear` (sRGB-encoded) as the value wgpu expects for this target: linear for `…Srgb`.
    #[must_use]
    pub fn clear_color(&self, clear: [f64; 4]) -> wgpu::Color {
        let encode = |c: f64| {
            if self.target_format.is_srgb() {
                srgb_to_linear(c)
            } else {
                c
            }
        };
        wgpu::Color {
            r: encode(clear[0]),
            g: encode(clear[1]),
            b: encode(clear[2]),
            a: clear[3],
        }
    }

    fn create_uniforms(
        device: &wgpu::Device,
        layout: &wgpu::BindGroupLayout,
        stride: u64,
        slots: usize,
    ) -> (wgpu::Buffer, wgpu::BindGroup) {
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("memviz-render view uniforms"),
            size: stride * slots as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("memviz-render view uniforms"),
            layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &buffer,
                    offset: 0,
                    size: wgpu::BufferSize::new(UNIFORM_SIZE),
                }),
            }],
        });
        (buffer, bind_group)
    }
}

/// [`Renderer::upload`] with an explicit cap on instances per buffer (tests use a small one).
#[doc(hidden)]
#[must_use]
pub fn upload_chunked(
    device: &wgpu::Device,
    origin: [f64; 2],
    instances: &[Trapezoid],
    max_instances_per_buffer: u64,
) -> InstanceBatch {
    let per_buffer = usize::try_from(
        max_instances_per_buffer.clamp(1, u64::from(u32::MAX) / VERTICES_PER_TRAPEZOID),
    )
    .unwrap_or(usize::MAX);
    let mut expanded: Vec<Trapezoid> = Vec::new();
    let buffers = instances
        .chunks(per_buffer)
        .map(|chunk| {
            // One copy per corner: the shader picks the corner from `vertex_index % 6`.
            expanded.clear();
            expanded.reserve(chunk.len() * VERTICES_PER_TRAPEZOID as usize);
            for t in chunk {
                expanded.extend(std::iter::repeat_n(*t, VERTICES_PER_TRAPEZOID as usize));
            }
            let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("memviz-render trapezoids"),
                contents: bytemuck::cast_slice(&expanded),
                usage: wgpu::BufferUsages::VERTEX,
            });
            // `per_buffer` ≤ u32::MAX, so this never saturates.
            (buffer, u32::try_from(chunk.len()).unwrap_or(u32::MAX))
        })
        .collect();
    InstanceBatch {
        origin,
        buffers,
        len: instances.len(),
    }
}

/// The sRGB electro-optical transfer function (IEC 61966-2-1), for one channel in `[0, 1]`.
#[must_use]
pub fn srgb_to_linear(c: f64) -> f64 {
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}
