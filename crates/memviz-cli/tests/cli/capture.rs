//! The library's in-process runs (the Python API's path): `capture` on snapshots in memory prints
//! what the binary prints for the same file, errors are the binary's message, and nothing of a
//! run (names, captured output) leaks into the next.

use crate::common;
use common::{fixture, memviz, path_str};
use memviz_cli::{capture, load_bytes, open, Named};

fn named(name: &str, bytes: &[u8]) -> Named {
    let (snap, warnings) = load_bytes(name, bytes).expect("loads");
    assert!(warnings.is_empty(), "{warnings:?}");
    Named {
        name: name.to_string(),
        snap,
        raw: Some(bytes.into()),
    }
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_snapshot_in_memory_answers_as_the_binary_does_for_its_file() {
    let path = path_str(&fixture("multidevice.pickle"));
    let bytes = std::fs::read(&path).expect("fixture");
    let mem = named("<bytes>", &bytes);
    for cmd in [
        vec!["summary", "X", "--json"],
        vec!["folded", "X", "--json"],
        vec!["lines", "X", "--json"],
        vec!["leaks", "X", "--json"],
        vec!["oom", "X", "--json"],
        vec!["state", "X", "--event", "3"],
        vec!["diff", "X", "X", "--json"],
    ] {
        let ours: Vec<&str> = cmd
            .iter()
            .map(|a| if *a == "X" { "<bytes>" } else { *a })
            .collect();
        let theirs: Vec<&str> = cmd
            .iter()
            .map(|a| if *a == "X" { path.as_str() } else { *a })
            .collect();
        let got = capture(&args(&ours), std::slice::from_ref(&mem)).expect("runs");
        let (code, want, _) = memviz(&theirs);
        assert_eq!(code, 0, "{theirs:?}");
        assert_eq!(
            String::from_utf8(got.stdout).expect("utf-8"),
            want,
            "{cmd:?}"
        );
    }
    // Opened from its path, the same.
    let (snap, _) = open(&path).expect("opens");
    let file = Named {
        name: path.clone(),
        snap,
        raw: None,
    };
    let got = capture(&args(&["summary", &path, "--json"]), &[file]).expect("runs");
    assert_eq!(
        String::from_utf8(got.stdout).expect("utf-8"),
        memviz(&["summary", &path, "--json"]).1
    );
}

#[test]
fn errors_are_the_binarys_message_and_runs_do_not_leak_into_each_other() {
    let path = path_str(&fixture("multidevice.pickle"));
    let mem = named("<bytes>", &std::fs::read(&path).expect("fixture"));
    let err = capture(&args(&["state", "<bytes>", "--event", "999999"]), &[mem])
        .expect_err("out of range");
    assert_eq!(err.kind, memviz_cli::ErrorKind::BadArgument);
    let (code, _, stderr) = memviz(&["state", &path, "--event", "999999"]);
    assert_eq!(code, 2);
    assert_eq!(
        format!("memviz: {}\n", err.message.replace("<bytes>", &path)),
        stderr
    );
    // The name is forgotten after the run: now it is a (missing) file.
    let err = capture(&args(&["summary", "<bytes>", "--json"]), &[]).expect_err("no such file");
    assert!(err.message.starts_with("<bytes>: cannot open"), "{err}");
    assert_eq!(err.kind, memviz_cli::ErrorKind::Io);
    let err = load_bytes("<x>", b"garbage").expect_err("not a pickle");
    assert!(err.message.starts_with("<x>: "), "{err}");
    assert_eq!(err.kind, memviz_cli::ErrorKind::NotASnapshot);
}

#[test]
fn typed_answers_serialise_to_what_the_binary_prints() {
    let path = path_str(&fixture("multidevice.pickle"));
    let oom = path_str(&fixture("expandable.pickle"));
    for cmd in [
        vec!["summary", &path, "--json"],
        vec!["folded", &path, "--json"],
        vec!["folded", &path, "--json", "--at", "3"],
        vec!["folded", &path, "--json", "--range", "0:5"],
        vec!["lines", &path, "--json"],
        vec!["leaks", &path, "--json"],
        vec!["oom", &oom, "--json"],
        vec!["state", &path, "--event", "3"],
        vec!["diff", &path, &oom, "--json"],
        vec!["ranks", &path, &oom, "--json"],
    ] {
        let (r, warnings) = memviz_cli::answer::answer(&args(&cmd), &[]);
        assert!(warnings.is_empty(), "{warnings:?}");
        let got = serde_json::to_value(r.expect("answers")).expect("serialises");
        let (code, want, _) = memviz(&cmd);
        assert_eq!(code, 0, "{cmd:?}");
        let want: serde_json::Value = serde_json::from_str(&want).expect("JSON");
        assert_eq!(got, want, "{cmd:?}");
    }
    // A command that prints text has no answer; errors keep their kind.
    let (r, _) = memviz_cli::answer::answer(&args(&["stats", &path]), &[]);
    assert_eq!(
        r.expect_err("text").kind,
        memviz_cli::ErrorKind::BadArgument
    );
    let (r, _) = memviz_cli::answer::answer(&args(&["lines", &path, "--device", "9"]), &[]);
    let e = r.expect_err("no device 9");
    assert_eq!(e.kind, memviz_cli::ErrorKind::UnknownDevice);
    assert!(e.message.contains("no device 9"), "{e}");
}
