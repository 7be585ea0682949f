//! Geometry and camera: the canvas size, fit, zoom, pan, keys and the visible window.

use super::timeline::Gate;
use super::{ActiveView, App, DrawableView as _};
use crate::camera::{Camera, PlotGeometry};

impl App {
    /// Sets the canvas size in CSS px and the device pixel ratio.
    pub fn resize(&mut self, css_w: f64, css_h: f64, device_pixel_ratio: f64) {
        self.geom = PlotGeometry::new(css_w, css_h, device_pixel_ratio);
        if let Some((_, v)) = self.state_view.as_mut() {
            v.resize(css_w, css_h, device_pixel_ratio);
        }
        if let Some((_, v)) = self.flame_view.as_mut() {
            v.resize(css_w, css_h, device_pixel_ratio);
        }
        if let Some((_, mut v)) = self.timeline_view(Gate::closed()) {
            v.resize(css_w, css_h, device_pixel_ratio);
        }
    }

    #[must_use]
    pub fn geometry(&self) -> &PlotGeometry {
        &self.geom
    }

    /// The timelines' camera.
    #[must_use]
    pub fn camera(&self) -> &Camera {
        &self.timeline.camera
    }

    /// Shows everything.
    pub fn fit(&mut self) {
        self.with_view(Gate::closed(), |_, v| v.fit());
    }

    /// Wheel/pinch zoom by `factor` (> 1 zooms in) anchored at the cursor.
    pub fn zoom_at(&mut self, css_x: f64, css_y: f64, factor: f64) {
        self.with_view(Gate::closed(), |_, v| v.zoom_at(css_x, css_y, factor));
    }

    /// A wheel event: `delta_y` in CSS px (negative = zoom in).
    pub fn wheel(&mut self, css_x: f64, css_y: f64, delta_y: f64) {
        if delta_y.is_finite() {
            self.zoom_at(
                css_x,
                css_y,
                2f64.powf(-delta_y.clamp(-600.0, 600.0) / 300.0),
            );
        }
    }

    /// Drag-pan by CSS px.
    pub fn pan_by(&mut self, dx_css: f64, dy_css: f64) {
        self.with_view(Gate::closed(), |_, v| v.pan_by(dx_css, dy_css));
    }

    /// Double click: fit.
    pub fn double_click(&mut self) {
        self.fit();
    }

    /// Keyboard, as the view shown reads it (the timeline: `a`/`d`/arrows pan, `w`/`s` zoom x,
    /// `+`/`-` zoom both axes, `0` fits). Returns true when the key was used.
    pub fn key(&mut self, key: &str) -> bool {
        self.with_view(Gate::closed(), |_, v| v.key(key))
            .unwrap_or(false)
    }

    /// The overview brush: shows timesteps `[x0, x1)` and fits y to
    /// `max(live_at_step over the window) × 1.05`. Only on the timeline.
    pub fn set_x_window(&mut self, x0: f64, x1: f64) {
        if self.active != ActiveView::Timeline {
            return;
        }
        if let Some((_, mut v)) = self.timeline_view(Gate::closed()) {
            v.set_x_window(x0, x1);
        }
    }

    /// The x (timesteps, or µs on the time axis) at a canvas x inside the overview strip.
    #[must_use]
    pub fn overview_step_at(&self, css_x: f64) -> f64 {
        self.timeline.overview_step_at(&self.geom, css_x)
    }

    /// Sets the visible window of the timeline (`x0..x1` in the x axis's unit, timesteps or µs;
    /// bytes `y0..y1`), clamped
    /// to what the camera allows; a deep link's view. Non-finite values are ignored.
    pub fn set_window(&mut self, x0: f64, x1: f64, y0: f64, y1: f64) {
        if self.active != ActiveView::Timeline {
            return;
        }
        if let Some((_, mut v)) = self.timeline_view(Gate::closed()) {
            v.set_window(x0, x1, y0, y1);
        }
    }
}
