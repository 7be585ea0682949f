//! Allocator State History (SEMANTICS.md §6): the state after any event, from checkpoints.

use crate::common;
use common::*;
use memviz_analysis::state::{merged_events, History, Kind};

const A: u64 = 0x1000_0000;

/// SEMANTICS §6.4: `(reserved, allocated)` after each event of the §3.6 test vector.
#[test]
fn semantics_test_vector_states() {
    let snap = load_path(&fixtures_dir().join("vector.pickle"));
    for interval in [1, 2, 3, 100] {
        let h = History::build(&snap, 0, interval);
        let kinds: Vec<Kind> = h.events(&snap).map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::Free,
                Kind::Alloc,
                Kind::Alloc,
                Kind::Free,
                Kind::Alloc,
                Kind::Free
            ]
        );
        let got: Vec<(u64, u64)> = (0..6)
            .map(|k| {
                let s = h.state_after(&snap, k).expect("state");
                (s.reserved_bytes, s.allocated_bytes)
            })
            .collect();
        assert_eq!(
            got,
            [
                (100, 10),
                (100, 30),
                (100, 55),
                (100, 35),
                (100, 38),
                (100, 35)
            ],
            "interval {interval}"
        );
        assert!(h.state_after(&snap, 6).is_none());
        let after2 = h.state_after(&snap, 2).expect("state");
        let blocks: Vec<(u64, u64, u64)> = after2
            .blocks
            .iter()
            .map(|(a, b)| (a - A, b.size, b.requested))
            .collect();
        assert_eq!(blocks, [(0, 10, 10), (10, 20, 20), (30, 30, 25)]);
        assert_eq!(h.state_after(&snap, 5), Some(h.final_state(&snap)));
    }
}

/// Checkpoints change nothing: the state after sampled events equals undoing every event from
/// the final state, on every fixture and real file.
#[test]
fn checkpoints_agree_with_a_full_undo() {
    let mut files: Vec<_> = SMALL_FIXTURES
        .iter()
        .map(|f| fixtures_dir().join(f))
        .collect();
    files.extend(corpus_files());
    for path in files {
        let snap = load_path(&path);
        for d in snap.devices() {
            let full = History::build(&snap, d, usize::MAX);
            let fast = History::build(&snap, d, 37);
            // Budgeted: a small budget puts checkpoints every MIN_GAP events or wider.
            let budget = History::build_within(&snap, d, 64);
            let n = full.len();
            assert_eq!(fast.len(), n);
            assert_eq!(budget.len(), n);
            // Packed versions are the annotate step's.
            let ctx = memviz_analysis::state::RowContext::new(&snap, d);
            let v = memviz_present::tooltip::versions(&snap, d);
            assert!(v
                .events
                .iter()
                .enumerate()
                .all(|(r, &x)| ctx.event_version(r) == Some(x)));
            assert!(v
                .blocks
                .iter()
                .enumerate()
                .all(|(i, &x)| ctx.block_version(i) == Some(x)));
            assert!(v
                .segments
                .iter()
                .enumerate()
                .all(|(i, &x)| ctx.segment_version(i) == Some(x)));
            // Events read in place are the merged list built whole.
            let whole = merged_events(&snap, d);
            assert!(
                full.events(&snap).eq(whole.iter().copied()),
                "{}",
                path.display()
            );
            for k in (0..n).step_by((n / 97).max(1)) {
                assert_eq!(full.event(&snap, k).as_ref(), whole.get(k));
            }
            for k in (0..n).step_by((n / 40).max(1)).chain(n.checked_sub(1)) {
                let want = full.state_after(&snap, k);
                for (h, what) in [(&fast, "every 37"), (&budget, "budget")] {
                    assert_eq!(
                        h.state_after(&snap, k),
                        want,
                        "{} device {d} event {k} ({what})",
                        path.display()
                    );
                }
            }
            if n > 0 {
                assert_eq!(
                    fast.state_after(&snap, n - 1),
                    Some(fast.final_state(&snap))
                );
            }
        }
    }
}

#[test]
fn cli_state_json() {
    let vector = fixtures_dir().join("vector.pickle");
    let file = vector.to_str().expect("utf-8 path");
    let (code, out, err) = memviz(&["state", file, "--device", "0", "--event", "2", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(
        v,
        serde_json::json!({"event": 2, "action": "alloc", "reserved_bytes": 100,
            "allocated_bytes": 55, "segments": 1, "blocks": 3})
    );
    let (code, out, _) = memviz(&["state", file, "--device", "0", "--event", "-1", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(v["event"], -1);
    assert_eq!(v["action"], "free");
    assert_eq!(v["allocated_bytes"], 35);
    let (code, _, err) = memviz(&["state", file, "--device", "0", "--event", "6", "--json"]);
    assert_eq!(code, 2);
    assert!(err.contains("0 to 5 or -1"), "{err}");
    let (code, _, err) = memviz(&["state", file, "--event", "x"]);
    assert_eq!(code, 2);
    assert!(err.contains("--event"), "{err}");
}

/// The undo path agrees with a forward simulation: from the state after event 0, applying the
/// events forwards gives the same segments and the same blocks (address, size, pending) as
/// undoing from the final snapshot, at every event: the same segments and live blocks (address,
/// pending). Block sizes differ by design: the trace has the requested size, the snapshot's
/// blocks the rounded one.
#[test]
fn undo_agrees_with_a_forward_simulation() {
    use memviz_analysis::state::apply;
    let mut files: Vec<_> = SMALL_FIXTURES
        .iter()
        .map(|f| fixtures_dir().join(f))
        .collect();
    files.extend(corpus_files());
    let shape = |s: &memviz_analysis::state::State| {
        (
            s.segments
                .iter()
                .map(|(a, g)| (*a, g.size))
                .collect::<Vec<_>>(),
            s.blocks
                .iter()
                .map(|(a, b)| (*a, b.pending))
                .collect::<Vec<_>>(),
        )
    };
    let mut checked = 0usize;
    let mut skipped = Vec::new();
    for path in files {
        let snap = load_path(&path);
        for d in snap.devices() {
            let h = History::build(&snap, d, 64);
            let Some(mut fwd) = h.state_after(&snap, 0) else {
                continue;
            };
            // A consistent trace only: ring-buffer cuts and hand-made vectors free what they
            // never allocated, and undo then restores blocks a forward pass cannot know.
            let consistent = h.final_state(&snap).inconsistencies == 0
                && (0..h.len()).all(|k| {
                    h.state_after(&snap, k)
                        .is_some_and(|s| s.inconsistencies == 0)
                });
            if !consistent {
                skipped.push(format!("{} device {d}", path.display()));
                continue;
            }
            let n = h.len();
            let every = (n / 200).max(1);
            for k in 1..n {
                if let Some(e) = h.event(&snap, k) {
                    apply(&mut fwd, &e);
                }
                if k % every == 0 || k == n - 1 {
                    let back = h.state_after(&snap, k).expect("state");
                    assert_eq!(
                        shape(&fwd),
                        shape(&back),
                        "{} device {d} event {k}",
                        path.display()
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 0, "some trace was checked");
    eprintln!(
        "{checked} states checked against the forward simulation; skipped (undo found nothing to undo): {skipped:?}"
    );
}

/// `memviz oom`: the expandable fixture's one `oom` event, explained from the state at that
/// moment (its numbers checked against the snapshot's own).
#[test]
fn cli_oom_report() {
    let path = fixtures_dir().join("expandable.pickle");
    let snap = load_path(&path);
    let tr = snap.trace(0).expect("device 0 trace");
    let row = tr
        .actions()
        .position(|a| a == memviz_snapshot::Action::Oom)
        .expect("an oom event");
    let (code, out, err) = memviz(&["oom", path.to_str().expect("utf-8"), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    let reports = v.as_array().expect("a list");
    assert_eq!(reports.len(), 1, "{out}");
    let r = &reports[0];
    assert_eq!(r["requested_bytes"], tr.size(row).expect("row"));
    assert_eq!(
        r["device_free_bytes"],
        tr.device_free_of(row as u32).expect("device_free")
    );
    let h = History::build(&snap, 0, 16);
    let k = r["event"].as_u64().expect("event") as usize;
    assert_eq!(h.event(&snap, k).expect("event").row as usize, row);
    let st = h.state_after(&snap, k).expect("state");
    assert_eq!(r["reserved_bytes"], st.reserved_bytes);
    assert_eq!(r["allocated_bytes"], st.allocated_bytes);
    let free = r["reserved_free_bytes"].as_u64().expect("free");
    let largest = r["largest_free_block_bytes"].as_u64().expect("largest");
    assert!(largest <= free && free <= st.reserved_bytes);
    // 80 GiB asked with far less free anywhere: genuinely out of memory.
    assert_eq!(r["kind"], "out_of_memory");
    assert!(r["verdict"]
        .as_str()
        .is_some_and(|t| t.starts_with("Genuinely out of memory")));
    let (code, out, _) = memviz(&["oom", path.to_str().expect("utf-8")]);
    assert_eq!(code, 0);
    assert!(out.contains("device 0, event"), "{out}");
}

/// Event list rows (§7) on the test vector and the expandable fixture's oom row.
#[test]
fn event_rows() {
    use memviz_analysis::state::RowContext;
    let snap = load_path(&fixtures_dir().join("vector.pickle"));
    let h = History::build(&snap, 0, 4);
    let ctx = RowContext::new(&snap, 0);
    assert_eq!(
        h.row_text(&snap, &ctx, 0).as_deref(),
        Some("free          b10000032_0       5.0B (5 bytes)\n(stream 0)")
    );
    assert_eq!(
        h.row_text(&snap, &ctx, 2).as_deref(),
        Some("alloc         b1000001e_0       25.0B (25 bytes)\n(stream 0)")
    );
    assert!(h.row_text(&snap, &ctx, 6).is_none());
    let snap = load_path(&fixtures_dir().join("expandable.pickle"));
    let h = History::build(&snap, 0, 4);
    let ctx = RowContext::new(&snap, 0);
    let texts: Vec<String> = (0..h.len())
        .filter_map(|k| h.row_text(&snap, &ctx, k))
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("OOM (requested 80.0GiB (85899345920 bytes), Device has ")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.starts_with("segment_map   s")),
        "{texts:?}"
    );
}

/// The segment map (SEMANTICS §6.5) of the §6.4 test vector after idx 2 and 1: rects in units
/// (one 100-byte segment: 2 units per byte) and the exact hover texts with §2's versions.
#[test]
fn segment_map_of_the_test_vector() {
    use memviz_present::segmap::{Item, SegMap, RED, WHITE};
    use memviz_analysis::state::{header_text, RowContext};
    let snap = load_path(&fixtures_dir().join("vector.pickle"));
    let h = History::build(&snap, 0, 2);
    let ctx = RowContext::new(&snap, 0);
    let st = h.state_after(&snap, 2).expect("state");
    assert_eq!(
        header_text(&st),
        "(55.0B (55 bytes) allocated / 100.0B (100 bytes) reserved)"
    );
    let m = SegMap::build(&st);
    let got: Vec<(Item, f64, f64, [u8; 4])> = m
        .rects()
        .map(|r| (r.item, r.x0, r.x1 - r.x0, r.color))
        .collect();
    let tableau = |i: usize| memviz_present::segmap::TABLEAU10[i];
    // Colours: |Java hash of "268435456"| % 10 = 7, of "268435466" = 6, of "268435486" = 4
    // (worked in segmap.rs's colors_by_java_hash).
    let want = [
        (Item::Segment(A), 0.0, 200.0, WHITE),
        (Item::Block(A), 0.0, 20.0, tableau(7)),
        (Item::Block(A + 10), 20.0, 40.0, tableau(6)),
        (Item::Block(A + 30), 60.0, 50.0, tableau(4)),
        (Item::Waste(A + 30), 110.0, 10.0, RED),
    ];
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.0, w.0);
        assert!(
            (g.1 - w.1).abs() < 1e-9 && (g.2 - w.2).abs() < 1e-9,
            "{g:?} want {w:?}"
        );
        assert_eq!(g.3, w.3, "{g:?}");
    }
    assert!(m.rects().all(|r| r.y0 == 0.0 && r.y1 == 0.8));
    let explanation = memviz_analysis::frames::NO_FRAMES_EXPLANATION.join("\n");
    let text = |st: &memviz_analysis::state::State, m: &SegMap, item| {
        m.item_text(&snap, &ctx, st, item).expect("text")
    };
    // occupied = 10 + 20 + 25 = 55, free 45, internal 5: 5 / 45 · 100 printed unrounded.
    assert_eq!(
        text(&st, &m, Item::Segment(A)),
        format!(
            "s10000000_0: segment 100.0B (100 bytes) allocated, 45.0B (45 bytes) free (11.11111111111111% internal) (stream 0)\n{explanation}"
        )
    );
    // A from the final snapshot (block version 0), A+10 restored by undoing the `free` at idx
    // 3 (its request row's version, 0), A+30 from the final snapshot.
    assert_eq!(
        text(&st, &m, Item::Block(A)),
        format!("b10000000_0 10.0B (10 bytes) allocation (stream 0)\n{explanation}")
    );
    assert_eq!(
        text(&st, &m, Item::Block(A + 10)),
        format!("b1000000a_0 20.0B (20 bytes) allocation (stream 0)\n{explanation}")
    );
    assert_eq!(
        text(&st, &m, Item::Block(A + 30)),
        format!("b1000001e_0 25.0B (25 bytes) allocation (stream 0)\n{explanation}")
    );
    assert_eq!(
        text(&st, &m, Item::Waste(A + 30)),
        format!("Free space lost due to rounding 5.0B (5 bytes) (stream 0)\n{explanation}")
    );
    assert!(m.item_text(&snap, &ctx, &st, Item::Waste(A)).is_none());
    // After idx 1 A+30 is not allocated yet: no internal waste, no percentage.
    let st1 = h.state_after(&snap, 1).expect("state");
    let m1 = SegMap::build(&st1);
    assert_eq!(
        text(&st1, &m1, Item::Segment(A)),
        format!(
            "s10000000_0: segment 100.0B (100 bytes) allocated, 70.0B (70 bytes) free (stream 0)\n{explanation}"
        )
    );
    assert!(m1.rect_of(Item::Block(A + 30)).is_none());
    // hit: the centre of every block and waste rect is that item (the segment's centre, 100
    // units, is under the block A+30: blocks are above segments); the segment's free tail; the
    // row gap.
    for r in m.rects().skip(1) {
        assert_eq!(
            m.hit((r.x0 + r.x1) / 2.0, (r.y0 + r.y1) / 2.0),
            Some(r.item)
        );
    }
    assert_eq!(m.hit(100.0, 0.4), Some(Item::Block(A + 30)));
    assert_eq!(m.hit(150.0, 0.5), Some(Item::Segment(A)));
    assert_eq!(m.hit(150.0, 0.85), None);
}

/// Pending blocks (`active_pending_free`, and `free_completed` undone) are red and say so.
#[test]
fn segment_map_pending_blocks() {
    use memviz_present::segmap::{Item, SegMap, PENDING_NOTE, RED};
    use memviz_analysis::state::RowContext;
    let snap = load_path(&fixtures_dir().join("deferred.pickle"));
    let ctx = RowContext::new(&snap, 0);
    let h = History::build(&snap, 0, 16);
    let mut seen = 0;
    for st in (0..h.len())
        .filter_map(|k| h.state_after(&snap, k))
        .chain([h.final_state(&snap)])
    {
        let m = SegMap::build(&st);
        for (&a, b) in st.blocks.iter().filter(|(_, b)| b.pending) {
            let r = m.rect_of(Item::Block(a)).expect("drawn");
            assert_eq!(r.color, RED);
            let t = m.item_text(&snap, &ctx, &st, Item::Block(a)).expect("text");
            let first = t.lines().next().unwrap_or("");
            assert!(
                first.starts_with(&format!("b{a:x}_"))
                    && first.contains(&format!(" allocation{PENDING_NOTE} (stream ")),
                "{first}"
            );
            assert_eq!(b.label(a, &ctx), first.split(' ').next().unwrap_or(""));
            seen += 1;
        }
    }
    assert!(seen > 0, "the fixture has pending blocks");
}

/// On every fixture and real file: the segment map of the final state and of sampled states
/// never panics, every block and waste rect lies inside its segment's rect, every drawn item
/// has a text and is what `hit` finds at its centre, and block labels agree with §2: a block
/// restored from trace row r carries row r's version (the label its event row prints).
#[test]
fn segment_map_on_every_file() {
    use memviz_present::segmap::{Item, SegMap};
    use memviz_analysis::state::{RowContext, Source};
    let mut files: Vec<_> = SMALL_FIXTURES
        .iter()
        .map(|f| fixtures_dir().join(f))
        .collect();
    files.extend(corpus_files());
    let (mut maps, mut rects, mut orphans, mut reused) = (0usize, 0usize, 0usize, 0usize);
    for path in files {
        let snap = load_path(&path);
        for d in snap.devices() {
            let h = History::build(&snap, d, 64);
            let ctx = RowContext::new(&snap, d);
            let n = h.len();
            let ks: Vec<usize> = (0..n)
                .step_by((n / 12).max(1))
                .chain(n.checked_sub(1))
                .collect();
            let states = ks
                .iter()
                .map(|&k| (Some(k), h.state_after(&snap, k).expect("state")))
                .chain([(None, h.final_state(&snap))]);
            for (k, st) in states {
                let at = format!("{} device {d} event {k:?}", path.display());
                let m = SegMap::build(&st);
                maps += 1;
                rects += m.rect_count();
                orphans += m.orphans.len();
                assert!(m.rows >= 1, "{at}");
                for r in m.rects() {
                    assert!(
                        r.x0.is_finite() && r.x1.is_finite() && r.x0 <= r.x1,
                        "{at}: {r:?}"
                    );
                    assert!(
                        m.item_text(&snap, &ctx, &st, r.item).is_some(),
                        "{at}: {r:?}"
                    );
                    let (Item::Block(a) | Item::Waste(a)) = r.item else {
                        continue;
                    };
                    let (&sa, _) = st.segments.range(..=a).next_back().expect("a segment");
                    let s = m.rect_of(Item::Segment(sa)).expect("segment rect");
                    assert!(
                        r.y0 == s.y0 && r.y1 == s.y1 && r.x0 >= s.x0 - 1e-9 && r.x1 <= s.x1 + 1e-9,
                        "{at}: {r:?} outside {s:?}"
                    );
                    if r.x1 - r.x0 > 1e-6 {
                        let hit = m.hit((r.x0 + r.x1) / 2.0, (r.y0 + r.y1) / 2.0);
                        assert_eq!(hit, Some(r.item), "{at}: {r:?}");
                    }
                }
                // Labels: a block's version is its source's (trace row or final block).
                for (&a, b) in &st.blocks {
                    let v = b.version(&ctx);
                    match b.src.get() {
                        Source::Row(row) => {
                            let tr = snap.trace(d).expect("trace");
                            assert_eq!(tr.addr(row as usize), Some(a), "{at}");
                            assert_eq!(Some(v), ctx.event_version(row as usize));
                        }
                        Source::Final(i) => {
                            assert_eq!(snap.blocks.get(i as usize).map(|b| b.address), Some(a));
                            assert_eq!(Some(v), ctx.block_version(i as usize));
                        }
                        Source::Unknown => panic!("{at}: block {a:x} without a source"),
                    }
                    if v != memviz_present::tooltip::NO_VERSION && v > 0 {
                        reused += 1;
                    }
                }
                for (&a, g) in &st.segments {
                    assert!(g.label(a, &ctx).starts_with(&format!("s{a:x}_")));
                }
            }
        }
    }
    eprintln!(
        "{maps} maps, {rects} rects, {orphans} orphan blocks, {reused} labels with version > 0"
    );
    assert!(reused > 0, "some address was reused");
}

/// The label of a block restored by undoing a free (or a segment by undoing its free) is the
/// label of that event's row: the `free` at idx 3 of the vector, and every free of the
/// fixtures' traces.
#[test]
fn restored_labels_match_their_event_rows() {
    use memviz_analysis::state::{Kind, RowContext};
    let mut checked = 0;
    for name in [
        "vector.pickle",
        "truncated.pickle",
        "deferred.pickle",
        "expandable.pickle",
    ] {
        let snap = load_path(&fixtures_dir().join(name));
        let h = History::build(&snap, 0, 32);
        let ctx = RowContext::new(&snap, 0);
        for k in 1..h.len() {
            let e = h.event(&snap, k).expect("event");
            let Some(st) = h.state_after(&snap, k - 1) else {
                continue;
            };
            let label = match e.kind {
                Kind::Free | Kind::FreeCompleted => {
                    st.blocks.get(&e.addr).map(|b| b.label(e.addr, &ctx))
                }
                Kind::SegmentFree => st.segments.get(&e.addr).map(|g| g.label(e.addr, &ctx)),
                _ => continue,
            };
            let row = h.row_text(&snap, &ctx, k).expect("row");
            let label = label.expect("restored");
            // The label starts at column 14 (after the padded action).
            let rest = row.get(14..).and_then(|r| r.strip_prefix(label.as_str()));
            assert!(
                rest.is_some_and(|r| r.starts_with(' ')),
                "{name} event {k}: {label} vs {row}"
            );
            checked += 1;
        }
    }
    assert!(checked > 0);
}
