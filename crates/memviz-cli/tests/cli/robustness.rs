//! Broken input never panics: every prefix errors with an offset or opens what was read before
//! the cut (with a warning); byte flips error or load.

use crate::common;
use common::*;
use std::process::Command;

fn real_file(name: &str) -> Option<Vec<u8>> {
    let f = corpus_files()
        .into_iter()
        .find(|p| p.to_string_lossy().contains(name))?;
    std::fs::read(f).ok()
}

fn small_real_file() -> Option<Vec<u8>> {
    real_file("silmont2000")
}

/// Each device's event lines of a model dump.
fn trace_lines(s: &memviz_snapshot::Snapshot) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut in_trace = false;
    for line in s.dump().lines() {
        if line.starts_with("trace ") {
            in_trace = true;
            out.push(Vec::new());
        } else if !line.starts_with("  ") {
            in_trace = false;
        } else if in_trace {
            if let Some(t) = out.last_mut() {
                t.push(line.to_string());
            }
        }
    }
    out
}

#[test]
fn every_prefix_is_a_clear_error_or_what_was_read_before_the_cut() {
    // Every prefix of a 10 KB real file, and every 7th prefix of a 72 KB one with a trace. A
    // prefix with a whole segment or trace event opens (FORMAT.md §2: segments come first);
    // one without is an error with the offset. Once prefixes open, longer ones do too.
    let (Some(small), Some(larger)) = (real_file("nishi951"), small_real_file()) else {
        return;
    };
    for (file, step) in [(&small, 1), (&larger, 7)] {
        let whole = load_chunked(file, 4096).expect("the whole file loads");
        let whole_traces = trace_lines(&whole);
        let mut opened = 0;
        for n in (0..file.len()).step_by(step) {
            let bytes = &file[..n];
            match load_chunked(bytes, 4096) {
                Err(e) => {
                    assert_eq!(opened, 0, "prefix {n} fails after shorter ones opened: {e}");
                    let msg = e.to_string();
                    if n == 0 {
                        assert!(msg.contains("empty"), "{msg}");
                    } else if n >= 4 {
                        assert!(e.offset.is_some(), "prefix {n}: no offset in {msg}");
                        assert!(msg.contains("truncated"), "prefix {n}: {msg}");
                    }
                }
                Ok(s) => {
                    opened += 1;
                    let w = s.truncation_warning().unwrap_or_else(|| {
                        panic!("prefix {n} loaded without a truncation warning")
                    });
                    assert!(w.contains(&format!("of {n} bytes")), "prefix {n}: {w}");
                    assert!(s.segments.len() <= whole.segments.len());
                    for (d, t) in trace_lines(&s).iter().enumerate() {
                        assert!(
                            whole_traces[d].starts_with(t),
                            "prefix {n}: device {d}'s events are a prefix of the file's"
                        );
                    }
                }
            }
        }
        assert!(opened > 0, "some prefixes open");
    }
}

#[test]
fn random_byte_flips_never_panic() {
    let Some(bytes) = small_real_file() else {
        return;
    };
    // A fixed xorshift sequence: deterministic, no dependency.
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut errors = 0;
    for _ in 0..3000 {
        let mut b = bytes.clone();
        for _ in 0..(1 + next() % 4) {
            let i = (next() % b.len() as u64) as usize;
            b[i] = (next() & 0xff) as u8;
        }
        match load_chunked(&b, 1 + (next() % 5000) as usize) {
            Ok(s) => {
                let _ = memviz_analysis::summary::summarize(&s);
            }
            Err(e) => {
                errors += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    eprintln!("3000 mutants: {errors} errors, the rest loaded");
}

#[test]
fn bad_files_get_named() {
    let cases: &[(&[u8], &str)] = &[
        (b"", "empty"),
        (b"PK\x03\x04rest-of-zip", "zip archive"),
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (b"{\"loss\": 1}", "valid JSON, but not a memory snapshot"),
        (b"{\"segments\": [", "JSON"),
        (b"hello world, this is text\n", "text file"),
        (
            b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nq\x00.",
            "model checkpoint",
        ),
        (b"\x80\x04}\x94.", "not a memory snapshot"),
        (b"\x80\x04\x95", "truncated"),
        (b"\x1f\x8b\x08\x00garbage-gzip", "gzip"),
    ];
    for (bytes, needle) in cases {
        let e = load_chunked(bytes, 3)
            .err()
            .unwrap_or_else(|| panic!("{needle}: loaded"));
        assert!(e.to_string().contains(needle), "expected {needle:?} in {e}");
    }
}

#[test]
fn cli_exit_code_2_and_one_line_naming_the_file() {
    let dir = repo_root().join("target/test-bad");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let f = dir.join("checkpoint.pkl");
    std::fs::write(&f, b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nq\x00.").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_memviz"))
        .arg("summary")
        .arg(&f)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("checkpoint.pkl") && err.contains("at byte 2") && err.contains("GLOBAL"),
        "{err}"
    );
}

/// Found by `cargo fuzz` (target `snapshot`): the "not a pickle" message quoted however many bytes
/// had arrived, so it depended on chunking.
#[test]
fn fuzz_7de2f930_sniff_message_independent_of_chunking() {
    let bytes: &[u8] = &[0x00, 0x00, 0x00, 0x00, 0x2a];
    let a = load_chunked(bytes, 4).expect_err("error");
    let b = load_chunked(bytes, bytes.len()).expect_err("error");
    assert_eq!(a, b);
}

/// Found by `cargo fuzz` (target `unpickle`, crash-7760e009): containers that contain themselves
/// (through the memo) made recursive walks overflow the stack. A settings list holding itself
/// twice would also take 2^64 steps to convert; conversion is bounded.
#[test]
fn fuzz_7760e009_self_referential_containers_are_bounded() {
    // {'segments': [], 'device_traces': [], 'allocator_settings': l} where l = [l, l]
    let p = b"\x80\x04}\x94(\x8c\x08segments]\x8c\x0ddevice_traces]\x8c\x12allocator_settings]\x94h\x01h\x01\x86\x94\x85\x94}\x94u.";
    // Simpler and certain: build l = [l, l] with APPENDS of two memo gets.
    let q = b"\x80\x04}\x94(\x8c\x08segments]\x8c\x0ddevice_traces]\x8c\x12allocator_settings]\x94(h\x01h\x01eu.";
    let _ = load_chunked(p, 7);
    let s = load_chunked(q, 5).expect("loads");
    let text = s
        .allocator_settings
        .map(|v| v.to_string())
        .unwrap_or_default();
    assert!(
        text.contains("..."),
        "bounded: {}",
        &text[..text.len().min(200)]
    );
    let (v, atoms, tree) = memviz_pickle::tree::parse_tree(q).expect("parses");
    let mut out = String::new();
    memviz_pickle::tree::render(v, &atoms, &tree, &mut out);
    assert!(out.len() < 10_000_000);
}
