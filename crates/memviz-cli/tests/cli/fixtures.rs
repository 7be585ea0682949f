//! Generated fixtures cover what no real file has: protocols 2 and 5, the C++ pickler's single
//! huge APPENDS, truncated ring buffers, deferred frees, LONG1 ≥ 2^63, legacy and odd layouts.

use crate::common;
use common::*;
use memviz_analysis::timeline::{self, Origin};
use memviz_snapshot::{Action, Layout};

#[test]
fn every_fixture_matches_the_oracle_at_every_chunk_size() {
    for name in SMALL_FIXTURES {
        let path = fixture(name);
        let bytes = std::fs::read(&path).expect("read");
        let whole = load_chunked(&bytes, bytes.len()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut ours = summary_json(&whole);
        let mut theirs = oracle(&path);
        ours["warnings"] = serde_json::Value::Null;
        theirs["warnings"] = serde_json::Value::Null;
        assert_eq!(ours, theirs, "{name}: summary differs from the oracle");
        let dump = whole.dump();
        for n in [1, 7, 4096] {
            assert!(
                load_chunked(&bytes, n).expect("chunked").dump() == dump,
                "{name}: chunk size {n} differs"
            );
        }
    }
}

#[test]
fn semantics_test_vector() {
    let s = load_path(&fixture("vector.pickle"));
    let t = timeline::build(&s, 0);
    let sizes: Vec<u64> = t.elements.iter().map(|e| e.size_bytes).collect();
    assert_eq!(sizes, [5, 20, 25, 3, 10]);
    assert_eq!(t.elements[0].origin, Origin::UnmatchedFree { event: 0 });
    assert_eq!(t.elements[4].origin, Origin::Ghost { block: 0 });
    assert_eq!(t.initially_present, [4, 0]);
    let actions: Vec<u32> = t.steps.iter().map(|s| s.element).collect();
    assert_eq!(actions, [0, 1, 2, 1, 3, 3]);
    assert_eq!(
        (t.start_live_bytes, t.peak_live_bytes, t.final_live_bytes),
        (15, 55, 35)
    );
    // Block addresses are computed from the segment, as the reference does.
    let addrs: Vec<u64> = s.blocks.iter().map(|b| b.address - 0x1000_0000).collect();
    assert_eq!(addrs, [0, 10, 30, 60]);
}

#[test]
fn protocol_2_cxx_single_appends_and_protocol_5() {
    let s = load_path(&fixture("proto2_cxx.pickle"));
    assert_eq!(s.protocol, 2);
    assert!(s.traces[0].len() >= 100_000, "{}", s.traces[0].len());
    let s5 = load_path(&fixture("proto5.pickle"));
    assert_eq!(s5.protocol, 5);
    assert!(s5.traces[0].len() > 100);
    // Frame lists are shared objects in the file and interned stacks in the model.
    assert!(s5.stacks.len() < s5.traces[0].len());
}

#[test]
fn long1_at_and_above_2_pow_63() {
    let s = load_path(&fixture("long1_big.pickle"));
    let big = 1u64 << 63;
    assert!(s.traces[0].addrs().any(|a| a == big), "2^63 address lost");
    assert!(s.traces[0].addrs().any(|a| a == big + 4096));
    assert!(s.segments.iter().any(|seg| seg.address >= big));
    // 2^64+5 cannot be an address; it sits in unknown keys, which are warnings.
    assert!(
        s.warnings.iter().any(|w| w.contains("huge_counter")),
        "{:?}",
        s.warnings
    );
}

#[test]
fn truncated_ring_buffer_gives_unmatched_frees() {
    let s = load_path(&fixture("truncated.pickle"));
    let t = timeline::build(&s, 0);
    let unmatched = t
        .elements
        .iter()
        .filter(|e| matches!(e.origin, Origin::UnmatchedFree { .. }))
        .count();
    assert!(unmatched > 0);
    assert_eq!(
        s.traces[0].action(0).expect("an event"),
        Action::FreeCompleted,
        "starts with a lone free_completed"
    );
}

#[test]
fn deferred_frees_pair_across_other_events() {
    let s = load_path(&fixture("deferred.pickle"));
    let tr = &s.traces[0];
    // Some free_completed is not directly after its free_requested…
    let non_adjacent = (1..tr.len())
        .filter(|&i| {
            tr.action(i) == Some(Action::FreeCompleted)
                && !(tr.action(i - 1) == Some(Action::FreeRequested)
                    && tr.addr(i - 1) == tr.addr(i))
        })
        .count();
    assert!(non_adjacent > 0);
    // …and still pairs with its allocation rather than becoming an unmatched free.
    let t = timeline::build(&s, 0);
    assert!(t
        .elements
        .iter()
        .all(|e| !matches!(e.origin, Origin::UnmatchedFree { .. })));
    assert!(s
        .blocks
        .iter()
        .any(|b| b.state == memviz_snapshot::BlockState::ActivePendingFree));
}

#[test]
fn legacy_bare_list_empty_and_unknown() {
    let legacy = load_path(&fixture("legacy_history.pickle"));
    assert!(!legacy.history.is_empty());
    assert!(
        legacy.blocks.iter().all(|b| b.requested_size > 0),
        "legacy fill"
    );
    let bare = load_path(&fixture("bare_list.pickle"));
    assert_eq!(bare.layout, Layout::BareList);
    assert_eq!(bare.devices(), [1]);
    let empty = load_path(&fixture("empty.pickle"));
    assert!(empty.segments.is_empty() && empty.traces[0].is_empty());
    let unk = load_path(&fixture("unknown_action.pickle"));
    assert!(unk.traces[0]
        .actions()
        .any(|a| matches!(a, Action::Unknown(_))));
    assert!(
        unk.warnings
            .iter()
            .any(|w| w.contains("workspace_snapshot")),
        "{:?}",
        unk.warnings
    );
}

#[test]
fn expandable_oom_settings_annotations() {
    let s = load_path(&fixture("expandable.pickle"));
    let tr = &s.traces[0];
    assert!(
        tr.actions().any(|a| a == Action::SegmentMap)
            && tr.actions().any(|a| a == Action::SegmentUnmap)
    );
    let oom = tr
        .actions()
        .position(|a| a == Action::Oom)
        .expect("oom event");
    assert!(tr.device_free_of(oom as u32).is_some());
    assert!(s.segments.iter().any(|x| x.is_expandable));
    assert_eq!(
        s.allocator_settings
            .as_ref()
            .and_then(|v| v.get("expandable_segments")),
        Some(&serde_json::Value::Bool(true))
    );
    assert!(!s.external_annotations.is_empty());
    assert!(tr.has_compile_context() && tr.has_user_metadata());
    let pools = load_path(&fixture("pools.pickle"));
    assert!(pools.segments.iter().any(|x| x.pool_id != (0, 0)));
}

#[test]
fn gzip_input_gives_the_same_model() {
    use std::io::Write;
    let bytes = std::fs::read(fixture("proto5.pickle")).expect("read");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&bytes).expect("gzip");
    let gz = gz.finish().expect("gzip");
    let a = load_chunked(&bytes, 4096).expect("raw").dump();
    let b = load_chunked(&gz, 1000).expect("gz").dump();
    assert!(a == b);
    let e = load_chunked(&gz[..gz.len() / 2], 1000).expect_err("truncated gzip fails");
    assert!(
        e.to_string().contains("truncated") || e.to_string().contains("gzip"),
        "{e}"
    );
}
