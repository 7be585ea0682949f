//! Every analysis of memviz-analysis on whatever snapshot arbitrary bytes load into: must never
//! panic, and the invariants that tie the analyses together must hold.
//!
//! Input: one control byte (which elements and events to look at closely), then the file.
//! Work is capped so one input stays fast: devices with more than [`MAX_TRACE_EVENTS`] trace
//! events are skipped, at most [`MAX_DEVICES`] devices are analysed, and a device whose timeline
//! has more than [`MAX_ELEMENTS`] elements (or that would take the total past
//! [`MAX_TOTAL_ELEMENTS`]) is skipped.
//!
//! Invariants (exact arithmetic is only assumed where no sum can saturate: every byte count of
//! the file below 2^40, see [`sane_sizes`]):
//! * exact and compact layouts agree (live bytes per step, peak, spans, bases, polylines);
//!   `peak_bytes` = the largest `live_at_step` = the timeline's and the summary's peak;
//! * the flamegraph at the peak totals `layout.peak_bytes`; over the whole trace (lifetime) it
//!   totals Σ `live_at_step`; its tree's root totals the entries; every rect is inside [0, 1]
//!   and a hit in a rect's middle finds that rect's node;
//! * `state::History` gives the same state after any event whatever its checkpoint interval;
//!   the state after the last event is the final snapshot's; its header totals are the sums of
//!   its segments and blocks; a segment-map hit lands inside the rect of the item it names;
//! * search results are sorted, in range and counted right; the empty query matches everything;
//! * the per-line table attributes every element exactly once;
//! * `diff(snap, snap)` is empty (all devices, and each device).
#![no_main]
use libfuzzer_sys::fuzz_target;
use memviz_analysis::flame::{self, At, FlameOptions, FlameTree, ValueUnit};
use memviz_present::layout::{Layout, LayoutOptions, PointMode};
use memviz_analysis::lines::{self, LineOptions};
use memviz_analysis::search::{parse_query, search};
use memviz_present::segmap::SegMap;
use memviz_analysis::state::{header_text, History, RowContext, State};
use memviz_analysis::timeline::{self, Timeline};
use memviz_present::tooltip::{tooltip, TooltipContext};
use memviz_analysis::{annotations, diff, leaks, summary};
use memviz_snapshot::Snapshot;

const MAX_TRACE_EVENTS: usize = 5000;
const MAX_DEVICES: usize = 4;
const MAX_ELEMENTS: usize = 20_000;
const MAX_TOTAL_ELEMENTS: usize = 40_000;
/// Exact layouts above this many points fall back to compact (the default is 2^24).
const MAX_EXACT_POINTS: u64 = 1 << 20;
/// Byte counts below this never saturate a u64 sum of the few million terms a capped input has.
const SANE: u64 = 1 << 40;

/// Every byte count the analyses add up is below [`SANE`].
fn sane_sizes(snap: &Snapshot) -> bool {
    let segs = snap.segments.iter().all(|s| s.total_size < SANE);
    let blocks = snap
        .blocks
        .iter()
        .all(|b| b.size < SANE && b.requested_size < SANE);
    let traces = snap
        .devices()
        .into_iter()
        .all(|d| snap.trace(d).is_none_or(|t| t.sizes().all(|s| s < SANE)));
    segs && blocks && traces
}

/// A few indices of `0..n`: the first, the last, and two picked by `pick`.
fn picks(n: usize, pick: u8) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let p = pick as usize;
    let mut v = vec![0, n - 1, p % n, (p * 7919 + 13) % n];
    v.sort_unstable();
    v.dedup();
    v
}

fn check_layouts(tl: &Timeline, exact: &Layout, compact: &Layout, sane: bool) {
    assert_eq!(
        exact.live_at_step().to_vec(),
        compact.live_at_step().to_vec(),
        "live bytes by mode"
    );
    assert_eq!(exact.peak_bytes, compact.peak_bytes);
    assert_eq!(exact.peak_step, compact.peak_step);
    assert_eq!(exact.step_event().to_vec(), compact.step_event().to_vec());
    assert_eq!(exact.element_count(), tl.elements.len());
    let max = exact.live_at_step().iter().max().unwrap_or(0);
    assert_eq!(exact.peak_bytes, max, "peak is the largest live_at_step");
    if exact.step_count() > 0 {
        assert_eq!(
            exact.live_at_step().get(exact.peak_step as usize),
            Some(exact.peak_bytes)
        );
    }
    if sane {
        assert_eq!(
            exact.peak_bytes, tl.peak_live_bytes,
            "layout vs timeline peak"
        );
    }
    for e in 0..tl.elements.len() as u32 {
        assert_eq!(exact.span(e), compact.span(e));
        assert_eq!(exact.base_bytes(e), compact.base_bytes(e));
        assert_eq!(exact.height_bytes(e), compact.height_bytes(e));
    }
}

fn check_flame(snap: &Snapshot, device: i64, tl: &Timeline, layout: &Layout, sane: bool) {
    let opts = FlameOptions::default();
    let peak = flame::folded(snap, device, tl, layout, At::Peak, &opts);
    if sane {
        assert_eq!(
            flame::total(&peak),
            layout.peak_bytes,
            "flamegraph total at the peak"
        );
        for frames in [flame::FrameMode::All, flame::FrameMode::MyCode] {
            let o = FlameOptions {
                frames,
                ..opts.clone()
            };
            let peak_o = flame::folded(snap, device, tl, layout, At::Peak, &o);
            assert_eq!(flame::total(&peak_o), layout.peak_bytes);
        }
        let life = FlameOptions {
            lifetime: true,
            ..opts.clone()
        };
        let area = layout
            .live_at_step()
            .iter()
            .fold(0u64, |a, v| a.saturating_add(v));
        let lifetime = flame::folded(snap, device, tl, layout, At::Peak, &life);
        assert_eq!(
            flame::total(&lifetime),
            area,
            "lifetime total = area under the outline"
        );
    }
    let _ = flame::folded_text(&peak);
    let events = snap.trace(device).map_or(0, |t| t.len());
    if let Some(last) = events.checked_sub(1) {
        let at_end = flame::folded(snap, device, tl, layout, At::Event(last as u32), &opts);
        let _ = flame::folded_text(&at_end);
    }
    let tree = FlameTree::build(&peak, ValueUnit::Bytes);
    assert_eq!(
        tree.root().total,
        flame::total(&peak),
        "tree root = Σ entries"
    );
    assert_eq!(tree.grand_total, tree.root().total);
    let rects = tree.rects(0);
    for r in rects.iter().take(500) {
        assert!(
            0.0 <= r.x0 && r.x0 <= r.x1 && r.x1 <= 1.0 + 1e-9,
            "rect {:?} outside [0, 1]",
            (r.x0, r.x1)
        );
        if r.x1 - r.x0 > 1e-6 && r.x1 < 1.0 {
            let x = (r.x0 + r.x1) / 2.0;
            assert_eq!(
                tree.hit(x, r.depth),
                Some(r.node),
                "hit in the middle of a rect"
            );
        }
        let _ = tree.tooltip(r.node);
    }
    if let Some(r) = rects.get(rects.len() / 2) {
        let z = tree.zoom(r.node).expect("zoom into an existing node");
        assert_eq!(z.root().total, tree.node(r.node).map_or(0, |n| n.total));
        let _ = z.rects(0);
        let crumbs = tree.breadcrumb(r.node);
        assert_eq!(crumbs.first(), Some(&0));
        assert_eq!(crumbs.last(), Some(&r.node));
        let _ = tree.node_json(r.node);
    }
}

fn check_search(snap: &Snapshot, device: i64, tl: &Timeline, layout: &Layout, sane: bool) {
    for q in [
        "",
        "model",
        "/b[0-9a-f]+_\\d|^[a-z_]+\\.py:\\d+/i",
        "/(a|b)*c{2,5}$/",
    ] {
        let query = parse_query(q).expect("a fixed query parses");
        let r = search(snap, device, tl, &query);
        assert_eq!(r.count, r.elements.len());
        assert!(
            r.elements.windows(2).all(|w| w[0] < w[1]),
            "sorted, distinct"
        );
        assert!(r.elements.iter().all(|&e| (e as usize) < tl.elements.len()));
        if sane {
            let bytes = r.elements.iter().fold(0u64, |a, &e| {
                a.saturating_add(tl.elements.get(e as usize).map_or(0, |el| el.size_bytes))
            });
            assert_eq!(r.bytes, bytes, "search bytes = Σ sizes of the matches");
        }
        if q.is_empty() {
            assert_eq!(
                r.count,
                tl.elements.len(),
                "the empty query matches every element"
            );
        }
        let opts = FlameOptions::default();
        let all = flame::folded(snap, device, tl, layout, At::Peak, &opts);
        let marked = flame::folded_of(snap, device, tl, layout, At::Peak, &opts, Some(&r.elements));
        let t = FlameTree::build_marked(&all, &marked, ValueUnit::Bytes);
        assert!(t.root().matched <= t.root().total);
    }
}

fn check_lines(snap: &Snapshot, device: i64, tl: &Timeline, layout: &Layout, sane: bool) {
    for opts in [LineOptions::default(), LineOptions::ALL_FRAMES] {
        let rows = lines::line_table(snap, device, tl, layout, opts);
        let n: u64 = rows.iter().map(|r| r.count).sum();
        assert_eq!(
            n,
            tl.elements.len() as u64,
            "every element in exactly one row"
        );
        if sane {
            let total: u64 = rows.iter().map(|r| r.total_bytes).sum();
            let sizes: u64 = tl.elements.iter().map(|e| e.size_bytes).sum();
            assert_eq!(total, sizes);
        }
    }
    if layout.step_count() > 0 {
        let _ = lines::live_table(snap, device, tl, layout, layout.peak_step);
    }
}

fn check_state(snap: &Snapshot, device: i64, pick: u8, sane: bool) {
    let a = History::build(snap, device, 7);
    let b = History::build(snap, device, 64);
    let n = a.len();
    assert_eq!(n, b.len());
    assert!(a.state_after(snap, n).is_none(), "no state past the end");
    let ctx = RowContext::new(snap, device);
    let mut selected: Option<State> = None;
    for k in picks(n, pick) {
        let sa = a
            .state_after(snap, k)
            .expect("state after an event in range");
        let sb = b
            .state_after(snap, k)
            .expect("state after an event in range");
        assert_eq!(
            sa, sb,
            "state after event {k} depends on the checkpoint interval"
        );
        if k == n - 1 {
            assert_eq!(
                &sa,
                &a.final_state(snap),
                "after the last event: the final snapshot"
            );
        }
        if sane {
            let reserved: u64 = sa.segments.values().map(|s| s.size).sum();
            let allocated: u64 = sa.blocks.values().map(|b| b.requested).sum();
            if sa.inconsistencies == 0 {
                assert_eq!(sa.reserved_bytes, reserved, "header reserved = Σ segments");
                assert_eq!(sa.allocated_bytes, allocated, "header allocated = Σ blocks");
            }
        }
        let _ = header_text(&sa);
        let _ = a.row_text(snap, &ctx, k);
        selected = Some(sa);
    }
    let _ = a.oom_reports(snap);
    let state = selected.unwrap_or_else(|| a.final_state(snap));
    let map = SegMap::build(&state);
    let items: Vec<_> = map.items().take(200).collect();
    for item in items {
        let rect = map.rect_of(item).expect("a drawn item has a rect");
        let (x, y) = ((rect.x0 + rect.x1) / 2.0, (rect.y0 + rect.y1) / 2.0);
        if let Some(hit) = map.hit(x, y) {
            let r = map.rect_of(hit).expect("a hit item has a rect");
            assert!(
                r.contains(x, y),
                "a hit lands inside the rect of the item it names"
            );
        }
        let _ = map.item_text(snap, &ctx, &state, item);
    }
}

fn analyse_device(snap: &Snapshot, device: i64, pick: u8, sane: bool, budget: &mut usize) {
    let tl = timeline::build(snap, device);
    let n = tl.elements.len();
    if n > MAX_ELEMENTS || n > *budget {
        return;
    }
    *budget -= n;
    let exact = Layout::build(
        &tl,
        LayoutOptions {
            mode: PointMode::Exact,
            max_exact_points: MAX_EXACT_POINTS,
        },
    );
    let compact = Layout::build(
        &tl,
        LayoutOptions {
            mode: PointMode::Compact,
            ..LayoutOptions::default()
        },
    );
    check_layouts(&tl, &exact, &compact, sane);
    let ctx = TooltipContext::new(snap, device);
    for e in picks(n, pick) {
        let e = e as u32;
        let t = tooltip(snap, &ctx, &tl, &exact, e).expect("tooltip of an element");
        let _ = t.text();
        if exact.mode() == PointMode::Exact {
            let p: Vec<_> = exact.points(e).collect();
            let q: Vec<_> = compact.points(e).collect();
            assert_eq!(p, q, "polyline of element {e} by mode");
        }
        if let Some((a, b)) = exact.span(e) {
            let x = (a as f64 + b as f64) / 2.0;
            let y = exact.bottom_at(e, x).unwrap_or(0.0) + exact.height_bytes(e) as f64 / 2.0;
            let _ = exact.hit(x, y);
            let _ = compact.hit(x, y);
            let _ = exact.clipped_points(e, a as f64, b as f64);
        }
    }
    if exact.step_count() > 0 {
        let _ = exact.elements_at(exact.peak_step);
        let _ = exact.live_bytes_at(exact.peak_step as f64 + 0.5);
    }
    check_flame(snap, device, &tl, &exact, sane);
    check_search(snap, device, &tl, &exact, sane);
    check_lines(snap, device, &tl, &exact, sane);
    let _ = leaks::leaks(snap, device, &tl, &compact);
    let phases = annotations::phases(snap, device, &exact);
    for p in &phases {
        assert!(
            p.start_step <= p.end_step,
            "phase {:?} ends before it starts",
            p.name
        );
    }
    let _ = annotations::iterations(&phases);
    let _ = annotations::annotate_events(snap, device);

    for tl2 in [
        timeline::build_segments(snap, device),
        timeline::build_pools(snap, device),
    ] {
        if tl2.elements.len() > MAX_ELEMENTS {
            continue;
        }
        let l = Layout::build(
            &tl2,
            LayoutOptions {
                mode: PointMode::Compact,
                ..LayoutOptions::default()
            },
        );
        assert_eq!(l.element_count(), tl2.elements.len());
        for e in picks(tl2.elements.len(), pick) {
            let t = tooltip(snap, &ctx, &tl2, &l, e as u32).expect("tooltip of an element");
            let _ = t.text();
        }
    }
    check_state(snap, device, pick, sane);

    let d = diff::diff(snap, snap, Some(device));
    assert!(d.groups.is_empty() && d.segments_only_a.is_empty() && d.segments_only_b.is_empty());
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(snap) = memviz_snapshot::load_slice(rest) else {
        return;
    };
    let sane = sane_sizes(&snap);
    let s = summary::summarize(&snap);
    let _ = s.to_json();
    let mut budget = MAX_TOTAL_ELEMENTS;
    let devices = snap.devices();
    let mut analysed = 0;
    for &device in &devices {
        if analysed >= MAX_DEVICES {
            break;
        }
        if snap
            .trace(device)
            .is_some_and(|t| t.len() > MAX_TRACE_EVENTS)
        {
            continue;
        }
        analysed += 1;
        analyse_device(&snap, device, pick, sane, &mut budget);
    }
    let d = diff::diff(&snap, &snap, None);
    assert!(
        d.groups.is_empty(),
        "diff of a snapshot with itself has groups"
    );
    assert!(d.segments_only_a.is_empty() && d.segments_only_b.is_empty());
});
