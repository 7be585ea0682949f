//! `memviz ranks FILE… [--json]`: many snapshots of one job side by side
//! ([`memviz_analysis::ranks`]): per file the device with the largest peak, its peak, final and
//! reserved bytes, the top sites at the peak and the `oom` events; sorted by peak, outliers
//! flagged ([`memviz_analysis::ranks::OUTLIER_RULE`]). Files are read one at a time; a file that
//! cannot be read ends the command (exit 2) naming it.

use crate::cli::RanksArgs;
use crate::load;
use crate::out::{stdout, Done, Fail};
use memviz_analysis::format::size_short;
use memviz_analysis::ranks::{flag_outliers, sort_by_peak, summarise, RankRow, OUTLIER_RULE};
use serde::Serialize;
use std::io::Write;

/// Control characters of a recorded string (a site label) or a file name shown escaped.
fn printable(s: &str) -> String {
    s.chars().flat_map(char::escape_debug).collect::<String>()
}

/// `memviz ranks --json`'s answer.
#[derive(Clone, Debug, Serialize)]
pub struct RanksAnswer {
    /// One row per file, sorted by peak, outliers flagged.
    pub rows: Vec<RankRow>,
    /// How outliers are flagged ([`OUTLIER_RULE`]).
    pub rule: &'static str,
}

/// Runs `memviz ranks` with the arguments after the command name.
pub fn run(a: &RanksArgs) -> Done {
    let answer = answer(a)?;
    let mut out = stdout();
    if a.json {
        serde_json::to_writer(&mut out, &answer)?;
        writeln!(out)?;
        return out.finish();
    }
    let rows = answer.rows;
    let files: Vec<String> = rows.iter().map(|r| printable(&r.file)).collect();
    let width = files
        .iter()
        .map(|f| f.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(
        out,
        "{:<width$}  {:>6}  {:>10}  {:>10}  {:>10}  {:>4}  top sites at the peak",
        "file", "device", "peak", "final", "reserved", "ooms"
    )?;
    for (r, f) in rows.iter().zip(&files) {
        let device = r.device.map_or_else(|| "-".to_string(), |d| d.to_string());
        let sites: Vec<String> = r
            .top_sites
            .iter()
            .map(|s| format!("{} {}", printable(&s.label), size_short(s.bytes)))
            .collect();
        writeln!(
            out,
            "{f:<width$}  {device:>6}  {:>10}  {:>10}  {:>10}  {:>4}  {}{}",
            size_short(r.peak_bytes),
            size_short(r.final_bytes),
            size_short(r.reserved_bytes),
            r.oom_events,
            if r.outlier { "OUTLIER  " } else { "" },
            sites.join(", "),
        )?;
    }
    let n = rows.iter().filter(|r| r.outlier).count();
    writeln!(out, "{n} outlier(s); rule: {OUTLIER_RULE}")?;
    out.finish()
}

/// `memviz ranks`' rows and rule: the files read one at a time.
pub fn answer(a: &RanksArgs) -> Result<RanksAnswer, Fail> {
    let mut rows: Vec<RankRow> = Vec::with_capacity(a.files.len());
    for file in &a.files {
        let snap = load(file)?;
        let mut row = summarise(&snap);
        drop(snap);
        row.file.clone_from(file);
        rows.push(row);
    }
    flag_outliers(&mut rows);
    sort_by_peak(&mut rows);
    Ok(RanksAnswer {
        rows,
        rule: OUTLIER_RULE,
    })
}
