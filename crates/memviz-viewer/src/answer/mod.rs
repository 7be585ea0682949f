//! The answers the viewer gives the shell, one struct (or enum) each. The viewer builds these
//! values and never JSON: `memviz-web` serializes them (the only place JSON is made), and
//! `cargo xtask gen-types` writes their TypeScript declarations from the same definitions
//! (`ts-rs`) to `www/js/generated/`, which `tsc --checkJs` checks the shell against. The
//! [`crate::request::Request`] enum says which answer each request gets.
//!
//! Field names are the shell's: changing one changes the generated declarations, and `tsc`
//! then names every place in `www/js` that reads it.

mod axes;
mod filter;
mod flame;
mod history;
mod panel;
mod site;
mod tables;
mod tooltip;
mod whatif;

pub use axes::{AxisTicks, OomMark, PhaseLabel};
pub use filter::{FilterAnswer, FilterErrorAnswer};
pub use flame::{
    Crumb, FlameAt, FlameDiffTotals, FlameInfo, FlameLabel, FlameMoment, FlameNodeInfo, FlamePhase,
    FlameState, FlameUnit,
};
pub use history::{BlockLabel, OomAnswer, RowKind, StateRow, StateSelection};
pub use panel::{
    DeviceRow, FileAccelerator, LegendRow, Panel, SceneKind, SettingRow, StateViewState,
    TimelineState, ViewerState,
};
pub use site::{explanation_lines, line_kinds, SiteText};
pub use tables::{
    DiffAnswer, DiffGroup, FileRow, LeaksAnswer, LineAnswer, LiveAnswer, LiveAnswerRow,
    SearchAnswer, SuspectAnswer, UserCodeAnswer,
};
pub use tooltip::{ElementTip, ItemTip, MapItem, MapItemKind, NodeTip, TipLines, Tooltip};
pub use whatif::{
    WhatIfInfo, WhatIfKey, WhatIfMark, WhatIfOom, WhatIfProgress, WhatIfResult, WhatIfRow,
};

use serde::Serialize;
use ts_rs::TS;

pub use crate::camera::PlotGeometry;
pub use crate::kinds::ViewKind;
pub use crate::ticks::Tick;

/// A panel or view that cannot fit in the memory left: the sentence saying so (what it needs,
/// what is free, and the command line that gives the same answer). Also the error of the app's
/// memory checks.
#[derive(Clone, Debug, PartialEq, Serialize, TS, thiserror::Error)]
#[error("{unavailable}")]
pub struct Unavailable {
    pub unavailable: String,
}

impl From<String> for Unavailable {
    fn from(unavailable: String) -> Self {
        Unavailable { unavailable }
    }
}

/// An answer, or why it cannot be made in the memory left.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
#[serde(untagged)]
pub enum Avail<T> {
    Ready(T),
    Unavailable(Unavailable),
}

impl<T> Avail<T> {
    /// `Ok` → the answer, `Err` → why it could not be made.
    #[must_use]
    pub fn from_result(r: Result<T, Unavailable>) -> Self {
        match r {
            Ok(v) => Avail::Ready(v),
            Err(u) => Avail::Unavailable(u),
        }
    }

    /// The answer, when it was made.
    #[must_use]
    pub fn ready(self) -> Option<T> {
        match self {
            Avail::Ready(v) => Some(v),
            Avail::Unavailable(_) => None,
        }
    }

    /// The sentence, when the answer could not be made.
    #[must_use]
    pub fn unavailable(&self) -> Option<&str> {
        match self {
            Avail::Ready(_) => None,
            Avail::Unavailable(u) => Some(&u.unavailable),
        }
    }
}
