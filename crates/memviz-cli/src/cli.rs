//! The command line, parsed by clap (derive): every command's arguments as a typed struct, and
//! `memviz --help` / `memviz CMD --help` from the doc comments below.
//!
//! One rule for `--device D`: it restricts a command to device D. Without it, a command that
//! shows one device (`state`, `folded`, `leaks`, `lines`) uses the device with the longest trace
//! (the first on ties; the viewer opens on a device with an `oom` event first), and a report over the file (`summary`, `oom`,
//! `diff`, `stats`, `trace`, `segments`, `memory`, `whatif`) covers every device.

use clap::{Args, Parser, Subcommand};

/// What the help ends with.
const AFTER_HELP: &str =
    "FILE is a snapshot pickle from torch.cuda.memory._dump_snapshot(), raw or gzip-compressed.
--device D restricts a command to device D; without it, a command about one device uses the
device with the longest trace, and summary, oom, diff, stats, trace, segments,
memory and whatif cover every device.
A reader that stops early (| head) ends a command quietly. MEMVIZ_MAX_MEMORY=BYTES (or with a
K, M or G suffix) limits the memory memviz takes (default: the machine's physical memory); a
file that needs more ends with exit 2 and a sentence saying so. Errors: exit 2, one line.";

/// memviz: read a PyTorch CUDA memory snapshot headless (the same parser and analyses as the
/// browser viewer).
#[derive(Parser, Debug)]
#[command(name = "memviz", version, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Per-device counts, bytes, peak and warnings.
    Summary(SummaryArgs),
    /// Native parse + model throughput, one JSON line per file.
    Bench(BenchArgs),
    /// The allocator state after event K of the merged event list: reserved / allocated bytes,
    /// segments, blocks (one JSON line).
    State(StateArgs),
    /// Every oom event explained: requested, device free, free in reserved segments, largest
    /// free block, a one-line verdict.
    Oom(DeviceArgs),
    /// Live bytes by stack at the peak (or after trace event EVENT), or bytes × timesteps over
    /// the trace or a range, as folded stacks (`frame;frame;frame bytes`, root first).
    Folded(FoldedArgs),
    /// Live allocations of two snapshots grouped by stack (bytes and counts in A and B, by
    /// growth) and segments only in A / B.
    Diff(DiffArgs),
    /// Leak suspects: allocations alive at the end made after memory settled, and stacks
    /// growing across iterations.
    Leaks(DeviceArgs),
    /// memory_viz's segment summary: per segment of 20 MiB or more, a page map, allocated and
    /// free bytes (internal: rounding, external: free blocks); then totals.
    Stats(FileDeviceArgs),
    /// memory_viz's trace listing: one Python-like line per trace event of each device
    /// (`a = seg_0[offset:size]`, `del a`, `cudaMalloc`, …), then `TOTAL MEM:`.
    Trace(FileDeviceArgs),
    /// Reserved memory at the end by segment, block state and stack, as folded lines
    /// (`stream_S;seg_ADDR;STATE;frames… bytes`, `<free>` and `<gaps>` as frames).
    Segments(ReservedArgs),
    /// Reserved memory at the end by stream, block state and stack, as folded lines (the
    /// `segments` lines without the `seg_` level).
    Memory(ReservedArgs),
    /// Per site (innermost user line, with the library lines below it): live bytes at the
    /// peak, total allocated, count, largest.
    Lines(LinesArgs),
    /// One self-contained HTML file: the viewer and FILE, gzip-compressed; opens offline from
    /// file://.
    Html(HtmlArgs),
    /// Many snapshots of one job (one per rank) side by side: per file the device with the
    /// largest peak, its peak, final and reserved bytes, the top 3 sites at the peak and the oom
    /// events; sorted by peak, outliers flagged.
    Ranks(RanksArgs),
    /// Serve the viewer and FILEs on 127.0.0.1 and open them in the browser (Ctrl-C stops).
    Open(OpenArgs),
    /// What if: replay each device's trace through a model of PyTorch's caching allocator
    /// under other PYTORCH_CUDA_ALLOC_CONF settings and a device capacity: peak reserved and
    /// allocated, fragmentation at the peak, cudaMalloc calls, the first OOM, and the smallest
    /// capacity the trace fits on (docs/whatif.md).
    Whatif(WhatifArgs),
    /// The snapshot as tables (trace, allocations, frames, stacks, segments, blocks, lines):
    /// Parquet files for DuckDB, Spark or pandas (--parquet DIR), or one table's rows as JSON.
    Export(crate::cmd::export::ExportArgs),
    /// The allocations a structured filter keeps (`size>=1MiB site:/attn/ at:peak`, the page's
    /// filter): count, bytes and one row each; --json or --csv (the page's export).
    Query(crate::cmd::query::QueryArgs),
}

#[derive(Args, Debug)]
pub struct SummaryArgs {
    /// The snapshot file.
    pub file: String,
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Snapshot files.
    #[arg(required = true)]
    pub files: Vec<String>,
}

#[derive(Args, Debug)]
pub struct StateArgs {
    /// The snapshot file.
    pub file: String,
    /// The device (default: the longest trace).
    #[arg(long)]
    pub device: Option<i64>,
    /// The merged event index; -1: the final state.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub event: i64,
    /// JSON output (the only format; accepted for compatibility).
    #[arg(long)]
    pub json: bool,
}

/// A file, an optional device and `--json` (oom, leaks).
#[derive(Args, Debug)]
pub struct DeviceArgs {
    /// The snapshot file.
    pub file: String,
    /// Only this device.
    #[arg(long)]
    pub device: Option<i64>,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Python files that count as your own code besides the default (every Python file outside
    /// site-packages, dist-packages, the standard library and torch): comma-separated path
    /// prefixes or package paths (`transformers`, `/home/me/lib`), or one /regex/ (docs/sites.md).
    #[arg(long, value_name = "PATTERN")]
    pub user_code: Option<String>,
}

#[derive(Args, Debug)]
pub struct FoldedArgs {
    /// The snapshot file.
    pub file: String,
    /// The device (default: the longest trace).
    #[arg(long)]
    pub device: Option<i64>,
    /// `peak`, or a trace event index: live bytes after that event.
    #[arg(long, value_name = "peak|EVENT")]
    pub at: Option<String>,
    /// Which frames: `my-code` (your frames, library calls between them collapsed into one
    /// `[package] path:line:name` node), `python` (no C++ or interpreter frames) or `all`.
    /// Default: my-code when the file has frames of your code, else python.
    #[arg(long, value_name = "my-code|python|all")]
    pub frames: Option<String>,
    /// The same as `--frames all`.
    #[arg(long, conflicts_with = "frames")]
    pub all_frames: bool,
    /// Python files that count as your own code besides the default (every Python file outside
    /// site-packages, dist-packages, the standard library and torch): comma-separated path
    /// prefixes or package paths (`transformers`, `/home/me/lib`), or one /regex/ (docs/sites.md).
    #[arg(long, value_name = "PATTERN")]
    pub user_code: Option<String>,
    /// Bytes × timesteps over the whole trace.
    #[arg(long)]
    pub lifetime: bool,
    /// Bytes × timesteps within timesteps FROM..TO (half-open).
    #[arg(long, value_name = "FROM:TO", conflicts_with = "phase")]
    pub range: Option<String>,
    /// Bytes × timesteps within the first `external_annotations` phase of this name.
    #[arg(long, value_name = "NAME")]
    pub phase: Option<String>,
    /// `{"device","at_step","total_bytes","stacks":[{"frames":[…],"bytes":N}]}`.
    #[arg(long, conflicts_with = "svg")]
    pub json: bool,
    /// Write a flamegraph SVG to OUT instead of printing the folded lines.
    #[arg(long, value_name = "OUT.svg")]
    pub svg: Option<String>,
}

/// A file and an optional device (stats, trace).
#[derive(Args, Debug)]
pub struct FileDeviceArgs {
    /// The snapshot file.
    pub file: String,
    /// Only this device (default: every device).
    #[arg(long)]
    pub device: Option<i64>,
}

/// segments, memory.
#[derive(Args, Debug)]
pub struct ReservedArgs {
    /// The snapshot file.
    pub file: String,
    /// Only this device (default: every device).
    #[arg(long)]
    pub device: Option<i64>,
    /// Write a flamegraph SVG to OUT instead of printing the folded lines.
    #[arg(long, value_name = "OUT.svg")]
    pub svg: Option<String>,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The first (older) snapshot.
    pub a: String,
    /// The second (newer) snapshot.
    pub b: String,
    /// Only this device (default: every device).
    #[arg(long)]
    pub device: Option<i64>,
    /// JSON instead of a table.
    #[arg(long, conflicts_with = "folded")]
    pub json: bool,
    /// `frame;frame;frame bytes_a bytes_b` per stack (flamegraph.pl's diff input).
    #[arg(long)]
    pub folded: bool,
    /// With --folded: keep every frame.
    #[arg(long)]
    pub all_frames: bool,
    /// With --folded: write a differential flamegraph SVG to OUT instead of the lines.
    #[arg(long, value_name = "OUT.svg", requires = "folded")]
    pub svg: Option<String>,
    /// Python files that count as your own code besides the default (every Python file outside
    /// site-packages, dist-packages, the standard library and torch): comma-separated path
    /// prefixes or package paths (`transformers`, `/home/me/lib`), or one /regex/ (docs/sites.md).
    #[arg(long, value_name = "PATTERN")]
    pub user_code: Option<String>,
}

#[derive(Args, Debug)]
pub struct LinesArgs {
    /// The snapshot file.
    pub file: String,
    /// The device (default: the longest trace).
    #[arg(long)]
    pub device: Option<i64>,
    /// Attribute to the innermost frame, torch and C++ included (default: the site, the
    /// innermost user frame).
    #[arg(long)]
    pub all_frames: bool,
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Python files that count as your own code besides the default (every Python file outside
    /// site-packages, dist-packages, the standard library and torch): comma-separated path
    /// prefixes or package paths (`transformers`, `/home/me/lib`), or one /regex/ (docs/sites.md).
    #[arg(long, value_name = "PATTERN")]
    pub user_code: Option<String>,
}

#[derive(Args, Debug)]
pub struct HtmlArgs {
    /// The snapshot file.
    pub file: String,
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", value_name = "OUT.html")]
    pub output: String,
    /// The built viewer (default: $MEMVIZ_DIST, the repository's dist/, ./dist).
    #[arg(long, value_name = "DIR")]
    pub dist: Option<String>,
    /// The page title (default: "memviz: FILE").
    #[arg(long)]
    pub title: Option<String>,
}

#[derive(Args, Debug)]
pub struct RanksArgs {
    /// Snapshot files (one per rank).
    #[arg(required = true)]
    pub files: Vec<String>,
    /// `{"rows":[{"file","device","peak_bytes","final_bytes","reserved_bytes","oom_events",
    /// "top_sites":[{"label","bytes"}],"outlier"}],"rule"}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct OpenArgs {
    /// Snapshot files, opened in the page at start.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// The port on 127.0.0.1 (0: a free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Print the URL only; do not start a browser (e.g. on a machine reached by `ssh -L`).
    #[arg(long)]
    pub no_browser: bool,
    /// The built viewer to serve instead of the one in the binary.
    #[arg(long, value_name = "DIR")]
    pub dist: Option<String>,
}

#[derive(Args, Debug)]
pub struct WhatifArgs {
    /// The snapshot file.
    pub file: String,
    /// Only this device (default: every device with a trace).
    #[arg(long)]
    pub device: Option<i64>,
    /// The memory the caching allocator may reserve: bytes, or 40GiB, 40G (both 2^30), 40GB
    /// (10^9), 24576MiB. Default: the recorded device (its limit where the trace shows it was
    /// hit).
    #[arg(long, value_name = "SIZE")]
    pub capacity: Option<String>,
    /// PYTORCH_CUDA_ALLOC_CONF keys to replay with, over the recorded settings
    /// (`expandable_segments:True,max_split_size_mb:512`).
    #[arg(long, value_name = "CONF", conflicts_with = "sweep")]
    pub alloc_conf: Option<String>,
    /// Replay as recorded (the recorded settings and device) and compare the model's
    /// segment_alloc/free/map/unmap events and peak reserved with the trace's own.
    #[arg(long, conflicts_with_all = ["capacity", "alloc_conf", "sweep"])]
    pub as_recorded: bool,
    /// A table over the standard alternatives (recorded, expandable_segments,
    /// max_split_size_mb 128/256/512, roundup_power2_divisions 4/8,
    /// garbage_collection_threshold 0.6): peak reserved, fragmentation, smallest capacity.
    #[arg(long)]
    pub sweep: bool,
    /// JSON: one object per device (`--sweep`: one row per device and setting).
    #[arg(long)]
    pub json: bool,
    /// Python files that count as your own code besides the default (every Python file outside
    /// site-packages, dist-packages, the standard library and torch): comma-separated path
    /// prefixes or package paths (`transformers`, `/home/me/lib`), or one /regex/ (docs/sites.md).
    #[arg(long, value_name = "PATTERN")]
    pub user_code: Option<String>,
}

/// The parsed command line; `None` after `--help` or `--version` (printed on stdout).
pub(crate) fn parse(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Result<Option<Cli>, crate::out::Fail> {
    match Cli::try_parse_from(args) {
        Ok(c) => Ok(Some(c)),
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            Ok(None)
        }
        Err(e) => Err(crate::error::bad_argument(one_line_error(&e))),
    }
}

/// clap's error as memviz's one line: its first line without clap's `error: ` prefix.
#[must_use]
pub fn one_line_error(e: &clap::Error) -> String {
    let text = e.render().to_string();
    // The message is what comes before the first blank line (then clap's usage lines).
    let words: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .flat_map(str::split_whitespace)
        .collect();
    let first = words.join(" ");
    let first = first.strip_prefix("error: ").unwrap_or(&first);
    format!("{first} (see memviz --help)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent_and_every_argument_has_help() {
        Cli::command().debug_assert();
        for sub in Cli::command().get_subcommands() {
            assert!(sub.get_about().is_some(), "{}", sub.get_name());
            for a in sub.get_arguments() {
                if a.get_id() == "help" {
                    continue;
                }
                assert!(a.get_help().is_some(), "{} {}", sub.get_name(), a.get_id());
            }
        }
    }

    #[test]
    fn state_takes_a_negative_event_and_errors_are_one_line() {
        let c = Cli::try_parse_from(["memviz", "state", "f.pickle", "--event", "-1"]).expect("ok");
        assert!(matches!(
            c.command,
            Command::State(StateArgs { event: -1, .. })
        ));
        let e = Cli::try_parse_from(["memviz", "lines", "f", "--device", "x"]).expect_err("bad");
        let line = one_line_error(&e);
        assert!(!line.contains('\n') && line.contains("--device"), "{line}");
    }
}
