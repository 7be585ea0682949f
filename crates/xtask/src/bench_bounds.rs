//! `cargo xtask bench-bounds [--out DIR] [--scale-steps [--steps A,B]]`: the budgets of issue 14
//! on the hostile classes of `tests/fixtures/bounds.py`.
//!
//! Builds `memviz` (release), generates every class into `target/bounds/` (or `--out DIR`), and
//! runs every command on every input, each with a 10 s limit (SIGKILL on expiry, and past 4 GB of
//! RSS so that the memory bombs leave a shared machine alone), measuring wall time and peak RSS
//! (wait4's `ru_maxrss`, see rusage.rs). Prints a markdown table inputs ×
//! commands with time, RSS, exit and a verdict per cell: ok (exit 0 or 2 within 10 s and 1 GB),
//! over-time, over-RSS, abort 134, panic 101, signal N or exit N; then the first stderr line of
//! every failed run. `html` needs a built viewer (`dist/` or `$MEMVIZ_DIST`); without one its
//! column is skipped with a note.
//!
//! `--scale-steps` then generates the count-driven classes (many-devices, many-segments,
//! many-events) at scale A and B (default 1 and 10: `bounds.py --scale`), runs every command on
//! both (the best of three runs when a run takes under a second, to damp the noise of a shared
//! machine) and prints the time ratio B/A per command against the target ×15 for ×10. The ×10
//! inputs are larger than 10 MB, outside the budget, so their runs get a 60 s limit.
//!
//! A benchmark that prints numbers: it exits 0 whatever the cells say, non-zero only when it
//! cannot run (no cargo, no python3, a generator failure).

use std::fmt::Write as _;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{cmd, run, run_capture, rusage, Result, Steps};

/// The budget of issue 14 per command and input of at most 10 MB.
const TIME_LIMIT: Duration = Duration::from_secs(10);
const RSS_LIMIT: u64 = 1_000_000_000;
/// The kill limit of the scale steps (their ×10 inputs exceed 10 MB).
const STEP_LIMIT: Duration = Duration::from_secs(60);
/// A run is killed past 4 GB of RSS (4 × the budget): the memory bombs would otherwise take
/// 10 GB and more of a shared machine; the cell then says over-RSS, killed.
const RSS_CAP: u64 = 4_000_000_000;
const MEMVIZ: &str = "target/release/memviz";
const GENERATOR: &str = "tests/fixtures/bounds.py";
/// The classes whose size `--scale` multiplies.
const COUNT_DRIVEN: [&str; 3] = ["many-devices", "many-segments", "many-events"];
/// The commands, by the name shown in the tables.
const COMMANDS: [&str; 8] = [
    "summary", "state", "oom", "folded", "diff", "leaks", "lines", "html",
];

/// What `bench-bounds` is asked for.
#[derive(Debug, PartialEq, clap::Args)]
pub struct Args {
    /// Where the generated inputs, the reports of `html` and the stderr of each run go
    #[arg(long, default_value = "target/bounds", value_name = "DIR")]
    pub out: String,
    /// Then the count-driven classes at two scales (--steps) and the time ratio per command
    /// (target <= x15 for x10)
    #[arg(long)]
    scale_steps: bool,
    /// The two scales of --scale-steps, A,B with 0 < A < B <= 1000 (implies --scale-steps)
    #[arg(long, value_parser = parse_steps, value_name = "A,B")]
    steps: Option<(f64, f64)>,
}

impl Args {
    /// `--scale-steps`, or `--steps` given.
    pub fn scale_steps(&self) -> bool {
        self.scale_steps || self.steps.is_some()
    }

    /// The two scales (default 1 and 10).
    pub fn steps(&self) -> (f64, f64) {
        self.steps.unwrap_or((1.0, 10.0))
    }
}

/// `A,B` with 0 < A < B <= 1000.
fn parse_steps(v: &str) -> Result<(f64, f64)> {
    v.split_once(',')
        .and_then(|(x, y)| {
            let x = x.trim().parse::<f64>().ok()?;
            let y = y.trim().parse::<f64>().ok()?;
            (x > 0.0 && y > x && y <= 1000.0).then_some((x, y))
        })
        .ok_or_else(|| format!("--steps wants A,B with 0 < A < B <= 1000, got `{v}`"))
}

/// One run of one command.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    pub secs: f64,
    pub rss: Option<u64>,
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub rss_capped: bool,
    /// The first line of stderr (for the failure notes).
    pub first_err: String,
}

/// The verdict of a cell against the budget.
pub fn verdict(c: &Cell) -> String {
    if c.timed_out {
        return "over-time".to_owned();
    }
    if c.rss_capped {
        return "over-RSS".to_owned();
    }
    match (c.signal, c.code) {
        (Some(6), _) | (_, Some(134)) => return "abort 134".to_owned(),
        (Some(s), _) => return format!("signal {s}"),
        (_, Some(101)) => return "panic 101".to_owned(),
        _ => {}
    }
    if c.rss.is_some_and(|r| r > RSS_LIMIT) {
        return "over-RSS".to_owned();
    }
    match c.code {
        Some(0 | 2) => "ok".to_owned(),
        Some(n) => format!("exit {n}"),
        None => "no status".to_owned(),
    }
}

fn cell_text(c: &Cell) -> String {
    let rss = c.rss.map_or_else(
        || "– MB".to_owned(),
        |r| format!("{:.0} MB", r as f64 / 1e6),
    );
    let exit = match (c.timed_out || c.rss_capped, c.signal, c.code) {
        (true, _, _) => "killed".to_owned(),
        (_, Some(s), _) => format!("sig {s}"),
        (_, _, Some(n)) => format!("exit {n}"),
        _ => "?".to_owned(),
    };
    format!("{:.2} s, {rss}, {exit}: {}", c.secs, verdict(c))
}

/// A generated input: class name, path, bytes.
struct Input {
    class: String,
    path: String,
    bytes: u64,
}

/// `bounds.py all DIR`: every class, as the generator lists them.
fn generate_all(dir: &str) -> Result<Vec<Input>> {
    let out = run_capture(cmd("python3", [GENERATOR, "all", dir]))?;
    let mut inputs = Vec::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let mut f = line.split('\t');
        let (Some(class), Some(path), Some(bytes)) = (f.next(), f.next(), f.next()) else {
            return Err(format!(
                "{GENERATOR} all printed an unexpected line: {line}"
            ));
        };
        inputs.push(Input {
            class: class.to_owned(),
            path: path.to_owned(),
            bytes: bytes.trim().parse().unwrap_or(0),
        });
    }
    if inputs.is_empty() {
        return Err(format!("{GENERATOR} all wrote no input"));
    }
    Ok(inputs)
}

/// `bounds.py CLASS OUT --scale S`.
fn generate_scaled(class: &str, dir: &Path, scale: f64) -> Result<Input> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(format!("{class}.pickle"));
    let path_s = path.to_string_lossy().into_owned();
    run(cmd(
        "python3",
        [GENERATOR, class, &path_s, "--scale", &scale.to_string()],
    ))?;
    let bytes = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    Ok(Input {
        class: class.to_owned(),
        path: path_s,
        bytes,
    })
}

/// The viewer build `memviz html` would use, if any.
fn dist_dir() -> Option<PathBuf> {
    let candidates = std::env::var_os("MEMVIZ_DIST")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("dist")]);
    candidates
        .into_iter()
        .find(|d| d.join("index.html").is_file())
}

/// The arguments of COMMAND on FILE (`html` writes into `html_dir`).
fn command_args(command: &str, file: &str, html_dir: &Path, class: &str) -> Vec<String> {
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    match command {
        "state" => s(&["state", file, "--device", "0", "--event", "-1", "--json"]),
        "diff" => s(&["diff", file, file]),
        "html" => {
            let out = html_dir.join(format!("{class}.html"));
            s(&["html", file, "-o", &out.to_string_lossy()])
        }
        other => s(&[other, file]),
    }
}

/// Runs `memviz ARGS` once with stdout discarded, stderr into `err_file`.
fn measure(args: &[String], err_file: &Path, limit: Duration) -> Result<Cell> {
    let err =
        File::create(err_file).map_err(|e| format!("cannot create {}: {e}", err_file.display()))?;
    let started = Instant::now();
    let mut child = Command::new(MEMVIZ)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {MEMVIZ}: {e}"))?;
    let limits = rusage::Limits {
        time: limit,
        rss_cap: Some(RSS_CAP),
    };
    let out = rusage::wait(&mut child, started, limits)
        .map_err(|e| format!("waiting for {MEMVIZ}: {e}"))?;
    let stderr = fs::read(err_file).unwrap_or_default();
    let first_err = String::from_utf8_lossy(&stderr)
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(240)
        .collect();
    Ok(Cell {
        secs: out.secs,
        rss: out.max_rss,
        code: out.status.code(),
        signal: rusage::signal(&out.status),
        timed_out: out.timed_out,
        rss_capped: out.rss_capped,
        first_err,
    })
}

pub fn bench_bounds(a: &Args) -> Result<()> {
    let started = Instant::now();
    let mut steps = Steps::new("bench-bounds", if a.scale_steps() { 4 } else { 3 });
    steps.step("memviz (release)", || {
        run(cmd("cargo", ["build", "--release", "-p", "memviz-cli"]))
    })?;
    let mut inputs = Vec::new();
    steps.step(
        &format!("the hostile classes ({GENERATOR} all {})", a.out),
        || {
            inputs = generate_all(&a.out)?;
            Ok(())
        },
    )?;
    let dist = dist_dir();
    let html_dir = Path::new(&a.out).join("html");
    fs::create_dir_all(&html_dir)
        .map_err(|e| format!("cannot create {}: {e}", html_dir.display()))?;
    let err_file = Path::new(&a.out).join("stderr.txt");
    let mut rows: Vec<(&Input, Vec<Option<Cell>>)> = Vec::new();
    steps.step("every command on every input (10 s limit each)", || {
        for input in &inputs {
            let mut cells = Vec::new();
            for command in COMMANDS {
                if command == "html" && dist.is_none() {
                    cells.push(None);
                    continue;
                }
                let args = command_args(command, &input.path, &html_dir, &input.class);
                let c = measure(&args, &err_file, TIME_LIMIT)?;
                eprintln!("    {} × {command}: {}", input.class, cell_text(&c));
                cells.push(Some(c));
            }
            rows.push((input, cells));
        }
        Ok(())
    })?;
    println!("{}", matrix_table(&rows, dist.is_none()));
    println!("{}", failure_notes(&rows));

    if a.scale_steps() {
        let (lo, hi) = a.steps();
        let mut text = String::new();
        steps.step(
            &format!("count-driven classes at scale {lo} and {hi}"),
            || {
                text = scale_steps(a, dist.is_some(), &html_dir, &err_file)?;
                Ok(())
            },
        )?;
        println!("{text}");
    }
    eprintln!(
        "\nxtask bench-bounds: done in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn matrix_table(rows: &[(&Input, Vec<Option<Cell>>)], no_dist: bool) -> String {
    let mut t = format!(
        "Every command on every input: wall time, peak RSS, exit, verdict (budget: {} s, {} GB; ok = exit 0 or 2 within it)\n\n| input | MB |",
        TIME_LIMIT.as_secs(),
        RSS_LIMIT as f64 / 1e9
    );
    for c in COMMANDS {
        let _ = write!(t, " {c} |");
    }
    t.push_str("\n|---|---:|");
    t.push_str(&"---|".repeat(COMMANDS.len()));
    t.push('\n');
    let mut counts: Vec<(String, usize)> = Vec::new();
    for (input, cells) in rows {
        let _ = write!(t, "| {} | {:.2} |", input.class, input.bytes as f64 / 1e6);
        for cell in cells {
            match cell {
                Some(c) => {
                    let v = verdict(c);
                    match counts.iter_mut().find(|(k, _)| *k == v) {
                        Some((_, n)) => *n += 1,
                        None => counts.push((v, 1)),
                    }
                    let _ = write!(t, " {} |", cell_text(c));
                }
                None => t.push_str(" skipped |"),
            }
        }
        t.push('\n');
    }
    let summary: Vec<String> = counts.iter().map(|(v, n)| format!("{n} {v}")).collect();
    let _ = write!(t, "\nCells: {}.", summary.join(", "));
    if no_dist {
        t.push_str(
            " html skipped: no built viewer (dist/ or $MEMVIZ_DIST; `cargo xtask serve` builds one).",
        );
    }
    t.push('\n');
    t
}

/// The first stderr line of every run that exited non-zero or printed on stderr, one line per
/// distinct message and input: to judge whether an exit 2 says what is wrong in a clear
/// sentence naming the file (a run killed for time or RSS prints nothing).
fn failure_notes(rows: &[(&Input, Vec<Option<Cell>>)]) -> String {
    let mut t =
        String::from("First stderr line of the runs that exited non-zero or wrote to stderr:\n\n");
    let mut any = false;
    for (input, cells) in rows {
        let mut seen: Vec<(String, String, Vec<&str>)> = Vec::new();
        for (cell, command) in cells.iter().zip(COMMANDS) {
            let Some(c) = cell else { continue };
            if c.first_err.is_empty() {
                continue;
            }
            let v = match c.code {
                Some(n) => format!("exit {n}, {}", verdict(c)),
                None => verdict(c),
            };
            match seen
                .iter_mut()
                .find(|(m, vv, _)| *m == c.first_err && *vv == v)
            {
                Some((_, _, cmds)) => cmds.push(command),
                None => seen.push((c.first_err.clone(), v, vec![command])),
            }
        }
        for (msg, v, cmds) in seen {
            any = true;
            let _ = writeln!(t, "- {} ({}; {v}): {msg}", input.class, cmds.join(", "));
        }
    }
    if !any {
        t.push_str("(none)\n");
    }
    t
}

/// Best of up to three runs (the repeats only for runs under a second).
fn best_of(args: &[String], err_file: &Path) -> Result<Cell> {
    let mut best = measure(args, err_file, STEP_LIMIT)?;
    for _ in 0..2 {
        if best.secs >= 1.0 || best.timed_out || best.rss_capped {
            break;
        }
        let c = measure(args, err_file, STEP_LIMIT)?;
        if c.secs < best.secs {
            best = c;
        }
    }
    Ok(best)
}

fn scale_steps(a: &Args, with_html: bool, html_dir: &Path, err_file: &Path) -> Result<String> {
    let (lo, hi) = a.steps();
    let commands: Vec<&str> = COMMANDS
        .into_iter()
        .filter(|c| with_html || *c != "html")
        .collect();
    let mut t = format!(
        "Linear time: each count-driven class at scale {lo} and {hi} (×{:.0} input), best of 3 runs under 1 s; cell = time at {lo} → time at {hi} (ratio); target ratio ≤ ×{:.0}\n\n| class | MB at {lo} → {hi} |",
        hi / lo,
        1.5 * hi / lo
    );
    for c in &commands {
        let _ = write!(t, " {c} |");
    }
    t.push_str("\n|---|---|");
    t.push_str(&"---|".repeat(commands.len()));
    t.push('\n');
    let limit = 1.5 * hi / lo;
    for class in COUNT_DRIVEN {
        let small = generate_scaled(class, &Path::new(&a.out).join(format!("scale-{lo}")), lo)?;
        let big = generate_scaled(class, &Path::new(&a.out).join(format!("scale-{hi}")), hi)?;
        let _ = write!(
            t,
            "| {class} | {:.2} → {:.2} |",
            small.bytes as f64 / 1e6,
            big.bytes as f64 / 1e6
        );
        for command in &commands {
            let c1 = best_of(
                &command_args(command, &small.path, html_dir, class),
                err_file,
            )?;
            let c2 = best_of(&command_args(command, &big.path, html_dir, class), err_file)?;
            let ratio = c2.secs / c1.secs.max(1e-6);
            let judge = match (verdict(&c1).as_str(), verdict(&c2).as_str()) {
                (_, "over-time") => format!("> ×{ratio:.0}, killed at {} s", STEP_LIMIT.as_secs()),
                ("ok" | "over-RSS", "ok" | "over-RSS") if ratio <= limit => {
                    format!("×{ratio:.1} ok")
                }
                ("ok" | "over-RSS", "ok" | "over-RSS") => format!("×{ratio:.1} over ×{limit:.0}"),
                (v1, v2) => format!("×{ratio:.1}; {v1} / {v2}"),
            };
            eprintln!(
                "    {class} × {command}: {:.3} s → {:.3} s ({judge})",
                c1.secs, c2.secs
            );
            let _ = write!(t, " {:.3} → {:.3} s ({judge}) |", c1.secs, c2.secs);
        }
        t.push('\n');
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    /// `cargo xtask bench-bounds ARGS` as clap parses it.
    fn parse_args(args: &[String]) -> Result<Args, clap::Error> {
        use clap::Parser;
        #[derive(Debug, Parser)]
        struct BenchBounds {
            #[command(flatten)]
            args: Args,
        }
        BenchBounds::try_parse_from(
            std::iter::once("bench-bounds".to_owned()).chain(args.iter().cloned()),
        )
        .map(|b| b.args)
    }

    #[test]
    fn parses_options() {
        let d = parse_args(&[]).expect("defaults");
        assert_eq!(
            (d.out.as_str(), d.scale_steps(), d.steps()),
            ("target/bounds", false, (1.0, 10.0))
        );
        let a = parse_args(&v(&["--out", "/tmp/b", "--scale-steps"])).expect("options");
        assert_eq!((a.out.as_str(), a.scale_steps()), ("/tmp/b", true));
        let s = parse_args(&v(&["--steps=0.1,1", "--out=x"])).expect("steps");
        assert_eq!(
            (s.steps(), s.scale_steps(), s.out.as_str()),
            ((0.1, 1.0), true, "x")
        );
        assert!(parse_args(&v(&["--steps", "10,1"])).is_err());
        assert!(parse_args(&v(&["--steps", "0,1"])).is_err());
        assert!(parse_args(&v(&["--out"])).is_err());
        assert!(parse_args(&v(&["--bogus"])).is_err());
        assert!(parse_args(&v(&["--scale-steps=yes"])).is_err());
    }

    #[test]
    fn verdicts_name_the_failure() {
        let ok = Cell {
            code: Some(0),
            rss: Some(10_000_000),
            ..Cell::default()
        };
        assert_eq!(verdict(&ok), "ok");
        assert_eq!(
            verdict(&Cell {
                code: Some(2),
                ..ok.clone()
            }),
            "ok"
        );
        assert_eq!(
            verdict(&Cell {
                rss: Some(RSS_LIMIT + 1),
                ..ok.clone()
            }),
            "over-RSS"
        );
        assert_eq!(
            verdict(&Cell {
                timed_out: true,
                code: None,
                signal: Some(9),
                ..ok.clone()
            }),
            "over-time"
        );
        assert_eq!(
            verdict(&Cell {
                rss_capped: true,
                code: None,
                signal: Some(9),
                ..ok.clone()
            }),
            "over-RSS"
        );
        assert_eq!(
            verdict(&Cell {
                code: None,
                signal: Some(6),
                ..ok.clone()
            }),
            "abort 134"
        );
        assert_eq!(
            verdict(&Cell {
                code: None,
                signal: Some(11),
                ..ok.clone()
            }),
            "signal 11"
        );
        assert_eq!(
            verdict(&Cell {
                code: Some(101),
                ..ok.clone()
            }),
            "panic 101"
        );
        assert_eq!(
            verdict(&Cell {
                code: Some(1),
                ..ok.clone()
            }),
            "exit 1"
        );
    }

    #[test]
    fn commands_take_the_file() {
        let dir = Path::new("/o");
        assert_eq!(command_args("diff", "f", dir, "c"), v(&["diff", "f", "f"]));
        assert_eq!(
            command_args("state", "f", dir, "c"),
            v(&["state", "f", "--device", "0", "--event", "-1", "--json"])
        );
        assert_eq!(
            command_args("html", "f", dir, "c"),
            v(&["html", "f", "-o", "/o/c.html"])
        );
        assert_eq!(command_args("leaks", "f", dir, "c"), v(&["leaks", "f"]));
    }
}
