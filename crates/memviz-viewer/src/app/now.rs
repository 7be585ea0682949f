//! [`Now`]: what the canvas shows now, read from the app for one answer, and what the app
//! answers the shell around the plot from it: the axis ticks, the legend, the device list, the
//! settings, the viewer's state and the panel that holds them.

use memviz_analysis::format::size_short;
use memviz_analysis::site::{unique_labels, SiteCache, SiteKind, UserCode};
use memviz_present::color;
use memviz_snapshot::{Layout as SnapshotLayout, Snapshot, StackId};

use super::files::LoadedFile;
use super::selection::Selection;
use super::timeline::TimelineView;
use super::{overlay, timeline};
use super::{AxisTicks, ViewKind};
use crate::answer::{DeviceRow, LegendRow, Panel, SettingRow, SiteText, ViewerState};
use crate::camera::PlotGeometry;
use crate::registry::Views;

/// The app's files, views and selection, read for one answer.
pub(super) struct Now<'a> {
    pub files: &'a [LoadedFile],
    pub views: &'a Views,
    /// Which file, device and views are shown.
    pub sel: Selection,
    pub user_code: &'a UserCode,
    pub geom: &'a PlotGeometry,
}

impl Now<'_> {
    /// The current snapshot.
    fn snapshot(&self) -> Option<&Snapshot> {
        self.files.get(self.sel.file).map(|f| &*f.snap)
    }

    /// The timeline of `kind` of the current file and device, when built.
    fn timeline_of(&self, kind: ViewKind) -> Option<&TimelineView> {
        self.views.get_as::<TimelineView>(self.sel.key(kind))
    }
}

impl Now<'_> {
    /// Ticks of both axes for the current camera, inside the plot, increasing (none outside
    /// the timelines).
    #[must_use]
    pub fn axis_ticks(&self) -> AxisTicks {
        if self.sel.shown != self.sel.timeline {
            return AxisTicks::none();
        }
        let Some(v) = self.timeline_of(self.sel.timeline) else {
            return AxisTicks::none();
        };
        let mut ticks =
            overlay::axis_ticks(&v.ui, self.geom, v.data(), self.snapshot(), self.sel.device);
        ticks.whatif = v.sim_mark();
        ticks
    }

    /// The `n` largest allocation sites at the peak, with their sizes as text and each
    /// entry's site. With a user code other than the default (which the analysis names the
    /// legend with), the labels are the app's sites', made unique among the entries.
    #[must_use]
    pub fn legend(&self, n: usize) -> Vec<LegendRow> {
        let Some(snap) = self.snapshot() else {
            return Vec::new();
        };
        let key = self.sel.key(self.sel.panel_kind());
        let mut entries = super::panels::legend_entries(snap, self.views, key, n);
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
        let Some(f) = self.files.get(self.sel.file) else {
            return Vec::new();
        };
        f.device_rows
            .iter()
            .map(|r| DeviceRow {
                current: r.device == self.sel.device,
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
        let mut state = ViewerState {
            timeline: match self.timeline_of(self.sel.timeline) {
                Some(v) => timeline::state_value(&v.ui, v.data(), v.has_time()),
                None => timeline::state_value(&timeline::TimelineUi::new(), None, false),
            },
            file: self.sel.file,
            files: self.files.iter().map(|f| f.name.clone()).collect(),
            device: self.sel.device,
            x_axis: self.axis_ticks().x_unit.to_owned(),
            view: self.sel.shown,
            highlighted: self
                .timeline_of(self.sel.panel_kind())
                .and_then(|v| v.data()?.highlight.as_ref().map(|(e, _)| e.len())),
            flame_view: None,
            state_view: None,
            geometry: *self.geom,
        };
        if self.sel.shown != self.sel.timeline {
            if let Some(v) = self.views.get(self.sel.key(self.sel.shown)) {
                v.write_state(&mut state);
            }
        }
        state
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
            accelerators: self
                .files
                .iter()
                .map(|f| super::files::file_accelerator(f.accelerator))
                .collect(),
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
        if self.sel.shown == ViewKind::Flame
            || snap.trace(self.sel.device).is_some_and(|t| !t.is_empty())
        {
            return String::new();
        }
        let prefix = self
            .files
            .get(self.sel.file)
            .map_or("cuda", |f| f.accelerator.accelerator.device_prefix());
        no_trace_sentence(snap, prefix, self.sel.device, self.sel.shown)
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
