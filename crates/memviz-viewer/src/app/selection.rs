//! [`Selection`]: which file, device and views are shown, and the registry keys they name.

use super::ViewKind;
use crate::registry::{ViewKey, Views};

/// Which file, device and views are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Selection {
    /// The current file's index.
    pub file: usize,
    /// The current device.
    pub device: i64,
    /// The view kind the canvas shows.
    pub shown: ViewKind,
    /// The timeline kind (Active, Segments, Pools) shown, kept while another view is shown.
    pub timeline: ViewKind,
}

impl Selection {
    /// The key of the `kind` view of the current file and device.
    pub fn key(self, kind: ViewKind) -> ViewKey {
        ViewKey {
            file: self.file,
            device: self.device,
            kind,
        }
    }

    /// The timeline that search, the line table and highlights work on: the Active Memory
    /// Timeline while the flamegraph (built from it) is shown, else the timeline kind shown.
    pub fn panel_kind(self) -> ViewKind {
        if self.shown == ViewKind::Flame {
            ViewKind::Active
        } else {
            self.timeline
        }
    }

    /// The key of the view the canvas draws: the view shown when built, else the timeline
    /// kind's (which stands in while a view is unavailable), else none (nothing is drawn).
    pub fn shown_key(self, views: &Views) -> Option<ViewKey> {
        [self.shown, self.timeline]
            .into_iter()
            .map(|k| self.key(k))
            .find(|k| views.is_built(*k))
    }

    /// The kind of [`Selection::shown_key`] (the timeline kind when nothing is built).
    pub fn shown_kind(self, views: &Views) -> ViewKind {
        self.shown_key(views).map_or(self.timeline, |k| k.kind)
    }
}
