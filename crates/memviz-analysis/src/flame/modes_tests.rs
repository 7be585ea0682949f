//! The frame modes on hand-made stacks: labels, merging, fallbacks, equal totals.

use super::*;
use crate::flame::{entries_by_frames, total, FoldedEntry};
use crate::test_util::snapshot_of_stacks;
use memviz_snapshot::Snapshot;
use rustc_hash::FxHashMap;

const SP: &str = "/env/lib/python3.11/site-packages";
const MALLOC: &str = "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)";
const TRAIN: &str = "/home/u/train.py:40:main";
const MODEL: &str = "/home/u/model.py:12:forward";
const CALL: &str = "[torch] nn/modules/module.py:1747:_call_impl";
const RELU: &str = "[torch] nn/functional.py:1701:relu";

/// A snapshot whose trace has one alloc of `512 · (i + 1)` bytes per stack (innermost first).
fn snap_of(stacks: &[Vec<(String, i128, &str)>]) -> Snapshot {
    snapshot_of_stacks(stacks, |i| 512 * (i as i128 + 1))
}

fn f(file: &str, line: i128, name: &'static str) -> (String, i128, &'static str) {
    (file.to_string(), line, name)
}

/// The user's forward reaching relu through torch (stack 0), the same call through other
/// internals (1), autograd's backward thread (2), a worker thread with no user frame (3), an
/// empty stack (4), the user's line calling transformers (5), the user's line calling C++
/// directly (6).
fn stacks() -> Vec<Vec<(String, i128, &'static str)>> {
    let functional = format!("{SP}/torch/nn/functional.py");
    let module = format!("{SP}/torch/nn/modules/module.py");
    let user_part = |v: &mut Vec<(String, i128, &'static str)>| {
        v.extend([
            f("/home/u/model.py", 12, "forward"),
            f(&module, 1747, "_call_impl"),
            f("Objects/call.c", 0, "slot_tp_call"),
            f("/home/u/train.py", 40, "main"),
            f("<frozen runpy>", 88, "_run_code"),
            f("??", 0, "_start"),
        ]);
    };
    let mut s0 = vec![
        f("??", 0, MALLOC),
        f("??", 0, "at::native::relu(at::Tensor const&)"),
        f(&functional, 1701, "relu"),
        f("Python/ceval.c", 0, "_PyEval_EvalFrameDefault"),
    ];
    user_part(&mut s0);
    let mut s1 = vec![
        f("??", 0, MALLOC),
        f("??", 0, "at::_ops::relu::call(at::Tensor const&)"),
        f(&functional, 1701, "relu"),
        f(
            &format!("{SP}/torch/nn/modules/activation.py"),
            101,
            "forward",
        ),
    ];
    user_part(&mut s1);
    let s2 = vec![
        f("??", 0, MALLOC),
        f("??", 0, "at::native::mm(at::Tensor const&, at::Tensor const&)"),
        f("??", 0, "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)"),
        f("??", 0, "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
    ];
    let s3 = vec![
        f("??", 0, MALLOC),
        f(&format!("{SP}/torch/nn/modules/linear.py"), 125, "forward"),
        f("/usr/lib/python3.11/threading.py", 982, "run"),
    ];
    let s5 = vec![
        f("??", 0, MALLOC),
        f(&format!("{SP}/torch/nn/modules/linear.py"), 125, "forward"),
        f(
            &format!("{SP}/transformers/models/llama/modeling_llama.py"),
            216,
            "forward",
        ),
        f("/home/u/train.py", 88, "main"),
    ];
    let s6 = vec![
        f("??", 0, MALLOC),
        f("??", 0, "at::detail::empty_cuda(c10::ArrayRef<long>)"),
        f(
            "??",
            0,
            "at::(anonymous namespace)::mm_out(at::Tensor const&)",
        ),
        f("Objects/call.c", 0, "PyObject_Call"),
        f("/home/u/train.py", 50, "main"),
    ];
    vec![s0, s1, s2, s3, Vec::new(), s5, s6]
}

fn values(snap: &Snapshot) -> FxHashMap<StackId, u64> {
    let mut out = FxHashMap::default();
    let Some(t) = snap.trace(0) else {
        return out;
    };
    for i in 0..t.len() {
        if let Some(st) = t.stack(i) {
            *out.entry(st).or_insert(0) += 512 * (i as u64 + 1);
        }
    }
    out
}

fn fold(snap: &Snapshot, mode: FrameMode, user: &UserCode) -> Vec<FoldedEntry> {
    entries_by_frames(snap, values(snap), mode, user)
}

fn frames_of(snap: &Snapshot, i: usize, mode: FrameMode, user: &UserCode) -> Vec<String> {
    let st = snap.trace(0).and_then(|t| t.stack(i)).expect("a stack");
    let mut sites = SiteCache::new(snap, user.clone());
    stack_frames(snap, st, mode, &mut sites)
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn my_code_collapses_library_runs_and_merges() {
    let snap = snap_of(&stacks());
    let u = UserCode::default();
    let mine = |i| frames_of(&snap, i, FrameMode::MyCode, &u);
    assert_eq!(mine(0), strs(&[TRAIN, CALL, MODEL, RELU]));
    // Other internals, the same library line reached: the same path, so one node.
    assert_eq!(mine(1), mine(0));
    // No user frame: the Python frames.
    assert_eq!(
        mine(3),
        strs(&[
            "/usr/lib/python3.11/threading.py:982:run",
            &format!("{SP}/torch/nn/modules/linear.py:125:forward"),
        ])
    );
    // Third-party code before torch's: the line the site's detail names.
    assert_eq!(
        mine(5),
        strs(&[
            "/home/u/train.py:88:main",
            "[transformers] models/llama/modeling_llama.py:216:forward",
        ])
    );
    // C++ only below the user's line: the innermost function that is not plumbing, without
    // its parameters.
    assert_eq!(
        mine(6),
        strs(&[
            "/home/u/train.py:50:main",
            "[native] at::(anonymous namespace)::mm_out",
        ])
    );
    // Neither site-packages nor a C++ symbol outside a collapsed label.
    for e in fold(&snap, FrameMode::MyCode, &u) {
        for fr in e.0.iter().filter(|f| !is_collapsed(f)) {
            if fr.contains("threading.py") || fr.contains("linear.py") {
                continue; // stack 3: no user frame, shown as Python
            }
            assert!(
                !fr.contains("site-packages") && !fr.contains("at::"),
                "{fr}"
            );
        }
    }
    // Stacks 0 and 1 merged: 512 + 1024 bytes on one path.
    let e = fold(&snap, FrameMode::MyCode, &u);
    let merged = e.iter().find(|x| x.0 == strs(&[TRAIN, CALL, MODEL, RELU]));
    assert_eq!(merged.map(|x| x.1), Some(512 + 1024));
}

#[test]
fn python_mode_and_all_frames() {
    let snap = snap_of(&stacks());
    let u = UserCode::default();
    let py = frames_of(&snap, 0, FrameMode::Python, &u);
    assert_eq!(
        py,
        strs(&[
            "<frozen runpy>:88:_run_code",
            TRAIN,
            &format!("{SP}/torch/nn/modules/module.py:1747:_call_impl"),
            MODEL,
            &format!("{SP}/torch/nn/functional.py:1701:relu"),
        ])
    );
    // All: every frame, root first.
    let all = frames_of(&snap, 0, FrameMode::All, &u);
    assert_eq!(all.len(), 10);
    assert_eq!(all.first().map(String::as_str), Some("??:0:_start"));
    assert!(all.last().is_some_and(|l| l.ends_with(MALLOC)));
    // No Python frame: one node naming the site, in every mode but All.
    for mode in [FrameMode::Python, FrameMode::MyCode] {
        assert_eq!(frames_of(&snap, 2, mode, &u), strs(&["backward of mm"]));
        assert_eq!(frames_of(&snap, 4, mode, &u), strs(&[NO_FRAMES]));
    }
    assert_eq!(frames_of(&snap, 2, FrameMode::All, &u).len(), 4);
    assert_eq!(frames_of(&snap, 4, FrameMode::All, &u), strs(&[NO_FRAMES]));
}

#[test]
fn every_mode_has_the_same_total() {
    let snap = snap_of(&stacks());
    for user in [
        UserCode::default(),
        UserCode::parse("transformers").expect("parse"),
    ] {
        let totals: Vec<u64> = [FrameMode::MyCode, FrameMode::Python, FrameMode::All]
            .iter()
            .map(|&m| total(&fold(&snap, m, &user)))
            .collect();
        let want: u64 = (1..=7).map(|i| 512 * i).sum();
        assert_eq!(totals, vec![want; 3]);
    }
}

#[test]
fn user_code_moves_a_library_into_my_code() {
    let snap = snap_of(&stacks());
    let u = UserCode::parse("transformers").expect("parse");
    assert_eq!(
        frames_of(&snap, 5, FrameMode::MyCode, &u),
        strs(&[
            "/home/u/train.py:88:main",
            &format!("{SP}/transformers/models/llama/modeling_llama.py:216:forward"),
            "[torch] nn/modules/linear.py:125:forward",
        ])
    );
}

#[test]
fn default_mode_and_names() {
    let snap = snap_of(&stacks());
    assert!(has_user_frames(&snap, &UserCode::default()));
    assert_eq!(
        FrameMode::default_for(&snap, &UserCode::default()),
        FrameMode::MyCode
    );
    let lib_only = snap_of(&[stacks().swap_remove(3)]);
    assert_eq!(
        FrameMode::default_for(&lib_only, &UserCode::default()),
        FrameMode::Python
    );
    assert_eq!(
        FrameMode::default_for(&lib_only, &UserCode::parse("/threading/").expect("parse")),
        FrameMode::MyCode
    );
    for (m, s) in [
        (FrameMode::MyCode, "my_code"),
        (FrameMode::Python, "python"),
        (FrameMode::All, "all"),
    ] {
        assert_eq!(m.as_str(), s);
        assert_eq!(serde_json::to_string(&m).expect("json"), format!("\"{s}\""));
        assert_eq!(
            serde_json::from_str::<FrameMode>(&format!("\"{s}\"")).ok(),
            Some(m)
        );
        assert_eq!(FrameMode::parse(s), Some(m));
    }
    assert_eq!(FrameMode::parse("my-code"), Some(FrameMode::MyCode));
    assert_eq!(FrameMode::parse("cpp"), None);
    assert!(is_collapsed(RELU) && is_collapsed("[native]"));
    assert!(!is_collapsed("[x/y] a") && !is_collapsed("/a/b.py:1:f") && !is_collapsed("[]"));
    assert_eq!(crate::site::native_label("a::b(int)"), "a::b");
    assert_eq!(crate::site::native_label("(weird)"), "(weird)");
}
