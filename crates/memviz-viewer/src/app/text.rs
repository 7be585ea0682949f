//! What the app answers the shell as text: the axis ticks, the legend, the device list and the
//! state JSON.

use serde_json::json;

use super::{overlay, timeline};
use super::{ActiveView, App, AxisTicks};
use crate::view::DrawableView;

impl App {
    // ----- text for the shell ----------------------------------------------------------------

    /// Selects the x axis: wall-clock time (only when the trace has `time_us`) or timesteps.
    pub fn set_time_axis(&mut self, on: bool) {
        self.timeline.time_axis = on && self.data().is_some_and(|d| d.step_time_us.is_some());
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

    /// The `n` largest allocation sites at the peak, JSON (`LegendEntry` list).
    #[must_use]
    pub fn legend(&self, n: usize) -> String {
        serde_json::to_string(&self.legend_entries(n)).unwrap_or_else(|_| "[]".into())
    }

    /// The file's devices, JSON: `[{device, events, segments, current}]`.
    #[must_use]
    pub fn devices(&self) -> String {
        let Some(snap) = self.snapshot() else {
            return "[]".into();
        };
        let list: Vec<serde_json::Value> = snap
            .devices()
            .into_iter()
            .map(|dev| {
                json!({
                    "device": dev,
                    "events": snap.trace(dev).map_or(0, |t| t.len()),
                    "segments": snap.segments.iter().filter(|s| s.device == dev).count(),
                    "current": dev == self.device,
                })
            })
            .collect();
        json!(list).to_string()
    }

    /// Backend-agnostic state, JSON (for tests and the shell's status line).
    #[must_use]
    pub fn state_json(&self) -> String {
        let mut v = timeline::state_value(&self.timeline, self.data());
        if let Some(obj) = v.as_object_mut() {
            let flame = (self.active == ActiveView::Flame)
                .then(|| self.flame_view.as_ref().map(|(_, v)| v.state_json()))
                .flatten();
            let state = (self.active == ActiveView::State)
                .then(|| self.state_view.as_ref().map(|(_, v)| v.state_json()))
                .flatten();
            for (k, val) in [
                ("file", json!(self.current)),
                ("files", json!(self.file_names())),
                ("device", json!(self.device)),
                ("x_axis", json!(self.axis_ticks().x_unit)),
                ("view", json!(self.view().name())),
                ("highlighted", json!(self.highlighted())),
                ("flame_view", json!(flame)),
                ("state_view", json!(state)),
                ("geometry", json!(self.geom)),
            ] {
                obj.insert(k.into(), val);
            }
        }
        v.to_string()
    }
}
