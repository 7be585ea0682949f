//! `memviz lines FILE [--device D] [--all-frames] [--json]`: the per-source-line table
//! (memviz_analysis::lines): live bytes at the peak, total bytes, count and largest allocation
//! per `filename:line`, attributed to the innermost user frame (`--all-frames`: the innermost
//! frame, torch and C++ included).

use crate::cli::LinesArgs;
use crate::load;
use crate::out::{stdout, Done};
use memviz_analysis::format::{count, size_short};
use memviz_analysis::layout::{Layout, LayoutOptions, PointMode};
use memviz_analysis::lines::{line_table, LineOptions, LineRow};
use memviz_analysis::timeline;
use std::io::Write;

/// Control characters of a recorded string shown escaped, so a hostile name cannot drive the
/// terminal.
fn printable(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

fn location(r: &LineRow) -> String {
    if r.name.is_empty() && r.line == 0 {
        printable(&r.file)
    } else {
        format!("{}:{} {}", printable(&r.file), r.line, printable(&r.name))
    }
}

/// Runs `memviz lines` with the arguments after the command name.
pub fn run(a: &LinesArgs) -> Done {
    let (file, json, wanted) = (a.file.as_str(), a.json, a.device);
    let opts = if a.all_frames {
        LineOptions::ALL_FRAMES
    } else {
        LineOptions::default()
    };
    let snap = load(file)?;
    let devices = snap.devices();
    let device = match wanted {
        Some(d) if !devices.contains(&d) => {
            let list: Vec<String> = devices.iter().map(i64::to_string).collect();
            return Err(format!(
                "{file}: no device {d} (devices: {})",
                if list.is_empty() {
                    "none".to_string()
                } else {
                    list.join(", ")
                }
            )
            .into());
        }
        Some(d) => d,
        None => snap.default_device(),
    };
    let tl = timeline::build(&snap, device);
    // Compact: the numbers of the layout without its polylines, which only drawing needs (in
    // exact mode they take up to 192 MiB: 143 MB for a 1 MB trace of 3,500 segments freed
    // oldest first).
    let layout = Layout::build(
        &tl,
        LayoutOptions {
            mode: PointMode::Compact,
            ..LayoutOptions::default()
        },
    );
    let rows = line_table(&snap, device, &tl, &layout, opts);
    let mut out = stdout();
    if json {
        let v = serde_json::json!({
            "device": device,
            "peak_step": layout.peak_step,
            "rows": rows,
        });
        writeln!(out, "{v}")?;
        return out.finish();
    }
    writeln!(
        out,
        "{file}: device {device}, {} elements, peak {} at timestep {}",
        count(tl.elements.len() as u64),
        size_short(layout.peak_bytes),
        layout.peak_step
    )?;
    if rows.is_empty() {
        writeln!(out, "no allocations")?;
        return out.finish();
    }
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            [
                size_short(r.live_at_peak_bytes),
                size_short(r.total_bytes),
                count(r.count),
                size_short(r.largest_bytes),
            ]
        })
        .collect();
    let head = ["live@peak", "total", "count", "largest"];
    let mut w = head.map(str::len);
    for c in &cells {
        for (wi, s) in w.iter_mut().zip(c) {
            *wi = (*wi).max(s.len());
        }
    }
    writeln!(
        out,
        "{:>w0$}  {:>w1$}  {:>w2$}  {:>w3$}  location",
        head[0],
        head[1],
        head[2],
        head[3],
        w0 = w[0],
        w1 = w[1],
        w2 = w[2],
        w3 = w[3]
    )?;
    for (c, r) in cells.iter().zip(&rows) {
        writeln!(
            out,
            "{:>w0$}  {:>w1$}  {:>w2$}  {:>w3$}  {}",
            c[0],
            c[1],
            c[2],
            c[3],
            location(r),
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3]
        )?;
    }
    out.finish()
}
