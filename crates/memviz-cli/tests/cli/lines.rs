//! The per-source-line table, the live-tensor table and search (memviz_analysis::lines /
//! ::search) and `memviz lines`: a hand-made fixture with known stacks checked by hand, the
//! generated fixtures and the real corpus checked by invariants, hostile names, the CLI's JSON
//! shape and exit codes, and (ignored) timings on big traces.

use crate::common;
use common::*;
use memviz_present::layout::{Layout, LayoutOptions, NO_EVENT};
use memviz_analysis::lines::{
    line_elements, line_table, live_elements_at, live_table, row_elements, LineOptions, LineRow,
    NO_FRAMES,
};
use memviz_analysis::search::{parse_query, search, Query};
use memviz_analysis::site::{SiteCache, UserCode, AUTOGRAD_FILE};
use memviz_analysis::timeline::{self, Origin, Timeline};
use memviz_snapshot::NO_TIME;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Base address of the fixture's segment.
const A: u64 = 0x7f00_0000_0000;
const USER: &str = "/home/u/train.py";
const ALLOC_FRAME: &str = "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, unsigned long, CUstream_st*)";
const MUL_BACKWARD: &str =
    "torch::autograd::generated::MulBackward0::apply(std::vector<at::Tensor>&&)";

/// The fixture (elements by id, see `lines_fixture`):
/// e0 a1 1000 B stack A (train.py:10)   freed at event 3
/// e1 a2 3000 B stack A                 live to the end
/// e2 b1  500 B stack B (train.py:20)
/// e3 c1 7000 B stack C (C++ only)      freed at event 8
/// e4 d1  200 B stack D (torch Python only)
/// e5 e1   64 B empty stack, user metadata and compile context
/// e6 f1   32 B only a `_start` frame (dropped by §7's filter)
/// e7 unmatched free 128 B, free site train.py:40 `cleanup`
/// e8 a3  100 B stack A at A+0 (second lifetime of that address: label b…_1)
/// e9 ghost 256 B, block frames train.py:30 `init`
/// Live: 384 at the start, peak 11180 after event 7 (everything but a1 and a3).
const FIXTURE: &str = r#"
import pickle, sys
A = 0x7f0000000000
USER = "/home/u/train.py"
def fr(filename, line, name):
    return {"name": name, "filename": filename, "line": line}
ALLOC = fr("CUDACachingAllocator.cpp", 0,
           "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, unsigned long, CUstream_st*)")
UNWIND = fr("??", 0, "torch::unwind::unwind()")
EMPTY = fr("??", 0, "at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)")
LINEAR = fr("/env/lib/python3.11/site-packages/torch/nn/modules/linear.py", 125, "forward")
EVAL = fr("/usr/src/python/Python/ceval.c", 0, "_PyEval_EvalFrameDefault")
MAIN = fr(USER, 50, "main")
STACK_A = [UNWIND, ALLOC, EMPTY, LINEAR, EVAL, fr(USER, 10, "step"), MAIN]
STACK_B = [ALLOC, EMPTY, fr(USER, 20, "step"), MAIN]
STACK_C = [UNWIND, ALLOC, EMPTY,
           fr("??", 0, "torch::autograd::generated::MulBackward0::apply(std::vector<at::Tensor>&&)"),
           fr("myext.cpp", 12, "my_ext::launch(int)")]
STACK_D = [fr("/env/lib/python3.11/site-packages/torch/optim/adam.py", 300, "_single_tensor_adam")]
START_ONLY = [fr("??", 0, "_start")]
FREE_SITE = [fr(USER, 40, "cleanup"), MAIN]
GHOST = [fr(USER, 30, "init"), MAIN]
def ev(action, off, size, frames=(), um="", cc="N/A", t=None):
    return {"action": action, "addr": A + off, "size": size, "stream": 0,
            "time_us": t, "compile_context": cc, "user_metadata": um, "frames": list(frames)}
trace = [
    ev("alloc", 0, 1000, STACK_A),
    ev("alloc", 1024, 3000, STACK_A),
    ev("alloc", 4096, 500, STACK_B),
    ev("free_requested", 0, 1000, STACK_A),
    ev("free_completed", 0, 1000, STACK_A),
    ev("alloc", 8192, 7000, STACK_C),
    ev("alloc", 16384, 200, STACK_D),
    ev("alloc", 20480, 64, [], um="phase=warmup", cc="Torch-Compiled Region: 0/1"),
    ev("alloc", 24576, 32, START_ONLY),
    ev("free_requested", 8192, 7000, STACK_C),
    ev("free_completed", 8192, 7000, STACK_C),
    ev("free_completed", 30000, 128, FREE_SITE),
    ev("alloc", 0, 100, STACK_A),
]
for i, e in enumerate(trace):
    e["time_us"] = 1_700_000_000_000_000 + 1000 * i
# Final state: the live allocations and the ghost, gaps inactive.
TOTAL = 65536
live = [(0, 100, STACK_A), (1024, 3000, STACK_A), (4096, 500, STACK_B), (16384, 200, STACK_D),
        (20480, 64, []), (24576, 32, START_ONLY), (40960, 256, GHOST)]
blocks, pos = [], 0
for off, size, frames in live:
    if off > pos:
        blocks.append({"address": A + pos, "size": off - pos, "requested_size": 0,
                       "state": "inactive", "frames": []})
    blocks.append({"address": A + off, "size": size, "requested_size": size,
                   "state": "active_allocated", "frames": frames})
    pos = off + size
blocks.append({"address": A + pos, "size": TOTAL - pos, "requested_size": 0,
               "state": "inactive", "frames": []})
alloc = sum(s for _, s, _ in live)
seg = {"device": 0, "address": A, "total_size": TOTAL, "allocated_size": alloc,
       "active_size": alloc, "requested_size": alloc, "stream": 0, "segment_type": "large",
       "segment_pool_id": (0, 0), "is_expandable": False, "frames": [], "blocks": blocks}
with open(sys.argv[1], "wb") as f:
    pickle.dump({"segments": [seg], "device_traces": [trace], "allocator_settings": {}}, f,
                protocol=4)
"#;

fn lines_fixture() -> PathBuf {
    let dir = fixtures_dir();
    let path = dir.join("lines.pickle");
    let script = dir.join("lines_fixture.py");
    python_file(&script, FIXTURE, &path, "lines fixture script failed");
    path
}

fn hostile_fixture() -> PathBuf {
    generate_hostile(fixtures_dir().join("hostile_lines.pickle"))
}

fn row(
    file: &str,
    line: i64,
    name: &str,
    live: u64,
    total: u64,
    count: u64,
    largest: u64,
) -> LineRow {
    LineRow {
        file: file.to_string(),
        line,
        name: name.to_string(),
        live_at_peak_bytes: live,
        total_bytes: total,
        count,
        largest_bytes: largest,
    }
}

#[test]
fn fixture_elements_are_as_documented() {
    let f = loaded(&lines_fixture(), 0);
    let sizes: Vec<u64> = f.tl.elements.iter().map(|e| e.size_bytes).collect();
    assert_eq!(sizes, [1000, 3000, 500, 7000, 200, 64, 32, 128, 100, 256]);
    assert!(matches!(
        f.tl.elements[7].origin,
        Origin::UnmatchedFree { .. }
    ));
    assert!(matches!(f.tl.elements[9].origin, Origin::Ghost { .. }));
    assert_eq!(f.tl.start_live_bytes, 384);
    assert_eq!(f.tl.peak_live_bytes, 11180);
    assert_eq!(f.layout.peak_bytes, 11180);
}

#[test]
fn line_table_by_hand() {
    let f = loaded(&lines_fixture(), 0);
    let rows = line_table(&f.snap, 0, &f.tl, &f.layout, LineOptions::default());
    assert_eq!(
        rows,
        [
            // C++-only stack: no Python frame, so the autograd node its C++ frames run
            // (never the allocator's malloc / empty_cuda).
            row(AUTOGRAD_FILE, 0, "MulBackward0", 7000, 7000, 1, 7000),
            // Through torch's linear.py, ceval.c and two C++ frames to the user's line.
            row(USER, 10, "step", 3000, 4100, 3, 3000),
            row(USER, 20, "step", 500, 500, 1, 500),
            // The ghost block: its frames.
            row(USER, 30, "init", 256, 256, 1, 256),
            // torch's own Python only: no user frame, so the innermost library frame.
            row(
                "/env/lib/python3.11/site-packages/torch/optim/adam.py",
                300,
                "_single_tensor_adam",
                200,
                200,
                1,
                200
            ),
            // The unmatched free: the free site.
            row(USER, 40, "cleanup", 128, 128, 1, 128),
            // An empty stack and a stack of only `_start` (dropped by §7's filter).
            row(NO_FRAMES, 0, "", 96, 96, 2, 64),
        ]
    );
    // Elements of a line, and of a row.
    let el = |file: &str, line: i64| {
        line_elements(&f.snap, 0, &f.tl, LineOptions::default(), file, line)
    };
    assert_eq!(el(USER, 10), [0, 1, 8]);
    assert_eq!(el(USER, 20), [2]);
    assert_eq!(el(NO_FRAMES, 0), [5, 6]);
    assert_eq!(el(AUTOGRAD_FILE, 0), [3]);
    assert_eq!(el("??", 0), Vec::<u32>::new());
    assert_eq!(el(USER, 11), Vec::<u32>::new());
    assert_eq!(el("nope", 10), Vec::<u32>::new());
    for r in &rows {
        let got = row_elements(&f.snap, 0, &f.tl, LineOptions::default(), r);
        assert_eq!(got.len() as u64, r.count, "{r:?}");
    }

    // --user-code: torch counted as the user's own, so linear.py for stack A (and adam.py
    // becomes a user site).
    let mut own = SiteCache::new(&f.snap, UserCode::parse("torch").expect("parses"));
    let torch: Vec<LineRow> = memviz_analysis::lines::site_table(
        &f.snap,
        0,
        &f.tl,
        &f.layout,
        LineOptions::default(),
        &mut own,
    )
    .into_iter()
    .map(|r| r.row)
    .collect();
    assert!(torch.contains(&row(
        "/env/lib/python3.11/site-packages/torch/nn/modules/linear.py",
        125,
        "forward",
        3000,
        4100,
        3,
        3000
    )));
    // --all-frames: the innermost kept frame (the allocator's malloc for every C++ stack).
    let all = line_table(&f.snap, 0, &f.tl, &f.layout, LineOptions::ALL_FRAMES);
    assert_eq!(
        all[0],
        row(
            "CUDACachingAllocator.cpp",
            0,
            ALLOC_FRAME,
            10500,
            11600,
            5,
            7000
        )
    );
    assert_eq!(all.len(), 5);
    assert!(all.contains(&row(NO_FRAMES, 0, "", 96, 96, 2, 64)));
}

#[test]
fn live_table_by_hand() {
    let f = loaded(&lines_fixture(), 0);
    let peak = f.layout.peak_step;
    let rows = live_table(&f.snap, 0, &f.tl, &f.layout, peak);
    let ids: Vec<u32> = rows.iter().map(|r| r.element).collect();
    assert_eq!(ids, [3, 1, 2, 9, 4, 7, 5, 6]);
    assert_eq!(rows.iter().map(|r| r.size).sum::<u64>(), 11180);
    let c = &rows[0];
    assert_eq!(c.addr, A + 8192);
    assert_eq!(c.label, format!("b{:x}_0", A + 8192));
    // A backward-pass stack: its site is the autograd node (never the allocator's malloc).
    assert_eq!(c.top_frame, "MulBackward0");
    assert!(MUL_BACKWARD.contains(&c.top_frame));
    assert_eq!(c.stream, 0);
    // The peak is event 8 (the 32 B alloc); c1 is event 5: 3 events, 3 ms, and timesteps.
    assert_eq!(f.layout.step_event().get(peak as usize).expect("step"), 8);
    assert_eq!(c.age_us, Some(3000));
    let (start, _) = f.layout.span(3).expect("drawn");
    assert_eq!(c.age_steps, peak - start);
    let a2 = rows.iter().find(|r| r.element == 1).expect("a2 live");
    assert_eq!(a2.top_frame, format!("{USER}:10:step"));
    assert_eq!(a2.age_us, Some(7000));
    // Memory present from the start has no allocation time.
    let ghost = rows.iter().find(|r| r.element == 9).expect("ghost live");
    assert_eq!(ghost.age_us, None);
    assert_eq!(ghost.addr, A + 40960);
    assert_eq!(ghost.label, format!("b{:x}_0", A + 40960));
    assert_eq!(ghost.top_frame, format!("{USER}:30:init"));
    assert_eq!(ghost.age_steps, peak);
    let free = rows
        .iter()
        .find(|r| r.element == 7)
        .expect("unmatched free live");
    assert_eq!(free.age_us, None);
    assert_eq!(free.top_frame, format!("{USER}:40:cleanup"));
    assert_eq!(
        rows.iter()
            .find(|r| r.element == 5)
            .map(|r| r.top_frame.as_str()),
        Some(NO_FRAMES)
    );
    // At the end: a3 is the second lifetime of A.
    let last = f.layout.step_count() - 1;
    let end = live_table(&f.snap, 0, &f.tl, &f.layout, last);
    let a3 = end
        .iter()
        .find(|r| r.element == 8)
        .expect("a3 live at the end");
    assert_eq!(a3.label, format!("b{:x}_1", A));
    assert_eq!(a3.age_steps, 0);
    assert_eq!(a3.age_us, Some(0));
    // Outside the layout: nothing.
    assert!(live_table(&f.snap, 0, &f.tl, &f.layout, last + 1).is_empty());
    assert!(live_table(&f.snap, 0, &f.tl, &f.layout, u32::MAX).is_empty());
}

fn q(s: &str) -> Query {
    parse_query(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn search_by_hand() {
    let f = loaded(&lines_fixture(), 0);
    let find = |s: &str| search(&f.snap, 0, &f.tl, &q(s)).elements;
    // Frames: every frame, unfiltered, as `filename:line:name`.
    assert_eq!(find("train.py:10:"), [0, 1, 8]);
    assert_eq!(find("STEP"), [0, 1, 2, 8]);
    assert_eq!(find("/train\\.py:[23]0:/"), [2, 9]);
    assert_eq!(find("/^\\?\\?:0:torch::autograd/"), [3]);
    assert_eq!(find("/MulBackward/"), [3]);
    assert_eq!(find("/mulbackward/"), Vec::<u32>::new());
    assert_eq!(find("/mulbackward/i"), [3]);
    assert_eq!(find("_start"), [6]); // filtered from display, still searched
    assert_eq!(find("torch::unwind"), [0, 1, 3, 8]);
    assert_eq!(find("cleanup"), [7]);
    assert_eq!(find("linear.py:125:forward"), [0, 1, 8]);
    // Address labels.
    assert_eq!(find(&format!("b{A:x}_0")), [0]);
    assert_eq!(find(&format!("b{A:x}_1")), [8]);
    assert_eq!(find(&format!("B{:X}_0", A + 1024)), [1]);
    assert_eq!(find(&format!("/^b{:x}_\\d$/", A + 40960)), [9]);
    // Sizes: decimal bytes and the short text.
    assert_eq!(find("7000"), [3]);
    assert_eq!(find("6.8KiB"), [3]);
    assert_eq!(find("/^2\\.9kib$/i"), [1]);
    assert_eq!(find("/^64$/"), [5]);
    // User metadata and compile context.
    assert_eq!(find("warmup"), [5]);
    assert_eq!(find("compiled region: 0/1"), [5]);
    assert_eq!(find("/^phase=/"), [5]);
    // Everything, nothing, totals.
    let all = search(&f.snap, 0, &f.tl, &q(""));
    assert_eq!(all.count, 10);
    assert_eq!(all.bytes, 12280);
    let none = search(&f.snap, 0, &f.tl, &q("no such text anywhere"));
    assert_eq!((none.count, none.bytes, none.elements.len()), (0, 0, 0));
    let r = search(&f.snap, 0, &f.tl, &q("train.py:10:"));
    assert_eq!((r.count, r.bytes), (3, 4100));
    // Bad regexes are errors, not panics (regex-lite's syntax: `a**` and `\b` are valid).
    for bad in ["/(/", "/[a/", "/*a/", "/x{/", "/(?=a)/"] {
        assert!(parse_query(bad).is_err(), "{bad}");
    }
    // A path that starts with '/' is a substring search.
    assert_eq!(find("/home/u/train.py:20"), [2]);
    // Another device: nothing, no panic.
    assert_eq!(search(&f.snap, 5, &Timeline::default(), &q("")).count, 0);
}

#[test]
fn hostile_names_are_data() {
    let path = hostile_fixture();
    let f = loaded(&path, 0);
    let rows = line_table(&f.snap, 0, &f.tl, &f.layout, LineOptions::default());
    assert!(rows
        .iter()
        .any(|r| r.file.contains("<img src=x onerror=window.__pwned=1>")));
    let img = search(&f.snap, 0, &f.tl, &q("<img src=x")).elements;
    assert_eq!(img, [0, 1]); // frames of one, compile context / metadata of both
    assert_eq!(
        search(&f.snap, 0, &f.tl, &q("make_<b>bold</b>")).elements,
        [0]
    );
    assert_eq!(
        search(&f.snap, 0, &f.tl, &q("/<b>bold<\\/b>\\.py/")).elements,
        [1]
    );
    let file = path.to_str().expect("utf-8 path");
    let (code, out, err) = memviz(&["lines", file, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    let files: Vec<&str> = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["file"].as_str())
        .collect();
    assert!(files.iter().any(|f| f.contains("<img src=x")), "{files:?}");
}

/// Σ-invariants on every generated fixture and corpus file, every device.
#[test]
fn invariants_on_fixtures_and_corpus() {
    let mut files: Vec<PathBuf> = SMALL_FIXTURES
        .iter()
        .map(|f| fixtures_dir().join(f))
        .collect();
    files.push(lines_fixture());
    files.extend(corpus_files());
    let mut checked = 0;
    for path in files {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let snap = load_path(&path);
        let summary = summary_json(&snap);
        for d in snap.devices() {
            let tl = timeline::build(&snap, d);
            let layout = Layout::build(&tl, LayoutOptions::default());
            let dev = summary["devices"]
                .as_array()
                .and_then(|a| a.iter().find(|x| x["device"] == d))
                .expect("summary has the device");
            let peak = dev["peak_live_bytes"].as_u64().expect("peak");
            let n_el = dev["timeline_allocations"].as_u64().expect("count");
            let sizes: u64 = tl.elements.iter().map(|e| e.size_bytes).sum();
            assert_eq!(n_el, tl.elements.len() as u64);
            for opts in [LineOptions::default(), LineOptions::ALL_FRAMES] {
                let rows = line_table(&snap, d, &tl, &layout, opts);
                let ctx = format!("{name} device {d} {opts:?}");
                assert_eq!(
                    rows.iter().map(|r| r.live_at_peak_bytes).sum::<u64>(),
                    peak,
                    "{ctx}: Σ live at peak"
                );
                // count: one per timeline element (allocations + unmatched frees + ghosts).
                assert_eq!(
                    rows.iter().map(|r| r.count).sum::<u64>(),
                    n_el,
                    "{ctx}: Σ count"
                );
                assert_eq!(
                    rows.iter().map(|r| r.total_bytes).sum::<u64>(),
                    sizes,
                    "{ctx}: Σ total"
                );
                for r in &rows {
                    assert!(
                        r.count > 0 && r.largest_bytes <= r.total_bytes,
                        "{ctx}: {r:?}"
                    );
                    assert!(r.live_at_peak_bytes <= r.total_bytes, "{ctx}: {r:?}");
                    assert!(
                        r.largest_bytes.saturating_mul(r.count) >= r.total_bytes,
                        "{ctx}"
                    );
                }
                for w in rows.windows(2) {
                    assert!(
                        (w[0].live_at_peak_bytes, w[0].total_bytes)
                            >= (w[1].live_at_peak_bytes, w[1].total_bytes),
                        "{ctx}: order"
                    );
                }
                // Rows partition the elements (checked on the top rows: each call is O(n)).
                let mut seen = vec![false; tl.elements.len()];
                for r in rows.iter().take(8) {
                    let els = row_elements(&snap, d, &tl, opts, r);
                    assert_eq!(els.len() as u64, r.count, "{ctx}: {r:?}");
                    let bytes: u64 = els
                        .iter()
                        .map(|&e| tl.elements[e as usize].size_bytes)
                        .sum();
                    assert_eq!(bytes, r.total_bytes, "{ctx}");
                    for e in els {
                        assert!(!seen[e as usize], "{ctx}: element {e} in two rows");
                        seen[e as usize] = true;
                    }
                }
            }
            // Live table at the peak and at sampled steps.
            let steps = layout.step_count();
            if steps == 0 {
                assert!(live_table(&snap, d, &tl, &layout, 0).is_empty());
                continue;
            }
            let tr = snap.trace(d);
            let time = |ev: u32| {
                tr.and_then(|t| t.time_us(ev as usize))
                    .filter(|&t| t != NO_TIME)
            };
            let sample: Vec<u32> = std::iter::once(layout.peak_step)
                .chain((0..steps).step_by((steps / 16).max(1) as usize))
                .collect();
            for step in sample {
                let ctx = format!("{name} device {d} step {step}");
                let live = live_table(&snap, d, &tl, &layout, step);
                let sum: u64 = live.iter().map(|r| r.size).sum();
                assert_eq!(
                    sum,
                    layout.live_at_step().get(step as usize).expect("step"),
                    "{ctx}"
                );
                assert_eq!(live.len(), live_elements_at(&layout, step).len(), "{ctx}");
                if step == layout.peak_step {
                    assert_eq!(sum, peak, "{ctx}: live table at the peak");
                }
                for w in live.windows(2) {
                    assert!(w[0].size >= w[1].size, "{ctx}: order");
                }
                let now = layout
                    .step_event()
                    .get(step as usize)
                    .filter(|&e| e != NO_EVENT)
                    .and_then(time);
                for r in &live {
                    let el = &tl.elements[r.element as usize];
                    assert_eq!(r.size, el.size_bytes);
                    let (start, end) = layout.span(r.element).expect("drawn");
                    assert!(
                        start <= step && step < end.max(start + 1) + 3,
                        "{ctx}: e{}",
                        r.element
                    );
                    assert_eq!(r.age_steps, step - start, "{ctx}");
                    let alloc_time = match el.origin {
                        Origin::Alloc { event } => time(event),
                        _ => None,
                    };
                    let expect = match (now, alloc_time) {
                        (Some(n), Some(a)) => Some(n - a),
                        _ => None,
                    };
                    assert_eq!(r.age_us, expect, "{ctx}: e{}", r.element);
                    assert!(r.label.starts_with('b'), "{ctx}: {}", r.label);
                    assert!(r.label.contains('_'), "{ctx}: {}", r.label);
                    assert!(!r.top_frame.is_empty());
                }
            }
            // Search: the empty query finds everything; a row's frame text finds its elements.
            let all = search(&snap, d, &tl, &q(""));
            assert_eq!(all.count, tl.elements.len());
            assert_eq!(all.bytes, sizes);
            let rows = line_table(&snap, d, &tl, &layout, LineOptions::default());
            for r in rows.iter().filter(|r| r.file != NO_FRAMES).take(3) {
                // An autograd row is found by its node's frame.
                let text = if r.file == AUTOGRAD_FILE {
                    format!("::{}::apply(", r.name)
                } else {
                    format!("{}:{}:{}", r.file, r.line, r.name)
                };
                let found = search(&snap, d, &tl, &Query::Substring(text.to_lowercase()));
                let els = row_elements(&snap, d, &tl, LineOptions::default(), r);
                assert!(
                    els.iter().all(|e| found.elements.binary_search(e).is_ok()),
                    "{name} device {d}: search {text:?} misses row elements"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 10, "only {checked} file/device pairs checked");
}

#[test]
fn cli_json_shape_text_and_exit_codes() {
    let path = lines_fixture();
    let file = path.to_str().expect("utf-8 path");
    let (code, out, err) = memviz(&["lines", file, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    let keys: Vec<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert_eq!(v["device"], 0);
    let f = loaded(&path, 0);
    assert_eq!(v["peak_step"], f.layout.peak_step);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 7);
    assert_eq!(
        rows[1],
        serde_json::json!({"file": USER, "line": 10, "name": "step", "kind": "user",
            "label": "train.py:10:step", "live_at_peak_bytes": 3000,
            "total_bytes": 4100, "count": 3, "largest_bytes": 3000,
            // The library line the user's line called into.
            "detail": [{"file": "/env/lib/python3.11/site-packages/torch/nn/modules/linear.py",
                "line": 125, "name": "forward", "live_at_peak_bytes": 3000,
                "total_bytes": 4100, "count": 3, "largest_bytes": 3000}]})
    );
    assert_eq!(rows[0]["kind"], "autograd");
    assert_eq!(rows[0]["label"], "backward of mul");
    // --all-frames and an explicit device.
    let (code, out, _) = memviz(&["lines", file, "--device", "0", "--all-frames", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(v["rows"][0]["file"], "CUDACachingAllocator.cpp");
    assert_eq!(v["rows"][0]["count"], 5);
    // Text: a header, a column header, one line per row and one per library line below it,
    // sizes formatted.
    let (code, out, err) = memviz(&["lines", file]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2 + 7 + 1, "{out}");
    assert!(
        lines[0].contains("device 0") && lines[0].contains("10.9KiB"),
        "{out}"
    );
    assert!(lines[1].contains("live@peak") && lines[1].contains("location"));
    assert!(
        lines[3].contains("2.9KiB") && lines[3].ends_with(&format!("{USER}:10 step")),
        "{out}"
    );
    assert!(
        lines[4].contains("→ ") && lines[4].ends_with("linear.py:125 forward"),
        "{out}"
    );
    assert!(lines[2].contains("backward of mul"), "{out}");
    assert!(lines[9].trim_end().ends_with(NO_FRAMES), "{out}");
    // The default device is the longest trace.
    let multi = fixture("multidevice.pickle");
    let multi = multi.to_str().expect("utf-8 path");
    let snap = load_path(Path::new(multi));
    let longest = (0..snap.traces.len())
        .max_by_key(|&i| (snap.traces[i].len(), std::cmp::Reverse(i)))
        .expect("traces") as i64;
    let (code, out, _) = memviz(&["lines", multi, "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(v["device"], longest);
    // An empty file: no rows.
    let empty = fixture("empty.pickle");
    let (code, out, err) = memviz(&["lines", empty.to_str().expect("utf-8"), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(v["rows"], serde_json::json!([]));
    // Errors: exit 2, one message on stderr.
    let cut = fixtures_dir().join("lines_cut.pickle");
    let bytes = std::fs::read(&path).expect("read fixture");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("write cut file");
    let not_pickle = fixtures_dir().join("lines_not_a_pickle.txt");
    std::fs::write(&not_pickle, "hello, world\n").expect("write text file");
    for args in [
        vec!["lines"],
        vec!["lines", file, file],
        vec!["lines", file, "--bogus"],
        vec!["lines", file, "--device", "x"],
        vec!["lines", file, "--device", "7"],
        vec!["lines", "/no/such/file.pickle"],
        vec!["lines", cut.to_str().expect("utf-8")],
        vec!["lines", not_pickle.to_str().expect("utf-8")],
    ] {
        let (code, out, err) = memviz(&args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(err.starts_with("memviz: "), "{args:?}: {err}");
    }
}

/// Timings on the big synthetic traces (target/bench/snap_*.pickle, written by
/// `cargo xtask bench` / `generate.py large`):
/// `cargo test --release -p memviz-cli --test cli lines:: -- --ignored --nocapture`
#[test]
#[ignore]
fn timings_on_big_traces() {
    let dir = repo_root().join("target/bench");
    let mut any = false;
    for name in ["snap_150mb.pickle", "snap_500mb.pickle"] {
        let path = dir.join(name);
        if !path.exists() {
            eprintln!("note: {} not found; skipped", path.display());
            continue;
        }
        any = true;
        let t0 = Instant::now();
        let snap = load_path(&path);
        let load = t0.elapsed();
        let d = 0;
        let events = snap.trace(d).map_or(0, |t| t.len());
        let t0 = Instant::now();
        let tl = timeline::build(&snap, d);
        let layout = Layout::build(&tl, LayoutOptions::default());
        let build = t0.elapsed();
        let t0 = Instant::now();
        let rows = line_table(&snap, d, &tl, &layout, LineOptions::default());
        let table = t0.elapsed();
        let t0 = Instant::now();
        let live = live_table(&snap, d, &tl, &layout, layout.peak_step);
        let live_t = t0.elapsed();
        eprintln!(
            "{name}: {events} events, {} elements, {} frames, {} stacks; load {:.2?}, timeline+layout {:.2?}, line_table {:.2?} ({} rows), live_table at peak {:.2?} ({} rows)",
            tl.elements.len(),
            snap.frames.len(),
            snap.stacks.len(),
            load,
            build,
            table,
            rows.len(),
            live_t,
            live.len()
        );
        for query in [
            "forward",
            "/lin[e]ar\\.py:\\d+:forward/",
            "12.0MiB",
            "b7f",
            "/^b7f1a[0-9a-f]+_1$/",
            "no such thing",
            "",
        ] {
            let t0 = Instant::now();
            let r = search(&snap, d, &tl, &q(query));
            let el = t0.elapsed();
            eprintln!("  search {query:?}: {} matches, {:.2?}", r.count, el);
            assert!(el.as_secs_f64() < 5.0, "search {query:?} took {el:?}");
        }
    }
    if !any {
        eprintln!("note: no big traces; run generate.py large first");
    }
}
