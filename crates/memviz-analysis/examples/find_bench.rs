//! "Find the memory" benchmark (issue 5): after a snapshot is loaded, the time to build the
//! flamegraph at the peak (folded stacks + tree), search every frame (a substring found nowhere,
//! so every stack is scanned, and a path regex), build the per-source-line table, the leak
//! report, the flamegraph with search matches marked, and diff two snapshots (groups and the diff
//! flamegraph); the parse of the file (and the timeline + step model every
//! analysis starts from) in the same run is the baseline each time is divided by. Medians of 3 runs.
//! `cargo run -p memviz-analysis --release --example find_bench -- FILE [OTHER_FILE_FOR_DIFF]`
//! prints one JSON line.
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::expect_used)]

use std::time::Instant;

use memviz_analysis::steps::Steps;
use memviz_analysis::{diff, flame, leaks, lines, search, timeline};

fn median_ms(mut f: impl FnMut()) -> f64 {
    let mut v: Vec<f64> = (0..3)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[1]
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: find_bench FILE [OTHER]");
    let other = std::env::args().nth(2);
    let bytes = std::fs::read(&path).expect("read");
    let t = Instant::now();
    let snap = memviz_snapshot::load_slice(&bytes).expect("parse");
    let parse_ms = t.elapsed().as_secs_f64() * 1e3;
    let device = snap.default_device();
    let t = Instant::now();
    let tl = timeline::build(&snap, device);
    let layout = Steps::build(&tl);
    let timeline_ms = t.elapsed().as_secs_f64() * 1e3;

    let opts = flame::FlameOptions::default();
    let mut stacks = 0;
    let flame_ms = median_ms(|| {
        let f = flame::folded(&snap, device, &tl, &layout, flame::At::Peak, &opts);
        stacks = f.len();
        let tree = flame::FlameTree::build(&f, flame::ValueUnit::Bytes);
        assert_eq!(tree.grand_total, layout.peak_bytes);
    });
    let nowhere = search::parse_query("no-such-frame-anywhere").unwrap();
    let search_ms = median_ms(|| {
        let r = search::search(&snap, device, &tl, &nowhere);
        assert_eq!(r.count, 0);
    });
    let regex = search::parse_query("/model\\.py:1[0-9]+:/").unwrap();
    let mut regex_hits = 0;
    let regex_ms = median_ms(|| regex_hits = search::search(&snap, device, &tl, &regex).count);
    let mut rows = 0;
    let lines_ms = median_ms(|| {
        rows = lines::line_table(&snap, device, &tl, &layout, lines::LineOptions::default()).len();
    });
    let mut suspects = 0;
    let leaks_ms =
        median_ms(|| suspects = leaks::leaks(&snap, device, &tl, &layout).suspects.len());
    // The flamegraph with search matches marked (a regex matching part of the stacks).
    let marked_ms = median_ms(|| {
        let hits = search::search(&snap, device, &tl, &regex);
        let all = flame::folded(&snap, device, &tl, &layout, flame::At::Peak, &opts);
        let m = flame::folded_of(
            &snap,
            device,
            &tl,
            &layout,
            flame::At::Peak,
            &opts,
            Some(&hits.elements),
        );
        let tree = flame::FlameTree::build_marked(&all, &m, flame::ValueUnit::Bytes);
        assert!(tree.root().matched <= tree.grand_total);
    });
    let (diff_ms, groups, diff_flame_ms) = match other {
        Some(o) => {
            let b = memviz_snapshot::load_slice(&std::fs::read(&o).expect("read other"))
                .expect("parse other");
            let mut g = 0;
            let ms = median_ms(|| g = diff::diff(&snap, &b, None).groups.len());
            let fms = median_ms(|| {
                let t = flame::FlameTree::build_diff(
                    &diff::live_folded(&snap, None, flame::FrameMode::Python, &Default::default()),
                    &diff::live_folded(&b, None, flame::FrameMode::Python, &Default::default()),
                    flame::ValueUnit::Bytes,
                );
                assert!(t.diff);
            });
            (Some(ms), Some(g), Some(fms))
        }
        None => (None, None, None),
    };
    let ratio = |x: f64| (x / parse_ms * 1000.0).round() / 1000.0;
    println!(
        "{}",
        serde_json::json!({
            "file": path,
            "file_mb": bytes.len() as f64 / 1e6,
            "events": snap.trace(device).map_or(0, |t| t.len()),
            "elements": tl.elements.len(),
            "baseline_parse_ms": parse_ms,
            "timeline_layout_ms": timeline_ms,
            "flame_at_peak_ms": flame_ms,
            "flame_stacks": stacks,
            "search_all_frames_ms": search_ms,
            "search_regex_ms": regex_ms,
            "search_regex_hits": regex_hits,
            "lines_table_ms": lines_ms,
            "lines_rows": rows,
            "leaks_ms": leaks_ms,
            "leak_suspects": suspects,
            "flame_search_marked_ms": marked_ms,
            "diff_ms": diff_ms,
            "diff_groups": groups,
            "diff_flame_ms": diff_flame_ms,
            "per_parse": {
                "flame": ratio(flame_ms),
                "search": ratio(search_ms),
                "regex": ratio(regex_ms),
                "lines": ratio(lines_ms),
                "leaks": ratio(leaks_ms),
                "diff": diff_ms.map(ratio),
                "diff_flame": diff_flame_ms.map(ratio),
                "flame_search_marked": ratio(marked_ms),
            },
        })
    );
}
