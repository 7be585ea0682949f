//! Many snapshots side by side (`memviz ranks`, the Python API's `memviz.ranks`): one
//! [`RankRow`] per file, from [`summarise`], then [`flag_outliers`] over all of them and
//! [`sort_by_peak`].
//!
//! A row describes the file's device with the largest peak of live bytes (the lowest device on
//! ties): its peak, its live bytes at the end, its reserved bytes (the snapshot's segments), and
//! the [`TOP_SITES`] allocation sites holding the most bytes at its peak (the legend's labels,
//! [`crate::site::sites_at_peak_by_scan`]). `oom_events` counts the `oom` events of every device, so an
//! OOM on another device than the one shown is not missed.
//!
//! The outlier rule ([`OUTLIER_RULE`]): with at least [`OUTLIER_MIN_FILES`] files, a file is an
//! outlier when its peak is above both 1.25 × the median peak and the median + 3 × the median
//! absolute deviation (MAD) of the peaks. The ratio keeps a tight fleet (MAD near 0) from
//! flagging a rank a few bytes over the rest; the MAD keeps a widely spread fleet from flagging
//! its natural top.

use crate::site::sites_at_peak_by_scan;
use crate::steps::Steps;
use crate::summary::device_summaries;
use crate::timeline;
use memviz_snapshot::Snapshot;
use serde::{Deserialize, Serialize};

/// How many allocation sites a row names.
pub const TOP_SITES: usize = 3;

/// Below this many files no file is flagged (a median of two says nothing).
pub const OUTLIER_MIN_FILES: usize = 3;

/// The outlier rule in words (the JSON's `rule`).
pub const OUTLIER_RULE: &str = "peak_bytes > max(1.25 × median, median + 3 × MAD) of the files' peaks (MAD: median absolute deviation); needs at least 3 files";

/// One allocation site at the peak.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    /// `basename:line:name` of the innermost user frame, or `<no frames>`.
    pub label: String,
    /// Bytes of the site live at the peak.
    pub bytes: u64,
}

/// One file of a fleet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankRow {
    /// The file's name as the caller gave it ([`summarise`] leaves it empty).
    pub file: String,
    /// The device described (largest peak); `None` for a snapshot with no device at all.
    pub device: Option<i64>,
    pub peak_bytes: u64,
    /// Live bytes at the end of the trace.
    pub final_bytes: u64,
    /// Σ sizes of the device's segments in the snapshot.
    pub reserved_bytes: u64,
    /// `oom` events of every device.
    pub oom_events: u64,
    /// The [`TOP_SITES`] sites with the most bytes at the peak, largest first.
    pub top_sites: Vec<Site>,
    /// Set by [`flag_outliers`].
    pub outlier: bool,
}

/// The row of one snapshot (`file` empty, `outlier` false). Linear in the snapshot: one
/// summary pass over every device, then the timeline and step model of the chosen one.
pub fn summarise(snap: &Snapshot) -> RankRow {
    let mut row = RankRow {
        file: String::new(),
        device: None,
        peak_bytes: 0,
        final_bytes: 0,
        reserved_bytes: 0,
        oom_events: 0,
        top_sites: Vec::new(),
        outlier: false,
    };
    for s in device_summaries(snap) {
        row.oom_events = row
            .oom_events
            .saturating_add(s.actions.get("oom").copied().unwrap_or(0));
        // Strictly greater: the lowest device wins ties (devices come ascending).
        if row.device.is_none() || s.peak_live_bytes > row.peak_bytes {
            row.device = Some(s.device);
            row.peak_bytes = s.peak_live_bytes;
            row.final_bytes = s.final_live_bytes;
            row.reserved_bytes = s.reserved_bytes;
        }
    }
    if let Some(d) = row.device {
        let tl = timeline::build(snap, d);
        let steps = Steps::build(&tl);
        row.top_sites = sites_at_peak_by_scan(snap, d, &tl, &steps, TOP_SITES)
            .into_iter()
            .map(|e| Site {
                label: e.label,
                bytes: e.bytes,
            })
            .collect();
    }
    row
}

/// The median of sorted values (the mean of the middle two for an even count); 0 when empty.
fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The threshold above which a peak is an outlier ([`OUTLIER_RULE`]); `None` with fewer than
/// [`OUTLIER_MIN_FILES`] peaks.
pub fn outlier_threshold(peaks: &[u64]) -> Option<f64> {
    if peaks.len() < OUTLIER_MIN_FILES {
        return None;
    }
    let mut v: Vec<f64> = peaks.iter().map(|&p| p as f64).collect();
    v.sort_by(f64::total_cmp);
    let med = median(&v);
    let mut dev: Vec<f64> = v.iter().map(|p| (p - med).abs()).collect();
    dev.sort_by(f64::total_cmp);
    let mad = median(&dev);
    Some((1.25 * med).max(med + 3.0 * mad))
}

/// Sets `outlier` on every row by [`OUTLIER_RULE`] (all false with too few rows).
pub fn flag_outliers(rows: &mut [RankRow]) {
    let peaks: Vec<u64> = rows.iter().map(|r| r.peak_bytes).collect();
    let threshold = outlier_threshold(&peaks);
    for r in rows {
        r.outlier = threshold.is_some_and(|t| r.peak_bytes as f64 > t);
    }
}

/// Peak descending, then file name ascending (a stable, deterministic order).
pub fn sort_by_peak(rows: &mut [RankRow]) {
    rows.sort_by(|a, b| {
        b.peak_bytes
            .cmp(&a.peak_bytes)
            .then_with(|| a.file.cmp(&b.file))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(file: &str, peak: u64) -> RankRow {
        RankRow {
            file: file.into(),
            device: Some(0),
            peak_bytes: peak,
            final_bytes: 0,
            reserved_bytes: 0,
            oom_events: 0,
            top_sites: Vec::new(),
            outlier: false,
        }
    }

    fn flagged(peaks: &[u64]) -> Vec<bool> {
        let mut rows: Vec<RankRow> = peaks
            .iter()
            .enumerate()
            .map(|(i, &p)| row(&i.to_string(), p))
            .collect();
        flag_outliers(&mut rows);
        rows.iter().map(|r| r.outlier).collect()
    }

    #[test]
    fn one_rank_far_above_a_tight_fleet_is_flagged() {
        assert_eq!(
            flagged(&[100, 100, 100, 100, 200]),
            [false, false, false, false, true]
        );
        // A few percent over identical ranks (MAD 0) is not an outlier: the 1.25 ratio holds.
        assert_eq!(flagged(&[100, 100, 100, 110]), [false; 4]);
    }

    #[test]
    fn a_spread_fleet_flags_only_beyond_three_mads() {
        // median 100, MAD 20: threshold max(125, 160) = 160; 140 is above 1.25 × median but
        // within 3 MADs.
        assert_eq!(
            flagged(&[60, 80, 100, 100, 120, 140, 161]),
            [false, false, false, false, false, false, true]
        );
        assert_eq!(outlier_threshold(&[60, 80, 100, 120, 140]), Some(160.0));
    }

    #[test]
    fn too_few_files_flag_nothing_and_extremes_do_not_panic() {
        assert_eq!(flagged(&[1, 1_000_000]), [false, false]);
        assert_eq!(flagged(&[]), Vec::<bool>::new());
        assert_eq!(
            flagged(&[u64::MAX, u64::MAX, 0, 0, 0]),
            [true, true, false, false, false]
        );
        assert_eq!(flagged(&[0, 0, 0]), [false; 3]);
    }

    #[test]
    fn rows_sort_by_peak_then_name() {
        let mut rows = vec![row("b", 5), row("a", 5), row("c", 9)];
        sort_by_peak(&mut rows);
        let names: Vec<&str> = rows.iter().map(|r| r.file.as_str()).collect();
        assert_eq!(names, ["c", "a", "b"]);
    }
}
