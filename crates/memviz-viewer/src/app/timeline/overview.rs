//! The overview strip's columns: the live bytes decimated to the strip's width, cached per
//! (file, device, kind, width, axis).

use super::TimelineView;
use crate::app::device::{decimate_max, DeviceData};
use crate::xaxis::{AxisMap, XMap};

impl TimelineView {
    pub(in crate::app) fn overview_columns(&mut self) -> Vec<u64> {
        let cols = (self.geom.overview.width().round().max(1.0)) as u32;
        let key = (
            self.file,
            self.device,
            self.ui.kind,
            cols,
            self.ui.camera_time,
        );
        if self.ui.overview_key != key {
            self.ui.overview_key = key;
            let map = self.xmap();
            let cols = match self.data() {
                Some(d) if map.is_time() => {
                    decimate_max_on(d, &map, self.ui.camera.full_x, cols as usize)
                }
                Some(d) => decimate_max(d.layout.live_at_step(), cols as usize),
                None => Vec::new(),
            };
            drop(map);
            self.ui.overview_cols = cols;
        }
        self.ui.overview_cols.clone()
    }
}

/// Max of the live bytes over `cols` equal columns of the axis range `full` (the timesteps
/// whose span meets each column).
fn decimate_max_on(d: &DeviceData, map: &AxisMap<'_>, full: (f64, f64), cols: usize) -> Vec<u64> {
    let values = d.layout.live_at_step();
    let n = values.len();
    if n == 0 || cols == 0 {
        return Vec::new();
    }
    let w = (full.1 - full.0) / cols as f64;
    let step_at = |c: usize| map.step_of_axis(full.0 + c as f64 * w);
    (0..cols)
        .map(|c| {
            let a = (step_at(c).floor().max(0.0) as usize).min(n - 1);
            let b = (step_at(c + 1).ceil().max(0.0) as usize).clamp(a + 1, n);
            values.range(a, b).max().unwrap_or(0)
        })
        .collect()
}
