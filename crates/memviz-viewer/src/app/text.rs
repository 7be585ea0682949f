//! What the app answers the shell around the plot: the axis ticks, the legend, the device list,
//! the settings, its state and the panel that holds them.

use memviz_analysis::color;
use memviz_analysis::format::size_short;
use memviz_analysis::site::{unique_labels, SiteCache, SiteKind};
use memviz_snapshot::{Layout as SnapshotLayout, Snapshot, StackId};

use super::{overlay, timeline};
use super::{ActiveView, App, AxisTicks, ViewKind};
use crate::answer::{DeviceRow, LegendRow, Panel, SettingRow, SiteText, ViewerState};

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

    /// The `n` largest allocation sites at the peak, with their sizes as text and each
    /// entry's site. With a user code other than the default (which the analysis names the
    /// legend with), the labels are the app's sites', made unique among the entries.
    #[must_use]
    pub fn legend(&self, n: usize) -> Vec<LegendRow> {
        let mut entries = self.legend_entries(n);
        let Some(snap) = self.snapshot() else {
            return Vec::new();
        };
        // The legend asks few stacks: a cache of its own keeps `&self` (the panel's).
        let mut sites = SiteCache::new(snap, self.user_code.clone());
        let is_pool = |e: &color::LegendEntry| e.hash == color::POOL_LEGEND_HASH;
        if !self.user_code.is_default() {
            let named: Vec<(StackId, String)> = entries
                .iter()
                .map(|e| {
                    let stack = StackId(e.stack);
                    (stack, sites.site(snap, stack).label.clone())
                })
                .collect();
            let unique = unique_labels(snap, &named, &mut sites);
            for (e, l) in entries.iter_mut().zip(unique) {
                if !is_pool(e) {
                    e.label = l;
                }
            }
        }
        entries
            .into_iter()
            .map(|entry| LegendRow {
                size: size_short(entry.bytes),
                site: if is_pool(&entry) {
                    SiteText {
                        kind: SiteKind::None.as_str().to_string(),
                        label: color::POOL_LEGEND_LABEL.to_string(),
                        detail: None,
                    }
                } else {
                    SiteText::of(sites.site(snap, StackId(entry.stack)))
                },
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
            no_trace: self.no_trace_note(),
            accelerators: self.accelerators(),
        }
    }

    /// Why the current device has no trace events, when it has none, for the timelines (over
    /// the plot: they draw only what the end state holds, as one flat step, as memory_viz does)
    /// and the Allocator State History (beside its empty event list: its map shows the
    /// segments and blocks at the end). Empty otherwise, and in the flamegraph.
    #[must_use]
    pub fn no_trace_note(&self) -> String {
        let Some(snap) = self.snapshot() else {
            return String::new();
        };
        if self.active == ActiveView::Flame
            || snap.trace(self.device).is_some_and(|t| !t.is_empty())
        {
            return String::new();
        }
        no_trace_sentence(snap, self.device_prefix(), self.device, self.view())
    }
}

/// How to get a trace, the end of every [`App::no_trace_note`] but the empty snapshot's.
const HOW_TO_RECORD: &str = "To record a trace, call \
    torch.cuda.memory._record_memory_history() before the code to profile and save with \
    torch.cuda.memory._dump_snapshot()";

/// [`App::no_trace_note`]'s text for `device` of `snap` (whose trace is empty) in `view`,
/// naming the device with `prefix` (`cuda`, `xpu`, …).
fn no_trace_sentence(snap: &Snapshot, prefix: &str, device: i64, view: ViewKind) -> String {
    if snap.segments.is_empty() {
        return "This snapshot is empty: it has no trace and no segments (nothing was allocated \
                on the GPU when it was taken, or it was taken without \
                torch.cuda.memory._record_memory_history())"
            .to_string();
    }
    if !snap.segments.iter().any(|s| s.device == device) {
        return format!(
            "{prefix}:{device} has no trace and no segments in this snapshot: the other devices \
             in the device list have them"
        );
    }
    let why = if snap.layout == SnapshotLayout::BareList {
        "This snapshot has no trace: it is the segment list of torch.cuda.memory_snapshot(), \
         which holds only the segments and blocks at the end"
            .to_string()
    } else if snap.traces.iter().any(|t| !t.is_empty()) {
        format!(
            "{prefix}:{device} has no trace in this snapshot (only other devices were recorded), \
             so only its segments and blocks at the end are known"
        )
    } else {
        "This snapshot has no trace: it was taken without \
         torch.cuda.memory._record_memory_history(), so only the segments and blocks at the \
         end are known"
            .to_string()
    };
    match view {
        ViewKind::State => {
            format!("{why}: the map shows them, and there are no events to list. {HOW_TO_RECORD}")
        }
        ViewKind::Segments => format!(
            "{why}. This timeline draws the segments at the end as one flat step; the Allocator \
             State History maps their blocks. {HOW_TO_RECORD}"
        ),
        _ => format!(
            "{why}. This timeline draws the blocks allocated at the end as one flat step; the \
             Allocator State History maps them by segment. {HOW_TO_RECORD}"
        ),
    }
}
