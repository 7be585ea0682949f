//! `memviz export`: the tables as JSON rows agree with the model and with `memviz lines` /
//! `memviz state`, and `--parquet DIR` writes every table.

use crate::common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const TABLES: [&str; 7] = [
    "trace",
    "allocations",
    "frames",
    "stacks",
    "segments",
    "blocks",
    "lines",
];

fn files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = SMALL_FIXTURES
        .iter()
        .filter(|f| **f != "truncated.pickle" && **f != "empty.pickle")
        .map(|f| fixture(f))
        .collect();
    v.extend(corpus_files());
    v
}

fn json(args: &[&str]) -> Value {
    let (code, out, err) = memviz(args);
    assert_eq!(code, 0, "memviz {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("memviz {args:?}: {e}: {out}"))
}

fn table(file: &Path, name: &str, more: &[&str]) -> Vec<Value> {
    let f = path_str(file);
    let mut args = vec!["export", f.as_str(), "--table", name, "--json"];
    args.extend_from_slice(more);
    match json(&args) {
        Value::Array(rows) => rows,
        other => panic!("not an array of rows: {other}"),
    }
}

fn u(v: &Value, key: &str) -> u64 {
    v.get(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{key} of {v}"))
}

#[test]
fn tables_have_the_rows_of_the_model() {
    for file in files() {
        let snap = load_path(&file);
        let name = file.display();
        let trace = table(&file, "trace", &[]);
        let events: usize = snap.traces.iter().map(|t| t.len()).sum();
        assert_eq!(trace.len(), events, "{name}: trace");
        for (row, i) in trace.iter().zip(0..) {
            let d = row["device"].as_i64().expect("device");
            let e = u(row, "event") as usize;
            let t = snap.trace(d).expect("the row's device has a trace");
            assert_eq!(u(row, "size"), t.size(e).unwrap_or(0), "{name}: row {i}");
            assert_eq!(u(row, "address"), t.addr(e).unwrap_or(0), "{name}: row {i}");
            let action = t.action(e).map_or("", |a| snap.action_name(a));
            assert_eq!(row["action"], action, "{name}: row {i}");
        }
        assert_eq!(
            table(&file, "frames", &[]).len(),
            snap.frames.len(),
            "{name}"
        );
        assert_eq!(
            table(&file, "stacks", &[]).len(),
            snap.stacks.len(),
            "{name}"
        );
        let segs = table(&file, "segments", &[]);
        assert_eq!(segs.len(), snap.segments.len(), "{name}");
        let total: u64 = segs.iter().map(|s| u(s, "total_size")).sum();
        let want: u64 = snap.segments.iter().map(|s| s.total_size).sum();
        assert_eq!(total, want, "{name}");
        let allocs = table(&file, "allocations", &[]);
        let elements: usize = snap
            .devices()
            .iter()
            .map(|&d| memviz_analysis::timeline::build(&snap, d).elements.len())
            .sum();
        assert_eq!(allocs.len(), elements, "{name}: allocations");
        assert!(
            allocs.iter().all(|r| r["site"].is_string()),
            "{name}: every allocation has a site"
        );
    }
}

#[test]
fn lines_and_blocks_equal_the_commands() {
    for file in files() {
        let f = path_str(&file);
        let lines = json(&["lines", &f, "--json"]);
        let rows = table(&file, "lines", &[]);
        let want = lines["rows"].as_array().expect("rows");
        assert_eq!(rows.len(), want.len(), "{f}: lines");
        for (got, want) in rows.iter().zip(want) {
            assert_eq!(got, want, "{f}: a lines row");
        }
        let state = json(&["state", &f, "--json"]);
        let blocks = table(&file, "blocks", &[]);
        fn of<'a>(rows: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
            rows.iter().filter(move |r| r["kind"] == kind)
        }
        assert_eq!(
            of(&blocks, "segment").count() as u64,
            u(&state, "segments"),
            "{f}"
        );
        assert_eq!(
            of(&blocks, "block").count() as u64,
            u(&state, "blocks"),
            "{f}"
        );
        let reserved: u64 = of(&blocks, "segment").map(|r| u(r, "size")).sum();
        let allocated: u64 = of(&blocks, "block").map(|r| u(r, "requested_size")).sum();
        assert_eq!(reserved, u(&state, "reserved_bytes"), "{f}");
        assert_eq!(allocated, u(&state, "allocated_bytes"), "{f}");
        // A state in the middle of the trace agrees as well (or both refuse: no events).
        let (code, out, _) = memviz(&["state", &f, "--event", "0", "--json"]);
        let (code2, first, _) =
            memviz(&["export", &f, "--table", "blocks", "--json", "--event", "0"]);
        assert_eq!(code, code2, "{f}: event 0");
        if code == 0 {
            let events: Value = serde_json::from_str(&out).expect("json");
            let first: Vec<Value> = serde_json::from_str(&first).expect("json");
            let n = of(&first, "segment").count() as u64;
            assert_eq!(n, u(&events, "segments"), "{f}: event 0");
        }
    }
}

#[test]
fn parquet_writes_every_table() {
    let dir = repo_root()
        .join("target/test-fixtures")
        .join(format!("export-{}", std::process::id()));
    let f = path_str(&fixture("multidevice.pickle"));
    let d = path_str(&dir);
    let (code, out, err) = memviz(&["export", &f, "--parquet", &d]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), TABLES.len(), "{out}");
    for t in TABLES {
        let bytes = std::fs::read(dir.join(format!("{t}.parquet"))).expect("written");
        assert_eq!(bytes.get(..4), Some(&b"PAR1"[..]), "{t}");
        assert_eq!(bytes.get(bytes.len() - 4..), Some(&b"PAR1"[..]), "{t}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_arguments_are_named() {
    let f = path_str(&fixture("vector.pickle"));
    let (code, _, err) = memviz(&["export", &f, "--table", "nope", "--json"]);
    assert_eq!(code, 2);
    assert!(err.contains("no such table"), "{err}");
    let (code, _, err) = memviz(&["export", &f, "--table", "trace", "--json", "--device", "9"]);
    assert_eq!(code, 2);
    assert!(err.contains("no device 9"), "{err}");
    let (code, _, err) = memviz(&["export", &f, "--table", "blocks", "--json", "--event", "99"]);
    assert_eq!(code, 2);
    assert!(err.contains("events (merged)"), "{err}");
    let (code, _, _) = memviz(&["export", &f]);
    assert_eq!(code, 2, "--parquet or --table is needed");
}
