//! Validation: the model's segment events replayed as recorded against the trace's own.

use super::{Cancelled, Options, Prepared};
use crate::model::{SegEvent, SegKind};
use memviz_snapshot::Snapshot;
use serde::Serialize;

/// Model against recording, per kind and in order (issue 31 item 2).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Validation {
    pub device: i64,
    pub settings: String,
    pub recorded: Counts,
    pub model: Counts,
    /// Same kinds and sizes in the same order, and the same peak reserved.
    pub matches: bool,
    /// The same segment events at the same trace events, compared as a multiset per trace
    /// event (so only the order inside one release may differ), and the same peak reserved.
    pub matches_per_event: bool,
    /// The first position where the sequences differ: (index, recorded trace row or None,
    /// recorded (kind, size), model (kind, size)).
    pub first_difference: Option<Difference>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    pub index: usize,
    pub recorded: Option<SegEvent>,
    pub model: Option<SegEvent>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub segment_alloc: u64,
    pub segment_free: u64,
    pub segment_map: u64,
    pub segment_unmap: u64,
    pub peak_reserved: u64,
}

fn counts(events: &[SegEvent], peak: u64) -> Counts {
    let mut c = Counts {
        peak_reserved: peak,
        ..Counts::default()
    };
    for e in events {
        match e.kind {
            SegKind::Alloc => c.segment_alloc += 1,
            SegKind::Free => c.segment_free += 1,
            SegKind::Map => c.segment_map += 1,
            SegKind::Unmap => c.segment_unmap += 1,
        }
    }
    c
}

/// Replays `device` as recorded (recorded settings, recorded pressure) and compares the
/// model's segment events with the trace's.
pub fn validate(
    snap: &Snapshot,
    device: i64,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<Validation, Cancelled> {
    let p = Prepared::new(snap, device);
    let out = p.replay(&p.recorded, &Options::default(), progress)?;
    let rec = p.recorded_events();
    let first_difference = (0..rec.len().max(out.seg_events.len()))
        .find(|&k| {
            let (a, b) = (rec.get(k), out.seg_events.get(k));
            a.map(|e| (e.kind, e.size)) != b.map(|e| (e.kind, e.size))
        })
        .map(|index| Difference {
            index,
            recorded: rec.get(index).copied(),
            model: out.seg_events.get(index).copied(),
        });
    let recorded = counts(rec, p.recorded_peak_reserved());
    // The model's events carry the trace row they happened in; the recorded ones carry their
    // own row, which for a release is the row of its first event, so group both by the model's
    // notion: consecutive recorded segment events belong to the malloc or call that follows.
    let grouped = |v: &[SegEvent], by_row: bool| -> Vec<Vec<(u8, u64)>> {
        let mut out: Vec<Vec<(u8, u64)>> = Vec::new();
        let mut last: Option<u32> = None;
        for e in v {
            let key = e.event;
            let contiguous = last.is_some_and(|l| if by_row { key == l + 1 } else { key == l });
            if !contiguous {
                out.push(Vec::new());
            }
            if let Some(g) = out.last_mut() {
                g.push((e.kind as u8, e.size));
            }
            last = Some(key);
        }
        for g in &mut out {
            g.sort_unstable();
        }
        out
    };
    let matches_per_event = grouped(rec, true) == grouped(&out.seg_events, false)
        && p.recorded_peak_reserved() == out.peak_reserved;
    let model = counts(&out.seg_events, out.peak_reserved);
    Ok(Validation {
        device,
        settings: p.recorded.to_string(),
        matches: first_difference.is_none() && recorded.peak_reserved == model.peak_reserved,
        matches_per_event,
        recorded,
        model,
        first_difference,
    })
}
