//! Project tasks for memviz: install the pinned web toolchain, serve the viewer, run every test, benchmark, fuzz.
//!
//! Run as `cargo xtask <command>` (an alias in `.cargo/config.toml`); `cargo xtask --help` and
//! `cargo xtask <command> --help` list every command and option (clap). serde_json reads the JSON
//! of package.json files and of our own tools' outputs; libc on Linux the one wait4 call of
//! `rusage.rs` (bench-bounds' peak RSS).
//!
//! # How it works
//! Every command runs from the repository root and puts cargo's `bin` folder first on `PATH`, so
//! tools installed by `cargo install` are found even in a bare CI shell. `install` checks each
//! tool's `--version` (or a file) first and skips what is already there with the pinned version,
//! so a second run costs a few process spawns. The other commands call `install` first and then
//! run their steps in order, stopping at the first failure with a message that names the step.

use std::env;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use clap::{Parser, Subcommand};

/// Pinned versions; see shared/docs/TOOLCHAIN.md for why each one.
const WASM_TARGET: &str = "wasm32-unknown-unknown";
const WASM_BINDGEN_VERSION: &str = "0.2.130";
/// wasm-opt is npm's `binaryen` package pinned in tests/web/package.json (binaryen 116 built to
/// wasm, run by node: nothing to compile, where the `wasm-opt` crate builds binaryen's C++ for
/// minutes); trunk finds it on the PATH that [`tasks::trunk`] gives it. What its `--version`
/// must print: trunk.toml's `wasm_opt = "version_116"`, which trunk compares.
const WASM_OPT_REPORTED: &str = "version_116";
/// Where npm puts the pinned packages' programs (tsc, eslint, esbuild, wasm-opt).
const NPM_BIN: &str = "tests/web/node_modules/.bin";
const TRUNK_VERSION: &str = "0.21.14";
const CHROMIUM_PATH: &str = "/usr/bin/chromium";
/// The npm packages of the tests and of `lint-js`, each pinned to an exact version.
const NPM_PACKAGE_JSON: &str = "tests/web/package.json";
/// The one the browser tests cannot run without.
const PLAYWRIGHT_PACKAGE: &str = "playwright-core";

mod bench;
mod bench_big;
mod bench_bounds;
mod fuzz;
mod install;
mod python;
mod rusage;
mod steps;
mod tasks;

use bench::{
    bench, bench_analysis, bench_page, build_bench_page, run_capture_status, BENCH_PAGE_DIST, MB,
};
use install::install;
use steps::{thread_log, Steps};
use tasks::*;

type Result<T, E = String> = std::result::Result<T, E>;

/// `cargo xtask` (an alias in `.cargo/config.toml`, so clap's usage lines name it so).
#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Project tasks for memviz: install the pinned toolchain, serve the viewer, run every test, benchmark, fuzz.",
    after_help = "Sizes are whole megabytes (MB = 10^6 bytes) given as plain integers: `bench-page 10 150`, `bench --sizes 10,150`.\nSee README.md (the two commands) and DEVELOPERS.md (the benchmarks).",
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Task,
}

/// The subcommands; each doc comment is its line in `cargo xtask --help`.
#[derive(Debug, Subcommand)]
enum Task {
    /// Install the pinned toolchain (idempotent; fast when done)
    Install,
    /// Build and serve the viewer (with the demo snapshot) on 127.0.0.1
    Serve {
        /// The port to serve on
        #[arg(long, default_value_t = 8080)]
        port: u16,
    },
    /// Build the viewer into dist/: the pinned wasm target, wasm-bindgen, wasm-opt and trunk, then trunk build (what building the wheel runs first when there is no dist/)
    Site,
    /// Every test: the JS check, cargo clippy and tests, trunk build, wasm (node) tests, page tests in Chromium, and the wheel's tests (test-python)
    Test,
    /// Only the Python step of `test`: build the wheel (maturin), install it into a fresh venv with the pinned test packages, run `memviz summary` and tests/python (needs dist/ built)
    TestPython,
    /// Type-check www/js (tsc --checkJs --noEmit: www/jsconfig.json, and www/jsconfig.worker.json for the worker) and lint it (eslint, tests/web/eslint.config.mjs)
    LintJs,
    /// Regenerate www/js/generated/ (the shell's TypeScript types) from the Rust request enum and answer structs (ts-rs); `test` fails while they are stale
    GenTypes,
    /// Parse throughput: native, wasm (node) and CPython's pickle, as a markdown table on stdout
    Bench {
        /// Snapshot sizes in MB (1 to 500, generate.py's limit)
        #[arg(value_parser = generated_mb, default_values_t = [10, 150, 500], conflicts_with = "sizes")]
        sizes_mb: Vec<u64>,
        /// The same sizes, comma-separated (the older spelling)
        #[arg(long, value_parser = generated_mb, value_delimiter = ',', value_name = "MB,MB,...")]
        sizes: Option<Vec<u64>>,
    },
    /// The page in headless Chromium: drop -> first frame, zoom/pan step times, wasm/JS memory and process RSS, WebGL2 and WebGPU (SwiftShader), against the native CLI; a markdown table
    BenchPage {
        /// Snapshot sizes in MB: `generate.py large` up to 500, tiles (`generate.py tile`, as
        /// bench-big) above it or with --from, up to 10000
        #[arg(value_parser = bench_big::tiled_mb, default_values_t = [10, 150, 500])]
        sizes_mb: Vec<u64>,
        /// Tile this snapshot's longest device trace (a real file) for every size
        #[arg(long, value_name = "SNAPSHOT")]
        from: Option<String>,
    },
    /// Big tiled snapshots: memviz summary time and RSS, heap per trace entry of the model and each view (mem_budget), and the page with every view (WebGL2); the tables of docs/limits.md
    BenchBig(bench_big::Args),
    /// The analyses after load: state history selection vs a full undo (state_bench), flamegraph, search, lines, leaks, diff of two snapshots (find_bench), the what-if replay and sweep beside the parse (whatif_bench), as JSON lines
    BenchAnalysis {
        /// Snapshot sizes in MB (1 to 500, generate.py's limit; the first is also diffed against one 1 MB larger, so below 500)
        #[arg(value_parser = generated_mb, default_values_t = [150, 500])]
        sizes_mb: Vec<u64>,
    },
    /// Issue 14's budgets: every memviz command on every hostile class of tests/fixtures/bounds.py with a 10 s limit; a markdown table of time, peak RSS (wait4), exit and verdict. Exits 0 unless the harness itself fails
    BenchBounds(bench_bounds::Args),
    /// Run the cargo-fuzz targets in tests/fuzz (needs nightly) on corpora seeded from the generated fixtures, with libFuzzer's RSS / malloc / timeout limits; prints execs and crashes per target (docs/fuzzing.md)
    Fuzz(fuzz::FuzzArgs),
}

impl Task {
    /// The name shown in `xtask NAME: FAILED`.
    fn name(&self) -> &'static str {
        match self {
            Self::Install => "install",
            Self::Serve { .. } => "serve",
            Self::Site => "site",
            Self::Test => "test",
            Self::TestPython => "test-python",
            Self::LintJs => "lint-js",
            Self::GenTypes => "gen-types",
            Self::Bench { .. } => "bench",
            Self::BenchPage { .. } => "bench-page",
            Self::BenchBig(_) => "bench-big",
            Self::BenchAnalysis { .. } => "bench-analysis",
            Self::BenchBounds(_) => "bench-bounds",
            Self::Fuzz(_) => "fuzz",
        }
    }

    fn run(self) -> Result<()> {
        match self {
            Self::Install => install(),
            Self::Serve { port } => serve(port),
            Self::Site => site(),
            Self::Test => test(),
            Self::TestPython => python::python_tests(),
            Self::LintJs => lint_js(),
            Self::GenTypes => gen_types(),
            Self::Bench { sizes_mb, sizes } => bench(&sizes.unwrap_or(sizes_mb)),
            Self::BenchPage { sizes_mb, from } => bench_page(&sizes_mb, from),
            Self::BenchBig(a) => bench_big::bench_big(&a),
            Self::BenchAnalysis { sizes_mb } => bench_analysis(&sizes_mb),
            Self::BenchBounds(a) => bench_bounds::bench_bounds(&a),
            Self::Fuzz(a) => fuzz::fuzz(&a),
        }
    }
}

/// A size in whole MB from 1 to `max`, for clap.
fn mb_in(text: &str, max: u64, why: &str) -> Result<u64> {
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| format!("sizes are whole MB from 1 to {max} ({why}), like `10 150 500`"))
}

/// A size for `generate.py large` (at most 500 MB).
fn generated_mb(text: &str) -> Result<u64> {
    mb_in(text, 500, "generate.py large's limit")
}

fn main() -> ExitCode {
    // clap prints --help / --version and usage errors itself (exit 0 and 2).
    let command = Cli::parse().command;
    let name = command.name();
    if let Err(msg) = prepare_env() {
        eprintln!("xtask: {msg}");
        return ExitCode::FAILURE;
    }
    match command.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("\nxtask {name}: FAILED: {msg}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Environment and helpers

/// The repository root (two levels above this crate).
fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .and_then(Path::parent)
        .map_or_else(|| here.to_path_buf(), Path::to_path_buf)
}

/// cd to the repository root and put cargo's bin folder first on PATH.
fn prepare_env() -> Result<()> {
    let root = repo_root();
    env::set_current_dir(&root).map_err(|e| format!("cannot cd to {}: {e}", root.display()))?;
    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if let Some(bin) = cargo_home.map(|h| h.join("bin")) {
        let old = env::var_os("PATH").unwrap_or_default();
        let mut parts: Vec<PathBuf> = env::split_paths(&old).collect();
        if !parts.contains(&bin) {
            parts.insert(0, bin);
            let joined = env::join_paths(parts).map_err(|e| format!("bad PATH: {e}"))?;
            env::set_var("PATH", joined);
        }
    }
    Ok(())
}

fn display(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        let arg = arg.to_string_lossy();
        if arg.contains('\n') {
            let _ = write!(s, " <{}-line script>", arg.lines().count());
        } else if arg.contains(' ') || arg.is_empty() {
            let _ = write!(s, " '{arg}'");
        } else {
            let _ = write!(s, " {arg}");
        }
    }
    if let Some(dir) = cmd.get_current_dir() {
        s = format!("(cd {} && {s})", dir.display());
    }
    s
}

/// Runs a command with inherited stdio; an error names the command and its exit status.
fn run(mut cmd: Command) -> Result<()> {
    let shown = display(&cmd);
    match thread_log() {
        Some(mut log) => {
            let _ = writeln!(log, "$ {shown}");
            if let Ok(err) = log.try_clone() {
                cmd.stderr(err);
            }
            cmd.stdout(log);
        }
        None => eprintln!("$ {shown}"),
    }
    let status = cmd
        .status()
        .map_err(|e| format!("could not start `{shown}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}

/// Runs a command and returns its stdout (stderr passes through).
fn run_capture(mut cmd: Command) -> Result<String> {
    let shown = display(&cmd);
    match thread_log() {
        Some(mut log) => {
            let _ = writeln!(log, "$ {shown}");
            cmd.stderr(log);
        }
        None => {
            eprintln!("$ {shown}");
            cmd.stderr(Stdio::inherit());
        }
    }
    let out = cmd
        .output()
        .map_err(|e| format!("could not start `{shown}`: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("`{shown}` failed ({})", out.status))
    }
}

fn cmd<I, S>(program: &str, args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut c = Command::new(program);
    c.args(args);
    c
}

/// stdout + stderr of `program args`, or None when it cannot be started.
fn quiet_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&out.stderr));
    Some(s)
}

fn version_matches(program: &str, wanted: &str) -> bool {
    quiet_output(program, &["--version"]).is_some_and(|out| out.contains(wanted))
}

// ---------------------------------------------------------------------------------------------
// serve

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::bench_page_table;
    use crate::install::pinned_npm_packages;

    /// `cargo xtask ARGS` as clap parses it.
    fn parse(args: &[&str]) -> Result<Task, clap::Error> {
        Cli::try_parse_from(std::iter::once("xtask").chain(args.iter().copied())).map(|c| c.command)
    }

    #[test]
    fn reads_json_lines() {
        let line =
            r#"{"file":"a b.pickle","bytes":1234,"secs":0.5,"mb_per_s":2.468,"model_bytes":99}"#;
        let b: crate::bench::MemvizBench =
            crate::bench::json_line(&format!("memviz 0.1\n{line}\n")).expect("parses");
        assert_eq!((b.bytes, b.secs, b.model_bytes), (1234.0, 0.5, 99.0));
        assert!(crate::bench::json_line::<crate::bench::MemvizBench>("no json").is_err());
        assert!(crate::bench::json_line::<crate::bench::MemvizBench>(r#"{"secs":1}"#).is_err());
    }

    #[test]
    fn parses_options() {
        let sizes = |args: &[&str]| match parse(args) {
            Ok(Task::Bench { sizes_mb, sizes }) => Some(sizes.unwrap_or(sizes_mb)),
            Ok(Task::BenchPage { sizes_mb, .. }) | Ok(Task::BenchAnalysis { sizes_mb }) => {
                Some(sizes_mb)
            }
            _ => None,
        };
        assert_eq!(sizes(&["bench"]), Some(vec![10, 150, 500]));
        assert_eq!(sizes(&["bench", "--sizes", "1,2"]), Some(vec![1, 2]));
        assert_eq!(sizes(&["bench", "--sizes=3"]), Some(vec![3]));
        assert_eq!(sizes(&["bench", "4", "5"]), Some(vec![4, 5]));
        assert_eq!(sizes(&["bench", "--sizes", "1,x"]), None);
        assert_eq!(sizes(&["bench", "--sizes", "0"]), None);
        assert_eq!(sizes(&["bench", "--sizes", "1", "2"]), None);
        assert_eq!(sizes(&["bench-page"]), Some(vec![10, 150, 500]));
        assert_eq!(sizes(&["bench-page", "10"]), Some(vec![10]));
        assert_eq!(sizes(&["bench-page", "0"]), None);
        assert_eq!(sizes(&["bench-page", "2000"]), Some(vec![2000]));
        assert_eq!(sizes(&["bench-page", "10001"]), None);
        match parse(&["bench-page", "--from", "x.pickle", "150", "1000"]) {
            Ok(Task::BenchPage { sizes_mb, from }) => {
                assert_eq!(
                    (sizes_mb, from.as_deref()),
                    (vec![150, 1000], Some("x.pickle"))
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(sizes(&["bench-page", "--sizes", "10"]), None);
        assert_eq!(sizes(&["bench-analysis"]), Some(vec![150, 500]));
        let port = |args: &[&str]| match parse(args) {
            Ok(Task::Serve { port }) => Some(port),
            _ => None,
        };
        assert_eq!(port(&["serve", "--port", "9000"]), Some(9000));
        assert_eq!(port(&["serve", "--port=9001"]), Some(9001));
        assert_eq!(port(&["serve"]), Some(8080));
        assert_eq!(port(&["serve", "--bogus"]), None);
        assert_eq!(port(&["serve", "--port", "70000"]), None);
        match parse(&["bench-big", "--from", "x.pickle", "150"]) {
            Ok(Task::BenchBig(a)) => {
                assert_eq!(
                    (a.from.as_deref(), a.sizes_mb),
                    (Some("x.pickle"), vec![150])
                );
            }
            other => panic!("{other:?}"),
        }
        match parse(&["bench-big"]) {
            Ok(Task::BenchBig(a)) => assert_eq!(a.sizes_mb, vec![150, 500, 1000, 2000, 4000]),
            other => panic!("{other:?}"),
        }
        assert!(parse(&["bench-big", "20000"]).is_err());
        assert!(parse(&["test", "extra"]).is_err());
        assert!(parse(&["nope"]).is_err());
        assert!(matches!(parse(&["lint-js"]), Ok(Task::LintJs)));
    }

    #[test]
    fn the_help_is_complete() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let mut top = Cli::command();
        let help = top.render_help().to_string();
        for name in [
            "install",
            "serve",
            "test",
            "lint-js",
            "bench",
            "bench-page",
            "bench-big",
            "bench-analysis",
            "bench-bounds",
            "fuzz",
        ] {
            assert!(help.contains(name), "{name} missing from --help:\n{help}");
            let sub = top.find_subcommand_mut(name).expect("a subcommand");
            assert!(sub.get_about().is_some(), "{name} has no about line");
            for arg in sub.get_arguments() {
                assert!(
                    arg.get_help().is_some(),
                    "{name} {} has no help",
                    arg.get_id()
                );
            }
        }
    }

    #[test]
    fn bench_page_table_reads_the_json_lines() {
        let ok = r#"{"file":"snap_10mb.pickle","fileMB":8.9,"backend":"webgl2","rounds":3,"okRounds":3,"error":null,"firstFrameMs":1260.5,"nativeMs":22,"ratio":57.3,"stepMedianMs":37.5,"wasmMB":76.8}"#;
        let bad = r#"{"file":"snap_500mb.pickle","fileMB":447.7,"backend":"webgpu","rounds":1,"okRounds":0,"error":"the renderer process crashed","firstFrameMs":null}"#;
        let table = bench_page_table(&[ok.to_owned(), bad.to_owned()]);
        assert!(
            table.contains(
                "| snap_10mb.pickle | 8.9 | webgl2 | 1260.5 (3 rounds) | 22 | 57.3 | 37.5 / –"
            ),
            "{table}"
        );
        assert!(
            table.contains("| webgpu | FAILED: the renderer process crashed |"),
            "{table}"
        );
    }

    #[test]
    fn node_wasm_reuses_the_page_build() {
        env::set_current_dir(repo_root()).expect("repo root");
        let index = fs::read_to_string("index.html").expect("index.html");
        let wanted = format!("data-cargo-profile=\"{}\"", tasks::PAGE_PROFILE);
        assert!(
            index.contains(&wanted),
            "index.html's memviz-web link must build with {wanted} (tasks::PAGE_PROFILE), or the node wasm step builds memviz-web a second time"
        );
        let cargo = fs::read_to_string("Cargo.toml").expect("Cargo.toml");
        assert!(cargo.contains(&format!("[profile.{}]", tasks::PAGE_PROFILE)));
    }

    #[test]
    fn the_pins_are_exact() {
        env::set_current_dir(repo_root()).expect("repo root");
        let pins = pinned_npm_packages().expect("tests/web/package.json pins exact versions");
        for tool in [
            PLAYWRIGHT_PACKAGE,
            "typescript",
            "eslint",
            "@eslint/js",
            "globals",
            // wasm-opt for trunk (install.rs).
            "binaryen",
        ] {
            assert!(
                pins.iter().any(|(name, _)| name == tool),
                "{tool} is not pinned"
            );
        }
    }
}
