//! Helpers shared by the integration tests.
#![allow(dead_code)]

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
        let st = Command::new("python3")
            .arg(repo_root().join("tests/fixtures/generate.py"))
            .arg("small")
            .arg(&dir)
            .status()
            .expect("python3 runs");
        assert!(st.success(), "generate.py small failed");
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
