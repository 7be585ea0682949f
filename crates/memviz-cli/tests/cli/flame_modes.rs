//! `memviz folded --frames my-code|python|all` on the real corpus: every mode has the same
//! total, my code shows only the user's frames (library calls inside `[package]` nodes), the
//! default follows the file, `--all-frames` is `--frames all`.

use crate::common;
use common::*;
use memviz_analysis::flame::{is_collapsed, FrameMode};
use memviz_analysis::site::{frame_kind, FrameKind, UserCode};

/// The stacks of `memviz folded FILE --json ARGS…`: (frames root first, bytes), and the
/// `frames` field.
fn stacks(file: &str, args: &[&str]) -> (Vec<(Vec<String>, u64)>, String, u64) {
    let mut all = vec!["folded", file, "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = memviz(&all);
    assert_eq!(code, 0, "{file} {args:?}: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let list = v["stacks"]
        .as_array()
        .expect("stacks")
        .iter()
        .map(|s| {
            let frames = s["frames"]
                .as_array()
                .expect("frames")
                .iter()
                .map(|f| f.as_str().expect("a frame").to_string())
                .collect();
            (frames, s["bytes"].as_u64().expect("bytes"))
        })
        .collect();
    let mode = v["frames"].as_str().unwrap_or("").to_string();
    (list, mode, v["total_bytes"].as_u64().expect("total"))
}

/// The file and name of a `file:line:name` frame: split at the first `:<digits>:`.
fn file_and_name(frame: &str) -> Option<(&str, &str)> {
    let b = frame.as_bytes();
    let mut i = 0;
    while let Some(off) = frame.get(i..).and_then(|s| s.find(':')) {
        let start = i + off + 1;
        let digits = b
            .get(start..)
            .map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count());
        if digits > 0 && b.get(start + digits) == Some(&b':') {
            return Some((frame.get(..start - 1)?, frame.get(start + digits + 1..)?));
        }
        i = start;
    }
    None
}

fn kind(frame: &str) -> Option<FrameKind> {
    let (file, name) = file_and_name(frame)?;
    Some(frame_kind(file, name, &UserCode::default()))
}

#[test]
fn every_mode_has_the_same_total_and_my_code_is_the_users() {
    let files = corpus_files();
    if files.is_empty() {
        eprintln!("no corpus at ../shared/corpus/real: skipped");
        return;
    }
    let mut with_user = 0;
    for p in &files {
        let f = path_str(p);
        let snap = load_path(p);
        let has_user = memviz_analysis::flame::has_user_frames(&snap, &UserCode::default());
        let (mine, mode, total) = stacks(&f, &["--frames", "my-code"]);
        let (py, _, _) = stacks(&f, &["--frames", "python"]);
        let (all, all_mode, _) = stacks(&f, &["--frames", "all"]);
        let (_, default_mode, _) = stacks(&f, &[]);
        assert_eq!(mode, "my_code");
        assert_eq!(all_mode, "all");
        let want = if has_user { "my_code" } else { "python" };
        assert_eq!(default_mode, want, "{f}: the default");
        let sum = |s: &[(Vec<String>, u64)]| s.iter().map(|x| x.1).sum::<u64>();
        assert_eq!(sum(&mine), total, "{f}: my code");
        assert_eq!(sum(&py), total, "{f}: python");
        assert_eq!(sum(&all), total, "{f}: all");
        if has_user {
            with_user += 1;
        }
        for (frames, _) in &mine {
            let plain: Vec<&String> = frames.iter().filter(|x| !is_collapsed(x)).collect();
            let users = plain
                .iter()
                .filter(|x| kind(x) == Some(FrameKind::User))
                .count();
            if users > 0 {
                // A stack with the user's frames: nothing else but collapsed nodes.
                for x in &plain {
                    assert_eq!(kind(x), Some(FrameKind::User), "{f}: {x} in {frames:?}");
                    assert!(
                        !x.contains("site-packages") && !x.contains("at::"),
                        "{f}: {x}"
                    );
                }
            } else if frames.len() > 1 {
                // No user frame: its Python frames.
                for x in frames {
                    let k = kind(x);
                    assert!(k.is_some_and(FrameKind::is_python), "{f}: {x}");
                }
            }
        }
        // Python: Python frames only, or one node naming the site.
        for (frames, _) in &py {
            if frames.len() > 1 {
                for x in frames {
                    assert!(kind(x).is_some_and(FrameKind::is_python), "{f}: {x}");
                }
            }
        }
    }
    assert!(with_user > 0, "no corpus file has frames of user code");
}

#[test]
fn my_code_on_the_constructor_sun_file() {
    let p = repo_root()
        .join("../shared/corpus/real/Constructor-Sun__code_location__memory_snapshot.pickle");
    if !p.exists() {
        eprintln!("{} missing: skipped", p.display());
        return;
    }
    let f = path_str(&p);
    let (code, mine, err) = memviz(&["folded", &f, "--frames", "my-code"]);
    assert_eq!(code, 0, "{err}");
    // The user's lines, each library call below them one labelled node.
    assert!(
        mine.lines()
            .any(|l| l.contains("models.py:174:update_nodes;[")),
        "{mine}"
    );
    assert!(
        mine.contains("[torch] nn/functional.py:1701:relu"),
        "{mine}"
    );
    let (_, default, _) = memviz(&["folded", &f]);
    assert_eq!(default, mine, "the default is my code");
    let (_, all, _) = memviz(&["folded", &f, "--frames", "all"]);
    let (_, alias, _) = memviz(&["folded", &f, "--all-frames"]);
    assert_eq!(all, alias, "--all-frames is --frames all");
    assert!(all.contains("site-packages") && all.lines().count() >= mine.lines().count());
    let (_, py, _) = memviz(&["folded", &f, "--frames", "python"]);
    assert!(!py.contains("at::native"), "python drops C++ frames");
    assert_eq!(
        FrameMode::parse("my-code").map(FrameMode::as_str),
        Some("my_code")
    );
    // --user-code moves transformers into the user's code: its frames show.
    let (code, mine_tf, err) = memviz(&[
        "folded",
        &f,
        "--frames",
        "my-code",
        "--user-code",
        "transformers",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(mine_tf.contains("site-packages/transformers/"), "{mine_tf}");
    assert!(!mine.lines().any(|l| l
        .split(';')
        .any(|x| !is_collapsed(x) && x.contains("site-packages/transformers/"))));
}

#[test]
fn bad_frames_values_fail_in_one_line() {
    let p = fixture("vector.pickle");
    let f = path_str(&p);
    let (code, _, err) = memviz(&["folded", &f, "--frames", "cpp"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("--frames takes my-code, python or all"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, _, err) = memviz(&["folded", &f, "--frames", "all", "--all-frames"]);
    assert_ne!(code, 0, "--frames conflicts with --all-frames: {err}");
    let (code, _, err) = memviz(&["folded", &f, "--user-code", "/(/"]);
    assert_ne!(code, 0);
    assert!(err.contains("not a valid regex"), "{err}");
}
