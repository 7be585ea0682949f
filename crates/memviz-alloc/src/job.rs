//! Resumable forms of [`crate::min_capacity`] and [`crate::sweep`] for a caller that must stay
//! responsive between replays (the page's single-threaded worker, which reads its Cancel
//! message between two calls): a [`Bisect`] or a [`Job`] does one replay per
//! [`Job::step`], and [`Detached`] keeps a [`Prepared`] between calls without its borrow of
//! the snapshot. `min_capacity` and `sweep` are these steps in a loop.

use std::collections::BTreeMap;

use memviz_snapshot::Snapshot;

use crate::replay::{name_site, Cancelled, Options, Outcome, Prepared};
use crate::search::{SweepRow, ALTERNATIVES, CAPACITY_STEP};
use crate::settings::Settings;

/// A [`Prepared`] without its snapshot (moved, not copied): keep it between calls and
/// [`Detached::attach`] it to the same snapshot again.
pub struct Detached {
    device: i64,
    recorded: Settings,
    warnings: Vec<String>,
    seeds: Vec<crate::replay::SeedSeg>,
    initial_reserved: u64,
    private_segments: rustc_hash::FxHashMap<u64, (i64, i64)>,
    recorded_events: Vec<crate::model::SegEvent>,
    recorded_peak: u64,
    recorded_capacity: Option<u64>,
}

impl Prepared<'_> {
    /// Lets go of the snapshot's borrow, keeping the start state.
    #[must_use]
    pub fn detach(self) -> Detached {
        Detached {
            device: self.device,
            recorded: self.recorded,
            warnings: self.warnings,
            seeds: self.seeds,
            initial_reserved: self.initial_reserved,
            private_segments: self.private_segments,
            recorded_events: self.recorded_events,
            recorded_peak: self.recorded_peak,
            recorded_capacity: self.recorded_capacity,
        }
    }
}

impl Detached {
    /// The [`Prepared`] again, over `snap` (the snapshot it was built from).
    #[must_use]
    pub fn attach(self, snap: &Snapshot) -> Prepared<'_> {
        Prepared {
            snap,
            device: self.device,
            recorded: self.recorded,
            warnings: self.warnings,
            seeds: self.seeds,
            initial_reserved: self.initial_reserved,
            private_segments: self.private_segments,
            recorded_events: self.recorded_events,
            recorded_peak: self.recorded_peak,
            recorded_capacity: self.recorded_capacity,
        }
    }

    /// The device it was prepared for.
    #[must_use]
    pub fn device(&self) -> i64 {
        self.device
    }

    /// The settings the file was recorded under.
    #[must_use]
    pub fn recorded(&self) -> &Settings {
        &self.recorded
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Range {
    /// Before the unconstrained replay.
    Start,
    /// Fits at `hi` steps, not at `lo`.
    Search { lo: u64, hi: u64 },
}

/// The bisection of [`crate::min_capacity`], one replay per [`Bisect::step`].
#[derive(Clone, Debug)]
pub struct Bisect {
    settings: Settings,
    range: Range,
    replays: usize,
    budget: usize,
}

impl Bisect {
    #[must_use]
    pub fn new(settings: Settings) -> Bisect {
        Bisect {
            settings,
            range: Range::Start,
            replays: 0,
            budget: 2,
        }
    }

    /// Replays done so far.
    #[must_use]
    pub fn replays(&self) -> usize {
        self.replays
    }

    /// The replays the whole bisection takes (an estimate before the first one).
    #[must_use]
    pub fn budget(&self) -> usize {
        self.budget.max(self.replays)
    }

    /// One replay: `Some(answer)` when the bisection is over (`answer` as
    /// [`crate::min_capacity`]'s), `None` when more replays are needed. A cancelled step
    /// changes nothing (it can be stepped again).
    pub fn step(
        &mut self,
        prep: &Prepared<'_>,
        progress: &mut dyn FnMut(usize, usize) -> bool,
    ) -> Result<Option<Option<u64>>, Cancelled> {
        let mut opts = Options {
            capacity: None,
            recorded_pressure: false,
            stop_at_first_oom: true,
            record_events: false,
        };
        match self.range {
            Range::Start => {
                let free = prep.replay(&self.settings, &opts, progress)?;
                self.replays += 1;
                if free.first_oom.is_some() {
                    return Ok(Some(None));
                }
                let hi = free.peak_reserved.div_ceil(CAPACITY_STEP);
                let lo = (free.peak_allocated / CAPACITY_STEP).saturating_sub(1);
                self.budget = 1 + (64 - (hi.saturating_sub(lo)).leading_zeros() as usize) + 1;
                self.range = Range::Search { lo, hi };
                Ok(self.finished(lo, hi))
            }
            Range::Search { lo, hi } => {
                let mid = lo + (hi - lo) / 2;
                opts.capacity = Some(mid * CAPACITY_STEP);
                let o = prep.replay(&self.settings, &opts, progress)?;
                self.replays += 1;
                let (lo, hi) = if o.first_oom.is_none() && o.completed {
                    (lo, mid)
                } else {
                    (mid, hi)
                };
                self.range = Range::Search { lo, hi };
                Ok(self.finished(lo, hi))
            }
        }
    }

    fn finished(&self, lo: u64, hi: u64) -> Option<Option<u64>> {
        (hi <= lo + 1).then_some(Some(hi * CAPACITY_STEP))
    }
}

/// One setting of a [`Job`] being worked on: its outcome, then its bisection.
struct Current {
    outcome: Outcome,
    bisect: Bisect,
}

/// A run (one setting: its replay and smallest capacity) or a sweep (every [`ALTERNATIVES`]
/// entry, each replayed and bisected) done one replay per [`Job::step`].
pub struct Job {
    capacity: Option<u64>,
    tasks: Vec<(String, Settings)>,
    /// Settings `tasks[..next]` are in `rows` (or `current`).
    next: usize,
    current: Option<Current>,
    rows: Vec<SweepRow>,
    replays: usize,
}

impl Job {
    /// One replay of `settings` on `capacity`, then its smallest capacity; the one row is
    /// named `name`.
    #[must_use]
    pub fn run(name: &str, settings: Settings, capacity: Option<u64>) -> Job {
        Job::new(vec![(name.to_string(), settings)], capacity)
    }

    /// Every [`ALTERNATIVES`] entry over `recorded`, on `capacity` ([`crate::sweep`]).
    #[must_use]
    pub fn sweep(recorded: &Settings, capacity: Option<u64>) -> Job {
        let tasks = ALTERNATIVES
            .iter()
            .map(|(name, conf)| ((*name).to_string(), recorded.with(conf)))
            .collect();
        Job::new(tasks, capacity)
    }

    fn new(tasks: Vec<(String, Settings)>, capacity: Option<u64>) -> Job {
        Job {
            capacity,
            tasks,
            next: 0,
            current: None,
            rows: Vec::new(),
            replays: 0,
        }
    }

    /// True when every setting has its row.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.rows.len() >= self.tasks.len()
    }

    /// The settings this job runs (rows to come).
    #[must_use]
    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }

    /// The capacity replayed on.
    #[must_use]
    pub fn capacity(&self) -> Option<u64> {
        self.capacity
    }

    /// Replays done so far.
    #[must_use]
    pub fn replays(&self) -> usize {
        self.replays
    }

    /// The finished rows, in [`Job::run`] / [`ALTERNATIVES`] order.
    #[must_use]
    pub fn rows(&self) -> &[SweepRow] {
        &self.rows
    }

    /// The finished rows.
    #[must_use]
    pub fn into_rows(self) -> Vec<SweepRow> {
        self.rows
    }

    /// How far the job is, in [0, 1], with `within` ∈ [0, 1] of the replay under way.
    #[must_use]
    pub fn fraction(&self, within: f64) -> f64 {
        let k = self.tasks.len().max(1) as f64;
        if self.is_done() {
            return 1.0;
        }
        let within = within.clamp(0.0, 1.0);
        let part = match &self.current {
            None => within / 3.0,
            Some(c) => {
                // Before its first replay the bisection's length is unknown: a 2 MiB step over
                // a few GiB takes about 12.
                let budget = if c.bisect.replays() == 0 {
                    12
                } else {
                    c.bisect.budget()
                };
                let total = (1 + budget).max(2 + c.bisect.replays()) as f64;
                (1.0 + c.bisect.replays() as f64 + within) / total
            }
        };
        ((self.next as f64 + part.min(1.0)) / k).clamp(0.0, 1.0)
    }

    /// One replay (nothing once done): true when the job is done after it. A cancelled step
    /// leaves the job as it was.
    pub fn step(
        &mut self,
        prep: &Prepared<'_>,
        progress: &mut dyn FnMut(usize, usize) -> bool,
    ) -> Result<bool, Cancelled> {
        if self.is_done() {
            return Ok(true);
        }
        match self.current.as_mut() {
            None => {
                let Some((_, settings)) = self.tasks.get(self.next) else {
                    return Ok(true);
                };
                let opts = Options {
                    capacity: self.capacity,
                    ..Options::default()
                };
                let mut outcome = prep.replay(settings, &opts, progress)?;
                self.replays += 1;
                name_site(prep.snap, &mut outcome);
                self.current = Some(Current {
                    outcome,
                    bisect: Bisect::new(settings.clone()),
                });
            }
            Some(c) => {
                let done = c.bisect.step(prep, progress)?;
                self.replays += 1;
                if let Some(min) = done {
                    if let Some(mut c) = self.current.take() {
                        c.outcome.min_capacity = min;
                        let name = self
                            .tasks
                            .get(self.next)
                            .map(|t| t.0.clone())
                            .unwrap_or_default();
                        self.rows.push(SweepRow {
                            name,
                            outcome: c.outcome,
                        });
                    }
                    self.next += 1;
                }
            }
        }
        Ok(self.is_done())
    }
}

/// The row a sweep would mark best: the smallest `min_capacity` (rows without one last), then
/// the smallest peak reserved, the first of equals.
#[must_use]
pub fn best_row(rows: &[SweepRow]) -> Option<usize> {
    let mut by: BTreeMap<(bool, u64, u64), usize> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        let o = &r.outcome;
        let key = (
            o.min_capacity.is_none(),
            o.min_capacity.unwrap_or(u64::MAX),
            o.peak_reserved,
        );
        by.entry(key).or_insert(i);
    }
    by.into_values().next()
}
