//! Issue 14's budgets as behaviour: every command on one input of every hostile class that
//! `tests/fixtures/bounds.py` writes (the count-driven classes at `--scale 0.1`, the others at
//! their full size, each at most 10 MB). Each run must exit 0 or 2, never 101 (a panic), 134 (an
//! abort) or a signal; an exit 2 must say so in one line naming the file; the peak RSS (wait4's
//! `ru_maxrss`) must stay under 1 GB. Some classes have a stricter rule: a valid multi-member
//! gzip and gzipped JSON open, a list of non-segments is refused naming its keys,
//! protocol 0 is not called a text file.
//!
//! Time is the benchmark's business (`cargo xtask bench-bounds` prints it against the 10 s
//! budget); here a run is only killed after 60 s, as a hang, or past 2 GB of RSS, to spare the
//! machine.
//!
//! Its own test binary, not a module of `cli/`: a child's `ru_maxrss` counts the memory of the
//! process that forked it (Linux keeps the pre-exec high-water mark), so in one process with the
//! in-process tests every child reported the tests' 1,012 MB and failed the budget.

#[path = "cli/common/mod.rs"]
mod common;
use common::*;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Every class of bounds.py (checked against `bounds.py list`).
const CLASSES: &[&str] = &[
    "memo-bomb",
    "deep-stack",
    "frame-batches",
    "gzip-stack-bomb",
    "many-devices",
    "many-segments",
    "huge-segment",
    "many-events",
    "empty-cache-end",
    "many-ooms",
    "shared-annotations",
    "non-segment-list",
    "multi-member-gzip",
    "gzip-json",
    "protocol0",
];

const COMMANDS: &[&str] = &[
    "summary", "state", "oom", "folded", "diff", "leaks", "lines", "html", "stats", "trace",
    "segments", "memory", "whatif",
];

const RSS_BUDGET: u64 = 1_000_000_000;
/// Past this a run is killed (a memory bomb would otherwise take the machine's memory).
const RSS_CAP: u64 = 2_000_000_000;
/// Past this a run is killed as a hang (the 10 s budget is the benchmark's).
const HANG: Duration = Duration::from_secs(60);

/// A fresh directory per test binary for the inputs and outputs.
fn work_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = repo_root()
            .join("target/test-fixtures")
            .join(format!("budgets-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        dir
    })
    .clone()
}

/// `python3 tests/fixtures/bounds.py CLASS OUT --scale 0.1`.
fn generate_class(class: &str) -> PathBuf {
    let out = work_dir().join(format!("{class}.input"));
    run_python3(
        [
            repo_root().join("tests/fixtures/bounds.py").as_os_str(),
            std::ffi::OsStr::new(class),
            out.as_os_str(),
            std::ffi::OsStr::new("--scale"),
            std::ffi::OsStr::new("0.1"),
        ],
        &format!("bounds.py {class} failed"),
    );
    out
}

/// A tiny viewer build for `memviz html` (what it embeds is not under test here; html.rs and
/// tests/web/report.test.mjs test the report).
fn fake_dist() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = work_dir().join("dist");
        std::fs::create_dir_all(dir.join("js")).expect("mkdir");
        let files: [(&str, &[u8]); 5] = [
            (
                "index.html",
                b"<!doctype html><html><head><meta charset=\"utf-8\"><title>memviz</title>\
                  <!-- memviz:css --><!-- /memviz:css -->\
                  <!-- memviz:entry --><script type=\"module\" src=\"js/main.js\"></script><!-- /memviz:entry -->\
                  <!-- memviz:preload -->\
                  <link rel=\"modulepreload\" href=\"./memviz-web-00.js\">\
                  <link rel=\"preload\" href=\"./memviz-web-00_bg.wasm\" as=\"fetch\" type=\"application/wasm\">\
                  </head><body><!-- memviz:body --><div id=\"error\" hidden></div><!-- /memviz:body --></body></html>\n",
            ),
            (
                "memviz-web-00.js",
                b"export default async function init() {}\n",
            ),
            ("memviz-web-00_bg.wasm", b"\0asm\x01\0\0\0"),
            ("js/main.js", b"window.memviz = { open() {} };\n"),
            ("js/worker.js", b"self.onmessage = () => {};\n"),
        ];
        for (name, bytes) in files {
            std::fs::write(dir.join(name), bytes).expect("write dist file");
        }
        dir
    })
    .clone()
}

/// How one run ended.
struct Run {
    code: Option<i32>,
    signal: Option<i32>,
    max_rss: Option<u64>,
    hung: bool,
    capped: bool,
    stdout: Vec<u8>,
    stderr: String,
}

/// Runs `memviz ARGS`, stdout and stderr into files beside the input.
fn run_memviz(args: &[String], tag: &str) -> Run {
    let out_path = work_dir().join(format!("{tag}.stdout"));
    let err_path = work_dir().join(format!("{tag}.stderr"));
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_memviz"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("memviz runs");
    let (status, max_rss, hung, capped) = wait_limited(&mut child, started);
    let stdout = std::fs::read(&out_path).unwrap_or_default();
    let stderr =
        String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into_owned();
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    #[cfg(not(unix))]
    let signal = None;
    Run {
        code: status.code(),
        signal,
        max_rss,
        hung,
        capped,
        stdout,
        stderr,
    }
}

/// The resident set of a live process, from /proc.
fn current_rss(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Waits with wait4 (its rusage has the exact peak RSS, which std's wait drops), killing the
/// child after HANG or past RSS_CAP: (status, peak RSS, hung, capped).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn wait_limited(
    child: &mut std::process::Child,
    started: Instant,
) -> (std::process::ExitStatus, Option<u64>, bool, bool) {
    use std::os::unix::process::ExitStatusExt;
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    let (mut hung, mut capped, mut killed) = (false, false, false);
    let mut last_check = Duration::ZERO;
    loop {
        let mut status: libc::c_int = 0;
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        let flags = if killed { 0 } else { libc::WNOHANG };
        // SAFETY: `pid` is this test's own child, which nothing else waits for (std's Child
        // is never waited on); `status` and `usage` are valid for writes during the call.
        let r = unsafe { libc::wait4(pid, &mut status, flags, usage.as_mut_ptr()) };
        if r == pid {
            // SAFETY: wait4 reaped the child and filled `usage` (zeroed before anyway).
            let usage = unsafe { usage.assume_init() };
            let rss = u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024;
            return (
                std::process::ExitStatus::from_raw(status),
                Some(rss),
                hung,
                capped,
            );
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "wait4: {e}");
            continue;
        }
        let elapsed = started.elapsed();
        if !killed && elapsed >= HANG {
            hung = true;
        }
        if !killed && elapsed >= last_check + Duration::from_millis(10) {
            last_check = elapsed;
            capped = current_rss(child.id()).is_some_and(|r| r > RSS_CAP);
        }
        if !killed && (hung || capped) {
            // Not reaped (wait4 just said so): the pid is still this child's.
            child.kill().expect("kill");
            killed = true;
            continue;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Elsewhere: no RSS.
#[cfg(not(target_os = "linux"))]
fn wait_limited(
    child: &mut std::process::Child,
    started: Instant,
) -> (std::process::ExitStatus, Option<u64>, bool, bool) {
    let mut hung = false;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return (status, None, hung, false);
        }
        if !hung && started.elapsed() >= HANG {
            hung = true;
            child.kill().expect("kill");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn command_args(command: &str, file: &str, class: &str) -> Vec<String> {
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    match command {
        "state" => s(&["state", file, "--device", "0", "--event", "-1", "--json"]),
        "diff" => s(&["diff", file, file]),
        "html" => {
            let out = work_dir().join(format!("{class}.html"));
            let dist = fake_dist();
            s(&[
                "html",
                file,
                "-o",
                &path_str(&out),
                "--dist",
                &path_str(&dist),
            ])
        }
        other => s(&[other, file]),
    }
}

/// What is wrong with one run, if anything.
fn check(class: &str, command: &str, file: &str, run: &Run) -> Result<(), String> {
    let first = run.stderr.lines().next().unwrap_or("").to_owned();
    if run.hung {
        return Err(format!("hung: killed after {} s", HANG.as_secs()));
    }
    if run.capped {
        return Err(format!(
            "RSS past {} GB: killed (budget 1 GB)",
            RSS_CAP / 1_000_000_000
        ));
    }
    if let Some(s) = run.signal {
        return Err(format!("killed by signal {s} (6 = abort): {first}"));
    }
    let code = run.code.unwrap_or(-1);
    if code != 0 && code != 2 {
        return Err(format!("exit {code} (101 = panic): {first}"));
    }
    if let Some(rss) = run.max_rss.filter(|&r| r > RSS_BUDGET) {
        return Err(format!(
            "peak RSS {} MB over the 1 GB budget",
            rss / 1_000_000
        ));
    }
    if code == 2 {
        let lines = run.stderr.lines().count();
        if lines != 1 || !first.starts_with("memviz: ") || !first.contains(file) {
            return Err(format!(
                "exit 2 wants one line `memviz: FILE: …` naming {file}; got {lines} line(s): {}",
                run.stderr.trim_end()
            ));
        }
    }
    let lower = first.to_lowercase();
    // The rest of the message, without the path (whose name holds the class's words).
    let said = lower.replace(&file.to_lowercase(), "");
    match class {
        "multi-member-gzip" if code != 0 => {
            return Err(format!("a valid two-member gzip must open; got: {first}"));
        }
        "gzip-json" if code != 0 => {
            return Err(format!(
                "a gzipped JSON snapshot must open (docs/formats.md); exit {code}: {first}"
            ));
        }
        "non-segment-list" if code != 2 || !(said.contains("value") && said.contains("kind")) => {
            return Err(format!(
                "a list of dicts without segment keys must be refused naming the keys found (name, value, kind); exit {code}: {first}"
            ));
        }
        "protocol0"
            if code == 2 && (!said.contains("protocol 0") || said.contains("text file")) =>
        {
            return Err(format!(
                "a protocol-0 pickle must open or be refused as protocol 0, not as a text file: {first}"
            ));
        }
        _ => {}
    }
    if code == 0 {
        if command == "state" && serde_json::from_slice::<serde_json::Value>(&run.stdout).is_err() {
            return Err("state --json printed no JSON".to_owned());
        }
        if command == "summary" && run.stdout.is_empty() {
            return Err("summary printed nothing".to_owned());
        }
        if command == "html" {
            let out = work_dir().join(format!("{class}.html"));
            let len = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
            let _ = std::fs::remove_file(&out);
            if len == 0 {
                return Err("html exited 0 without writing the report".to_owned());
            }
        }
    }
    Ok(())
}

/// Every command on CLASS; asserts all of them behave.
fn budget(class: &str) {
    let input = generate_class(class);
    let file = path_str(&input);
    let mut failures = Vec::new();
    for &command in COMMANDS {
        let args = command_args(command, &file, class);
        let run = run_memviz(&args, &format!("{class}.{command}"));
        if let Err(e) = check(class, command, &file, &run) {
            failures.push(format!("  {class} × {command}: {e}"));
        }
    }
    let _ = std::fs::remove_file(&input);
    assert!(
        failures.is_empty(),
        "{} of {} commands out of budget on {class}:\n{}",
        failures.len(),
        COMMANDS.len(),
        failures.join("\n")
    );
}

macro_rules! budget_tests {
    ($($name:ident => $class:literal,)*) => {
        $(
            #[test]
            fn $name() {
                budget($class);
            }
        )*
    };
}

budget_tests! {
    memo_bomb => "memo-bomb",
    deep_stack => "deep-stack",
    frame_batches => "frame-batches",
    gzip_stack_bomb => "gzip-stack-bomb",
    many_devices => "many-devices",
    many_segments => "many-segments",
    huge_segment => "huge-segment",
    many_events => "many-events",
    empty_cache_end => "empty-cache-end",
    many_ooms => "many-ooms",
    shared_annotations => "shared-annotations",
    non_segment_list => "non-segment-list",
    multi_member_gzip => "multi-member-gzip",
    gzip_json => "gzip-json",
    protocol0 => "protocol0",
}

#[test]
fn every_generated_class_is_tested() {
    let out = Command::new("python3")
        .arg(repo_root().join("tests/fixtures/bounds.py"))
        .arg("list")
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "bounds.py list failed");
    let listed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        listed, CLASSES,
        "bounds.py's classes and this test's differ"
    );
}

#[test]
fn checks_catch_each_kind_of_failure() {
    let ok = || Run {
        code: Some(0),
        signal: None,
        max_rss: Some(10_000_000),
        hung: false,
        capped: false,
        stdout: b"x".to_vec(),
        stderr: String::new(),
    };
    let f = "/t/x.pickle";
    assert!(check("deep-stack", "summary", f, &ok()).is_ok());
    let refused = |msg: &str| Run {
        code: Some(2),
        stderr: format!("{msg}\n"),
        ..ok()
    };
    assert!(check(
        "deep-stack",
        "leaks",
        f,
        &refused("memviz: /t/x.pickle: too big")
    )
    .is_ok());
    // Exit 2 without the file, or over two lines.
    assert!(check("deep-stack", "leaks", f, &refused("memviz: too big")).is_err());
    assert!(check(
        "deep-stack",
        "leaks",
        f,
        &refused("memviz: /t/x.pickle: a\nb")
    )
    .is_err());
    for bad in [
        Run {
            code: Some(101),
            ..ok()
        },
        Run {
            code: None,
            signal: Some(6),
            ..ok()
        },
        Run {
            max_rss: Some(RSS_BUDGET + 1),
            ..ok()
        },
        Run { hung: true, ..ok() },
    ] {
        assert!(check("deep-stack", "summary", f, &bad).is_err());
    }
    assert!(check(
        "multi-member-gzip",
        "oom",
        f,
        &refused("memviz: /t/x.pickle: corrupt")
    )
    .is_err());
    assert!(check(
        "gzip-json",
        "oom",
        f,
        &refused("memviz: /t/x.pickle: gzip is corrupt")
    )
    .is_err());
    assert!(check(
        "gzip-json",
        "oom",
        f,
        &refused("memviz: /t/x.pickle: this gzip file holds JSON, not a pickle")
    )
    .is_err());
    assert!(check(
        "protocol0",
        "oom",
        f,
        &refused("memviz: /t/x.pickle: this file is a text file, not a pickle")
    )
    .is_err());
    assert!(check("non-segment-list", "oom", f, &ok()).is_err());
    assert!(check(
        "non-segment-list",
        "oom",
        f,
        &refused("memviz: /t/x.pickle: a list of dicts with keys kind, name, value, not segments")
    )
    .is_ok());
}
