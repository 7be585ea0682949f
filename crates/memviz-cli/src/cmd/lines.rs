//! `memviz lines FILE [--device D] [--all-frames] [--user-code P] [--json]`: the per-site
//! table ([`memviz_analysis::lines::site_table`]): live bytes at the peak, total bytes, count
//! and largest allocation per site (the innermost user line; docs/sites.md), each followed by
//! the library lines below it (`→ …`, at most [`DETAIL`] per site in the text; all in
//! `--json`'s `detail`). `--all-frames`: the innermost frame, torch and C++ included.

use crate::cli::LinesArgs;
use crate::load;
use crate::out::{stdout, Done, Fail};
use memviz_analysis::format::{count, size_short};
use memviz_analysis::lines::{site_table, LineOptions, LineRow, SiteRow};
use memviz_analysis::site::{SiteCache, SiteKind};
use memviz_analysis::steps::Steps;
use memviz_analysis::timeline;
use serde::Serialize;
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

/// A row of `memviz lines --json`: the site's row with its kind, label and detail.
#[derive(Clone, Debug, Serialize)]
pub struct LinesRow {
    pub file: String,
    pub line: i64,
    pub name: String,
    /// `user`, `library`, `autograd`, `native` or `none`.
    pub kind: SiteKind,
    pub label: String,
    pub live_at_peak_bytes: u64,
    pub total_bytes: u64,
    pub count: u64,
    pub largest_bytes: u64,
    /// The library lines below the site.
    pub detail: Vec<LineRow>,
}

impl From<SiteRow> for LinesRow {
    fn from(r: SiteRow) -> LinesRow {
        LinesRow {
            file: r.row.file,
            line: r.row.line,
            name: r.row.name,
            kind: r.kind,
            label: r.label,
            live_at_peak_bytes: r.row.live_at_peak_bytes,
            total_bytes: r.row.total_bytes,
            count: r.row.count,
            largest_bytes: r.row.largest_bytes,
            detail: r.detail,
        }
    }
}

/// `memviz lines --json`'s answer.
#[derive(Clone, Debug, Serialize)]
pub struct LinesAnswer {
    pub device: i64,
    /// The timestep of the peak.
    pub peak_step: u64,
    pub rows: Vec<LinesRow>,
}

/// `memviz lines --json`'s answer.
pub fn answer(a: &LinesArgs) -> Result<LinesAnswer, Fail> {
    let t = table(a)?;
    Ok(LinesAnswer {
        device: t.device,
        peak_step: t.peak_step,
        rows: t.rows.into_iter().map(LinesRow::from).collect(),
    })
}

/// The table of one device and what its text heading says.
struct Table {
    device: i64,
    peak_step: u64,
    peak_bytes: u64,
    elements: usize,
    rows: Vec<SiteRow>,
}

fn table(a: &LinesArgs) -> Result<Table, Fail> {
    let (file, wanted) = (a.file.as_str(), a.device);
    let opts = if a.all_frames {
        LineOptions::ALL_FRAMES
    } else {
        LineOptions::default()
    };
    let user = super::user_code(a.user_code.as_deref())?;
    let snap = load(file)?;
    let device = crate::device::one_device(file, &snap, wanted)?;
    let tl = timeline::build(&snap, device);
    // The step model: the numbers of the layout without its polylines, which only drawing
    // needs (in exact mode they take up to 192 MiB).
    let layout = Steps::build(&tl);
    let mut sites = SiteCache::new(&snap, user);
    let rows = site_table(&snap, device, &tl, &layout, opts, &mut sites);
    Ok(Table {
        device,
        peak_step: u64::from(layout.peak_step),
        peak_bytes: layout.peak_bytes,
        elements: tl.elements.len(),
        rows,
    })
}

/// Runs `memviz lines` with the arguments after the command name.
pub fn run(a: &LinesArgs) -> Done {
    let file = a.file.as_str();
    let mut out = stdout();
    if a.json {
        serde_json::to_writer(&mut out, &answer(a)?)?;
        writeln!(out)?;
        return out.finish();
    }
    let Table {
        device,
        peak_step,
        peak_bytes,
        elements,
        rows,
    } = table(a)?;
    writeln!(
        out,
        "{file}: device {device}, {} elements, peak {} at timestep {peak_step}",
        count(elements as u64),
        size_short(peak_bytes),
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
