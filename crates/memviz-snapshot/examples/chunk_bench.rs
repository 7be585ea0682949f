//! Loads every file of a directory (a fuzz corpus) whole and in small chunks, as the `snapshot`
//! fuzz target does, and prints the slowest: where the per-input time of fuzzing goes.
//! `cargo run -p memviz-snapshot --release --example chunk_bench -- DIR [N]`
use std::time::Instant;

use memviz_snapshot::Loader;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: chunk_bench DIR [N]");
        std::process::exit(2);
    };
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(15);
    let mut times: Vec<(f64, f64, usize, String)> = Vec::new();
    let mut total = (0.0, 0.0);
    let entries = std::fs::read_dir(&dir).map(|d| d.flatten().collect::<Vec<_>>());
    for e in entries.unwrap_or_default() {
        let Ok(data) = std::fs::read(e.path()) else {
            continue;
        };
        let data = &data[..data.len().min(1024)];
        let Some((&first, rest)) = data.split_first() else {
            continue;
        };
        let chunk = 1 + first as usize % 97;
        let t = Instant::now();
        let mut l = Loader::new();
        let mut ok = true;
        for c in rest.chunks(chunk) {
            if l.push(c).is_err() {
                ok = false;
                break;
            }
        }
        if ok {
            let _ = l.finish();
        }
        let chunked = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let _ = memviz_snapshot::load_slice(rest);
        let whole = t.elapsed().as_secs_f64() * 1e3;
        total.0 += chunked;
        total.1 += whole;
        times.push((
            chunked,
            whole,
            chunk,
            e.file_name().to_string_lossy().into_owned(),
        ));
    }
    times.sort_by(|a, b| (b.0 + b.1).total_cmp(&(a.0 + a.1)));
    println!(
        "{} files: chunked {:.1} ms, whole {:.1} ms in all",
        times.len(),
        total.0,
        total.1
    );
    for (c, w, k, name) in times.iter().take(n) {
        println!("{c:9.3} ms chunked ({k:2}-byte chunks) {w:9.3} ms whole  {name}");
    }
}
