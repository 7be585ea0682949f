//! Hover and pin: the element under the pointer and its tooltip.

use memviz_present::tooltip::{tooltip, TooltipContext};
use memviz_snapshot::Snapshot;

use super::TimelineView;
use crate::answer::{ElementTip, Tooltip};
use crate::xaxis::XMap;

impl TimelineView {
    /// The element under a canvas point, when the gate let the hit index answer.
    pub fn element_at(&self, css_x: f64, css_y: f64) -> Option<u32> {
        self.gate.hit.then(|| self.hit_at(css_x, css_y))?
    }

    /// The element under a canvas point of the plot (the hit index is built on first use: the
    /// caller checks it may be).
    pub(in crate::app) fn hit_at(&self, css_x: f64, css_y: f64) -> Option<u32> {
        if !self.geom.plot.contains([css_x, css_y]) {
            return None;
        }
        let [x, y] = self.ui.camera.data_from_css_px(&self.geom, [css_x, css_y]);
        let step = self.xmap().step_of_axis(x);
        self.data()?.layout.hit(step, y)
    }

    /// The tooltip of `element` ([`Tooltip::Element`]).
    pub fn tooltip(&mut self, snap: &Snapshot, element: u32, pinned: bool) -> Option<Tooltip> {
        if let Err(why) = &self.gate.tips {
            return Some(Tooltip::Unavailable(why.clone()));
        }
        let device = self.device;
        let d = self.data.as_mut()?;
        let ctx = d
            .tips
            .get_or_insert_with(|| TooltipContext::new(snap, device));
        let info = tooltip(snap, ctx, &d.timeline, &d.layout, element)?;
        let text = info.text();
        let explanation_lines = crate::answer::explanation_lines(&info.frames);
        Some(Tooltip::Element(ElementTip {
            info,
            text,
            pinned,
            explanation_lines,
            // The app adds the frame kinds and the site (`App::finish_tip`: it has the
            // file's site cache).
            kinds: Vec::new(),
            site: None,
        }))
    }

    /// Pins `element` (a deep link's selection); its tooltip.
    pub fn pin(&mut self, snap: &Snapshot, element: u32) -> Option<Tooltip> {
        self.ui.pinned = Some(element);
        self.ui.hover = Some(element);
        self.tooltip(snap, element, true)
    }
}
