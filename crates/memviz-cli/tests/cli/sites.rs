//! The one site classifier (memviz_analysis::site) over every corpus file: backward-pass
//! allocations are named by an autograd node or a user line, never by the allocator; legend
//! labels are unique; the legend, source lines, leaks, the diff and the OOM report name an
//! allocation by the same site; the Constructor-Sun OOM names the user's lines. Also prints what
//! classifying every stack costs (a number, not a timed assertion).

use crate::common;
use common::*;
use memviz_analysis::diff::{stack_lines, DiffBuilder};
use memviz_analysis::lines::{line_table, row_elements, LineOptions};
use memviz_analysis::site::{Site, SiteCache, SiteKind};
use memviz_analysis::state::OomScan;
use memviz_snapshot::{Action, Snapshot, StackId};
use std::collections::HashMap;
use std::time::Instant;

fn has_python(snap: &Snapshot, stack: StackId) -> bool {
    snap.stack(stack).iter().any(|&id| {
        snap.frame(id)
            .is_some_and(|f| memviz_analysis::site::is_python_file(snap.str(f.filename)))
    })
}

fn is_allocator_name(site: &Site) -> bool {
    site.name.contains("CachingAllocator")
        || site.name.contains("at::empty")
        || site.name.contains("at::detail::empty")
}

/// (a), (b), (d) on every device of every corpus file.
#[test]
fn corpus_sites_are_one_and_the_same() {
    let files = corpus_files();
    let empty = load_path(&fixture("empty.pickle"));
    let mut checked = 0usize;
    for path in &files {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let snap = load_path(path);
        let mut sites = SiteCache::default_for(&snap);
        // (a) backward-pass allocations (no Python frame): never the allocator.
        for tr in &snap.traces {
            for i in 0..tr.len() {
                if tr.action(i) != Some(Action::Alloc) {
                    continue;
                }
                let Some(stack) = tr.stack(i) else { continue };
                if snap.stack(stack).is_empty() || has_python(&snap, stack) {
                    continue;
                }
                let s = sites.site(&snap, stack);
                assert!(
                    matches!(
                        s.kind,
                        SiteKind::Autograd | SiteKind::Native | SiteKind::None
                    ),
                    "{name}: {s:?}"
                );
                assert!(!is_allocator_name(s), "{name} event {i}: site {s:?}");
            }
        }
        for d in snap.devices() {
            let f = loaded_snapshot(load_path(path), d);
            let mut sites = SiteCache::default_for(&f.snap);
            // (b) legend labels unique.
            let legend = memviz_present::color::legend_by_scan(&f.snap, d, &f.tl, &f.layout, 20);
            let mut labels: Vec<&str> = legend.iter().map(|e| e.label.as_str()).collect();
            labels.sort_unstable();
            let n = labels.len();
            labels.dedup();
            assert_eq!(labels.len(), n, "{name} device {d}: {legend:?}");
            // (d) the legend's site is the classifier's, and source lines put the legend's
            // stack in that site's row.
            let rows = line_table(&f.snap, d, &f.tl, &f.layout, LineOptions::default());
            for e in legend.iter().take(8) {
                if e.label == memviz_present::color::POOL_LEGEND_LABEL {
                    continue;
                }
                let stack = StackId(e.stack);
                let s = sites.site(&f.snap, stack).clone();
                assert!(
                    e.label.starts_with(&s.label),
                    "{name}: {} vs {}",
                    e.label,
                    s.label
                );
                let row = rows
                    .iter()
                    .find(|r| r.file == s.file && r.line == s.line && r.name == s.name)
                    .unwrap_or_else(|| panic!("{name} device {d}: no row for {s:?}"));
                let els = row_elements(&f.snap, d, &f.tl, LineOptions::default(), row);
                assert!(
                    els.iter().any(|&el| {
                        f.tl.elements.get(el as usize).is_some_and(|x| {
                            memviz_analysis::frames::element_stack(&f.snap, d, x) == stack
                        })
                    }),
                    "{name} device {d}: the row of {} lacks its stack",
                    s.label
                );
            }
            // (d) leaks: a suspect's site is the classifier's site of one of its stacks.
            let report = memviz_analysis::leaks::leaks(&f.snap, d, &f.tl, &f.layout);
            for sus in &report.suspects {
                assert!(
                    sus.explanation.contains(&sus.site.display()),
                    "{name}: {}",
                    sus.explanation
                );
                match sus.site.kind {
                    SiteKind::Autograd => assert!(sus
                        .stack
                        .iter()
                        .any(|l| l.contains(&format!("{}::apply(", sus.site.name))
                            || l.contains(&format!("{}_apply", sus.site.name)))),
                    SiteKind::None => assert!(
                        sus.stack.is_empty() || sus.stack.iter().all(|l| !l.contains(".py:"))
                    ),
                    _ => assert!(
                        sus.stack.contains(&sus.site.path()),
                        "{name}: {:?}",
                        sus.site
                    ),
                }
            }
            checked += 1;
        }
        // (d) the diff (the file against an empty one) names each group by its stack's site.
        let mut by_text: HashMap<Vec<String>, Site> = HashMap::new();
        for b in &snap.blocks {
            by_text
                .entry(stack_lines(&snap, b.stack))
                .or_insert_with(|| sites.site(&snap, b.stack).clone());
        }
        let mut db = DiffBuilder::new(None);
        db.add(0, &snap);
        db.add(1, &empty);
        for g in db.finish().groups {
            if let Some(s) = by_text.get(&g.stack) {
                assert_eq!(
                    (s.kind, &s.label, &s.detail),
                    (g.site.kind, &g.site.label, &g.site.detail),
                    "{name}: {:?}",
                    g.stack
                );
            }
        }
    }
    if !files.is_empty() {
        assert!(checked > 10, "only {checked} file/device pairs checked");
    }
}

/// (c) The OOM of the Constructor-Sun file (device 1, event 333) names the user's lines, and
/// the CLI's JSON carries each block's site, kind and detail.
#[test]
fn constructor_sun_oom_names_user_lines() {
    let Some(path) = corpus_files().into_iter().find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("Constructor-Sun__code_location"))
    }) else {
        eprintln!("note: Constructor-Sun file not found; skipped");
        return;
    };
    let snap = load_path(&path);
    let mut sites = SiteCache::default_for(&snap);
    let scan = OomScan::new(&snap, 1).expect("scan");
    let r = scan.into_iter().find(|r| r.event == 333).expect("oom 333");
    assert_eq!(r.biggest_live.len(), r.biggest_live_stacks.len());
    let ok = [
        "models.py:174:update_nodes",
        "models.py:181:update_nodes",
        "models.py:178:update_nodes",
    ];
    for &stack in &r.biggest_live_stacks {
        let s = sites.site(&snap, stack);
        assert_eq!(s.kind, SiteKind::User, "{s:?}");
        assert!(ok.contains(&s.label.as_str()), "{}", s.label);
    }
    let (code, out, err) = memviz(&[
        "oom",
        path.to_str().expect("utf-8"),
        "--device",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    let first = &v[0]["biggest_live_sites"][0];
    assert_eq!(first["kind"], "user");
    assert!(
        ok.contains(&first["label"].as_str().unwrap_or("")),
        "{first}"
    );
    assert!(first.get("detail").is_some() && first.get("address").is_some());
    let (code, out, _) = memviz(&["oom", path.to_str().expect("utf-8"), "--device", "1"]);
    assert_eq!(code, 0);
    assert!(out.contains("models.py:174:update_nodes"), "{out}");
}

/// The CLI's JSON names rows by the classifier's site, in one shape, on every corpus file and
/// two generated fixtures with leak suspects (the corpus files have none): `memviz leaks
/// --json` (default device) gives each suspect the `site` of the suspect the analysis makes
/// in-process; `memviz oom --json` gives every biggest live block a site.
#[test]
fn cli_json_carries_every_rows_site() {
    let keys = ["detail", "file", "kind", "label", "line", "name"];
    let kinds = ["user", "library", "autograd", "native", "none"];
    let check = |what: &str, site: &serde_json::Value| {
        let o = site.as_object().unwrap_or_else(|| panic!("{what}: {site}"));
        for k in keys {
            assert!(o.contains_key(k), "{what}: no {k} in {site}");
        }
        assert!(
            kinds.contains(&site["kind"].as_str().unwrap_or("")),
            "{what}: {site}"
        );
        let d = &site["detail"];
        assert!(
            d.is_null()
                || ["file", "line", "name", "label"]
                    .iter()
                    .all(|k| d.get(k).is_some()),
            "{what}: {site}"
        );
    };
    let (mut suspects, mut blocks) = (0usize, 0usize);
    let mut files = corpus_files();
    files.extend(["expandable.pickle", "xss.pickle"].map(fixture));
    for path in files {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let p = path.to_str().expect("utf-8");
        let (code, out, err) = memviz(&["leaks", p, "--json"]);
        assert_eq!(code, 0, "{name}: {err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
        let d = v["device"].as_i64().expect("device");
        let f = loaded_snapshot(load_path(&path), d);
        let ours = memviz_analysis::leaks::leaks(&f.snap, d, &f.tl, &f.layout);
        let theirs = v["suspects"].as_array().expect("suspects");
        assert_eq!(theirs.len(), ours.suspects.len(), "{name}");
        for (t, o) in theirs.iter().zip(&ours.suspects) {
            check(name, &t["site"]);
            assert_eq!(
                t["site"],
                serde_json::to_value(&o.site).expect("site"),
                "{name}"
            );
            suspects += 1;
        }
        let (code, out, err) = memviz(&["oom", p, "--json"]);
        assert_eq!(code, 0, "{name}: {err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
        for r in v.as_array().expect("reports") {
            let live = r["biggest_live"].as_array().expect("biggest_live");
            let named = r["biggest_live_sites"].as_array().expect("sites");
            assert_eq!(live.len(), named.len(), "{name}");
            for (l, s) in live.iter().zip(named) {
                check(name, s);
                assert_eq!((&l[0], &l[1]), (&s["address"], &s["size"]), "{name}");
                blocks += 1;
            }
        }
    }
    eprintln!("sites: {suspects} leak suspects, {blocks} biggest live blocks checked");
    assert!(suspects >= 2, "only {suspects} leak suspects checked");
    // --user-code on leaks: a pattern that names no file leaves every site as it was; a bad
    // pattern is a one-line error.
    let f = path_str(&fixture("xss.pickle"));
    let (code, out, err) = memviz(&["leaks", &f, "--json"]);
    assert_eq!(code, 0, "{err}");
    let (code, out2, err) = memviz(&["leaks", &f, "--json", "--user-code", "/nothing_here/"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out2, out);
    let (code, _, err) = memviz(&["leaks", &f, "--json", "--user-code", "/(/"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--user-code: /(/ is not a valid regex") && err.trim().lines().count() == 1,
        "{err}"
    );
}

/// What classifying every stack costs (printed; `--nocapture` to see it).
#[test]
fn classify_all_cost() {
    let mut files = corpus_files();
    files.sort_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0));
    if let Ok(big) = std::env::var("MEMVIZ_SITES_BIG") {
        files.push(big.into());
    }
    for path in files.iter().rev().take(2) {
        let snap = load_path(path);
        let t = Instant::now();
        let mut sites = SiteCache::default_for(&snap);
        sites.classify_all(&snap);
        let dt = t.elapsed();
        eprintln!(
            "sites: {}: {} stacks, {} frames, {} distinct sites in {:.1} ms, {} KiB",
            path.display(),
            snap.stacks.len(),
            snap.frames.len(),
            sites.sites().len(),
            dt.as_secs_f64() * 1e3,
            sites.heap_bytes() / 1024
        );
    }
}
