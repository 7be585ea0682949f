//! [`Current`]: what a panel or a view's own request works on, borrowed from the app for one
//! call: the loaded files (the current one's snapshot and site cache), the registry of views
//! (the built timelines, the State History and the flamegraph, and room for what a panel
//! builds), the current device and which views are shown. The panels, the State History's and
//! the flamegraph's requests are its methods (`panels/`, `state.rs`, `flame.rs`, `sites.rs`);
//! the app hands each request to it and keeps only the canvas (geometry, theme, input).

use memviz_analysis::site::UserCode;
use memviz_snapshot::Snapshot;

use super::device::DeviceData;
use super::files::LoadedFile;
use super::selection::Selection;
use super::timeline::TimelineView;
use super::ViewKind;
use crate::camera::PlotGeometry;
use crate::registry::{Scope, Views};
use crate::theme::Theme;

/// The app's files, registry and selection, borrowed for one request.
pub(super) struct Current<'a> {
    pub files: &'a mut Vec<LoadedFile>,
    pub views: &'a mut Views,
    /// Which file, device and views are shown.
    pub sel: &'a mut Selection,
    pub user_code: &'a mut UserCode,
    pub geom: &'a PlotGeometry,
    pub theme: Theme,
    /// Set when the canvas must be drawn again.
    pub needs_redraw: &'a mut bool,
}

impl Current<'_> {
    /// Shows `kind`, a view that is not a timeline (built on first use): the flamegraph a
    /// comparison draws in, the State History.
    pub fn show(&mut self, kind: ViewKind) {
        if let Some(v) = self.timeline_mut(self.sel.timeline) {
            v.ui.hover = None;
        }
        self.sel.shown = kind;
        self.ensure(kind);
        *self.needs_redraw = true;
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.files.get(self.sel.file).map(|f| &*f.snap)
    }

    /// The timeline of `kind` of the current file and device, when built.
    pub fn timeline_of(&self, kind: ViewKind) -> Option<&TimelineView> {
        self.views.get_as::<TimelineView>(self.sel.key(kind))
    }

    /// The timeline of `kind` of the current file and device, when built (marked used).
    pub fn timeline_mut(&mut self, kind: ViewKind) -> Option<&mut TimelineView> {
        self.views.get_as_mut::<TimelineView>(self.sel.key(kind))
    }

    /// The snapshot and the built data of [`Current::panel_kind`]'s timeline.
    pub fn parts(&self) -> Option<(&Snapshot, &DeviceData)> {
        let v = self.timeline_of(self.sel.panel_kind())?;
        Some((&*v.snap, v.data()?))
    }

    /// The timestep of the last click on the timeline shown, when there was one.
    pub fn last_click_step(&self) -> Option<u32> {
        self.timeline_of(self.sel.timeline)?.ui.last_click_step
    }

    /// Builds the `kind` view of the current file and device when it is not built and fits
    /// (least recently used views released to make room; the current Active Memory Timeline
    /// is kept: search, the tables, tooltips and the flamegraph read it, and rebuilding it in a
    /// heap already grown to its 4 GiB ceiling can fail where the estimate saw room). True
    /// when it is built; else the registry says why.
    pub fn ensure(&mut self, kind: ViewKind) -> bool {
        let Some(f) = self.files.get(self.sel.file) else {
            return false;
        };
        let active = self.sel.key(ViewKind::Active);
        let scope = Scope {
            key: self.sel.key(kind),
            snap: &f.snap,
            geom: self.geom,
            theme: self.theme,
            user_code: &*self.user_code,
        };
        self.views.ensure(&scope, &|k| *k == active)
    }
}
