//! Allocator State History benchmark: time to build the checkpoints ("open the view"), time to
//! select 100 random events (median, max), checkpoint memory against the model's, and the
//! same selections by memory_viz's method (undo from the final state every time) as the
//! baseline in the same run:
//! `cargo run -p memviz-analysis --release --example state_bench -- FILE [DEVICE]`.
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::expect_used)]

use std::time::Instant;

use memviz_analysis::state::History;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn stats(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[v.len() - 1])
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: state_bench FILE [DEVICE]");
    let device: i64 = std::env::args()
        .nth(2)
        .map_or(0, |d| d.parse().expect("device"));
    let bytes = std::fs::read(&path).expect("read");
    let snap = memviz_snapshot::load_slice(&bytes).expect("parse");
    let model = snap.heap_bytes();
    let t = Instant::now();
    let interval = History::interval_for(&snap, device, model / 5);
    let h = History::build(&snap, device, interval);
    let open_ms = ms(t);
    let n = h.events.len();
    // 100 pseudo-random events (xorshift, fixed seed).
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let picks: Vec<usize> = (0..100)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n.max(1) as u64) as usize
        })
        .collect();
    let fast: Vec<f64> = picks
        .iter()
        .map(|&k| {
            let t = Instant::now();
            std::hint::black_box(h.state_after(k));
            ms(t)
        })
        .collect();
    // Baseline: memory_viz replays from the final state on every selection.
    let full = History::build(&snap, device, usize::MAX);
    let slow: Vec<f64> = picks
        .iter()
        .take(10)
        .map(|&k| {
            let t = Instant::now();
            std::hint::black_box(full.state_after(k));
            ms(t)
        })
        .collect();
    let (fm, fx) = stats(fast);
    let (sm, sx) = stats(slow);
    println!(
        "{{\"file\":{path:?},\"events\":{n},\"interval\":{interval},\"open_ms\":{open_ms:.1},\
\"select_median_ms\":{fm:.3},\"select_max_ms\":{fx:.3},\"checkpoint_bytes\":{},\"model_bytes\":{model},\
\"checkpoints_per_model\":{:.3},\"full_undo_median_ms\":{sm:.1},\"full_undo_max_ms\":{sx:.1},\"speedup\":{:.0}}}",
        h.checkpoint_bytes(),
        h.checkpoint_bytes() as f64 / model as f64,
        sm / fm.max(1e-6)
    );
}
