//! The structured filter (`filter` / `filter_csv` requests, `app/panels/filter.rs`): its matches
//! are `memviz_analysis::query::filter`'s over the Active Memory Timeline's allocations, the
//! highlight is set to them, a bad filter leaves the highlight as it was, the CSV has a row per
//! match, "Your code" renames the sites it matches, and the search and the filter intersect.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

use crate::common;

use memviz_analysis::allocations::allocations;
use memviz_analysis::query;
use memviz_analysis::site::{SiteCache, UserCode};
use memviz_analysis::timeline;
use memviz_snapshot::Snapshot;
use memviz_viewer::answer::FilterAnswer;
use memviz_viewer::{App, Reply, Request, ViewKind};

const MIB: u64 = 1 << 20;

/// `generate.py KIND OUT` into this test binary's fixture directory (once).
fn generated(kind: &str) -> PathBuf {
    let dir = common::repo_root()
        .join("target/test-fixtures")
        .join(format!("viewer-filter-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{kind}.pickle"));
    if !out.exists() {
        let st = Command::new("python3")
            .arg(common::repo_root().join("tests/fixtures/generate.py"))
            .arg(kind)
            .arg(&out)
            .status()
            .expect("python3 runs");
        assert!(st.success(), "generate.py {kind} failed");
    }
    out
}

/// `generate.py landmarks` (alpha 4 MiB, beta 8 MiB freed, gamma 2 MiB, delta 6 MiB; each
/// allocated by `make_X` in `/src/landmarks/X.py` called from `train.py:100:main`).
fn landmarks() -> PathBuf {
    generated("landmarks")
}

fn load(path: &std::path::Path) -> Snapshot {
    memviz_snapshot::load_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `query::filter` run directly on `snap`'s `device` under `user`: (elements, count, bytes).
fn reference(snap: &Snapshot, device: i64, user: &str, text: &str) -> (Vec<u32>, usize, u64) {
    let tl = timeline::build(snap, device);
    let allocs = allocations(snap, device, &tl);
    let mut sites = SiteCache::new(snap, UserCode::parse(user).unwrap());
    let f = query::parse_filter(text).unwrap();
    let m = query::filter(snap, &allocs, &mut sites, &f);
    (m.elements, m.count, m.bytes)
}

fn filter(app: &mut App, text: &str, only: bool) -> FilterAnswer {
    app.filter(text, only).expect("a file is open")
}

#[test]
fn matches_equal_query_filter_and_are_highlighted() {
    let path = landmarks();
    let snap = load(&path);
    let mut app = common::load_app(&path);
    app.set_view(ViewKind::Active);
    for text in [
        "size>=6MiB",
        "size<4MiB",
        "at:peak",
        "action:free",
        "-site:/beta/",
        "file:delta.py",
        "make_alpha",
        "size>=1GiB",
    ] {
        let a = filter(&mut app, text, false);
        let (elements, count, bytes) = reference(&snap, 0, "", text);
        assert_eq!(a.error, None, "{text}");
        assert_eq!((a.count, a.bytes), (count, bytes), "{text}");
        assert_eq!(app.highlighted(), Some(elements.len()), "{text}");
    }
    let a = filter(&mut app, "size>=6MiB", false);
    assert_eq!((a.count, a.bytes), (2, 14 * MIB), "beta and delta, by hand");
    assert!(a.size.starts_with("14.0MiB"), "{}", a.size);
    // Empty clears.
    assert_eq!(filter(&mut app, "  ", false), FilterAnswer::default());
    assert_eq!(app.highlighted(), None);
}

#[test]
fn every_small_fixture_agrees_with_query_filter() {
    for name in [
        "proto5.pickle",
        "pools.pickle",
        "multidevice.pickle",
        "expandable.pickle",
    ] {
        let path = common::fixture(name);
        let snap = load(&path);
        let mut app = common::load_app(&path);
        for device in snap.devices() {
            if snap.trace(device).is_none_or(|t| t.is_empty()) {
                continue;
            }
            app.set_device(device);
            app.set_view(ViewKind::Active);
            for text in [
                "size>=1MiB",
                "at:peak",
                "-action:alloc",
                "stream:0 size<1KiB",
            ] {
                let a = filter(&mut app, text, false);
                let (elements, count, bytes) = reference(&snap, device, "", text);
                assert_eq!((a.count, a.bytes), (count, bytes), "{name} {device} {text}");
                assert_eq!(app.highlighted(), Some(elements.len()), "{name} {text}");
                let csv = app.filter_csv(text).expect("csv");
                assert_eq!(
                    csv.lines().count(),
                    count + 1,
                    "{name} {text}: header + rows"
                );
            }
        }
    }
}

#[test]
fn a_bad_filter_changes_nothing() {
    let path = landmarks();
    let mut app = common::load_app(&path);
    app.set_view(ViewKind::Active);
    filter(&mut app, "size>=6MiB", true);
    assert_eq!(app.highlighted(), Some(2));
    let a = filter(&mut app, "size>=6XB", false);
    let e = a.error.expect("an error");
    assert!(e.column >= 6 && e.column <= 7, "{e:?}");
    assert!(e.text.starts_with("column "), "{}", e.text);
    assert_eq!((a.count, a.bytes), (0, 0));
    assert_eq!(app.highlighted(), Some(2), "the highlight stays");
    assert_eq!(app.filter_csv("size>=6XB"), None);
    // Through the request table too (the shell's way).
    let r = app.request(Request::FilterCsv {
        query: "size>=6MiB".into(),
    });
    let Reply::FilterCsv(Some(csv)) = r else {
        panic!("{r:?}")
    };
    assert_eq!(csv.lines().count(), 3);
}

#[test]
fn user_code_renames_the_sites_it_matches() {
    // The demo: the user's train.py and model.py calling into torch (a library by default).
    let path = generated("demo");
    let snap = load(&path);
    let mut app = common::load_app(&path);
    app.set_view(ViewKind::Active);
    let texts = [
        "file:adamw.py",
        "file:train.py",
        "site:/torch/",
        "size>=1MiB file:model.py",
    ];
    let before: Vec<usize> = texts
        .iter()
        .map(|t| filter(&mut app, t, false).count)
        .collect();
    for (t, &n) in texts.iter().zip(&before) {
        assert_eq!(n, reference(&snap, 0, "", t).1, "{t}");
    }
    assert_eq!(before[0], 0, "torch's lines are not sites by default");
    app.set_user_code("torch").unwrap();
    let after: Vec<usize> = texts
        .iter()
        .map(|t| filter(&mut app, t, false).count)
        .collect();
    for (t, &n) in texts.iter().zip(&after) {
        assert_eq!(
            n,
            reference(&snap, 0, "torch", t).1,
            "{t} with torch as your code"
        );
    }
    assert!(after[0] > 0, "adamw.py's lines are sites now");
    assert!(after[1] < before[1], "fewer sites in train.py");
    assert_eq!(app.highlighted(), Some(after[3]));
}

#[test]
fn search_and_filter_intersect() {
    let path = landmarks();
    let mut app = common::load_app(&path);
    app.set_view(ViewKind::Active);
    filter(&mut app, "size>=6MiB", false);
    let s = app.search("delta.py", false).unwrap();
    assert_eq!(s.count, 1);
    assert_eq!(app.highlighted(), Some(1), "beta and delta ∩ delta");
    let a = filter(&mut app, "size>=6MiB", false);
    assert_eq!((a.count, a.with_search), (2, Some(1)));
    app.search("", false);
    assert_eq!(app.highlighted(), Some(2), "the filter alone");
    // A source line's highlight replaces both; a later search stands alone.
    app.set_highlight(Some(vec![0]), false);
    app.search("alpha.py", false);
    assert_eq!(app.highlighted(), Some(1));
    assert_eq!(filter(&mut app, "", false).count, 0);
    assert_eq!(
        app.highlighted(),
        Some(1),
        "clearing the filter keeps the search"
    );
}

#[test]
fn on_the_segment_timeline_it_says_where_it_applies() {
    let path = landmarks();
    let mut app = common::load_app(&path);
    app.set_view(ViewKind::Segments);
    let a = filter(&mut app, "size>=6MiB", false);
    assert_eq!(a.count, 2);
    assert!(a.note.unwrap().contains("Active Memory Timeline"));
    assert_eq!(app.highlighted(), None);
}
