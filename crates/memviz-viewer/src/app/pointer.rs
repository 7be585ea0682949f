//! Pointer input: drags, hover, clicks and the pinned element.

use memviz_snapshot::Snapshot;

use super::timeline::{self, Gate};
use super::{ActiveView, App, DrawableView};
use crate::answer::Tooltip;
use crate::xaxis::XMap;

impl App {
    /// Pointer pressed: a drag pans (in the timeline's overview strip, brushes).
    pub fn pointer_down(&mut self, css_x: f64, css_y: f64) {
        self.with_view(Gate::closed(), |_, v| v.pointer_down(css_x, css_y));
    }

    /// Pointer moved: continues a drag, else hovers. Returns the tooltip to show, if any.
    pub fn pointer_move(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let f = |snap: &Snapshot, v: &mut dyn DrawableView| v.pointer_move(snap, css_x, css_y);
        if self.timeline.dragging() {
            // A drag looks nothing up.
            let tip = self.with_view(Gate::closed(), f).flatten();
            return self.finish_tip(tip);
        }
        let tip = self.gated(css_x, css_y, false, f);
        self.finish_tip(tip)
    }

    /// Pointer released: a press-release without travel is a click (pins / unpins), a click in
    /// the overview centres the window there. Returns the tooltip to show.
    pub fn pointer_up(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let tip = self.gated(css_x, css_y, true, |snap, v| {
            v.pointer_up(snap, css_x, css_y)
        });
        self.finish_tip(tip)
    }

    /// Hover at a canvas point: the pinned tooltip if one is pinned, else the tooltip
    /// ([`Tooltip::Element`]) of the element under the point. A point
    /// far outside the canvas (x < -1e8) is the pointer leaving it.
    pub fn hover(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let tip = self.gated(css_x, css_y, false, |snap, v| {
            if css_x < -1.0e8 {
                v.pointer_leave();
            }
            v.hover(snap, css_x, css_y)
        });
        self.finish_tip(tip)
    }

    /// Click: pins the element under the point (or unpins when one is pinned).
    pub fn click(&mut self, css_x: f64, css_y: f64) -> Option<Tooltip> {
        let tip = self.gated(css_x, css_y, true, |snap, v| v.click(snap, css_x, css_y));
        self.finish_tip(tip)
    }

    /// The element under a canvas point, if any.
    #[must_use]
    pub fn element_at(&self, css_x: f64, css_y: f64) -> Option<u32> {
        if !self.geom.plot.contains([css_x, css_y]) || !self.hit_index_fits_now() {
            return None;
        }
        let [x, y] = self
            .timeline
            .camera
            .data_from_css_px(&self.geom, [css_x, css_y]);
        let (snap, device, data) = (self.snapshot()?, self.device, self.data());
        let step =
            timeline::axis_map(self.timeline.camera_time, snap, device, data).step_of_axis(x);
        self.data()?.layout.hit(step, y)
    }

    /// The pinned element.
    #[must_use]
    pub fn pinned(&self) -> Option<u32> {
        self.timeline.pinned
    }

    /// Pins the tooltip of `element` of the timeline shown (a deep link's selection); a
    /// negative or unknown element unpins. Returns the pinned tooltip, if any.
    pub fn pin(&mut self, element: i64) -> Option<Tooltip> {
        self.frame.needs_redraw = true;
        let n = self.data().map_or(0, |d| d.layout.element_count());
        match u32::try_from(element).ok().filter(|&e| (e as usize) < n) {
            Some(e) if self.active == ActiveView::Timeline => {
                let tips = self.ensure_tooltips();
                let tip = {
                    let (snap, mut v) = self.timeline_view(Gate { hit: true, tips })?;
                    v.pin(snap, e)
                };
                self.finish_tip(tip)
            }
            _ => {
                self.timeline.pinned = None;
                None
            }
        }
    }
}
