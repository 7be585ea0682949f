//! The what-if benchmark of `cargo xtask bench-analysis` (issue 31): on each snapshot given, the
//! parse (the baseline, measured in the same run), the start state, one replay as recorded and
//! `--sweep` (the 8 standard settings, each with its smallest capacity), best of 3 each, as one
//! JSON line per device with the replay's ratio to the parse. Prints timings only: the targets
//! (one replay of 150 MB under 1 s, the sweep under 30 s) are read off the table, never asserted.
use std::time::Instant;

fn best_of<T>(n: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..n {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed().as_secs_f64());
        last = Some(v);
    }
    match last {
        Some(v) => (best, v),
        None => (f64::NAN, f()),
    }
}

fn main() {
    for path in std::env::args().skip(1) {
        let Ok(bytes) = std::fs::read(&path) else {
            eprintln!("{path}: unreadable");
            continue;
        };
        let (parse_s, snap) = best_of(3, || memviz_snapshot::load_slice(&bytes));
        let Ok(snap) = snap else {
            eprintln!("{path}: does not parse");
            continue;
        };
        for device in 0..snap.traces.len() as i64 {
            let events = snap.traces.get(device as usize).map_or(0, |t| t.len());
            if events == 0 {
                continue;
            }
            let (prepare_s, prep) = best_of(3, || memviz_alloc::Prepared::new(&snap, device));
            let options = memviz_alloc::Options::default();
            let (replay_s, out) = best_of(3, || prep.replay(&prep.recorded, &options, &mut |_, _| true));
            let heap = out.map_or(0, |o| o.model_heap_bytes);
            let (sweep_s, rows) = best_of(1, || memviz_alloc::sweep(&prep, None, &mut |_, _| true));
            let rows = rows.map_or(0, |r| r.len());
            println!(
                "{{\"bench\":\"whatif\",\"file\":{:?},\"mb\":{:.1},\"device\":{device},\"events\":{events},\"parse_s\":{parse_s:.3},\"prepare_s\":{prepare_s:.3},\"replay_s\":{replay_s:.3},\"replay_over_parse\":{:.2},\"sweep_s\":{sweep_s:.2},\"sweep_rows\":{rows},\"model_heap_bytes\":{heap}}}",
                path,
                bytes.len() as f64 / 1e6,
                replay_s / parse_s,
            );
        }
    }
}
