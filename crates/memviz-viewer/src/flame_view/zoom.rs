//! [`FlameView`]'s scene and zoom: the drawn rects of the zoom root's subtree uploaded in
//! batches, the camera's limits and fit, a node's rect, zooming in and out.

use super::*;

impl FlameView {
    // ----- scene -----------------------------------------------------------------------------

    pub(super) fn fitted_rows(&self) -> f64 {
        f64::from(self.rows.max(1)).max(self.pane.geom.plot.height() / MAX_ROW_CSS)
    }

    /// Relays out the zoom root's subtree, uploads it (a new generation) and sets the camera's
    /// limits; `refit` shows it whole.
    pub(super) fn rebuild_scene(&mut self, refit: bool) {
        let root = self.zoom_root;
        self.rects = self
            .tree
            .rects(root)
            .into_iter()
            .filter(|r| r.node == root || r.x1 - r.x0 >= MIN_RECT_W)
            .collect();
        self.rows = self
            .rects
            .iter()
            .map(|r| r.depth.saturating_add(1))
            .max()
            .unwrap_or(1)
            .max(1);
        let mut batches = Vec::new();
        for chunk in self.rects.chunks(BATCH_RECTS) {
            let mut bbox = [
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::INFINITY,
                f64::NEG_INFINITY,
            ];
            let instances: Vec<Trapezoid> = chunk
                .iter()
                .map(|r| {
                    let (x0, x1, b, t) = rect_data(r.x0, r.x1, r.depth);
                    bbox = [
                        bbox[0].min(x0),
                        bbox[1].max(x1),
                        bbox[2].min(b),
                        bbox[3].max(t),
                    ];
                    let color = self.node_color(r);
                    Trapezoid::rect(x0 as f32, x1 as f32, b as f32, t as f32, color)
                })
                .collect();
            batches.push(Batch {
                origin: [0.0, 0.0],
                instances,
                bbox,
            });
        }
        self.batches = batches;
        self.generation = crate::view::next_generation();
        self.pane.needs_redraw = true;
        self.set_camera_limits(refit);
    }

    pub(super) fn set_camera_limits(&mut self, refit: bool) {
        let rows = self.fitted_rows();
        self.pane.camera.full_x = (0.0, 1.0);
        self.pane.camera.full_y = (-rows, 0.0);
        let (px_w, _) = self.pane.geom.plot_px();
        let min_x = memviz_render::min_span(1.0, px_w).clamp(1e-9, 1.0);
        let min_y = (self.pane.geom.plot.height() / MAX_ROW_CSS).clamp(1e-3, rows);
        self.pane.camera.min_span = (min_x, min_y);
        if refit {
            self.fit_top();
        }
        self.pane.camera.clamp();
    }

    /// Fits the width and as many rows from the root as are [`FIT_ROW_CSS`] tall.
    pub(super) fn fit_top(&mut self) {
        self.pane.fit();
        let shown = (self.pane.geom.plot.height() / FIT_ROW_CSS).max(1.0);
        if f64::from(self.rows) > shown {
            self.pane.camera.y_range = (-shown, 0.0);
        }
    }

    /// The camera (data window of the chart).
    #[must_use]
    pub fn camera(&self) -> &Camera {
        &self.pane.camera
    }

    /// The chart's geometry (CSS px).
    #[must_use]
    pub fn geometry(&self) -> &PlotGeometry {
        &self.pane.geom
    }

    /// CSS px per data unit, (x, y).
    pub(super) fn css_per_unit(&self) -> (f64, f64) {
        let cam = &self.pane.camera;
        (
            self.pane.geom.plot.width() / (cam.x_range.1 - cam.x_range.0).max(1e-12),
            self.pane.geom.plot.height() / (cam.y_range.1 - cam.y_range.0).max(1e-12),
        )
    }

    /// True when `node` is the zoom root or below it.
    pub(super) fn in_zoom(&self, node: NodeId) -> bool {
        let mut cur = Some(node);
        let mut steps = 0usize;
        while let Some(id) = cur {
            if id == self.zoom_root {
                return true;
            }
            steps += 1;
            if steps > self.tree.nodes.len() {
                return false;
            }
            cur = self.tree.node(id).and_then(|n| n.parent);
        }
        false
    }

    /// A node's rect in data space under the current zoom, `(x0, x1, bottom, top)`.
    pub(super) fn node_rect(&self, node: NodeId) -> Option<(f64, f64, f64, f64)> {
        if !self.in_zoom(node) {
            return None;
        }
        let r = self.tree.node(self.zoom_root)?;
        let n = self.tree.node(node)?;
        let (x0, x1) = if r.total > 0 {
            let w = r.total as f64;
            let x0 = n.x0.saturating_sub(r.x0) as f64 / w;
            (x0, x0 + n.total as f64 / w)
        } else {
            (0.0, 1.0)
        };
        Some(rect_data(x0, x1, n.depth.saturating_sub(r.depth)))
    }

    /// Zooms into `node` (an id of the full tree): its subtree fills the width. False for an
    /// unknown node or the current zoom root.
    pub fn zoom_to(&mut self, node: NodeId) -> bool {
        if self.tree.node(node).is_none() || node == self.zoom_root {
            return false;
        }
        self.zoom_root = node;
        self.hover = None;
        self.rebuild_scene(true);
        true
    }

    /// Zooms out one level (to the zoom root's parent). False at the full tree's root.
    pub fn zoom_out(&mut self) -> bool {
        match self.tree.node(self.zoom_root).and_then(|n| n.parent) {
            Some(p) => self.zoom_to(p),
            None => false,
        }
    }
}
