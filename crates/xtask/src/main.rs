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

mod bench_big;
mod bench_bounds;
mod fuzz;
mod rusage;

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

// ---------------------------------------------------------------------------------------------
// install

fn install() -> Result<()> {
    let started = Instant::now();
    ensure_wasm_target()?;
    ensure_cargo_tool(
        "wasm-bindgen",
        WASM_BINDGEN_VERSION,
        &["wasm-bindgen-cli", "--version", WASM_BINDGEN_VERSION],
    )?;
    ensure_cargo_tool(
        "wasm-opt",
        WASM_OPT_REPORTED,
        &["wasm-opt", "--version", WASM_OPT_CRATE_VERSION, "--locked"],
    )?;
    ensure_cargo_tool(
        "trunk",
        TRUNK_VERSION,
        &["trunk", "--version", TRUNK_VERSION, "--locked"],
    )?;
    ensure_debian_packages()?;
    ensure_playwright()?;
    eprintln!(
        "install: all tools present ({:.2} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn ensure_wasm_target() -> Result<()> {
    let sysroot = quiet_output("rustc", &["--print", "sysroot"]).unwrap_or_default();
    let lib = Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(WASM_TARGET);
    if !sysroot.trim().is_empty() && lib.is_dir() {
        return Ok(());
    }
    run(cmd("rustup", ["target", "add", WASM_TARGET]))
}

/// `cargo install` (with `install_args`) unless `program --version` already mentions `reported`.
fn ensure_cargo_tool(program: &str, reported: &str, install_args: &[&str]) -> Result<()> {
    if version_matches(program, reported) {
        return Ok(());
    }
    eprintln!("install: {program} {reported} missing; building it (several minutes on 2 cores)");
    let mut c = cmd("cargo", ["install"]);
    c.args(install_args);
    run(c)?;
    if version_matches(program, reported) {
        Ok(())
    } else {
        Err(format!("{program} was installed but `{program} --version` does not report {reported}; is another {program} earlier on PATH?"))
    }
}

/// Debian packages the tests need, each with how to tell it is already there.
fn debian_packages() -> Vec<(&'static str, bool)> {
    vec![
        ("chromium", Path::new(CHROMIUM_PATH).exists()),
        ("nodejs", quiet_output("node", &["--version"]).is_some()),
        ("npm", quiet_output("npm", &["--version"]).is_some()),
        ("python3", quiet_output("python3", &["--version"]).is_some()),
        // Mesa's GL through EGL (llvmpipe): the software adapter the offscreen render tests use.
        ("libegl1", dpkg_installed("libegl1")),
        ("libegl-mesa0", dpkg_installed("libegl-mesa0")),
        ("libgl1-mesa-dri", dpkg_installed("libgl1-mesa-dri")),
    ]
}

fn dpkg_installed(package: &str) -> bool {
    quiet_output("dpkg-query", &["-W", "-f=${Status}", package])
        .is_some_and(|s| s.contains("install ok installed"))
}

/// Installs the missing Debian packages (one `apt-get update`, one `apt-get install`).
fn ensure_debian_packages() -> Result<()> {
    let missing: Vec<&str> = debian_packages()
        .into_iter()
        .filter(|(_, present)| !present)
        .map(|(name, _)| name)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("install: Debian packages missing: {}", missing.join(" "));
    let is_root = quiet_output("id", &["-u"]).is_some_and(|s| s.trim() == "0");
    let apt = |args: &[&str]| {
        let mut c = if is_root {
            cmd("apt-get", args)
        } else {
            let mut c = cmd("sudo", ["-n", "apt-get"]);
            c.args(args);
            c
        };
        c.env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    run(apt(&["update"]))?;
    let mut args = vec!["install", "-y", "--no-install-recommends"];
    args.extend(&missing);
    run(apt(&args))?;
    let still: Vec<&str> = debian_packages()
        .into_iter()
        .filter(|(_, present)| !present)
        .map(|(name, _)| name)
        .collect();
    if still.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "apt-get ran but these are still missing: {}",
            still.join(" ")
        ))
    }
}

/// The exact `playwright-core` version pinned in tests/web/package.json.
fn pinned_playwright() -> Result<String> {
    let text = fs::read_to_string("tests/web/package.json")
        .map_err(|e| format!("cannot read tests/web/package.json: {e}"))?;
    json_string_field(&text, PLAYWRIGHT_PACKAGE)
        .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("tests/web/package.json must pin {PLAYWRIGHT_PACKAGE} to an exact version like \"1.65.1\""))
}

fn ensure_playwright() -> Result<()> {
    let pinned = pinned_playwright()?;
    let installed = fs::read_to_string(format!(
        "tests/web/node_modules/{PLAYWRIGHT_PACKAGE}/package.json"
    ))
    .ok()
    .and_then(|text| json_string_field(&text, "version"));
    if installed.as_deref() == Some(pinned.as_str()) {
        return Ok(());
    }
    eprintln!("install: {PLAYWRIGHT_PACKAGE} {pinned} missing; running npm install in tests/web");
    let mut c = cmd(
        "npm",
        ["install", "--no-package-lock", "--no-audit", "--no-fund"],
    );
    c.current_dir("tests/web");
    run(c)
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

// ---------------------------------------------------------------------------------------------
// bench

const MB: f64 = 1e6;

/// One file's measurements over several interleaved rounds (MB/s values, one per round).
struct BenchRow {
    file: String,
    file_mb: f64,
    native: Vec<f64>,
    wasm: Vec<f64>,
    model_per_file: f64,
    cpython: Vec<f64>,
}

/// Rounds per file: native, wasm and CPython run in turn each round, so machine noise (this is a
/// shared 2-core VM) hits all three alike; the table gives medians and bests.
const BENCH_ROUNDS: usize = 5;

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
}

fn best(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NAN, f64::max)
}

fn bench(sizes_mb: &[u64]) -> Result<()> {
    let mut steps = Steps::new("bench", 4);
    steps.step("install the pinned toolchain", install)?;
    steps.step("native CLI", || {
        run(cmd("cargo", ["build", "--release", "-p", "memviz-cli"]))
    })?;
    steps.step("node-targeted wasm", build_node_wasm)?;
    let mut files = Vec::new();
    steps.step("benchmark snapshots in target/bench/", || {
        files = bench_snapshots(sizes_mb)?;
        Ok(())
    })?;

    let mut rows = Vec::new();
    for file in &files {
        eprintln!("\n==> measuring {file}");
        rows.push(bench_one(file)?);
    }
    print!("{}", bench_table(&rows));
    Ok(())
}

/// `target/bench/snap_{N}mb.pickle` for each size, generated by `generate.py large` when missing
/// (written to a `.partial` file first, so an interrupted run leaves no truncated snapshot).
fn bench_snapshots(sizes_mb: &[u64]) -> Result<Vec<String>> {
    fs::create_dir_all("target/bench").map_err(|e| format!("cannot create target/bench: {e}"))?;
    let mut files = Vec::new();
    for &size in sizes_mb {
        let path = format!("target/bench/snap_{size}mb.pickle");
        if !Path::new(&path).exists() {
            let partial = format!("{path}.partial");
            let size_arg = size.to_string();
            run(cmd(
                "python3",
                [
                    "tests/fixtures/generate.py",
                    "large",
                    "--mb",
                    &size_arg,
                    &partial,
                ],
            ))?;
            fs::rename(&partial, &path).map_err(|e| format!("cannot rename {partial}: {e}"))?;
        }
        files.push(path);
    }
    Ok(files)
}

fn bench_one(file: &str) -> Result<BenchRow> {
    let mut row = BenchRow {
        file: file.to_owned(),
        file_mb: 0.0,
        native: Vec::new(),
        wasm: Vec::new(),
        model_per_file: 0.0,
        cpython: Vec::new(),
    };
    for round in 0..BENCH_ROUNDS {
        eprintln!("    round {}/{BENCH_ROUNDS}", round + 1);
        let field = memviz_bench(file)?;
        let (bytes, native_secs, model_bytes) =
            (field("bytes")?, field("secs")?, field("model_bytes")?);

        // A fresh node process each round: the cold case a user meets in a fresh tab.
        let wasm = run_capture(cmd("node", ["tests/web/bench_wasm.mjs", file]))?;
        let wasm_line = wasm
            .lines()
            .find(|l| l.trim_start().starts_with('{'))
            .unwrap_or_default();
        let wasm_secs = json_number_field(wasm_line, "secs")
            .ok_or_else(|| format!("bench_wasm.mjs printed no \"secs\": {wasm}"))?;

        let cpython_secs = cpython_load_secs(file)?;
        row.file_mb = bytes / MB;
        row.model_per_file = model_bytes / bytes;
        row.native.push(bytes / MB / native_secs);
        row.wasm.push(bytes / MB / wasm_secs);
        row.cpython.push(bytes / MB / cpython_secs);
    }
    Ok(row)
}

/// Best of 3 wall-clock seconds of CPython's C unpickler (`pickle.loads`) on the file's bytes.
fn cpython_load_secs(file: &str) -> Result<f64> {
    const SCRIPT: &str = "\
import gzip, pickle, sys, time
data = open(sys.argv[1], 'rb').read()
if data[:2] == b'\\x1f\\x8b':
    data = gzip.decompress(data)
assert pickle.Unpickler.__module__ == '_pickle', 'the C unpickler is not available'
best = float('inf')
for _ in range(3):
    t0 = time.perf_counter()
    obj = pickle.loads(data)
    best = min(best, time.perf_counter() - t0)
    del obj
print(best)
";
    let out = run_capture(cmd("python3", ["-c", SCRIPT, file]))?;
    out.trim()
        .parse()
        .map_err(|_| format!("CPython timing printed `{}`", out.trim()))
}

fn bench_table(rows: &[BenchRow]) -> String {
    let mut s = String::new();
    s.push_str("| file | file MB | native parse+model MB/s, median [best] | wasm (node, cold) parse+summary MB/s, median [best] | model bytes / file bytes | CPython pickle.loads MB/s, median | native / CPython (medians) |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        let name = Path::new(&r.file)
            .file_name()
            .map_or_else(|| r.file.clone(), |n| n.to_string_lossy().into_owned());
        let _ = writeln!(
            s,
            "| {name} | {:.1} | {:.0} [{:.0}] | {:.0} [{:.0}] | {:.2} | {:.1} | {:.1} |",
            r.file_mb,
            median(&r.native),
            best(&r.native),
            median(&r.wasm),
            best(&r.wasm),
            r.model_per_file,
            median(&r.cpython),
            median(&r.native) / median(&r.cpython)
        );
    }
    let _ = writeln!(
        s,
        "\nMB = 10^6 bytes; {BENCH_ROUNDS} interleaved rounds per file. Native: `memviz bench` (parse + model, \
best of its own 2-3 runs). Wasm: tests/web/bench_wasm.mjs in a fresh node process (1 MiB pushes + finish, \
which also builds the summary). CPython: best of 3 `pickle.loads` of the bytes already in memory."
    );
    s
}

// ---------------------------------------------------------------------------------------------
// bench-analysis

/// `state_bench` and `find_bench` (memviz-analysis examples, release) on each size; the first
/// size also diffs against a second snapshot one MB larger (another seed).
fn bench_analysis(sizes_mb: &[u64]) -> Result<()> {
    let mut steps = Steps::new("bench-analysis", 3);
    steps.step("examples (release)", || {
        run(cmd(
            "cargo",
            [
                "build",
                "--release",
                "-p",
                "memviz-analysis",
                "--example",
                "state_bench",
                "--example",
                "find_bench",
            ],
        ))
    })?;
    let mut files = Vec::new();
    let mut other = None;
    steps.step("benchmark snapshots in target/bench/", || {
        files = bench_snapshots(sizes_mb)?;
        if let Some(&first) = sizes_mb.first() {
            other = bench_snapshots(&[first + 1])?.pop();
        }
        Ok(())
    })?;
    steps.step("measure", || {
        for (i, file) in files.iter().enumerate() {
            eprintln!("\n==> {file}");
            run(cmd("target/release/examples/state_bench", [file.as_str()]))?;
            let mut args = vec![file.clone()];
            if i == 0 {
                args.extend(other.clone());
            }
            run(cmd("target/release/examples/find_bench", args))?;
        }
        Ok(())
    })?;
    Ok(())
}

// bench-page

/// Where `bench-page` builds the page: its own copy of dist/, so that a concurrent `trunk build`
/// (or `serve`) rewriting dist/ cannot pull hashed files from under a running benchmark.
const BENCH_PAGE_DIST: &str = "target/bench-page/dist";
/// Snapshots up to this size get `BENCH_PAGE_ROUNDS` fresh-browser rounds per backend; bigger
/// ones one round (a 500 MB round takes about 45 s: the whole run stays near 10 minutes).
const BENCH_PAGE_MANY_ROUNDS_MAX_MB: u64 = 200;
const BENCH_PAGE_ROUNDS: u32 = 3;
/// `memviz bench` runs per file for the native baseline (each is itself a best of 2-3).
const NATIVE_BASELINE_RUNS: usize = 3;

/// `trunk build` of the page into [`BENCH_PAGE_DIST`] (bench-page, bench-big).
fn build_bench_page() -> Result<()> {
    run(cmd(
        "trunk",
        [
            "--config",
            TRUNK_CONFIG,
            "build",
            "--release",
            "--offline",
            "--dist",
            BENCH_PAGE_DIST,
        ],
    ))
}

/// `node tests/web/bench_page.mjs` on each snapshot with both backends, against the native CLI.
fn bench_page(sizes_mb: &[u64]) -> Result<()> {
    let started = Instant::now();
    let mut steps = Steps::new("bench-page", 6);
    steps.step("install the pinned toolchain", install)?;
    steps.step("native CLI (the baseline)", || {
        run(cmd("cargo", ["build", "--release", "-p", "memviz-cli"]))
    })?;
    steps.step(
        &format!("web page (trunk build into {BENCH_PAGE_DIST}/)"),
        build_bench_page,
    )?;
    let mut files = Vec::new();
    steps.step("benchmark snapshots in target/bench/", || {
        files = bench_snapshots(sizes_mb)?;
        Ok(())
    })?;
    let mut native_ms = Vec::new();
    steps.step("native baseline (`memviz bench`, parse + model)", || {
        for file in &files {
            let ms = native_parse_ms(file)?;
            eprintln!("    {file}: {ms:.1} ms (median of {NATIVE_BASELINE_RUNS} runs)");
            native_ms.push(ms);
        }
        Ok(())
    })?;
    let mut lines = Vec::new();
    let mut failed = Vec::new();
    steps.step(
        "the page in headless Chromium, WebGL2 and WebGPU (tests/web/bench_page.mjs)",
        || {
            for ((file, &size), ms) in files.iter().zip(sizes_mb).zip(&native_ms) {
                let rounds = if size <= BENCH_PAGE_MANY_ROUNDS_MAX_MB {
                    BENCH_PAGE_ROUNDS
                } else {
                    1
                };
                let (ok, out) = run_capture_status(cmd(
                    "node",
                    [
                        "tests/web/bench_page.mjs",
                        file,
                        "--backend",
                        "both",
                        "--rounds",
                        &rounds.to_string(),
                        "--dist",
                        BENCH_PAGE_DIST,
                        "--native-ms",
                        &format!("{ms:.3}"),
                    ],
                ))?;
                let rows: Vec<String> = out
                    .lines()
                    .filter(|l| l.trim_start().starts_with('{'))
                    .map(str::to_owned)
                    .collect();
                for row in &rows {
                    println!("{row}");
                }
                if rows.is_empty() {
                    return Err(format!(
                        "bench_page.mjs printed no result for {file}:\n{out}"
                    ));
                }
                if !ok {
                    failed.push(file.clone());
                }
                lines.extend(rows);
            }
            Ok(())
        },
    )?;
    print!("{}", bench_page_table(&lines));
    eprintln!(
        "\nxtask bench-page: done in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "some rounds failed on {} (the table says why)",
            failed.join(", ")
        ))
    }
}

/// Like `run_capture`, but a failing exit status still returns the output: `(success, stdout)`.
fn run_capture_status(mut cmd: Command) -> Result<(bool, String)> {
    let shown = display(&cmd);
    eprintln!("$ {shown}");
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not start `{shown}`: {e}"))?;
    if !out.status.success() {
        eprintln!("`{shown}` failed ({})", out.status);
    }
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

/// Runs `memviz bench FILE` once; returns a reader of the numbers in its JSON line.
fn memviz_bench(file: &str) -> Result<impl Fn(&str) -> Result<f64>> {
    let out = run_capture(cmd("target/release/memviz", ["bench", file]))?;
    Ok(move |key: &str| {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with('{'))
            .unwrap_or_default();
        json_number_field(line, key)
            .ok_or_else(|| format!("`memviz bench` printed no \"{key}\": {out}"))
    })
}

/// Median over `NATIVE_BASELINE_RUNS` runs of `memviz bench FILE` (parse + model), in ms.
fn native_parse_ms(file: &str) -> Result<f64> {
    let mut ms = Vec::new();
    for _ in 0..NATIVE_BASELINE_RUNS {
        ms.push(memviz_bench(file)?("secs")? * 1e3);
    }
    Ok(median(&ms))
}

/// The Markdown tables of `bench-page` from bench_page.mjs's JSON lines (one per file and
/// backend; see that script for what each field measures).
fn bench_page_table(lines: &[String]) -> String {
    let num = |line: &str, key: &str| {
        json_number_field(line, key).map_or_else(|| "–".to_owned(), |v| format!("{v}"))
    };
    let text = |line: &str, key: &str| json_string_field(line, key).unwrap_or_default();
    let mut s = String::from(
        "\n| file | MB | backend | drop → first frame ms (median of rounds) | native parse ms | ratio | zoom/pan step ms median / max | settled / presented ms median | worker frame ms median / max | wasm memory MB | JS heap MB page / worker | renderer RSS MB (peak VmHWM) | GPU process RSS MB (peak VmHWM) | all processes RSS MB (peak sampled) [PSS] |\n\
         |---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for l in lines {
        let n = |key: &str| num(l, key);
        let error = text(l, "error");
        let first_frame = match (n("okRounds").as_str(), error.is_empty()) {
            (_, true) => format!("{} ({} rounds)", n("firstFrameMs"), n("rounds")),
            ("0", false) => format!("FAILED: {error}"),
            (ok, false) => format!(
                "{} ({ok} of {} rounds; FAILED: {error})",
                n("firstFrameMs"),
                n("rounds")
            ),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {first_frame} | {} | {} | {} / {} | {} / {} | {} / {} | {} | {} / {} | {} ({}) | {} ({}) | {} ({}) [{}] |",
            text(l, "file"),
            n("fileMB"),
            text(l, "backend"),
            n("nativeMs"),
            n("ratio"),
            n("stepMedianMs"),
            n("stepMaxMs"),
            n("settledMedianMs"),
            n("presentedMedianMs"),
            n("workerFrameMedianMs"),
            n("workerFrameMaxMs"),
            n("wasmMB"),
            n("jsHeapMB"),
            n("workerJsHeapMB"),
            n("rendererRssMB"),
            n("rendererHwmMB"),
            n("gpuRssMB"),
            n("gpuHwmMB"),
            n("totalRssMB"),
            n("totalPeakSampledMB"),
            n("totalPssMB"),
        );
    }
    s.push_str(
        "\nWhere the time of an open goes (ms, the median round; page clock except node wall):\n\n\
         | file | backend | read + parse (parseMs) | + finish, layout, first draw (totalMs) | first frame at final size (firstFrameMs) | node wall: setInputFiles → ready | then settled (windowed rebuild, raster) | allocations | instances drawn | scene |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for l in lines {
        let n = |key: &str| num(l, key);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            text(l, "file"),
            text(l, "backend"),
            n("parseMs"),
            n("totalMs"),
            n("medianRoundFirstFrameMs"),
            n("wallMs"),
            n("openSettledMs"),
            n("elements"),
            n("instances"),
            text(l, "scene"),
        );
    }
    s.push_str(
        "\nMB = 10^6 bytes. Each round is a fresh headless Chromium (/usr/bin/chromium, 1200×800) opening \
the file with setInputFiles on #file-input. drop → first frame: memviz.lastOpen.firstFrameMs; ratio = \
that / native `memviz bench` (parse + model, median of 3). Steps: 10 zoom_at / pan_by / key calls per \
round, timed in the page around the awaited memviz.view() (input → worker → frame drawn); settled: until \
the step's last frame (windowed scenes rebuild 120 ms after the camera stops); presented: until the frame \
slot after it (includes SwiftShader rasterising in the GPU process, which worker frame ms, CPU only, does \
not). Memory after the steps (max over rounds); RSS and VmHWM from /proc; renderer = the largest \
--type=renderer process (it hosts the page and its worker); PSS counts shared pages once.\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

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
