//! Devices and view switching: which device and view are shown, and the built data of the
//! timeline kind (layout, timeline, zoom cap).

use memviz_analysis::layout::Layout;
use memviz_analysis::timeline::Timeline;
use memviz_snapshot::Snapshot;

use super::device::{build_device, DeviceData};
use super::timeline::Settle;
use super::{ActiveView, App, ViewKind};
use crate::camera::Camera;

impl App {
    /// The current device.
    #[must_use]
    pub fn device(&self) -> i64 {
        self.device
    }

    /// Switches device (building its timeline and layout once) and fits the camera.
    pub fn set_device(&mut self, device: i64) {
        self.device = device;
        self.timeline.hover = None;
        self.timeline.pinned = None;
        let kind = self.timeline.kind;
        let key = (device, kind);
        let built = self
            .files
            .get(self.current)
            .is_some_and(|f| f.devices.contains_key(&key));
        if !built && self.fits(kind) {
            if let Some(f) = self.files.get_mut(self.current) {
                let data = build_device(&f.snap, device, kind, &f.devices);
                f.devices.insert(key, data);
            }
        }
        let (steps, peak) = self
            .data()
            .map(|d| (d.layout.step_count(), d.layout.peak_bytes))
            .unwrap_or((0, 0));
        self.timeline.camera = Camera::new(steps, peak);
        self.timeline.camera_time = false;
        self.update_zoom_cap();
        self.frame.generation += 1;
        self.frame.needs_redraw = true;
        self.timeline.settle = Settle::Still;
        self.sync_axis();
        match self.active {
            ActiveView::State => self.ensure_state_view(),
            ActiveView::Flame => self.ensure_flame_view(),
            ActiveView::Timeline => {}
        }
    }

    /// Shows `kind`: a timeline kind (its timeline and layout built for the current device on
    /// first use, camera fitted), the Allocator State History or the flamegraph.
    pub fn set_view(&mut self, kind: ViewKind) {
        match kind {
            ViewKind::Flame => {
                self.active = ActiveView::Flame;
                self.timeline.hover = None;
                self.ensure_flame_view();
                self.sync_flame_matches();
            }
            ViewKind::State => {
                self.active = ActiveView::State;
                self.timeline.hover = None;
                self.ensure_state_view();
            }
            ViewKind::Active | ViewKind::Segments | ViewKind::Pools => {
                self.active = ActiveView::Timeline;
                if kind != self.timeline.kind {
                    self.timeline.kind = kind;
                    self.set_device(self.device);
                }
            }
        }
        self.frame.generation += 1;
        self.frame.needs_redraw = true;
    }

    /// What the canvas shows.
    #[must_use]
    pub fn view(&self) -> ViewKind {
        match self.active {
            ActiveView::Flame => ViewKind::Flame,
            ActiveView::State => ViewKind::State,
            ActiveView::Timeline => self.timeline.kind,
        }
    }

    /// Which view the canvas shows.
    #[must_use]
    pub fn active_view(&self) -> ActiveView {
        self.active
    }

    /// The timestep of the last click on the plot (pinned or not), when there was one.
    #[must_use]
    pub fn last_click_step(&self) -> Option<u32> {
        self.timeline.last_click_step
    }

    /// The highlighted element count, when a highlight is set.
    #[must_use]
    pub fn highlighted(&self) -> Option<usize> {
        self.parts()?.1.highlight.as_ref().map(|(e, _)| e.len())
    }

    /// The built data of the timeline kind of the timeline view.
    pub(super) fn data(&self) -> Option<&DeviceData> {
        self.files
            .get(self.current)?
            .devices
            .get(&(self.device, self.timeline.kind))
    }

    /// The snapshot and the data of [`App::timeline_kind`] (what search and the tables use).
    pub(super) fn parts(&self) -> Option<(&Snapshot, &DeviceData)> {
        let f = self.files.get(self.current)?;
        Some((
            &f.snap,
            f.devices.get(&(self.device, self.timeline_kind()))?,
        ))
    }

    /// The layout of the current device.
    #[must_use]
    pub fn layout(&self) -> Option<&Layout> {
        self.data().map(|d| &*d.layout)
    }

    /// The timeline of the current device.
    #[must_use]
    pub fn timeline(&self) -> Option<&Timeline> {
        self.data().map(|d| &*d.timeline)
    }

    /// True when the plot is a windowed scene (rebuilt when the camera settles).
    #[must_use]
    pub fn is_windowed(&self) -> bool {
        self.data().is_some_and(|d| d.windowed)
    }

    fn update_zoom_cap(&mut self) {
        let data = self
            .files
            .get(self.current)
            .and_then(|f| f.devices.get(&(self.device, self.timeline.kind)));
        self.timeline.update_zoom_cap(&self.geom, data);
    }
}
