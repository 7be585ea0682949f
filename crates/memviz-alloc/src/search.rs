//! The smallest capacity a trace fits on (bisection over replays) and the sweep over the
//! standard alternatives (issue 31 items 3 and 4).

use crate::consts::ROUND_LARGE;
use crate::job::{Bisect, Job};
use crate::replay::{Cancelled, Outcome, Prepared};
use crate::settings::Settings;
use serde::Serialize;

/// The bisection's step: capacities are multiples of 2 MiB (the segment rounding).
pub const CAPACITY_STEP: u64 = ROUND_LARGE;

/// The smallest capacity (a multiple of [`CAPACITY_STEP`]) on which the trace replays under
/// `settings` without any OOM, by bisection over replays between the peak allocated bytes
/// (below which nothing fits) and the unconstrained peak reserved (which always fits).
/// Assumes that fitting is monotone in the capacity, which the allocator's rules make true
/// in practice but do not guarantee (a larger capacity can change which segment is freed
/// first). `None` when even the unconstrained replay has an OOM it cannot avoid.
/// `progress(done, total)` covers all replays; `false` cancels.
pub fn min_capacity(
    prep: &Prepared<'_>,
    settings: &Settings,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<Option<u64>, Cancelled> {
    let n = prep.snap.trace(prep.device).map_or(0, |t| t.len()).max(1);
    // Replay k of at most `budget` (the log2 of the range, plus the first).
    let mut b = Bisect::new(settings.clone());
    loop {
        let base = b.replays() * n;
        let total = b.budget().max(b.replays() + 1) * n;
        if let Some(answer) = b.step(prep, &mut |d, _| progress(base + d, total))? {
            return Ok(answer);
        }
    }
}

/// One row of [`sweep`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepRow {
    /// `recorded`, or the conf keys changed from the recorded settings.
    pub name: String,
    pub outcome: Outcome,
}

/// The standard alternatives, as conf strings applied over the recorded settings.
pub const ALTERNATIVES: &[(&str, &str)] = &[
    ("recorded", ""),
    ("expandable_segments", "expandable_segments:True"),
    ("max_split_size_mb:128", "max_split_size_mb:128"),
    ("max_split_size_mb:256", "max_split_size_mb:256"),
    ("max_split_size_mb:512", "max_split_size_mb:512"),
    ("roundup_power2_divisions:4", "roundup_power2_divisions:4"),
    ("roundup_power2_divisions:8", "roundup_power2_divisions:8"),
    (
        "garbage_collection_threshold:0.6",
        "garbage_collection_threshold:0.6",
    ),
];

/// Replays every [`ALTERNATIVES`] entry on `capacity` and finds its smallest capacity
/// (`min_capacity` filled in each outcome).
pub fn sweep(
    prep: &Prepared<'_>,
    capacity: Option<u64>,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<Vec<SweepRow>, Cancelled> {
    const SCALE: usize = 1 << 20;
    let mut job = Job::sweep(&prep.recorded, capacity);
    while !job.is_done() {
        // This replay's share of the whole sweep.
        let (f0, f1) = (job.fraction(0.0), job.fraction(1.0));
        let mut part = |d: usize, t: usize| {
            let f = f0 + (f1 - f0) * (d as f64 / t.max(1) as f64);
            progress((f * SCALE as f64) as usize, SCALE)
        };
        job.step(prep, &mut part)?;
    }
    Ok(job.into_rows())
}
