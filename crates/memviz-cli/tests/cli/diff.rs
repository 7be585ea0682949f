//! `memviz diff` and `memviz_analysis::diff`: two hand-written snapshots with known differences,
//! every corpus file against itself, hostile input, the CLI's JSON shape and exit codes.

use crate::common;
use common::*;
use memviz_analysis::diff::{Diff, DiffGroup, SegmentKey};
use memviz_analysis::site::Site;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Writes `diff_a.pickle` and `diff_b.pickle` (dict snapshots, the shape of generate.py's
/// `_hand_snapshot`; stdlib pickle).
///
/// Stacks (one frame each, `/m/model.py:<line>:<name>`): grow (10), shrink (20), new (30),
/// gone (40), same (50); `grow_filtered` is grow under a `ceval.c` frame, which memory_viz's
/// filter drops, so it *is* grow; `[]` has no frames.
///
/// A: device 0, segment 0x10000000 (4096, stream 0): grow 512, shrink 1024, shrink 1024,
///    gone 512, same 512, inactive 512; segment 0x20000000 (2048, stream 0): [] 1024,
///    inactive 1024.
/// B: device 0, segment 0x10000000 (4096, stream 0): grow 512, grow_filtered 1024, shrink 1024,
///    new 512, same 512, inactive 512; segment 0x30000000 (2560, stream 7): new 2048 with
///    requested_size 2000, gone 512 *active_pending_free* (not live);
///    device 1, segment 0x40000000 (512, stream 0): grow 512.
/// `requested_size = size` except where noted.
const SCRIPT: &str = r#"
import pickle, sys, os
out = sys.argv[1]
def fr(line, name, extra=()):
    return list(extra) + [{"name": name, "filename": "/m/model.py", "line": line}]
GROW, SHRINK, NEW, GONE, SAME = fr(10, "grow"), fr(20, "shrink"), fr(30, "new"), fr(40, "gone"), fr(50, "same")
GROW_FILTERED = fr(10, "grow", [{"name": "_PyEval_EvalFrameDefault", "filename": "Python/ceval.c", "line": 0}])
def seg(device, address, stream, blocks):
    out_blocks = []; addr = address; alloc = req = 0
    for size, state, frames, *rq in blocks:
        r = rq[0] if rq else (size if state != "inactive" else 0)
        out_blocks.append({"address": addr, "size": size, "requested_size": r, "state": state,
                           "frames": frames if state != "inactive" else []})
        if state == "active_allocated":
            alloc += size; req += r
        addr += size
    return {"device": device, "address": address, "total_size": addr - address,
            "allocated_size": alloc, "active_size": alloc, "requested_size": req, "stream": stream,
            "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
            "frames": [], "blocks": out_blocks}
A, I, P = "active_allocated", "inactive", "active_pending_free"
a = {"segments": [
        seg(0, 0x10000000, 0, [(512, A, GROW), (1024, A, SHRINK), (1024, A, SHRINK), (512, A, GONE),
                               (512, A, SAME), (512, I, [])]),
        seg(0, 0x20000000, 0, [(1024, A, []), (1024, I, [])])],
     "device_traces": [[]]}
b = {"segments": [
        seg(0, 0x10000000, 0, [(512, A, GROW), (1024, A, GROW_FILTERED), (1024, A, SHRINK), (512, A, NEW),
                               (512, A, SAME), (512, I, [])]),
        seg(0, 0x30000000, 7, [(2048, A, NEW, 2000), (512, P, GONE)]),
        seg(1, 0x40000000, 0, [(512, A, GROW)])],
     "device_traces": [[], []]}
for name, obj in (("diff_a.pickle", a), ("diff_b.pickle", b)):
    with open(os.path.join(out, name), "wb") as f:
        pickle.dump(obj, f, protocol=4)
"#;

fn planted_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| planted_fixtures("diff", SCRIPT)).clone()
}

fn planted(name: &str) -> PathBuf {
    planted_dir().join(name)
}

fn group(stack: &[&str], bytes_a: u64, bytes_b: u64, count_a: u64, count_b: u64) -> DiffGroup {
    DiffGroup {
        stack: stack.iter().map(|s| s.to_string()).collect(),
        bytes_a,
        bytes_b,
        count_a,
        count_b,
        site: Site::none(),
    }
}

/// [`memviz_analysis::diff::diff`], each group's site checked against its stack (the planted
/// stacks are one user frame each: the site is that frame, `<no frames>` for `[]`) and then
/// cleared, so groups compare by stack and numbers.
fn diff(a: &memviz_snapshot::Snapshot, b: &memviz_snapshot::Snapshot, device: Option<i64>) -> Diff {
    let mut d = memviz_analysis::diff::diff(a, b, device);
    for g in &mut d.groups {
        if g.stack.len() == 1 {
            let path = g.site.path();
            assert!(g.stack.contains(&path), "{:?} {path}", g.stack);
        }
        if g.stack.is_empty() {
            assert_eq!(g.site.label, "<no frames>");
        }
        g.site = Site::none();
    }
    d
}

fn key(device: i64, address: u64, total_size: u64, stream: u64) -> SegmentKey {
    SegmentKey {
        device,
        address,
        total_size,
        stream,
    }
}

const GROW: &str = "/m/model.py:10:grow";
const SHRINK: &str = "/m/model.py:20:shrink";
const NEW: &str = "/m/model.py:30:new";
const GONE: &str = "/m/model.py:40:gone";

/// Device 0 only. By stack, A → B (bytes, count):
/// * new: 0 → 512 + 2000 (requested size of the 2048 block) = 2512, 0 → 2; change +2512
/// * grow: 512 → 512 + 1024 (the filtered variant is the same stack) = 1536, 1 → 2; +1024
/// * gone: 512 → 0 (its B block is pending free, not live), 1 → 0; −512
/// * []: 1024 → 0, 1 → 0; −1024
/// * shrink: 2048 → 1024, 2 → 1; −1024 (tie with [] broken by stack text: [] sorts first)
/// * same: 512 → 512, 1 → 1: omitted.
///
/// Segments: 0x10000000 (4096) on both sides; only A: 0x20000000 (2048, stream 0);
/// only B: 0x30000000 (2560, stream 7).
#[test]
fn planted_diff_device_0() {
    let a = load_path(&planted("diff_a.pickle"));
    let b = load_path(&planted("diff_b.pickle"));
    let d = diff(&a, &b, Some(0));
    assert_eq!(
        d,
        Diff {
            groups: vec![
                group(&[NEW], 0, 2512, 0, 2),
                group(&[GROW], 512, 1536, 1, 2),
                group(&[GONE], 512, 0, 1, 0),
                group(&[], 1024, 0, 1, 0),
                group(&[SHRINK], 2048, 1024, 2, 1),
            ],
            segments_only_a: vec![key(0, 0x2000_0000, 2048, 0)],
            segments_only_b: vec![key(0, 0x3000_0000, 2560, 7)],
        }
    );
    // Reversed: every change flips sign, so the order reverses except for the tie, which
    // stays in stack order.
    let r = diff(&b, &a, Some(0));
    let stacks: Vec<Vec<String>> = r.groups.iter().map(|g| g.stack.clone()).collect();
    let s = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        stacks,
        [s(&[]), s(&[SHRINK]), s(&[GONE]), s(&[GROW]), s(&[NEW])]
    );
    assert_eq!(r.segments_only_a, d.segments_only_b);
    assert_eq!(r.segments_only_b, d.segments_only_a);
}

/// All devices: B's device-1 segment adds grow 512 (1 block): grow becomes 512 → 2048,
/// 1 → 3, change +1536 (still second after new's +2512); the device-1 segment is only in B.
#[test]
fn planted_diff_all_devices() {
    let a = load_path(&planted("diff_a.pickle"));
    let b = load_path(&planted("diff_b.pickle"));
    let d = diff(&a, &b, None);
    assert_eq!(d.groups.get(1), Some(&group(&[GROW], 512, 2048, 1, 3)));
    assert_eq!(d.groups.len(), 5);
    assert_eq!(
        d.segments_only_b,
        [key(0, 0x3000_0000, 2560, 7), key(1, 0x4000_0000, 512, 0)]
    );
    // Device 1 alone: A has nothing there.
    let d1 = diff(&a, &b, Some(1));
    assert_eq!(d1.groups, [group(&[GROW], 0, 512, 0, 1)]);
    assert!(d1.segments_only_a.is_empty());
    assert_eq!(d1.segments_only_b, [key(1, 0x4000_0000, 512, 0)]);
}

/// The JSON is exactly `{"groups": [{"stack", "bytes_a", "bytes_b", "count_a", "count_b"}],
/// "segments_only_a": [{"device", "address", "total_size", "stream"}], "segments_only_b": …}`,
/// keys in that order.
#[test]
fn cli_json_shape() {
    let (a, b) = (
        path_str(&planted("diff_a.pickle")),
        path_str(&planted("diff_b.pickle")),
    );
    let (code, out, err) = memviz(&["diff", &a, &b, "--device", "0", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    let site = |stack: &[&str]| match stack.first() {
        None => {
            serde_json::json!({"kind": "none", "file": "<no frames>", "line": 0, "name": "", "label": "<no frames>", "detail": null})
        }
        Some(l) => {
            let mut p = l.splitn(3, ':');
            let (file, line, name) = (
                p.next().unwrap_or(""),
                p.next().unwrap_or(""),
                p.next().unwrap_or(""),
            );
            let base = file.rsplit('/').next().unwrap_or(file);
            serde_json::json!({"kind": "user", "file": file, "line": line.parse::<i64>().unwrap_or(-1), "name": name, "label": format!("{base}:{line}:{name}"), "detail": null})
        }
    };
    let g = |stack: &[&str], ba: u64, bb: u64, ca: u64, cb: u64| serde_json::json!({"stack": stack, "bytes_a": ba, "bytes_b": bb, "count_a": ca, "count_b": cb, "site": site(stack)});
    assert_eq!(
        v,
        serde_json::json!({
            "groups": [
                g(&[NEW], 0, 2512, 0, 2),
                g(&[GROW], 512, 1536, 1, 2),
                g(&[GONE], 512, 0, 1, 0),
                g(&[], 1024, 0, 1, 0),
                g(&[SHRINK], 2048, 1024, 2, 1),
            ],
            "segments_only_a": [{"device": 0, "address": 0x2000_0000u64, "total_size": 2048, "stream": 0}],
            "segments_only_b": [{"device": 0, "address": 0x3000_0000u64, "total_size": 2560, "stream": 7}],
        })
    );
    // Key order as documented.
    let t = out.trim();
    assert!(t.starts_with(r#"{"groups":[{"stack":["/m/model.py:30:new"],"bytes_a":0,"bytes_b":2512,"count_a":0,"count_b":2,"site":{"kind":"user","#), "{t}");
    let ia = t.find("\"segments_only_a\"").expect("only_a");
    let ib = t.find("\"segments_only_b\"").expect("only_b");
    assert!(ia < ib);
    assert!(t.contains(r#"{"device":0,"address":536870912,"total_size":2048,"stream":0}"#));
    // All devices by default.
    let (code, out, _) = memviz(&["diff", &a, &b, "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(v["segments_only_b"].as_array().map(Vec::len), Some(2));
    // The table.
    let (code, out, err) = memviz(&["diff", &a, &b]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("5 stacks differ"), "{out}");
    assert!(out.contains("model.py:30:new"), "{out}");
    assert!(out.contains("+2.5KiB"), "{out}");
    assert!(out.contains("segments only in A: 1 (2.0KiB)"), "{out}");
    assert!(out.contains("segments only in B: 2 (3.0KiB)"), "{out}");
}

#[test]
fn cli_errors_exit_2_with_one_line() {
    let a = path_str(&planted("diff_a.pickle"));
    let missing = path_str(&planted("no_such_file.pickle"));
    let cases: Vec<Vec<&str>> = vec![
        vec!["diff"],
        vec!["diff", &a],
        vec!["diff", &a, &a, &a],
        vec!["diff", &a, &missing],
        vec!["diff", &missing, &a, "--json"],
        vec!["diff", &a, &a, "--bogus"],
        vec!["diff", &a, &a, "--device", "x"],
        vec!["diff", &a, &a, "--device"],
    ];
    for args in cases {
        let (code, out, err) = memviz(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("memviz: "), "{err}");
        assert!(out.is_empty(), "{args:?}: {out}");
    }
    let (_, _, err) = memviz(&["diff", &a, &missing]);
    assert!(err.contains("cannot open"), "{err}");
    // Not a snapshot: one line too.
    let script = planted_dir().join("not_a_snapshot.txt");
    std::fs::write(&script, "hello").expect("write");
    let (code, _, err) = memviz(&["diff", &a, &path_str(&script)]);
    assert_eq!(code, 2);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

/// A file compared with itself has no group and no segment only on one side, on every
/// fixture, the hostile file and every corpus file, for all devices and each device.
#[test]
fn every_file_against_itself_is_empty() {
    let mut files: Vec<PathBuf> = SMALL_FIXTURES.iter().map(|f| fixture(f)).collect();
    files.push(planted("hostile.pickle"));
    files.push(planted("diff_a.pickle"));
    files.push(planted("diff_b.pickle"));
    files.extend(corpus_files());
    for path in &files {
        let snap = load_path(path);
        let mut devices: Vec<Option<i64>> = vec![None];
        devices.extend(snap.devices().into_iter().map(Some));
        for d in devices {
            let r = diff(&snap, &snap, d);
            assert_eq!(r, Diff::default(), "{} device {d:?}", path.display());
        }
    }
    for path in files
        .iter()
        .filter(|p| p.to_string_lossy().contains("shared/corpus"))
    {
        let p = path_str(path);
        let (code, out, err) = memviz(&["diff", &p, &p, "--json"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out.trim(),
            r#"{"groups":[],"segments_only_a":[],"segments_only_b":[]}"#
        );
    }
}

/// Pairs of different files never panic, and the groups are sorted and non-trivial.
#[test]
fn pairs_of_files_are_consistent() {
    let mut files: Vec<PathBuf> = SMALL_FIXTURES.iter().map(|f| fixture(f)).collect();
    files.push(planted("hostile.pickle"));
    files.extend(corpus_files());
    let snaps: Vec<_> = files.iter().map(|p| load_path(p)).collect();
    for (i, a) in snaps.iter().enumerate() {
        for b in snaps.iter().skip(i + 1).take(4) {
            let d = diff(a, b, None);
            let delta = |g: &DiffGroup| i128::from(g.bytes_b) - i128::from(g.bytes_a);
            for w in d.groups.windows(2) {
                assert!(
                    delta(&w[0]) > delta(&w[1])
                        || (delta(&w[0]) == delta(&w[1]) && w[0].stack < w[1].stack)
                );
            }
            for g in &d.groups {
                assert!(g.bytes_a != g.bytes_b || g.count_a != g.count_b);
            }
            // Live bytes add up: Σ over groups of (b − a) = live(B) − live(A).
            let live = |s: &memviz_snapshot::Snapshot| -> i128 {
                s.segments
                    .iter()
                    .flat_map(|seg| s.segment_blocks(seg))
                    .filter(|b| b.state == memviz_snapshot::BlockState::ActiveAllocated)
                    .map(|b| i128::from(b.requested_size))
                    .sum()
            };
            let sum: i128 = d.groups.iter().map(delta).sum();
            assert_eq!(sum, live(b) - live(a));
        }
    }
}

/// The diff flamegraph's data on the planted pair (device 0): live bytes by root-first stack on
/// each side (the filtered `grow` is `grow`; `[]` prints `<no frames>`), the differential
/// folded text, and the tree: each stack's width is max(A, B), the root's pair is the two
/// live totals.
#[test]
fn planted_diff_flamegraph() {
    use memviz_analysis::diff::{diff_folded_text, live_folded};
    use memviz_analysis::flame::FrameMode;
    use memviz_analysis::flame::{FlameTree, ValueUnit, NO_FRAMES};
    let a = load_path(&planted("diff_a.pickle"));
    let b = load_path(&planted("diff_b.pickle"));
    let (fa, fb) = (
        live_folded(&a, Some(0), FrameMode::Python, &Default::default()),
        live_folded(&b, Some(0), FrameMode::Python, &Default::default()),
    );
    let e = |f: &str, v: u64| (vec![f.to_string()], v);
    assert_eq!(
        fa,
        vec![
            e(GROW, 512),
            e(SHRINK, 2048),
            e(GONE, 512),
            e("/m/model.py:50:same", 512),
            e(NO_FRAMES, 1024)
        ]
    );
    assert_eq!(
        fb,
        vec![
            e(GROW, 1536),
            e(SHRINK, 1024),
            e(NEW, 2512),
            e("/m/model.py:50:same", 512)
        ]
    );
    assert_eq!(
        diff_folded_text(&fa, &fb),
        format!(
            "{GROW} 512 1536\n{SHRINK} 2048 1024\n{NEW} 0 2512\n{GONE} 512 0\n/m/model.py:50:same 512 512\n{NO_FRAMES} 1024 0\n"
        )
    );
    let t = FlameTree::build_diff(&fa, &fb, ValueUnit::Bytes);
    // Live totals: A 4608, B 5584; widths 1536 + 2048 + 2512 + 512 + 512 + 1024.
    assert_eq!(t.root().pair, [4608, 5584]);
    assert_eq!(t.root().total, 8144);
    let node = |name: &str| t.nodes.iter().find(|n| n.name == name).expect("node");
    assert_eq!(node(GONE).pair, [512, 0]);
    assert_eq!(node(GONE).total, 512);
    assert_eq!(node(NEW).pair, [0, 2512]);
    // Σ (b − a) over the diff's groups = the root's b − a.
    let d = diff(&a, &b, Some(0));
    let sum: i128 = d
        .groups
        .iter()
        .map(|g| i128::from(g.bytes_b) - i128::from(g.bytes_a))
        .sum();
    assert_eq!(sum, 5584 - 4608);
    // The CLI prints the same text.
    let (pa, pb) = (
        path_str(&planted("diff_a.pickle")),
        path_str(&planted("diff_b.pickle")),
    );
    let (code, out, err) = memviz(&["diff", &pa, &pb, "--device", "0", "--folded"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, diff_folded_text(&fa, &fb));
}

/// A corpus file's diff flamegraph against itself: every node has equal sides, and the root's
/// sides are the file's live bytes.
#[test]
fn corpus_diff_flamegraph_against_itself() {
    use memviz_analysis::diff::live_folded;
    use memviz_analysis::flame::FrameMode;
    use memviz_analysis::flame::{FlameTree, ValueUnit};
    for path in corpus_files() {
        let s = load_path(&path);
        let f = live_folded(&s, None, FrameMode::Python, &Default::default());
        let t = FlameTree::build_diff(&f, &f, ValueUnit::Bytes);
        let live: u64 = s
            .segments
            .iter()
            .flat_map(|seg| s.segment_blocks(seg))
            .filter(|b| b.state == memviz_snapshot::BlockState::ActiveAllocated)
            .map(|b| b.requested_size)
            .sum();
        assert_eq!(t.root().pair, [live, live], "{}", path.display());
        assert!(t
            .nodes
            .iter()
            .all(|n| n.pair[0] == n.pair[1] && n.total == n.pair[0]));
    }
}

/// Timing on two 150 MB synthetic snapshots (release): `cargo test --release -p memviz-cli
/// --test cli diff:: -- --ignored --nocapture`. Needs target/bench/snap_150mb.pickle and
/// snap_151mb.pickle (`python3 tests/fixtures/generate.py large --mb 151 …`: another seed).
#[test]
#[ignore]
fn bench_diff_150mb() {
    let a_path = repo_root().join("target/bench/snap_150mb.pickle");
    let b_path = repo_root().join("target/bench/snap_151mb.pickle");
    if !a_path.exists() || !b_path.exists() {
        eprintln!("note: target/bench/snap_150mb.pickle / snap_151mb.pickle missing; skipped");
        return;
    }
    let a = load_path(&a_path);
    let b = load_path(&b_path);
    for (name, x, y) in [("150 vs 151", &a, &b), ("150 vs itself", &a, &a)] {
        let mut best = f64::INFINITY;
        let mut groups = 0;
        for _ in 0..3 {
            let t0 = std::time::Instant::now();
            let d = diff(x, y, None);
            best = best.min(t0.elapsed().as_secs_f64());
            groups = d.groups.len();
        }
        eprintln!(
            "diff {name}: {groups} groups, best of 3: {:.1} ms",
            best * 1e3
        );
        assert!(best < 1.0);
    }
}
