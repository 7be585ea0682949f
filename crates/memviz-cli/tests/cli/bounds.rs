//! Issue 14's analysis and CLI bounds, on small hand-written versions of the hostile shapes
//! (written as pickles by `common::pickle`, the way torch writes them): many devices, many
//! segments, many tiny events, a giant stack, a trace that ends after `empty_cache()`, many
//! `oom` events, many iterations; and the smaller faults: a closed stdout, the `oom` verdict
//! of a request that needs a new segment, a failed allocation. The tests assert behaviour;
//! the sizes that show the bounds are measured by the benchmark, not here.

use crate::common;
use common::pickle::{py, Block, Entry, Event, Segment, Snap};
use common::*;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

const MIB: u64 = 1 << 20;
const BASE: u64 = 0x7f00_0000_0000;
const T0: i64 = 1_760_000_000_000_000;

fn dir() -> PathBuf {
    repo_root()
        .join("target/test-fixtures")
        .join(format!("bounds-{}", std::process::id()))
}

fn segment(device: i64, address: u64, blocks: Vec<Block>) -> Segment {
    Segment {
        device,
        address,
        total_size: blocks.iter().map(|b| b.size).sum(),
        stream: 0,
        expandable: false,
        blocks,
    }
}

fn active(size: u64, stack: Option<usize>) -> Block {
    Block {
        size,
        requested: size,
        state: "active_allocated",
        stack,
    }
}

fn inactive(size: u64) -> Block {
    Block {
        size,
        requested: 0,
        state: "inactive",
        stack: None,
    }
}

fn new(e: Event) -> Entry {
    Entry::New(e)
}

/// A snapshot whose every command prints far more than a pipe holds: 3,000 devices, 3,000
/// live allocations with their own stacks and source lines on device 0, 2,000 oom events.
fn big_output() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let n = 3000;
        let mut s = Snap {
            stacks: (0..n)
                .map(|i| vec![py(&format!("f{i}"), i as i64 + 1)])
                .collect(),
            shared_empty_traces: n - 1,
            ..Snap::default()
        };
        let blocks = (0..n).map(|i| active(512, Some(i))).collect();
        s.segments.push(segment(0, BASE, blocks));
        for d in 1..n as i64 {
            s.segments.push(segment(
                d,
                BASE + d as u64 * 4 * MIB,
                vec![inactive(2 * MIB)],
            ));
        }
        let mut tr: Vec<Entry> = (0..n)
            .map(|i| {
                new(Event::new("alloc", BASE + i as u64 * 512, 512)
                    .at(T0 + i as i64)
                    .with_stack(i))
            })
            .collect();
        tr.push(new(Event::oom(6 * MIB, MIB)));
        let o = tr.len() - 1;
        tr.extend((1..2000).map(|_| Entry::Repeat(o)));
        s.traces.push(tr);
        s.write(&dir(), "big_output.pickle")
    })
}

fn spawn(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_memviz"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("memviz runs")
}

fn stderr_of(child: std::process::Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().expect("memviz ends");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `memviz … | head -1`: a reader that stops early is a normal end (exit 0, nothing on stderr),
/// for every command, whether it closes the pipe before the first write or after one line.
#[test]
fn a_closed_stdout_is_a_quiet_end() {
    let f = path_str(big_output());
    let commands: Vec<Vec<&str>> = vec![
        vec!["summary", &f],
        vec!["summary", &f, "--json"],
        vec!["state", &f, "--device", "0", "--event", "-1", "--json"],
        vec!["oom", &f],
        vec!["oom", &f, "--json"],
        vec!["folded", &f],
        vec!["folded", &f, "--json"],
        vec!["folded", &f, "--lifetime"],
        vec!["diff", &f, &f],
        vec!["diff", &f, &f, "--json"],
        vec!["diff", &f, &f, "--folded"],
        vec!["leaks", &f],
        vec!["leaks", &f, "--json"],
        vec!["lines", &f],
        vec!["lines", &f, "--json"],
        vec!["bench", &f],
        vec!["help"],
    ];
    for args in &commands {
        // Closed before the command writes anything.
        let mut child = spawn(args);
        drop(child.stdout.take());
        let (code, err) = stderr_of(child);
        assert_eq!(code, Some(0), "{args:?} with stdout closed: {err}");
        assert!(err.is_empty(), "{args:?} with stdout closed: {err}");
        // Closed after the first line (`| head -1`).
        let mut child = spawn(args);
        if let Some(out) = child.stdout.take() {
            let mut first = String::new();
            BufReader::new(out).read_line(&mut first).expect("read");
        }
        let (code, err) = stderr_of(child);
        assert_eq!(code, Some(0), "{args:?} | head -1: {err}");
        assert!(!err.contains("panicked"), "{args:?} | head -1: {err}");
    }
    // The outputs that were cut are larger than a pipe's buffer (64 KiB): the pipe really
    // closed under a write.
    for args in [vec!["summary", &f], vec!["oom", &f], vec!["folded", &f]] {
        let (code, out, _) = memviz(&args);
        assert_eq!(code, 0);
        assert!(out.len() > 64 << 10, "{args:?} prints {} bytes", out.len());
    }
}

/// A request that no free block holds needs a new segment (20 MiB for 6 MiB): the verdict
/// compares that with the device's free bytes instead of saying that the cache and the device
/// together would hold the request "but neither alone does" (issue 14).
#[test]
fn the_oom_verdict_says_when_a_new_segment_is_needed() {
    let mut s = Snap::default();
    // 20 MiB reserved, all of it allocated: nothing free in the cache.
    s.segments
        .push(segment(0, BASE, vec![active(20 * MIB, None)]));
    s.traces.push(vec![
        new(Event::oom(6 * MIB, 12 * MIB)),
        new(Event::oom(6 * MIB, 30 * MIB)),
        new(Event::oom(6 * MIB, 2 * MIB)),
    ]);
    let f = path_str(&s.write(&dir(), "oom_verdict.pickle"));
    let (code, out, err) = memviz(&["oom", &f]);
    assert_eq!(code, 0, "{err}");
    // One line per report (the indented lines under it name the biggest live blocks' sites).
    let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with("    ")).collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].contains("the request needs a new segment of 20.0MiB")
            && lines[0].contains("more than the 12.0MiB free on the device"),
        "{}",
        lines[0]
    );
    assert!(!out.contains("neither alone"), "{out}");
    assert!(
        lines[1].contains("enough for the new 20.0MiB segment"),
        "{}",
        lines[1]
    );
    assert!(lines[2].starts_with("device 0, event 2: Genuinely out of memory"));
    let (_, json, _) = memviz(&["oom", &f, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v[0]["kind"], "out_of_memory");
    assert_eq!(v[1]["kind"], "allocation_failed");
    assert_eq!(v[0]["reserved_free_bytes"], 0);
    assert_eq!(v[0]["device"], 0);
}

/// Many devices: each device's numbers come from its own segments (grouped once).
#[test]
fn many_devices() {
    let n = 2000i64;
    let mut s = Snap {
        shared_empty_traces: n as usize,
        ..Snap::default()
    };
    // Devices in a scrambled order, device d with d % 3 segments of 2 MiB (one 512-byte live
    // block each).
    for k in 0..n {
        let d = (k * 7919) % n;
        for j in 0..(d % 3) as u64 {
            let a = BASE + (d as u64 * 4 + j) * 2 * MIB;
            s.segments.push(segment(
                d,
                a,
                vec![active(512, None), inactive(2 * MIB - 512)],
            ));
        }
    }
    let f = s.write(&dir(), "many_devices.pickle");
    let (code, out, err) = memviz(&["summary", &path_str(&f), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let devices = v["devices"].as_array().expect("devices");
    assert_eq!(devices.len(), n as usize);
    for (d, dev) in devices.iter().enumerate() {
        let segs = (d % 3) as u64;
        assert_eq!(dev["device"], d as i64);
        assert_eq!(dev["segments"], segs, "device {d}");
        assert_eq!(dev["blocks"], 2 * segs, "device {d}");
        assert_eq!(dev["reserved_bytes"], segs * 2 * MIB, "device {d}");
        assert_eq!(dev["allocated_bytes"], segs * 512, "device {d}");
        assert_eq!(dev["timeline_allocations"], segs, "device {d}: ghosts");
    }
    // The streamed JSON is the library's summary.
    let snap = load_path(&f);
    assert_eq!(
        out.trim_end(),
        memviz_analysis::summary::summarize(&snap).to_json()
    );
    let (code, out, _) = memviz(&["oom", &path_str(&f)]);
    assert_eq!(
        (code, out.trim_end()),
        (0, &*format!("{}: no oom events", path_str(&f)))
    );
}

/// Many `oom` events, between changes of the state: every report is the one made from the
/// event's own state (rebuilt from the history and explained by `explain_oom`).
#[test]
fn many_oom_events() {
    let mut s = Snap::default();
    let mut blocks = Vec::new();
    for i in 0..200u64 {
        blocks.push(active(1024 * (1 + i % 5), None));
        blocks.push(inactive(1024));
    }
    s.segments.push(segment(0, BASE, blocks));
    let x = BASE + 1024;
    let mut tr = vec![
        new(Event::new("alloc", x, 1024)),
        new(Event::oom(6 * MIB, MIB)),
        new(Event::new("free_requested", x, 1024)),
        new(Event::new("free_completed", x, 1024)),
        new(Event::oom(3000, 0)),
    ];
    // The block events are the same three dicts again; each oom event is its own dict (the
    // model keeps `device_free` only once for a dict listed many times).
    for i in 5..2500u64 {
        tr.push(match i % 5 {
            1 => new(Event::oom(6 * MIB, i * 4096)),
            4 => new(Event::oom(3000, 0)),
            k => Entry::Repeat(k as usize),
        });
    }
    s.traces.push(tr);
    let f = s.write(&dir(), "many_ooms.pickle");
    let (code, out, err) = memviz(&["oom", &path_str(&f), "--json"]);
    assert_eq!(code, 0, "{err}");
    let got: Vec<serde_json::Value> = serde_json::from_str(&out).expect("json");
    assert_eq!(got.len(), 1000);
    assert_eq!(got[998]["device_free_bytes"], 2496 * 4096);
    let snap = load_path(&f);
    let h = memviz_analysis::state::History::build(&snap, 0, 64);
    for r in &got {
        let k = r["event"].as_u64().expect("event") as usize;
        let e = h.event(&snap, k).expect("event");
        let st = h.state_after(&snap, k).expect("state");
        let free = snap.traces[0].device_free_of(e.row);
        let want = memviz_analysis::state::explain_oom(&st, k, e.size, free, e.stream, e.pool);
        let mut want = serde_json::to_value(&want).expect("json");
        want["device"] = 0.into();
        // The CLI adds the site of each of the biggest live blocks.
        let mut r = r.clone();
        let sites = r
            .as_object_mut()
            .and_then(|o| o.remove("biggest_live_sites"))
            .expect("biggest_live_sites");
        assert_eq!(
            sites.as_array().map(Vec::len),
            want["biggest_live"].as_array().map(Vec::len),
            "event {k}"
        );
        assert_eq!(r, want, "event {k}");
    }
}

/// A trace that ends nearly empty after `empty_cache()`: `memviz state` shows the peak and
/// the end, and the history's checkpoints stay within a few bytes per event although the
/// state in the middle is 3,000 segments and blocks.
#[test]
fn empty_cache_after_a_peak() {
    let n = 3000u64;
    let mut tr = Vec::new();
    for i in 0..n {
        let a = BASE + i * 2 * MIB;
        tr.push(new(Event::new("segment_alloc", a, 2 * MIB)));
        tr.push(new(Event::new("alloc", a, 2 * MIB)));
    }
    for i in 0..n {
        let a = BASE + i * 2 * MIB;
        tr.push(new(Event::new("free_requested", a, 2 * MIB)));
        tr.push(new(Event::new("free_completed", a, 2 * MIB)));
    }
    for i in 0..n {
        tr.push(new(Event::new("segment_free", BASE + i * 2 * MIB, 2 * MIB)));
    }
    let s = Snap {
        traces: vec![tr],
        ..Snap::default()
    };
    let f = path_str(&s.write(&dir(), "empty_cache.pickle"));
    let state = |event: &str| -> serde_json::Value {
        let (code, out, err) = memviz(&["state", &f, "--device", "0", "--event", event, "--json"]);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).expect("json")
    };
    let peak = state(&(2 * n - 1).to_string());
    assert_eq!(
        (peak["segments"].as_u64(), peak["blocks"].as_u64()),
        (Some(n), Some(n))
    );
    assert_eq!(peak["reserved_bytes"].as_u64(), Some(n * 2 * MIB));
    let end = state("-1");
    assert_eq!(
        (end["segments"].as_u64(), end["blocks"].as_u64()),
        (Some(0), Some(0))
    );
    let snap = load_path(Path::new(&f));
    let h = memviz_analysis::state::History::build_within(
        &snap,
        0,
        memviz_analysis::state::BYTES_PER_EVENT,
    );
    let events = h.len();
    assert_eq!(events, 4 * n as usize);
    assert!(
        h.checkpoint_bytes() <= 8 * events + 4096,
        "{} checkpoint bytes for {events} events",
        h.checkpoint_bytes()
    );
    // An interval chosen for a byte budget holds to it although the final state is empty.
    let budget = 256 << 10;
    let iv = memviz_analysis::state::History::interval_for(&snap, 0, budget);
    let every = memviz_analysis::state::History::build(&snap, 0, iv);
    assert!(
        every.checkpoint_bytes() <= budget + 4096,
        "{} checkpoint bytes at interval {iv}",
        every.checkpoint_bytes()
    );
    // Every selection still gives the state (compared with a history of dense checkpoints).
    let dense = memviz_analysis::state::History::build(&snap, 0, 16);
    for k in (0..events).step_by(997) {
        assert_eq!(
            h.state_after(&snap, k),
            dense.state_after(&snap, k),
            "event {k}"
        );
    }
}

/// Many tiny events: one alloc / free pair dict written once and referenced 30 k times.
#[test]
fn many_tiny_events() {
    let a = BASE;
    let mut tr = vec![
        new(Event::new("alloc", a, 512).at(T0)),
        new(Event::new("free_requested", a, 512).at(T0)),
        new(Event::new("free_completed", a, 512).at(T0)),
    ];
    for i in 3..90_000 {
        tr.push(Entry::Repeat(i % 3));
    }
    let s = Snap {
        segments: vec![segment(0, a, vec![inactive(2 * MIB)])],
        traces: vec![tr],
        ..Snap::default()
    };
    let f = s.write(&dir(), "tiny_events.pickle");
    let bytes = std::fs::metadata(&f).expect("file").len();
    assert!(bytes < 300_000, "{bytes} bytes");
    let f = path_str(&f);
    let (code, out, err) = memviz(&["summary", &f, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let d = &v["devices"][0];
    assert_eq!(d["trace_entries"], 90_000);
    assert_eq!(d["actions"]["alloc"], 30_000);
    assert_eq!(d["timeline_allocations"], 30_000);
    assert_eq!(
        (
            d["peak_live_bytes"].as_u64(),
            d["final_live_bytes"].as_u64()
        ),
        (Some(512), Some(0))
    );
    for args in [
        vec!["leaks", &f, "--json"],
        vec!["lines", &f, "--json"],
        vec!["folded", &f, "--lifetime"],
        vec!["oom", &f],
        vec!["state", &f, "--device", "0", "--event", "44444", "--json"],
    ] {
        let (code, _, err) = memviz(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    // Bytes x timesteps: the area under the timeline's outline (each allocation is drawn at its
    // own timestep and at its free's).
    let (_, folded, _) = memviz(&["folded", &f, "--lifetime"]);
    let l = loaded(Path::new(&f), 0);
    let area: u64 = l.layout.live_at_step().iter().sum();
    assert_eq!(area, 30_000 * 512 * 2);
    assert_eq!(folded.trim_end(), format!("<no frames> {area}"));
}

/// One giant stack (20 k frames) shared by 300 allocations: folded prints it once per line,
/// frame by frame; lines and diff --folded handle it.
#[test]
fn a_giant_stack() {
    let frames = 20_000;
    let big: Vec<_> = (0..frames)
        .map(|i| (format!("c10::fn{i}"), "??".to_string(), 0))
        .collect();
    let mut with_user = big.clone();
    with_user.insert(0, py("forward", 7));
    let mut s = Snap {
        stacks: vec![big, with_user],
        ..Snap::default()
    };
    let mut tr = Vec::new();
    let mut blocks = Vec::new();
    for i in 0..300u64 {
        let st = (i % 2) as usize;
        tr.push(new(Event::new("alloc", BASE + i * 512, 512).with_stack(st)));
        blocks.push(active(512, Some(st)));
    }
    s.segments.push(segment(0, BASE, blocks));
    s.traces.push(tr);
    let f = path_str(&s.write(&dir(), "giant_stack.pickle"));
    let (code, out, err) = memviz(&["folded", &f, "--all-frames"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "two stacks");
    for l in &lines {
        let (stack, bytes) = l.rsplit_once(' ').expect("value");
        assert_eq!(bytes, "76800");
        assert!(stack.starts_with("??:0:c10::fn19999;??:0:c10::fn19998;"));
        assert!(stack.matches(';').count() >= frames - 1);
    }
    assert!(
        lines[1].ends_with(";/src/model.py:7:forward 76800"),
        "{}",
        &lines[1][lines[1].len() - 60..]
    );
    let (code, out, err) = memviz(&["lines", &f, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let rows = v["rows"].as_array().expect("rows");
    assert!(rows
        .iter()
        .any(|r| r["name"] == "forward" && r["count"] == 150));
    let (code, out, err) = memviz(&["diff", &f, &f, "--folded", "--all-frames"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 2);
    assert!(out.lines().all(|l| l.ends_with(" 76800 76800")));
}

/// Many iterations: a stack that grows by one block per iteration is the one growth suspect;
/// stacks allocated and freed within their iteration are not suspects.
#[test]
fn many_iterations() {
    let k = 600u64;
    let mut s = Snap {
        stacks: vec![vec![py("grow", 1)]],
        ..Snap::default()
    };
    s.stacks
        .extend((0..k).map(|i| vec![py(&format!("step{i}"), 100 + i as i64)]));
    let mut tr = Vec::new();
    for i in 0..k {
        let t = T0 + i as i64 * 100;
        s.annotations
            .push((format!("ProfilerStep#{i}"), "START", 0, t));
        let g = BASE + i * 1024;
        tr.push(new(Event::new("alloc", g, 1024).at(t + 1).with_stack(0)));
        let tmp = BASE + (1 << 30) + i * 4096;
        tr.push(new(Event::new("alloc", tmp, 4096)
            .at(t + 2)
            .with_stack(1 + i as usize)));
        tr.push(new(Event::new("free_requested", tmp, 4096).at(t + 3)));
        tr.push(new(Event::new("free_completed", tmp, 4096).at(t + 3)));
        s.annotations
            .push((format!("ProfilerStep#{i}"), "END", 0, t + 50));
    }
    let blocks = (0..k).map(|_| active(1024, Some(0))).collect();
    s.segments.push(segment(0, BASE, blocks));
    s.traces.push(tr);
    let f = path_str(&s.write(&dir(), "iterations.pickle"));
    let (code, out, err) = memviz(&["leaks", &f, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let suspects = v["suspects"].as_array().expect("suspects");
    let growth: Vec<&serde_json::Value> = suspects
        .iter()
        .filter(|s| s["kind"] == "iteration_growth")
        .collect();
    assert_eq!(growth.len(), 1, "{out}");
    assert_eq!(growth[0]["stack"][0], "/src/model.py:1:grow");
    let per = growth[0]["growth_per_iteration"].as_f64().expect("slope");
    assert!((per - 1024.0).abs() < 1e-6, "{per}");
    assert_eq!(growth[0]["count"], k);
    assert!(
        suspects
            .iter()
            .all(|s| s["stack"][0] == "/src/model.py:1:grow"),
        "only the growing stack is suspect"
    );
}

/// Segment maps above many segments that the trace allocates afterwards: the history finds the
/// segment before an address without walking over the removed ones, and gets it right.
#[test]
fn maps_above_removed_segments() {
    let n = 2000u64;
    let bottom = BASE - 4 * MIB;
    let x = BASE + (n + 10) * 2 * MIB;
    let mut s = Snap::default();
    s.segments.push(segment(0, bottom, vec![inactive(2 * MIB)]));
    for i in 0..n {
        s.segments
            .push(segment(0, BASE + i * 2 * MIB, vec![inactive(2 * MIB)]));
    }
    let mut tr = vec![new(Event::new("segment_map", x, 2 * MIB))];
    tr.extend((1..n).map(|_| Entry::Repeat(0)));
    tr.extend((0..n).map(|i| new(Event::new("segment_alloc", BASE + i * 2 * MIB, 2 * MIB))));
    s.traces.push(tr);
    let f = path_str(&s.write(&dir(), "maps.pickle"));
    // After event n + 9 the first ten segment_allocs are done.
    for (event, segs) in [("0", 1), ("-1", n + 1), (&*(n + 9).to_string(), 11)] {
        let (code, out, err) = memviz(&["state", &f, "--device", "0", "--event", event, "--json"]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("json");
        assert_eq!(v["segments"].as_u64(), Some(segs), "event {event}: {out}");
        assert_eq!(
            v["reserved_bytes"].as_u64(),
            Some(segs * 2 * MIB),
            "event {event}"
        );
    }
}

/// A failed allocation is a sentence and exit 2, never an abort (exit 134).
#[test]
fn out_of_memory_is_a_sentence() {
    let f = path_str(big_output());
    let out = Command::new(env!("CARGO_BIN_EXE_memviz"))
        .args(["summary", &f])
        .env("MEMVIZ_MAX_MEMORY", "1M")
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("memviz runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("memviz: out of memory: an allocation of")
            && err.contains("MEMVIZ_MAX_MEMORY"),
        "{err}"
    );
}

/// One long phase name (50 KB) shared by 20 k annotations: phases are told apart by string id,
/// not copied per annotation; a sentence quotes the name cut to 200 bytes.
#[test]
fn a_long_phase_name_shared_by_many_annotations() {
    let name = format!("{}#1", "P".repeat(50_000));
    let mut s = Snap {
        segments: vec![segment(0, BASE, vec![inactive(2 * MIB)])],
        ..Snap::default()
    };
    s.traces.push(vec![
        new(Event::new("alloc", BASE, 512).at(T0 + 1)),
        new(Event::new("free_requested", BASE, 512).at(T0 + 2)),
        new(Event::new("free_completed", BASE, 512).at(T0 + 2)),
    ]);
    for _ in 0..10_000 {
        s.annotations.push((name.clone(), "START", 0, T0));
        s.annotations.push((name.clone(), "END", 0, T0 + 5));
    }
    let f = s.write(&dir(), "long_phase_name.pickle");
    assert!(std::fs::metadata(&f).expect("file").len() < 1_000_000);
    let f = path_str(&f);
    let (code, out, err) = memviz(&["leaks", &f]);
    assert_eq!(code, 0, "{err}");
    let first = out.lines().next().expect("a line");
    assert!(
        first.contains(&format!("({}…, 10000 phases)", &name[..200])),
        "{}",
        &first[..first.len().min(400)]
    );
    assert!(first.len() < 600, "{} bytes", first.len());
    let (code, out, err) = memviz(&["folded", &f, "--phase", &name]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
}

/// Blocks that overlap (never from a real allocator; here a block the trace allocates across
/// two live ones) make each `oom` report scan its segment: past `WORK_LIMIT` steps `memviz oom`
/// stops with a sentence (exit 2) rather than running for minutes.
#[test]
fn overlapping_blocks_under_many_oom_events_are_refused_with_a_sentence() {
    let n = 35_000u64;
    let mut s = Snap::default();
    s.segments.push(segment(
        0,
        BASE,
        (0..n).map(|_| active(512, None)).collect(),
    ));
    let y = BASE + 7;
    let mut tr = vec![
        new(Event::new("alloc", y, 1024)),
        new(Event::oom(6 * MIB, MIB)),
        new(Event::new("free_requested", y, 1024)),
        new(Event::new("free_completed", y, 1024)),
        new(Event::oom(6 * MIB, MIB)),
    ];
    for i in 5..25_000 {
        tr.push(Entry::Repeat(i % 5));
    }
    s.traces.push(tr);
    let f = path_str(&s.write(&dir(), "overlapping_blocks.pickle"));
    let (code, out, err) = memviz(&["oom", &f]);
    assert_eq!(code, 2, "{}", &out[..out.len().min(300)]);
    assert!(
        err.contains(
            "device 0: explaining its 10000 oom events would take more than 134217728 steps: \
             its blocks or segments overlap (a real allocator's never do), so each state is \
             scanned in full"
        ),
        "{err}"
    );
    assert!(out.is_empty(), "nothing printed before the refusal");
    // Fewer events stay within the limit and are explained.
    let mut s2 = s.clone();
    s2.traces[0].truncate(500);
    let f = path_str(&s2.write(&dir(), "overlapping_blocks_few.pickle"));
    let (code, out, err) = memviz(&["oom", &f]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("device ")).count(),
        200
    );
}
