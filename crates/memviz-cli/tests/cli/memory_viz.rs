//! `memviz stats`, `trace`, `segments`, `memory` (memory_viz's commands, SEMANTICS.md §8) on
//! every corpus file, checked against §8's rules and the loaded model; `--svg` with hostile
//! frame names.

use crate::common;
use common::pickle::{Block, Event, Segment, Snap};
use common::*;
use memviz_analysis::memory_viz::{py_bytes, trace_name, PAGE_SIZE};
use memviz_snapshot::{Action, BlockState, Snapshot};
use std::collections::BTreeMap;
use std::path::Path;

const STATES: [&str; 5] = [
    "active_allocated",
    "active_pending_free",
    "inactive",
    "unknown",
    "<unaccounted>",
];

fn run_ok(args: &[&str]) -> String {
    let (code, out, err) = memviz(args);
    assert_eq!(code, 0, "memviz {args:?}: {err}");
    assert!(err.is_empty() || err.contains("warning"), "{args:?}: {err}");
    out
}

/// `(frames, count)` of a folded line.
fn split(line: &str) -> (Vec<&str>, u64) {
    let (stack, n) = line.rsplit_once(' ').expect("a count");
    (stack.split(';').collect(), n.parse().expect("a number"))
}

/// Checks `memviz segments` and `memviz memory` of one file against its model.
fn check_folded(path: &Path, snap: &Snapshot) {
    let f = path_str(path);
    let out = run_ok(&["segments", &f]);
    // address → (Σ counts, Σ <free> counts)
    let mut by_seg: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut total = 0u64;
    for line in out.lines() {
        let (frames, n) = split(line);
        assert!(n > 0, "{f}: {line}");
        assert!(frames.len() >= 3, "{f}: {line}");
        assert!(frames[0].starts_with("stream_"), "{f}: {line}");
        let addr: u64 = frames[1]
            .strip_prefix("seg_")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("{f}: {line}"));
        assert!(STATES.contains(&frames[2]), "{f}: state of {line}");
        let slot = by_seg.entry(addr).or_default();
        slot.0 += n;
        if frames[2] == "inactive" {
            assert_eq!(frames[3..], ["<free>"], "{f}: {line}");
            slot.1 += n;
        }
        total += n;
    }
    let mut want: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for seg in &snap.segments {
        let free: u64 = snap
            .segment_blocks(seg)
            .iter()
            .filter(|b| b.state == BlockState::Inactive)
            .map(|b| b.size)
            .sum();
        let blocks: u64 = snap.segment_blocks(seg).iter().map(|b| b.size).sum();
        // Blocks requested + gaps + free = the segment (or its blocks, if they cover more).
        let slot = want.entry(seg.address).or_default();
        slot.0 += seg.total_size.max(blocks);
        slot.1 += free;
    }
    want.retain(|_, v| v.0 > 0);
    assert_eq!(by_seg, want, "{f}: Σ counts per segment");
    let mem = run_ok(&["memory", &f]);
    let mem_total: u64 = mem.lines().map(|l| split(l).1).sum();
    assert_eq!(mem_total, total, "{f}: memory and segments total");
    for line in mem.lines() {
        let (frames, _) = split(line);
        assert!(
            frames[0].starts_with("stream_") && STATES.contains(&frames[1]),
            "{f}: {line}"
        );
    }
}

/// Checks `memviz stats` of one file: totals are the sums of the model's blocks, one printed
/// line per segment of 20 MiB or more, one page character per 20 MiB.
fn check_stats(path: &Path, snap: &Snapshot) {
    let f = path_str(path);
    let out = run_ok(&["stats", &f]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "Summary of segments >= 20.0MiB in size", "{f}");
    let (mut reserved, mut allocated, mut internal, mut external) = (0u64, 0u64, 0u64, 0u64);
    let mut big: Vec<u64> = Vec::new();
    for seg in &snap.segments {
        reserved += seg.total_size;
        for b in snap.segment_blocks(seg) {
            if b.state == BlockState::ActiveAllocated {
                let r = b.requested_size.min(b.size);
                allocated += r;
                internal += b.size - r;
            } else {
                external += b.size;
            }
        }
        if seg.total_size >= PAGE_SIZE {
            big.push(seg.total_size);
        }
    }
    let seg_lines: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with('['))
        .collect();
    assert_eq!(seg_lines.len(), big.len(), "{f}");
    big.sort_unstable();
    for (l, size) in seg_lines.iter().zip(&big) {
        let (body, rest) = l[1..].split_once("] ").expect("a body");
        let pages = (size - 1) / PAGE_SIZE + 1;
        assert_eq!(body.chars().count() as u64, pages, "{f}: {l}");
        assert!(
            body.chars()
                .all(|c| c == ' ' || c == '*' || c.is_ascii_lowercase() || c.is_ascii_digit()),
            "{f}: {l}"
        );
        assert!(
            rest.starts_with(&format!("{} allocated, ", py_bytes(i128::from(*size)))),
            "{f}: {l}"
        );
    }
    let field = |k: &str| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(k))
            .unwrap_or_else(|| panic!("{f}: no {k}"))
            .to_string()
    };
    assert_eq!(field("segments: "), snap.segments.len().to_string(), "{f}");
    assert_eq!(
        field("total_reserved: "),
        py_bytes(i128::from(reserved)),
        "{f}"
    );
    assert_eq!(
        field("total_allocated: "),
        py_bytes(i128::from(allocated)),
        "{f}"
    );
    let free = field("total_free: ");
    assert!(
        free.starts_with(&py_bytes(i128::from(internal + external))),
        "{f}: {free}"
    );
    assert!(out.contains("\nLegend:\n"), "{f}");
}

/// Checks `memviz trace` of one file: per device with events, a header, `<n> entries`, one line
/// per event, names a, b, … never reused, and `TOTAL MEM:` = Σ alloc − Σ free_completed.
fn check_trace(path: &Path, snap: &Snapshot) {
    let f = path_str(path);
    let out = run_ok(&["trace", &f]);
    let mut lines = out.lines();
    for (d, tr) in snap.traces.iter().enumerate() {
        if tr.is_empty() {
            continue;
        }
        assert_eq!(
            lines.next(),
            Some(format!("Device {d} ----------------").as_str()),
            "{f}"
        );
        assert_eq!(
            lines.next(),
            Some(format!("{} entries", tr.len()).as_str()),
            "{f}"
        );
        let mut next_name = 0u64;
        let mut total: i128 = 0;
        for i in 0..tr.len() {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("{f}: device {d} ends early"));
            let action = tr.action(i).expect("an action");
            let size = i128::from(tr.size(i).unwrap_or(0));
            match action {
                Action::Alloc | Action::SegmentAlloc => {
                    let want = format!("{} = ", trace_name(next_name));
                    assert!(line.starts_with(&want), "{f}: event {i}: {line}");
                    next_name += 1;
                    if action == Action::Alloc {
                        total += size;
                        assert!(line.contains('[') && line.ends_with(']'), "{f}: {line}");
                    } else {
                        assert!(line.contains("cudaMalloc("), "{f}: {line}");
                    }
                }
                Action::FreeRequested => assert!(line.starts_with("del "), "{f}: {line}"),
                Action::FreeCompleted => {
                    total -= size;
                    assert!(line.starts_with("# free completed for "), "{f}: {line}");
                }
                Action::SegmentFree => assert!(line.starts_with("cudaFree("), "{f}: {line}"),
                Action::Oom => {
                    assert!(line.starts_with("raise OutOfMemoryError # "), "{f}: {line}")
                }
                Action::Annotate => assert!(line.starts_with("# annotate "), "{f}: {line}"),
                _ => assert!(line.starts_with("{'action': '"), "{f}: {line}"),
            }
        }
        assert_eq!(
            lines.next(),
            Some(format!("TOTAL MEM: {}", py_bytes(total)).as_str()),
            "{f}: device {d}"
        );
    }
    assert_eq!(lines.next(), None, "{f}: after the last device");
}

#[test]
fn corpus_stats_trace_segments_memory() {
    let files = corpus_files();
    for path in &files {
        let snap = load_path(path);
        check_folded(path, &snap);
        check_stats(path, &snap);
        check_trace(path, &snap);
    }
    eprintln!("checked {} corpus files", files.len());
}

#[test]
fn fixtures_stats_trace_segments_memory() {
    let dir = fixtures_dir();
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("fixtures") {
        let path = e.expect("entry").path();
        if path.extension().and_then(|x| x.to_str()) != Some("pickle") {
            continue;
        }
        let Ok(snap) = std::panic::catch_unwind(|| load_path(&path)) else {
            continue;
        };
        check_folded(&path, &snap);
        check_stats(&path, &snap);
        check_trace(&path, &snap);
        n += 1;
    }
    assert!(n > 0, "no fixture checked in {}", dir.display());
}

/// A snapshot whose frame names and file names are markup.
fn hostile() -> Snap {
    let evil = (
        "<script>alert(1)</script>".to_string(),
        "/x/\"><svg onload=alert(2)>.py".to_string(),
        7,
    );
    let amp = ("a & b <c>".to_string(), "/m/ok.py".to_string(), 1);
    Snap {
        stacks: vec![vec![evil, amp]],
        segments: vec![Segment {
            device: 0,
            address: 0x10_0000,
            total_size: 4096,
            stream: 0,
            expandable: false,
            blocks: vec![
                Block {
                    size: 2048,
                    requested: 2000,
                    state: "active_allocated",
                    stack: Some(0),
                },
                Block {
                    size: 2048,
                    requested: 0,
                    state: "inactive",
                    stack: None,
                },
            ],
        }],
        traces: vec![vec![common::pickle::Entry::New(
            Event::new("alloc", 0x10_0000, 2000).with_stack(0),
        )]],
        ..Snap::default()
    }
}

#[test]
fn svg_escapes_hostile_frames() {
    let dir = repo_root()
        .join("target/test-fixtures")
        .join(format!("memory-viz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let f = path_str(&hostile().write(&dir, "hostile-svg.pickle"));
    let folded = run_ok(&["segments", &f]);
    assert!(
        folded.contains(":7:<script>alert(1)</script> 2000"),
        "{folded}"
    );
    for (cmd, extra) in [
        ("segments", vec![]),
        ("memory", vec![]),
        ("folded", vec![]),
        ("diff", vec!["--folded"]),
    ] {
        let out = dir.join(format!("{cmd}.svg"));
        let out_s = path_str(&out);
        let mut args = vec![cmd, f.as_str()];
        if cmd == "diff" {
            args.push(f.as_str());
        }
        args.extend(extra);
        args.extend(["--svg", out_s.as_str()]);
        let stdout = run_ok(&args);
        assert!(stdout.is_empty(), "{cmd}: --svg prints nothing: {stdout}");
        let svg = std::fs::read_to_string(&out).expect("the svg");
        assert!(svg.starts_with("<?xml") && svg.contains("<svg"), "{cmd}");
        assert!(!svg.contains("<script>alert"), "{cmd}: unescaped frame");
        assert!(!svg.contains("<svg onload"), "{cmd}: unescaped file name");
        assert!(
            svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{cmd}"
        );
        assert!(svg.contains("a &amp; b &lt;c&gt;"), "{cmd}");
        if cmd == "segments" {
            assert!(
                svg.contains("&lt;free&gt;") && svg.contains("&lt;gaps&gt;"),
                "{cmd}"
            );
        }
    }
    // --svg excludes --json; diff's needs --folded; an unwritable path is one line, exit 2.
    let (code, _, err) = memviz(&["folded", &f, "--json", "--svg", "x.svg"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = memviz(&["diff", &f, &f, "--svg", "x.svg"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = memviz(&["segments", &f, "--svg", "/nonexistent/dir/x.svg"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let (code, _, err) = memviz(&["stats", &f, "--device", "3"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no device 3"), "{err}");
}
