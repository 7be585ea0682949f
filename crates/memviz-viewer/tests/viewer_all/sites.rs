//! Every view of the viewer names an allocation's site through the one classifier
//! (`memviz_analysis::site`, docs/sites.md): over every real corpus file, the legend, the OOM
//! tab, source lines, alive at a moment, leak suspects and compare name the same site for the
//! same allocation as `SiteCache::site` of its allocating stack; backward-pass allocations
//! never name the allocator; `set_user_code` renames them. Skipped when
//! `../shared/corpus/real` is absent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use memviz_present::color::stack_hash;
use memviz_analysis::diff::stack_lines;
use memviz_analysis::frames::element_stack;
use memviz_analysis::site::{SiteCache, SiteKind, UserCode};
use memviz_analysis::state::History;
use memviz_snapshot::{Snapshot, StackId};
use memviz_viewer::answer::{Avail, SiteText};
use memviz_viewer::{App, Reply, Request, ViewKind};

/// Allocations checked per device: the largest live at the peak.
const PICKED: usize = 20;

/// Names a backward-pass allocation must never be given.
const PLUMBING: [&str; 3] = ["CUDACachingAllocator", "at::empty", "malloc"];

fn corpus() -> Option<Vec<PathBuf>> {
    let dir = common::repo_root().join("../shared/corpus/real");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        eprintln!("note: {} not found; test skipped", dir.display());
        return None;
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x == "pickle" || x == "pkl" || x == "gz" || x == "json")
        })
        .collect();
    files.sort();
    Some(files)
}

fn load(path: &std::path::Path) -> Option<Snapshot> {
    let bytes = std::fs::read(path).expect("read");
    memviz_snapshot::load_slice(&bytes).ok()
}

fn text(site: &memviz_analysis::site::Site) -> SiteText {
    SiteText::of(site)
}

/// Whether a stack has no Python frame (autograd's backward thread) and is not empty.
fn no_python(snap: &Snapshot, stack: StackId) -> bool {
    let ids = snap.stack(stack);
    !ids.is_empty()
        && ids.iter().all(|&id| {
            snap.frame(id)
                .is_none_or(|f| !memviz_analysis::site::is_python_file(snap.str(f.filename)))
        })
}

/// One file: every view against the classifier. Returns the allocations checked.
fn check_file(path: &std::path::Path) -> usize {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let (Some(snap), Some(reference)) = (load(path), load(path)) else {
        eprintln!("note: {name} does not load; skipped");
        return 0;
    };
    let mut cache = SiteCache::default_for(&reference);
    let devices = reference.devices();
    let mut app = App::new(&name, snap);
    let mut checked = 0;
    for &dev in &devices {
        if reference.trace(dev).is_none_or(|t| t.is_empty()) {
            continue;
        }
        app.set_view(ViewKind::Active);
        app.set_device(dev);
        let ctx = format!("{name} device {dev}");
        let Some(Avail::Ready(live)) = app.live(-1) else {
            panic!("{ctx}: no live table");
        };
        let lines = app.lines(false).ready().expect("the line table");
        let legend = app.legend(100_000);
        let timeline = app.timeline().expect("timeline");
        // Alive at a moment, source lines and the legend, for the largest live at the peak.
        for row in live.rows.iter().take(PICKED) {
            let el = timeline
                .elements
                .get(row.row.element as usize)
                .expect("element");
            let stack = element_stack(&reference, dev, el);
            let site = cache.site(&reference, stack).clone();
            let want = text(&site);
            let what = format!("{ctx} element {}", row.row.element);
            assert_eq!(row.site, want, "{what}: alive at a moment");
            assert_eq!(row.row.top_frame, site.path(), "{what}: alive at a moment");
            let line = lines
                .iter()
                .find(|l| {
                    l.row.file == site.file && l.row.line == site.line && l.row.name == site.name
                })
                .unwrap_or_else(|| panic!("{what}: no source-line row for {}", site.path()));
            assert_eq!(line.kind, site.kind.as_str(), "{what}: source lines");
            if site.kind != SiteKind::None {
                assert_eq!(line.site, site.label, "{what}: source lines");
            }
            if let Some(d) = &site.detail {
                assert!(
                    line.detail.iter().any(|x| x.row.file == d.file
                        && x.row.line == d.line
                        && x.row.name == d.name
                        && x.site == d.label),
                    "{what}: source lines lack the detail {}",
                    d.label
                );
            }
            if stack != StackId::EMPTY {
                let h = stack_hash(&reference, stack);
                let entry = legend
                    .iter()
                    .find(|e| e.entry.hash == h)
                    .unwrap_or_else(|| panic!("{what}: not in the legend"));
                assert_eq!(entry.site, want, "{what}: the legend");
            }
            checked += 1;
        }
        // Every legend entry names its stack's site, and the label starts with it.
        for e in &legend {
            if e.entry.hash == memviz_present::color::POOL_LEGEND_HASH {
                continue;
            }
            let site = cache.site(&reference, StackId(e.entry.stack));
            assert_eq!(e.site, text(site), "{ctx}: legend entry {}", e.entry.label);
            assert!(
                e.entry.label.starts_with(&site.label),
                "{ctx}: {}",
                e.entry.label
            );
        }
        // Backward-pass allocations: an autograd node or a real op, never the allocator.
        for el in &timeline.elements {
            let stack = element_stack(&reference, dev, el);
            if no_python(&reference, stack) {
                let site = cache.site(&reference, stack);
                assert!(
                    !PLUMBING.iter().any(|p| site.label.contains(p)),
                    "{ctx}: a backward-pass allocation is named {}",
                    site.label
                );
            }
        }
        for l in &lines {
            if matches!(l.kind.as_str(), "native" | "autograd") {
                assert!(
                    !PLUMBING.iter().any(|p| l.site.contains(p)),
                    "{ctx}: source lines name {}",
                    l.site
                );
            }
        }
        // Leak suspects: the site of the group's first allocation.
        if let Some(Avail::Ready(leaks)) = app.leaks() {
            let tr = reference.trace(dev);
            for s in &leaks.suspects {
                assert_eq!(s.site, text(&s.suspect.site), "{ctx}: leaks");
                if let Some(stack) = tr.and_then(|t| t.stack(s.suspect.first_event as usize)) {
                    if stack_lines(&reference, stack) == s.suspect.stack {
                        assert_eq!(
                            s.site,
                            text(cache.site(&reference, stack)),
                            "{ctx}: leak suspect {:?}",
                            s.suspect.stack
                        );
                    }
                }
                checked += 1;
            }
        }
        // The OOM tab: each biggest allocation by the stack that allocated it.
        if reference.oom_count(dev) > 0 {
            let history = History::build(&reference, dev, 64);
            let reports = history.oom_reports(&reference);
            app.set_view(ViewKind::State);
            let ooms = app.state_ooms();
            assert_eq!(ooms.len(), reports.len(), "{ctx}: oom events");
            for (k, r) in ooms.iter().zip(&reports) {
                let sel = app.state_select(*k as i64).expect("selection");
                let oom = sel.oom.expect("an oom answer");
                let by_addr: HashMap<String, StackId> = r
                    .biggest_live
                    .iter()
                    .zip(&r.biggest_live_stacks)
                    .map(|(&(a, _), &s)| (a.to_string(), s))
                    .collect();
                for b in &oom.biggest_live_text {
                    let stack = by_addr
                        .get(&b.addr)
                        .copied()
                        .unwrap_or_else(|| panic!("{ctx}: block {} not in the report", b.addr));
                    let site = cache.site(&reference, stack);
                    assert_eq!(b.site, text(site), "{ctx}: OOM tab block {}", b.addr);
                    checked += 1;
                }
            }
            app.set_view(ViewKind::Active);
        }
    }
    // Compare: the file against a copy without its last half of segments.
    if let Some(mut trimmed) = load(path) {
        let keep = trimmed.segments.len() / 2;
        trimmed.segments.truncate(keep);
        app.add_file("trimmed", trimmed);
        let Some(Avail::Ready(d)) = app.diff(0, 1) else {
            panic!("{name}: no comparison");
        };
        // The sites of every active block's stack, by its text.
        let mut by_text: HashMap<Vec<String>, HashSet<SiteText>> = HashMap::new();
        for seg in &reference.segments {
            for b in reference.segment_blocks(seg) {
                let site = text(cache.site(&reference, b.stack));
                by_text
                    .entry(stack_lines(&reference, b.stack))
                    .or_default()
                    .insert(site);
            }
        }
        for g in &d.groups {
            let sites = by_text.get(&g.stack);
            assert!(
                sites.is_some_and(|s| s.contains(&g.site)),
                "{name}: compare names {:?} for {:?}, the classifier {sites:?}",
                g.site,
                g.stack
            );
            checked += 1;
        }
    }
    checked
}

#[test]
fn every_view_names_the_classifiers_site() {
    let Some(files) = corpus() else { return };
    let t0 = std::time::Instant::now();
    let mut total = 0;
    for f in &files {
        let t = std::time::Instant::now();
        let n = check_file(f);
        eprintln!(
            "{}: {n} allocations checked in {:.2} s",
            f.file_name().unwrap().to_string_lossy(),
            t.elapsed().as_secs_f64()
        );
        total += n;
    }
    eprintln!(
        "sites: {} files, {total} allocations checked in {:.2} s",
        files.len(),
        t0.elapsed().as_secs_f64()
    );
    assert!(total > 0, "nothing checked");
}

const CONSTRUCTOR_SUN: &str = "Constructor-Sun__code_location__memory_snapshot.pickle";

#[test]
fn the_oom_tab_names_the_allocating_line_not_the_freeing_thread() {
    let Some(path) = common::corpus_file(CONSTRUCTOR_SUN) else {
        return;
    };
    let mut app = common::load_app(&path);
    app.set_device(1);
    app.set_view(ViewKind::State);
    let sel = app.state_select(333).expect("selection");
    let oom = sel.oom.expect("event 333 is the oom");
    let labels: Vec<String> = oom
        .biggest_live_text
        .iter()
        .map(|b| b.site.label.clone())
        .collect();
    assert!(!labels.is_empty());
    for b in &oom.biggest_live_text {
        assert!(
            !b.line.contains("threading.py") && !b.site.label.contains("threading.py"),
            "{labels:?}"
        );
        assert_eq!(b.site.kind, "user", "{labels:?}");
    }
    // The lines `memviz lines` and `memviz oom` name (the ten biggest are on :174 and :181).
    let lines = [
        "models.py:174:update_nodes",
        "models.py:181:update_nodes",
        "models.py:178:update_nodes",
    ];
    assert!(
        labels.iter().all(|l| lines.contains(&l.as_str())),
        "{labels:?}"
    );
    for want in &lines[..2] {
        assert!(labels.iter().any(|l| l == want), "{want} in {labels:?}");
    }
    let relu = oom
        .biggest_live_text
        .iter()
        .find(|b| b.site.label == "models.py:181:update_nodes")
        .expect(":181");
    assert_eq!(
        relu.site.detail.as_deref(),
        Some("torch/nn/functional.py:1701:relu")
    );
    assert_eq!(
        relu.line,
        "models.py:181:update_nodes → torch/nn/functional.py:1701:relu"
    );
    // The stack list of the event says what each line is.
    assert_eq!(sel.kinds.len(), sel.frames.len());
}

#[test]
fn set_user_code_renames_the_sites_and_refuses_a_bad_regex() {
    let Some(path) = common::corpus_file(CONSTRUCTOR_SUN) else {
        return;
    };
    let mut app = common::load_app(&path);
    app.set_device(1);
    let before = app.lines(false).ready().expect("lines");
    let default_frames = match app.request(Request::SetUserCode {
        pattern: String::new(),
    }) {
        Reply::SetUserCode(Ok(a)) => {
            assert_eq!(a.pattern, "");
            a.user_frames
        }
        other => panic!("{other:?}"),
    };
    assert!(default_frames > 0);
    // torch's own files count as the user's: the innermost torch frame names the site.
    let a = app.set_user_code("/torch/").expect("a good pattern");
    assert_eq!(a.pattern, "/torch/");
    assert!(a.user_frames > default_frames, "{a:?} vs {default_frames}");
    assert_eq!(app.user_code(), &UserCode::parse("/torch/").unwrap());
    let after = app.lines(false).ready().expect("lines");
    assert_ne!(before, after);
    assert!(
        after
            .iter()
            .any(|l| l.kind == "user" && l.row.file.contains("/torch/")),
        "no torch line became the user's"
    );
    let live = app.live(-1).and_then(Avail::ready).expect("live");
    let snap = load(&path).unwrap();
    let mut torch = SiteCache::new(&snap, UserCode::parse("/torch/").unwrap());
    for row in live.rows.iter().take(PICKED) {
        let el = app
            .timeline()
            .and_then(|t| t.elements.get(row.row.element as usize))
            .expect("element");
        let stack = element_stack(&snap, 1, el);
        assert_eq!(row.site, SiteText::of(torch.site(&snap, stack)));
    }
    for e in app.legend(20) {
        if e.entry.hash != memviz_present::color::POOL_LEGEND_HASH {
            let site = torch.site(&snap, StackId(e.entry.stack));
            assert_eq!(e.site, SiteText::of(site));
            assert!(e.entry.label.starts_with(&site.label), "{}", e.entry.label);
        }
    }
    // A bad regex: an error of one line, the user code kept.
    match app.request(Request::SetUserCode {
        pattern: "/(unclosed/".to_string(),
    }) {
        Reply::SetUserCode(Err(e)) => {
            assert!(!e.contains('\n') && e.contains("(unclosed"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(app.user_code().text(), "/torch/");
    // Back to the default: the first table again.
    app.set_user_code("").expect("the default");
    assert_eq!(app.lines(false).ready().expect("lines"), before);
}
