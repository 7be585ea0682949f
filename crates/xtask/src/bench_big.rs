//! `cargo xtask bench-big [--from SNAPSHOT] [SIZES_MB...]`: big tiled snapshots (default 150,
//! 500, 1000, 2000 and 4000 MB) through the native CLI, the native views and the page, printed as
//! the tables of docs/limits.md.
//!
//! Per size, `generate.py tile` writes `target/bench/tile_<N>mb[_<base>].pickle` (shifted copies
//! of one trace: the training emulator's, or `--from`'s longest device trace, read at run time;
//! nothing of it is committed), then:
//! 1. `memviz summary FILE`: wall time, and its peak RSS (VmHWM, sampled from /proc every 20 ms:
//!    it only grows, so the last sample before exit is the peak within one sampling period);
//! 2. `mem_budget FILE --views` (the memviz-viewer example): heap bytes per trace entry of the
//!    model and of each view, as counted by its allocator, and the heap over the file;
//! 3. `tests/web/bench_page.mjs FILE --backend webgl2 --views`: headless Chromium, drop → first
//!    frame, then every view and panel with the worker's wasm memory after each.
//!
//! A benchmark that prints numbers, not a test: nothing here fails on a slow or big result, only
//! on a step that could not run.

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::{
    build_bench_page, cmd, install, run, run_capture_status, Result, Steps, BENCH_PAGE_DIST, MB,
};

/// What `bench-big` is asked for.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Tile this snapshot's longest device trace instead of the training emulator's
    #[arg(long, value_name = "SNAPSHOT")]
    pub from: Option<String>,
    /// Snapshot sizes in MB (1 to 10000, generate.py tile's limit)
    #[arg(value_parser = tiled_mb, default_values_t = [150, 500, 1000, 2000, 4000])]
    pub sizes_mb: Vec<u64>,
}

/// A size for `generate.py tile` (at most 10 000 MB).
pub(crate) fn tiled_mb(text: &str) -> Result<u64> {
    crate::mb_in(text, 10_000, "generate.py tile's limit")
}

/// One JSON line of `mem_budget FILE --views`: the first (no step) has the file's entries, the
/// others one step's heap. Fields it lacks are left empty in the table.
#[derive(Debug, Default, serde::Deserialize)]
struct MemBudgetLine {
    #[serde(default)]
    step: Option<String>,
    #[serde(default)]
    entries: Option<f64>,
    #[serde(default)]
    bytes_per_entry: Option<f64>,
    #[serde(default)]
    heap_per_file: Option<f64>,
    #[serde(default)]
    peak_per_file: Option<f64>,
}

/// The steps of `mem_budget` reported, with the names used in the table.
const MEM_STEPS: [(&str, &str); 6] = [
    ("model", "model"),
    ("app_first_view", "Active (opened)"),
    ("segments", "Cached Segments"),
    ("pools", "Private Pools"),
    ("state", "State History"),
    ("flame", "flamegraph"),
];

pub fn bench_big(a: &Args) -> Result<()> {
    let started = Instant::now();
    let mut steps = Steps::new("bench-big", 5);
    steps.step("install the pinned toolchain", install)?;
    steps.step("native CLI and the mem_budget example", || {
        run(cmd("cargo", ["build", "--release", "-p", "memviz-cli"]))?;
        run(cmd(
            "cargo",
            [
                "build",
                "--release",
                "-p",
                "memviz-viewer",
                "--example",
                "mem_budget",
            ],
        ))
    })?;
    steps.step(
        &format!("web page (trunk build into {BENCH_PAGE_DIST}/)"),
        build_bench_page,
    )?;
    let mut files = Vec::new();
    steps.step("tiled snapshots in target/bench/", || {
        files = tiles(a)?;
        Ok(())
    })?;
    let mut native = String::new();
    let mut page = String::new();
    steps.step("each size: CLI, native views, the page (WebGL2)", || {
        native.push_str(
            "| file | MB | entries | CLI summary s | CLI peak RSS × file | model B/entry | Active B/entry | Segments | Pools | State History | flamegraph | after opening × file | peak while opening × | every view × file |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for file in &files {
            let bytes = fs::metadata(file).map_err(|e| format!("{file}: {e}"))?.len();
            let (secs, hwm) = cli_summary(file)?;
            let mem = mem_budget(file)?;
            let line = |step: Option<&str>| mem.iter().find(|l| l.step.as_deref() == step);
            let per = |step: &str| line(Some(step)).and_then(|l| l.bytes_per_entry);
            let heap_after = |step: &str| line(Some(step)).and_then(|l| l.heap_per_file);
            let peak_open = line(Some("app_first_view")).and_then(|l| l.peak_per_file);
            let entries = line(None).and_then(|l| l.entries);
            let cell = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |x| format!("{x}"));
            let mut row = format!(
                "| {} | {:.0} | {} | {secs:.1} | {:.2} |",
                Path::new(file)
                    .file_name()
                    .map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned()),
                bytes as f64 / MB,
                entries.map_or_else(|| "–".to_owned(), |e| format!("{:.1} M", e / 1e6)),
                hwm as f64 / bytes as f64,
            );
            for (step, _) in MEM_STEPS {
                row.push_str(&format!(" {} |", cell(per(step))));
            }
            row.push_str(&format!(
                " {} | {} | {} |\n",
                cell(heap_after("app_first_view")),
                cell(peak_open),
                cell(heap_after("flame")),
            ));
            native.push_str(&row);
            page.push_str(&page_run(file)?);
        }
        Ok(())
    })?;
    println!("Native (release; heap counted by mem_budget's allocator; CLI RSS from /proc):\n");
    println!("{native}");
    println!("The page in headless Chromium (WebGL2), from tests/web/bench_page.mjs --views:\n");
    println!("{page}");
    eprintln!(
        "\nxtask bench-big: done in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The tiled snapshots, generated once per size and base.
pub(crate) fn tiles(a: &Args) -> Result<Vec<String>> {
    fs::create_dir_all("target/bench").map_err(|e| format!("cannot create target/bench: {e}"))?;
    let suffix = a.from.as_deref().map_or_else(String::new, |f| {
        let stem = Path::new(f)
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let safe: String = stem
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(40)
            .collect();
        format!("_{safe}")
    });
    let mut files = Vec::new();
    for &size in &a.sizes_mb {
        let path = format!("target/bench/tile_{size}mb{suffix}.pickle");
        if !Path::new(&path).exists() {
            let partial = format!("{path}.partial");
            let size_arg = size.to_string();
            let mut args = vec!["tests/fixtures/generate.py", "tile", "--mb", &size_arg];
            if let Some(f) = a.from.as_deref() {
                args.extend(["--from", f]);
            }
            args.push(&partial);
            run(cmd("python3", args))?;
            fs::rename(&partial, &path).map_err(|e| format!("cannot rename {partial}: {e}"))?;
        }
        files.push(path);
    }
    Ok(files)
}

/// `memviz summary FILE`: (wall seconds, peak RSS bytes sampled from /proc).
fn cli_summary(file: &str) -> Result<(f64, u64)> {
    eprintln!("$ target/release/memviz summary {file}");
    let t0 = Instant::now();
    let mut child = cmd("target/release/memviz", ["summary", file])
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start memviz: {e}"))?;
    let status_path = format!("/proc/{}/status", child.id());
    let mut hwm = 0u64;
    loop {
        if let Ok(text) = fs::read_to_string(&status_path) {
            if let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                hwm = hwm.max(kb * 1024);
            }
        }
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(status)) => return Err(format!("memviz summary {file} failed ({status})")),
            Ok(None) => sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("memviz summary {file}: {e}")),
        }
    }
    Ok((t0.elapsed().as_secs_f64(), hwm))
}

/// `mem_budget FILE --views`: its JSON lines, parsed.
fn mem_budget(file: &str) -> Result<Vec<MemBudgetLine>> {
    let (ok, out) =
        run_capture_status(cmd("target/release/examples/mem_budget", [file, "--views"]))?;
    if !ok {
        return Err(format!("mem_budget {file} failed:\n{out}"));
    }
    // A line that does not parse (a path with an escape JSON lacks) only loses its cells.
    Ok(out
        .lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .filter_map(|l| match serde_json::from_str(l) {
            Ok(line) => Some(line),
            Err(e) => {
                eprintln!("    mem_budget {file}: a line is not JSON ({e}), skipped: {l}");
                None
            }
        })
        .collect())
}

/// One WebGL2 round of bench_page.mjs with every view; its Markdown tables.
fn page_run(file: &str) -> Result<String> {
    let (ok, out) = run_capture_status(cmd(
        "node",
        [
            "tests/web/bench_page.mjs",
            file,
            "--backend",
            "webgl2",
            "--rounds",
            "1",
            "--views",
            "--dist",
            BENCH_PAGE_DIST,
            "--timeout-s",
            "1200",
        ],
    ))?;
    let tables: String = out
        .lines()
        .filter(|l| !l.trim_start().starts_with('{'))
        .map(|l| format!("{l}\n"))
        .collect();
    if !ok {
        eprintln!("    bench_page.mjs reported a failed round on {file} (the table says why)");
    }
    Ok(tables)
}
