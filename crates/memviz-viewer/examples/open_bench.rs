//! Where the time of opening a snapshot goes, natively (what the page's worker does in wasm:
//! parse, summary, then the default device's timeline, layout, colours, first column scene):
//! `cargo run -p memviz-viewer --release --example open_bench -- FILE`.
#![allow(clippy::unwrap_used, clippy::print_stdout)]
use std::time::Instant;
fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let t = Instant::now();
    let snap = memviz_snapshot::load_slice(&bytes).unwrap();
    println!("parse {:.0}", ms(t));
    let t = Instant::now();
    let _s = memviz_analysis::summary::summarize(&snap);
    println!("summary {:.0}", ms(t));
    let d = 0;
    let t = Instant::now();
    let tl = memviz_analysis::timeline::build(&snap, d);
    println!("timeline {:.0}", ms(t));
    let t = Instant::now();
    let l = memviz_present::layout::Layout::build(&tl, Default::default());
    println!("layout {:.0} {:?}", ms(t), l.mode());
    let t = Instant::now();
    let c = memviz_present::color::element_colors(&snap, d, &tl);
    println!("colors {:.0}", ms(t));
    let t = Instant::now();
    let peak = l.peak_bytes as f64 * 1.05;
    let s = memviz_viewer::scene::build_columns(
        &l,
        &c,
        [0.0, l.step_count() as f64, 0.0, peak],
        memviz_viewer::app::FIRST_SCENE_COLUMNS,
        peak / 512.0,
    );
    println!("columns {:.0} {}", ms(t), s.instance_count());
    let t = Instant::now();
    let _ = memviz_present::color::legend(&snap, d, &tl, &l, 12);
    println!("legend {:.0}", ms(t));
    let t = Instant::now();
    let app = memviz_viewer::App::new("x", snap);
    println!("App::new {:.0}", ms(t));
    drop(app);
}
