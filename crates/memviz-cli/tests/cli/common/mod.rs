//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod pickle;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// `../shared/corpus/real` beside the clone, if present.
pub fn corpus_files() -> Vec<PathBuf> {
    let dir = repo_root().join("../shared/corpus/real");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        eprintln!("note: {} not found; corpus tests skipped", dir.display());
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("pickle" | "pkl")
            )
        })
        .collect();
    v.sort();
    v
}

/// Generate the small fixtures once per test binary (tests/fixtures/generate.py small DIR).
pub fn fixtures_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = repo_root()
            .join("target/test-fixtures")
            .join(format!("{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        generate("small", &dir);
        dir
    })
    .clone()
}

/// Every fixture `generate.py small` writes.
pub const SMALL_FIXTURES: &[&str] = &[
    "vector.pickle",
    "proto5.pickle",
    "proto2_cxx.pickle",
    "truncated.pickle",
    "deferred.pickle",
    "long1_big.pickle",
    "legacy_history.pickle",
    "bare_list.pickle",
    "empty.pickle",
    "expandable.pickle",
    "pools.pickle",
    "multidevice.pickle",
    "unknown_action.pickle",
];

pub fn fixture(name: &str) -> PathBuf {
    fixtures_dir().join(name)
}

/// The independent Python oracle's summary of a file.
/// Asserts that `ours` (a `memviz summary --json` value) equals the oracle's summary of
/// `path`, warnings aside (their wording is ours).
pub fn assert_matches_oracle(mut ours: serde_json::Value, path: &Path) {
    let mut theirs = oracle(path);
    ours["warnings"] = serde_json::Value::Null;
    theirs["warnings"] = serde_json::Value::Null;
    assert_eq!(
        ours,
        theirs,
        "summary differs from the oracle for {}",
        path.display()
    );
}

pub fn oracle(path: &Path) -> serde_json::Value {
    let out = Command::new("python3")
        .arg(repo_root().join("tests/oracle/summary.py"))
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "oracle failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("oracle prints JSON")
}

pub fn summary_json(snap: &memviz_snapshot::Snapshot) -> serde_json::Value {
    serde_json::from_str(&memviz_analysis::summary::summarize(snap).to_json()).expect("json")
}

pub fn load_path(path: &Path) -> memviz_snapshot::Snapshot {
    let bytes = std::fs::read(path).expect("read");
    memviz_snapshot::load_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn load_chunked(
    bytes: &[u8],
    chunk: usize,
) -> Result<memviz_snapshot::Snapshot, memviz_snapshot::LoadError> {
    let mut l = memviz_snapshot::Loader::new();
    for c in bytes.chunks(chunk.max(1)) {
        l.push(c)?;
    }
    l.finish()
}

/// Run `python3 ARGS…` and assert it succeeded (`failure` is the assertion message).
pub fn run_python3<I, S>(args: I, failure: &str)
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let st = Command::new("python3")
        .args(args)
        .status()
        .expect("python3 runs");
    assert!(st.success(), "{failure}");
}

/// `python3 -c SCRIPT OUT`: an inline script that writes a pickle to `sys.argv[1]`.
pub fn python_c(script: &str, out: &Path, failure: &str) {
    run_python3(
        [
            std::ffi::OsStr::new("-c"),
            std::ffi::OsStr::new(script),
            out.as_os_str(),
        ],
        failure,
    );
}

/// `path` with a suffix unique to this process and call: tests run in parallel and may make
/// the same fixture at once, so each writes its own file and renames it into place (a rename
/// is atomic: a reader sees the old file or the whole new one, never half of it).
pub fn unique(path: &Path) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".tmp-{}-{n}", std::process::id()));
    PathBuf::from(s)
}

/// Write SCRIPT to `script_path`, then `python3 SCRIPT_PATH OUT` (both through private
/// temporary files, renamed into place).
pub fn python_file(script_path: &Path, script: &str, out: &Path, failure: &str) {
    let script_tmp = unique(script_path);
    let out_tmp = unique(out);
    std::fs::write(&script_tmp, script).expect("write script");
    run_python3([script_tmp.as_os_str(), out_tmp.as_os_str()], failure);
    std::fs::rename(&out_tmp, out).expect("rename fixture into place");
    let _ = std::fs::rename(&script_tmp, script_path);
}

/// `tests/fixtures/generate.py hostile OUT`; returns OUT.
pub fn generate_hostile(out: PathBuf) -> PathBuf {
    generate("hostile", &out);
    out
}

/// `tests/fixtures/generate.py KIND OUT`, asserting it succeeded.
pub fn generate(kind: &str, out: &Path) {
    let script = repo_root().join("tests/fixtures/generate.py");
    // `small` writes a directory (made once per test binary); every other kind one file.
    let tmp = if kind == "small" {
        out.to_path_buf()
    } else {
        unique(out)
    };
    let args = [
        script.as_os_str(),
        std::ffi::OsStr::new(kind),
        tmp.as_os_str(),
    ];
    run_python3(args, &format!("generate.py {kind} failed"));
    if tmp != out {
        std::fs::rename(&tmp, out).expect("rename fixture into place");
    }
}

/// The hostile fixture, as `hostile.pickle` in the fixtures directory.
pub fn hostile_fixture() -> PathBuf {
    generate_hostile(fixtures_dir().join("hostile.pickle"))
}

/// A directory `target/test-fixtures/TAG-PID` holding what `python3 -c SCRIPT DIR` writes, plus
/// `hostile.pickle`. Callers cache it in their own `OnceLock`.
pub fn planted_fixtures(tag: &str, script: &str) -> PathBuf {
    let dir = repo_root()
        .join("target/test-fixtures")
        .join(format!("{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    python_c(script, &dir, "planted fixture script failed");
    generate_hostile(dir.join("hostile.pickle"));
    dir
}

/// Run the `memviz` binary.
pub fn memviz_output(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_memviz"))
        .args(args)
        .output()
        .expect("memviz runs")
}

/// Run the `memviz` binary: (exit code or -1, stdout, stderr).
pub fn memviz(args: &[&str]) -> (i32, String, String) {
    let out = memviz_output(args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn path_str(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_string()
}

/// A snapshot with one device's timeline and default layout.
pub struct Loaded {
    pub snap: memviz_snapshot::Snapshot,
    pub tl: memviz_analysis::timeline::Timeline,
    pub layout: memviz_present::layout::Layout,
}

pub fn loaded_snapshot(snap: memviz_snapshot::Snapshot, device: i64) -> Loaded {
    let tl = memviz_analysis::timeline::build(&snap, device);
    let layout = memviz_present::layout::Layout::build(
        &tl,
        memviz_present::layout::LayoutOptions::default(),
    );
    Loaded { snap, tl, layout }
}

pub fn loaded(path: &Path, device: i64) -> Loaded {
    loaded_snapshot(load_path(path), device)
}
