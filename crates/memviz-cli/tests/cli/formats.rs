//! The other containers of a snapshot (issue 28): `json.dump`'s JSON, the same gzip'd, and
//! `torch.save`'s zip, each written by `tests/fixtures/generate.py twins` from a pickle. Every
//! twin of every real snapshot (and of every small fixture) must read exactly as its pickle:
//! `memviz summary --json` prints the same JSON (it carries no format or protocol field, so
//! nothing is left out of the comparison). A `torch.save` checkpoint (a tensor in `data.pkl`) is
//! refused as a checkpoint, and a zip of other files is refused naming what it holds.
//!
//! The twins of the 25 corpus files are 667 MB of JSON (up to 114 MB a file), 15 MB of gzip and
//! 23 MB of zip; each file's twins are deleted once read, and the next file's are generated
//! meanwhile on another thread. Timings are printed, never asserted.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc::sync_channel;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A private directory for this test binary's files.
fn dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = repo_root()
            .join("target/test-fixtures")
            .join(format!("formats-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    })
}

/// `python3 tests/fixtures/generate.py ARGS…`: Ok(stdout) or Err(stderr).
fn generate_py(args: &[&std::ffi::OsStr]) -> Result<String, String> {
    let o = Command::new("python3")
        .arg(repo_root().join("tests/fixtures/generate.py"))
        .args(args)
        .output()
        .map_err(|e| format!("python3 does not run: {e}"))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

/// `generate.py twins SRC OUT`: the `.json`, `.json.gz` and `.pt` it printed it wrote
/// (`KIND<TAB>PATH<TAB>BYTES` lines), with their sizes.
fn twins(src: &Path, out: &Path) -> Result<Vec<(PathBuf, u64)>, String> {
    let printed = generate_py(&["twins".as_ref(), src.as_os_str(), out.as_os_str()])?;
    let files: Vec<(PathBuf, u64)> = printed
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            let (_kind, path, bytes) = (f.next()?, f.next()?, f.next()?);
            Some((PathBuf::from(path), bytes.parse().ok()?))
        })
        .collect();
    let kinds: Vec<String> = files
        .iter()
        .map(|(p, _)| p.to_string_lossy().into_owned())
        .collect();
    let ok = [".json", ".json.gz", ".pt"]
        .iter()
        .all(|ext| kinds.iter().filter(|k| k.ends_with(ext)).count() == 1);
    if files.len() == 3 && ok {
        Ok(files)
    } else {
        Err(format!("twins printed {printed:?}"))
    }
}

/// `memviz summary FILE --json`: the JSON, or `exit N: stderr`.
fn summary(path: &Path) -> Result<serde_json::Value, String> {
    let o = memviz_output(&["summary", &path_str(path), "--json"]);
    if !o.status.success() {
        return Err(format!(
            "exit {}: {}",
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    serde_json::from_slice(&o.stdout).map_err(|e| format!("stdout is not JSON: {e}"))
}

/// Where two JSON values first differ (a JSON pointer and both values), for a short message.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> String {
    use serde_json::Value::{Array, Object};
    match (a, b) {
        (Object(x), Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) if w == v => {}
                    Some(w) => return first_difference(v, w, &format!("{at}/{k}")),
                    None => return format!("{at}/{k} only in the pickle's"),
                }
            }
            match y.keys().find(|k| !x.contains_key(*k)) {
                Some(k) => format!("{at}/{k} only in the twin's"),
                None => format!("{at}: equal"),
            }
        }
        (Array(x), Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find(|(_, (v, w))| v != w)
            .map(|(i, (v, w))| first_difference(v, w, &format!("{at}/{i}")))
            .unwrap_or_else(|| format!("{at}: equal")),
        _ => format!("{at}: pickle {a}, twin {b}"),
    }
}

/// Each source's twins read as the source: the mismatches, one line each.
fn check_twins(sources: &[PathBuf], label: &str) -> Vec<String> {
    let out = dir().join(label);
    std::fs::create_dir_all(&out).expect("mkdir");
    // The generator runs one file ahead of the reads (and no further: the channel holds one),
    // so at most two files' twins are on disk at a time.
    let (tx, rx) = sync_channel(1);
    let generator = {
        let (sources, out) = (sources.to_vec(), out.clone());
        std::thread::spawn(move || {
            for src in sources {
                let t = Instant::now();
                let r = twins(&src, &out);
                if tx.send((src, r, t.elapsed())).is_err() {
                    break;
                }
            }
        })
    };
    let mut failures = Vec::new();
    let (mut generating, mut reading) = (Duration::ZERO, Duration::ZERO);
    let (mut json_bytes, mut gz_bytes, mut pt_bytes) = (0u64, 0u64, 0u64);
    for (src, made, took) in rx {
        generating += took;
        let name = src.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        let files = match made {
            Ok(f) => f,
            Err(e) => {
                failures.push(format!("{name}: generate.py twins failed: {e}"));
                continue;
            }
        };
        let t = Instant::now();
        let want = summary(&src);
        for (twin, bytes) in &files {
            let ext = twin.to_string_lossy();
            if ext.ends_with(".json.gz") {
                gz_bytes += bytes;
            } else if ext.ends_with(".json") {
                json_bytes += bytes;
            } else {
                pt_bytes += bytes;
            }
            let twin_name = twin.file_name().map(|n| n.to_string_lossy().into_owned());
            let twin_name = twin_name.unwrap_or_default();
            match (&want, summary(twin)) {
                (Err(e), _) => failures.push(format!("{name}: the pickle itself fails: {e}")),
                (Ok(w), Ok(got)) if &got == w => {}
                (Ok(w), Ok(got)) => failures.push(format!(
                    "{twin_name}: summary differs from the pickle's at {}",
                    first_difference(w, &got, "")
                )),
                (Ok(_), Err(e)) => failures.push(format!("{twin_name}: {e}")),
            }
            let _ = std::fs::remove_file(twin);
        }
        reading += t.elapsed();
    }
    generator.join().expect("the generator thread");
    let _ = std::fs::remove_dir(&out);
    eprintln!(
        "{label}: {} files; twins: {:.1} MB of JSON, {:.1} MB gzip'd, {:.1} MB of torch.save zip; \
         generated in {:.1} s, summaries (pickle + 3 twins) in {:.1} s",
        sources.len(),
        json_bytes as f64 / 1e6,
        gz_bytes as f64 / 1e6,
        pt_bytes as f64 / 1e6,
        generating.as_secs_f64(),
        reading.as_secs_f64()
    );
    failures
}

fn assert_no_failures(failures: &[String], what: &str) {
    assert!(
        failures.is_empty(),
        "{} {what} twins do not read as their pickle:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_corpus_file_reads_the_same_as_json_gzip_json_and_torch_save() {
    let files = corpus_files();
    if files.is_empty() {
        return;
    }
    let failures = check_twins(&files, "corpus");
    assert_no_failures(&failures, "corpus");
}

#[test]
fn every_small_fixture_reads_the_same_as_json_gzip_json_and_torch_save() {
    // Shapes the corpus lacks: a bare segment list, an empty trace, integers of 2^63 and
    // 2^64 + 5 (JSON numbers past u64), the 2.0 `history` layout, an unknown action, tuples
    // (pool ids) that JSON turns into lists, a float setting. Not proto2_cxx.pickle: its point
    // is the C++ pickler's opcodes, which no twin keeps, and its JSON is 345 MB (19 s to write).
    let files: Vec<PathBuf> = SMALL_FIXTURES
        .iter()
        .filter(|f| **f != "proto2_cxx.pickle")
        .map(|f| fixture(f))
        .collect();
    let failures = check_twins(&files, "small");
    assert_no_failures(&failures, "small-fixture");
}

/// `generate.py KIND OUT` into this test's directory (the file name is the archive's name).
fn generated(kind: &str, name: &str) -> PathBuf {
    let out = dir().join(name);
    if let Err(e) = generate_py(&[kind.as_ref(), out.as_os_str()]) {
        panic!("generate.py {kind} failed: {e}");
    }
    out
}

/// `memviz summary FILE --json` fails with exit 2 and one line `memviz: FILE: …`: that line.
fn refusal(path: &Path) -> String {
    let p = path_str(path);
    let (code, out, err) = memviz(&["summary", &p, "--json"]);
    assert_eq!(
        code, 2,
        "exit {code} on {p}; stdout {out:?}; stderr {err:?}"
    );
    assert!(out.is_empty(), "stdout {out:?}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "not one line: {err:?}");
    assert!(lines[0].starts_with(&format!("memviz: {p}: ")), "{err}");
    lines[0].to_string()
}

#[test]
fn a_torch_save_checkpoint_is_refused_as_a_checkpoint() {
    // {'weight': torch.tensor([1., 2., 3., 4.])} as torch.save writes it: data.pkl rebuilds
    // the tensor through torch._utils._rebuild_tensor_v2 and a persistent id of data/0.
    let line = refusal(&generated("checkpoint", "checkpoint.pt"));
    assert!(
        line.contains("This is a model checkpoint (torch.save), not a memory snapshot"),
        "not the checkpoint message (data.pkl names torch._utils._rebuild_tensor_v2): {line}"
    );
}

#[test]
fn a_zip_of_other_files_says_what_it_holds() {
    let line = refusal(&generated("zipjunk", "junk.zip"));
    for entry in ["readme.txt", "results/metrics.csv"] {
        assert!(line.contains(entry), "{entry} not named: {line}");
    }
}
