//! `memviz query`: the structured filter on the generated fixtures and the real corpus, checked
//! against the timeline and `memviz lines --json`; the output formats and bad filters.

use crate::common;
use common::*;
use memviz_analysis::steps::Steps;
use memviz_analysis::timeline;
use serde_json::Value;
use std::path::PathBuf;

fn json(args: &[&str]) -> Value {
    let (code, out, err) = memviz(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

/// (count, bytes) of a filter on one device.
fn counted(file: &str, device: &str, filter: &str) -> (u64, u64) {
    let v = json(&[
        "query", file, filter, "--device", device, "--json", "--limit", "0",
    ]);
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(0));
    (
        v["count"].as_u64().expect("count"),
        v["bytes"].as_u64().expect("bytes"),
    )
}

/// A value quoted for the filter grammar.
fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = SMALL_FIXTURES.iter().map(|f| fixture(f)).collect();
    v.extend(corpus_files());
    v
}

/// Every fixture and corpus file, every device with a timeline: `size>=0` is every
/// allocation; `at:peak` is `memviz lines`' live at the peak; the top site's `file:` and
/// `line:` give its rows' counts; negation partitions.
#[test]
fn fixtures_and_corpus_agree_with_lines() {
    let mut checked = 0;
    for path in files() {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Ok(snap) = memviz_snapshot::load_slice(&bytes) else {
            continue;
        };
        let file = path_str(&path);
        for d in snap.devices() {
            let ds = d.to_string();
            let tl = timeline::build(&snap, d);
            let total: u64 = tl.elements.iter().map(|e| e.size_bytes).sum();
            let n = tl.elements.len() as u64;
            let ctx = format!("{file} device {d}");
            assert_eq!(counted(&file, &ds, "size>=0"), (n, total), "{ctx}");
            assert_eq!(counted(&file, &ds, ""), (n, total), "{ctx}");
            // Live at the peak, as `memviz lines` counts it.
            let steps = Steps::build(&tl);
            let live = if steps.step_count() > 0 {
                steps.live_elements(steps.peak_step)
            } else {
                Vec::new()
            };
            let lines = json(&["lines", &file, "--device", &ds, "--json"]);
            let rows = lines["rows"].as_array().expect("rows");
            let peak_bytes: u64 = rows
                .iter()
                .map(|r| r["live_at_peak_bytes"].as_u64().unwrap_or(0))
                .sum();
            assert_eq!(
                counted(&file, &ds, "at:peak"),
                (live.len() as u64, peak_bytes),
                "{ctx}: at:peak"
            );
            // Negation partitions.
            for term in ["at:peak", "size>=1MiB", "action:free", "site:/py/"] {
                let (a, ab) = counted(&file, &ds, term);
                let (b, bb) = counted(&file, &ds, &format!("-{term}"));
                assert_eq!((a + b, ab + bb), (n, total), "{ctx}: {term}");
            }
            // The top site by file and line: the Σ of its rows (the rows of one file:line
            // differ by function name only).
            let top = rows
                .iter()
                .find(|r| !matches!(r["kind"].as_str(), Some("autograd" | "none")));
            if let Some(top) = top {
                let (f, l) = (top["file"].as_str().unwrap_or(""), top["line"].as_i64());
                let want: u64 = rows
                    .iter()
                    .filter(|r| r["file"] == top["file"] && r["line"] == top["line"])
                    .filter(|r| !matches!(r["kind"].as_str(), Some("autograd" | "none")))
                    .map(|r| r["count"].as_u64().unwrap_or(0))
                    .sum();
                let filter = format!("file:{} line:{}", quoted(f), l.unwrap_or(0));
                assert_eq!(counted(&file, &ds, &filter).0, want, "{ctx}: {filter}");
                let label = top["label"].as_str().unwrap_or("");
                let by_label = counted(&file, &ds, &format!("site:{}", quoted(label))).0;
                assert!(
                    by_label >= top["count"].as_u64().unwrap_or(0),
                    "{ctx}: {label}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= SMALL_FIXTURES.len(), "{checked} devices checked");
}

#[test]
fn formats_and_errors() {
    let path = fixture("vector.pickle");
    let file = path_str(&path);
    let v = json(&["query", &file, "size>=1", "--json"]);
    let mut keys: Vec<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["bytes", "count", "device", "rows", "size"]);
    let count = v["count"].as_u64().expect("count") as usize;
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), count);
    assert!(count > 0);
    let mut row_keys: Vec<&str> = rows[0]
        .as_object()
        .expect("row")
        .keys()
        .map(String::as_str)
        .collect();
    row_keys.sort_unstable();
    assert_eq!(
        row_keys,
        [
            "addr",
            "alive_at_peak",
            "alloc_event",
            "element",
            "file",
            "free_event",
            "lifetime_events",
            "lifetime_us",
            "line",
            "site",
            "size",
            "stream"
        ]
    );
    // CSV: the header and one line per match; --limit cuts rows, not the count.
    let (code, out, err) = memviz(&["query", &file, "size>=1", "--csv"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], memviz_analysis::query::CSV_HEADER);
    assert_eq!(lines.len(), count + 1);
    let v = json(&["query", &file, "size>=1", "--json", "--limit", "2"]);
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(2.min(count)));
    assert_eq!(v["count"].as_u64(), Some(count as u64));
    // Text: heading with the count, a column header, rows.
    let (code, out, err) = memviz(&["query", &file, "size>=1"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines()
            .next()
            .is_some_and(|l| l.contains(&format!("{count} of"))),
        "{out}"
    );
    assert!(out.lines().nth(1).is_some_and(|l| l.contains("lifetime")));
    // Bad filters: exit 2, one line naming the column (counted from 1).
    for (filter, column, what) in [
        (
            "size>=1XB",
            7,
            "unknown unit XB (B, KiB, MiB, GiB, KB, MB, GB)",
        ),
        (
            "at:peak colour:red",
            9,
            "unknown field colour (size, stream",
        ),
        ("site:/(/", 6, "bad regex"),
        ("lifetime>3h", 10, "unknown unit h"),
    ] {
        let (code, out, err) = memviz(&["query", &file, filter]);
        assert_eq!(code, 2, "{filter}: {out}");
        assert!(out.is_empty());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("column {column}: {what}")),
            "{filter}: {err}"
        );
    }
}
