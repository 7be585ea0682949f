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

/// Sloped stretches longer than this many timesteps are split at this many timesteps only (the
/// rest drawn straight in time).
const MAX_SPLITS: u32 = 256;

/// Calls `f(xa, xb, bottom_a, bottom_b)` in the axis's unit for a piece of a polyline from
/// `(xa, ba)` to `(xb, bb)` in timesteps: one piece for a flat one or on [`Steps`]; on the
/// time axis a sloped one is split at the timesteps inside it (time is linear within a
/// timestep, not across), so what is drawn is what [`Layout::hit`] finds.
///
/// [`Layout::hit`]: memviz_present::layout::Layout::hit
pub fn for_each_mapped<M: XMap + ?Sized>(
    (xa, ba): (f64, f64),
    (xb, bb): (f64, f64),
    xmap: &M,
    mut f: impl FnMut(f64, f64, f64, f64),
) {
    let map = |x: f64| xmap.axis_of_step(x);
    if !xmap.is_time() || ba == bb || (xb - xa <= 1.0 && xa.floor() == (xb - 1e-9).floor()) {
        f(map(xa), map(xb), ba, bb);
        return;
    }
    let bottom = |x: f64| ba + (bb - ba) * ((x - xa) / (xb - xa));
    let (mut a, mut k, mut splits) = (xa, xa.floor() + 1.0, 0);
    while k < xb && splits < MAX_SPLITS {
        f(map(a), map(k), bottom(a), bottom(k));
        a = k;
        k += 1.0;
        splits += 1;
    }
    f(map(a), map(xb), bottom(a), bottom(xb));
}

/// A polyline in timesteps (x ascending) in the axis's unit ([`for_each_mapped`]'s points).
pub fn map_polyline<M: XMap + ?Sized>(pts: &[(f64, f64)], xmap: &M) -> Vec<(f64, f64)> {
    if !xmap.is_time() {
        return pts.to_vec();
    }
    let mut out = Vec::with_capacity(pts.len());
    if let Some(&(x, b)) = pts.first() {
        out.push((xmap.axis_of_step(x), b));
    }
    for w in pts.windows(2) {
        if let [p, q] = w {
            for_each_mapped(*p, *q, xmap, |_, xb, _, bb| out.push((xb, bb)));
        }
    }
    out
}
