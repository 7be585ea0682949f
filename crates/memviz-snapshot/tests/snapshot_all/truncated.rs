//! Files cut before STOP (a dump that crashed, a copy cut short): every cut either is a clear
//! error with a byte offset or opens what was read before it, with a warning; the partial
//! snapshot's segments and events are prefixes of the whole file's, and loading does not depend
//! on chunking. Fixtures come from `tests/fixtures/generate.py` (never committed).

use memviz_snapshot::{load_slice, LoadError, LoadErrorKind, Loader, Snapshot, TRUNCATED_WARNING};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `generate.py small` and `generate.py demo`, once per test binary, in a private directory.
fn fixtures() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = repo_root()
            .join("target/test-fixtures")
            .join(format!("snapshot-truncated-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let script = repo_root().join("tests/fixtures/generate.py");
        for args in [
            vec!["small".to_string(), dir.display().to_string()],
            vec![
                "demo".to_string(),
                dir.join("demo.pickle").display().to_string(),
            ],
        ] {
            let st = std::process::Command::new("python3")
                .arg(&script)
                .args(&args)
                .stdout(std::process::Stdio::null())
                .status()
                .expect("python3 runs");
            assert!(st.success(), "generate.py {args:?} failed");
        }
        dir
    })
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(name)).expect("fixture")
}

fn load_chunked(bytes: &[u8], chunk: usize) -> Result<Snapshot, LoadError> {
    let mut l = Loader::new();
    for c in bytes.chunks(chunk.max(1)) {
        l.push(c)?;
    }
    l.finish()
}

/// The model's dump split into segment lines (with their blocks) and each device's event lines.
struct Parts {
    segments: Vec<String>,
    traces: Vec<Vec<String>>,
}

fn parts(s: &Snapshot) -> Parts {
    let mut p = Parts {
        segments: Vec::new(),
        traces: Vec::new(),
    };
    let mut in_trace = false;
    for line in s.dump().lines() {
        if line.starts_with("trace ") {
            in_trace = true;
            p.traces.push(Vec::new());
        } else if !line.starts_with("  ") {
            in_trace = false;
            if line.starts_with("segment ") {
                p.segments.push(line.to_string());
            }
        } else if in_trace {
            if let Some(t) = p.traces.last_mut() {
                t.push(line.to_string());
            }
        } else {
            p.segments.push(line.to_string());
        }
    }
    p
}

/// What one cut gave: None for an error, else (segment lines, events).
fn check_cut(name: &str, full: &Parts, bytes: &[u8], cut: usize) -> Option<(usize, usize)> {
    let got = load_slice(&bytes[..cut]);
    match got {
        Err(e) => {
            let msg = e.to_string();
            let kind = if cut == 0 {
                LoadErrorKind::Empty
            } else {
                LoadErrorKind::Truncated
            };
            assert_eq!(e.kind, kind, "{name} cut {cut}: {msg}");
            if cut == 0 {
                assert!(msg.contains("empty"), "{name} cut {cut}: {msg}");
            } else if cut >= 4 {
                assert!(e.offset.is_some(), "{name} cut {cut}: no offset in {msg}");
                assert!(msg.contains("truncated"), "{name} cut {cut}: {msg}");
                assert!(msg.contains("nothing to show"), "{name} cut {cut}: {msg}");
            }
            None
        }
        Ok(snap) => {
            let w = snap
                .truncation_warning()
                .unwrap_or_else(|| panic!("{name} cut {cut}: loaded without a truncation warning"));
            assert_eq!(
                snap.warnings.first().map(String::as_str),
                Some(w),
                "the truncation warning comes first"
            );
            assert!(w.starts_with(TRUNCATED_WARNING), "{w}");
            assert!(
                w.contains(&format!("of {cut} bytes")),
                "{name} cut {cut}: the warning says how far the file goes: {w}"
            );
            let p = parts(&snap);
            assert!(
                full.segments.starts_with(&p.segments),
                "{name} cut {cut}: the segments are a prefix of the whole file's"
            );
            let events: usize = p.traces.iter().map(Vec::len).sum();
            if events > 0 {
                assert_eq!(
                    p.segments, full.segments,
                    "{name} cut {cut}: a trace is only read after every segment"
                );
            }
            assert!(p.traces.len() <= full.traces.len(), "{name} cut {cut}");
            let last = p.traces.len().saturating_sub(1);
            for (d, t) in p.traces.iter().enumerate() {
                let whole = &full.traces[d];
                assert!(
                    whole.starts_with(t),
                    "{name} cut {cut}: device {d}'s events are a prefix of the whole file's"
                );
                if d < last {
                    assert_eq!(
                        t.len(),
                        whole.len(),
                        "{name} cut {cut}: device {d} is whole"
                    );
                }
            }
            let shown = format!("{} segment", snap.segments.len());
            assert!(
                w.contains(&shown),
                "{name} cut {cut}: {w} should say {shown}"
            );
            Some((p.segments.len(), events))
        }
    }
}

/// Cuts `bytes` at `cuts` (ascending): no panic, errors or prefixes, more data never shows less.
fn check_cuts(name: &str, bytes: &[u8], cuts: &[usize]) -> (usize, usize) {
    let whole = load_slice(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(whole.truncation_warning().is_none());
    let full = parts(&whole);
    let (mut partial, mut errors) = (0, 0);
    let mut last = (0, 0);
    for &cut in cuts {
        match check_cut(name, &full, bytes, cut) {
            Some(got) => {
                partial += 1;
                assert!(
                    got.0 >= last.0 && got.1 >= last.1,
                    "{name} cut {cut}: {got:?} after {last:?}: a longer prefix shows no less"
                );
                last = got;
            }
            None => {
                errors += 1;
                assert_eq!(
                    last,
                    (0, 0),
                    "{name} cut {cut}: an error after a partial snapshot"
                );
            }
        }
    }
    (partial, errors)
}

/// `n` cuts spread over `len` bytes, plus the first 64 and the last `tail` cuts.
fn spread(len: usize, n: usize, tail: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = (0..n).map(|i| i * len / n).collect();
    cuts.extend((len.saturating_sub(tail))..len);
    cuts.extend(0..64.min(len));
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

#[test]
fn every_cut_of_the_small_fixtures_is_an_error_or_a_prefix() {
    for name in [
        "vector.pickle",
        "proto5.pickle",
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
    ] {
        let bytes = read(name);
        let cuts = spread(bytes.len(), 150, 24);
        let (partial, errors) = check_cuts(name, &bytes, &cuts);
        eprintln!(
            "{name}: {} cuts, {partial} partial, {errors} errors",
            cuts.len()
        );
        if name != "empty.pickle" {
            assert!(
                partial > 0 && errors > 0,
                "{name}: {partial} partial, {errors} errors"
            );
        }
    }
}

#[test]
fn the_demo_and_the_cxx_pickler_cut_anywhere() {
    for (name, n) in [("demo.pickle", 50), ("proto2_cxx.pickle", 12)] {
        let bytes = read(name);
        let (partial, errors) = check_cuts(name, &bytes, &spread(bytes.len(), n, 3));
        assert!(
            partial > 0 && errors > 0,
            "{name}: {partial} partial, {errors} errors"
        );
    }
}

#[test]
fn a_partial_snapshot_does_not_depend_on_chunking() {
    let bytes = read("multidevice.pickle");
    for cut in (0..bytes.len()).step_by(4999) {
        let whole = load_slice(&bytes[..cut]).map(|s| s.dump());
        for chunk in [1, 7, 4096] {
            let chunked = load_chunked(&bytes[..cut], chunk).map(|s| s.dump());
            assert_eq!(chunked, whole, "cut {cut}, chunks of {chunk}");
        }
    }
}

#[test]
fn a_cut_inside_a_later_device_keeps_the_earlier_ones_and_the_device_index() {
    // multidevice: traces on devices 0 and 2 of 4 trace lists; segments on devices 0, 1, 2.
    let bytes = read("multidevice.pickle");
    let whole = load_slice(&bytes).expect("whole");
    let (n0, n2) = (whole.traces[0].len(), whole.traces[2].len());
    assert!(n0 > 0 && n2 > 10 && whole.traces[1].is_empty());
    let full = parts(&whole);
    // The largest cut whose partial snapshot has some but not all of device 2's events.
    let mut found = None;
    for cut in (bytes.len() / 2..bytes.len()).rev().step_by(101) {
        if let Ok(s) = load_slice(&bytes[..cut]) {
            if s.traces.len() == 3 && (1..n2).contains(&s.traces[2].len()) {
                found = Some((cut, s));
                break;
            }
        }
    }
    let (cut, s) = found.expect("a cut inside device 2's trace");
    let p = parts(&s);
    assert_eq!(p.traces[0], full.traces[0], "device 0 whole");
    assert!(p.traces[1].is_empty(), "device 1 empty, as in the file");
    assert!(full.traces[2].starts_with(&p.traces[2]));
    assert_eq!(p.segments, full.segments);
    assert_eq!(
        s.default_device(),
        if s.traces[2].len() > n0 { 2 } else { 0 }
    );
    let w = s.truncation_warning().expect("warning");
    let shown = format!(
        "the {} segments and the {} trace events read before the cut",
        whole.segments.len(),
        n0 + s.traces[2].len()
    );
    assert!(
        w.contains(&shown) && w.contains("device 2's trace stops there"),
        "cut {cut}: {w}"
    );
}

#[test]
fn only_stop_missing_gives_the_whole_snapshot() {
    let bytes = read("demo.pickle");
    let whole = load_slice(&bytes).expect("whole");
    let cut = load_slice(&bytes[..bytes.len() - 1]).expect("all but STOP");
    assert_eq!(cut.warnings.len(), whole.warnings.len() + 1);
    let w = cut.truncation_warning().expect("warning");
    assert!(w.contains("everything but the final STOP opcode"), "{w}");
    let strip = |d: String| {
        d.lines()
            .filter(|l| !l.starts_with(&format!("warning {TRUNCATED_WARNING}")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(cut.dump()), strip(whole.dump()));
}

#[test]
fn cuts_before_anything_whole_are_errors_with_an_offset() {
    let bytes = read("demo.pickle");
    for cut in [1, 2, 3, 11, 20, 40, 200] {
        let e = load_slice(&bytes[..cut]).expect_err("nothing whole yet");
        let msg = e.to_string();
        assert_eq!(e.kind, LoadErrorKind::Truncated, "{cut}: {msg}");
        assert!(msg.contains("truncated"), "{cut}: {msg}");
        if cut >= 4 {
            assert!(
                e.offset.is_some() && msg.contains("nothing to show"),
                "{cut}: {msg}"
            );
        }
    }
    let e = load_slice(b"").expect_err("empty");
    assert_eq!(e.kind, LoadErrorKind::Empty);
    assert!(e.to_string().contains("empty (0 bytes)"), "{e}");
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).expect("gzip");
    gz.finish().expect("gzip")
}

#[test]
fn a_whole_gzip_of_a_cut_pickle_opens_but_a_cut_gzip_is_an_error() {
    let bytes = read("demo.pickle");
    let cut = &bytes[..bytes.len() * 3 / 4];
    let raw = load_slice(cut).expect("partial");
    let gz = load_chunked(&gzip(cut), 4096).expect("partial from gzip");
    let w = gz.truncation_warning().expect("warning");
    assert!(w.contains("decompressed pickle"), "{w}");
    assert_eq!(raw.traces[0].len(), gz.traces[0].len());

    let whole_gz = gzip(&bytes);
    let e = load_chunked(&whole_gz[..whole_gz.len() / 2], 4096).expect_err("cut gzip");
    let msg = e.to_string();
    assert_eq!(e.kind, LoadErrorKind::Truncated, "{msg}");
    assert!(
        msg.contains("gzip file is truncated") && msg.contains("gzip -dc"),
        "{msg}"
    );
    let mut corrupt = whole_gz.clone();
    for b in corrupt.iter_mut().skip(40).step_by(50).take(200) {
        *b ^= 0x5a;
    }
    let e = load_chunked(&corrupt, 4096).expect_err("corrupt gzip");
    assert_eq!(e.kind, LoadErrorKind::Malformed, "{e}");
    assert!(e.to_string().contains("corrupt"), "{e}");
}

#[test]
fn mutated_and_cut_files_never_panic() {
    // Byte flips, then a cut: the recovery walks whatever containers the flips left open.
    let bytes = read("multidevice.pickle");
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut opened, mut failed) = (0, 0);
    for _ in 0..400 {
        let mut b = bytes.clone();
        for _ in 0..(1 + next() % 3) {
            let i = (next() % b.len() as u64) as usize;
            b[i] = (next() & 0xff) as u8;
        }
        let cut = (next() % b.len() as u64) as usize;
        match load_slice(&b[..cut]) {
            // (A flip can make an early STOP: such a file loads whole, without the warning.)
            Ok(_) => opened += 1,
            Err(e) => {
                failed += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    eprintln!("400 mutated cuts: {opened} opened, {failed} errors");
}
