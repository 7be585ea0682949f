//! The names the shell and the viewer share and that every layer reads: [`ViewKind`], what
//! the canvas shows. It depends on nothing in the crate, so the modules that only need a name
//! (`memory`'s estimates, the answers, the request table) stay below the app and the views.

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
    /// `active`, `segments`, `pools` or `state`.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "active" => Self::Active,
            "segments" => Self::Segments,
            "pools" => Self::Pools,
            "state" => Self::State,
            "flame" => Self::Flame,
            _ => return None,
        })
    }

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
