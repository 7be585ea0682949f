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
        "fuzz" => parse_fuzz_args(rest).and_then(|a| fuzz(&a)),
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

// ---------------------------------------------------------------------------------------------
// fuzz

/// The cargo-fuzz crate (outside the workspace) and its targets, in the order they run.
const FUZZ_DIR: &str = "tests/fuzz";
const FUZZ_TARGETS: [&str; 3] = ["unpickle", "snapshot", "analysis"];
/// libFuzzer's RSS limit: the process (libFuzzer, ASan and the corpus included) above this is an
/// out-of-memory failure.
const FUZZ_RSS_LIMIT_MB: u64 = 2048;
/// A single allocation above this is an out-of-memory failure (libFuzzer's malloc hook, which
/// needs the sanitizer runtime: cargo fuzz's default ASan build). Inputs are at most a few
/// hundred KB; no correct run allocates anything near this (the largest bounds: a string of at
/// most the input's length, the 1 M-slot memo gap of memviz-pickle (8 MiB), the analysis
/// target's exact layout capped at 2^20 points (12 MiB)).
const FUZZ_MALLOC_LIMIT_MB: u64 = 256;
/// One input running longer than this is a failure (a hang or a super-linear blow-up: a
/// quadratic path on a few KB runs for seconds, not a minute; issue 14).
const FUZZ_TIMEOUT_SECS: u64 = 10;
/// libFuzzer's dictionary: opcode runs of memo-heavy shapes and the snapshot's keys.
const FUZZ_DICT: &str = "tests/fuzz/pickle.dict";
/// The first byte of every seed: the targets read one control byte (chunk size, picks) before
/// the file. 63: chunks of 64 bytes for `unpickle` and `snapshot`.
const FUZZ_SEED_PREFIX: u8 = 63;
/// Seeds larger than this only slow libFuzzer down.
const FUZZ_MAX_SEED_BYTES: u64 = 256 * 1024;
/// Seeds at most this size also get a gzip'd copy (the snapshot loader sniffs gzip).
const FUZZ_MAX_GZIP_SEED_BYTES: u64 = 64 * 1024;

/// `cargo xtask fuzz` options.
#[derive(Debug, Default, PartialEq, Eq)]
struct FuzzArgs {
    /// Seconds per target (`-max_total_time`); 60 when neither this nor `runs` is given.
    secs: Option<u64>,
    /// Runs per target (`-runs`).
    runs: Option<u64>,
    /// One target instead of all.
    target: Option<String>,
    /// libFuzzer's `-max_len` (unset: libFuzzer's default, the largest seed).
    max_len: Option<u64>,
    /// Fork mode (`-fork=1`, one worker): keep fuzzing after a crash, OOM or timeout, and count
    /// them all.
    keep_going: bool,
}

fn parse_fuzz_args(rest: &[String]) -> Result<FuzzArgs> {
    let mut a = FuzzArgs::default();
    let mut i = 0;
    while let Some(arg) = rest.get(i) {
        i += 1;
        if arg == "--keep-going" {
            a.keep_going = true;
            continue;
        }
        let (name, value) = match arg.split_once('=') {
            Some((n, v)) => (n, v.to_owned()),
            None => {
                let v = rest
                    .get(i)
                    .ok_or_else(|| format!("`{arg}` needs a value\n{USAGE}"))?;
                i += 1;
                (arg.as_str(), v.clone())
            }
        };
        let number = || {
            value
                .parse::<u64>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{name} wants a positive whole number, got `{value}`"))
        };
        match name {
            "--secs" => a.secs = Some(number()?),
            "--runs" => a.runs = Some(number()?),
            "--max-len" => a.max_len = Some(number()?),
            "--target" => {
                if !FUZZ_TARGETS.contains(&value.as_str()) {
                    return Err(format!(
                        "--target is one of {}, got `{value}`",
                        FUZZ_TARGETS.join(", ")
                    ));
                }
                a.target = Some(value);
            }
            _ => return Err(format!("unexpected argument `{arg}`\n{USAGE}")),
        }
    }
    if a.secs.is_none() && a.runs.is_none() {
        a.secs = Some(60);
    }
    if a.keep_going && a.runs.is_some() {
        return Err(
            "--keep-going (libFuzzer's fork mode) counts time, not runs: use --secs".into(),
        );
    }
    Ok(a)
}

/// What one target's run did.
#[derive(Debug, Default, PartialEq, Eq)]
struct FuzzStats {
    execs: u64,
    /// Crash, OOM and timeout artifacts it wrote.
    failures: Vec<String>,
}

/// Executions from libFuzzer's output: `stat::number_of_executed_units: N`
/// (`-print_final_stats=1`), else the last `#N` status line (`#N\tDONE …`, `#N\tpulse …`, fork
/// mode's `#N: cov: …`), else `Done N runs`.
fn fuzz_execs(output: &str) -> u64 {
    let mut last_status = None;
    let mut done = None;
    for line in output.lines() {
        if let Some(n) = line.strip_prefix("stat::number_of_executed_units:") {
            if let Ok(n) = n.trim().parse() {
                return n;
            }
        }
        if let Some(rest) = line.strip_prefix('#') {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse::<u64>() {
                last_status = Some(n);
            }
        }
        if let Some(rest) = line.strip_prefix("Done ") {
            if let Some(n) = rest.split_whitespace().next().and_then(|n| n.parse().ok()) {
                done = Some(n);
            }
        }
    }
    last_status.or(done).unwrap_or(0)
}

/// Failure artifacts (crash-, oom-, timeout-, leak-) in `dir`.
fn fuzz_artifacts(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| {
                    ["crash-", "oom-", "timeout-", "leak-"]
                        .iter()
                        .any(|p| n.starts_with(p))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Generated fixtures (`generate.py small`) and gzip'd copies of the small ones, as seeds: each
/// file with the targets' control byte in front. Returns (name, bytes).
fn fuzz_seeds() -> Result<Vec<(String, Vec<u8>)>> {
    let dir = Path::new("target/fuzz-seeds");
    let dir_arg = dir.to_string_lossy().into_owned();
    run(cmd(
        "python3",
        ["tests/fixtures/generate.py", "small", &dir_arg],
    ))?;
    let gz = format!(
        "import gzip, os, sys\n\
         d = sys.argv[1]\n\
         for n in sorted(os.listdir(d)):\n\
         \x20   p = os.path.join(d, n)\n\
         \x20   if n.endswith('.pickle') and os.path.getsize(p) <= {FUZZ_MAX_GZIP_SEED_BYTES}:\n\
         \x20       open(p + '.gz', 'wb').write(gzip.compress(open(p, 'rb').read(), mtime=0))\n"
    );
    run(cmd("python3", ["-c", &gz, &dir_arg]))?;
    // The memo-heavy shapes of issue 14 (seed-memo-*.bin, the control byte already in front).
    run(cmd("python3", ["tests/fuzz/seeds.py", &dir_arg]))?;
    let mut seeds = Vec::new();
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot list {dir_arg}: {e}"))?;
    for entry in entries.filter_map(|e| e.ok()) {
        let small = entry
            .metadata()
            .is_ok_and(|m| m.is_file() && m.len() <= FUZZ_MAX_SEED_BYTES);
        let name = entry.file_name().to_string_lossy().into_owned();
        if small && (name.ends_with(".pickle") || name.ends_with(".gz")) {
            let body = fs::read(entry.path())
                .map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
            let mut bytes = vec![FUZZ_SEED_PREFIX];
            bytes.extend_from_slice(&body);
            seeds.push((format!("seed-{name}"), bytes));
        } else if small && name.starts_with("seed-memo-") && name.ends_with(".bin") {
            let bytes = fs::read(entry.path())
                .map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
            seeds.push((name, bytes));
        }
    }
    seeds.sort();
    Ok(seeds)
}

/// Runs one target; its libFuzzer output goes to stderr (without the per-input NEW / REDUCE
/// lines) and is parsed for the execution count.
fn fuzz_target(target: &str, corpus: &Path, a: &FuzzArgs) -> Result<FuzzStats> {
    use std::io::{BufRead, BufReader};
    let artifacts = Path::new(FUZZ_DIR).join("artifacts").join(target);
    let before = fuzz_artifacts(&artifacts);
    let mut args: Vec<String> = vec![
        "+nightly".into(),
        "fuzz".into(),
        "run".into(),
        "--fuzz-dir".into(),
        FUZZ_DIR.into(),
        target.into(),
        corpus.to_string_lossy().into_owned(),
        "--".into(),
        format!("-rss_limit_mb={FUZZ_RSS_LIMIT_MB}"),
        format!("-malloc_limit_mb={FUZZ_MALLOC_LIMIT_MB}"),
        format!("-timeout={FUZZ_TIMEOUT_SECS}"),
        format!("-dict={FUZZ_DICT}"),
        "-print_final_stats=1".into(),
    ];
    if let Some(s) = a.secs {
        args.push(format!("-max_total_time={s}"));
    }
    if let Some(r) = a.runs {
        args.push(format!("-runs={r}"));
    }
    if let Some(m) = a.max_len {
        args.push(format!("-max_len={m}"));
    }
    if a.keep_going {
        // One worker process at a time; it restarts after each failure.
        for f in [
            "-fork=1",
            "-ignore_crashes=1",
            "-ignore_ooms=1",
            "-ignore_timeouts=1",
        ] {
            args.push(f.into());
        }
    }
    let mut c = cmd("cargo", &args);
    let shown = display(&c);
    eprintln!("$ {shown}");
    let mut child = c
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start `{shown}`: {e}"))?;
    let mut output = String::new();
    if let Some(err) = child.stderr.take() {
        for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
            let noisy = line.contains("\tNEW ")
                || line.contains("\tREDUCE ")
                || line.contains("\tNEW_FUNC")
                || line.contains("# Uses:");
            if !noisy {
                eprintln!("{line}");
            }
            output.push_str(&line);
            output.push('\n');
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("`{shown}` did not finish: {e}"))?;
    let failures: Vec<String> = fuzz_artifacts(&artifacts)
        .into_iter()
        .filter(|n| !before.contains(n))
        .map(|n| artifacts.join(n).to_string_lossy().into_owned())
        .collect();
    if !status.success() && failures.is_empty() {
        // Not a finding (those write an artifact): the build or the tool failed.
        return Err(format!("`{shown}` failed ({status})"));
    }
    Ok(FuzzStats {
        execs: fuzz_execs(&output),
        failures,
    })
}

/// `cargo xtask fuzz`: every cargo-fuzz target of tests/fuzz (or one) for `--secs` seconds or
/// `--runs` runs each, on a corpus seeded from the generated fixtures, with libFuzzer's memory
/// and time limits; prints executions and failures per target. docs/fuzzing.md.
fn fuzz(a: &FuzzArgs) -> Result<()> {
    if !Path::new(FUZZ_DIR).join("Cargo.toml").exists() {
        return Err(format!(
            "{FUZZ_DIR}/Cargo.toml is missing: the cargo-fuzz crate has not landed yet"
        ));
    }
    let toolchains = quiet_output("rustup", &["toolchain", "list"]).unwrap_or_default();
    if !toolchains.lines().any(|l| l.starts_with("nightly")) {
        return Err("cargo fuzz needs a nightly toolchain (`rustup toolchain install nightly`), and none is installed".to_owned());
    }
    if quiet_output("cargo", &["fuzz", "--version"]).is_none_or(|out| !out.contains("cargo-fuzz")) {
        run(cmd("cargo", ["install", "cargo-fuzz", "--locked"]))?;
    }
    let targets: Vec<&str> = match &a.target {
        Some(t) => vec![t.as_str()],
        None => FUZZ_TARGETS.to_vec(),
    };
    // Build every target first, so a build error stops the run before any fuzzing.
    let mut build = vec!["+nightly", "fuzz", "build", "--fuzz-dir", FUZZ_DIR];
    if let Some(t) = &a.target {
        build.push(t);
    }
    run(cmd("cargo", &build))?;

    let seeds = fuzz_seeds()?;
    let mut rows = Vec::new();
    for target in &targets {
        let corpus = Path::new(FUZZ_DIR).join("corpus").join(target);
        fs::create_dir_all(&corpus)
            .map_err(|e| format!("cannot create {}: {e}", corpus.display()))?;
        for (name, bytes) in &seeds {
            let to = corpus.join(name);
            if fs::read(&to).ok().as_ref() != Some(bytes) {
                fs::write(&to, bytes)
                    .map_err(|e| format!("cannot write the seed {}: {e}", to.display()))?;
            }
        }
        eprintln!("\n==> fuzz target `{target}` ({} seeds)", seeds.len());
        let started = Instant::now();
        let stats = fuzz_target(target, &corpus, a)?;
        rows.push((*target, stats, started.elapsed().as_secs_f64()));
    }

    println!("\n| target | execs | seconds | exec/s | crashes |");
    println!("|---|---:|---:|---:|---:|");
    let (mut total_execs, mut total_secs, mut failures) = (0u64, 0f64, Vec::new());
    for (target, stats, secs) in &rows {
        println!(
            "| {target} | {} | {secs:.0} | {:.0} | {} |",
            stats.execs,
            stats.execs as f64 / secs.max(1e-9),
            stats.failures.len()
        );
        total_execs += stats.execs;
        total_secs += secs;
        failures.extend(stats.failures.iter().cloned());
    }
    println!(
        "| total | {total_execs} | {total_secs:.0} | {:.0} | {} |",
        total_execs as f64 / total_secs.max(1e-9),
        failures.len()
    );
    if failures.is_empty() {
        return Ok(());
    }
    for f in &failures {
        println!("failure: {f}");
    }
    Err(format!(
        "{} failure(s); reproduce one with `cargo +nightly fuzz run --fuzz-dir {FUZZ_DIR} TARGET ARTIFACT`, minimise it with `cargo +nightly fuzz tmin --fuzz-dir {FUZZ_DIR} TARGET ARTIFACT` (docs/fuzzing.md)",
        failures.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fuzz_options() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let d = parse_fuzz_args(&v(&[])).expect("no options");
        assert_eq!(
            (d.secs, d.runs, d.target.as_deref()),
            (Some(60), None, None)
        );
        let a = parse_fuzz_args(&v(&[
            "--secs",
            "5",
            "--target=snapshot",
            "--max-len",
            "4096",
        ]))
        .expect("options");
        assert_eq!(a.secs, Some(5));
        assert_eq!(a.target.as_deref(), Some("snapshot"));
        assert_eq!(a.max_len, Some(4096));
        let r = parse_fuzz_args(&v(&["--runs=1000"])).expect("runs");
        assert_eq!((r.secs, r.runs), (None, Some(1000)));
        assert!(parse_fuzz_args(&v(&["--target", "nope"])).is_err());
        assert!(parse_fuzz_args(&v(&["--secs"])).is_err());
        assert!(parse_fuzz_args(&v(&["--secs", "0"])).is_err());
        assert!(parse_fuzz_args(&v(&["--keep-going", "--runs", "5"])).is_err());
        assert!(parse_fuzz_args(&v(&["--keep-going"])).is_ok_and(|a| a.keep_going));
    }

    #[test]
    fn reads_libfuzzer_exec_counts() {
        let plain = "#8192\tpulse  cov: 1 ft: 2\n#38948\tDONE   cov: 1101\nDone 38948 runs in 31 second(s)\nstat::number_of_executed_units: 38950\n";
        assert_eq!(fuzz_execs(plain), 38950);
        assert_eq!(fuzz_execs("#12\tINITED\n#38948\tDONE   cov: 1101\n"), 38948);
        let fork = "#4012: cov: 3877 ft: 7961 corp: 476 exec/s: 2006 oom/timeout/crash: 0/0/0 time: 3s job: 1\n#60673: cov: 3979 ft: 8737 corp: 592 exec/s: 1904 oom/timeout/crash: 0/0/0 time: 31s job: 6\nINFO: exiting: 0 time: 31s\n";
        assert_eq!(fuzz_execs(fork), 60673);
        assert_eq!(fuzz_execs("Done 77 runs in 0 second(s)\n"), 77);
        assert_eq!(fuzz_execs(""), 0);
    }

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
