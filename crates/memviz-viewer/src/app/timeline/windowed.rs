//! Windowed scenes: the rebuild around the camera once it has settled.

use super::{axis_map, Settle, TimelineView};
use crate::scene;
use crate::xaxis::XMap;

impl TimelineView {
    /// Rebuilds a windowed scene for the current camera now (no-op for static scenes).
    pub fn settle(&mut self) {
        self.ui.settle = Settle::Still;
        if !self.is_windowed() {
            return;
        }
        let cam = self.ui.camera;
        let geom = self.geom;
        let (px_w, px_h) = geom.plot_px();
        let time = self.ui.camera_time;
        let (snap, device) = (&self.snap, self.device);
        let Some(d) = self.data.as_mut() else {
            return;
        };
        let w = cam.x_range.1 - cam.x_range.0;
        let h = cam.y_range.1 - cam.y_range.0;
        // Half a window of margin on each side, but no columns outside the data.
        let x0 = (cam.x_range.0 - 0.5 * w).max(cam.full_x.0);
        let x1 = (cam.x_range.1 + 0.5 * w).min(cam.full_x.1).max(x0 + 1e-9);
        let window = [x0, x1, cam.y_range.0 - 0.5 * h, cam.y_range.1 + 0.5 * h];
        let columns = (f64::from(px_w) * (x1 - x0) / w.max(1e-9)).clamp(1.0, 65536.0) as u32;
        let y_tol = 0.5 * h / f64::from(px_h.max(1));
        // Two or more timesteps per device-pixel column: the column level of detail, sampled
        // per CSS pixel (so a high-DPR screen does not quadruple the instances).
        let dpr = geom.device_pixel_ratio.max(1.0);
        let map = axis_map(time, snap, device, Some(d));
        let window_steps = map.step_of_axis(x1) - map.step_of_axis(x0);
        let built = if window_steps / f64::from(columns) >= scene::COLUMN_LOD_STEPS_PER_PX {
            let css_columns = (f64::from(columns) / dpr).max(1.0) as u32;
            // Very busy stacks sample every other CSS pixel to keep frames cheap: decided from
            // the instances per column of the previous build (rebuilt once if that was wrong).
            let tol = 2.0 * y_tol * dpr;
            let half = (css_columns / 2).max(1);
            let mut cols =
                if d.column_density * f64::from(css_columns) > scene::COLUMN_LOD_BUDGET as f64 {
                    half
                } else {
                    css_columns
                };
            let mut built = scene::build_columns_on(&d.layout, &d.colors, window, cols, tol, &map);
            if built.instance_count() > scene::COLUMN_LOD_BUDGET && cols != half {
                cols = half;
                built = scene::build_columns_on(&d.layout, &d.colors, window, cols, tol, &map);
            }
            (built, Some(cols))
        } else {
            let built =
                scene::build_windowed_on(&d.layout, &d.colors, window, columns, y_tol, &map);
            (built, None)
        };
        drop(map);
        let (built, cols) = built;
        if let Some(cols) = cols {
            d.column_density = built.instance_count() as f64 / f64::from(cols);
        }
        d.scene = built;
        self.update_zoom_cap();
        self.frame.generation = crate::view::next_generation();
        self.frame.needs_redraw = true;
    }
}

impl TimelineView {
    /// Highlights `elements` (the others faint grey, or hidden when `only`); `None` clears.
    /// The scene is repainted with the new colours ([`scene::PlotScene::recolor`]). `Ok(true)` when the highlight changed; `Err`
    /// when its colours could not be allocated (the old highlight stays).
    pub(in crate::app) fn set_highlight(
        &mut self,
        elements: Option<Vec<u32>>,
        only: bool,
    ) -> Result<bool, crate::answer::Unavailable> {
        use memviz_present::color;
        let Some(d) = self.data.as_mut() else {
            return Ok(false);
        };
        match elements {
            None if d.highlight.is_none() => return Ok(false),
            None => {
                d.highlight = None;
                d.colors.clone_from(&d.base_colors);
            }
            Some(mut els) => {
                els.sort_unstable();
                els.dedup();
                let other = if only {
                    color::HIDDEN_COLOR
                } else {
                    color::DIM_COLOR
                };
                let n = d.base_colors.len();
                let mut colors: Vec<u8> = Vec::new();
                if colors.try_reserve_exact(n).is_err() {
                    return Err(crate::answer::Unavailable::from(format!(
                        "{} needs {} contiguous bytes of memory, which this page no longer has",
                        crate::memory::Panel::Highlight.title(),
                        n
                    )));
                }
                colors.resize(n, other);
                for &e in &els {
                    if let (Some(c), Some(&b)) =
                        (colors.get_mut(e as usize), d.base_colors.get(e as usize))
                    {
                        *c = b;
                    }
                }
                d.colors = colors;
                d.highlight = Some((els, only));
            }
        }
        // Only the colours change: the scene is repainted where it keeps what it was painted
        // from (the same window and geometry), else rebuilt from the first scene.
        let repainted = d.scene.recolor(&d.colors);
        if !repainted {
            d.scene = crate::app::device::initial_scene(&d.layout, &d.colors, d.windowed);
        }
        // A column level of detail over its budget is halved by the settle, as when built.
        let over = d.scene.is_columns() && d.scene.instance_count() > scene::COLUMN_LOD_BUDGET;
        self.frame.generation = crate::view::next_generation();
        self.frame.needs_redraw = true;
        if self.is_windowed() && (!repainted || over) {
            self.ui.settle = Settle::Moved;
        }
        // The scene above is in timesteps: back on the chosen axis.
        self.sync_axis();
        Ok(true)
    }
}
