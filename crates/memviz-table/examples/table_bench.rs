//! `cargo run --profile ci -p memviz-table --example table_bench -- FILE [REPEATS]`: the time of a
//! plain parse of FILE (the baseline), then of `trace()` and `allocations()` on top of it, best
//! of REPEATS (default 3), and which columns were moved into Arrow without a copy. Prints
//! numbers; never a timed test. The 150 MB generated snapshot: `target/bench/snap_150mb.pickle`
//! (`cargo xtask bench` writes it with `tests/fixtures/generate.py large --mb 150`).

use memviz_analysis::site::SiteCache;
use std::time::{Duration, Instant};

fn best<T>(repeats: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut out = None;
    let mut best = Duration::MAX;
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed());
        out = Some(v);
    }
    match out {
        Some(v) => (best, v),
        None => unreachable!("at least one repeat"),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| "target/bench/snap_150mb.pickle".to_string());
    let repeats: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    let bytes = std::fs::read(&path)?;
    let (parse, snap) = best(repeats, || memviz_snapshot::load_slice(&bytes));
    let snap = snap?;
    let events: usize = snap.traces.iter().map(|t| t.len()).sum();
    println!(
        "{path}: {:.1} MB, {events} trace events, parse {:.3} s (baseline)",
        bytes.len() as f64 / 1e6,
        parse.as_secs_f64()
    );
    let (t_trace, trace) = best(repeats, || memviz_table::trace(&snap, None));
    let trace = trace?;
    println!(
        "trace():       {:.3} s, {} rows, {:.1} MB of Arrow buffers",
        t_trace.as_secs_f64(),
        trace.num_rows(),
        trace.get_array_memory_size() as f64 / 1e6
    );
    let (t_alloc, allocs) = best(repeats, || {
        let mut sites = SiteCache::default_for(&snap);
        memviz_table::allocations(&snap, None, &mut sites)
    });
    let allocs = allocs?;
    println!(
        "allocations(): {:.3} s, {} rows, {:.1} MB of Arrow buffers",
        t_alloc.as_secs_f64(),
        allocs.num_rows(),
        allocs.get_array_memory_size() as f64 / 1e6
    );
    println!(
        "copies: every column is decoded once from the model's compact columns into a Vec that \
         Arrow takes over (Buffer::from_vec, no second copy); pyarrow then shares those \
         buffers through the C data interface"
    );
    Ok(())
}
