//! Times a highlight change (the search's and the filter's) on a snapshot: about half the
//! allocations matched, then cleared, on the Active Memory Timeline fitted to a 1280 × 720
//! canvas: `cargo run -p memviz-viewer --profile ci --example highlight_bench -- FILE`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::Instant;

use memviz_viewer::App;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: highlight_bench FILE");
    let t = Instant::now();
    let bytes = std::fs::read(&path).expect("read");
    let snap = memviz_snapshot::load_slice(&bytes).expect("parse");
    drop(bytes);
    println!("load {:.0} ms", ms(t));
    let t = Instant::now();
    let mut app = App::new(&path, snap);
    app.resize(1280.0, 720.0, 1.0);
    app.settle();
    println!("timeline + layout + scene + settle {:.0} ms", ms(t));
    let n = app.layout().map_or(0, |l| l.element_count()) as u32;
    let instances = |app: &App| {
        app.plot_batches()
            .1
            .iter()
            .map(|b| b.instances.len())
            .sum::<usize>()
    };
    println!(
        "{n} elements, windowed {}, {} instances",
        app.is_windowed(),
        instances(&app)
    );
    let sets: [(&str, Vec<u32>); 2] = [
        ("even elements", (0..n).step_by(2).collect()),
        ("first half", (0..n / 2).collect()),
    ];
    for (name, els) in sets {
        for only in [false, true] {
            let t = Instant::now();
            app.set_highlight(Some(els.clone()), only);
            let set = ms(t);
            let (pending, paint) = (app.is_settling(), app.scene_build_ms());
            let t = Instant::now();
            app.settle();
            let settle = ms(t);
            let t = Instant::now();
            app.set_highlight(None, false);
            let clear = ms(t);
            let t = Instant::now();
            app.settle();
            let settle2 = ms(t);
            println!(
                "{name}, only {only}: set {set:.1} ms (scene {paint:.1} ms, rebuild pending {pending}; a forced settle {settle:.1} ms), clear {clear:.1} ms (+ forced settle {settle2:.1} ms)"
            );
        }
    }
    // The page's filters and searches (tests/web/bench_filter.mjs): evaluation + highlight.
    let filters = [
        "size>=1MiB",
        "size<64KiB",
        "at:peak",
        "size>=1MiB at:peak",
        "-action:free",
    ];
    for q in filters
        .iter()
        .chain(&["lifetime>1000", "stream:0 size>=4MiB", "site:/forward/"])
    {
        let t = Instant::now();
        let count = app.filter(q, false).map_or(0, |a| a.count);
        println!("filter {q:?}: {count} matches, {:.1} ms", ms(t));
    }
    app.filter("", false);
    for q in ["forward", "backward", "adam", "layer"] {
        let t = Instant::now();
        let count = app.search(q, false).map_or(0, |a| a.count);
        println!("search {q:?}: {count} matches, {:.1} ms", ms(t));
    }
    app.search("", false);
    // Zoomed in (the exact windowed scene rather than the column level of detail).
    let steps = app.layout().map_or(1, |l| l.step_count()) as f64;
    let peak = app.layout().map_or(1, |l| l.peak_bytes) as f64;
    app.set_window(steps * 0.5, steps * 0.5 + 400.0, 0.0, peak * 1.05);
    app.settle();
    println!("zoomed in: {} instances", instances(&app));
    let els: Vec<u32> = (0..n).step_by(2).collect();
    let t = Instant::now();
    app.set_highlight(Some(els), false);
    let set = ms(t);
    let pending = app.is_settling();
    let t = Instant::now();
    app.settle();
    println!(
        "zoomed in, even elements: set {set:.1} ms (rebuild pending {pending}; a forced settle {:.1} ms)",
        ms(t)
    );
}
