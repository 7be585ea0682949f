//! Allocator State History (SEMANTICS.md §6): the state after any event, from checkpoints.

mod common;
use common::*;
use memviz_analysis::state::{History, Kind};
use std::process::Command;

const A: u64 = 0x1000_0000;

/// SEMANTICS §6.4: `(reserved, allocated)` after each event of the §3.6 test vector.
#[test]
fn semantics_test_vector_states() {
    let snap = load_path(&fixtures_dir().join("vector.pickle"));
    for interval in [1, 2, 3, 100] {
        let h = History::build(&snap, 0, interval);
        let kinds: Vec<Kind> = h.events.iter().map(|e| e.kind).collect();
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
                let s = h.state_after(k).expect("state");
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
        assert!(h.state_after(6).is_none());
        let after2 = h.state_after(2).expect("state");
        let blocks: Vec<(u64, u64, u64)> = after2
            .blocks
            .iter()
            .map(|(a, b)| (a - A, b.size, b.requested))
            .collect();
        assert_eq!(blocks, [(0, 10, 10), (10, 20, 20), (30, 30, 25)]);
        assert_eq!(h.state_after(5).as_ref(), Some(h.final_state()));
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
            let n = full.events.len();
            assert_eq!(fast.events.len(), n);
            for k in (0..n).step_by((n / 40).max(1)).chain(n.checked_sub(1)) {
                assert_eq!(
                    fast.state_after(k),
                    full.state_after(k),
                    "{} device {d} event {k}",
                    path.display()
                );
            }
            if n > 0 {
                assert_eq!(fast.state_after(n - 1).as_ref(), Some(fast.final_state()));
            }
        }
    }
}

fn memviz(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_memviz"))
        .args(args)
        .output()
        .expect("memviz runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
            let Some(mut fwd) = h.state_after(0) else {
                continue;
            };
            // A consistent trace only: ring-buffer cuts and hand-made vectors free what they
            // never allocated, and undo then restores blocks a forward pass cannot know.
            let consistent = h.final_state().inconsistencies == 0
                && (0..h.events.len())
                    .all(|k| h.state_after(k).is_some_and(|s| s.inconsistencies == 0));
            if !consistent {
                skipped.push(format!("{} device {d}", path.display()));
                continue;
            }
            let n = h.events.len();
            let every = (n / 200).max(1);
            for k in 1..n {
                if let Some(e) = h.events.get(k) {
                    apply(&mut fwd, e);
                }
                if k % every == 0 || k == n - 1 {
                    let back = h.state_after(k).expect("state");
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
        .action
        .iter()
        .position(|a| *a == memviz_snapshot::Action::Oom)
        .expect("an oom event");
    let (code, out, err) = memviz(&["oom", path.to_str().expect("utf-8"), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    let reports = v.as_array().expect("a list");
    assert_eq!(reports.len(), 1, "{out}");
    let r = &reports[0];
    assert_eq!(r["requested_bytes"], tr.size[row]);
    assert_eq!(
        r["device_free_bytes"],
        tr.device_free_of(row as u32).expect("device_free")
    );
    let h = History::build(&snap, 0, 16);
    let k = r["event"].as_u64().expect("event") as usize;
    assert_eq!(h.events[k].row as usize, row);
    let st = h.state_after(k).expect("state");
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
    let texts: Vec<String> = (0..h.events.len())
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
