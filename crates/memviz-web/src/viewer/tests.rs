//! `ViewerCore`'s tests: files opened, refused and cut, memory budgets, and the requests
//! answered through the one dispatch.

use super::{Memory, ViewerCore};

/// The demo snapshot, generated once per test binary by the project's own generator (the
/// tests run in parallel: one writer, then every test reads the finished bytes).
fn demo_bytes() -> Vec<u8> {
    static DEMO: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    DEMO.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let dir = root.join("target/test-fixtures/memviz-web");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join(format!("demo-{}.pickle", std::process::id()));
        let status = std::process::Command::new("python3")
            .arg(root.join("tests/fixtures/generate.py"))
            .arg("demo")
            .arg(&path)
            .status()
            .expect("python3 runs");
        assert!(status.success(), "generate.py demo failed");
        std::fs::read(&path).expect("demo written")
    })
    .clone()
}

#[test]
fn a_bad_file_keeps_the_good_one() {
    let mut core = ViewerCore::new();
    assert_eq!(
        core.push(b"x").map_err(|e| e.kind),
        Err(super::OpenErrorKind::NoFile),
        "push before begin"
    );
    let good = demo_bytes();
    core.begin("good.pickle", good.len() as u64);
    for chunk in good.chunks(1000) {
        core.push(chunk).expect("good chunk");
    }
    core.finish().expect("good file");
    let summary = core.summary_json();
    assert!(summary.contains("\"devices\""));
    assert_eq!(core.bytes_read(), good.len() as u64);
    assert!(!core.summary_table().is_empty());

    core.begin("bad.pickle", 0);
    let err = core
        .push(b"definitely not a pickle")
        .and_then(|()| core.finish().map(|_| ()))
        .expect_err("garbage");
    assert!(!err.message.is_empty());
    assert_eq!(err.kind.name(), "not_pickle", "{err}");
    let panel = core.panel(5);
    assert_eq!(panel.files, ["good.pickle"]);
    assert!(panel.ticks.is_some_and(|t| !t.y.is_empty()));

    core.begin("good.pickle", 0);
    core.push(&good).expect("second copy");
    core.finish().expect("second copy opens");
    let panel = core.panel(5);
    assert_eq!(panel.file, Some(1));
    assert_eq!(panel.files, ["good.pickle", "good.pickle (2)"]);
    assert_eq!(core.summary_json(), summary);
    assert!(core.app().is_some_and(|a| a.select_file(0)));
    assert_eq!(core.summary_json(), summary);
}

/// `bytes` gzip-compressed (by python3, as the fixtures are made).
fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import gzip, sys; sys.stdout.buffer.write(gzip.compress(sys.stdin.buffer.read(), 9))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input).expect("write"));
    let out = child.wait_with_output().expect("gzip output");
    writer.join().expect("writer");
    assert!(out.status.success());
    out.stdout
}

/// A memory probe for tests: the bytes set in `FAKE_USED` (per thread).
fn fake_used() -> u64 {
    FAKE_USED.with(std::cell::Cell::get)
}
thread_local! {
    static FAKE_USED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[test]
fn files_are_refused_by_projected_memory_not_by_size() {
    use crate::memory::OPEN_BYTES_PER_ENTRY;
    let demo = demo_bytes();
    let entries = memviz_snapshot::load_slice(&demo)
        .expect("demo")
        .traces
        .iter()
        .map(|t| t.len() as u64)
        .sum::<u64>();
    let mut core = ViewerCore::with_memory(Memory {
        used: fake_used,
        budget: 1 << 30,
    });
    // A file announced as 3 GiB: too little of it read to tell, nothing refused.
    FAKE_USED.with(|u| u.set(100 << 20));
    core.begin("huge.pickle", 3 << 30);
    for c in demo.chunks(1 << 16) {
        core.push(c).expect("too little read to tell");
    }
    assert!(!core.refused_memory());
    // Read whole, its entries need more than is left: refused with the estimate and the
    // CLI.
    let need = (100 << 20) + entries * OPEN_BYTES_PER_ENTRY;
    core.set_memory_budget(need - 1);
    core.begin("big.pickle", demo.len() as u64);
    let err = core.push(&demo).expect_err("projected over the budget");
    assert!(core.refused_memory());
    assert_eq!(err.kind.name(), "too_big");
    assert!(
        err.message.contains("needs about") && err.message.contains("memviz summary FILE"),
        "{err}"
    );
    assert!(core.app_ref().is_none(), "nothing opened");
    // With a byte more it opens.
    core.set_memory_budget(need);
    core.begin("big.pickle", demo.len() as u64);
    core.push(&demo).expect("fits exactly");
    core.finish().expect("opens");
    assert!(!core.refused_memory());
    // A budget override only lowers the budget; 0 restores it.
    core.set_memory_budget(u64::MAX);
    assert_eq!(core.memory().budget, crate::memory::PAGE_BUDGET);
    core.set_memory_budget(0);
    assert_eq!(core.memory().budget, crate::memory::PAGE_BUDGET);
    // Of unknown size: what is read so far.
    FAKE_USED.with(|u| u.set(0));
    core.set_memory_budget(1 << 20);
    core.begin("demo.pickle", 0);
    let err = core.push(&demo).expect_err("over 1 MiB");
    assert!(err.message.contains("needs about"), "{err}");
    // Within the budget, a file of any size opens, gzip-compressed too.
    core.set_memory_budget(0);
    core.begin("demo.pickle", 0);
    core.push(&demo).expect("demo fits");
    core.finish().expect("opens");
    let gz = gzip(&demo);
    core.begin("demo.pickle.gz", gz.len() as u64);
    core.push(&gz).expect("the gzip fits");
    core.finish().expect("opens");
    assert!(!core.refused_memory());
    assert_eq!(core.notice(), "");
}

#[test]
fn a_cut_file_opens_with_a_notice() {
    let demo = demo_bytes();
    let mut core = ViewerCore::new();
    core.begin("cut.pickle", 0);
    core.push(&demo[..demo.len() * 3 / 5]).expect("prefix");
    core.finish().expect("a partial snapshot opens");
    let notice = core.notice();
    assert!(
        notice.starts_with("this file is incomplete (truncated): the pickle ends after")
            && notice.contains("trace events read before the cut"),
        "{notice}"
    );
    assert_eq!(core.panel(3).notice, notice);
    // A whole file after it: its own notice is empty; back on the cut file, it returns.
    core.begin("whole.pickle", 0);
    core.push(&demo).expect("whole");
    core.finish().expect("whole opens");
    assert_eq!(core.notice(), "");
    assert!(core.app().is_some_and(|a| a.select_file(0)));
    assert_eq!(core.notice(), notice);
}

/// The shell's requests, as JSON text, through the one dispatch: each gets its typed answer,
/// and before the first file the answers say there is nothing.
#[test]
fn requests_are_answered_in_one_place() {
    use memviz_viewer::{Reply, Request};
    let ask = |core: &mut ViewerCore, json: &str| {
        let req: Request = serde_json::from_str(json).expect("a request");
        serde_json::to_value(core.request(req)).expect("an answer")
    };
    let mut core = ViewerCore::new();
    assert_eq!(
        ask(&mut core, r#"{"method":"state"}"#),
        serde_json::Value::Null
    );
    assert_eq!(
        ask(&mut core, r#"{"method":"state_ooms"}"#),
        serde_json::json!([])
    );
    assert_eq!(
        ask(
            &mut core,
            r#"{"method":"state_search","query":"x","from":0,"forward":true}"#
        ),
        -1
    );
    core.begin("demo.pickle", 0);
    core.push(&demo_bytes()).expect("demo");
    core.finish().expect("demo opens");
    let Reply::State(Some(state)) = core.request(Request::State) else {
        panic!("a state after the first file");
    };
    assert_eq!(state.files, ["demo.pickle"]);
    assert!(state.timeline.elements > 0);
    let Reply::Files(files) = core.request(Request::Files) else {
        panic!("files");
    };
    assert_eq!(files.len(), 1);
    assert!(files[0].peak_live_bytes > 0 && files[0].current);
    let Reply::Panel(panel) = core.request(Request::Panel { legend_entries: 4 }) else {
        panic!("panel");
    };
    assert!(!panel.legend.is_empty() && panel.legend.len() <= 4);
    assert_eq!(
        ask(&mut core, r#"{"method":"set_view","view":"state"}"#),
        serde_json::json!(true)
    );
    let Reply::StateSelect(Some(sel)) = core.request(Request::StateSelect { k: -1 }) else {
        panic!("a selection in the State History");
    };
    assert!(sel.count > 0 && sel.event == Some(sel.count - 1), "{sel:?}");
}

#[test]
fn cancel_drops_only_the_pending_file() {
    let mut core = ViewerCore::new();
    core.begin("x", 0);
    core.push(&demo_bytes()[..10]).expect("prefix");
    core.cancel();
    assert!(core.finish().is_err());
    assert!(core.app_ref().is_none());
    assert_eq!(core.panel(3), memviz_viewer::answer::Panel::default());
}
