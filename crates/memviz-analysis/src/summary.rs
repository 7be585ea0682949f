//! `memviz summary`: per-device counts and byte totals.

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

pub fn summarize(snap: &Snapshot) -> Summary {
    let devices = snap
        .devices()
        .into_iter()
        .map(|d| {
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
            for seg in snap.segments.iter().filter(|x| x.device == d) {
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
            let tl = timeline::live_totals(snap, d);
            s.timeline_allocations = tl.elements;
            s.peak_live_bytes = tl.peak_live_bytes;
            s.final_live_bytes = tl.final_live_bytes;
            s
        })
        .collect();
    Summary {
        devices,
        warnings: snap.warnings.clone(),
    }
}

impl Summary {
    /// The `--json` shape: `{"devices": [...], "warnings": [...]}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }

    /// A readable table.
    pub fn to_table(&self) -> String {
        let header = [
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
        let rows: Vec<Vec<String>> = self
            .devices
            .iter()
            .map(|d| {
                vec![
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
            })
            .collect();
        let widths: Vec<usize> = (0..header.len())
            .map(|c| {
                rows.iter()
                    .map(|r| r[c].len())
                    .chain([header[c].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        let line = |cells: Vec<&str>, out: &mut String| {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if i == 0 {
                        format!("{c:<w$}", w = widths[i])
                    } else {
                        format!("{c:>w$}", w = widths[i])
                    }
                })
                .collect();
            out.push_str(parts.join("  ").trim_end());
            out.push('\n');
        };
        line(header.to_vec(), &mut out);
        for r in &rows {
            line(r.iter().map(|s| s.as_str()).collect(), &mut out);
        }
        if self.devices.is_empty() {
            out.push_str("(no devices: the snapshot is empty)\n");
        }
        for d in &self.devices {
            if !d.actions.is_empty() {
                let acts: Vec<String> = d
                    .actions
                    .iter()
                    .map(|(k, v)| format!("{k} {}", count(*v)))
                    .collect();
                out.push_str(&format!(
                    "device {} actions: {}\n",
                    d.device,
                    acts.join(", ")
                ));
            }
        }
        if !self.warnings.is_empty() {
            out.push_str(&format!("{} warning(s):\n", self.warnings.len()));
            for w in &self.warnings {
                out.push_str(&format!("  - {w}\n"));
            }
        }
        out
    }
}
