//! Relative time (µs since the first timed event) at every timestep, forward-filled and made
//! non-decreasing (the running maximum: events out of order do not go back), derived on demand
//! from the layout's step events and the trace's time column. Only the running maximum before
//! every [`BLOCK`]-th timestep is stored (8 bytes per 64 timesteps instead of 8 per timestep);
//! a lookup replays at most one block, and a [`DerivedTimes`] keeps the last few blocks it
//! replayed (sequential lookups, as a scene build makes, cost one replay per block).
//!
//! **Usable times** (else the time axis is not offered and the x axis stays in event order):
//! the trace has a time column, the step times span more than 0 µs (not all equal), and at most
//! a quarter of the timed step events are earlier than an event before them (more than that is
//! not a clock the running maximum can repair: most of the trace would collapse).

use std::cell::RefCell;

use memviz_present::layout::{Layout, NO_EVENT};
use memviz_snapshot::{DeviceTrace, Snapshot, NO_TIME};

/// Timesteps per stored running maximum.
const BLOCK: usize = 64;
/// Blocks a [`DerivedTimes`] keeps replayed (direct-mapped by block number).
const CACHED_BLOCKS: usize = 8;

/// Replayed blocks: (block number, its times), direct-mapped by block number.
type BlockCache = [(usize, [f64; BLOCK]); CACHED_BLOCKS];

/// The stored part: the first timed event's time and the running maximum before each block.
#[derive(Clone, Debug)]
pub(crate) struct StepTimeIndex {
    t0: i64,
    /// Time before timestep `b * BLOCK` (0 for `b = 0`), non-decreasing.
    block_start: Vec<f64>,
    /// Timesteps.
    steps: usize,
    /// The time of timestep 0 and of the last timestep.
    first: f64,
    last: f64,
}

/// µs since `t0` of a timestep's event, when it has a time.
fn event_time(tr: &DeviceTrace, t0: i64, ev: u32) -> Option<f64> {
    if ev == NO_EVENT {
        return None;
    }
    tr.time_us(ev as usize)
        .filter(|&t| t != NO_TIME)
        .map(|t| t.saturating_sub(t0) as f64)
}

impl StepTimeIndex {
    /// `None` when the trace has no usable times (see the module docs).
    pub(crate) fn build(snap: &Snapshot, device: i64, layout: &Layout) -> Option<Self> {
        let tr = snap.trace(device)?;
        if !tr.has_time() {
            return None;
        }
        let t0 = tr.times().find(|&t| t != NO_TIME)?;
        let events = layout.step_event();
        let mut block_start = Vec::with_capacity(events.len().div_ceil(BLOCK));
        let mut last = 0.0f64;
        let mut first = None;
        let (mut timed, mut backwards) = (0usize, 0usize);
        let mut prev_event = NO_EVENT;
        for (i, ev) in events.iter().enumerate() {
            if i % BLOCK == 0 {
                block_start.push(last);
            }
            if let Some(t) = event_time(tr, t0, ev) {
                // A slide repeats its free's event: count each event once.
                if ev != prev_event {
                    timed += 1;
                    if t < last {
                        backwards += 1;
                    }
                }
                last = last.max(t);
            }
            prev_event = ev;
            first.get_or_insert(last);
        }
        let first = first?;
        if last <= first || backwards * 4 > timed {
            return None;
        }
        Some(StepTimeIndex {
            t0,
            block_start,
            steps: events.len(),
            first,
            last,
        })
    }

    /// The index with what it derives from.
    pub(crate) fn with<'a>(&'a self, tr: &'a DeviceTrace, layout: &'a Layout) -> DerivedTimes<'a> {
        DerivedTimes {
            index: self,
            tr,
            layout,
            cache: RefCell::new(Box::new([(usize::MAX, [0.0; BLOCK]); CACHED_BLOCKS])),
        }
    }

    /// The time axis's fitted range: the times of timestep 0 and of the end of the trace.
    pub(crate) fn full_range(&self) -> (f64, f64) {
        (self.first, self.last)
    }
}

/// The times of one layout, read through its [`StepTimeIndex`].
pub(crate) struct DerivedTimes<'a> {
    index: &'a StepTimeIndex,
    tr: &'a DeviceTrace,
    layout: &'a Layout,
    /// Replayed blocks: (block number, its times); 4 KiB, boxed.
    cache: RefCell<Box<BlockCache>>,
}

impl DerivedTimes<'_> {
    /// Number of timesteps.
    pub(crate) fn len(&self) -> usize {
        self.index.steps
    }

    /// The time of timestep `i` (clamped to the trace).
    pub(crate) fn at(&self, i: usize) -> f64 {
        let n = self.len();
        if n == 0 {
            return 0.0;
        }
        let i = i.min(n - 1);
        let b = i / BLOCK;
        let mut cache = self.cache.borrow_mut();
        let slot = &mut cache[b % CACHED_BLOCKS];
        if slot.0 != b {
            let mut last = self.index.block_start.get(b).copied().unwrap_or(0.0);
            let to = ((b + 1) * BLOCK).min(n);
            for (k, ev) in self.layout.step_event().range(b * BLOCK, to).enumerate() {
                if let Some(t) = event_time(self.tr, self.index.t0, ev) {
                    last = last.max(t);
                }
                if let Some(s) = slot.1.get_mut(k) {
                    *s = last;
                }
            }
            slot.0 = b;
        }
        slot.1.get(i % BLOCK).copied().unwrap_or(0.0)
    }

    /// Mean µs per timestep: the slope outside the trace.
    fn slope(&self) -> f64 {
        let (first, last) = self.index.full_range();
        ((last - first) / self.len().max(1) as f64).max(1e-9)
    }

    /// The time at a (fractional) timestep `x` (see `crate::xaxis`).
    pub(crate) fn time_at_x(&self, x: f64) -> f64 {
        let n = self.len();
        let (first, last) = self.index.full_range();
        if n == 0 || x.is_nan() {
            return first;
        }
        if x < 0.0 {
            return first + x * self.slope();
        }
        if x >= n as f64 {
            return last + (x - n as f64) * self.slope();
        }
        let i = x.floor() as usize;
        if i + 1 >= n {
            return last;
        }
        let (a, b) = (self.at(i), self.at(i + 1));
        a + (x - i as f64) * (b - a)
    }

    /// The largest timestep `x` with `time_at_x(x) <= t` (see `crate::xaxis`).
    pub(crate) fn x_at_time(&self, t: f64) -> f64 {
        let n = self.len();
        let (first, last) = self.index.full_range();
        if n == 0 || t.is_nan() {
            return 0.0;
        }
        if t < first {
            return (t - first) / self.slope();
        }
        if t >= last {
            return n as f64 + (t - last) / self.slope();
        }
        // The first timestep after t: in the last block starting at or before t (the next
        // block's start is the time of this block's last step, which is after t).
        let c = self.index.block_start.partition_point(|&s| s <= t);
        let b = c.saturating_sub(1);
        let to = ((b + 1) * BLOCK).min(n);
        let j = (b * BLOCK..to).find(|&j| self.at(j) > t).unwrap_or(to);
        let Some(k) = j.checked_sub(1) else {
            return 0.0;
        };
        let (a, bt) = (self.at(k), self.at(j.min(n - 1)));
        if bt > a {
            k as f64 + ((t - a) / (bt - a)).clamp(0.0, 1.0)
        } else {
            k as f64
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// What the viewer stored before: every timestep's time.
    fn stored(snap: &Snapshot, device: i64, layout: &Layout) -> Vec<f64> {
        let tr = snap.trace(device).unwrap();
        let t0 = tr.times().find(|&t| t != NO_TIME).unwrap();
        let mut last = 0.0f64;
        let mut out = Vec::new();
        for ev in layout.step_event().iter() {
            if let Some(t) = event_time(tr, t0, ev) {
                last = last.max(t);
            }
            out.push(last);
        }
        out
    }

    #[test]
    fn derived_times_match_stored_ones_on_the_corpus() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/real");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!("note: {} not found; test skipped", dir.display());
            return;
        };
        let (mut checked, mut unusable) = (0, 0);
        for entry in entries.flatten() {
            let Ok(bytes) = std::fs::read(entry.path()) else {
                continue;
            };
            let Ok(snap) = memviz_snapshot::load_slice(&bytes) else {
                continue;
            };
            for device in snap.devices() {
                let tl = memviz_analysis::timeline::build(&snap, device);
                let layout = Layout::build(&tl, Default::default());
                let Some(index) = StepTimeIndex::build(&snap, device, &layout) else {
                    unusable += usize::from(snap.trace(device).is_some_and(|t| t.has_time()));
                    continue;
                };
                let want = stored(&snap, device, &layout);
                let got = index.with(snap.trace(device).unwrap(), &layout);
                assert_eq!(got.len(), want.len());
                // Backwards too (the cache is replaced, not trusted).
                for (i, &w) in want.iter().enumerate().rev() {
                    assert_eq!(got.at(i), w, "{:?} step {i}", entry.path());
                }
                let n = want.len();
                for (i, &w) in want.iter().enumerate().step_by(7) {
                    assert_eq!(
                        got.time_at_x(i as f64),
                        if i + 1 >= n { *want.last().unwrap() } else { w }
                    );
                    // The inverse: the last timestep at that time (a time shared by several
                    // timesteps maps to the end of their run).
                    let x = got.x_at_time(w);
                    let last_equal = want.partition_point(|&s| s <= w);
                    assert!(
                        (x - last_equal.saturating_sub(1) as f64).abs() < 1e-9 || last_equal == n,
                        "{:?} step {i}: {x} vs {last_equal}",
                        entry.path()
                    );
                    assert!((got.time_at_x(x) - w).abs() <= 1e-6 * w.max(1.0));
                }
                checked += 1;
            }
        }
        // (On the corpus: the two not usable are one-event traces.)
        eprintln!("{checked} timed devices checked, {unusable} with times not usable");
    }
}
