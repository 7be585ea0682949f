//! The timeline as a [`DrawableView`]: camera input, drags (pan, brush), hover, click and frames.

use memviz_render::View;
use memviz_snapshot::Snapshot;

use super::{Drag, Settle, TimelineView, SETTLE_MS};
use crate::answer::Tooltip;
use crate::scene::Batch;
use crate::view::{DrawableView, CLICK_SLOP_CSS};
use crate::xaxis::XMap;

impl DrawableView for TimelineView {
    /// The app has set the new geometry; the zoom cap follows it.
    fn resize(&mut self, css_w: f64, css_h: f64, dpr: f64) {
        self.geom = crate::camera::PlotGeometry::new(css_w, css_h, dpr);
        self.update_zoom_cap();
        self.camera_moved();
    }

    /// Whole trace, `y ∈ [0, peak × 1.05]`.
    fn fit(&mut self) {
        self.ui.camera.fit();
        self.camera_moved();
    }

    fn zoom_at(&mut self, css_x: f64, css_y: f64, factor: f64) {
        self.ui.camera.zoom_at(&self.geom, [css_x, css_y], factor);
        self.camera_moved();
    }

    fn pan_by(&mut self, dx: f64, dy: f64) {
        self.ui.camera.pan_by(&self.geom, dx, dy);
        self.camera_moved();
    }

    /// `a`/`d`/`ArrowLeft`/`ArrowRight` pan x, `ArrowUp`/`ArrowDown` pan y, `w`/`s` zoom x
    /// in/out around the centre, `+`/`=`/`-` zoom both axes, `0` fits.
    fn key(&mut self, key: &str) -> bool {
        let p = self.geom.plot;
        let centre = [(p.left + p.right) * 0.5, (p.top + p.bottom) * 0.5];
        let below = [centre[0], p.bottom + 1.0];
        let step_x = p.width() * 0.15;
        let step_y = p.height() * 0.15;
        match key {
            "a" | "A" | "ArrowLeft" => self.pan_by(step_x, 0.0),
            "d" | "D" | "ArrowRight" => self.pan_by(-step_x, 0.0),
            "ArrowUp" => self.pan_by(0.0, step_y),
            "ArrowDown" => self.pan_by(0.0, -step_y),
            "w" | "W" => self.zoom_at(below[0], below[1], 1.5),
            "s" | "S" => self.zoom_at(below[0], below[1], 1.0 / 1.5),
            "+" | "=" => self.zoom_at(centre[0], centre[1], 1.5),
            "-" | "_" => self.zoom_at(centre[0], centre[1], 1.0 / 1.5),
            "0" => self.fit(),
            _ => return false,
        }
        true
    }

    /// A drag in the plot pans, in the overview brushes.
    fn pointer_down(&mut self, css_x: f64, css_y: f64) {
        let pos = [css_x, css_y];
        self.ui.drag = if self.geom.overview.contains(pos) {
            Drag::Brush { start_x: css_x }
        } else {
            Drag::Pan {
                last: pos,
                start: pos,
                moved: false,
            }
        };
    }

    fn pointer_move(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        match self.ui.drag {
            Drag::Pan { last, start, moved } => {
                let moved = moved || (css_x - start[0]).hypot(css_y - start[1]) > CLICK_SLOP_CSS;
                if moved {
                    self.pan_by(css_x - last[0], css_y - last[1]);
                }
                self.ui.drag = Drag::Pan {
                    last: if moved { [css_x, css_y] } else { last },
                    start,
                    moved,
                };
                None
            }
            Drag::Brush { start_x } => {
                let a = self.ui.overview_step_at(&self.geom, start_x);
                let b = self.ui.overview_step_at(&self.geom, css_x);
                if (css_x - start_x).abs() > 2.0 {
                    self.set_x_window(a, b);
                }
                None
            }
            Drag::None => self.hover(snap, css_x, css_y),
        }
    }

    /// A press-release without travel is a click (pins / unpins); a click in the overview
    /// centres the window there.
    fn pointer_up(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let drag = std::mem::replace(&mut self.ui.drag, Drag::None);
        match drag {
            Drag::Pan {
                moved: false,
                start,
                ..
            } if (css_x - start[0]).hypot(css_y - start[1]) <= CLICK_SLOP_CSS => {
                self.click(snap, css_x, css_y)
            }
            Drag::Brush { start_x } if (css_x - start_x).abs() <= 2.0 => {
                let c = self.ui.overview_step_at(&self.geom, css_x);
                let half = (self.ui.camera.x_range.1 - self.ui.camera.x_range.0) * 0.5;
                self.set_x_window(c - half, c + half);
                None
            }
            _ => self.hover(snap, css_x, css_y),
        }
    }

    /// The pinned tooltip if one is pinned, else the tooltip of the element under the point.
    fn hover(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let hit = self.element_at(css_x, css_y);
        if hit != self.ui.hover {
            self.ui.hover = hit;
            self.frame.needs_redraw = true;
        }
        match self.ui.pinned {
            Some(p) => self.tooltip(snap, p, true),
            None => self.tooltip(snap, hit?, false),
        }
    }

    /// A hover far outside the canvas clears the hover; nothing else to do.
    fn pointer_leave(&mut self) {}

    /// Pins the element under the point, or unpins when one is pinned; remembers the timestep.
    fn click(&mut self, snap: &Snapshot, css_x: f64, css_y: f64) -> Option<Tooltip> {
        self.frame.needs_redraw = true;
        if self.geom.plot.contains([css_x, css_y]) {
            let x = self.ui.camera.data_from_css_px(&self.geom, [css_x, css_y])[0];
            let x = self.xmap().step_of_axis(x);
            let steps = self.data().map_or(0, |d| d.layout.step_count());
            if x.is_finite() && steps > 0 {
                self.ui.last_click_step = Some((x.max(0.0) as u32).min(steps - 1));
            }
        }
        if self.ui.pinned.take().is_some() {
            return self.hover(snap, css_x, css_y);
        }
        let hit = self.element_at(css_x, css_y)?;
        self.pin(snap, hit)
    }

    /// The per-frame overlay in the canvas view's data space ([`TimelineView::draw_overlay`]).
    fn set_theme(&mut self, theme: &crate::theme::Theme) {
        if self.frame.theme != *theme {
            self.frame.theme = *theme;
            self.frame.needs_redraw = true;
        }
    }

    fn overlay(&mut self) -> Batch {
        self.draw_overlay()
    }

    fn batches(&self) -> (u64, &[Batch]) {
        (
            self.frame.generation,
            self.data()
                .map(|d| d.scene.batches.as_slice())
                .unwrap_or(&[]),
        )
    }

    fn canvas_view(&self) -> View {
        self.ui.camera.canvas_view(&self.geom)
    }

    fn needs_redraw(&self) -> bool {
        self.frame.needs_redraw
    }

    fn take_needs_redraw(&mut self) -> bool {
        std::mem::replace(&mut self.frame.needs_redraw, false)
    }

    /// Rebuilds a windowed scene once the camera has been still for [`SETTLE_MS`].
    fn tick(&mut self, now_ms: f64) -> bool {
        match self.ui.settle {
            Settle::Still => {}
            Settle::Moved => self.ui.settle = Settle::MovedSince(now_ms),
            Settle::MovedSince(t) if now_ms - t >= SETTLE_MS => self.settle(),
            Settle::MovedSince(_) => {}
        }
        self.frame.needs_redraw
    }
}
