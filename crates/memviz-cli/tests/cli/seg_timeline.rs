//! The Active Cached Segment Timeline (`timeline::build_segments`, SEMANTICS.md §4 with
//! expandable segments) and Allocated Memory incl. Private Pools (`timeline::build_pools`, §5
//! simplified): hand-derived vectors, invariants on the fixtures and the real corpus, hostile
//! traces, and their layout, tooltips and colours.

use crate::common;
use common::*;
use memviz_present::color;
use memviz_analysis::frames::element_stack;
use memviz_present::layout::{self, Layout, LayoutOptions, PointMode};
use memviz_analysis::timeline::{self, Element, Origin, PoolInfo, Step, Timeline};
use memviz_present::tooltip::{self, TooltipContext, TooltipOrigin, UNMATCHED_FREE_NOTE};
use memviz_pickle::Interner;
use memviz_snapshot::{
    Action, Column, DeviceTrace, Segment, Snapshot, StackId, StackTable, NO_STR,
};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Segment events of every kind: a cudaMalloc'd segment freed and re-allocated, an expandable
/// range unmapped at the front, the back, the middle and across two mapped ranges, an unmap of
/// memory mapped before the trace, an unmap half before the trace and half in it, and final
/// segments that the trace maps entirely, partly (G+20: 30 of 60 bytes) or not at all (H).
const SEGMENTS_FIXTURE: &str = r#"
import pickle, sys
A, E, F, G, H = 0x10000000, 0x20000000, 0x30000000, 0x40000000, 0x50000000
GROW = [{"name": "grow", "filename": "/u/seg.py", "line": 3}]
PRE = [{"name": "pre", "filename": "/u/pre.py", "line": 9}]
def ev(action, addr, size, frames=()):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "frames": list(frames)}
trace = [
    ev("segment_alloc", A, 100),          # 0
    ev("alloc", A, 10),                   # 1 (not a segment event)
    ev("segment_map", E, 100),            # 2
    ev("segment_map", E + 100, 60),       # 3
    ev("segment_unmap", E, 20),           # 4 front of [E, E+100)
    ev("segment_unmap", E + 150, 10),     # 5 back of [E+100, E+160)
    ev("segment_unmap", E + 40, 20),      # 6 middle of [E+20, E+100)
    ev("segment_unmap", E + 90, 20),      # 7 across [E+60, E+100) and [E+100, E+150)
    ev("segment_unmap", F, 30),           # 8 mapped before the trace
    ev("free_requested", A, 10),          # 9
    ev("free_completed", A, 10),          # 10
    ev("segment_free", A, 100),           # 11
    ev("segment_alloc", A, 100, GROW),    # 12
    ev("segment_map", G, 50),             # 13
    ev("segment_unmap", G - 30, 50),      # 14 [G-30, G) before the trace, [G, G+20) from 13
]
def seg(addr, size, exp, frames=()):
    return {"device": 0, "address": addr, "total_size": size, "allocated_size": 0,
            "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "large",
            "segment_pool_id": (0, 0), "is_expandable": exp, "frames": list(frames),
            "blocks": [{"size": size, "requested_size": 0, "state": "inactive", "frames": []}]}
segments = [seg(A, 100, False), seg(E + 20, 20, True), seg(E + 60, 30, True),
            seg(E + 110, 40, True), seg(G + 20, 60, True, PRE), seg(H, 64, False)]
with open(sys.argv[1], "wb") as f:
    pickle.dump({"segments": segments, "device_traces": [trace]}, f, protocol=4)
"#;

/// Private pool (0,1) on stream 0 (final segments P1, P2; P2 cudaMalloc'd in the trace; a ghost
/// and an unmatched free in it), pool (0,2) on stream 777 known only from the events' pool ids
/// (no segment: its envelope grows with its active bytes), and a default-pool segment D.
const POOLS_FIXTURE: &str = r#"
import pickle, sys
P1, P2, D, Q = 0x60000000, 0x61000000, 0x70000000, 0x80000000
GHOST = [{"name": "init", "filename": "/u/init.py", "line": 7}]
def ev(action, addr, size, stream=0, pool=None):
    e = {"action": action, "addr": addr, "size": size, "stream": stream, "frames": []}
    if pool is not None:
        e["segment_pool_id"] = pool
    return e
trace = [
    ev("alloc", D, 30),                             # 0  default pool
    ev("alloc", P1 + 40, 60),                       # 1  (0,1) by address
    ev("segment_alloc", P2, 100),                   # 2  (0,1): reserved 200 -> 300
    ev("alloc", P2, 80),                            # 3
    ev("free_requested", P2, 80),                   # 4
    ev("free_completed", P2, 80),                   # 5
    ev("free_requested", P1 + 100, 20),             # 6  unmatched, in (0,1)
    ev("free_completed", P1 + 100, 20),             # 7
    ev("alloc", Q, 50, 777, (0, 2)),                # 8  (0,2): active 50
    ev("alloc", Q + 50, 30, 777, (0, 2)),           # 9  80
    ev("free_requested", Q, 50, 777, (0, 2)),       # 10
    ev("free_completed", Q, 50, 777, (0, 2)),       # 11 30
    ev("alloc", Q + 100, 70, 777, (0, 2)),          # 12 100
]
def seg(addr, size, pool, blocks):
    return {"device": 0, "address": addr, "total_size": size, "allocated_size": 0,
            "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "large",
            "segment_pool_id": pool, "is_expandable": False, "frames": [], "blocks": blocks}
def blk(size, state, req=0, frames=()):
    return {"size": size, "requested_size": req, "state": state, "frames": list(frames)}
segments = [
    seg(P1, 200, (0, 1), [blk(40, "active_allocated", 40, GHOST), blk(60, "active_allocated", 60),
                          blk(100, "inactive")]),
    seg(P2, 100, (0, 1), [blk(100, "inactive")]),
    seg(D, 100, (0, 0), [blk(30, "active_allocated", 30), blk(70, "inactive")]),
]
with open(sys.argv[1], "wb") as f:
    pickle.dump({"segments": segments, "device_traces": [trace]}, f, protocol=4)
"#;

fn python_fixture(name: &str, script: &str) -> PathBuf {
    let dir = fixtures_dir();
    let out = dir.join(format!("{name}.pickle"));
    let py = dir.join(format!("{name}.py"));
    python_file(&py, script, &out, &format!("{name} fixture script failed"));
    out
}

fn steps(t: &Timeline) -> Vec<(u32, u32, bool)> {
    t.steps
        .iter()
        .map(|s| (s.element, s.event, s.is_alloc))
        .collect()
}

fn size(t: &Timeline, e: u32) -> u64 {
    t.elements.get(e as usize).map_or(0, |x| x.size_bytes)
}

/// Live bytes after each trace event `0..n` (all steps of the event applied), as i128 so that
/// a broken timeline shows up as a wrong number rather than an overflow.
fn live_after_events(t: &Timeline, n: usize) -> Vec<i128> {
    let mut delta = vec![0i128; n];
    for s in &t.steps {
        let d = i128::from(size(t, s.element));
        let slot = delta
            .get_mut(s.event as usize)
            .unwrap_or_else(|| panic!("step event {} out of range", s.event));
        *slot += if s.is_alloc { d } else { -d };
    }
    let mut live = i128::from(t.start_live_bytes);
    delta
        .into_iter()
        .map(|d| {
            live += d;
            live
        })
        .collect()
}

/// Structural checks: initially-present elements, every element pushed once and freed at most
/// once, frees only of live elements, and the start / peak / final live bytes (saturating, as
/// the timeline computes them: only hostile sizes ever reach u64::MAX).
fn check_structure(name: &str, t: &Timeline) {
    let n = t.elements.len();
    let mut state = vec![0u8; n]; // 0 never live, 1 live, 2 freed
    for &i in &t.initially_present {
        let el = t
            .elements
            .get(i as usize)
            .expect("initial element in range");
        assert!(el.present_at_start(), "{name}: {el:?} listed initially");
        assert_eq!(state[i as usize], 0, "{name}: e{i} listed twice");
        state[i as usize] = 1;
    }
    let mut live: u64 = t
        .initially_present
        .iter()
        .fold(0u64, |a, &i| a.saturating_add(size(t, i)));
    assert_eq!(live, t.start_live_bytes, "{name}");
    let mut peak = live;
    for s in &t.steps {
        let i = s.element as usize;
        assert!(i < n, "{name}: step element out of range");
        if s.is_alloc {
            assert_eq!(state[i], 0, "{name}: e{i} allocated twice");
            assert!(!t.elements[i].present_at_start(), "{name}: e{i}");
            state[i] = 1;
            live = live.saturating_add(t.elements[i].size_bytes);
            peak = peak.max(live);
        } else {
            assert_eq!(state[i], 1, "{name}: e{i} freed while not live");
            assert_eq!(t.elements[i].free_event, Some(s.event), "{name}: e{i}");
            state[i] = 2;
            live = live.saturating_sub(t.elements[i].size_bytes);
        }
    }
    for (i, st) in state.iter().enumerate() {
        assert_ne!(*st, 0, "{name}: e{i} never appears");
        if *st == 1 {
            assert_eq!(t.elements[i].free_event, None, "{name}: e{i}");
        }
    }
    assert_eq!(live, t.final_live_bytes, "{name}");
    assert_eq!(peak, t.peak_live_bytes, "{name}");
}

fn device_segment_bytes(s: &Snapshot, d: i64) -> u128 {
    s.segments
        .iter()
        .filter(|x| x.device == d)
        .map(|x| u128::from(x.total_size))
        .sum()
}

/// Σ `size` of the segment events up to each event: alloc/map +, free/unmap −.
fn net_segment_deltas(s: &Snapshot, d: i64) -> Vec<i128> {
    let Some(tr) = s.trace(d) else {
        return Vec::new();
    };
    let mut acc: i128 = 0;
    (0..tr.len())
        .map(|i| {
            let sz = i128::from(tr.size(i).expect("row"));
            match tr.action(i).expect("row") {
                Action::SegmentAlloc | Action::SegmentMap => acc += sz,
                Action::SegmentFree | Action::SegmentUnmap => acc -= sz,
                _ => {}
            }
            acc
        })
        .collect()
}

#[test]
fn segments_hand_built_vector() {
    let s = load_path(&python_fixture("seg_vector", SEGMENTS_FIXTURE));
    let t = timeline::build_segments(&s, 0);
    check_structure("seg_vector", &t);
    let sizes: Vec<u64> = t.elements.iter().map(|e| e.size_bytes).collect();
    assert_eq!(
        sizes,
        [100, 100, 60, 80, 50, 20, 40, 30, 40, 30, 100, 50, 30, 30, 30, 64]
    );
    let sa = |event| Origin::SegmentAlloc { event };
    let origins: Vec<Origin> = t.elements.iter().map(|e| e.origin).collect();
    assert_eq!(
        origins,
        [
            sa(0),
            sa(2),
            sa(3),
            sa(2), // [E+20, E+100) after the front unmap: still event 2's
            sa(3), // [E+100, E+150) after the back unmap
            sa(2), // middle unmap: [E+20, E+40)
            sa(2), //               [E+60, E+100)
            sa(2), // unmap across two ranges: [E+60, E+90)
            sa(3), //                          [E+110, E+150)
            Origin::UnmatchedSegmentFree { event: 8 },
            sa(12),
            sa(13),
            Origin::UnmatchedSegmentFree { event: 14 }, // [G-30, G)
            sa(13),                                     // [G+20, G+50)
            Origin::Segment { segment: 4 },             // [G+50, G+80): G+20's uncovered bytes
            Origin::Segment { segment: 5 },             // H, never in the trace
        ]
    );
    assert_eq!(
        steps(&t),
        [
            (0, 0, true),
            (1, 2, true),
            (2, 3, true),
            (1, 4, false),
            (3, 4, true),
            (2, 5, false),
            (4, 5, true),
            (3, 6, false),
            (5, 6, true),
            (6, 6, true),
            (6, 7, false),
            (4, 7, false),
            (7, 7, true),
            (8, 7, true),
            (9, 8, false),
            (0, 11, false),
            (10, 12, true),
            (11, 13, true),
            (11, 14, false),
            (12, 14, false),
            (13, 14, true),
        ]
    );
    // Bottom first: the last final segment, …, the earliest unmatched unmap on top.
    assert_eq!(t.initially_present, [15, 14, 12, 9]);
    // Live bytes after every event = bytes mapped then (pre-trace memory included).
    let live = live_after_events(&t, 15);
    assert_eq!(
        live,
        [254, 254, 354, 414, 394, 384, 364, 344, 314, 314, 314, 214, 314, 364, 314]
    );
    assert_eq!(
        (t.start_live_bytes, t.peak_live_bytes, t.final_live_bytes),
        (154, 414, 314)
    );
    assert_eq!(u128::from(t.final_live_bytes), device_segment_bytes(&s, 0));
    // And equal to the start plus the net size of the segment events (a consistent trace).
    let net = net_segment_deltas(&s, 0);
    for (k, (l, d)) in live.iter().zip(&net).enumerate() {
        assert_eq!(*l, 154 + d, "event {k}");
    }
    // Free events are recorded on the elements.
    assert_eq!(t.elements[1].free_event, Some(4));
    assert_eq!(t.elements[4].free_event, Some(7));
    assert_eq!(t.elements[7].free_event, None);

    // Layout, tooltips, stacks and colours.
    let l = layout::build(&t);
    assert_eq!(l.peak_bytes, 414);
    let ctx = TooltipContext::new(&s, 0);
    let tip = |e| tooltip::tooltip(&s, &ctx, &t, &l, e).expect("element");
    let a = tip(10);
    assert_eq!(
        a.title,
        "10 Addr: s10000000_1, Size: 100.0B (100 bytes) allocation, Total memory used after allocation: 314.0B (314 bytes), Compile context: None, stream 0, pool_id (0, 0)"
    );
    assert_eq!(a.origin, TooltipOrigin::SegmentAlloc);
    assert_eq!(a.frames, ["/u/seg.py:3:grow"]);
    assert!(a.details.is_empty());
    // A piece keeps its map event's label and stack, and says it is a piece.
    let piece = tip(7);
    assert!(
        piece
            .title
            .starts_with("7 Addr: s20000000_0, Size: 30.0B (30 bytes) allocation"),
        "{}",
        piece.title
    );
    assert_eq!(piece.details, [tooltip::PARTIAL_RANGE_NOTE]);
    let un = tip(9);
    assert_eq!(
        un.title,
        "9 Addr: s30000000_0, Size: 30.0B (30 bytes) allocation, Total memory used after allocation: 154.0B (154 bytes), Compile context: None, stream 0, pool_id unknown"
    );
    assert_eq!(un.origin, TooltipOrigin::UnmatchedSegmentFree);
    assert_eq!(un.details, [UNMATCHED_FREE_NOTE]);
    let pre = tip(14);
    assert_eq!(
        pre.title,
        "14 Addr: s40000014_0, Size: 30.0B (30 bytes) allocation, Total memory used after allocation: 94.0B (94 bytes), Compile context: None, stream 0, pool_id (0, 0)"
    );
    assert_eq!(pre.origin, TooltipOrigin::Segment);
    assert_eq!(pre.details, [tooltip::SEGMENT_NOTE]);
    assert_eq!(pre.frames, ["/u/pre.py:9:pre"]);
    assert_eq!(element_stack(&s, 0, &t.elements[14]), s.segments[4].stack);
    assert_eq!(
        element_stack(&s, 0, &t.elements[10]),
        s.traces[0].stack(12).expect("row")
    );
    assert_eq!(element_stack(&s, 0, &t.elements[15]), StackId::EMPTY);
    let colors = color::element_colors(&s, 0, &t);
    assert_eq!(colors.len(), t.elements.len());
    assert_eq!(colors[15], color::NO_FRAMES_COLOR);
    assert_ne!(colors[10], color::NO_FRAMES_COLOR);
    assert_ne!(colors[10], color::POOL_COLOR);

    // build() sees only the block events; build_pools() equals it without private pools.
    let b = timeline::build(&s, 0);
    assert_eq!(b.elements.len(), 1);
    assert!(!timeline::has_private_pool(&s, 0));
    assert_same_timeline("seg_vector", &b, &timeline::build_pools(&s, 0));
}

#[test]
fn pools_hand_built_vector() {
    let s = load_path(&python_fixture("pool_vector", POOLS_FIXTURE));
    let t = timeline::build_pools(&s, 0);
    assert!(timeline::has_private_pool(&s, 0));
    check_structure("pool_vector", &t);
    assert_eq!(
        t.pools,
        [
            PoolInfo {
                id: (0, 1),
                stream: 0,
                capacity_bytes: 300,
                envelope: vec![(1, 200), (2, 300)],
            },
            PoolInfo {
                id: (0, 2),
                stream: 777,
                capacity_bytes: 100,
                envelope: vec![(3, 50), (4, 80), (5, 100)],
            },
        ]
    );
    // Pool (0,1): reserved starts at 200 + 100 (final) − 100 (segment_alloc in the trace) = 200,
    // active at 40 (ghost) + 20 (unmatched free): envelope 200, grows by 100 when P2 is
    // cudaMalloc'd (event 2), not when active bytes reach 200 (event 3). Pool (0,2): no
    // segments, so the envelope follows active bytes 50, 80, (30), 100.
    assert_eq!(
        t.elements,
        [
            Element {
                size_bytes: 30,
                origin: Origin::Alloc { event: 0 },
                free_event: None
            },
            Element {
                size_bytes: 200,
                origin: Origin::PoolInitial { pool: 0 },
                free_event: None
            },
            Element {
                size_bytes: 100,
                origin: Origin::PoolGrowth { pool: 0 },
                free_event: None
            },
            Element {
                size_bytes: 50,
                origin: Origin::PoolGrowth { pool: 1 },
                free_event: None
            },
            Element {
                size_bytes: 30,
                origin: Origin::PoolGrowth { pool: 1 },
                free_event: None
            },
            Element {
                size_bytes: 20,
                origin: Origin::PoolGrowth { pool: 1 },
                free_event: None
            },
        ]
    );
    assert_eq!(t.initially_present, [1]);
    assert_eq!(
        steps(&t),
        [
            (0, 0, true),
            (2, 2, true),
            (3, 8, true),
            (4, 9, true),
            (5, 12, true)
        ]
    );
    let live = live_after_events(&t, 13);
    assert_eq!(
        live,
        [230, 230, 330, 330, 330, 330, 330, 330, 380, 410, 410, 410, 430]
    );
    assert_eq!(
        (t.start_live_bytes, t.peak_live_bytes, t.final_live_bytes),
        (200, 430, 430)
    );
    // build(): every allocation is an element; live bytes never above build_pools'.
    let b = timeline::build(&s, 0);
    check_structure("pool_vector build", &b);
    let lb = live_after_events(&b, 13);
    // (A merged free counts at its free_requested, as in the layout.)
    assert_eq!(
        lb,
        [90, 150, 150, 230, 150, 150, 130, 130, 180, 210, 160, 160, 230]
    );
    assert!(lb.iter().zip(&live).all(|(b, p)| b <= p));

    // Tooltips, stacks, colours, legend.
    let l = layout::build(&t);
    let ctx = TooltipContext::new(&s, 0);
    let tip = |e| tooltip::tooltip(&s, &ctx, &t, &l, e).expect("element");
    assert_eq!(
        tip(1).text(),
        "Private Pool (0,1,s0): capacity 200.0B (200 bytes)"
    );
    assert_eq!(
        tip(2).text(),
        "Private Pool (0,1,s0): capacity 300.0B (300 bytes)"
    );
    assert_eq!(
        tip(4).text(),
        "Private Pool (0,2,s1): capacity 80.0B (80 bytes)"
    );
    assert_eq!(
        tip(5).text(),
        "Private Pool (0,2,s1): capacity 100.0B (100 bytes)"
    );
    assert_eq!(tip(5).origin, TooltipOrigin::PoolEnvelope);
    assert_eq!(tip(5).pool_id, Some((0, 2)));
    assert!(tip(0).title.starts_with("0 Addr: b70000000_0, Size: 30.0B"));
    let colors = color::element_colors(&s, 0, &t);
    assert_eq!(colors[1..], [color::POOL_COLOR; 5]);
    assert_eq!(color::rgba(color::POOL_COLOR), [0xba, 0xb0, 0xab, 255]);
    for e in 1..6 {
        assert_eq!(element_stack(&s, 0, &t.elements[e]), StackId::EMPTY);
    }
    let lg = color::legend(&s, 0, &t, &l, 5);
    assert_eq!(lg[0].label, color::POOL_LEGEND_LABEL);
    assert_eq!((lg[0].bytes, lg[0].color), (400, color::POOL_COLOR));
}

fn assert_same_timeline(name: &str, a: &Timeline, b: &Timeline) {
    assert_eq!(a.elements, b.elements, "{name}");
    assert_eq!(a.initially_present, b.initially_present, "{name}");
    assert_eq!(a.steps, b.steps, "{name}");
    assert_eq!(
        (a.start_live_bytes, a.peak_live_bytes, a.final_live_bytes),
        (b.start_live_bytes, b.peak_live_bytes, b.final_live_bytes),
        "{name}"
    );
    assert!(b.pools.is_empty(), "{name}");
}

/// What the invariants found on one (file, device).
struct Report {
    name: String,
    device: i64,
    events: usize,
    seg_elements: usize,
    /// Unmatched segment frees / unmaps, and final segments with bytes the trace never mapped.
    unmatched: usize,
    pre_existing: usize,
    final_segments: u128,
    seg_final: u64,
    consistent: bool,
    pools: usize,
}

/// Invariants of both builders on one file; returns one report per device.
fn check_file(path: &Path) -> Vec<Report> {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let s = load_path(path);
    let mut out = Vec::new();
    for d in s.devices() {
        let n = s.trace(d).map_or(0, |t| t.len());
        let t = timeline::build_segments(&s, d);
        check_structure(&name, &t);
        let fin = device_segment_bytes(&s, d);
        // Live bytes after each event = start + net segment deltas, when no event frees
        // unmapped bytes or maps mapped ones (true of every consistent trace).
        let live = live_after_events(&t, n);
        let net = net_segment_deltas(&s, d);
        let consistent = live
            .iter()
            .zip(&net)
            .all(|(l, x)| *l == i128::from(t.start_live_bytes) + x);
        // Pools.
        let b = timeline::build(&s, d);
        let p = timeline::build_pools(&s, d);
        check_structure(&name, &p);
        // Without a private pool, the viewer shares the Active timeline with this view.
        if !timeline::has_private_pool(&s, d) {
            assert_same_timeline(&name, &b, &p);
        }
        let lb = live_after_events(&b, n);
        let lp = live_after_events(&p, n);
        assert!(p.start_live_bytes >= b.start_live_bytes, "{name} dev {d}");
        for (k, (x, y)) in lb.iter().zip(&lp).enumerate() {
            assert!(
                x <= y,
                "{name} dev {d} event {k}: build {x} > build_pools {y}"
            );
        }
        assert!(p.peak_live_bytes >= b.peak_live_bytes, "{name} dev {d}");
        assert!(p.final_live_bytes >= b.final_live_bytes, "{name} dev {d}");
        for info in &p.pools {
            let reserved: u128 = s
                .segments
                .iter()
                .filter(|x| x.device == d && x.pool_id == info.id && x.stream == info.stream)
                .map(|x| u128::from(x.total_size))
                .sum();
            assert!(
                u128::from(info.capacity_bytes) >= reserved,
                "{name} dev {d}"
            );
            let total: u64 = info.envelope.iter().map(|&(e, _)| size(&p, e)).sum();
            assert_eq!(total, info.capacity_bytes, "{name} dev {d}");
            assert!(info
                .envelope
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        }
        out.push(Report {
            name: name.clone(),
            device: d,
            events: n,
            seg_elements: t.elements.len(),
            unmatched: t
                .elements
                .iter()
                .filter(|e| matches!(e.origin, Origin::UnmatchedSegmentFree { .. }))
                .count(),
            pre_existing: t
                .elements
                .iter()
                .filter(|e| matches!(e.origin, Origin::Segment { .. }))
                .count(),
            final_segments: fin,
            seg_final: t.final_live_bytes,
            consistent,
            pools: p.pools.len(),
        });
    }
    out
}

/// Layout, every tooltip (up to a cap), colours and legend of both builders never panic, and
/// the tooltips have the expected shape.
fn check_views(path: &Path, max_tooltips: usize) {
    let s = load_path(path);
    let name = path.display().to_string();
    for d in s.devices() {
        let ctx = TooltipContext::new(&s, d);
        for (kind, t) in [
            ("segments", timeline::build_segments(&s, d)),
            ("pools", timeline::build_pools(&s, d)),
        ] {
            let l = Layout::build(
                &t,
                LayoutOptions {
                    mode: PointMode::Compact,
                    ..LayoutOptions::default()
                },
            );
            assert!(l.peak_bytes >= t.peak_live_bytes, "{name} {kind}");
            let colors = color::element_colors(&s, d, &t);
            assert_eq!(colors.len(), t.elements.len());
            let stride = (t.elements.len() / max_tooltips.max(1)).max(1);
            for e in (0..t.elements.len()).step_by(stride) {
                let e = e as u32;
                let tip = tooltip::tooltip(&s, &ctx, &t, &l, e).expect("tooltip");
                let text = tip.text();
                match t.elements[e as usize].origin {
                    Origin::PoolInitial { .. } | Origin::PoolGrowth { .. } => {
                        assert!(text.starts_with("Private Pool ("), "{name}: {text}");
                        assert_eq!(colors[e as usize], color::POOL_COLOR);
                    }
                    Origin::SegmentAlloc { .. }
                    | Origin::UnmatchedSegmentFree { .. }
                    | Origin::Segment { .. } => {
                        assert!(text.starts_with(&format!("{e} Addr: s")), "{name}: {text}");
                    }
                    _ => assert!(text.starts_with(&format!("{e} Addr: b")), "{name}: {text}"),
                }
            }
            let lg = color::legend(&s, d, &t, &l, 5);
            let sum: u64 = lg.iter().map(|e| e.bytes).sum();
            assert!(sum <= l.peak_bytes, "{name} {kind}");
        }
    }
}

#[test]
fn fixtures_invariants_and_views() {
    let mut files: Vec<PathBuf> = SMALL_FIXTURES.iter().map(|f| fixture(f)).collect();
    files.push(hostile_fixture());
    for path in &files {
        for r in check_file(path) {
            // Every fixture's trace agrees with its final state, truncated.pickle included
            // (a ring-buffer cut loses only the oldest events).
            assert!(r.consistent, "{} dev {}", r.name, r.device);
            assert_eq!(
                u128::from(r.seg_final),
                r.final_segments,
                "{} dev {}",
                r.name,
                r.device
            );
        }
        check_views(path, 400);
    }
    // Expandable segments: the fixture maps and unmaps; pools: two private pools.
    let s = load_path(&fixture("expandable.pickle"));
    let t = timeline::build_segments(&s, 0);
    assert!(t
        .elements
        .iter()
        .any(|e| matches!(e.origin, Origin::SegmentAlloc { .. })));
    assert!(t.steps.iter().any(|s| !s.is_alloc));
    let s = load_path(&fixture("pools.pickle"));
    let p = timeline::build_pools(&s, 0);
    let mut ids: Vec<(i64, i64)> = p.pools.iter().map(|x| x.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids, [(0, 1), (0, 2)]);
}

/// The real corpus: for every file and device, build_segments' live bytes after the last event
/// equal Σ total_size of the device's final segments, and after every event equal the start
/// plus the net size of the segment events; build_pools' live bytes are never below build's.
#[test]
fn real_corpus_invariants() {
    let files = corpus_files();
    let mut inconsistent = Vec::new();
    for path in &files {
        for r in check_file(path) {
            eprintln!(
                "{} dev {}: {} events, {} segment elements ({} unmatched frees, {} pre-existing), final {} / segments {}, {} private pools{}",
                r.name,
                r.device,
                r.events,
                r.seg_elements,
                r.unmatched,
                r.pre_existing,
                r.seg_final,
                r.final_segments,
                r.pools,
                if r.consistent { "" } else { ", INCONSISTENT" }
            );
            if !r.consistent || u128::from(r.seg_final) != r.final_segments {
                inconsistent.push(format!("{} dev {}", r.name, r.device));
            }
        }
        check_views(path, 300);
    }
    assert!(inconsistent.is_empty(), "{inconsistent:?}");
}

// ---------------------------------------------------------------------------------------------
// Hostile traces, built directly as a `Snapshot`.

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut s = self.0;
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        self.0 = s;
        s
    }
    fn below(&mut self, m: u64) -> u64 {
        self.next() % m.max(1)
    }
}

fn segment(address: u64, total_size: u64, pool_id: (i64, i64), stream: u64) -> Segment {
    Segment {
        device: 0,
        address,
        total_size,
        allocated_size: 0,
        active_size: 0,
        requested_size: 0,
        stream,
        segment_type: NO_STR,
        pool_id,
        is_expandable: true,
        stack: StackId::EMPTY,
        blocks: (0, 0),
    }
}

type Event = (Action, u64, u64, u64, Option<(i64, i64)>);

fn snapshot_of(events: &[Event], segments: Vec<Segment>) -> Snapshot {
    let n = events.len();
    Snapshot {
        strings: Interner::default(),
        frames: Vec::new(),
        stacks: StackTable::default(),
        segments,
        blocks: Vec::new(),
        history: Vec::new(),
        block_forward_frames: Vec::new(),
        unknown_actions: Vec::new(),
        traces: vec![{
            let actions: Vec<Action> = events.iter().map(|e| e.0).collect();
            let addrs: Vec<u64> = events.iter().map(|e| e.1).collect();
            let sizes: Vec<u64> = events.iter().map(|e| e.2).collect();
            let mut t =
                DeviceTrace::from_columns(&actions, &addrs, &sizes, &[], &vec![StackId::EMPTY; n]);
            t.stream = Column::from_vec(events.iter().map(|e| e.3).collect(), 0);
            t.pool_id = events
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.4.map(|p| (i as u32, p)))
                .collect();
            t
        }],
        allocator_settings: None,
        external_annotations: Vec::new(),
        extra: Vec::new(),
        layout: memviz_snapshot::Layout::Dict,
        protocol: 4,
        warnings: Vec::new(),
    }
}

/// Random map / unmap / segment_alloc over a 4 KiB address space, checked against a bitmap:
/// overlapping maps, unmaps of unmapped bytes, partial overlaps everywhere, overlapping final
/// segments. Per event the unmatched bytes equal the unmapped bytes the event released, and the
/// live bytes equal the mapped bytes plus the not-yet-released pre-trace bytes plus the final
/// segments' uncovered bytes.
#[test]
fn random_ranges_match_a_bitmap_model() {
    const SPACE: u64 = 4096;
    for seed in 1..40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let n = 300;
        let mut events: Vec<Event> = Vec::new();
        for _ in 0..n {
            let a = rng.below(SPACE);
            let len = rng.below(600);
            let len = len.min(SPACE - a);
            let action = match rng.below(10) {
                0..=3 => Action::SegmentMap,
                4 => Action::SegmentAlloc,
                5..=8 => Action::SegmentUnmap,
                _ => Action::Alloc,
            };
            events.push((action, a, len, 0, None));
        }
        let segs: Vec<Segment> = (0..rng.below(6))
            .map(|_| {
                let a = rng.below(SPACE);
                segment(a, rng.below(SPACE - a), (0, 0), 0)
            })
            .collect();
        let s = snapshot_of(&events, segs.clone());
        let t = timeline::build_segments(&s, 0);
        check_structure("random", &t);
        let mut mapped = vec![false; SPACE as usize];
        let mut gaps = vec![0u64; n];
        let mut mapped_after = vec![0u64; n];
        for (k, &(action, a, len, _, _)) in events.iter().enumerate() {
            let r = a as usize..(a + len) as usize;
            match action {
                Action::SegmentMap | Action::SegmentAlloc => mapped[r].fill(true),
                Action::SegmentUnmap => {
                    gaps[k] = mapped[r.clone()].iter().filter(|m| !**m).count() as u64;
                    mapped[r].fill(false);
                }
                _ => {}
            }
            mapped_after[k] = mapped.iter().filter(|m| **m).count() as u64;
        }
        // Unmatched elements, per event.
        let mut got_gaps = vec![0u64; n];
        let mut uncovered: u64 = 0;
        for e in &t.elements {
            match e.origin {
                Origin::UnmatchedSegmentFree { event } => got_gaps[event as usize] += e.size_bytes,
                Origin::Segment { segment } => {
                    let sg = &segs[segment as usize];
                    let r = sg.address as usize..(sg.address + sg.total_size) as usize;
                    let free = mapped[r].iter().filter(|m| !**m).count() as u64;
                    assert_eq!(e.size_bytes, free, "seed {seed}");
                    uncovered += e.size_bytes;
                }
                _ => {}
            }
        }
        assert_eq!(got_gaps, gaps, "seed {seed}");
        let live = live_after_events(&t, n);
        let mut later_gaps: u64 = gaps.iter().sum();
        for k in 0..n {
            later_gaps -= gaps[k];
            assert_eq!(
                live[k],
                i128::from(mapped_after[k] + later_gaps + uncovered),
                "seed {seed} event {k}"
            );
        }
        let l = layout::build(&t);
        assert!(l.peak_bytes >= t.peak_live_bytes);
    }
}

/// Huge addresses and sizes, unmaps without maps, segment_free of nothing, zero sizes, pool ids
/// on everything, overlapping final segments with huge sizes: no panic, and the views work.
#[test]
fn hostile_values_do_not_panic() {
    let mut rng = Rng(0xDEAD_BEEF);
    let pick = |rng: &mut Rng| -> u64 {
        match rng.below(6) {
            0 => u64::MAX - rng.below(4),
            1 => 0,
            2 => rng.below(64),
            3 => 1 << 63,
            4 => u64::MAX / 2 + rng.below(1 << 20),
            _ => rng.next(),
        }
    };
    let actions = [
        Action::SegmentAlloc,
        Action::SegmentFree,
        Action::SegmentMap,
        Action::SegmentUnmap,
        Action::Alloc,
        Action::FreeRequested,
        Action::FreeCompleted,
        Action::Oom,
    ];
    let mut events: Vec<Event> = Vec::new();
    for _ in 0..5000 {
        let action = actions[rng.below(actions.len() as u64) as usize];
        let pool = match rng.below(4) {
            0 => Some((i64::MIN, i64::MAX)),
            1 => Some((0, rng.below(3) as i64)),
            _ => None,
        };
        events.push((action, pick(&mut rng), pick(&mut rng), rng.below(3), pool));
    }
    let segs: Vec<Segment> = (0..50)
        .map(|i| {
            segment(
                pick(&mut rng),
                pick(&mut rng),
                (0, (i % 3) as i64),
                rng.below(3),
            )
        })
        .collect();
    let s = snapshot_of(&events, segs);
    for d in [-1, 0, 1, i64::MAX] {
        let ctx = TooltipContext::new(&s, d);
        for t in [
            timeline::build(&s, d),
            timeline::build_segments(&s, d),
            timeline::build_pools(&s, d),
        ] {
            check_structure("hostile", &t);
            let l = layout::build(&t);
            let _ = color::element_colors(&s, d, &t);
            let _ = color::legend(&s, d, &t, &l, 5);
            for e in 0..t.elements.len() as u32 {
                let tip = tooltip::tooltip(&s, &ctx, &t, &l, e).expect("tooltip");
                let _ = tip.text();
            }
            assert!(tooltip::tooltip(&s, &ctx, &t, &l, u32::MAX).is_none());
        }
    }
    // A pool tooltip of a timeline whose pool list does not match is None, not a panic.
    let t = Timeline {
        elements: vec![Element {
            size_bytes: 1,
            origin: Origin::PoolGrowth { pool: 99 },
            free_event: None,
        }],
        steps: vec![Step {
            element: 0,
            event: 0,
            is_alloc: true,
        }],
        ..Timeline::default()
    };
    let l = layout::build(&t);
    let ctx = TooltipContext::new(&s, 0);
    assert!(tooltip::tooltip(&s, &ctx, &t, &l, 0).is_none());
}

/// A synthetic expandable-segment workload of `n` events: maps growing segments, unmapping
/// tails, fronts and middles, with private-pool allocations mixed in.
fn synthetic(n: usize) -> Snapshot {
    let mut rng = Rng(42);
    let mut events: Vec<Event> = Vec::with_capacity(n);
    let mut tails: Vec<u64> = (0..64).map(|i| (i + 1) << 36).collect();
    let mut live: Vec<(u64, u64)> = Vec::new();
    while events.len() < n {
        let k = rng.below(tails.len() as u64) as usize;
        match rng.below(8) {
            0..=2 => {
                let len = (1 + rng.below(8)) << 21;
                events.push((Action::SegmentMap, tails[k], len, 0, None));
                tails[k] += len;
            }
            3 => {
                let base = (k as u64 + 1) << 36;
                let span = tails[k] - base;
                if span > 0 {
                    let a = base + (rng.below(span) & !0xFFFFF);
                    let len = (1 + rng.below(4)) << 20;
                    events.push((Action::SegmentUnmap, a, len, 0, None));
                }
            }
            4..=5 => {
                let a = rng.next() & 0xFFFF_FFF0_0000;
                let len = 512 * (1 + rng.below(1000));
                let pool = (rng.below(4) == 0).then_some((0, 1 + rng.below(2) as i64));
                events.push((Action::Alloc, a, len, 0, pool));
                live.push((a, len));
            }
            _ => {
                if !live.is_empty() {
                    let i = rng.below(live.len() as u64) as usize;
                    let (a, len) = live.swap_remove(i);
                    events.push((Action::FreeCompleted, a, len, 0, None));
                }
            }
        }
    }
    events.truncate(n);
    snapshot_of(&events, Vec::new())
}

#[test]
fn synthetic_trace_builds() {
    let s = synthetic(50_000);
    let t = timeline::build_segments(&s, 0);
    check_structure("synthetic segments", &t);
    let p = timeline::build_pools(&s, 0);
    check_structure("synthetic pools", &p);
    assert!(!p.pools.is_empty());
}

/// `cargo test --release -p memviz-cli --test cli seg_timeline:: -- --ignored --nocapture`
/// (`MEMVIZ_SEG_FILES=a.pickle:b.pickle` adds files).
#[test]
#[ignore]
fn bench_seg_timeline() {
    let mut files = corpus_files();
    if let Ok(extra) = std::env::var("MEMVIZ_SEG_FILES") {
        files.extend(
            extra
                .split(':')
                .filter(|x| !x.is_empty())
                .map(PathBuf::from),
        );
    }
    let time = |label: &str, s: &Snapshot, d: i64| {
        let n = s.trace(d).map_or(0, |t| t.len());
        let t0 = Instant::now();
        let a = timeline::build(s, d);
        let t1 = Instant::now();
        let b = timeline::build_segments(s, d);
        let t2 = Instant::now();
        let c = timeline::build_pools(s, d);
        let t3 = Instant::now();
        eprintln!(
            "{label} dev {d}: {n} events; build {:.1} ms ({} el), build_segments {:.1} ms ({} el), build_pools {:.1} ms ({} el)",
            (t1 - t0).as_secs_f64() * 1e3,
            a.elements.len(),
            (t2 - t1).as_secs_f64() * 1e3,
            b.elements.len(),
            (t3 - t2).as_secs_f64() * 1e3,
            c.elements.len(),
        );
    };
    for path in &files {
        let s = load_path(path);
        for d in s.devices() {
            if s.trace(d).is_some_and(|t| t.len() > 5000) {
                time(&path.display().to_string(), &s, d);
            }
        }
    }
    time("synthetic 1M", &synthetic(1_000_000), 0);
}
