//! Relative time (µs since the first timed event) at every timestep, forward-filled and made
//! non-decreasing, derived on demand from the layout's step events and the trace's time column.
//! Only the running maximum before every [`BLOCK`]-th timestep is stored (8 bytes per 64
//! timesteps instead of 8 per timestep); a lookup replays at most one block.

use memviz_analysis::layout::{Layout, NO_EVENT};
use memviz_snapshot::{DeviceTrace, Snapshot, NO_TIME};

use crate::ticks::StepTimes;

/// Timesteps per stored running maximum.
const BLOCK: usize = 64;

/// The stored part: the first timed event's time and the running maximum before each block.
#[derive(Clone, Debug)]
pub(crate) struct StepTimeIndex {
    t0: i64,
    /// Time before timestep `b * BLOCK` (0 for `b = 0`), non-decreasing.
    block_start: Vec<f64>,
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
    /// `None` when the trace has no times.
    pub(crate) fn build(snap: &Snapshot, device: i64, layout: &Layout) -> Option<Self> {
        let tr = snap.trace(device)?;
        if !tr.has_time() {
            return None;
        }
        let t0 = tr.times().find(|&t| t != NO_TIME)?;
        let events = layout.step_event();
        let mut block_start = Vec::with_capacity(events.len().div_ceil(BLOCK));
        let mut last = 0.0f64;
        for (i, ev) in events.iter().enumerate() {
            if i % BLOCK == 0 {
                block_start.push(last);
            }
            if let Some(t) = event_time(tr, t0, ev) {
                last = last.max(t);
            }
        }
        Some(StepTimeIndex { t0, block_start })
    }

    /// The index with what it derives from.
    pub(crate) fn with<'a>(&'a self, tr: &'a DeviceTrace, layout: &'a Layout) -> DerivedTimes<'a> {
        DerivedTimes {
            index: self,
            tr,
            layout,
        }
    }
}

/// [`StepTimes`] of one layout, read through its [`StepTimeIndex`].
pub(crate) struct DerivedTimes<'a> {
    index: &'a StepTimeIndex,
    tr: &'a DeviceTrace,
    layout: &'a Layout,
}

impl DerivedTimes<'_> {
    /// The times of timesteps `[from, to)` where `from` starts a block.
    fn block(&self, b: usize, to: usize) -> impl Iterator<Item = f64> + '_ {
        let mut last = self.index.block_start.get(b).copied().unwrap_or(0.0);
        self.layout
            .step_event()
            .range(b * BLOCK, to)
            .map(move |ev| {
                if let Some(t) = event_time(self.tr, self.index.t0, ev) {
                    last = last.max(t);
                }
                last
            })
    }
}

impl StepTimes for DerivedTimes<'_> {
    fn len(&self) -> usize {
        self.layout.step_count() as usize
    }

    fn at(&self, i: usize) -> Option<f64> {
        if i >= self.len() {
            return None;
        }
        self.block(i / BLOCK, i + 1).last()
    }

    fn first_reaching(&self, t: f64) -> usize {
        // Blocks starting below t; the answer is in the last of them (or is 0).
        let c = self.index.block_start.partition_point(|&s| s < t);
        let Some(b) = c.checked_sub(1) else {
            return 0;
        };
        let to = ((b + 1) * BLOCK).min(self.len());
        let from = b * BLOCK;
        self.block(b, to)
            .position(|s| s >= t)
            .map_or(to, |k| from + k)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::ticks::StepTimes;

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
        let mut checked = 0;
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
                    continue;
                };
                let want = stored(&snap, device, &layout);
                let got = index.with(snap.trace(device).unwrap(), &layout);
                assert_eq!(got.len(), want.len());
                for (i, &w) in want.iter().enumerate() {
                    assert_eq!(got.at(i), Some(w), "{:?} step {i}", entry.path());
                }
                let probes = want.iter().copied().chain([-1.0, 0.0, 0.5, f64::MAX]);
                for t in probes.flat_map(|t| [t, t + 0.5, t - 0.5]) {
                    assert_eq!(
                        got.first_reaching(t),
                        want.as_slice().first_reaching(t),
                        "{t}"
                    );
                }
                checked += 1;
            }
        }
        eprintln!("{checked} timed devices checked");
    }
}
