//! What is built once per (file, device, timeline kind): the timeline, its layout, colours,
//! annotation phases and the first scene ([`build_device`]), shared between the Active Memory
//! Timeline and the Private Pools view when they are equal.

use std::rc::Rc;

use memviz_analysis::steps::StepValues;
use memviz_analysis::timeline::{self, Timeline};
use memviz_present::color;
use memviz_present::layout::{self, Layout, LayoutOptions};
use memviz_present::tooltip::TooltipContext;
use memviz_render::rgba;
use memviz_snapshot::Snapshot;

use super::ViewKind;
use crate::camera::Y_HEADROOM;
use crate::scene::{self, PlotScene, STATIC_MAX_POINTS};
use crate::step_time::StepTimeIndex;

/// Everything built once per (file, device).
pub(super) struct DeviceData {
    /// Shared by the Active Memory Timeline and the Private Pools view of a device without a
    /// private pool (where the two are equal, `timeline::has_private_pool`).
    pub timeline: Rc<Timeline>,
    pub layout: Rc<Layout>,
    /// Colours drawn: `base_colors` with the highlight applied.
    pub colors: Vec<u8>,
    pub base_colors: Vec<u8>,
    /// The highlighted elements (sorted) and whether the others are hidden, when set.
    pub highlight: Option<(Vec<u32>, bool)>,
    /// `external_annotations` phases with their band row (nesting level, < PHASE_ROWS).
    pub phases: Vec<(memviz_analysis::annotations::Phase, u32)>,
    /// The timestep of each `oom` event, in trace order (the first timestep after it).
    pub oom_steps: Vec<f64>,
    pub tips: Option<TooltipContext>,
    /// Relative time (µs since the first timed event) per timestep, non-decreasing, when the
    /// trace has times (derived on demand from the step events): built on first use
    /// ([`DeviceData::step_time`]), after the first frame, which the event axis draws without
    /// it (74 ms of a 150 MB file's first frame in the page).
    step_time_us: std::cell::OnceCell<Option<StepTimeIndex>>,
    /// Static scene, or the latest windowed one.
    pub scene: PlotScene,
    pub windowed: bool,
    /// Instances per column of the last column level of detail.
    pub column_density: f64,
    /// The search's and the filter's matches and the allocations the filter reads
    /// (`panels/filter.rs`; the Active Memory Timeline's only).
    pub query: super::panels::filter::QueryState,
}

impl DeviceData {
    /// The time per timestep of `device`'s trace in `snap` (what this was built from), when it
    /// has usable times; built on the first call.
    pub fn step_time(&self, snap: &Snapshot, device: i64) -> Option<&StepTimeIndex> {
        self.step_time_us
            .get_or_init(|| StepTimeIndex::build(snap, device, &self.layout))
            .as_ref()
    }
}

/// Exact polylines only where the static scene draws them all: above [`STATIC_MAX_POINTS`] the
/// windowed scene derives what it draws, and stored points (12 bytes each, up to 2^24 by
/// default) cost 735 bytes per trace entry on a 20 MB tiled file (wasm memory 11× the file).
pub const VIEWER_LAYOUT: LayoutOptions = LayoutOptions {
    mode: layout::PointMode::Exact,
    max_exact_points: STATIC_MAX_POINTS,
};

/// Everything of (device, kind) built: over `shared`'s timeline and layout when given (the
/// Private Pools view of a device without a private pool shows the Active Memory Timeline).
pub(super) fn build_device(
    snap: &Snapshot,
    device: i64,
    kind: ViewKind,
    shared: Option<(Rc<Timeline>, Rc<Layout>)>,
) -> DeviceData {
    let (timeline, layout) = shared.unwrap_or_else(|| {
        let mut timeline = match kind {
            ViewKind::Segments => timeline::build_segments(snap, device),
            ViewKind::Pools => timeline::build_pools(snap, device),
            _ => timeline::build(snap, device),
        };
        crate::phase::phase("timeline");
        let layout = layout::Layout::build_dropping_steps(&mut timeline, VIEWER_LAYOUT);
        crate::phase::phase("layout");
        (Rc::new(timeline), Rc::new(layout))
    });
    let colors = color::element_colors_with_legend(snap, device, &timeline, &layout);
    crate::phase::phase("colors");
    let windowed = layout.exact_point_count() > STATIC_MAX_POINTS;
    let scene = initial_scene(&layout, &colors, windowed);
    crate::phase::phase("first_scene");
    let phases = phase_rows(memviz_analysis::annotations::phases(snap, device, &layout));
    crate::phase::phase("annotation_phases");
    let oom_steps = oom_steps(snap, device, &layout);
    DeviceData {
        timeline,
        layout,
        base_colors: colors.clone(),
        highlight: None,
        phases,
        oom_steps,
        colors,
        tips: None,
        step_time_us: std::cell::OnceCell::new(),
        column_density: 0.0,
        scene,
        windowed,
        query: Default::default(),
    }
}

/// The timestep at which each `oom` event of `device` happened: the first timestep whose event
/// comes after it (the end when none does). One pass over the steps.
fn oom_steps(snap: &Snapshot, device: i64, layout: &Layout) -> Vec<f64> {
    let Some(tr) = snap.trace(device) else {
        return Vec::new();
    };
    let rows: Vec<u32> = tr
        .actions()
        .enumerate()
        .filter(|(_, a)| *a == memviz_snapshot::Action::Oom)
        .map(|(i, _)| i as u32)
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    rows_to_steps(layout, &rows)
}

/// The timestep of each trace row (ascending): the first timestep whose event is at or after
/// it; past the last event, the end. An `oom` row has no timestep of its own, so it maps to the
/// next one (the recorded OOM marks); an allocation's row maps to its own (the what-if curve).
pub(crate) fn rows_to_steps(layout: &Layout, rows: &[u32]) -> Vec<f64> {
    let mut out = Vec::with_capacity(rows.len());
    let mut next = rows.iter().peekable();
    for (step, ev) in layout.step_event().iter().enumerate() {
        if ev == layout::NO_EVENT {
            continue;
        }
        while let Some(&&row) = next.peek() {
            if row <= ev {
                out.push(step as f64);
                next.next();
            } else {
                break;
            }
        }
        if next.peek().is_none() {
            break;
        }
    }
    out.resize(rows.len(), f64::from(layout.step_count()));
    out
}

/// Rows of phase bands drawn at the top of the plot.
pub const PHASE_ROWS: u32 = 3;
/// Height of one phase band, CSS px.
pub const PHASE_ROW_CSS: f64 = 14.0;
pub(super) const PHASE_COLORS: [u32; 2] = [rgba(120, 90, 200, 110), rgba(60, 150, 170, 110)];
pub(super) const PHASE_EDGE: u32 = rgba(120, 90, 200, 90);

/// Phases with a band row each: the first row whose previous phase ended by this one's start
/// (nesting goes one row down); phases needing more than [`PHASE_ROWS`] rows are left out.
fn phase_rows(
    phases: Vec<memviz_analysis::annotations::Phase>,
) -> Vec<(memviz_analysis::annotations::Phase, u32)> {
    let mut ends = [0u32; PHASE_ROWS as usize];
    let mut used = [false; PHASE_ROWS as usize];
    let mut out = Vec::new();
    for p in phases {
        let row = (0..PHASE_ROWS as usize).find(|&r| !used[r] || ends[r] <= p.start_step);
        if let Some(r) = row {
            used[r] = true;
            ends[r] = p.end_step;
            out.push((p, r as u32));
        }
    }
    out
}

/// Columns of the first scene of a windowed layout: coarse, so the first frame comes soon; the
/// camera's first settle (right after the first frame) rebuilds it at the canvas's width.
pub const FIRST_SCENE_COLUMNS: u32 = 384;

/// The first scene of a layout: static, or the column level of detail of the whole trace.
pub(super) fn initial_scene(layout: &Layout, colors: &[u8], windowed: bool) -> PlotScene {
    if windowed {
        let steps = f64::from(layout.step_count().max(1));
        let peak = layout.peak_bytes as f64 * Y_HEADROOM;
        scene::build_columns(
            layout,
            colors,
            [0.0, steps, 0.0, peak.max(1.0)],
            FIRST_SCENE_COLUMNS,
            peak.max(1.0) / 512.0,
        )
    } else {
        scene::build_static(layout, colors)
    }
}

/// Max of `values` over `cols` equal column ranges.
pub(super) fn decimate_max(values: StepValues<'_, u64>, cols: usize) -> Vec<u64> {
    let n = values.len();
    if n == 0 || cols == 0 {
        return Vec::new();
    }
    // In u64: `c * n` passes 2^32 on wasm32 (usize) for traces of a few million steps.
    let at = |c: usize| (c as u64 * n as u64 / cols as u64) as usize;
    (0..cols)
        .map(|c| {
            let a = at(c);
            let b = at(c + 1).max(a + 1).min(n);
            values.range(a, b).max().unwrap_or(0)
        })
        .collect()
}
