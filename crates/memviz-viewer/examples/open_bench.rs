//! Where the time of opening a snapshot goes, natively, step by step as the page's worker does
//! it in wasm (the same phase names as `bench_page.mjs`'s breakdown): parse, then `App::new`
//! with each step of building the first view timed by the viewer's phase hook:
//! `cargo run -p memviz-viewer --profile ci --example open_bench -- FILE`.
#![allow(clippy::unwrap_used, clippy::print_stdout)]
use std::sync::Mutex;
use std::time::Instant;

/// The time of the last phase (or of the start of `App::new`).
static LAST: Mutex<Option<Instant>> = Mutex::new(None);

fn lap() -> f64 {
    let mut last = LAST.lock().unwrap();
    let now = Instant::now();
    let ms = last.map_or(0.0, |t| (now - t).as_secs_f64() * 1e3);
    *last = Some(now);
    ms
}

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    lap();
    let snap = memviz_snapshot::load_slice(&bytes).unwrap();
    println!("parse {:.0}", lap());
    drop(bytes);
    memviz_viewer::memory::set_phase_hook(|name| println!("{name} {:.0}", lap()));
    lap();
    let app = memviz_viewer::App::new("x", snap);
    println!("view {:.0}", lap());
    drop(app);
}
