//! Frames: the settle clock of windowed scenes, the redraw flag, and what the GPU side draws
//! ([`App::frame`]: plot batches, canvas view, overlay, clear colour).

use memviz_render::View;

use super::timeline::{Gate, Settle};
use super::{ActiveView, App, DrawableView as _, ViewKind};
use crate::scene::Batch;
use crate::view::{FrameOutput, FrameSource};

impl App {
    /// Call once per animation frame with a monotonic time: rebuilds a windowed scene once the
    /// camera has been still for [`SETTLE_MS`](super::SETTLE_MS). Returns true when a redraw is
    /// needed.
    pub fn tick(&mut self, now_ms: f64) -> bool {
        if self.active != ActiveView::Timeline {
            return self.needs_redraw();
        }
        self.sync_axis();
        let redraw = self.frame.needs_redraw;
        self.timeline_view(Gate::closed())
            .map_or(redraw, |(_, mut v)| v.tick(now_ms))
    }

    /// Puts the timeline's camera and scene on the chosen x axis
    /// ([`TimelineView::sync_axis`](super::timeline::TimelineView::sync_axis)).
    pub(super) fn sync_axis(&mut self) {
        if let Some((_, mut v)) = self.timeline_view(Gate::closed()) {
            v.sync_axis();
        }
    }

    /// Rebuilds a windowed scene for the current camera now (no-op for static scenes).
    pub fn settle(&mut self) {
        self.timeline.settle = Settle::Still;
        if let Some((_, mut v)) = self.timeline_view(Gate::closed()) {
            v.settle();
        }
    }

    /// True while a windowed scene waits for the camera to settle (keep calling [`App::tick`]).
    #[must_use]
    pub fn is_settling(&self) -> bool {
        self.active == ActiveView::Timeline && self.timeline.settle != Settle::Still
    }

    /// True when the next frame would differ from the last one drawn.
    #[must_use]
    pub fn needs_redraw(&self) -> bool {
        self.frame.needs_redraw
            || (self.active == ActiveView::Flame
                && self
                    .flame_view
                    .as_ref()
                    .is_some_and(|(_, v)| v.needs_redraw()))
            || (self.active == ActiveView::State
                && self
                    .state_view
                    .as_ref()
                    .is_some_and(|(_, v)| v.needs_redraw()))
    }

    /// Returns and clears the redraw flag.
    pub fn take_needs_redraw(&mut self) -> bool {
        let fv = self
            .flame_view
            .as_mut()
            .is_some_and(|(_, v)| v.take_needs_redraw());
        let sv = self
            .state_view
            .as_mut()
            .is_some_and(|(_, v)| v.take_needs_redraw());
        std::mem::replace(&mut self.frame.needs_redraw, false) || fv || sv
    }

    /// The plot batches (data space) of the view shown and their generation within it (see
    /// [`FrameOutput::generation`]).
    #[must_use]
    pub fn plot_batches(&self) -> (u64, &[Batch]) {
        match self.shown_kind() {
            ViewKind::Flame => self.flame_view.as_ref().map(|(_, v)| v.batches()),
            ViewKind::State => self.state_view.as_ref().map(|(_, v)| v.batches()),
            _ => None,
        }
        .unwrap_or_else(|| {
            let batches = self.data().map(|d| d.scene.batches.as_slice());
            (self.frame.generation, batches.unwrap_or(&[]))
        })
    }

    /// The frame to draw now, from the view shown: its plot batches with what they belong to,
    /// its overlay, the canvas view and the theme's clear colour. Composing it clears the
    /// redraw flag (the caller draws it).
    pub fn frame(&mut self) -> FrameOutput<'_> {
        // The overlay first: reaching the view shown hands it the theme, which may rebuild
        // its batches.
        let overlay = self.overlay();
        self.take_needs_redraw();
        let source = FrameSource {
            file: self.current,
            device: self.device,
            kind: self.shown_kind(),
        };
        let view = self.canvas_view();
        let clear = self.frame.theme.clear();
        let (generation, batches) = self.plot_batches();
        FrameOutput {
            source,
            generation,
            batches,
            overlay,
            view,
            clear,
        }
    }

    /// The last scene build time, ms.
    #[must_use]
    pub fn scene_build_ms(&self) -> f64 {
        self.data().map_or(0.0, |d| d.scene.build_ms)
    }

    /// The view of the whole canvas for this frame (see
    /// [`Camera::canvas_view`](crate::camera::Camera::canvas_view)).
    #[must_use]
    pub fn canvas_view(&self) -> View {
        match self.shown_kind() {
            ViewKind::Flame => self.flame_view.as_ref().map(|(_, v)| v.canvas_view()),
            ViewKind::State => self.state_view.as_ref().map(|(_, v)| v.canvas_view()),
            _ => None,
        }
        .unwrap_or_else(|| self.timeline.camera.canvas_view(&self.geom))
    }

    /// The per-frame overlay of the view shown, in the canvas view's data space. Drawn after
    /// the plot.
    pub fn overlay(&mut self) -> Batch {
        self.with_view(Gate::closed(), |_, v| v.overlay())
            .unwrap_or_else(|| Batch::unbounded([0.0, 0.0], Vec::new()))
    }
}
