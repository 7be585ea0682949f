//! The memory budget of the views: whether a view of the current file and device fits (see
//! [`crate::memory`]), which built views are released to make room, and why a view is missing.

use super::{App, ViewKind};
use crate::memory::{unavailable_message, view_bytes_per_event};

impl App {
    /// Why the view shown is missing (it could not fit in memory), if it is.
    #[must_use]
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable
            .as_ref()
            .filter(|(k, _)| *k == self.view())
            .map(|(_, m)| m.as_str())
    }

    /// True when a view of `kind` for the current file and device fits in memory. When it does
    /// not, the views of other files, devices and kinds are released first (they are rebuilt
    /// when shown again); when it still does not, [`App::unavailable`] says why.
    pub(super) fn fits(&mut self, kind: ViewKind) -> bool {
        let Some(mem) = self.memory else {
            return true;
        };
        let events = self
            .snapshot()
            .and_then(|s| s.trace(self.device))
            .map_or(0, |t| t.len());
        let mut need = events as u64 * view_bytes_per_event(kind);
        let active_built = self
            .files
            .get(self.current)
            .is_some_and(|f| f.devices.contains_key(&(self.device, ViewKind::Active)));
        if kind == ViewKind::Flame && !active_built {
            need += events as u64 * view_bytes_per_event(ViewKind::Active);
        }
        // The Private Pools view of a device without a private pool shares the Active Memory
        // Timeline's timeline and layout (`build_device`): it adds its colours and scene only.
        let shares = |other: ViewKind| {
            self.files
                .get(self.current)
                .is_some_and(|f| f.devices.contains_key(&(self.device, other)))
                && self
                    .snapshot()
                    .is_some_and(|s| !memviz_analysis::timeline::has_private_pool(s, self.device))
        };
        if (kind == ViewKind::Pools && shares(ViewKind::Active))
            || (kind == ViewKind::Active && shares(ViewKind::Pools))
        {
            need = events as u64;
        }
        if need > mem.free() {
            self.release_views_but(&[kind]);
        }
        let free = mem.free();
        if need <= free {
            if self.unavailable.as_ref().is_some_and(|(k, _)| *k == kind) {
                self.unavailable = None;
            }
            return true;
        }
        self.unavailable = Some((kind, unavailable_message(kind, need, free, events)));
        false
    }

    /// Drops every built view except what showing the kinds in `keep` for the current file and
    /// device needs, and the current Active Memory Timeline: search, the tables, tooltips and
    /// the flamegraph read it, and rebuilding it later in a heap already grown to its 4 GiB
    /// ceiling can fail where the estimate saw room (a 4 GB file: State History released it,
    /// the flamegraph's rebuild then ran out of memory). A view that does not fit beside it
    /// says so instead.
    pub(super) fn release_views_but(&mut self, keep: &[ViewKind]) {
        let (cur, dev) = (self.current, self.device);
        for (i, f) in self.files.iter_mut().enumerate() {
            f.devices.retain(|&(d, k), _| {
                i == cur && d == dev && (keep.contains(&k) || k == ViewKind::Active)
            });
        }
        // A view of another (file, device), or not one to show: released.
        let stale = |k: Option<(usize, i64)>, kind: ViewKind| {
            !keep.contains(&kind) || k != Some((cur, dev))
        };
        if stale(self.state_view.as_ref().map(|v| v.0), ViewKind::State) {
            self.state_view = None;
        }
        if stale(self.flame_view.as_ref().map(|v| v.0), ViewKind::Flame) {
            self.flame_view = None;
        }
    }
}
