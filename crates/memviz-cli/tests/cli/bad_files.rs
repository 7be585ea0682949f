//! Every kind of bad file gets one clear line from the CLI (`memviz: FILE: …`, exit 2), naming
//! what the file is or how far it got; a snapshot cut before its end opens what was read, with
//! a warning on stderr (exit 0). The fixtures are made here (python3 or Rust), never committed.
//! The page's side of the same files: tests/web/page.test.mjs, 'hostile and broken files'.

use crate::common;
use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A private directory for this test binary's files.
fn dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = repo_root()
            .join("target/test-fixtures")
            .join(format!("bad-files-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    })
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir().join(name);
    std::fs::write(&p, bytes).expect("write fixture");
    p
}

/// A file written by `python3 -c SCRIPT PATH`.
fn python(name: &str, script: &str) -> PathBuf {
    let p = dir().join(name);
    python_c(script, &p, &format!("making {name}"));
    p
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).expect("gzip");
    gz.finish().expect("gzip")
}

/// The demo snapshot (about 1.9 MB), generated once.
fn demo() -> &'static [u8] {
    static DEMO: OnceLock<Vec<u8>> = OnceLock::new();
    DEMO.get_or_init(|| {
        let p = dir().join("demo.pickle");
        generate("demo", &p);
        std::fs::read(&p).expect("demo")
    })
}

/// `memviz summary FILE` must fail with exit code 2 and exactly one line on stderr that names
/// the file and contains every one of `needles`. Returns that line.
fn refused(path: &Path, needles: &[&str]) -> String {
    let file = path_str(path);
    let (code, out, err) = memviz(&["summary", &file]);
    assert_eq!(code, 2, "{file}: exit code; stderr: {err}");
    assert_eq!(out, "", "nothing on stdout");
    let line = err.trim_end();
    assert_eq!(line.lines().count(), 1, "one line: {err}");
    assert!(
        line.starts_with(&format!("memviz: {file}: ")),
        "names the file: {line}"
    );
    for n in needles {
        assert!(line.contains(n), "{n:?} in: {line}");
    }
    line.to_string()
}

#[test]
fn an_empty_file() {
    refused(
        &write("empty.pickle", b""),
        &["the file is empty (0 bytes)"],
    );
}

#[test]
fn a_truncated_pickle_with_nothing_whole_says_how_far_it_got() {
    // The demo cut inside its first segment: no whole record, so nothing to show.
    let cut = &demo()[..300];
    let line = refused(
        &write("cut-early.pickle", cut),
        &["at byte ", "truncated", "nothing to show", "interrupted"],
    );
    let at: u64 = line
        .split("at byte ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.parse().ok())
        .expect("a byte offset");
    assert!(at > 0 && at <= 300, "{line}");
    // Just the protocol header: the same kind of message.
    refused(
        &write("header-only.pickle", b"\x80\x04\x95"),
        &["truncated", "at byte"],
    );
}

#[test]
fn not_a_pickle_names_what_it_looks_like() {
    refused(
        &write("plot.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10"),
        &["a PNG image, not a memory snapshot", "89 50 4e 47"],
    );
    // JSON opens since issue 28; JSON that is no snapshot is named with its keys.
    let json = python(
        "metrics.json",
        "import json, sys; json.dump({'loss': 1.5, 'step': 3}, open(sys.argv[1], 'w'))",
    );
    refused(
        &json,
        &["valid JSON, but not a memory snapshot", "'loss', 'step'"],
    );
    refused(
        &write(
            "notes.txt",
            b"memory notes: the run used 40 GB at step 12\n",
        ),
        &["a text file, not a pickle"],
    );
}

#[test]
fn a_torch_save_zip_archive_is_named() {
    // torch.save writes a zip: archive/data.pkl, archive/data/0, …
    let zip = python(
        "model.pt",
        "import zipfile, sys\n\
         with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
         \x20   z.writestr('archive/data.pkl', b'\\x80\\x02}q\\x00.')\n\
         \x20   z.writestr('archive/version', '3')\n",
    );
    // Its data.pkl is read (issue 28): an empty dict is no snapshot, said of that entry.
    refused(
        &zip,
        &[
            "in the zip archive's archive/data.pkl",
            "not a memory snapshot",
            "found an empty dict",
        ],
    );
}

#[test]
fn a_checkpoint_pickle_with_global_or_stack_global_is_a_model_checkpoint() {
    // An OrderedDict state_dict: GLOBAL in protocol 2, STACK_GLOBAL in protocol 4.
    for (name, proto, opcode) in [
        ("state_dict_p2.pkl", 2, "GLOBAL"),
        ("state_dict_p4.pkl", 4, "STACK_GLOBAL"),
    ] {
        let p = python(
            name,
            &format!(
                "import pickle, sys, collections\n\
                 sd = collections.OrderedDict([('layer.weight', [1.0, 2.0]), ('layer.bias', [0.5])])\n\
                 pickle.dump({{'model': sd, 'epoch': 3}}, open(sys.argv[1], 'wb'), protocol={proto})\n"
            ),
        );
        refused(
            &p,
            &[
                opcode,
                "collections.OrderedDict",
                "This is a model checkpoint (torch.save), not a memory snapshot",
                "at byte ",
            ],
        );
    }
}

#[test]
fn a_valid_pickle_that_is_not_a_snapshot_names_the_expected_keys() {
    let p = python(
        "metrics.pkl",
        "import pickle, sys; pickle.dump({'loss': [0.5, 0.25], 'step': 10}, open(sys.argv[1], 'wb'), protocol=4)",
    );
    refused(
        &p,
        &[
            "a valid pickle, but not a memory snapshot",
            "'segments' and 'device_traces'",
            "found the keys 'loss', 'step'",
        ],
    );
    let p = python(
        "numbers.pkl",
        "import pickle, sys; pickle.dump([1, 2, 3], open(sys.argv[1], 'wb'), protocol=4)",
    );
    refused(
        &p,
        &[
            "not a memory snapshot",
            "a list of int",
            "'segments' and 'device_traces'",
        ],
    );
}

#[test]
fn corrupt_and_cut_gzip() {
    let gz = gzip(demo());
    let mut corrupt = gz.clone();
    for b in corrupt.iter_mut().skip(100).step_by(97).take(300) {
        *b ^= 0xa5;
    }
    refused(
        &write("corrupt.pickle.gz", &corrupt),
        &["gzip data is corrupt"],
    );
    refused(
        &write("cut.pickle.gz", &gz[..gz.len() / 2]),
        &["the gzip file is truncated", "gzip -dc"],
    );
}

#[test]
fn the_cli_has_no_size_limit() {
    // The page refuses a file whose trace needs more memory than a browser gives it, and
    // points here: the CLI opens any size (the page test refuses a file under a lowered
    // budget, ?mem_budget_mb=; here a file opens whatever its size).
    let p = write("demo.pickle", demo());
    assert!(demo().len() > 1 << 20);
    let (code, out, err) = memviz(&["summary", &path_str(&p)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pickle protocol 4"), "{out}");
    assert_eq!(err, "");
}

#[test]
fn a_snapshot_cut_mid_trace_opens_with_a_warning_on_stderr() {
    let cut = &demo()[..demo().len() * 3 / 5];
    let p = write("crashed-dump.pickle", cut);
    let file = path_str(&p);
    let (code, out, err) = memviz(&["summary", &file]);
    assert_eq!(code, 0, "{err}");
    let line = err.trim_end();
    assert_eq!(line.lines().count(), 1, "{err}");
    assert!(
        line.starts_with(&format!(
            "memviz: warning: {file}: truncated file: the pickle ends after "
        )),
        "{line}"
    );
    assert!(
        line.contains(&format!("of {} bytes without its STOP opcode", cut.len()))
            && line.contains("trace events read before the cut"),
        "{line}"
    );
    assert!(
        out.contains("warning(s):") && out.contains("truncated file:"),
        "{out}"
    );
    // --json: the warning comes first; the events are the first ones of the whole file.
    let (code, out, _) = memviz(&["summary", &file, "--json"]);
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).expect("json");
    let w = j["warnings"][0].as_str().expect("a warning");
    assert!(w.starts_with("truncated file:"), "{w}");
    let whole = write("whole-demo.pickle", demo());
    let (_, whole_out, _) = memviz(&["summary", &path_str(&whole), "--json"]);
    let whole: serde_json::Value = serde_json::from_str(&whole_out).expect("json");
    let entries = |v: &serde_json::Value| v["devices"][0]["trace_entries"].as_u64().unwrap_or(0);
    assert!(entries(&j) > 0 && entries(&j) < entries(&whole), "{out}");
    assert_eq!(j["devices"][0]["segments"], whole["devices"][0]["segments"]);
    // Other commands open it too (state after the last event read).
    let (code, _, err) = memviz(&["state", &file, "--device", "0", "--event", "-1", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("memviz: warning:"), "{err}");
}
