//! [`GpuScene`]: the uploaded plot batches plus the per-frame overlay, drawn with one
//! [`View`](memviz_render::View) over the whole canvas (browser: a [`Renderer`] and a surface
//! texture view; native: an [`Offscreen`](memviz_render::Offscreen)).

use memviz_render::{InstanceBatch, Renderer};

use crate::app::App;
use crate::scene::Batch;

/// GPU copies of an [`App`]'s batches. Re-uploads the plot only when
/// [`App::plot_batches`]' generation changes; the overlay (a few thousand instances) is uploaded
/// every frame.
#[derive(Debug, Default)]
pub struct GpuScene {
    /// Uploaded plot batches with their data bounding boxes.
    plot: Vec<(InstanceBatch, crate::scene::Batch)>,
    generation: Option<u64>,
    /// Plot uploads done so far (tests check that a zoom does not re-upload a static scene).
    pub uploads: u64,
}

impl GpuScene {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn sync(&mut self, app: &App, upload: &mut dyn FnMut(&Batch) -> InstanceBatch) {
        let (generation, batches) = app.plot_batches();
        if self.generation != Some(generation) {
            self.plot = batches
                .iter()
                .map(|b| {
                    let meta = crate::scene::Batch {
                        origin: b.origin,
                        instances: Vec::new(),
                        bbox: b.bbox,
                    };
                    (upload(b), meta)
                })
                .collect();
            self.generation = Some(generation);
            self.uploads += 1;
        }
    }

    /// The uploaded plot batches whose bounding box meets the plot window.
    fn visible(&self, app: &App) -> Vec<&InstanceBatch> {
        // The whole canvas's window (a superset of the plot's).
        let view = app.canvas_view();
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
            .filter(|(gpu, meta)| {
                let [x0, x1, y0, y1] = meta.bbox;
                !gpu.is_empty() && x1 >= xl && x0 <= xh && y1 >= yl && y0 <= yh
            })
            .map(|(gpu, _)| gpu)
            .collect()
    }

    /// Plot batches drawn in the last visible-set computation (for tests and benchmarks).
    #[must_use]
    pub fn visible_instances(&self, app: &App) -> usize {
        self.visible(app).iter().map(|b| b.len()).sum()
    }

    /// Uploads when dirty and draws plot + overlay into `target` (a view of a texture of
    /// `app.canvas_view().viewport_px`, in `renderer`'s format).
    pub fn render(
        &mut self,
        app: &mut App,
        renderer: &mut Renderer,
        device: &memviz_render::wgpu::Device,
        queue: &memviz_render::wgpu::Queue,
        target: &memviz_render::wgpu::TextureView,
    ) {
        self.sync(app, &mut |b: &Batch| {
            renderer.upload(device, b.origin, &b.instances)
        });
        let overlay = app.overlay();
        let overlay = renderer.upload(device, overlay.origin, &overlay.instances);
        let view = app.canvas_view();
        let mut refs = self.visible(app);
        refs.push(&overlay);
        renderer.render(device, queue, target, app.theme().clear(), &view, &refs);
        app.take_needs_redraw();
    }

    /// The same, into an offscreen image (native).
    ///
    /// # Errors
    /// What [`memviz_render::Offscreen::render`] returns.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn render_offscreen(
        &mut self,
        app: &mut App,
        offscreen: &mut memviz_render::Offscreen,
    ) -> Result<memviz_render::Image, memviz_render::RenderError> {
        self.sync(app, &mut |b: &Batch| {
            offscreen.upload(b.origin, &b.instances)
        });
        let overlay = app.overlay();
        let overlay = offscreen.upload(overlay.origin, &overlay.instances);
        let view = app.canvas_view();
        let mut refs = self.visible(app);
        refs.push(&overlay);
        let img = offscreen.render(&view, app.theme().clear(), &refs);
        app.take_needs_redraw();
        img
    }
}
