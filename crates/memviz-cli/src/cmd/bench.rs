//! `memviz bench FILE…`: native parse + model throughput, one JSON line per file.

use crate::cli::BenchArgs;
use crate::describe;
use crate::out::{stdout, Done};
use memviz_snapshot::Loader;
use std::io::Write;
use std::time::Instant;

/// Runs `memviz bench` with the arguments after the command name.
pub fn run(a: &BenchArgs) -> Done {
    let mut out = stdout();
    for path in &a.files {
        let bytes = crate::read_whole(path)?;
        let mut best = f64::INFINITY;
        let mut model_bytes = 0;
        let mut parts = Vec::new();
        let mut entries = 0usize;
        let runs = if bytes.len() > 200 << 20 { 2 } else { 3 };
        for _ in 0..runs {
            let t0 = Instant::now();
            let mut loader = Loader::new().with_size_hint(bytes.len() as u64);
            for c in bytes.chunks(1 << 20) {
                loader.push(c).map_err(|e| describe(path, e))?;
            }
            let snap = loader.finish().map_err(|e| describe(path, e))?;
            let secs = t0.elapsed().as_secs_f64();
            best = best.min(secs);
            model_bytes = snap.heap_bytes();
            parts = snap.heap_bytes_by_part();
            entries = snap.traces.iter().map(|t| t.len()).sum();
        }
        // Bytes per trace entry of each structure of the model.
        let per_entry: serde_json::Map<String, serde_json::Value> = parts
            .iter()
            .map(|(name, b)| {
                let per = *b as f64 / entries.max(1) as f64;
                (
                    (*name).to_string(),
                    serde_json::json!((per * 100.0).round() / 100.0),
                )
            })
            .collect();
        let line = serde_json::json!({
            "file": path,
            "bytes": bytes.len(),
            "secs": best,
            "mb_per_s": bytes.len() as f64 / 1e6 / best,
            "model_bytes": model_bytes,
            "trace_entries": entries,
            "bytes_per_entry": per_entry,
        });
        writeln!(out, "{line}")?;
    }
    out.finish()
}
