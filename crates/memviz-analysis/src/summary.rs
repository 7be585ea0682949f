//! `memviz summary`: per-device counts and byte totals.

use crate::devices::{DeviceSegments, SegmentsOf};
use crate::format::{count, size_short};
use crate::timeline;
use memviz_snapshot::{BlockState, Snapshot};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct DeviceSummary {
    pub device: i64,
    pub trace_entries: u64,
    /// Raw action name → count.
    pub actions: BTreeMap<String, u64>,
    pub segments: u64,
    pub blocks: u64,
    pub reserved_bytes: u64,
    /// Σ `size` of `active_allocated` blocks.
    pub allocated_bytes: u64,
    /// Σ requested size of `active_allocated` blocks.
    pub requested_bytes: u64,
    /// Elements of the Active Memory Timeline: allocations + unmatched frees + ghost blocks.
    pub timeline_allocations: u64,
    pub peak_live_bytes: u64,
    pub final_live_bytes: u64,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Summary {
    pub devices: Vec<DeviceSummary>,
    pub warnings: Vec<String>,
}

/// The summary of one device; `segments` are its final segments.
fn device_summary(snap: &Snapshot, d: i64, segments: SegmentsOf<'_>) -> DeviceSummary {
    let mut s = DeviceSummary {
        device: d,
        trace_entries: 0,
        actions: BTreeMap::new(),
        segments: 0,
        blocks: 0,
        reserved_bytes: 0,
        allocated_bytes: 0,
        requested_bytes: 0,
        timeline_allocations: 0,
        peak_live_bytes: 0,
        final_live_bytes: 0,
    };
    if let Some(t) = snap.trace(d) {
        s.trace_entries = t.len() as u64;
        // Count per action value first (no string per event), then name them.
        let mut counts: rustc_hash::FxHashMap<memviz_snapshot::Action, u64> =
            rustc_hash::FxHashMap::default();
        for a in t.actions() {
            *counts.entry(a).or_insert(0) += 1;
        }
        for (a, n) in counts {
            *s.actions
                .entry(snap.action_name(a).to_string())
                .or_insert(0) += n;
        }
    }
    for (_, seg) in segments.iter(snap) {
        s.segments += 1;
        // Sizes come from the file: saturate rather than overflow on hostile ones.
        s.reserved_bytes = s.reserved_bytes.saturating_add(seg.total_size);
        for b in snap.segment_blocks(seg) {
            s.blocks += 1;
            if b.state == BlockState::ActiveAllocated {
                s.allocated_bytes = s.allocated_bytes.saturating_add(b.size);
                s.requested_bytes = s.requested_bytes.saturating_add(b.requested_size);
            }
        }
    }
    // Totals only: the full timeline (every element and step) is not needed here.
    let tl = timeline::live_totals_in(snap, d, segments);
    s.timeline_allocations = tl.elements;
    s.peak_live_bytes = tl.peak_live_bytes;
    s.final_live_bytes = tl.final_live_bytes;
    s
}

/// Every device's summary in turn, ascending by device, computed as it is taken: O(segments,
/// blocks and events of all devices), whatever the number of devices (each reads its own
/// segments from one [`DeviceSegments`]).
pub fn device_summaries(snap: &Snapshot) -> impl Iterator<Item = DeviceSummary> + '_ {
    let index = DeviceSegments::new(snap);
    snap.devices()
        .into_iter()
        .map(move |d| device_summary(snap, d, SegmentsOf::Indexed(index.of(d))))
}

pub fn summarize(snap: &Snapshot) -> Summary {
    Summary {
        devices: device_summaries(snap).collect(),
        warnings: snap.warnings.clone(),
    }
}

/// [`Summary::to_json`] of `snap` written to `w` device by device, without holding the
/// summaries (a file with a million devices has a summary of hundreds of MB): the same bytes.
pub fn write_json(snap: &Snapshot, w: &mut impl std::io::Write) -> std::io::Result<()> {
    w.write_all(b"{\"devices\":[")?;
    for (i, d) in device_summaries(snap).enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        serde_json::to_writer(&mut *w, &d)?;
    }
    w.write_all(b"],\"warnings\":")?;
    serde_json::to_writer(&mut *w, &snap.warnings)?;
    w.write_all(b"}")
}

impl Summary {
    /// The `--json` shape: `{"devices": [...], "warnings": [...]}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }

    /// A readable table.
    pub fn to_table(&self) -> String {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.write_table(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// [`Summary::to_table`] written to `w`, a row at a time (the cells are formatted twice,
    /// once for the column widths, rather than kept).
    pub fn write_table(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        const HEADER: [&str; 10] = [
            "device",
            "trace entries",
            "segments",
            "blocks",
            "reserved",
            "allocated",
            "requested",
            "timeline allocs",
            "peak live",
            "final live",
        ];
        let cells = |d: &DeviceSummary| -> [String; 10] {
            [
                d.device.to_string(),
                count(d.trace_entries),
                count(d.segments),
                count(d.blocks),
                size_short(d.reserved_bytes),
                size_short(d.allocated_bytes),
                size_short(d.requested_bytes),
                count(d.timeline_allocations),
                size_short(d.peak_live_bytes),
                size_short(d.final_live_bytes),
            ]
        };
        let mut widths = HEADER.map(str::len);
        for d in &self.devices {
            for (wi, c) in widths.iter_mut().zip(cells(d).iter()) {
                *wi = (*wi).max(c.len());
            }
        }
        let line = |cells: &[&str], w: &mut dyn std::io::Write| -> std::io::Result<()> {
            let parts: Vec<String> = cells
                .iter()
                .zip(widths)
                .enumerate()
                .map(|(i, (c, width))| {
                    if i == 0 {
                        format!("{c:<width$}")
                    } else {
                        format!("{c:>width$}")
                    }
                })
                .collect();
            writeln!(w, "{}", parts.join("  ").trim_end())
        };
        line(&HEADER, w)?;
        for d in &self.devices {
            let c = cells(d);
            line(&c.each_ref().map(String::as_str), w)?;
        }
        if self.devices.is_empty() {
            writeln!(w, "(no devices: the snapshot is empty)")?;
        }
        for d in &self.devices {
            if !d.actions.is_empty() {
                let acts: Vec<String> = d
                    .actions
                    .iter()
                    .map(|(k, v)| format!("{k} {}", count(*v)))
                    .collect();
                writeln!(w, "device {} actions: {}", d.device, acts.join(", "))?;
            }
        }
        if !self.warnings.is_empty() {
            writeln!(w, "{} warning(s):", self.warnings.len())?;
            for x in &self.warnings {
                writeln!(w, "  - {x}")?;
            }
        }
        Ok(())
    }
}
