//! The flamegraph's "reserved memory at the end" ([`FlameAt::Reserved`]): the tree of
//! `memviz segments`' lines (stream, segment, block state, frames), free space and gaps in a
//! neutral grey, and back to a moment of the timeline.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)]

use crate::common;

use common::*;
use memviz_analysis::flame::{FlameTree, ValueUnit};
use memviz_present::layout::{Layout, LayoutOptions};
use memviz_analysis::memory_viz::{reserved_entries, ReservedBy, FREE, GAPS};
use memviz_analysis::timeline;
use memviz_render::rgba;
use memviz_viewer::answer::{Avail, FlameState, FlameUnit};
use memviz_viewer::flame_view::FlameView;
use memviz_viewer::{DrawableView, FlameAt, PlotGeometry, ViewKind};

fn ready(a: Option<Avail<FlameState>>) -> FlameState {
    a.and_then(Avail::ready).expect("a flamegraph state")
}

/// Through the app: the total is the device's reserved bytes, the levels are stream, segment,
/// state; the peak comes back when a moment is chosen again.
#[test]
fn app_reserved_tree_is_the_segments_lines() {
    let mut paths = vec![fixture("proto5.pickle")];
    paths.extend(corpus_file(NOT_HANMIN));
    for path in paths {
        let mut app = load_app(&path);
        app.set_view(ViewKind::Flame);
        let peak = ready(app.flame_set(FlameAt::Peak, false, None)).total_bytes;
        let st = ready(app.flame_set(FlameAt::Reserved, false, None));
        let snap = app.file_snapshot(0).unwrap();
        let device = snap.default_device();
        let reserved: u64 = snap
            .segments
            .iter()
            .filter(|s| s.device == device)
            .map(|s| s.total_size)
            .sum();
        assert_eq!(st.total_bytes, reserved, "{}", path.display());
        assert_eq!(st.unit, FlameUnit::Bytes);
        assert!(!st.lifetime && st.at_step.is_none());
        let info = app.flame_info().unwrap();
        assert_eq!(info.state.total_bytes, reserved);
        let st = ready(app.flame_set(FlameAt::Peak, false, None));
        assert_eq!(st.total_bytes, peak, "{}", path.display());
    }
}

/// The view colours `<free>`, `<gaps>` and `inactive` nodes grey, and every level is where
/// `memviz segments` puts it.
#[test]
fn free_and_gaps_are_neutral() {
    let path = corpus_file(NOT_HANMIN).unwrap_or_else(|| fixture("proto5.pickle"));
    let snap = memviz_snapshot::load_slice(&std::fs::read(&path).unwrap()).unwrap();
    let device = snap.default_device();
    let tl = timeline::build(&snap, device);
    let layout = Layout::build(&tl, LayoutOptions::default());
    let mut v = FlameView::new(
        &snap,
        device,
        &tl,
        &layout,
        &PlotGeometry::new(1200.0, 700.0, 1.0),
    );
    let entries = reserved_entries(&snap, Some(device), ReservedBy::Segment);
    let tree = FlameTree::build(&entries, ValueUnit::Bytes);
    let st = v.show_reserved(tree);
    assert!(v.is_reserved());
    assert_eq!(st.total_bytes, entries.iter().map(|e| e.1).sum::<u64>());
    let t = v.tree();
    for n in &t.nodes {
        match n.depth {
            1 => assert!(n.name.starts_with("stream_"), "{}", n.name),
            2 => assert!(n.name.starts_with("seg_"), "{}", n.name),
            3 => assert!(
                [
                    "active_allocated",
                    "active_pending_free",
                    "inactive",
                    "unknown",
                    "<unaccounted>"
                ]
                .contains(&n.name.as_str()),
                "{}",
                n.name
            ),
            _ => {}
        }
    }
    let (_, batches) = v.batches();
    let colors: Vec<u32> = batches
        .iter()
        .flat_map(|b| b.instances.iter().map(|i| i.color))
        .collect();
    assert_eq!(colors.len(), v.rects().len());
    let grey = rgba(176, 180, 186, 255);
    let mut seen = 0;
    for (r, &c) in v.rects().iter().zip(&colors) {
        let name = &t.node(r.node).unwrap().name;
        let marker = [FREE, GAPS, "inactive", "<unaccounted>"].contains(&name.as_str());
        assert_eq!(c == grey, marker, "{name}");
        seen += usize::from(marker);
    }
    assert!(seen > 0, "no free space or gaps drawn");
}
