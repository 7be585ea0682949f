//! The Active Memory Timeline layout, tooltips, frames and colours on generated fixtures, a
//! hand-made tooltip fixture and the real corpus.

use crate::common;
use common::*;
use memviz_present::color;
use memviz_analysis::frames::{format_stack, site_label, NO_FRAMES_EXPLANATION};
use memviz_present::layout::{self, reference_series, Layout, LayoutOptions, PointMode, NO_EVENT};
use memviz_analysis::timeline::{self, Timeline};
use memviz_present::tooltip::{self, TooltipContext, TooltipOrigin};
use memviz_snapshot::{Snapshot, StackId};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn compact(t: &Timeline) -> Layout {
    Layout::build(
        t,
        LayoutOptions {
            mode: PointMode::Compact,
            ..LayoutOptions::default()
        },
    )
}

/// Structural checks that hold for any layout: live bytes, hit test, elements_at.
fn check_invariants(name: &str, t: &Timeline, l: &Layout, samples: u32) {
    let steps = l.step_count();
    assert_eq!(l.step_event().len(), steps as usize, "{name}");
    assert_eq!(
        l.peak_bytes,
        l.live_at_step().iter().max().unwrap_or(0),
        "{name}"
    );
    if steps > 0 {
        assert_eq!(
            l.live_at_step().get(l.peak_step as usize).expect("step"),
            l.peak_bytes,
            "{name}"
        );
        assert!(
            l.peak_bytes >= t.peak_live_bytes,
            "{name}: y range clips the peak"
        );
    }
    // Sample timesteps evenly; at each, the stack is gap-free outside slides and sums to live.
    let stride = (steps / samples.max(1)).max(1);
    for step in (0..steps).step_by(stride as usize) {
        let at = l.elements_at(step);
        let live: u64 = at.iter().map(|&(_, e)| l.height_bytes(e)).sum();
        let slide = l
            .slides
            .iter()
            .find(|s| s.step <= step && step < s.step + 3)
            .map(|s| l.slide_size(s))
            .unwrap_or(0);
        assert_eq!(
            live + slide,
            l.live_at_step().get(step as usize).expect("step"),
            "{name} step {step}"
        );
        let x = step as f64 + 0.5;
        for w in at.windows(2) {
            assert!(w[0].0 <= w[1].0, "{name}: elements_at not sorted");
        }
        for &(bottom, e) in at.iter().take(200) {
            let b = l
                .bottom_at(e, step as f64)
                .expect("live element has a bottom");
            assert!(
                (b - bottom).abs() <= 1e-9 * b.abs().max(1.0),
                "{name} step {step} e{e}: {b} vs {bottom}"
            );
            let h = l.height_bytes(e) as f64;
            if h > 0.0 {
                let mid = l.bottom_at(e, x).expect("live") + h / 2.0;
                assert_eq!(l.hit(x, mid), Some(e), "{name} x {x} e {e}");
            }
        }
        assert_eq!(l.hit(x, l.live_bytes_at(x) + 1.0), None, "{name}");
    }
}

#[test]
fn semantics_test_vector_layout() {
    let s = load_path(&fixture("vector.pickle"));
    let t = timeline::build(&s, 0);
    for l in [layout::build(&t), compact(&t)] {
        assert_eq!(l.live_at_step(), [15, 30, 55, 55, 55, 55, 55, 38, 38]);
        assert_eq!((l.peak_bytes, l.peak_step), (55, 2));
        let pts = |e: u32| l.points(e).collect::<Vec<_>>();
        // SEMANTICS.md §3.6, max_entries = ∞: series 4, 0, 1, 2, 3.
        assert_eq!(pts(4), [(0, 0), (9, 0)]);
        assert_eq!(pts(0), [(0, 10), (1, 10)]);
        assert_eq!(pts(1), [(1, 10), (4, 10)]);
        assert_eq!(pts(2), [(2, 30), (4, 30), (7, 10), (9, 10)]);
        assert_eq!(pts(3), [(7, 35), (9, 35)]);
        for (e, h) in [(4, 10), (0, 5), (1, 20), (2, 25), (3, 3)] {
            assert_eq!(l.height_bytes(e), h);
        }
        // The annotated event indices are the trace's (the merged free keeps the request's).
        let tr = &s.traces[0];
        let kinds: Vec<&str> = l
            .step_event()
            .iter()
            .map(|e| s.action_name(tr.action(e as usize).expect("row")))
            .collect();
        assert_eq!(
            kinds,
            [
                "free_requested",
                "alloc",
                "alloc",
                "free_requested",
                "free_requested",
                "free_requested",
                "free_requested",
                "alloc",
                "free_requested"
            ]
        );
        assert_eq!(l.hit(5.0, 30.0), Some(2));
        assert_eq!(
            l.hit(5.0, 20.0),
            None,
            "the gap of the freed element, closing"
        );
        assert_eq!(l.hit(0.5, 12.0), Some(0));
        check_invariants("vector", &t, &l, 100);
    }
    let (series, max_at_time) = reference_series(&t);
    let l = layout::build(&t);
    assert_eq!(l.live_at_step(), max_at_time);
    for (e, s) in series.iter().enumerate() {
        assert!(l.points(e as u32).eq(s.iter().copied()));
    }

    // Tooltips (§7, new generation, our label and timestamp rules).
    let ctx = TooltipContext::new(&s, 0);
    let tip = |e| tooltip::tooltip(&s, &ctx, &t, &l, e).expect("element exists");
    let x = tip(1);
    assert_eq!(
        x.title,
        "1 Addr: b1000000a_0, Size: 20.0B (20 bytes) allocation, Total memory used after allocation: 30.0B (30 bytes), Compile context: None, stream 0, pool_id (0, 0)"
    );
    assert_eq!(x.frames, NO_FRAMES_EXPLANATION);
    assert_eq!(tip(2).total_after_bytes, 55);
    assert_eq!(tip(3).total_after_bytes, 38);
    let free = tip(0);
    assert_eq!(free.origin, TooltipOrigin::UnmatchedFree);
    assert_eq!(free.address_label, "b10000032_0");
    assert_eq!(free.total_after_bytes, 15);
    assert_eq!(free.details, ["alloc not recorded, stack trace for free:"]);
    let ghost = tip(4);
    assert_eq!(ghost.origin, TooltipOrigin::Ghost);
    assert_eq!(ghost.address_label, "b10000000_0");
    assert_eq!(ghost.total_after_bytes, 10);
    assert!(ghost.details[0].starts_with("[Ghost block]"));
    assert!(!ghost.text().contains("Invalid Date") && !ghost.text().contains("timestamp"));
    assert!(tooltip::tooltip(&s, &ctx, &t, &l, 5).is_none());
    // Versions of the annotated trace (§3.6: every event is v0) and of the final blocks.
    let v = tooltip::versions(&s, 0);
    assert!(v.events.iter().all(|&x| x == 0), "{:?}", v.events);
    assert_eq!(v.blocks, [0, 1, 0, 1]);
    assert_eq!(v.segments, [0]);
}

#[test]
fn fixtures_layouts_agree_with_the_reference() {
    // All but the 100k-event C++-style file (the reference port is quadratic) and long1_big.
    let names = SMALL_FIXTURES
        .iter()
        .filter(|n| !matches!(**n, "proto2_cxx.pickle" | "long1_big.pickle"));
    for &name in names {
        let s = load_path(&fixture(name));
        for d in s.devices() {
            let t = timeline::build(&s, d);
            let exact = layout::build(&t);
            let comp = compact(&t);
            let (series, max_at_time) = reference_series(&t);
            assert_eq!(exact.live_at_step(), max_at_time, "{name} dev {d}");
            assert_eq!(comp.live_at_step(), max_at_time, "{name} dev {d}");
            assert_eq!(
                exact.exact_point_count() as usize,
                series.iter().map(Vec::len).sum::<usize>()
            );
            for (e, s) in series.iter().enumerate() {
                let e = e as u32;
                assert!(exact.points(e).eq(s.iter().copied()), "{name} dev {d} e{e}");
                assert!(comp.points(e).eq(s.iter().copied()), "{name} dev {d} e{e}");
            }
            for ev in exact.step_event().iter() {
                let ok = ev == NO_EVENT || s.trace(d).is_some_and(|tr| (ev as usize) < tr.len());
                assert!(ok, "{name}: step_event out of range");
            }
            check_invariants(name, &t, &exact, 300);
            check_invariants(name, &t, &comp, 300);
            // Tooltips, colours and legends never panic and stay plain text.
            let ctx = TooltipContext::new(&s, d);
            let colors = color::element_colors(&s, d, &t);
            assert_eq!(colors.len(), t.elements.len());
            for e in 0..t.elements.len() as u32 {
                let tip = tooltip::tooltip(&s, &ctx, &t, &exact, e).expect("tooltip");
                let text = tip.text();
                assert!(text.starts_with(&format!("{e} Addr: b")), "{name}: {text}");
                assert!(!text.contains("Invalid Date"), "{name}: {text}");
                assert!(!tip.frames.is_empty() || text.contains("alloc not recorded"));
                serde_json::to_string(&tip).expect("serialises");
            }
            let lg = color::legend(&s, d, &t, &exact, 5);
            assert!(lg.len() <= 5);
            let sum: u64 = lg.iter().map(|e| e.bytes).sum();
            assert!(sum <= exact.peak_bytes, "{name}");
            for w in lg.windows(2) {
                assert!(w[0].bytes >= w[1].bytes);
            }
        }
    }
}

const TOOLTIP_FIXTURE: &str = r#"
import pickle, sys
A = 0x7f0000000000
def fr(name, filename, line, **fx):
    d = {"name": name, "filename": filename, "line": line}
    d.update(fx)
    return d
F1 = [
    fr("malloc", "CUDACachingAllocator.cpp", 0),
    fr("_PyEval_EvalFrameDefault", "Python/ceval.c", 0),
    fr("_call_impl", "/env/site-packages/torch/nn/modules/module.py", 1500),
    fr("rec", "/home/u/r.py", 5), fr("rec", "/home/u/r.py", 5), fr("rec", "/home/u/r.py", 5),
    fr("forward", "/home/u/model.py", 10, fx_node_op="call_function", fx_node_name="mm",
       fx_node_target="aten.mm", fx_original_trace="  File m.py\n    y = x @ w\n"),
    fr("_start", "??", 0),
]
F2 = [fr("step", "/home/u/train.py", 42), fr("main", "/home/u/train.py", 99)]
GHOST = [fr("init", "/home/u/init.py", 7)]
def ev(action, addr, size, stream=0, frames=(), **kw):
    e = {"action": action, "addr": addr, "size": size, "stream": stream, "time_us": kw.pop("t"),
         "compile_context": kw.pop("cc", "N/A"), "user_metadata": kw.pop("um", ""),
         "frames": list(frames)}
    e.update(kw)
    return e
trace = [
    ev("alloc", A + 1024, 100, frames=F1, t=1708000000123456),
    ev("free_requested", A + 1024, 100, frames=F1, t=1708000000123457),
    ev("free_completed", A + 1024, 100, frames=F1, t=1708000000123457),
    ev("alloc", A + 1024, 200, stream=5555, frames=F2, t=1708000000200000,
       cc="Torch-Compiled Region: 1/0", um="hello",
       forward_frames=['  File "m.py", line 3, in forward\n', "    y = x @ w\n"]),
    ev("free_completed", A + 2048, 64, t=1708000000300000),
]
seg = {"device": 0, "address": A, "total_size": 4096, "allocated_size": 1024, "active_size": 1024,
       "requested_size": 1000, "stream": 7777, "segment_type": "small", "segment_pool_id": (0, 1),
       "is_expandable": False, "frames": [],
       "blocks": [{"size": 1024, "requested_size": 1000, "state": "active_allocated", "frames": GHOST},
                  {"size": 3072, "requested_size": 0, "state": "inactive", "frames": []}]}
snap = {"segments": [seg], "device_traces": [trace], "allocator_settings": {}}
with open(sys.argv[1], "wb") as f:
    pickle.dump(snap, f, protocol=4)
# The same stacks, interned in another order (ids differ, content does not).
other = {"segments": [], "device_traces": [[
    ev("alloc", A, 8, frames=GHOST, t=1), ev("alloc", A + 8, 8, frames=F2, t=2),
    ev("alloc", A + 16, 8, frames=F1, t=3)]]}
with open(sys.argv[2], "wb") as f:
    pickle.dump(other, f, protocol=4)
"#;

fn tooltip_fixtures() -> (PathBuf, PathBuf) {
    let dir = fixtures_dir();
    let (a, b) = (dir.join("tooltip.pickle"), dir.join("tooltip_other.pickle"));
    let script = dir.join("tooltip_fixture.py");
    std::fs::write(&script, TOOLTIP_FIXTURE).expect("write script");
    let st = Command::new("python3")
        .arg(&script)
        .arg(&a)
        .arg(&b)
        .status()
        .expect("python3 runs");
    assert!(st.success());
    (a, b)
}

#[test]
fn tooltip_frames_versions_streams_and_colours() {
    let (pa, pb) = tooltip_fixtures();
    let s = load_path(&pa);
    let t = timeline::build(&s, 0);
    let l = layout::build(&t);
    // Elements: 0 = first alloc, 1 = second alloc (same address), 2 = unmatched free, 3 = ghost.
    assert_eq!(t.initially_present, [3, 2]);
    let ctx = TooltipContext::new(&s, 0);
    assert_eq!(ctx.versions.events, [0, 0, 0, 1, 0]);
    assert_eq!(ctx.versions.blocks, [0, 1]);
    assert_eq!(ctx.streams.get(0), Some(0));
    assert_eq!(ctx.streams.get(5555), Some(1));
    assert_eq!(ctx.streams.get(7777), Some(2));
    let tip = |e| tooltip::tooltip(&s, &ctx, &t, &l, e).expect("element");

    let a = tip(0);
    assert_eq!(
        a.title,
        "0 Addr: b7f0000000400_0, Size: 100.0B (100 bytes) allocation, Total memory used after allocation: 1.1KiB (1164 bytes), Compile context: N/A, stream 0, pool_id (0, 1), timestamp 2024-02-15T12:26:40.123456Z"
    );
    assert_eq!(
        a.frames,
        [
            "CUDACachingAllocator.cpp:0:malloc",
            "/env/site-packages/torch/nn/modules/module.py:1500:_call_impl",
            "/home/u/r.py:5:rec",
            "<repeats 2 times>",
            "/home/u/model.py:10:forward",
            "    >> FX: node=mm, op=call_function, target=aten.mm",
            "    >> Original Model Code:",
            "       File m.py",
            "           y = x @ w",
        ]
    );
    // Unfiltered: the interpreter and `_start` frames come back.
    let unfiltered = format_stack(&s, s.traces[0].stack(0).expect("row"), false);
    assert!(unfiltered
        .iter()
        .any(|l| l.contains("_PyEval_EvalFrameDefault")));
    assert!(unfiltered.iter().any(|l| l == "??:0:_start"));
    assert_eq!(
        site_label(&s, s.traces[0].stack(0).expect("row")),
        "r.py:5:rec"
    );

    let b = tip(1);
    assert!(b
        .title
        .starts_with("1 Addr: b7f0000000400_1, Size: 200.0B (200 bytes) allocation"));
    assert!(b.title.contains("Compile context: Torch-Compiled Region: 1/0, stream 1, pool_id (0, 1), timestamp 2024-02-15T12:26:40.200000Z"));
    assert_eq!(b.details, ["User Metadata:", "  hello"]);
    assert_eq!(
        b.frames,
        ["/home/u/train.py:42:step", "/home/u/train.py:99:main"]
    );
    assert_eq!(
        b.forward_frames,
        ["  File \"m.py\", line 3, in forward", "    y = x @ w"]
    );
    let text = b.text();
    assert!(text.ends_with(
        "/home/u/train.py:99:main\n\n=== Forward Pass Stack Trace (where this tensor was created) ===\n  File \"m.py\", line 3, in forward\n    y = x @ w"
    ));
    let json = serde_json::to_value(&b).expect("json");
    assert_eq!(json["origin"], "alloc");
    assert_eq!(json["stream"], 1);

    let f = tip(2);
    assert_eq!(f.address_label, "b7f0000000800_0");
    assert_eq!(f.total_after_bytes, 1064);
    assert_eq!(f.details, ["alloc not recorded, stack trace for free:"]);
    assert_eq!(f.frames, NO_FRAMES_EXPLANATION);

    let g = tip(3);
    assert_eq!(
        g.title,
        "3 Addr: b7f0000000000_0, Size: 1000.0B (1000 bytes) allocation, Total memory used after allocation: 1000.0B (1000 bytes), Compile context: None, stream 2, pool_id (0, 1)"
    );
    assert_eq!(g.frames, ["/home/u/init.py:7:init"]);

    // Colours follow stack content, not stack ids.
    let o = load_path(&pb);
    let stacks = |snap: &Snapshot| -> Vec<StackId> { snap.traces[0].stacks().to_vec() };
    let (sa, so) = (stacks(&s), stacks(&o));
    let f1_a = sa[0];
    let f1_o = so[2];
    assert_ne!(
        f1_a, f1_o,
        "the fixture should intern the stacks in another order"
    );
    assert_eq!(color::stack_hash(&s, f1_a), color::stack_hash(&o, f1_o));
    assert_eq!(color::stack_color(&s, f1_a), color::stack_color(&o, f1_o));
    assert_eq!(color::stack_color(&s, sa[3]), color::stack_color(&o, so[1]));
    assert_ne!(color::stack_hash(&s, sa[0]), color::stack_hash(&s, sa[3]));
    assert_eq!(
        color::stack_color(&s, StackId::EMPTY),
        color::NO_FRAMES_COLOR
    );
    let by_stack = color::stack_colors(&s);
    assert_eq!(by_stack.len(), s.stacks.len());

    // Legend at the peak (step 2: ghost 1000 + free 64 + second alloc 200).
    let lg = color::legend(&s, 0, &t, &l, 10);
    let labels: Vec<(&str, u64)> = lg.iter().map(|e| (e.label.as_str(), e.bytes)).collect();
    assert_eq!(
        labels,
        [
            ("init.py:7:init", 1000),
            ("train.py:42:step", 200),
            ("<no frames>", 64)
        ]
    );
    assert_eq!(lg[0].rgba, color::rgba(lg[0].color));
}

#[test]
fn real_corpus_layouts() {
    for path in corpus_files() {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let s = load_path(&path);
        // Peaks computed independently (tests/oracle/summary.py, stdlib Python).
        let theirs = oracle(&path);
        for d in s.devices() {
            let t = timeline::build(&s, d);
            let t0 = Instant::now();
            let exact = layout::build(&t);
            if let Some(dev) = theirs["devices"]
                .as_array()
                .and_then(|v| v.iter().find(|x| x["device"] == d))
            {
                assert_eq!(
                    Some(exact.peak_bytes),
                    dev["peak_live_bytes"].as_u64(),
                    "{name} device {d}: layout peak vs the oracle's"
                );
            }
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            let comp = compact(&t);
            eprintln!(
                "{name} dev {d}: {} elements, {} steps, {} slides, {} points, {:.1} ms, {} KiB exact / {} KiB compact",
                t.elements.len(),
                exact.step_count(),
                exact.slides.len(),
                exact.exact_point_count(),
                ms,
                exact.heap_bytes() / 1024,
                comp.heap_bytes() / 1024
            );
            assert_eq!(exact.mode(), PointMode::Exact, "{name}");
            if t.elements.len() <= 20_000 {
                let (series, max_at_time) = reference_series(&t);
                assert_eq!(exact.live_at_step(), max_at_time, "{name}");
                for (e, sr) in series.iter().enumerate() {
                    assert!(exact.points(e as u32).eq(sr.iter().copied()), "{name} e{e}");
                }
            }
            assert_eq!(comp.peak_bytes, exact.peak_bytes, "{name}");
            for e in (0..t.elements.len() as u32).step_by(97) {
                assert!(exact.points(e).eq(comp.points(e)), "{name} e{e}");
            }
            check_invariants(&name, &t, &exact, 50);
            check_invariants(&name, &t, &comp, 20);
            let ctx = TooltipContext::new(&s, d);
            for e in (0..t.elements.len() as u32).step_by(53) {
                let tip = tooltip::tooltip(&s, &ctx, &t, &exact, e).expect("tooltip");
                assert!(!tip.text().contains("Invalid Date"), "{name}");
                assert!(!tip.address_label.ends_with("_undefined"), "{name}");
            }
            let _ = color::legend(&s, d, &t, &exact, 8);
        }
    }
}

/// `MEMVIZ_LAYOUT_FILES=a.pickle:b.pickle cargo test --release -p memviz-cli --test cli layout:: -- --ignored --nocapture`
#[test]
#[ignore]
fn bench_layout() {
    let Ok(files) = std::env::var("MEMVIZ_LAYOUT_FILES") else {
        eprintln!("set MEMVIZ_LAYOUT_FILES");
        return;
    };
    for f in files.split(':') {
        let snap = load_path(Path::new(f));
        for d in snap.devices() {
            let t0 = Instant::now();
            let tl = timeline::build(&snap, d);
            let t1 = Instant::now();
            let comp = compact(&tl);
            let t2 = Instant::now();
            eprintln!(
                "{f} dev {d}: elements {} steps {} slides {} exact points {} | timeline {:.0} ms | compact {:.0} ms, {} bytes (hit index {})",
                tl.elements.len(),
                comp.step_count(),
                comp.slides.len(),
                comp.exact_point_count(),
                (t1 - t0).as_secs_f64() * 1e3,
                (t2 - t1).as_secs_f64() * 1e3,
                comp.heap_bytes(),
                comp.hit_index_heap_bytes()
            );
            let t3 = Instant::now();
            let exact = Layout::build(
                &tl,
                LayoutOptions {
                    mode: PointMode::Exact,
                    max_exact_points: u64::MAX,
                },
            );
            let t4 = Instant::now();
            eprintln!(
                "   exact (no limit): {:.0} ms, {} bytes, stored points {}; default options give {:?}",
                (t4 - t3).as_secs_f64() * 1e3,
                exact.heap_bytes(),
                exact.stored_point_count(),
                layout::build(&tl).mode()
            );
            for (label, l) in [("exact", &exact), ("compact", &comp)] {
                let n = 100_000u32;
                let steps = l.step_count().max(1) as f64;
                let t5 = Instant::now();
                let mut hits = 0;
                for i in 0..n {
                    let x = (i as f64 * 0.618_033_988_7).fract() * steps;
                    let y = (i as f64 * 0.414_213_562).fract() * l.peak_bytes as f64;
                    hits += l.hit(x, y).is_some() as u32;
                }
                let us = t5.elapsed().as_secs_f64() * 1e6 / n as f64;
                let t6 = Instant::now();
                let pieces: usize = (0..tl.elements.len() as u32)
                    .map(|e| l.pieces(e).count())
                    .sum();
                let t7 = Instant::now();
                let w = steps / 100.0;
                let clipped: usize = (0..tl.elements.len() as u32)
                    .map(|e| l.clipped_points(e, steps / 2.0, steps / 2.0 + w).len())
                    .sum();
                eprintln!(
                    "   {label}: hit {us:.2} us/query ({hits} hits of {n}); all pieces {pieces} in {:.0} ms; 1% window clip {clipped} points in {:.0} ms; elements_at(peak) {} in {:.1} ms",
                    (t7 - t6).as_secs_f64() * 1e3,
                    t7.elapsed().as_secs_f64() * 1e3,
                    l.elements_at(l.peak_step).len(),
                    {
                        let t8 = Instant::now();
                        let _ = l.elements_at(l.peak_step);
                        t8.elapsed().as_secs_f64() * 1e3
                    }
                );
            }
            let t9 = Instant::now();
            let ctx = TooltipContext::new(&snap, d);
            let tip = tooltip::tooltip(&snap, &ctx, &tl, &exact, 0);
            eprintln!(
                "   tooltip context {:.0} ms; legend {:?}",
                t9.elapsed().as_secs_f64() * 1e3,
                color::legend(&snap, d, &tl, &exact, 3)
                    .iter()
                    .map(|e| (e.label.clone(), e.bytes))
                    .collect::<Vec<_>>()
            );
            if let Some(tip) = tip {
                eprintln!("   {}", tip.title);
            }
        }
    }
}
