//! [`csv`]: the matching rows as the page exports them (and `memviz query --csv`).

use super::lifetime_us_text;
use crate::allocations::Allocations;
use crate::site::SiteCache;
use memviz_snapshot::{Snapshot, StackId};
use rustc_hash::FxHashMap;
use std::fmt::Write;

/// The header line (without its newline); the columns of `memviz query --json`'s rows.
pub const CSV_HEADER: &str = "element,alloc_event,free_event,addr,size,stream,site,file,line,\
lifetime_events,lifetime_us,alive_at_peak";

/// RFC 4180 quoting: a field with a comma, quote or line break is quoted, quotes doubled. A
/// snapshot's text is data: a field a spreadsheet would read as a formula (starting with `=`,
/// `+`, `-`, `@`, a tab or a carriage return) gets a leading `'` (OWASP's CSV injection rule).
pub(crate) fn field(out: &mut String, s: &str) {
    let guarded;
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        guarded = format!("'{s}");
        guarded.as_str()
    } else {
        s
    };
    if s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

fn opt(out: &mut String, v: Option<u32>) {
    if let Some(v) = v {
        let _ = write!(out, "{v}");
    }
}

/// The rows `elements` of `allocs` as CSV (header first, `\n` line ends); site, file and line
/// from `sites` ([`SiteCache::site`]). Elements that are not rows are skipped.
pub fn csv(
    snap: &Snapshot,
    allocs: &Allocations,
    sites: &mut SiteCache,
    elements: &[u32],
) -> String {
    let mut out = String::with_capacity(64 * (elements.len() + 1));
    out.push_str(CSV_HEADER);
    out.push('\n');
    // The quoted site, file and line per stack, once.
    let mut cells: FxHashMap<StackId, String> = FxHashMap::default();
    for &e in elements {
        let Some(a) = allocs.rows.get(e as usize) else {
            continue;
        };
        let _ = write!(out, "{},", a.element);
        opt(&mut out, a.alloc_event);
        out.push(',');
        opt(&mut out, a.free_event);
        let _ = write!(out, ",{},{},{},", a.addr, a.size, a.stream);
        let site = cells.entry(a.stack).or_insert_with(|| {
            let (label, file, line) = super::site_columns(snap, sites, a.stack);
            let mut s = String::new();
            field(&mut s, &label);
            s.push(',');
            field(&mut s, &file);
            let _ = write!(s, ",{line}");
            s
        });
        out.push_str(site);
        let _ = writeln!(
            out,
            ",{},{},{}",
            a.lifetime_events,
            lifetime_us_text(a),
            a.alive_at_peak
        );
    }
    out
}

#[cfg(test)]
mod field_tests {
    #[test]
    fn formulas_are_data() {
        let cell = |s: &str| {
            let mut o = String::new();
            super::field(&mut o, s);
            o
        };
        assert_eq!(cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(cell("@sum"), "'@sum");
        assert_eq!(cell("-1+2"), "'-1+2");
        assert_eq!(cell("model.py:3:f"), "model.py:3:f");
        assert_eq!(cell("a,b"), "\"a,b\"");
    }
}
