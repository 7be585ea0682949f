//! `memviz query FILE 'FILTER' [--device D] [--json] [--csv] [--user-code P] [--limit N]`: the
//! allocations of one device that a structured filter keeps ([`memviz_analysis::query`]: the
//! page's filter grammar, `size>=1MiB site:/attn/ at:peak`), their count and bytes, then one
//! row each. `--json`: [`QueryAnswer`]; `--csv`: the page's CSV export
//! ([`memviz_analysis::query::csv`]). A filter that does not parse ends with exit 2 and one
//! line naming the column.

use crate::load;
use crate::out::{stdout, warn, Done, Fail};
use clap::Args;
use memviz_analysis::allocations::{allocations, Allocation, Allocations};
use memviz_analysis::format::{count, duration_us, size_short};
use memviz_analysis::query::{csv, filter, parse_filter, site_columns, FilterMatches};
use memviz_analysis::site::SiteCache;
use memviz_analysis::timeline;
use memviz_snapshot::Snapshot;
use serde::Serialize;
use std::io::Write;

#[derive(Args, Debug)]
pub struct QueryArgs {
    /// The snapshot file.
    pub file: String,
    /// The filter: terms separated by spaces, all must hold, `-term` negates: size>=1MiB,
    /// stream:0, site:/re/ or site:text, frame:…, file:model.py, line:42,
    /// action:alloc|free|start, lifetime>10ms or lifetime>100 (events), at:peak|EVENT|12.5s,
    /// device:N, phase:NAME; a bare word matches the site or any frame. May start with `-`.
    #[arg(allow_hyphen_values = true)]
    pub filter: String,
    /// The device (default: the longest trace).
    #[arg(long)]
    pub device: Option<i64>,
    /// JSON instead of a table.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// CSV (the page's export) instead of a table.
    #[arg(long)]
    pub csv: bool,
    /// Python files that count as your own code besides the default: comma-separated path
    /// prefixes or package paths, or one /regex/ (docs/sites.md).
    #[arg(long, value_name = "PATTERN")]
    pub user_code: Option<String>,
    /// At most N rows (default: all for --json and --csv, 100 in the table); count and bytes
    /// are always of every match.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
}

/// Rows the table shows without `--limit`.
const TABLE_ROWS: usize = 100;

/// One matching allocation of `memviz query --json`.
#[derive(Clone, Debug, Serialize)]
pub struct QueryRow {
    /// The timeline element (row of `Snapshot.allocations()`).
    pub element: u32,
    /// Trace row of the allocation (`null`: present at the start).
    pub alloc_event: Option<u32>,
    /// Trace row of the free (`null`: alive at the end).
    pub free_event: Option<u32>,
    pub addr: u64,
    pub size: u64,
    /// Raw `cudaStream_t`.
    pub stream: u64,
    /// The site's label (docs/sites.md).
    pub site: String,
    /// The site's file and line (the user's line).
    pub file: String,
    pub line: i64,
    pub lifetime_events: u64,
    pub lifetime_us: Option<i64>,
    pub alive_at_peak: bool,
}

/// `memviz query --json`'s answer.
#[derive(Clone, Debug, Serialize)]
pub struct QueryAnswer {
    pub device: i64,
    /// Matching allocations (all of them, whatever `--limit`).
    pub count: usize,
    /// Σ their sizes.
    pub bytes: u64,
    /// `bytes` as text (`12.0MiB`).
    pub size: String,
    /// The matches in element order (at most `--limit`).
    pub rows: Vec<QueryRow>,
}

/// A query's result before formatting.
struct Found {
    snap: std::sync::Arc<Snapshot>,
    allocs: Allocations,
    sites: SiteCache,
    m: FilterMatches,
}

fn find(a: &QueryArgs) -> Result<Found, Fail> {
    let f =
        parse_filter(&a.filter).map_err(|e| crate::error::bad_argument(format!("filter: {e}")))?;
    let user = super::user_code(a.user_code.as_deref())?;
    let snap = load(&a.file)?;
    let device = crate::device::one_device(&a.file, &snap, a.device)?;
    let tl = timeline::build(&snap, device);
    let allocs = allocations(&snap, device, &tl);
    drop(tl);
    let mut sites = SiteCache::new(&snap, user);
    let m = filter(&snap, &allocs, &mut sites, &f);
    for w in &m.warnings {
        warn(&format!("memviz: warning: {w}"));
    }
    Ok(Found {
        snap,
        allocs,
        sites,
        m,
    })
}

fn row(snap: &Snapshot, sites: &mut SiteCache, a: &Allocation) -> QueryRow {
    let (site, file, line) = site_columns(snap, sites, a.stack);
    QueryRow {
        element: a.element,
        alloc_event: a.alloc_event,
        free_event: a.free_event,
        addr: a.addr,
        size: a.size,
        stream: a.stream,
        site,
        file,
        line,
        lifetime_events: a.lifetime_events,
        lifetime_us: a.lifetime_us,
        alive_at_peak: a.alive_at_peak,
    }
}

/// `memviz query --json`'s answer.
pub fn answer(a: &QueryArgs) -> Result<QueryAnswer, Fail> {
    let Found {
        snap,
        allocs,
        mut sites,
        m,
    } = find(a)?;
    let rows = m
        .elements
        .iter()
        .take(a.limit.unwrap_or(usize::MAX))
        .filter_map(|&e| allocs.rows.get(e as usize))
        .map(|r| row(&snap, &mut sites, r))
        .collect();
    Ok(QueryAnswer {
        device: allocs.device,
        count: m.count,
        bytes: m.bytes,
        size: size_short(m.bytes),
        rows,
    })
}

fn event_text(e: Option<u32>, none: &str) -> String {
    e.map_or_else(|| none.to_string(), |e| e.to_string())
}

/// Runs `memviz query` with the arguments after the command name.
pub fn run(a: &QueryArgs) -> Done {
    let mut out = stdout();
    if a.json {
        serde_json::to_writer(&mut out, &answer(a)?)?;
        writeln!(out)?;
        return out.finish();
    }
    let Found {
        snap,
        allocs,
        mut sites,
        m,
    } = find(a)?;
    if a.csv {
        let limit = a.limit.unwrap_or(usize::MAX).min(m.elements.len());
        let elements = m.elements.get(..limit).unwrap_or(&m.elements);
        out.write_all(csv(&snap, &allocs, &mut sites, elements).as_bytes())?;
        return out.finish();
    }
    writeln!(
        out,
        "{}: device {}, {} of {} allocations match, {}",
        a.file,
        allocs.device,
        count(m.count as u64),
        count(allocs.rows.len() as u64),
        size_short(m.bytes)
    )?;
    let limit = a.limit.unwrap_or(TABLE_ROWS);
    let streams = memviz_analysis::versions::stream_ordinals(&snap);
    let cells: Vec<[String; 6]> = m
        .elements
        .iter()
        .take(limit)
        .filter_map(|&e| allocs.rows.get(e as usize))
        .map(|r| {
            let life = match r.lifetime_us {
                Some(us) => format!("{} ev, {}", r.lifetime_events, duration_us(us)),
                None => format!("{} ev", r.lifetime_events),
            };
            let site = super::site_text(sites.site(&snap, r.stack));
            [
                event_text(r.alloc_event, "start"),
                event_text(r.free_event, "-"),
                size_short(r.size),
                streams.get(r.stream).unwrap_or(0).to_string(),
                life,
                site,
            ]
        })
        .collect();
    if cells.is_empty() {
        return out.finish();
    }
    let head = ["alloc", "free", "size", "stream", "lifetime"];
    let mut w = head.map(str::len);
    for c in &cells {
        for (wi, s) in w.iter_mut().zip(c.iter()) {
            *wi = (*wi).max(s.chars().count());
        }
    }
    let line = |c: [&str; 6]| {
        format!(
            "{:>w0$}  {:>w1$}  {:>w2$}  {:>w3$}  {:>w4$}  {}",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3],
            w4 = w[4]
        )
    };
    writeln!(
        out,
        "{}",
        line([head[0], head[1], head[2], head[3], head[4], "site"])
    )?;
    for c in &cells {
        writeln!(out, "{}", line([&c[0], &c[1], &c[2], &c[3], &c[4], &c[5]]))?;
    }
    if m.count > cells.len() {
        writeln!(
            out,
            "… {} more (--limit N, --json or --csv for all)",
            count((m.count - cells.len()) as u64)
        )?;
    }
    out.finish()
}
