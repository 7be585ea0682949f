//! Allocator State History benchmark: time to build the checkpoints ("open the view"), time to
//! select 100 random events (median, max) and the worst (the event right after a checkpoint,
//! of the longest runs), checkpoint memory against the model's, and the
//! same selections by memory_viz's method (undo from the final state every time) as the
//! baseline in the same run; then the segment map of each selection (`SegMap::build` plus one
//! hover text, median / max), hit tests (1000 random points on the largest map, mean / max) and
//! the struct sizes that checkpoints hold:
//! `cargo run -p memviz-present --release --example state_bench -- FILE [DEVICE]`.
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::expect_used)]

use std::time::Instant;

use memviz_analysis::state::{Blk, History, RowContext, Seg, Src, State};
use memviz_present::segmap::SegMap;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn stats(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[v.len() - 1])
}

/// 1000 segments of 2 MiB with 100 blocks each and one 1 GiB segment with 20,000 blocks; every
/// block has some rounding waste.
fn synthetic_state() -> State {
    let mut st = State::default();
    let seg = |size| Seg {
        size,
        stream: 0,
        pool: (0, 0),
        src: Src::UNKNOWN,
    };
    let blk = |size: u64| Blk {
        size,
        requested: size - 100,
        pending: false,
        src: Src::UNKNOWN,
    };
    for s in 0..1000u64 {
        let base = 0x7f00_0000_0000 + s * (4 << 20);
        st.insert_segment(base, seg(2 << 20));
        for b in 0..100u64 {
            st.insert_block(base + b * 20_480, blk(20_480));
        }
    }
    let big = 0x9000_0000_0000u64;
    st.insert_segment(big, seg(1 << 30));
    for b in 0..20_000u64 {
        st.insert_block(big + b * 51_200, blk(51_200));
    }
    st
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
    let h = History::build_within(&snap, device, memviz_analysis::state::BYTES_PER_EVENT);
    let interval = h.interval;
    let open_ms = ms(t);
    let n = h.len();
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
            std::hint::black_box(h.state_after(&snap, k));
            ms(t)
        })
        .collect();
    // Worst case: the event just after a checkpoint, the most undo steps from the next one.
    let mut worst: Vec<(usize, usize)> = Vec::new();
    let mut prev: Option<usize> = None;
    for c in h.checkpoint_events() {
        let from = prev.map_or(0, |p| p + 1);
        worst.push((c - from, from));
        prev = Some(c);
    }
    worst.sort_unstable_by(|a, b| b.cmp(a));
    let worst_ms = worst
        .iter()
        .take(5)
        .map(|&(_, k)| {
            let t = Instant::now();
            std::hint::black_box(h.state_after(&snap, k));
            ms(t)
        })
        .fold(0.0, f64::max);
    // Baseline: memory_viz replays from the final state on every selection.
    let full = History::build(&snap, device, usize::MAX);
    let slow: Vec<f64> = picks
        .iter()
        .take(10)
        .map(|&k| {
            let t = Instant::now();
            std::hint::black_box(full.state_after(&snap, k));
            ms(t)
        })
        .collect();
    // The segment map of each selection: packing + rects + hit index, and one hover text (the
    // middle rect's, a block when there is one).
    let ctx = RowContext::new(&snap, device);
    let states: Vec<_> = picks
        .iter()
        .filter_map(|&k| h.state_after(&snap, k))
        .collect();
    let mut largest: Option<(SegMap, usize)> = None;
    let map_ms: Vec<f64> = states
        .iter()
        .enumerate()
        .map(|(i, st)| {
            let t = Instant::now();
            let m = SegMap::build(st);
            let item = m.rect(m.rect_count() / 2).map(|r| r.item);
            let text = item.and_then(|it| m.item_text(&snap, &ctx, st, it));
            std::hint::black_box(text);
            let took = ms(t);
            if largest
                .as_ref()
                .is_none_or(|(l, _)| m.rect_count() > l.rect_count())
            {
                largest = Some((m, i));
            }
            took
        })
        .collect();
    let (mut hit_mean_us, mut hit_max_us, mut rects) = (0.0, 0.0, 0usize);
    if let Some((m, _)) = &largest {
        rects = m.rect_count();
        let mut hits = Vec::with_capacity(1000);
        for _ in 0..1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let px = (x % 200_000) as f64 / 1000.0;
            let py = ((x >> 20) % (u64::from(m.rows) * 1000).max(1)) as f64 / 1000.0;
            let t = Instant::now();
            std::hint::black_box(m.hit(px, py));
            hits.push(t.elapsed().as_secs_f64() * 1e6);
        }
        hit_mean_us = hits.iter().sum::<f64>() / hits.len() as f64;
        hit_max_us = hits.iter().copied().fold(0.0, f64::max);
    }
    // Stress: a synthetic state with 120k blocks (1000 segments of 2 MiB with 100 blocks each,
    // and one 1 GiB segment with 20k), as the hover budget is < 1 ms at 100k blocks.
    let synth = synthetic_state();
    let t = Instant::now();
    let sm_map = SegMap::build(&synth);
    let synth_build_ms = ms(t);
    let (mut synth_hit_max_us, mut synth_text_max_us, mut synth_hit_sum) = (0.0f64, 0.0f64, 0.0);
    for _ in 0..1000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let px = (x % 200_000) as f64 / 1000.0;
        let py = ((x >> 20) % (u64::from(sm_map.rows) * 1000).max(1)) as f64 / 1000.0;
        let t = Instant::now();
        let item = sm_map.hit(px, py);
        let us = t.elapsed().as_secs_f64() * 1e6;
        synth_hit_sum += us;
        synth_hit_max_us = synth_hit_max_us.max(us);
        let t = Instant::now();
        std::hint::black_box(item.and_then(|it| sm_map.item_text(&snap, &ctx, &synth, it)));
        synth_text_max_us = synth_text_max_us.max(t.elapsed().as_secs_f64() * 1e6);
    }
    let (mm, mx) = if map_ms.is_empty() {
        (0.0, 0.0)
    } else {
        stats(map_ms)
    };
    let (fm, fx) = stats(fast);
    let (sm, sx) = stats(slow);
    println!(
        "{{\"file\":{path:?},\"events\":{n},\"interval\":{interval},\"open_ms\":{open_ms:.1},\
\"select_median_ms\":{fm:.3},\"select_max_ms\":{fx:.3},\"select_worst_ms\":{worst_ms:.3},\"checkpoint_bytes\":{},\"model_bytes\":{model},\
\"checkpoints_per_model\":{:.3},\"full_undo_median_ms\":{sm:.1},\"full_undo_max_ms\":{sx:.1},\"speedup\":{:.0},\
\"segmap_median_ms\":{mm:.3},\"segmap_max_ms\":{mx:.3},\"largest_map_rects\":{rects},\"hit_mean_us\":{hit_mean_us:.2},\
\"hit_max_us\":{hit_max_us:.2},\"synthetic_rects\":{},\"synthetic_build_ms\":{synth_build_ms:.1},\
\"synthetic_hit_mean_us\":{:.2},\"synthetic_hit_max_us\":{synth_hit_max_us:.2},\"synthetic_text_max_us\":{synth_text_max_us:.1},\
\"size_of_seg\":{},\"size_of_blk\":{}}}",
        h.checkpoint_bytes(),
        h.checkpoint_bytes() as f64 / model as f64,
        sm / fm.max(1e-6),
        sm_map.rect_count(),
        synth_hit_sum / 1000.0,
        std::mem::size_of::<Seg>(),
        std::mem::size_of::<Blk>(),
    );
}
