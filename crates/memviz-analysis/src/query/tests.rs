//! Tests of the filter and of [`crate::allocations`] (hand-made snapshots, the real corpus).

use super::*;
use crate::allocations::{allocations, allocations_with_steps, Allocations};
use crate::steps::Steps;
use crate::test_util::{dict, frame, pickle, Py};
use memviz_snapshot::Snapshot;
use std::path::PathBuf;

/// The real corpus (`../shared/corpus/real` beside the repository), loaded; empty when absent.
pub(crate) fn corpus_snapshots() -> Vec<(PathBuf, Snapshot)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/real");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        eprintln!("note: {} not found; corpus tests skipped", dir.display());
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "pickle" || e == "pkl"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| {
            let bytes = std::fs::read(&p).ok()?;
            memviz_snapshot::load_slice(&bytes).ok().map(|s| (p, s))
        })
        .collect()
}

fn ev(action: &str, addr: i128, size: i128, time: Option<i128>, frames: Vec<Py>) -> Py {
    let mut d = vec![
        ("action", Py::Str(action.into())),
        ("addr", Py::Int(addr)),
        ("size", Py::Int(size)),
        ("stream", Py::Int(0)),
        ("frames", Py::List(frames)),
    ];
    if let Some(t) = time {
        d.push(("time_us", Py::Int(t)));
    }
    dict(d)
}

/// Device 0: a 1 MiB alloc in model.py:10 (freed at event 3), a 4 KiB alloc in
/// train.py:20 via attention (never freed), a 2 MiB alloc in model.py:30 (freed at 5), and an
/// unmatched free (present at the start, 512 B).
fn sample(timed: bool) -> Snapshot {
    sample_with(timed, Vec::new())
}

/// [`sample`] with `external_annotations`.
fn sample_with(timed: bool, annotations: Vec<Py>) -> Snapshot {
    let t = |v: i128| timed.then_some(v);
    let model = |l| vec![frame("/home/u/model.py", l, "forward")];
    let train = vec![
        frame(
            "/usr/lib/python3.11/site-packages/x/attention.py",
            5,
            "attn",
        ),
        frame("/home/u/train.py", 20, "main"),
    ];
    let events = vec![
        ev("alloc", 4096, 1 << 20, t(1000), model(10)),
        ev("alloc", 8192, 4096, t(2000), train),
        ev("alloc", 1 << 24, 2 << 20, t(3000), model(30)),
        ev("free_completed", 4096, 1 << 20, t(4000), Vec::new()),
        ev("free_completed", 65536, 512, t(5000), Vec::new()),
        ev("free_completed", 1 << 24, 2 << 20, t(16000), Vec::new()),
    ];
    pickle(&dict(vec![
        ("segments", Py::List(Vec::new())),
        ("device_traces", Py::List(vec![Py::List(events)])),
        ("external_annotations", Py::List(annotations)),
    ]))
}

/// [`sample`] (timed) with phases `step#1` over 500..2500 µs and `step#2` over 2500..20000.
fn sample_with_phases() -> Snapshot {
    let ann = |stage: &str, name: &str, t: i128| {
        dict(vec![
            ("stage", Py::Str(stage.into())),
            ("name", Py::Str(name.into())),
            ("device", Py::Int(0)),
            ("time_us", Py::Int(t)),
        ])
    };
    sample_with(
        true,
        vec![
            ann("START", "step#1", 500),
            ann("END", "step#1", 2500),
            ann("START", "step#2", 2500),
            ann("END", "step#2", 20000),
        ],
    )
}

fn run(snap: &Snapshot, text: &str) -> FilterMatches {
    let tl = crate::timeline::build(snap, 0);
    let allocs = allocations(snap, 0, &tl);
    let mut sites = SiteCache::default_for(snap);
    let f = parse_filter(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    filter(snap, &allocs, &mut sites, &f)
}

/// Sizes of the matching rows, in element order.
fn sizes(snap: &Snapshot, text: &str) -> Vec<u64> {
    let tl = crate::timeline::build(snap, 0);
    run(snap, text)
        .elements
        .iter()
        .map(|&e| tl.elements[e as usize].size_bytes)
        .collect()
}

#[test]
fn rows_of_the_sample() {
    let snap = sample(true);
    let tl = crate::timeline::build(&snap, 0);
    let a = allocations(&snap, 0, &tl);
    assert_eq!(a.rows.len(), 4);
    let by_size = |s: u64| a.rows.iter().find(|r| r.size == s).expect("row");
    let m = by_size(1 << 20);
    assert_eq!((m.alloc_event, m.free_event), (Some(0), Some(3)));
    assert_eq!((m.lifetime_events, m.lifetime_us), (3, Some(3000)));
    let never = by_size(4096);
    assert_eq!((never.free_event, never.lifetime_events), (None, 5));
    assert_eq!(never.lifetime_us, Some(14000));
    let start = by_size(512);
    assert_eq!((start.alloc_event, start.lifetime_us), (None, None));
    // Peak after the third alloc: all four live (the unmatched free's block is present).
    assert_eq!(a.peak_bytes, (1 << 20) + 4096 + (2 << 20) + 512);
    assert_eq!(a.peak_event, Some(2));
    assert!(a.rows.iter().all(|r| r.alive_at_peak));
    assert_eq!(a, allocations_with_steps(&snap, 0, &tl, &Steps::build(&tl)));
}

#[test]
fn fields_select_as_documented() {
    let snap = sample(true);
    let all = run(&snap, "  ");
    assert_eq!(all.count, 4);
    assert_eq!(sizes(&snap, "size>=1MiB"), vec![1 << 20, 2 << 20]);
    assert_eq!(sizes(&snap, "size:4KiB"), vec![4096]);
    assert_eq!(sizes(&snap, "size<1KB"), vec![512]);
    assert_eq!(sizes(&snap, "file:model.py"), vec![1 << 20, 2 << 20]);
    assert_eq!(sizes(&snap, "file:u/model.py line>=30"), vec![2 << 20]);
    assert!(sizes(&snap, "file:odel.py").is_empty());
    assert_eq!(sizes(&snap, "file:/mod.l/"), vec![1 << 20, 2 << 20]);
    assert_eq!(sizes(&snap, "site:train"), vec![4096]);
    assert_eq!(sizes(&snap, "frame:attention"), vec![4096]);
    assert_eq!(sizes(&snap, "ATTN"), vec![4096]);
    assert_eq!(sizes(&snap, "/model\\.py:30/"), vec![2 << 20]);
    assert_eq!(sizes(&snap, "action:start"), vec![512]);
    assert_eq!(
        sizes(&snap, "action:free size>1KiB"),
        vec![1 << 20, 2 << 20]
    );
    assert!(sizes(&snap, "action:segment_alloc").is_empty());
    assert_eq!(sizes(&snap, "at:3"), vec![4096, 2 << 20, 512]);
    assert_eq!(sizes(&snap, "at:4"), vec![4096, 2 << 20]);
    assert_eq!(sizes(&snap, "at:-1"), vec![512]);
    assert_eq!(sizes(&snap, "lifetime>3"), vec![4096, 512]);
    assert_eq!(sizes(&snap, "lifetime>=10ms"), vec![4096, 2 << 20]);
    assert_eq!(sizes(&snap, "lifetime<5ms"), vec![1 << 20]);
    // 2.5 ms after the first event (1000 µs): after event 2 (3000), before 3 (4000).
    assert_eq!(sizes(&snap, "at:2.5ms").len(), 4);
    assert_eq!(sizes(&snap, "at:2.5ms -at:peak").len(), 0);
    assert_eq!(sizes(&snap, "at:3.5ms"), vec![4096, 2 << 20, 512]);
    assert_eq!(sizes(&snap, "at:0.5ms"), vec![1 << 20, 512]);
    assert_eq!(run(&snap, "device:0").count, 4);
    assert_eq!(run(&snap, "device:1").count, 0);
    assert_eq!(run(&snap, "stream:0").count, 4);
    assert_eq!(run(&snap, "stream!=0").count, 0);
    assert_eq!(
        sizes(&snap, "-site:train size>1000"),
        vec![1 << 20, 2 << 20]
    );
    assert_eq!(
        sizes(&snap, "site!=train size>1000"),
        vec![1 << 20, 2 << 20]
    );
    assert_eq!(run(&snap, "size>=1MiB").bytes, 3 << 20);
}

#[test]
fn phases_by_allocation_time() {
    let snap = sample_with_phases();
    assert_eq!(sizes(&snap, "phase:step#1"), vec![1 << 20, 4096]);
    assert_eq!(sizes(&snap, "phase:step#2"), vec![2 << 20]);
    assert_eq!(sizes(&snap, "phase:/step/").len(), 3);
    assert!(sizes(&snap, "phase:step").is_empty());
    assert_eq!(sizes(&snap, "-phase:/step/"), vec![512]);
    assert!(run(&snap, "phase:step#1").warnings.is_empty());
}

#[test]
fn untimed_and_phaseless_terms_match_nothing_and_say_so() {
    let snap = sample(false);
    let m = run(&snap, "lifetime>1ms");
    assert_eq!(m.count, 0);
    assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
    assert!(m.warnings[0].contains("no event times"));
    let m = run(&snap, "at:1s");
    assert_eq!((m.count, m.warnings.len()), (0, 1));
    let m = run(&snap, "phase:ProfilerStep#1");
    assert_eq!(m.count, 0);
    assert!(m.warnings[0].contains("no annotation phases"));
    assert_eq!(run(&snap, "lifetime>1").count, 4);
}

fn err(text: &str) -> FilterError {
    match parse_filter(text) {
        Ok(_) => panic!("{text} parsed"),
        Err(e) => e,
    }
}

#[test]
fn errors_point_at_the_column() {
    let e = err("size>=1XB");
    assert_eq!(e.column, 6);
    assert_eq!(e.message, "unknown unit XB (B, KiB, MiB, GiB, KB, MB, GB)");
    assert_eq!(e.to_string(), format!("column 7: {}", e.message));
    let e = err("size>1 colour:red");
    assert_eq!(e.column, 7);
    assert!(e
        .message
        .starts_with("unknown field colour (size, stream, site"));
    assert_eq!(err("é size>=x").column, 8);
    assert_eq!(err("site:\"abc").column, 5);
    assert!(err("site:\"abc").message.contains("unterminated"));
    assert_eq!(err("site:/(/").column, 5);
    assert_eq!(err("at>peak").column, 2);
    assert_eq!(err("lifetime>10h").column, 9);
    assert_eq!(err("action:mallocs").column, 7);
    assert_eq!(err("size>=").column, 4);
    assert_eq!(err("x -").column, 2);
    assert_eq!(err("line:4.5").column, 5);
    assert!(parse_filter("").is_ok_and(|f| f.is_empty()));
    assert_eq!(parse_filter("-\"a b\" site:x").map(|f| f.len()), Ok(2));
}

#[test]
fn no_panic_on_random_text() {
    let snap = sample(true);
    let tl = crate::timeline::build(&snap, 0);
    let allocs = allocations(&snap, 0, &tl);
    let mut sites = SiteCache::default_for(&snap);
    let alphabet: Vec<char> =
        "size:=<>!-\" \\/.0123456789aKMGiBmsu peakt@é\u{0}\ttimeframe:linephase"
            .chars()
            .collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = (x % 24) as usize;
        let text: String = (0..len)
            .map(|k| alphabet[((x >> (k % 50)) as usize + k * 7) % alphabet.len()])
            .collect();
        match parse_filter(&text) {
            Ok(f) => {
                let m = filter(&snap, &allocs, &mut sites, &f);
                assert!(m.count <= 4);
            }
            Err(e) => assert!(e.column <= text.chars().count(), "{text:?}: {e}"),
        }
    }
}

/// Negation partitions the rows, on the corpus.
fn partitions(snap: &Snapshot, allocs: &Allocations, sites: &mut SiteCache, term: &str) {
    let f = parse_filter(term).expect("filter");
    let nf = parse_filter(&format!("-{term}")).expect("negated filter");
    let a = filter(snap, allocs, sites, &f);
    let b = filter(snap, allocs, sites, &nf);
    assert_eq!(a.count + b.count, allocs.rows.len(), "{term}");
    assert_eq!(a.bytes.saturating_add(b.bytes), {
        allocs
            .rows
            .iter()
            .fold(0u64, |s, r| s.saturating_add(r.size))
    });
}

#[test]
fn corpus_invariants() {
    for (path, snap) in corpus_snapshots() {
        let mut sites = SiteCache::default_for(&snap);
        for d in snap.devices() {
            let tl = crate::timeline::build(&snap, d);
            let layout = Steps::build(&tl);
            let allocs = allocations(&snap, d, &tl);
            assert_eq!(
                allocs,
                allocations_with_steps(&snap, d, &tl, &layout),
                "{}",
                path.display()
            );
            let all = filter(
                &snap,
                &allocs,
                &mut sites,
                &parse_filter("size>=0").expect("f"),
            );
            assert_eq!(all.count, allocs.rows.len());
            let peak = filter(
                &snap,
                &allocs,
                &mut sites,
                &parse_filter("at:peak").expect("f"),
            );
            if layout.step_count() > 0 {
                assert_eq!(peak.bytes, layout.peak_bytes, "{}", path.display());
            }
            for term in [
                "at:peak",
                "size>=1MiB",
                "site:/py/",
                "forward",
                "action:free",
                "at:10",
            ] {
                partitions(&snap, &allocs, &mut sites, term);
            }
            let text = csv(&snap, &allocs, &mut sites, &all.elements);
            assert_eq!(text.lines().count(), allocs.rows.len() + 1);
        }
    }
}

#[test]
fn csv_quotes_and_columns() {
    let snap = sample(true);
    let tl = crate::timeline::build(&snap, 0);
    let allocs = allocations(&snap, 0, &tl);
    let mut sites = SiteCache::default_for(&snap);
    let m = run(&snap, "size:4KiB");
    let text = csv(&snap, &allocs, &mut sites, &m.elements);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], CSV_HEADER);
    assert_eq!(lines.len(), 2);
    let cols: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(cols.len(), 12, "{}", lines[1]);
    assert_eq!(cols[6], "train.py:20:main");
    assert_eq!(cols[7], "/home/u/train.py");
    assert_eq!((cols[10], cols[11]), ("14000", "true"));
    let mut s = String::new();
    super::csv::field(&mut s, "a,\"b\"");
    assert_eq!(s, "\"a,\"\"b\"\"\"");
}

/// The speed of a filter over 2 M rows (printed, not asserted): the page redraws after it.
#[test]
fn two_million_rows_timing() {
    let stacks: Vec<Vec<(String, i128, &str)>> = (0..2000)
        .map(|i| {
            vec![
                (format!("/lib/python3.11/site-packages/m/f{i}.py"), 3, "lib"),
                (format!("/home/u/model{}.py", i % 50), i as i128, "forward"),
            ]
        })
        .collect();
    let snap = crate::test_util::snapshot_of_stacks(&stacks, |i| 512 * (i as i128 + 1));
    let tl = crate::timeline::build(&snap, 0);
    let base = allocations(&snap, 0, &tl);
    let n = 2_000_000usize;
    let rows = (0..n)
        .map(|i| {
            let mut r = base.rows[i % base.rows.len()];
            r.element = i as u32;
            r.size = (i as u64 % 4096) * 1024;
            r.alive_at_peak = i % 3 == 0;
            r
        })
        .collect();
    let allocs = Allocations { rows, ..base };
    for text in [
        "size>=1MiB at:peak",
        "site:/model1/ -file:model12.py",
        "forward lifetime>1",
    ] {
        let f = parse_filter(text).expect("filter");
        let mut sites = SiteCache::default_for(&snap);
        let t0 = std::time::Instant::now();
        let m = filter(&snap, &allocs, &mut sites, &f);
        let t1 = t0.elapsed();
        let t0 = std::time::Instant::now();
        let m2 = filter(&snap, &allocs, &mut sites, &f);
        eprintln!(
            "filter {text:?} over {n} rows: {} matches, {:.1} ms (again, sites cached: {:.1} ms)",
            m.count,
            t1.as_secs_f64() * 1e3,
            t0.elapsed().as_secs_f64() * 1e3
        );
        assert_eq!(m, m2);
    }
}

/// `MEMVIZ_QUERY_BENCH=FILE cargo test --profile ci -p memviz-analysis --lib query::tests::file_timing
/// -- --nocapture`: the time of each step on a real file (printed; nothing without the variable).
#[test]
fn file_timing() {
    let Some(path) = std::env::var_os("MEMVIZ_QUERY_BENCH") else {
        return;
    };
    let ms = |t: std::time::Instant| t.elapsed().as_secs_f64() * 1e3;
    let t = std::time::Instant::now();
    let bytes = std::fs::read(&path).expect("read");
    let snap = memviz_snapshot::load_slice(&bytes).expect("load");
    eprintln!("load {:.0} ms", ms(t));
    let d = snap.default_device();
    let t = std::time::Instant::now();
    let tl = crate::timeline::build(&snap, d);
    eprintln!("timeline {:.0} ms ({} elements)", ms(t), tl.elements.len());
    let t = std::time::Instant::now();
    let allocs = allocations(&snap, d, &tl);
    eprintln!("allocations {:.0} ms", ms(t));
    let t = std::time::Instant::now();
    let layout = Steps::build(&tl);
    let b = allocations_with_steps(&snap, d, &tl, &layout);
    eprintln!("steps + allocations_with_steps {:.0} ms", ms(t));
    assert_eq!(allocs, b);
    let mut sites = SiteCache::default_for(&snap);
    for text in [
        "size>=1MiB at:peak",
        "site:/model/ -action:free",
        "forward lifetime>100",
    ] {
        let f = parse_filter(text).expect("filter");
        let t = std::time::Instant::now();
        let m = filter(&snap, &allocs, &mut sites, &f);
        eprintln!("filter {text:?}: {} matches, {:.1} ms", m.count, ms(t));
    }
}
