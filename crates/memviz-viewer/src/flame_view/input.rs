//! [`FlameView`]'s camera and input: the node under a point, hover and click, and the
//! [`DrawableView`] the app drives (theme, pointer, keys, the overlay).

use super::*;

impl FlameView {
    // ----- camera and input ------------------------------------------------------------------

    /// The node under a canvas point.
    #[must_use]
    pub fn node_at(&self, css_x: f64, css_y: f64) -> Option<NodeId> {
        let [x, y] = self.pane.data_in_plot(css_x, css_y)?;
        if !x.is_finite() || !y.is_finite() || y > 0.0 {
            return None;
        }
        let d = (-y).floor();
        if d >= f64::from(self.rows) {
            return None;
        }
        self.tree.hit_in(self.zoom_root, x, d as u32)
    }

    /// Canvas CSS px of a node's rect centre, when it is in the zoomed subtree.
    #[must_use]
    pub fn node_center_css(&self, node: NodeId) -> Option<[f64; 2]> {
        let (x0, x1, b, t) = self.node_rect(node)?;
        Some(
            self.pane
                .camera
                .css_px_from_data(&self.pane.geom, [(x0 + x1) * 0.5, (b + t) * 0.5]),
        )
    }

    /// Hover: the tooltip of the node under the point ([`FlameView::node_tooltip`]).
    pub fn hover_at(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let hit = self.node_at(css_x, css_y);
        if hit != self.hover {
            self.hover = hit;
            self.pane.needs_redraw = true;
        }
        self.node_tooltip(hit?)
    }

    /// A click: zooms into the node under the point, or out one level on the zoom root; then
    /// the tooltip under the point.
    pub fn click_at(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        if let Some(n) = self.node_at(css_x, css_y) {
            if n == self.zoom_root {
                self.zoom_out();
            } else {
                self.zoom_to(n);
            }
        }
        self.hover_at(css_x, css_y)
    }
}

impl DrawableView for FlameView {
    /// The clear colour and the 1 px separators between frames follow the theme.
    fn set_theme(&mut self, theme: &crate::theme::Theme) {
        if self.pane.bg != theme.bg {
            self.pane.bg = theme.bg;
            self.pane.needs_redraw = true;
        }
    }

    fn hover(&mut self, _snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        self.hover_at(css_x, css_y)
    }

    fn click(&mut self, _snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        self.click_at(css_x, css_y)
    }

    /// Sets the canvas size.
    fn resize(&mut self, css_w: f64, css_h: f64, dpr: f64) {
        let fitted = self.pane.camera.x_range == self.pane.camera.full_x
            && self.pane.camera.y_range.1 == 0.0;
        self.pane.resize(css_w, css_h, dpr);
        self.set_camera_limits(fitted);
    }

    fn fit(&mut self) {
        self.fit_top();
    }

    /// Zooms by `factor` (> 1 zooms in) at a canvas point: x, and y until rows are
    /// [`MAX_ROW_CSS`] tall.
    fn zoom_at(&mut self, css_x: f64, css_y: f64, factor: f64) {
        if !css_x.is_finite() || !css_y.is_finite() {
            return;
        }
        self.pane.zoom_at(css_x, css_y, factor);
    }

    fn pan_by(&mut self, dx: f64, dy: f64) {
        self.pane.pan_by(dx, dy);
    }

    /// Keys: `+`/`-` zoom, `0` fits, WASD / arrows pan, Backspace zooms out one level, Home
    /// back to the whole tree.
    fn key(&mut self, key: &str) -> bool {
        match key {
            "Backspace" => {
                self.zoom_out();
            }
            "Home" => {
                self.zoom_to(0);
            }
            _ => return self.pane.key(key),
        }
        true
    }

    fn pointer_down(&mut self, css_x: f64, css_y: f64) {
        self.pane.pointer_down(css_x, css_y);
    }

    fn pointer_move(&mut self, _snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        if self.pane.drag_move(css_x, css_y) {
            None
        } else {
            self.hover_at(css_x, css_y)
        }
    }

    fn pointer_up(&mut self, _snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        // A press and release at (about) the same place is a click (see [`Pane::release`]).
        if self.pane.release(css_x, css_y) {
            self.click_at(css_x, css_y)
        } else {
            self.hover_at(css_x, css_y)
        }
    }

    fn pointer_leave(&mut self) {
        self.pane.cancel_drag();
        if self.hover.take().is_some() {
            self.pane.needs_redraw = true;
        }
    }

    /// Separators, the hover outline and the margin masks.
    fn overlay(&mut self) -> Batch {
        let cam = self.pane.camera;
        let origin = self.pane.overlay_origin();
        let mut out = Vec::new();
        let rel = |x: f64, y: f64| ((x - origin[0]) as f32, (y - origin[1]) as f32);
        let (sx, _) = self.css_per_unit();
        let (xl, xh) = cam.x_range;
        let (yl, yh) = cam.y_range;
        for r in &self.rects {
            if (r.x1 - r.x0) * sx < SEPARATOR_MIN_CSS || r.x0 <= 0.0 {
                continue;
            }
            let (x0, x1, b, t) = rect_data(r.x0, r.x1, r.depth);
            if x1 < xl || x0 > xh || t < yl || b > yh {
                continue;
            }
            let (x, b) = rel(x0, b);
            let (_, t) = rel(x0, t);
            out.push(Trapezoid::rect(x, x, b, t, self.pane.bg));
        }
        if let Some((x0, x1, b, t)) = self.hover.and_then(|n| self.node_rect(n)) {
            let (x0, b) = rel(x0, b);
            let (x1, t) = rel(x1, t);
            push_outline(&mut out, [x0, x1, b, t], HOVER_EDGE);
        }
        self.pane.margin_masks(&mut out, origin);
        Batch::unbounded(origin, out)
    }

    crate::pane::pane_view_methods!();
}
