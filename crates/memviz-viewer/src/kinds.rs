//! The names the shell and the viewer share and that every layer reads: [`ViewKind`], what
//! the canvas shows, and [`VIEWS`], the one list of views (the shell's is generated from it:
//! `www/js/generated/views.js`). It depends on nothing in the crate, so the modules that only
//! need a name (`memory`'s estimates, the answers, the request table) stay below the app and
//! the views.

/// What the canvas shows.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum ViewKind {
    /// Active Memory Timeline (SEMANTICS §3).
    Active,
    /// Active Cached Segment Timeline (§4, with `segment_map` / `segment_unmap`).
    Segments,
    /// Allocated Memory incl. Private Pools (§5, pool envelopes).
    Pools,
    /// Allocator State History (§6): the event list and the segment map.
    State,
    /// Memory flamegraph: live bytes by stack at a moment (or × lifetime), an icicle chart.
    Flame,
}

impl ViewKind {
    /// The view of a shell name (`active`, `segments`, `pools`, `state`, `flame`: a row of
    /// [`VIEWS`]), or none.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        VIEWS.iter().map(|v| v.kind).find(|k| k.name() == name)
    }

    /// True for the timelines (a plot of bytes over events or time: Active, Segments, Pools),
    /// which share the x axis, search, highlights and the panels.
    #[must_use]
    pub fn is_timeline(self) -> bool {
        matches!(self, Self::Active | Self::Segments | Self::Pools)
    }

    /// Its shell name: its serde name (a test checks they agree).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Segments => "segments",
            Self::Pools => "pools",
            Self::State => "state",
            Self::Flame => "flame",
        }
    }
}

/// What the mouse does in a timeline (the flamegraph's click zooms, the others' pins).
const TIMELINE_HINT: &str = "Wheel: zoom · drag: pan · click: pin the details · double-click: fit";
/// The details pane before anything is hovered in a timeline.
const TIMELINE_DETAILS: &str = "Hover an allocation to see its stack here; click to pin it.";

/// One view as the shell shows it: a row of [`VIEWS`]. The shell reads the list from
/// `www/js/generated/views.js` (written from [`VIEWS`] by `cargo xtask gen-types`): the view
/// selector's options, the names a deep link or an embedding parent may give, and what the
/// page shows around each view. Strings are the page's own text (never snapshot data).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
pub struct ViewInfo {
    /// The view (its serde name is the shell's: `#view-select`'s value, a link's `view=`).
    pub kind: ViewKind,
    /// Its name in the view selector and in sentences about it.
    pub label: &'static str,
    /// What the mouse does in it (the first-use hint over the plot).
    pub hint: &'static str,
    /// A sentence under the toolbar saying what it draws (empty: none).
    pub note: &'static str,
    /// What the `#peak` line counts as drawn (`… 1,234 allocations drawn`).
    pub drawn: &'static str,
    /// The details pane's text before anything is hovered or selected.
    pub details: &'static str,
    /// It has an x axis in events or in time (`#x-axis-select` is shown).
    pub x_axis: bool,
    /// It shows the legend of the largest sites.
    pub legend: bool,
    /// It shows the peak line (`#peak`).
    pub peak: bool,
    /// Its camera has a "fit" (`#fit-button` is shown).
    pub fit: bool,
    /// The toolbar's search box searches it.
    pub search: bool,
}

impl ViewInfo {
    /// A timeline (a plot of bytes over events or time, with its legend, axis and fit).
    const fn timeline(
        kind: ViewKind,
        label: &'static str,
        note: &'static str,
        drawn: &'static str,
    ) -> Self {
        Self {
            kind,
            label,
            hint: TIMELINE_HINT,
            note,
            drawn,
            details: TIMELINE_DETAILS,
            x_axis: true,
            legend: true,
            peak: true,
            fit: true,
            search: true,
        }
    }
}

/// Every view, in the view selector's order: the one list of views (the shell's comes from
/// it, `www/js/generated/views.js`). A new view is one row here.
pub const VIEWS: [ViewInfo; 5] = [
    ViewInfo::timeline(ViewKind::Active, "Active Memory Timeline", "", "allocations"),
    ViewInfo::timeline(
        ViewKind::Segments,
        "Active Cached Segment Timeline",
        "Each segment (cudaMalloc, or an expandable segment's mapped range) as one band, from its allocation to its free.",
        "segments (or mapped ranges)",
    ),
    ViewInfo::timeline(
        ViewKind::Pools,
        "Allocated Memory incl. Private Pools",
        "Allocations, and each private pool (CUDA graphs, graph-safe allocators) as an envelope of the memory it reserved.",
        "allocations and pool envelopes",
    ),
    ViewInfo {
        kind: ViewKind::State,
        label: "Allocator State History",
        hint: "Wheel: zoom · drag: pan · click a block: pin its details · ↑ ↓ in the list: step through the events",
        note: "",
        drawn: "allocations",
        details: "Select an event to see its stack here; hover a block of the map for its own.",
        x_axis: false,
        legend: false,
        peak: false,
        fit: true,
        search: false,
    },
    ViewInfo {
        kind: ViewKind::Flame,
        label: "Memory flamegraph",
        hint: "Wheel: zoom · drag: pan · click a frame: zoom into it · the path above: zoom out",
        note: "",
        drawn: "allocations",
        details: "Hover a frame to see its stack here; click it to zoom.",
        x_axis: false,
        legend: false,
        peak: true,
        fit: false,
        search: true,
    },
];

#[cfg(test)]
mod tests {
    use super::{ViewKind, VIEWS};

    /// Each kind's row in [`VIEWS`] (a match, so that a new kind does not compile without one).
    fn row(kind: ViewKind) -> usize {
        match kind {
            ViewKind::Active => 0,
            ViewKind::Segments => 1,
            ViewKind::Pools => 2,
            ViewKind::State => 3,
            ViewKind::Flame => 4,
        }
    }

    #[test]
    fn every_view_is_listed_once_by_its_shell_name() {
        for (i, v) in VIEWS.iter().enumerate() {
            assert_eq!(row(v.kind), i, "{:?} is not in its row", v.kind);
            assert_eq!(ViewKind::parse(v.kind.name()), Some(v.kind));
            assert_eq!(
                serde_json::to_value(v.kind).ok(),
                Some(serde_json::Value::from(v.kind.name())),
                "the shell's name of {:?} is its serde name",
                v.kind
            );
            assert!(!v.label.is_empty() && !v.hint.is_empty() && !v.details.is_empty());
        }
        assert_eq!(ViewKind::parse("timeline"), None);
    }
}
