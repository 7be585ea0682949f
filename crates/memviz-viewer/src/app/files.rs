//! The loaded files: each file's snapshot, its built device data and its device list, and
//! which file is current.

use std::collections::HashMap;

use memviz_snapshot::{DeviceTrace, Snapshot};

use super::device::DeviceData;
use super::{ActiveView, App, ViewKind};
use crate::answer::DeviceRow;

/// One loaded snapshot file.
pub struct LoadedFile {
    pub name: String,
    pub snap: Snapshot,
    pub(super) devices: HashMap<(i64, ViewKind), DeviceData>,
    /// The device list (counts from one pass over each trace when the file is added, not on
    /// every panel answer: a 2 GB trace's scan for `oom` events is tens of ms), `current` unset.
    pub(super) device_rows: Vec<DeviceRow>,
}

/// The rows of `snap`'s device list.
fn device_rows(snap: &Snapshot) -> Vec<DeviceRow> {
    snap.devices()
        .into_iter()
        .map(|dev| DeviceRow {
            device: dev,
            events: snap.trace(dev).map_or(0, |t| t.len()),
            ooms: snap.oom_count(dev),
            segments: snap.segments.iter().filter(|s| s.device == dev).count(),
            current: false,
        })
        .collect()
}

impl App {
    /// Adds a file and makes it current (on its first device with an `oom` event, else its
    /// default device). A file with segments but no trace at all (taken without
    /// `_record_memory_history()`, or the segment list of `torch.cuda.memory_snapshot()`)
    /// opens on the Allocator State History, which shows its segments and blocks at the end,
    /// when a timeline was shown: a timeline has only one flat step to draw for it.
    pub fn add_file(&mut self, name: &str, snap: Snapshot) {
        let no_trace = !snap.segments.is_empty() && snap.traces.iter().all(DeviceTrace::is_empty);
        self.files.push(LoadedFile {
            name: name.to_string(),
            device_rows: device_rows(&snap),
            snap,
            devices: HashMap::new(),
        });
        self.select_file(self.files.len() - 1);
        if no_trace && self.active == ActiveView::Timeline {
            self.set_view(ViewKind::State);
        }
    }

    /// Makes file `index` current; false when there is no such file.
    pub fn select_file(&mut self, index: usize) -> bool {
        let Some(f) = self.files.get(index) else {
            return false;
        };
        // The first device whose trace has an `oom` event (the failure is what the user came
        // for), else the snapshot's default device.
        let device = f
            .device_rows
            .iter()
            .find(|r| r.ooms > 0)
            .map_or_else(|| f.snap.default_device(), |r| r.device);
        self.current = index;
        self.set_device(device);
        true
    }

    /// The snapshot of file `index`.
    #[must_use]
    pub fn file_snapshot(&self, index: usize) -> Option<&Snapshot> {
        self.files.get(index).map(|f| &f.snap)
    }

    /// The index of the current file.
    #[must_use]
    pub fn current_file(&self) -> usize {
        self.current
    }

    /// The loaded files' names.
    #[must_use]
    pub fn file_names(&self) -> Vec<&str> {
        self.files.iter().map(|f| f.name.as_str()).collect()
    }

    /// The current snapshot.
    #[must_use]
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.files.get(self.current).map(|f| &f.snap)
    }
}
