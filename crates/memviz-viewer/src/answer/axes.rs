//! The axis ticks the shell labels the plot with ([`AxisTicks`]: both axes, the annotation
//! phases' labels and the `oom` markers), in canvas CSS px. The timeline's overlay
//! (`app::overlay`) makes them.

#[cfg(doc)]
use crate::ticks;
use crate::ticks::Tick;

/// Both axes' ticks, positions in canvas CSS px.
#[derive(Clone, Debug, PartialEq, serde::Serialize, ts_rs::TS)]
pub struct AxisTicks {
    /// x ticks: `pos_css_px` is a canvas x.
    pub x: Vec<Tick>,
    /// y ticks: `pos_css_px` is a canvas y.
    pub y: Vec<Tick>,
    /// `"time"`, `"timesteps"`, or `"none"` (a view without axes).
    pub x_unit: &'static str,
    /// Labels of the annotation phases wide enough to name (CSS px, clipped to the plot).
    pub phases: Vec<PhaseLabel>,
    /// Markers of the device's `oom` events inside the plot (the shell draws a button there).
    pub ooms: Vec<OomMark>,
    /// The what-if tab's simulated reserved curve drawn over this timeline, when one is.
    pub whatif: Option<super::WhatIfMark>,
}

/// Where an `oom` event is on the x axis: `x` a canvas CSS px, `index` its rank among the
/// device's `oom` events (the State History's `state_ooms` lists them in the same order).
#[derive(Clone, Debug, PartialEq, serde::Serialize, ts_rs::TS)]
pub struct OomMark {
    pub x: f64,
    pub index: u32,
}

impl AxisTicks {
    /// No ticks: the State History and the flamegraph draw no axes.
    #[must_use]
    pub fn none() -> Self {
        AxisTicks {
            x: Vec::new(),
            y: Vec::new(),
            x_unit: "none",
            phases: Vec::new(),
            ooms: Vec::new(),
            whatif: None,
        }
    }
}

/// A phase band's label position.
#[derive(Clone, Debug, PartialEq, serde::Serialize, ts_rs::TS)]
pub struct PhaseLabel {
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub name: String,
    /// `name` elided in the middle to fit the band ([`ticks::elide_phase_name`]).
    pub short: String,
}
