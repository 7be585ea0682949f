//! `memviz whatif`: a planted trace whose OOM site, segment sizes and smallest capacity are
//! known by construction (`oomsite.pickle`), a snapshot without a trace, and the small
//! generated fixtures: the text, `--json`'s keys and types, `--sweep`'s rows, `--as-recorded`
//! against the recorded segment events, bad `--capacity` / `--alloc-conf`, and the site named
//! as `memviz lines` names it.

use crate::common;
use common::{fixture, memviz, path_str, python_c, repo_root};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;

const MIB: u64 = 1 << 20;

/// `oomsite.pickle`: one device, recorded with `max_split_size_mb:512`. A 20 MiB segment takes
/// two 8 MiB allocations (train.py:10:small, train.py:20:mid), then a 30 MiB segment takes one
/// of 30 MiB (train.py:30:big, called through torch's relu). Trace rows: 0 segment_alloc 20 MiB,
/// 1 alloc, 2 alloc, 3 segment_alloc 30 MiB, 4 alloc 30 MiB. On 32 MiB the last request cannot
/// be met (20 MiB reserved and in use): OOM at row 4; it fits on 50 MiB, and on nothing
/// smaller (46 MiB allocated, 2 MiB steps, the 20 MiB segment cannot be freed).
/// `notrace.pickle`: the same segments, no trace.
const SCRIPT: &str = r#"
import os, pickle, sys
out = sys.argv[1]
MiB = 1 << 20
B1, B2 = 0x7F0000000000, 0x7F0010000000
def fr(line, name):
    return [{"filename": "/usr/lib/python3/site-packages/torch/nn/functional.py", "line": 1701, "name": "relu"},
            {"filename": "/home/u/train.py", "line": line, "name": name}]
A, B, C = fr(10, "small"), fr(20, "mid"), fr(30, "big")
ev = []
def e(action, addr, size, frames):
    ev.append({"action": action, "addr": addr, "size": size, "stream": 0,
               "time_us": 1_700_000_000_000_000 + 1000 * len(ev), "frames": frames})
e("segment_alloc", B1, 20 * MiB, A)
e("alloc", B1, 8 * MiB, A)
e("alloc", B1 + 8 * MiB, 8 * MiB, B)
e("segment_alloc", B2, 30 * MiB, C)
e("alloc", B2, 30 * MiB, C)
def blk(addr, size, frames):
    return {"address": addr, "size": size, "requested_size": size if frames else 0,
            "state": "active_allocated" if frames else "inactive", "frames": frames or []}
def seg(addr, total, blocks):
    a = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
    return {"device": 0, "address": addr, "total_size": total, "allocated_size": a,
            "active_size": a, "requested_size": a, "stream": 0, "segment_type": "large",
            "segment_pool_id": (0, 0), "is_expandable": False, "frames": [], "blocks": blocks}
segs = [seg(B1, 20 * MiB, [blk(B1, 8 * MiB, A), blk(B1 + 8 * MiB, 8 * MiB, B),
                           blk(B1 + 16 * MiB, 4 * MiB, None)]),
        seg(B2, 30 * MiB, [blk(B2, 30 * MiB, C)])]
settings = {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:512", "max_split_size": 512 * MiB,
            "garbage_collection_threshold": 0.0, "expandable_segments": False,
            "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}
with open(os.path.join(out, "oomsite.pickle"), "wb") as f:
    pickle.dump({"segments": segs, "device_traces": [ev], "allocator_settings": settings}, f, protocol=4)
with open(os.path.join(out, "notrace.pickle"), "wb") as f:
    pickle.dump({"segments": segs, "device_traces": []}, f, protocol=4)
"#;

fn planted(name: &str) -> String {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = repo_root()
            .join("target/test-fixtures")
            .join(format!("whatif-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        python_c(SCRIPT, &dir, "whatif fixture script failed");
        dir
    });
    path_str(&dir.join(name))
}

/// `memviz ARGS` must succeed; its stdout.
fn ok(args: &[&str]) -> String {
    let (code, out, err) = memviz(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&ok(args)).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn the_text_names_settings_capacity_peaks_oom_site_and_smallest_capacity() {
    let f = planted("oomsite.pickle");
    let out = ok(&["whatif", &f, "--capacity", "32MiB"]);
    let expect = [
        format!("{f}, device 0"),
        "  settings            max_split_size_mb:512 (as recorded)".to_string(),
        "  capacity            32.0MiB (33554432 bytes)".to_string(),
        "  peak reserved       20.0MiB (20971520 bytes)".to_string(),
        "  cudaMalloc/cudaFree 1 / 0".to_string(),
        "  first OOM           trace event 4 (merged event 4): 30.0MiB (31457280 bytes) requested"
            .to_string(),
        "    site              train.py:30:big → torch/nn/functional.py:1701:relu".to_string(),
        "  smallest capacity   50.0MiB (52428800 bytes)".to_string(),
    ];
    for line in &expect {
        assert!(out.contains(line.as_str()), "missing {line:?} in\n{out}");
    }
    assert!(out.contains("the replay stops there"), "{out}");
    // Changed settings say what was recorded.
    let out = ok(&["whatif", &f, "--alloc-conf", "expandable_segments:True"]);
    assert!(
        out.contains("  settings            expandable_segments:True,max_split_size_mb:512 (recorded: max_split_size_mb:512)"),
        "{out}"
    );
    assert!(out.contains("  first OOM           none"), "{out}");
}

#[test]
fn the_oom_site_is_the_one_memviz_lines_names() {
    let f = planted("oomsite.pickle");
    let w = json(&["whatif", &f, "--capacity", "32MiB", "--json"]);
    let site = w[0]["first_oom"]["site"]
        .as_str()
        .expect("site")
        .to_string();
    let lines = json(&["lines", &f, "--json"]);
    let row = lines["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["line"] == 30)
        .expect("the row of train.py:30");
    assert_eq!(site, row["label"].as_str().expect("label"));
    assert_eq!(site, "train.py:30:big");
    // --user-code moves the site as it moves memviz lines' (torch counted as the user's).
    let w = json(&[
        "whatif",
        &f,
        "--capacity",
        "32MiB",
        "--json",
        "--user-code",
        "/usr/lib/python3/site-packages/torch",
    ]);
    let lines = json(&[
        "lines",
        &f,
        "--json",
        "--user-code",
        "/usr/lib/python3/site-packages/torch",
    ]);
    let labels: Vec<&str> = lines["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["label"].as_str())
        .collect();
    let site = w[0]["first_oom"]["site"].as_str().expect("site");
    assert!(labels.contains(&site), "{site} not in {labels:?}");
}

#[test]
fn json_has_the_issue_keys_with_their_types() {
    let f = planted("oomsite.pickle");
    let v = json(&["whatif", &f, "--capacity", "32MiB", "--json"]);
    let all = v.as_array().expect("a list, one object per device");
    assert_eq!(all.len(), 1);
    let d = &all[0];
    assert_eq!(d["device"], 0);
    assert_eq!(d["settings"], "max_split_size_mb:512");
    assert_eq!(d["recorded_settings"], "max_split_size_mb:512");
    assert_eq!(d["capacity"], 32 * MIB);
    assert_eq!(d["segment_allocs"], serde_json::json!([20 * MIB]));
    assert_eq!(d["segment_frees"], serde_json::json!([]));
    assert_eq!(d["peak_reserved"], 20 * MIB);
    assert_eq!(d["peak_allocated"], 16 * MIB);
    let fr = &d["fragmentation_at_peak"];
    for k in [
        "event",
        "reserved",
        "allocated",
        "free",
        "largest_free_block",
    ] {
        assert!(fr[k].is_u64(), "fragmentation_at_peak.{k}: {fr}");
    }
    assert_eq!(d["cuda_mallocs"], 1);
    let oom = &d["first_oom"];
    assert_eq!(oom["event"], 4);
    // The State History's numbering (no free_requested/free_completed pair before row 4 here).
    assert_eq!(oom["merged_event"], 4);
    assert_eq!(oom["requested"], 30 * MIB);
    assert_eq!(oom["site"], "train.py:30:big");
    assert_eq!(oom["recorded"], false);
    assert!(oom["free"]["largest_free_block"].is_u64(), "{oom}");
    assert_eq!(d["min_capacity"], 50 * MIB);
    assert_eq!(d["validation"], Value::Null);
    // Unconstrained: the recorded device, no OOM, both segments.
    let v = json(&["whatif", &f, "--json"]);
    let d = &v[0];
    assert_eq!(d["capacity"], Value::Null);
    assert_eq!(d["first_oom"], Value::Null);
    assert_eq!(d["segment_allocs"], serde_json::json!([20 * MIB, 30 * MIB]));
    assert_eq!(d["peak_reserved"], 50 * MIB);
    // Every device with a trace (multidevice: 0 and 2; device 1 has none).
    let multi = path_str(&fixture("multidevice.pickle"));
    let v = json(&["whatif", &multi, "--json"]);
    let devices: Vec<u64> = v
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|d| d["device"].as_u64())
        .collect();
    assert_eq!(devices, [0, 2]);
    let v = json(&["whatif", &multi, "--json", "--device", "2"]);
    assert_eq!(v.as_array().map(Vec::len), Some(1));
    assert_eq!(v[0]["device"], 2);
}

/// The recorded `segment_alloc` sizes of `device`, in order.
fn recorded_segment_allocs(path: &str, device: i64) -> Vec<u64> {
    let snap = common::load_path(std::path::Path::new(path));
    let tr = snap.trace(device).expect("trace");
    (0..tr.len())
        .filter(|&i| tr.action(i) == Some(memviz_snapshot::Action::SegmentAlloc))
        .filter_map(|i| tr.size(i))
        .collect()
}

#[test]
fn as_recorded_replays_the_recorded_segment_events() {
    for (f, device) in [
        (planted("oomsite.pickle"), 0),
        (path_str(&fixture("multidevice.pickle")), 2),
        (path_str(&fixture("proto5.pickle")), 0),
    ] {
        let d = device.to_string();
        let v = json(&["whatif", &f, "--as-recorded", "--json", "--device", &d]);
        let w = &v[0];
        let allocs: Vec<u64> = w["segment_allocs"]
            .as_array()
            .expect("segment_allocs")
            .iter()
            .filter_map(Value::as_u64)
            .collect();
        assert_eq!(allocs, recorded_segment_allocs(&f, device), "{f}");
        assert_eq!(w["validation"]["matches"], true, "{f}: {}", w["validation"]);
        assert_eq!(
            w["validation"]["recorded"]["peak_reserved"], w["peak_reserved"],
            "{f}"
        );
        let text = ok(&["whatif", &f, "--as-recorded", "--device", &d]);
        assert!(
            text.contains("  validation          the model matches the recording"),
            "{text}"
        );
    }
    // --as-recorded takes neither settings nor a capacity.
    let f = planted("oomsite.pickle");
    for extra in [
        ["--capacity", "1GiB"],
        ["--alloc-conf", "expandable_segments:True"],
    ] {
        let (code, _, err) = memviz(&["whatif", &f, "--as-recorded", extra[0], extra[1]]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.starts_with("memviz: ") && err.contains(extra[0]),
            "{err}"
        );
    }
}

#[test]
fn sweep_rows_cover_the_alternatives_and_mark_the_best() {
    let f = path_str(&fixture("multidevice.pickle"));
    let v = json(&["whatif", &f, "--sweep", "--json"]);
    let rows = v.as_array().expect("rows");
    let names: Vec<&str> = memviz_alloc::ALTERNATIVES.iter().map(|a| a.0).collect();
    assert_eq!(rows.len(), 2 * names.len());
    for device in [0u64, 2] {
        let mine: Vec<&Value> = rows.iter().filter(|r| r["device"] == device).collect();
        let got: Vec<&str> = mine.iter().filter_map(|r| r["name"].as_str()).collect();
        assert_eq!(got, names, "device {device}");
        let best: Vec<&&Value> = mine.iter().filter(|r| r["best"] == true).collect();
        assert_eq!(best.len(), 1, "device {device}");
        let least = mine
            .iter()
            .filter_map(|r| r["min_capacity"].as_u64())
            .min()
            .expect("a smallest capacity");
        assert_eq!(best[0]["min_capacity"], least);
        for r in &mine {
            assert!(r["peak_reserved"].is_u64() && r["fragmentation_at_peak"].is_object());
            assert!(r["settings"].is_string() && r.get("validation").is_some());
        }
    }
    let text = ok(&["whatif", &f, "--sweep", "--device", "0"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2 + names.len(), "{text}");
    assert!(lines[0].starts_with(&format!("{f}, device 0: capacity as recorded")));
    assert!(lines[1].starts_with("setting") && lines[1].contains("smallest capacity"));
    for (line, name) in lines[2..].iter().zip(&names) {
        assert!(line.starts_with(name), "{line}");
    }
    assert_eq!(
        lines.iter().filter(|l| l.ends_with("  best")).count(),
        1,
        "{text}"
    );
}

#[test]
fn bad_capacity_and_alloc_conf_are_refused_with_a_sentence() {
    let f = planted("oomsite.pickle");
    for (args, says) in [
        (["--capacity", "40XB"], "memviz: --capacity `40XB`: unknown unit `XB`"),
        (["--capacity", "forty"], "memviz: --capacity `forty`: expected bytes or a size"),
        (["--capacity", "0GiB"], "memviz: --capacity `0GiB`: a capacity must be more than 0"),
        (["--capacity=-1", "--json"], "memviz: --capacity `-1`: expected bytes"),
        (
            ["--alloc-conf", "bogus:1"],
            "memviz: --alloc-conf `bogus:1`: unknown allocator setting `bogus`",
        ),
        (
            ["--alloc-conf", "max_split_size_mb:5"],
            "memviz: --alloc-conf `max_split_size_mb:5`: allocator setting `max_split_size_mb:5`: expected an integer of at least 20 (MB)",
        ),
    ] {
        let mut all = vec!["whatif", f.as_str()];
        all.extend(args);
        let (code, out, err) = memviz(&all);
        assert_eq!((code, out.as_str()), (2, ""), "{all:?}: {err}");
        assert!(err.starts_with(says), "{all:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // Other spellings of a capacity.
    for c in ["52428800", "50MiB", "50M", "0.048828125GiB"] {
        let v = json(&["whatif", &f, "--capacity", c, "--json"]);
        assert_eq!(v[0]["capacity"], 50 * MIB, "{c}");
        assert_eq!(v[0]["first_oom"], Value::Null, "{c}");
    }
    let v = json(&["whatif", &f, "--capacity", "1GB", "--json"]);
    assert_eq!(v[0]["capacity"], 1_000_000_000u64);
    // An unknown device is the --device rule's error.
    let (code, _, err) = memviz(&["whatif", &f, "--device", "7"]);
    assert_eq!(code, 2);
    assert!(err.contains("no device 7 (devices: 0)"), "{err}");
}

#[test]
fn a_file_without_a_trace_has_nothing_to_replay() {
    let f = planted("notrace.pickle");
    let (code, out, err) = memviz(&["whatif", &f]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim_end(),
        format!("{f}: no trace to replay (the snapshot was taken without torch.cuda.memory._record_memory_history())")
    );
    assert_eq!(ok(&["whatif", &f, "--json"]).trim_end(), "[]");
    assert_eq!(ok(&["whatif", &f, "--sweep", "--json"]).trim_end(), "[]");
    let out = ok(&["whatif", &f, "--device", "0"]);
    assert!(
        out.starts_with(&format!("{f}, device 0: no trace to replay")),
        "{out}"
    );
    let empty = path_str(&fixture("empty.pickle"));
    assert_eq!(ok(&["whatif", &empty, "--json"]).trim_end(), "[]");
}

#[test]
fn the_typed_answer_is_what_the_binary_prints() {
    let f = planted("oomsite.pickle");
    let multi = path_str(&fixture("multidevice.pickle"));
    for cmd in [
        vec!["whatif", f.as_str(), "--json", "--capacity", "32MiB"],
        vec!["whatif", f.as_str(), "--json", "--as-recorded"],
        vec![
            "whatif",
            multi.as_str(),
            "--json",
            "--sweep",
            "--device",
            "0",
        ],
    ] {
        let argv: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
        let (r, warnings) = memviz_cli::answer::answer(&argv, &[]);
        assert!(warnings.is_empty(), "{warnings:?}");
        let got = serde_json::to_value(r.expect("answers")).expect("serialises");
        assert_eq!(got, json(&cmd), "{cmd:?}");
    }
    let argv: Vec<String> = ["whatif", f.as_str(), "--capacity", "12 parsecs"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (r, _) = memviz_cli::answer::answer(&argv, &[]);
    assert_eq!(
        r.expect_err("a bad capacity").kind,
        memviz_cli::ErrorKind::BadArgument
    );
}
