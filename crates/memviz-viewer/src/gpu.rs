//! [`GpuScene`]: the uploaded plot batches plus the per-frame overlay of one [`FrameOutput`],
//! drawn with one [`View`](memviz_render::View) over the whole canvas (browser: a [`Renderer`]
//! and a surface texture view; native: an [`Offscreen`](memviz_render::Offscreen)).

use memviz_render::{InstanceBatch, Renderer};

use crate::scene::Batch;
use crate::view::{FrameOutput, FrameSource};

/// GPU copies of a frame's plot batches. Re-uploads them only when the frame's
/// ([`FrameOutput::source`], [`FrameOutput::generation`]) pair changes (so showing another view
/// uploads its batches); the overlay (a few thousand instances) is uploaded every frame.
#[derive(Debug, Default)]
pub struct GpuScene {
    /// Uploaded plot batches with their data bounding boxes.
    plot: Vec<(InstanceBatch, [f64; 4])>,
    /// What the uploaded batches belong to, and their generation.
    uploaded: Option<(FrameSource, u64)>,
    /// Plot uploads done so far (tests check that a zoom does not re-upload a static scene).
    pub uploads: u64,
}

impl GpuScene {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn sync(&mut self, frame: &FrameOutput<'_>, upload: &mut dyn FnMut(&Batch) -> InstanceBatch) {
        let id = (frame.source, frame.generation);
        if self.uploaded != Some(id) {
            self.plot = frame.batches.iter().map(|b| (upload(b), b.bbox)).collect();
            self.uploaded = Some(id);
            self.uploads += 1;
        }
    }

    /// The uploaded plot batches whose bounding box meets the frame's canvas window (a superset
    /// of the plot's).
    fn visible(&self, frame: &FrameOutput<'_>) -> Vec<&InstanceBatch> {
        let view = &frame.view;
        let (xl, xh) = (
            view.x_range.0.min(view.x_range.1),
            view.x_range.0.max(view.x_range.1),
        );
        let (yl, yh) = (
            view.y_range.0.min(view.y_range.1),
            view.y_range.0.max(view.y_range.1),
        );
        self.plot
            .iter()
            .filter(|(gpu, [x0, x1, y0, y1])| {
                !gpu.is_empty() && *x1 >= xl && *x0 <= xh && *y1 >= yl && *y0 <= yh
            })
            .map(|(gpu, _)| gpu)
            .collect()
    }

    /// Instances of the uploaded plot batches `frame` would draw (for tests and benchmarks;
    /// the batches uploaded are those of the last frame drawn).
    #[must_use]
    pub fn visible_instances(&self, frame: &FrameOutput<'_>) -> usize {
        self.visible(frame).iter().map(|b| b.len()).sum()
    }

    /// Uploads the plot when its (source, generation) changed and draws plot + overlay into
    /// `target` (a view of a texture of `frame.view.viewport_px`, in `renderer`'s format).
    pub fn render(
        &mut self,
        frame: FrameOutput<'_>,
        renderer: &mut Renderer,
        device: &memviz_render::wgpu::Device,
        queue: &memviz_render::wgpu::Queue,
        target: &memviz_render::wgpu::TextureView,
    ) {
        self.sync(&frame, &mut |b: &Batch| {
            renderer.upload(device, b.origin, &b.instances)
        });
        let overlay = renderer.upload(device, frame.overlay.origin, &frame.overlay.instances);
        let mut refs = self.visible(&frame);
        refs.push(&overlay);
        renderer.render(device, queue, target, frame.clear, &frame.view, &refs);
    }

    /// The same, into an offscreen image (native).
    ///
    /// # Errors
    /// What [`memviz_render::Offscreen::render`] returns.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn render_offscreen(
        &mut self,
        frame: FrameOutput<'_>,
        offscreen: &mut memviz_render::Offscreen,
    ) -> Result<memviz_render::Image, memviz_render::RenderError> {
        self.sync(&frame, &mut |b: &Batch| {
            offscreen.upload(b.origin, &b.instances)
        });
        let overlay = offscreen.upload(frame.overlay.origin, &frame.overlay.instances);
        let mut refs = self.visible(&frame);
        refs.push(&overlay);
        offscreen.render(&frame.view, frame.clear, &refs)
    }
}
