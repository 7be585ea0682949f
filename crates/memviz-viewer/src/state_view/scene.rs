//! The map's scene: one batch list of rects per selection, and the camera's full range.

use memviz_present::segmap::Item;
use memviz_render::{rgba, Trapezoid};

use super::StateView;
use crate::scene::Batch;

/// A row is never drawn taller than this many CSS px when fitted.
const MAX_ROW_CSS: f64 = 48.0;
/// Rects per uploaded batch.
const BATCH_RECTS: usize = 1 << 15;
/// Map width in units (§6.5).
const MAP_W: f64 = 200.0;

fn color_of(c: [u8; 4]) -> u32 {
    rgba(c[0], c[1], c[2], c[3])
}

impl StateView {
    fn fitted_rows(&self) -> f64 {
        let rows = f64::from(self.map.rows.max(1));
        let by_height = self.pane.geom.plot.height() / MAX_ROW_CSS;
        rows.max(by_height)
    }

    pub(super) fn rebuild_scene(&mut self, refit: bool) {
        let mut batches = Vec::new();
        let mut cur: Vec<Trapezoid> = Vec::new();
        let push = |cur: &mut Vec<Trapezoid>, batches: &mut Vec<Batch>, t: Trapezoid| {
            cur.push(t);
            if cur.len() >= BATCH_RECTS {
                batches.push(Batch::unbounded([0.0, 0.0], std::mem::take(cur)));
            }
        };
        for r in self.map.rects() {
            let (x0, x1) = (r.x0 as f32, r.x1 as f32);
            let (bottom, top) = (-r.y1 as f32, -r.y0 as f32);
            // Segments' free space is a light grey, so that it shows even when the rows are
            // too thin for their borders (drawn by the overlay once a row is tall enough).
            let color = if matches!(r.item, Item::Segment(_)) {
                self.theme.segment_fill
            } else {
                color_of(r.color)
            };
            push(
                &mut cur,
                &mut batches,
                Trapezoid::rect(x0, x1, bottom, top, color),
            );
        }
        if !cur.is_empty() {
            batches.push(Batch::unbounded([0.0, 0.0], cur));
        }
        self.batches = batches;
        self.generation = crate::view::next_generation();
        self.pane.needs_redraw = true;
        let rows = self.fitted_rows();
        let full_x = (-1.0, MAP_W + 1.0);
        let full_y = (-rows - 0.1, 0.1);
        if refit || self.pane.camera.full_x != full_x || self.pane.camera.full_y != full_y {
            self.pane.camera.full_x = full_x;
            self.pane.camera.full_y = full_y;
            self.pane.camera.set_zoom_cap(MAP_W / 1e6, 1e-3);
            if refit {
                self.pane.camera.fit();
            }
            self.pane.camera.clamp();
        }
    }
}
