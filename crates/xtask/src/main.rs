//! Project tasks for memviz: install the pinned web toolchain, serve the viewer, run every test, benchmark, fuzz.
//!
//! Run as `cargo xtask <command>` (an alias in `.cargo/config.toml`). Std only, plus libc on Linux for
//! the one wait4 call of `rusage.rs` (bench-bounds' peak RSS).
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
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

/// Pinned versions; see shared/docs/TOOLCHAIN.md for why each one.
const WASM_TARGET: &str = "wasm32-unknown-unknown";
const WASM_BINDGEN_VERSION: &str = "0.2.130";
const WASM_OPT_CRATE_VERSION: &str = "0.116.1";
/// What `wasm-opt --version` prints for the crate above (binaryen 116).
const WASM_OPT_REPORTED: &str = "version 116";
const TRUNK_VERSION: &str = "0.21.14";
const CHROMIUM_PATH: &str = "/usr/bin/chromium";
/// The npm package whose exact version is pinned in tests/web/package.json.
const PLAYWRIGHT_PACKAGE: &str = "playwright-core";

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  install                 install the pinned toolchain (idempotent; fast when done)
  serve [--port 8080]     build and serve the viewer (with the demo snapshot) on 127.0.0.1
  test                    cargo tests, trunk build, wasm (node) tests and page tests in Chromium
  bench [--sizes 10,150,500]
                          parse throughput: native, wasm (node) and CPython's pickle, as a
                          markdown table on stdout
  bench-page [SIZES_MB...]
                          the page in headless Chromium (default sizes 10 150 500): drop -> first
                          frame, zoom/pan step times, wasm/JS memory and process RSS, for WebGL2
                          and WebGPU (SwiftShader), against the native CLI; a markdown table
  bench-big [--from SNAPSHOT] [SIZES_MB...]
                          big tiled snapshots (default 150 500 1000 2000 4000 MB; --from: tile
                          that snapshot's longest trace instead of the emulator's): memviz
                          summary time and RSS, heap per trace entry of the model and each view
                          (mem_budget), and the page with every view (WebGL2); the tables of
                          docs/limits.md
  bench-analysis [SIZES_MB...]
                          the analyses after load (default sizes 150 500): state history
                          selection vs a full undo (state_bench), flamegraph, search, lines,
                          leaks, diff of two 150 MB snapshots (find_bench), as JSON lines
  bench-bounds [--out DIR] [--scale-steps] [--steps A,B]
                          issue 14's budgets: builds memviz, writes every hostile class of
                          tests/fixtures/bounds.py (into target/bounds/), runs summary, state,
                          oom, folded, diff, leaks, lines and html (html only with a built dist/)
                          on each with a 10 s limit; a markdown table of time, peak RSS (wait4),
                          exit and verdict (ok / over-time / over-RSS / abort 134 / panic 101 /
                          signal); --scale-steps: the count-driven classes at scale 1 and 10
                          (--steps A,B) and the time ratio per command (target <= x15). Exits 0
                          unless the harness itself fails
  fuzz [--secs 60 | --runs N] [--target unpickle|snapshot|analysis] [--max-len N] [--keep-going]
                          run the cargo-fuzz targets in tests/fuzz (needs nightly), each for N
                          seconds or N runs, on corpora seeded from the generated fixtures, with
                          libFuzzer's RSS / malloc / timeout limits; prints execs and crashes per
                          target (docs/fuzzing.md)
";

mod bench;
mod bench_big;
mod bench_bounds;
mod fuzz;
mod install;
mod rusage;

use bench::{
    bench, bench_analysis, bench_page, build_bench_page, run_capture_status, BENCH_PAGE_DIST, MB,
};
use install::install;

type Result<T, E = String> = std::result::Result<T, E>;

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    if let Err(msg) = prepare_env() {
        eprintln!("xtask: {msg}");
        return ExitCode::FAILURE;
    }
    let result = match command.as_str() {
        "install" => no_options(rest).and_then(|()| install()),
        "serve" => parse_u64_option(rest, "--port", 8080).and_then(serve),
        "test" => no_options(rest).and_then(|()| test()),
        "bench" => parse_sizes(rest).and_then(|sizes| bench(&sizes)),
        "bench-page" => parse_positional_sizes(rest).and_then(|sizes| bench_page(&sizes)),
        "bench-big" => bench_big::parse_args(rest).and_then(|a| bench_big::bench_big(&a)),
        "bench-bounds" => {
            bench_bounds::parse_args(rest).and_then(|a| bench_bounds::bench_bounds(&a))
        }
        "bench-analysis" => {
            parse_positional_sizes_or(rest, &[150, 500]).and_then(|sizes| bench_analysis(&sizes))
        }
        "fuzz" => fuzz::parse_fuzz_args(rest).and_then(|a| fuzz::fuzz(&a)),
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command `{other}`\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("\nxtask {command}: FAILED: {msg}");
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

fn no_options(rest: &[String]) -> Result<()> {
    match rest.first() {
        None => Ok(()),
        Some(arg) => Err(format!("unexpected argument `{arg}`\n{USAGE}")),
    }
}

/// Parses `[NAME VALUE]` or `[NAME=VALUE]` (the only option allowed).
fn option_value<'a>(rest: &'a [String], name: &str) -> Result<Option<&'a str>> {
    match rest {
        [] => Ok(None),
        [flag, value] if flag == name => Ok(Some(value)),
        [one] => match one.strip_prefix(name).and_then(|v| v.strip_prefix('=')) {
            Some(value) => Ok(Some(value)),
            None => Err(format!("expected `{name} VALUE`, got `{one}`\n{USAGE}")),
        },
        _ => Err(format!(
            "expected at most `{name} VALUE`, got `{}`\n{USAGE}",
            rest.join(" ")
        )),
    }
}

fn parse_u64_option(rest: &[String], name: &str, default: u64) -> Result<u64> {
    match option_value(rest, name)? {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| format!("{name} wants a whole number, got `{v}`")),
    }
}

fn parse_sizes(rest: &[String]) -> Result<Vec<u64>> {
    let list = option_value(rest, "--sizes")?.unwrap_or("10,150,500");
    let sizes: Vec<u64> = list
        .split(',')
        .map(|s| s.trim().parse::<u64>().ok().filter(|&n| n > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            format!("--sizes wants positive whole MB numbers like 10,150,500, got `{list}`")
        })?;
    Ok(sizes)
}

/// Positional sizes in MB (`bench-page 10 150`); none: 10 150 500.
fn parse_positional_sizes(rest: &[String]) -> Result<Vec<u64>> {
    parse_positional_sizes_or(rest, &[10, 150, 500])
}

/// Positional sizes in MB, `default` when none.
fn parse_positional_sizes_or(rest: &[String], default: &[u64]) -> Result<Vec<u64>> {
    if rest.is_empty() {
        return Ok(default.to_vec());
    }
    rest.iter()
        .map(|s| {
            s.parse::<u64>()
                .ok()
                .filter(|n| (1..=500).contains(n))
                .ok_or_else(|| {
                    format!("sizes are whole MB from 1 to 500 (generate.py's limit), like `10 150 500`; got `{s}`\n{USAGE}")
                })
        })
        .collect()
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
    eprintln!("$ {shown}");
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
    eprintln!("$ {shown}");
    let out = cmd
        .stderr(Stdio::inherit())
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

/// Steps of a multi-step command, numbered in the log.
struct Steps {
    command: &'static str,
    total: usize,
    done: usize,
}

impl Steps {
    fn new(command: &'static str, total: usize) -> Self {
        Self {
            command,
            total,
            done: 0,
        }
    }

    fn step(&mut self, what: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
        self.done += 1;
        let (n, total, command) = (self.done, self.total, self.command);
        eprintln!("\n==> [{n}/{total}] {what}");
        let started = Instant::now();
        f().map_err(|e| format!("step {n}/{total} ({what}) failed: {e}\nFix it, then rerun `cargo xtask {command}`."))?;
        eprintln!(
            "    [{n}/{total}] ok in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }
}

/// The string value of the first `"key": "value"` in a JSON text (enough for package.json files
/// and the one-line JSON our own tools print; no escapes in values we read).
fn json_string_field(text: &str, key: &str) -> Option<String> {
    let after_key = text.split_once(&format!("\"{key}\""))?.1;
    let after_colon = after_key.trim_start().strip_prefix(':')?.trim_start();
    let value = after_colon.strip_prefix('"')?;
    Some(value[..value.find('"')?].to_owned())
}

/// The numeric value of `"key": N` in a one-line JSON object.
fn json_number_field(text: &str, key: &str) -> Option<f64> {
    let after_key = text.split_once(&format!("\"{key}\""))?.1;
    let after_colon = after_key.trim_start().strip_prefix(':')?.trim_start();
    let end = after_colon
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .unwrap_or(after_colon.len());
    after_colon[..end].parse().ok()
}

// ---------------------------------------------------------------------------------------------
// serve

fn serve(port: u64) -> Result<()> {
    install()?;
    let port = port.to_string();
    eprintln!("serve: http://127.0.0.1:{port}/ (Ctrl-C to stop)");
    run(cmd(
        "trunk",
        [
            "--config",
            TRUNK_CONFIG,
            "serve",
            "--release",
            "--offline",
            "--address",
            "127.0.0.1",
            "--port",
            &port,
        ],
    ))
}

// ---------------------------------------------------------------------------------------------
// test

const NODE_WASM_DIR: &str = "target/wasm-node";
/// The repository's trunk config. trunk only finds `Trunk.toml` by itself, so name it explicitly.
const TRUNK_CONFIG: &str = "trunk.toml";

fn test() -> Result<()> {
    let mut steps = Steps::new("test", 8);
    steps.step("install the pinned toolchain", install)?;
    steps.step("clippy (warnings are errors)", || {
        run(cmd(
            "cargo",
            [
                "clippy",
                "--workspace",
                "--all-targets",
                "--release",
                "--",
                "-D",
                "warnings",
            ],
        ))?;
        // The browser-only code (cfg wasm32: the WebViewer, the canvas context) too.
        run(cmd(
            "cargo",
            [
                "clippy",
                "-p",
                "memviz-web",
                "-p",
                "memviz-render",
                "--target",
                "wasm32-unknown-unknown",
                "--release",
                "--",
                "-D",
                "warnings",
            ],
        ))
    })?;
    steps.step("Rust tests", || {
        // The render tests skip without a GPU adapter; here one is required (llvmpipe).
        let mut c = cmd("cargo", ["test", "--workspace", "--release"]);
        c.env("MEMVIZ_REQUIRE_GPU", "1");
        run(c)
    })?;
    steps.step("native CLI (the reference for the wasm tests)", || {
        run(cmd("cargo", ["build", "--release", "-p", "memviz-cli"]))
    })?;
    steps.step("web bundle (trunk build into dist/)", || {
        run(cmd(
            "trunk",
            ["--config", TRUNK_CONFIG, "build", "--release", "--offline"],
        ))
    })?;
    steps.step("node-targeted wasm", build_node_wasm)?;
    steps.step(
        "wasm in node vs native CLI (tests/web/wasm_node.test.mjs)",
        || node_tests(&["wasm_node.test.mjs"]),
    )?;
    steps.step(
        "page in headless Chromium (tests/web/page.test.mjs, report.test.mjs, escaping.test.mjs)",
        || node_tests(&["page.test.mjs", "report.test.mjs", "escaping.test.mjs"]),
    )?;
    eprintln!("\nxtask test: all steps passed");
    Ok(())
}

fn build_node_wasm() -> Result<()> {
    run(cmd(
        "cargo",
        [
            "build",
            "-p",
            "memviz-web",
            "--release",
            "--target",
            WASM_TARGET,
        ],
    ))?;
    let wasm = format!("target/{WASM_TARGET}/release/memviz_web.wasm");
    run(cmd(
        "wasm-bindgen",
        ["--target", "nodejs", "--out-dir", NODE_WASM_DIR, &wasm],
    ))
}

/// `node --test` on the given files of tests/web (every `*.test.mjs` there must be listed by
/// some step; checked here so a new test file is not silently skipped).
fn node_tests(files: &[&str]) -> Result<()> {
    let mut known: Vec<String> = fs::read_dir("tests/web")
        .map_err(|e| format!("cannot list tests/web: {e}"))?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".test.mjs"))
        .collect();
    known.sort();
    for name in files {
        if !known.iter().any(|k| k == name) {
            return Err(format!("tests/web/{name} is missing"));
        }
    }
    let expected = [
        "page.test.mjs",
        "report.test.mjs",
        "escaping.test.mjs",
        "wasm_node.test.mjs",
    ];
    if let Some(extra) = known.iter().find(|k| !expected.contains(&k.as_str())) {
        return Err(format!("tests/web/{extra} is not run by any step of `cargo xtask test`: add it in crates/xtask"));
    }
    let mut c = cmd("node", ["--test", "--test-reporter=spec"]);
    c.args(files.iter().map(|f| format!("tests/web/{f}")));
    run(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::bench_page_table;
    use crate::install::pinned_playwright;

    #[test]
    fn reads_json_fields() {
        let line =
            r#"{"file":"a b.pickle","bytes":1234,"secs":0.5,"mb_per_s":2.468,"model_bytes":99}"#;
        assert_eq!(
            json_string_field(line, "file").as_deref(),
            Some("a b.pickle")
        );
        assert_eq!(json_number_field(line, "bytes"), Some(1234.0));
        assert_eq!(json_number_field(line, "secs"), Some(0.5));
        assert_eq!(json_number_field(line, "model_bytes"), Some(99.0));
        assert_eq!(json_number_field(line, "nope"), None);
        let pkg = "{\n  \"devDependencies\": {\n    \"playwright-core\": \"1.65.1\"\n  }\n}";
        assert_eq!(
            json_string_field(pkg, "playwright-core").as_deref(),
            Some("1.65.1")
        );
    }

    #[test]
    fn parses_options() {
        let v = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert_eq!(parse_sizes(&v(&[])).ok(), Some(vec![10, 150, 500]));
        assert_eq!(parse_sizes(&v(&["--sizes", "1,2"])).ok(), Some(vec![1, 2]));
        assert_eq!(parse_sizes(&v(&["--sizes=3"])).ok(), Some(vec![3]));
        assert!(parse_sizes(&v(&["--sizes", "1,x"])).is_err());
        assert!(parse_sizes(&v(&["--sizes", "0"])).is_err());
        assert_eq!(
            parse_u64_option(&v(&["--port", "9000"]), "--port", 8080).ok(),
            Some(9000)
        );
        assert_eq!(parse_u64_option(&v(&[]), "--port", 8080).ok(), Some(8080));
        assert!(parse_u64_option(&v(&["--bogus"]), "--port", 8080).is_err());
        assert_eq!(
            parse_positional_sizes(&v(&[])).ok(),
            Some(vec![10, 150, 500])
        );
        assert_eq!(parse_positional_sizes(&v(&["10"])).ok(), Some(vec![10]));
        assert!(parse_positional_sizes(&v(&["0"])).is_err());
        assert!(parse_positional_sizes(&v(&["501"])).is_err());
        assert!(parse_positional_sizes(&v(&["--sizes", "10"])).is_err());
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
    fn the_pin_is_exact() {
        env::set_current_dir(repo_root()).expect("repo root");
        let pinned = pinned_playwright().expect("tests/web/package.json pins playwright-core");
        assert!(pinned.split('.').count() == 3, "{pinned}");
    }
}
