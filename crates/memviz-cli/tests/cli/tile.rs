//! `generate.py tile` (multi-GB benchmark snapshots streamed as shifted copies of one base trace):
//! small tiled files, from the default emulator base and from a real file, read by `memviz
//! summary --json` exactly as the independent Python oracle reads them.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// A private directory for this test binary's files.
fn dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = repo_root()
            .join("target/test-fixtures")
            .join(format!("tile-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    })
}

/// `python3 tests/fixtures/generate.py tile ARGS… OUT`: Ok(stderr) or Err(stderr).
fn tile(args: &[&str], out: &Path) -> Result<String, String> {
    let o = Command::new("python3")
        .arg(repo_root().join("tests/fixtures/generate.py"))
        .arg("tile")
        .args(args)
        .arg(out)
        .output()
        .expect("python3 runs");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if o.status.success() {
        Ok(err)
    } else {
        Err(err)
    }
}

/// `memviz summary FILE --json` equals the oracle's summary (warnings aside, as in corpus.rs);
/// returns the summary.
fn cli_matches_oracle(path: &Path) -> serde_json::Value {
    let (code, out, err) = memviz(&["summary", &path_str(path), "--json"]);
    assert_eq!(
        code,
        0,
        "memviz summary failed on {}: {err}",
        path.display()
    );
    let ours: serde_json::Value = serde_json::from_str(&out).expect("memviz prints JSON");
    assert_matches_oracle(ours.clone(), path);
    ours
}

#[test]
fn default_tile_matches_the_oracle() {
    let out = dir().join("default3.pickle");
    let log = tile(&["--mb", "3"], &out).unwrap_or_else(|e| panic!("tile failed: {e}"));
    assert!(log.contains("bytes/entry"), "no summary line: {log}");
    let size = std::fs::metadata(&out).expect("tile output").len() as f64;
    assert!(
        (size - 3e6).abs() <= 0.05 * 3e6,
        "{size} bytes is not 3 MB ± 5 %"
    );
    let s = cli_matches_oracle(&out);
    let d = &s["devices"][0];
    assert_eq!(s["devices"].as_array().map(Vec::len), Some(1));
    assert_eq!(d["device"], 0);
    // Dense: frame lists shared through the memo, so well under 100 bytes per entry.
    let entries = d["trace_entries"].as_u64().expect("trace_entries");
    assert!(
        size / entries as f64 <= 100.0,
        "{size} bytes for {entries} entries"
    );
    for action in [
        "alloc",
        "free_requested",
        "free_completed",
        "segment_alloc",
        "segment_free",
    ] {
        assert!(d["actions"][action].as_u64() > Some(0), "no {action}: {d}");
    }
    // Every copy's allocations live at its end stay live: the final state is theirs.
    assert_eq!(d["final_live_bytes"], d["requested_bytes"]);
}

#[test]
fn default_tile_is_seeded() {
    let file = |name: &str, seed: &str| {
        let p = dir().join(name);
        tile(&["--mb", "0.5", "--seed", seed], &p).unwrap_or_else(|e| panic!("tile failed: {e}"));
        std::fs::read(&p).expect("read")
    };
    let a = file("seed7a.pickle", "7");
    assert!(
        a == file("seed7b.pickle", "7"),
        "same seed, different bytes"
    );
    assert!(a != file("seed8.pickle", "8"), "the seed changes nothing");
}

#[test]
fn real_file_tile_matches_the_oracle() {
    // The smallest real file with a trace (files without one are refused), tiled to ~1 MB.
    let mut files: Vec<(u64, PathBuf)> = corpus_files()
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.len(), p)))
        .filter(|(len, _)| *len <= 1_500_000)
        .collect();
    files.sort();
    for (_, src) in &files {
        let out = dir().join("real.pickle");
        let Ok(log) = tile(&["--mb", "1", "--from", &path_str(src)], &out) else {
            continue;
        };
        eprintln!("{}: {log}", src.display());
        let s = cli_matches_oracle(&out);
        assert!(s["devices"][0]["trace_entries"].as_u64() > Some(1000));
        return;
    }
    eprintln!("note: no real file with a trace; skipped");
}

/// A trace whose addresses are nearly all distinct keeps its address column raw (4 bytes per
/// entry as differences from a base, plus its exceptions; keys are addresses): the pairing then remembers allocations in a hash map instead of
/// a table indexed by address code. Both ways must read as the oracle does; the tiled files
/// above cover the coded way.
#[test]
fn raw_address_column_matches_the_oracle() {
    let out = dir().join("raw_addresses.pickle");
    // 150 k allocations at distinct addresses; every third freed (a request + completion pair,
    // every ninth with the request on another address first), some frees of unknown blocks.
    let script = r#"
import pickle, sys
ev = []
live = []
for i in range(150000):
    a = 0x7f0000000000 + i * 4096
    ev.append({"action": "alloc", "addr": a, "size": 512 + (i % 7) * 256, "stream": 0, "frames": []})
    live.append(a)
    if i % 3 == 2:
        f = live.pop(len(live) // 2)
        if i % 9 == 8:
            ev.append({"action": "free_requested", "addr": f + 1, "size": 1, "stream": 0, "frames": []})
        ev.append({"action": "free_requested", "addr": f, "size": 0, "stream": 0, "frames": []})
        ev.append({"action": "free_completed", "addr": f, "size": 0, "stream": 0, "frames": []})
    if i % 1000 == 999:
        ev.append({"action": "free_completed", "addr": 0x100 + i, "size": 64, "stream": 0, "frames": []})
pickle.dump({"segments": [], "device_traces": [ev]}, open(sys.argv[1], "wb"), protocol=4)
"#;
    python_c(script, &out, "writing the raw-address snapshot failed");
    let (code, bench, err) = memviz(&["bench", &path_str(&out)]);
    assert_eq!(code, 0, "memviz bench failed: {err}");
    // Raw: no table of distinct addresses (the unaligned `f + 1` and unknown-block addresses
    // are exceptions, so a little over 4 bytes per entry).
    assert!(
        bench.contains("\"trace.addr_table\":0.0"),
        "the address column should be raw here: {bench}"
    );
    let ours = cli_matches_oracle(&out);
    // 150 000 allocations and the 150 frees of unknown blocks, each its own element.
    assert_eq!(
        ours["devices"][0]["timeline_allocations"], 150_150,
        "{ours}"
    );
}
