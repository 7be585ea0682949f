//! The native `memviz` command: the same parsing and analysis as the viewer, headless.

use memviz_snapshot::{LoadError, Loader, Snapshot};
use std::io::Read;
use std::process::ExitCode;

mod cmd;
mod huge_pages;
mod out;

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

FILE is a snapshot pickle from torch.cuda.memory._dump_snapshot(), raw or gzip-compressed.
A reader that stops early (| head) ends a command quietly. MEMVIZ_MAX_MEMORY=BYTES (or with a
K, M or G suffix) limits the memory memviz takes (default: the machine's physical memory); a
file that needs more ends with exit 2 and a sentence saying so.";

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
        out::warn(&format!("memviz: warning: {path}: {w}"));
    }
    Ok(snap)
}

fn describe(path: &str, e: &LoadError) -> String {
    format!("{path}: {e}")
}

/// The whole file in memory, its buffer reserved fallibly: a file larger than the memory left
/// is a sentence (exit 2), not an abort.
pub(crate) fn read_whole(path: &str) -> Result<Vec<u8>, String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("{path}: cannot open: {e}"))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut v = Vec::new();
    v.try_reserve_exact(usize::try_from(len).unwrap_or(usize::MAX))
        .map_err(|_| format!("{path}: cannot read: its {len} bytes do not fit in memory"))?;
    f.read_to_end(&mut v)
        .map_err(|e| format!("{path}: cannot read: {e}"))?;
    Ok(v)
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

fn main() -> ExitCode {
    huge_pages::install();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or(&[]);
    let result = match args.first().map(|s| s.as_str()) {
        Some("summary") => cmd::summary::run(rest),
        Some("bench") => cmd::bench::run(rest),
        Some("state") => cmd::state::run(rest),
        Some("oom") => cmd::oom::run(rest),
        Some("folded") => cmd::folded::run(rest),
        Some("diff") => cmd::diff::run(rest),
        Some("leaks") => cmd::leaks::run(rest),
        Some("lines") => cmd::lines::run(rest),
        Some("html") => cmd::html::run(rest),
        Some("-h" | "--help" | "help") => help(),
        _ => Err(USAGE.into()),
    };
    match result {
        Ok(()) | Err(out::Fail::Closed) => ExitCode::SUCCESS,
        Err(out::Fail::Msg(msg)) => {
            out::warn(&format!("memviz: {msg}"));
            ExitCode::from(2)
        }
    }
}

fn help() -> out::Done {
    use std::io::Write;
    let mut o = out::stdout();
    writeln!(o, "{USAGE}")?;
    o.finish()
}
