//! The view shown: routing a call to the flamegraph, the State History or the timeline through
//! [`DrawableView`], and the gate a pointer event passes before it reaches the timeline.

use memviz_snapshot::Snapshot;

use super::timeline::{Gate, TimelineView};
use super::{ActiveView, App, DrawableView, LoadedFile, ViewKind};
use crate::answer::{Tooltip, Unavailable};

impl App {
    /// True when the flamegraph is shown and built for the current file and device.
    fn flame_shown(&self) -> bool {
        self.active == ActiveView::Flame
            && self
                .flame_view
                .as_ref()
                .is_some_and(|(k, _)| *k == (self.current, self.device))
    }

    /// True when the State History is shown and built for the current file and device.
    fn state_shown(&self) -> bool {
        self.active == ActiveView::State
            && self
                .state_view
                .as_ref()
                .is_some_and(|(k, _)| *k == (self.current, self.device))
    }

    /// The kind of the view [`App::with_view`] reaches: the flamegraph or the State History
    /// when shown and built, else the timeline kind (which stands in while a view is
    /// unavailable).
    pub(super) fn shown_kind(&self) -> ViewKind {
        if self.flame_shown() {
            ViewKind::Flame
        } else if self.state_shown() {
            ViewKind::State
        } else {
            self.timeline.kind
        }
    }

    /// The timeline of the current (file, device, kind) as a view, for one call.
    pub(super) fn timeline_view(&mut self, gate: Gate) -> Option<(&Snapshot, TimelineView<'_>)> {
        let key = (self.device, self.timeline.kind);
        let LoadedFile { snap, devices, .. } = self.files.get_mut(self.current)?;
        let view = TimelineView {
            ui: &mut self.timeline,
            frame: &mut self.frame,
            geom: &self.geom,
            snap,
            data: devices.get_mut(&key),
            file: self.current,
            device: self.device,
            gate,
        };
        Some((snap, view))
    }

    /// Runs `f` on the view shown: the flamegraph or the State History when shown and built,
    /// else the timeline (which also stands in while a view is unavailable).
    pub(super) fn with_view<R>(
        &mut self,
        gate: Gate,
        f: impl FnOnce(&Snapshot, &mut dyn DrawableView) -> R,
    ) -> Option<R> {
        let theme = self.frame.theme;
        if self.flame_shown() {
            let (k, v) = self.flame_view.as_mut()?;
            v.set_theme(&theme);
            return Some(f(&self.files.get(k.0)?.snap, v));
        }
        if self.state_shown() {
            let (k, v) = self.state_view.as_mut()?;
            v.set_theme(&theme);
            return Some(f(&self.files.get(k.0)?.snap, v));
        }
        let (snap, mut view) = self.timeline_view(gate)?;
        Some(f(snap, &mut view))
    }

    /// What a pointer event at a canvas point needs checked before it reaches the timeline:
    /// the hit index when the point is in the plot (always for a click, else when nothing is
    /// pinned) and the tooltips when one will be shown. `Err`: the sentence to answer with.
    fn gate(&mut self, css_x: f64, css_y: f64, click: bool) -> Result<Gate, Unavailable> {
        if self.flame_shown() || self.state_shown() {
            return Ok(Gate::closed());
        }
        let in_plot = self.geom.plot.contains([css_x, css_y]);
        if in_plot && (click || self.timeline.pinned.is_none()) {
            self.ensure_hit_index()?;
        }
        let hit = self.hit_index_fits_now();
        let target = self
            .timeline
            .pinned
            .or_else(|| hit.then(|| self.element_at(css_x, css_y)).flatten());
        let tips = match target {
            Some(_) => self.ensure_tooltips(),
            None => Ok(()),
        };
        Ok(Gate { hit, tips })
    }

    /// Runs `f` (which answers a tooltip) on the view shown once [`App::gate`] passed; its
    /// sentence when it did not.
    pub(super) fn gated(
        &mut self,
        css_x: f64,
        css_y: f64,
        click: bool,
        f: impl FnOnce(&Snapshot, &mut dyn DrawableView) -> Option<Tooltip>,
    ) -> Option<Tooltip> {
        match self.gate(css_x, css_y, click) {
            Ok(gate) => self.with_view(gate, f).flatten(),
            Err(why) => Some(Tooltip::Unavailable(why)),
        }
    }
}
