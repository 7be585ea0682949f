//! The native `memviz` command: the same parsing and analysis as the viewer, headless.

use memviz_analysis::summary::summarize;
use memviz_snapshot::{LoadError, Loader, Snapshot};
use std::io::Read;
use std::process::ExitCode;
use std::time::Instant;

mod cmd;
mod huge_pages;

#[global_allocator]
static ALLOC: huge_pages::HugePages = huge_pages::HugePages;

pub(crate) const USAGE: &str = "usage:
  memviz summary FILE [--json]   per-device counts, bytes, peak and warnings
  memviz bench FILE...           native parse+model throughput (one JSON line per file)
  memviz state FILE --device D --event K --json
                                 allocator state after event K of the merged event list
                                 (K = -1: the final state): reserved / allocated bytes,
                                 segments, blocks
  memviz oom FILE [--device D] [--json]
                                 every oom event explained: requested, device free, free in
                                 reserved segments, largest free block, a one-line verdict
  memviz folded FILE [--device D] [--at peak|EVENT] [--all-frames]
                [--lifetime | --range FROM:TO | --phase NAME] [--json]
                                 live bytes by stack at the peak (or after trace event
                                 EVENT; --lifetime: bytes x timesteps over the trace,
                                 --range / --phase: within timesteps FROM..TO or an
                                 annotation phase) as folded stacks (frame;frame;frame
                                 bytes, root first)
  memviz diff A B [--device D] [--json | --folded [--all-frames]]
                                 live allocations of two snapshots grouped by stack (bytes
                                 and counts in A and B, by growth), segments only in A / B;
                                 --folded: frame;frame;frame bytes_a bytes_b per stack (the
                                 diff-flamegraph input of flamegraph.pl)
  memviz leaks FILE [--device D] [--json]
                                 leak suspects: allocations alive at the end made after
                                 memory settled, and stacks growing across iterations
  memviz lines FILE [--device D] [--all-frames] [--json]
                                 per source line (innermost user frame): live bytes at the
                                 peak, total allocated, count, largest
  memviz html FILE -o OUT.html [--dist DIR] [--title T]
                                 one self-contained HTML file: the viewer (from a built
                                 dist/: --dist, $MEMVIZ_DIST, the repo's dist/, ./dist)
                                 and FILE, gzip-compressed; opens offline from file://

FILE is a snapshot pickle from torch.cuda.memory._dump_snapshot(), raw or gzip-compressed.";

/// Read and parse a file in 1 MiB chunks, as the browser does. A file that ends before the
/// pickle's STOP opens with what was read before the cut, and a warning on stderr.
pub(crate) fn load(path: &str) -> Result<Snapshot, String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("{path}: cannot open: {e}"))?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut loader = Loader::new().with_size_hint(size);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("{path}: cannot read: {e}"))?;
        if n == 0 {
            break;
        }
        loader.push(&buf[..n]).map_err(|e| describe(path, &e))?;
    }
    let snap = loader.finish().map_err(|e| describe(path, &e))?;
    // A file cut before its end opens with what was read; say so where it cannot be missed
    // (stderr, whatever the command prints on stdout).
    if let Some(w) = snap.truncation_warning() {
        eprintln!("memviz: warning: {path}: {w}");
    }
    Ok(snap)
}

fn describe(path: &str, e: &LoadError) -> String {
    format!("{path}: {e}")
}

fn summary(args: &[String]) -> Result<(), String> {
    let json = args.iter().any(|a| a == "--json");
    let files: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    if let Some(bad) = args.iter().find(|a| a.starts_with("--") && *a != "--json") {
        return Err(format!("unknown option {bad}\n{USAGE}"));
    }
    let [file] = files.as_slice() else {
        return Err(format!("summary takes exactly one FILE\n{USAGE}"));
    };
    let snap = load(file)?;
    let s = summarize(&snap);
    if json {
        println!("{}", s.to_json());
    } else {
        println!("{file}: pickle protocol {}", snap.protocol);
        print!("{}", s.to_table());
    }
    Ok(())
}

fn bench(args: &[String]) -> Result<(), String> {
    if args.is_empty() {
        return Err(format!("bench needs at least one FILE\n{USAGE}"));
    }
    for path in args {
        let bytes = std::fs::read(path).map_err(|e| format!("{path}: cannot read: {e}"))?;
        let mut best = f64::INFINITY;
        let mut model_bytes = 0;
        let mut parts = Vec::new();
        let mut entries = 0usize;
        let runs = if bytes.len() > 200 << 20 { 2 } else { 3 };
        for _ in 0..runs {
            let t0 = Instant::now();
            let mut loader = Loader::new().with_size_hint(bytes.len() as u64);
            for c in bytes.chunks(1 << 20) {
                loader.push(c).map_err(|e| describe(path, &e))?;
            }
            let snap = loader.finish().map_err(|e| describe(path, &e))?;
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
        println!("{line}");
    }
    Ok(())
}

/// The value after `--name` in `args`.
pub(crate) fn option<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// `--device D` when given: `Ok(None)` without it, an error when D is missing or not a number.
pub(crate) fn device_option(args: &[String]) -> Result<Option<i64>, String> {
    match option(args, "--device") {
        Some(d) => d
            .parse::<i64>()
            .map(Some)
            .map_err(|_| "--device takes a device number".to_string()),
        None if args.iter().any(|a| a == "--device") => {
            Err("--device takes a device number".to_string())
        }
        None => Ok(None),
    }
}

/// The one FILE of `command`'s `args`; `valued` options take the next argument, `flags` none;
/// any other `--option` is an error.
pub(crate) fn one_file<'a>(
    command: &str,
    args: &'a [String],
    valued: &[&str],
    flags: &[&str],
) -> Result<&'a str, String> {
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if valued.contains(&a.as_str()) {
            it.next();
        } else if a.starts_with("--") {
            if !flags.contains(&a.as_str()) {
                return Err(format!("unknown option {a}\n{USAGE}"));
            }
        } else {
            files.push(a.as_str());
        }
    }
    match files.as_slice() {
        [file] => Ok(file),
        _ => Err(format!("{command} takes exactly one FILE\n{USAGE}")),
    }
}

fn state(args: &[String]) -> Result<(), String> {
    let file = one_file("state", args, &["--device", "--event"], &["--json"])?;
    let device: i64 = option(args, "--device")
        .unwrap_or("0")
        .parse()
        .map_err(|_| format!("--device takes a device number\n{USAGE}"))?;
    let event: i64 = option(args, "--event")
        .unwrap_or("-1")
        .parse()
        .map_err(|_| format!("--event takes an event index or -1\n{USAGE}"))?;
    let snap = load(file)?;
    let interval = memviz_analysis::state::History::interval_for(&snap, device, 64 << 20);
    let history = memviz_analysis::state::History::build(&snap, device, interval);
    let n = history.len();
    let (k, st) = if event == -1 {
        (n.checked_sub(1), history.final_state(&snap))
    } else {
        let k = usize::try_from(event)
            .ok()
            .filter(|&k| k < n)
            .ok_or_else(|| {
                format!(
                    "{file}: device {device} has {n} events (merged): --event takes 0 to {} or -1",
                    n.saturating_sub(1)
                )
            })?;
        let st = history
            .state_after(&snap, k)
            .ok_or_else(|| format!("{file}: no event {k} on device {device}"))?;
        (Some(k), st)
    };
    let action = k
        .and_then(|k| history.event(&snap, k))
        .map_or("", |e| e.action_name(&snap, device));
    let line = serde_json::json!({
        "event": event,
        "action": action,
        "reserved_bytes": st.reserved_bytes,
        "allocated_bytes": st.allocated_bytes,
        "segments": st.segments.len(),
        "blocks": st.blocks.len(),
    });
    println!("{line}");
    Ok(())
}

fn oom(args: &[String]) -> Result<(), String> {
    let file = one_file("oom", args, &["--device"], &["--json"])?;
    let json = args.iter().any(|a| a == "--json");
    let snap = load(file)?;
    let devices = match option(args, "--device") {
        Some(d) => vec![d
            .parse::<i64>()
            .map_err(|_| format!("--device takes a device number\n{USAGE}"))?],
        None => snap.devices(),
    };
    let mut out = Vec::new();
    for d in devices {
        let interval = memviz_analysis::state::History::interval_for(&snap, d, 64 << 20);
        let history = memviz_analysis::state::History::build(&snap, d, interval);
        for r in history.oom_reports(&snap) {
            out.push((d, r));
        }
    }
    if json {
        let list: Vec<serde_json::Value> = out
            .iter()
            .map(|(d, r)| {
                let mut v = serde_json::to_value(r).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    o.insert("device".into(), (*d).into());
                }
                v
            })
            .collect();
        println!("{}", serde_json::Value::from(list));
    } else if out.is_empty() {
        println!("{file}: no oom events");
    } else {
        for (d, r) in &out {
            println!("device {d}, event {}: {}", r.event, r.verdict);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(|s| s.as_str()) {
        Some("summary") => summary(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("state") => state(&args[1..]),
        Some("oom") => oom(&args[1..]),
        Some("folded") => cmd::folded::run(&args[1..]),
        Some("diff") => cmd::diff::run(&args[1..]),
        Some("leaks") => cmd::leaks::run(&args[1..]),
        Some("lines") => cmd::lines::run(&args[1..]),
        Some("html") => cmd::html::run(&args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("memviz: {msg}");
            ExitCode::from(2)
        }
    }
}
