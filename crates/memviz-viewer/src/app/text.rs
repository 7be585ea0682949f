//! What the app answers the shell around the plot: the axis ticks, the legend, the device list,
//! the settings, its state and the panel that holds them.

use memviz_analysis::format::size_short;

use super::{overlay, timeline};
use super::{ActiveView, App, AxisTicks};
use crate::answer::{DeviceRow, LegendRow, Panel, SettingRow, ViewerState};

impl App {
    // ----- text for the shell ----------------------------------------------------------------

    /// Chooses the x axis: wall-clock time, linear in µs (shown where the trace has usable
    /// times, `crate::step_time`; the choice is kept across files and devices), or event order
    /// (the default). The window shown is carried over.
    pub fn set_time_axis(&mut self, on: bool) {
        self.timeline.time_axis = on;
        self.sync_axis();
        self.frame.needs_redraw = true;
    }

    /// Ticks of both axes for the current camera, inside the plot, increasing (none outside
    /// the timelines).
    #[must_use]
    pub fn axis_ticks(&self) -> AxisTicks {
        if self.active != ActiveView::Timeline {
            return AxisTicks::none();
        }
        overlay::axis_ticks(
            &self.timeline,
            &self.geom,
            self.data(),
            self.snapshot(),
            self.device,
        )
    }

    /// The `n` largest allocation sites at the peak, with their sizes as text.
    #[must_use]
    pub fn legend(&self, n: usize) -> Vec<LegendRow> {
        self.legend_entries(n)
            .into_iter()
            .map(|entry| LegendRow {
                size: size_short(entry.bytes),
                entry,
            })
            .collect()
    }

    /// The file's devices.
    #[must_use]
    pub fn devices(&self) -> Vec<DeviceRow> {
        let Some(f) = self.files.get(self.current) else {
            return Vec::new();
        };
        f.device_rows
            .iter()
            .map(|r| DeviceRow {
                current: r.device == self.device,
                ..r.clone()
            })
            .collect()
    }

    /// `allocator_settings` as readable rows (empty when the file has none).
    #[must_use]
    pub fn allocator_settings(&self) -> Vec<SettingRow> {
        self.snapshot()
            .map(crate::settings::rows)
            .unwrap_or_default()
    }

    /// The viewer's state (the timeline's camera and counts, what is shown and selected).
    #[must_use]
    pub fn state(&self) -> ViewerState {
        let flame = (self.active == ActiveView::Flame)
            .then(|| self.flame_view.as_ref().map(|(_, v)| v.state()))
            .flatten();
        let state = (self.active == ActiveView::State)
            .then(|| self.state_view.as_ref().map(|(_, v)| v.view_state()))
            .flatten();
        ViewerState {
            timeline: timeline::state_value(&self.timeline, self.data()),
            file: self.current,
            files: self.file_names().into_iter().map(str::to_owned).collect(),
            device: self.device,
            x_axis: self.axis_ticks().x_unit.to_owned(),
            view: self.view(),
            highlighted: self.highlighted(),
            flame_view: flame,
            state_view: state,
            geometry: self.geom,
        }
    }

    /// Everything the shell shows around the plot (`notice` is left for the caller, which
    /// knows how the file was read).
    #[must_use]
    pub fn panel(&self, legend_entries: usize) -> Panel {
        let state = self.state();
        Panel {
            files: state.files.clone(),
            file: Some(state.file),
            devices: self.devices(),
            legend: self.legend(legend_entries),
            ticks: Some(self.axis_ticks()),
            peak: size_short(state.timeline.peak_bytes),
            view: Some(state.view),
            state: Some(state),
            settings: self.allocator_settings(),
            notice: String::new(),
        }
    }
}
