//! The timeline's camera: the x axis it is in (steps or time), its moves, the zoom cap, and
//! the windows a brush or a deep link sets.

use super::{axis_map, Settle, TimelineView};
use crate::camera::Y_HEADROOM;
use crate::scene;
use crate::xaxis::XMap;

impl TimelineView {
    /// Puts the camera and the scene on the chosen x axis (time where the trace has usable
    /// times): the camera's window is carried over through the timesteps it shows, the scene
    /// is rebuilt in the axis's unit (it replaces the other, never kept beside it). A no-op when
    /// both already are.
    pub fn sync_axis(&mut self) {
        let on = self.ui.time_axis && self.has_time();
        if self.ui.camera_time != on {
            let cam = self.ui.camera;
            let n = f64::from(self.data().map_or(1, |d| d.layout.step_count().max(1)));
            let (old, new) = (
                self.xmap(),
                axis_map(on, &self.snap, self.device, self.data()),
            );
            let (s0, s1) = (
                old.step_of_axis(cam.x_range.0),
                old.step_of_axis(cam.x_range.1),
            );
            let full_x = (new.axis_of_step(0.0), new.axis_of_step(n));
            let x_range = (new.axis_of_step(s0), new.axis_of_step(s1));
            drop((old, new));
            let cam = &mut self.ui.camera;
            cam.full_x = full_x;
            cam.x_range = x_range;
            self.ui.camera_time = on;
            // The zoom cap is in the old unit until the scene below is rebuilt.
            cam.min_span.0 = 1e-3;
            cam.clamp();
            self.ui.overview_key.0 = usize::MAX;
            self.camera_moved();
        }
        if self.data().is_some_and(|d| d.scene.x_time != on) {
            if self.is_windowed() {
                self.settle();
            } else {
                let scene = {
                    let Some(d) = self.data() else { return };
                    let map = self.xmap();
                    scene::build_static_on(&d.layout, &d.colors, &map)
                };
                if let Some(d) = self.data.as_mut() {
                    d.scene = scene;
                }
                self.update_zoom_cap();
                self.frame.generation = crate::view::next_generation();
                self.frame.needs_redraw = true;
            }
        }
    }

    pub(super) fn camera_moved(&mut self) {
        self.frame.needs_redraw = true;
        if self.is_windowed() {
            self.ui.settle = Settle::Moved;
        }
    }

    pub(super) fn update_zoom_cap(&mut self) {
        let data = self.data.as_ref();
        self.ui.update_zoom_cap(&self.geom, data);
    }

    /// The overview brush: shows `[x0, x1)` (the axis's unit) and fits y to
    /// `max(live_at_step over the timesteps shown) × 1.05`.
    pub fn set_x_window(&mut self, x0: f64, x1: f64) {
        if !x0.is_finite() || !x1.is_finite() {
            return;
        }
        let (lo, hi) = if x0 <= x1 { (x0, x1) } else { (x1, x0) };
        let (hi, top) = {
            let Some(d) = self.data() else { return };
            let map = self.xmap();
            let live = d.layout.live_at_step();
            let n = live.len();
            let hi = hi.max(lo + 1.0);
            let a = map.step_of_axis(lo).floor().clamp(0.0, n as f64) as usize;
            let b = map.step_of_axis(hi).ceil().clamp(0.0, n as f64) as usize;
            let top = live.range(a, b.max(a)).max().unwrap_or(d.layout.peak_bytes);
            (hi, top)
        };
        let cam = &mut self.ui.camera;
        cam.x_range = (lo, hi);
        cam.y_range = (0.0, (top.max(1) as f64) * Y_HEADROOM);
        cam.clamp();
        self.camera_moved();
    }

    /// Shows `x0..x1` (the axis's unit) and bytes `y0..y1`, clamped to what the camera allows.
    pub fn set_window(&mut self, x0: f64, x1: f64, y0: f64, y1: f64) {
        if ![x0, x1, y0, y1].iter().all(|v| v.is_finite()) {
            return;
        }
        let cam = &mut self.ui.camera;
        cam.x_range = (x0.min(x1), x0.max(x1));
        cam.y_range = (y0.min(y1), y0.max(y1));
        cam.clamp();
        self.camera_moved();
    }
}
