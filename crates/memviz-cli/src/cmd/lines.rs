//! `memviz lines FILE [--device D] [--all-frames] [--user-code P] [--json]`: the per-site
//! table ([`memviz_analysis::lines::site_table`]): live bytes at the peak, total bytes, count
//! and largest allocation per site (the innermost user line; docs/sites.md), each followed by
//! the library lines below it (`→ …`, at most [`DETAIL`] per site in the text; all in
//! `--json`'s `detail`). `--all-frames`: the innermost frame, torch and C++ included.

use crate::cli::LinesArgs;
use crate::load;
use crate::out::{stdout, Done};
use memviz_analysis::format::{count, size_short};
use memviz_analysis::layout::{Layout, LayoutOptions, PointMode};
use memviz_analysis::lines::{site_table, LineOptions, LineRow, SiteRow};
use memviz_analysis::site::SiteCache;
use memviz_analysis::timeline;
use std::io::Write;

/// Control characters of a recorded string shown escaped, so a hostile name cannot drive the
/// terminal.
pub(crate) fn printable(s: &str) -> String {
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

/// A site as every command's JSON writes it (`memviz oom`'s `biggest_live_sites`, `memviz
/// leaks`' and `memviz diff`'s `site`): the [`memviz_analysis::site::Site`]'s own
/// serialisation, `{kind, file, line, name, label, detail: {file, line, name, label} | null}`.
pub(crate) fn site_json(site: &memviz_analysis::site::Site) -> serde_json::Value {
    serde_json::to_value(site).unwrap_or_default()
}

/// Library lines shown under a site in the text table.
const DETAIL: usize = 3;

fn location(r: &LineRow) -> String {
    if r.name.is_empty() && r.line == 0 {
        printable(&r.file)
    } else if r.file == memviz_analysis::site::AUTOGRAD_FILE {
        format!(
            "{} (autograd {})",
            memviz_analysis::site::autograd_label(&r.name),
            printable(&r.name)
        )
    } else {
        format!("{}:{} {}", printable(&r.file), r.line, printable(&r.name))
    }
}

/// A row of the JSON output: the site's row with its kind and detail.
fn json_row(r: &SiteRow) -> serde_json::Value {
    serde_json::json!({
        "file": r.row.file,
        "line": r.row.line,
        "name": r.row.name,
        "kind": r.kind,
        "label": r.label,
        "live_at_peak_bytes": r.row.live_at_peak_bytes,
        "total_bytes": r.row.total_bytes,
        "count": r.row.count,
        "largest_bytes": r.row.largest_bytes,
        "detail": r.detail,
    })
}

/// Runs `memviz lines` with the arguments after the command name.
pub fn run(a: &LinesArgs) -> Done {
    let (file, json, wanted) = (a.file.as_str(), a.json, a.device);
    let opts = if a.all_frames {
        LineOptions::ALL_FRAMES
    } else {
        LineOptions::default()
    };
    let user = super::user_code(a.user_code.as_deref())?;
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
    let mut sites = SiteCache::new(&snap, user);
    let rows = site_table(&snap, device, &tl, &layout, opts, &mut sites);
    let mut out = stdout();
    if json {
        let v = serde_json::json!({
            "device": device,
            "peak_step": layout.peak_step,
            "rows": rows.iter().map(json_row).collect::<Vec<_>>(),
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
        .map(|r| &r.row)
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
            location(&r.row),
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3]
        )?;
        for d in r.detail.iter().take(DETAIL) {
            writeln!(
                out,
                "{:>w0$}  {:>w1$}  {:>w2$}  {:>w3$}    → {}",
                size_short(d.live_at_peak_bytes),
                size_short(d.total_bytes),
                count(d.count),
                size_short(d.largest_bytes),
                location(d),
                w0 = w[0],
                w1 = w[1],
                w2 = w[2],
                w3 = w[3]
            )?;
        }
        if r.detail.len() > DETAIL {
            writeln!(
                out,
                "{:>w$}    → … {} more library lines (--json lists all)",
                "",
                r.detail.len() - DETAIL,
                w = w[0] + w[1] + w[2] + w[3] + 6
            )?;
        }
    }
    out.finish()
}
