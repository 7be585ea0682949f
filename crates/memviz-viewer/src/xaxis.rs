//! The x axis of the timelines: event order (x = timesteps) or wall-clock time (x = µs since
//! the first timed event). The layout, its hit index and its per-step values stay in timesteps;
//! what is drawn (scene instances, the overlay) and the camera are in the axis's own unit, and
//! an [`XMap`] converts at the edges.
//!
//! On the time axis a timestep `i` spans `[T(i), T(i + 1)]` (`T`: the running maximum of the
//! step events' times, non-decreasing), so `x ↦ T(x)` is piecewise linear and non-decreasing:
//! steps whose events share a time collapse to zero width (the truth of a time axis: nothing is
//! drawn or hit there), the last timestep has zero width, and outside `[0, steps]` both maps
//! extend linearly at the trace's mean µs per step (the camera may show a margin).

/// Maps between timesteps and the axis's unit.
pub trait XMap {
    /// The axis x of a (fractional) timestep.
    fn axis_of_step(&self, step: f64) -> f64;
    /// The timestep at axis x: the largest `s` with `axis_of_step(s) <= x`, so a time shared
    /// by several timesteps maps to the last of them (the state once they all happened).
    fn step_of_axis(&self, x: f64) -> f64;
    /// True on the time axis.
    fn is_time(&self) -> bool;
}

/// Event order: the axis is the timestep itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct Steps;

impl XMap for Steps {
    fn axis_of_step(&self, step: f64) -> f64 {
        step
    }
    fn step_of_axis(&self, x: f64) -> f64 {
        x
    }
    fn is_time(&self) -> bool {
        false
    }
}

/// The axis of a timeline: [`Steps`], or the times of its layout.
pub(crate) enum AxisMap<'a> {
    Steps,
    Time(crate::step_time::DerivedTimes<'a>),
}

impl XMap for AxisMap<'_> {
    fn axis_of_step(&self, step: f64) -> f64 {
        match self {
            AxisMap::Steps => step,
            AxisMap::Time(t) => t.time_at_x(step),
        }
    }
    fn step_of_axis(&self, x: f64) -> f64 {
        match self {
            AxisMap::Steps => x,
            AxisMap::Time(t) => t.x_at_time(x),
        }
    }
    fn is_time(&self) -> bool {
        matches!(self, AxisMap::Time(_))
    }
}
