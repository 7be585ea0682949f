//! The smallest capacity a trace fits on (bisection over replays) and the sweep over the
//! standard alternatives (issue 31 items 3 and 4).

use crate::consts::ROUND_LARGE;
use crate::replay::{name_site, Cancelled, Options, Outcome, Prepared};
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
    let unconstrained = Options {
        capacity: None,
        recorded_pressure: false,
        stop_at_first_oom: true,
        record_events: false,
    };
    // Replay k of at most `budget` (the log2 of the range, plus the first).
    let mut round = 0usize;
    let mut budget = 2usize;
    let run = |cap: Option<u64>,
               round: &mut usize,
               budget: usize,
               progress: &mut dyn FnMut(usize, usize) -> bool|
     -> Result<Outcome, Cancelled> {
        let base = *round * n;
        *round += 1;
        let total = budget.max(*round) * n;
        let opts = Options {
            capacity: cap,
            ..unconstrained.clone()
        };
        prep.replay(settings, &opts, &mut |d, _| progress(base + d, total))
    };
    let free = run(None, &mut round, budget, progress)?;
    if free.first_oom.is_some() {
        return Ok(None);
    }
    let mut hi = free.peak_reserved.div_ceil(CAPACITY_STEP);
    let mut lo = (free.peak_allocated / CAPACITY_STEP).saturating_sub(1);
    budget = 1 + (64 - (hi.saturating_sub(lo)).leading_zeros() as usize) + 1;
    while hi > lo + 1 {
        let mid = lo + (hi - lo) / 2;
        let o = run(Some(mid * CAPACITY_STEP), &mut round, budget, progress)?;
        if o.first_oom.is_none() && o.completed {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(Some(hi * CAPACITY_STEP))
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
    let mut rows = Vec::new();
    let k = ALTERNATIVES.len();
    for (j, (name, conf)) in ALTERNATIVES.iter().enumerate() {
        let settings = prep.recorded.with(conf);
        let mut part = |d: usize, t: usize| progress(j * t.max(1) * 2 + d, k * t.max(1) * 2);
        let opts = Options {
            capacity,
            ..Options::default()
        };
        let mut out = prep.replay(&settings, &opts, &mut part)?;
        name_site(prep.snap, &mut out);
        let mut part2 =
            |d: usize, t: usize| progress(j * t.max(1) * 2 + t.max(1) + d.min(t), k * t.max(1) * 2);
        out.min_capacity = min_capacity(prep, &settings, &mut part2)?;
        rows.push(SweepRow {
            name: (*name).to_string(),
            outcome: out,
        });
    }
    Ok(rows)
}
