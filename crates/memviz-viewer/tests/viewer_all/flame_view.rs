//! The memory flamegraph view ([`FlameView`]): the SEMANTICS §3.6 vector at the peak and in
//! lifetime mode, hover, click-to-zoom and back, the breadcrumb and labels on a framed fixture,
//! the real corpus's peak, hostile input, and an offscreen screenshot of the icicle chart.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)]

use crate::common;

use common::*;
use memviz_analysis::flame::{At, FlameOptions, FrameMode, NO_FRAMES, ROOT_NAME};
use memviz_present::layout::{Layout, LayoutOptions};
use memviz_analysis::timeline::{self, Timeline};
use memviz_render::{Image, InstanceBatch, Offscreen};
use memviz_snapshot::Snapshot;
use memviz_viewer::answer::{Avail, FlameMoment, FlameState, FlameUnit, NodeTip, Tooltip};
use memviz_viewer::flame_view::{short_name, FlameView, MAX_ROW_CSS};
use memviz_viewer::DrawableView;
use memviz_viewer::FlameAt;
use memviz_viewer::PlotGeometry;

/// A flamegraph tooltip, or a failure naming what came instead.
fn node_tip(t: Option<Tooltip>) -> NodeTip {
    match t {
        Some(Tooltip::Node(n)) => n,
        other => panic!("not a flamegraph tooltip: {other:?}"),
    }
}

/// The flamegraph's state from an answer that may say it cannot fit.
fn ready(a: Option<Avail<FlameState>>) -> FlameState {
    a.and_then(Avail::ready).expect("a flamegraph state")
}

struct Dev {
    snap: Snapshot,
    device: i64,
    tl: Timeline,
    layout: Layout,
}

fn dev(path: &std::path::Path) -> Dev {
    let bytes = std::fs::read(path).unwrap();
    let snap = memviz_snapshot::load_slice(&bytes).unwrap();
    let device = snap.default_device();
    let tl = timeline::build(&snap, device);
    let layout = Layout::build(&tl, LayoutOptions::default());
    Dev {
        snap,
        device,
        tl,
        layout,
    }
}

fn view(d: &Dev, w: f64, h: f64) -> FlameView {
    FlameView::new(
        &d.snap,
        d.device,
        &d.tl,
        &d.layout,
        &PlotGeometry::new(w, h, 1.0),
    )
}

fn click(v: &mut FlameView, snap: &Snapshot, p: [f64; 2]) -> Option<Tooltip> {
    v.pointer_down(p[0], p[1]);
    assert!(v.pointer_move(snap, p[0], p[1]).is_none(), "dragging");
    v.pointer_up(snap, p[0], p[1])
}

/// The drawn rects are `FlameTree::rects` of the zoom root minus those under 1e-6 wide.
fn assert_rects_match(v: &FlameView) {
    let root = v.zoom_root();
    let want: Vec<_> = v
        .tree()
        .rects(root)
        .into_iter()
        .filter(|r| r.node == root || r.x1 - r.x0 >= 1e-6)
        .collect();
    assert_eq!(v.rects(), &want[..]);
}

fn render(v: &mut FlameView, off: &mut Offscreen) -> Image {
    let (_, batches) = v.batches();
    let up: Vec<InstanceBatch> = batches
        .iter()
        .map(|b| off.upload(b.origin, &b.instances))
        .collect();
    let ov = v.overlay();
    let ovb = off.upload(ov.origin, &ov.instances);
    let mut refs: Vec<&InstanceBatch> = up.iter().collect();
    refs.push(&ovb);
    off.render(&v.canvas_view(), memviz_viewer::app::CLEAR, &refs)
        .unwrap()
}

#[test]
fn vector_peak_hover_zoom_lifetime() {
    // Through the App, as the lead wires it.
    let app = load_app(&fixture("vector.pickle"));
    let snap = app.snapshot().unwrap();
    let device = app.device();
    let tl = timeline::build(snap, device);
    let layout = Layout::build(&tl, LayoutOptions::default());
    let mut v = FlameView::new(
        snap,
        device,
        &tl,
        &layout,
        &PlotGeometry::new(900.0, 500.0, 1.0),
    );
    let st = v.state();
    assert_eq!(st.total_bytes, 55, "{st:?}");
    assert_eq!(st.at, FlameMoment::Peak);
    assert_eq!(st.at_step, Some(2));
    assert!(!st.lifetime);
    // No frames at all in the file: no user frame, the Python mode.
    assert_eq!(st.frames, FrameMode::Python);
    assert!(!st.has_user_frames);
    assert_eq!(st.root, 0);
    assert_eq!(st.nodes, 2);
    assert_eq!(v.tree().root().total, 55);
    assert_rects_match(&v);
    assert_eq!(v.rects().len(), 2);
    assert_eq!(
        v.batches()
            .1
            .iter()
            .map(|b| b.instances.len())
            .sum::<usize>(),
        2
    );
    // A shallow tree: rows are MAX_ROW_CSS tall, the root's row at the top of the plot.
    let p0 = v.node_center_css(0).unwrap();
    let p1 = v.node_center_css(1).unwrap();
    assert!((p1[1] - p0[1] - MAX_ROW_CSS).abs() < 0.01, "{p0:?} {p1:?}");
    assert!(p0[1] < 8.0 + MAX_ROW_CSS, "root at the top: {p0:?}");
    assert!((p0[0] - 450.0).abs() < 1.0 && (p1[0] - 450.0).abs() < 1.0);

    // Hover gives the node's name, its stack and the share.
    let tip = node_tip(v.pointer_move(snap, p1[0], p1[1]));
    assert_eq!(tip.node, 1);
    assert_eq!(tip.info.as_ref().unwrap().name, NO_FRAMES);
    assert!(
        tip.lines.title.starts_with(NO_FRAMES)
            && tip.lines.title.contains("55.0B (55 bytes)")
            && tip.lines.title.contains("100.00% of total"),
        "{tip:?}"
    );
    assert_eq!(tip.lines.frames, [NO_FRAMES]);
    assert!(tip.lines.details.is_empty() && tip.lines.forward_frames.is_empty());
    assert!(!tip.lines.pinned);
    assert_eq!(v.state().hover, Some(1));
    assert!(v.take_needs_redraw());
    let tip = node_tip(v.pointer_move(snap, p0[0], p0[1]));
    assert_eq!(tip.info.unwrap().name, ROOT_NAME);
    assert!(tip.lines.frames.is_empty());
    // Below the tree, nothing.
    assert!(v.pointer_move(snap, 450.0, 400.0).is_none());
    v.pointer_leave();
    assert!(v.state().hover.is_none());

    // Breadcrumb at the root.
    let bc = v.breadcrumb();
    assert_eq!(bc.len(), 1);
    assert_eq!(bc[0].name, ROOT_NAME);
    assert_eq!(bc[0].total, 55);
    assert_eq!(bc[0].size, "55.0B (55 bytes)");

    // A click zooms into the node; clicking the new root zooms out.
    let gen0 = v.batches().0;
    // (The pointer is then over the second row, empty now: no tooltip.)
    assert!(click(&mut v, snap, p1).is_none());
    assert_eq!(v.zoom_root(), 1);
    assert!(v.batches().0 > gen0, "re-uploaded");
    let bc = v.breadcrumb();
    assert_eq!(bc.len(), 2);
    assert_eq!(bc[1].node, 1);
    assert_eq!(bc[1].name, NO_FRAMES);
    let st = v.state();
    assert_eq!(st.root, 1);
    assert_eq!(st.zoom_path, [0, 1]);
    assert_eq!(st.total_bytes, 55);
    assert_rects_match(&v);
    assert_eq!(v.rects().len(), 1);
    assert!(v.node_center_css(0).is_none(), "the old root is not drawn");
    let r = v.node_center_css(1).unwrap();
    assert!(r[1] < p1[1], "the zoomed node is now the top row");
    click(&mut v, snap, r);
    assert_eq!(v.zoom_root(), 0);
    assert_eq!(v.breadcrumb().len(), 1);
    assert_rects_match(&v);
    // zoom_to / zoom_out by id, unknown ids refused.
    assert!(v.zoom_to(1));
    assert!(!v.zoom_to(1));
    assert!(!v.zoom_to(99));
    assert!(v.zoom_out());
    assert!(!v.zoom_out());
    assert!(v.key("Home") && v.zoom_root() == 0);

    // A drag pans (no zoom); the wheel zooms at the cursor.
    v.zoom_at(450.0, 20.0, 4.0);
    let xr = v.state().x_range;
    let span = xr[1] - xr[0];
    assert!((span - 0.25).abs() < 1e-9, "{xr:?}");
    v.pointer_down(450.0, 20.0);
    v.pointer_move(snap, 500.0, 20.0);
    v.pointer_up(snap, 500.0, 20.0);
    assert_eq!(v.zoom_root(), 0, "a drag does not zoom");
    let xr2 = v.state().x_range;
    assert!(xr2[0] < xr[0], "panned left");
    assert!(v.key("0"));
    assert_eq!(v.state().x_range, [0.0, 1.0]);

    // Lifetime: Σ live_at_step = 396, in byte·steps.
    let st = v.set_moment(
        snap,
        device,
        &tl,
        &layout,
        At::Peak,
        true,
        FrameMode::Python,
    );
    assert_eq!(st.total_bytes, 396);
    assert!(st.lifetime);
    assert_eq!(st.unit, FlameUnit::ByteSteps);
    assert_eq!(st.root, 0);
    let bc = v.breadcrumb();
    assert_eq!(bc[0].size, "396 byte·steps");
    assert_rects_match(&v);
    // A lifetime step range [2, 7): 5 · 55.
    let opts = FlameOptions {
        lifetime: true,
        step_range: Some((2, 7)),
        ..FlameOptions::default()
    };
    let st = v.set_options(snap, device, &tl, &layout, At::Peak, opts);
    assert_eq!(st.total_bytes, 275);
    assert_eq!(st.step_range, Some([2, 7]));
    // Other moments: a timestep, an event, all frames.
    let st = v.set_moment(
        snap,
        device,
        &tl,
        &layout,
        At::Step(0),
        false,
        FrameMode::Python,
    );
    assert_eq!((st.total_bytes, st.at_step), (15, Some(0)));
    let st = v.set_moment(
        snap,
        device,
        &tl,
        &layout,
        At::Event(4),
        false,
        FrameMode::All,
    );
    assert_eq!(st.total_bytes, 35);
    assert_eq!(st.frames, FrameMode::All);
    assert_eq!(st.at, FlameMoment::Event);
    // Out of range: an empty tree, nothing hovers, nothing panics.
    let st = v.set_moment(
        snap,
        device,
        &tl,
        &layout,
        At::Step(9),
        false,
        FrameMode::Python,
    );
    assert_eq!(st.total_bytes, 0);
    assert!(st.at_step.is_none());
    let c = v.node_center_css(0).unwrap();
    assert!(v.pointer_move(snap, c[0], c[1]).is_none());
    assert!(click(&mut v, snap, c).is_none());
    assert_eq!(v.zoom_root(), 0);
    assert_rects_match(&v);
}

#[test]
fn framed_tree_zoom_breadcrumb_labels() {
    let d = dev(&fixture("proto2_cxx.pickle"));
    let mut v = view(&d, 1200.0, 700.0);
    let st = v.state();
    assert_eq!(st.total_bytes, d.layout.peak_bytes);
    assert!(st.rows >= 4, "{st:?}");
    assert_rects_match(&v);
    // Every drawn node's centre hovers to that node (the rects wide enough to aim at).
    let mut checked = 0;
    for r in v.rects().to_vec() {
        let Some(c) = v.node_center_css(r.node) else {
            panic!("node {} has no centre", r.node)
        };
        let sx = (r.x1 - r.x0) * 1184.0;
        if sx < 3.0 {
            continue;
        }
        let tip = node_tip(v.pointer_move(&d.snap, c[0], c[1]));
        assert_eq!(tip.node, r.node, "{tip:?}");
        let name = &v.tree().node(r.node).unwrap().name;
        assert_eq!(&tip.info.as_ref().unwrap().name, name);
        assert!(tip.lines.title.starts_with(name.as_str()));
        if r.node != 0 {
            // Innermost first: the node itself, then its callers up to the root's child.
            assert_eq!(tip.lines.frames.first().unwrap(), name);
            assert_eq!(tip.lines.frames.len(), r.depth as usize, "node→root");
            let crumbs: Vec<String> = v.breadcrumb().iter().map(|c| c.name.clone()).collect();
            let mut path: Vec<String> = v
                .tree()
                .breadcrumb(r.node)
                .into_iter()
                .skip(1)
                .map(|n| v.tree().node(n).unwrap().name.clone())
                .collect();
            path.reverse();
            assert_eq!(tip.lines.frames, path, "{crumbs:?}");
        }
        checked += 1;
    }
    assert!(checked >= 4, "{checked}");
    // Labels: the wide rects, with their names, inside the plot.
    let labels = v.labels();
    assert!(!labels.is_empty());
    assert_eq!(labels[0].text, ROOT_NAME);
    for l in &labels {
        let node = l.node;
        assert_eq!(l.text, v.tree().node(node).unwrap().name);
        let w = l.w_css;
        let x = l.x_css;
        assert!(w >= 40.0 && x >= 8.0 && x + w <= 1192.0 + 1e-9, "{l:?}");
        assert!((l.h_css - MAX_ROW_CSS * 0.92).abs() < 1e-6);
    }
    let wide = v
        .rects()
        .iter()
        .filter(|r| (r.x1 - r.x0) * 1184.0 >= 40.0)
        .count();
    assert_eq!(labels.len(), wide);

    // Zoom into the deepest wide node: breadcrumb = the tree's path, re-laid out to full width.
    let deep = *v
        .rects()
        .iter()
        .filter(|r| (r.x1 - r.x0) * 1184.0 >= 10.0 && r.depth >= 3)
        .max_by_key(|r| r.depth)
        .expect("a deep wide node");
    let c = v.node_center_css(deep.node).unwrap();
    click(&mut v, &d.snap, c);
    assert_eq!(v.zoom_root(), deep.node);
    let path: Vec<u32> = v.breadcrumb().iter().map(|e| e.node).collect();
    let want: Vec<u32> = v.tree().breadcrumb(deep.node);
    assert_eq!(path, want);
    assert_eq!(path.len(), deep.depth as usize + 1);
    assert_rects_match(&v);
    assert_eq!(v.rects()[0].node, deep.node);
    assert_eq!((v.rects()[0].x0, v.rects()[0].x1), (0.0, 1.0));
    assert_eq!(v.labels()[0].text, v.tree().node(deep.node).unwrap().name);
    // Zoom out one level at a time back to the root (click on the zoom root, Backspace).
    let c = v.node_center_css(deep.node).unwrap();
    click(&mut v, &d.snap, c);
    assert_eq!(
        Some(v.zoom_root()),
        v.tree().node(deep.node).unwrap().parent
    );
    while v.zoom_root() != 0 {
        assert!(v.key("Backspace"));
    }
    assert_rects_match(&v);
    // Resize keeps the fit; a big zoom in is capped and never panics.
    v.resize(600.0, 300.0, 2.0);
    assert_eq!(v.state().x_range, [0.0, 1.0]);
    for _ in 0..200 {
        v.zoom_at(300.0, 100.0, 10.0);
    }
    let xr = v.state().x_range;
    assert!(xr[1] > xr[0]);
    let _ = v.labels();
    let _ = v.overlay();
    // Hostile input.
    for (x, y) in [
        (f64::NAN, 1.0),
        (f64::INFINITY, f64::NEG_INFINITY),
        (-1e300, 1e300),
    ] {
        let _ = v.pointer_move(&d.snap, x, y);
        v.zoom_at(x, y, 2.0);
        v.zoom_at(10.0, 10.0, x);
        v.pan_by(x, y);
        v.pointer_down(x, y);
        let _ = v.pointer_up(&d.snap, x, y);
    }
    v.resize(f64::NAN, -5.0, 0.0);
    let st = v.state();
    let xr = &st.x_range;
    assert!(xr[0].is_finite() && xr[1].is_finite());
    assert!(!v.key("q"));
    // Empty snapshot: an empty tree.
    let e = dev(&fixture("empty.pickle"));
    let mut ev = view(&e, 400.0, 300.0);
    assert_eq!(ev.state().total_bytes, 0);
    assert!(ev.pointer_move(&e.snap, 200.0, 20.0).is_none());
    assert_eq!(ev.breadcrumb().len(), 1);
}

#[test]
fn short_names() {
    assert_eq!(short_name("/a/train.py:12:forward"), "forward");
    assert_eq!(
        short_name("C:\\x\\u.py:3:torch::autograd::f(int)"),
        "torch::autograd::f(int)"
    );
    assert_eq!(short_name("??:0:clone"), "clone");
    assert_eq!(short_name(ROOT_NAME), ROOT_NAME);
    assert_eq!(short_name("a:b:c"), "a:b:c");
    assert_eq!(short_name("x:12:"), "x:12:");
}

#[test]
fn corpus_peak_equals_layout() {
    let Some(path) = corpus_file(NOT_HANMIN) else {
        return;
    };
    let d = dev(&path);
    let mut v = view(&d, 1280.0, 720.0);
    let st = v.state();
    assert_eq!(st.total_bytes, d.layout.peak_bytes, "{st:?}");
    assert!(d.layout.peak_bytes > 0);
    assert_rects_match(&v);
    eprintln!(
        "corpus flame: {} nodes, {} rects, {} rows, built in {:.1} ms",
        st.nodes, st.rects, st.rows, v.build_ms
    );
    // All frames and lifetime keep their totals.
    let st = v.set_moment(
        &d.snap,
        d.device,
        &d.tl,
        &d.layout,
        At::Peak,
        false,
        FrameMode::All,
    );
    assert_eq!(Some(st.total_bytes), Some(d.layout.peak_bytes));
    let st = v.set_moment(
        &d.snap,
        d.device,
        &d.tl,
        &d.layout,
        At::Peak,
        true,
        FrameMode::Python,
    );
    let area = d
        .layout
        .live_at_step()
        .iter()
        .fold(0u64, |a, b| a.saturating_add(b));
    assert_eq!(st.total_bytes, area);
}

#[test]
fn screenshot_flame() {
    let Some(mut off) = offscreen("screenshot_flame") else {
        return;
    };
    let path = corpus_file(NOT_HANMIN).unwrap_or_else(|| fixture("proto2_cxx.pickle"));
    let d = dev(&path);
    let mut v = view(&d, 1000.0, 600.0);
    let img = render(&mut v, &mut off);
    write_png(&img, "viewer_flame.png");
    let mut colors = std::collections::HashSet::new();
    for px in img.rgba.chunks_exact(4) {
        colors.insert([px[0], px[1], px[2]]);
    }
    assert!(colors.len() >= 4, "only {} colours", colors.len());
    // The root row: a warm colour across the plot's width, at the top.
    let root = v.node_center_css(0).unwrap();
    let px = img.pixel(500, root[1] as u32).unwrap();
    assert!(px[0] >= 200 && px[2] <= 60, "root is warm: {px:?}");
    // The margin is masked white.
    assert_eq!(img.pixel(2, 2).unwrap()[..3], [255, 255, 255]);
    // Below the deepest row: background.
    let rows = f64::from(v.state().rows);
    let below = 8.0 + rows * MAX_ROW_CSS + 10.0;
    if below < 590.0 {
        assert_eq!(img.pixel(500, below as u32).unwrap()[..3], [255, 255, 255]);
    }
    // Hover outline and a zoomed-in chart: the root's biggest child with children.
    let node = v
        .tree()
        .root()
        .children
        .iter()
        .copied()
        .find(|&c| !v.tree().node(c).unwrap().children.is_empty())
        .expect("a child with children");
    let c = v.node_center_css(node).unwrap();
    v.pointer_move(&d.snap, c[0], c[1]);
    let hovered = render(&mut v, &mut off);
    write_png(&hovered, "viewer_flame_hover.png");
    let near = |p: &[u8], c: [u8; 3]| (0..3).all(|i| p[i].abs_diff(c[i]) <= 2);
    assert!(hovered
        .rgba
        .chunks_exact(4)
        .any(|p| near(p, [30, 100, 220])));
    v.pointer_down(c[0], c[1]);
    v.pointer_up(&d.snap, c[0], c[1]);
    assert_eq!(v.zoom_root(), node);
    let zoomed = render(&mut v, &mut off);
    write_png(&zoomed, "viewer_flame_zoomed.png");
}

/// Search matches on the flamegraph: with the timeline's matches set, the tree is the same and
/// each node's matched bytes are the live bytes at the peak of the matched elements under it
/// (derived here from the live set and the stacks); unmatched nodes are drawn faint grey, the
/// zoom survives, "only matches" draws the matches alone, and clearing restores the colours.
#[test]
fn search_matches_on_the_flamegraph() {
    use memviz_analysis::flame::{self, stack_frames};
    use memviz_analysis::frames::element_stack;
    use memviz_analysis::search::{parse_query, search};
    let d = dev(&fixture("proto2_cxx.pickle"));
    let mut v = view(&d, 1200.0, 700.0);
    let plain = v.tree().clone();
    let colors = |v: &FlameView| -> Vec<u32> {
        v.batches()
            .1
            .iter()
            .flat_map(|b| b.instances.iter().map(|t| t.color))
            .collect()
    };
    let plain_colors = colors(&v);
    // The function name of a big frame whose search matches some but not all elements.
    let mut leaves: Vec<_> = plain.nodes.iter().filter(|n| n.depth >= 2).collect();
    leaves.sort_by_key(|n| std::cmp::Reverse(n.total));
    let r = leaves
        .iter()
        .find_map(|n| {
            let q = parse_query(short_name(&n.name)).ok()?;
            let r = search(&d.snap, d.device, &d.tl, &q);
            (r.count > 0 && r.count < d.tl.elements.len() / 2).then_some(r)
        })
        .expect("a selective leaf name");
    // Zoom into the root's first child, then mark.
    let first = plain.root().children[0];
    assert!(v.zoom_to(first));
    v.set_matches(
        &d.snap,
        d.device,
        &d.tl,
        &d.layout,
        Some((r.elements.clone(), false)),
    );
    assert_eq!(v.zoom_root(), first, "the zoom path survives");
    let t = v.tree().clone();
    assert!(t.marked);
    assert_eq!(t.nodes.len(), plain.nodes.len());
    // Expected matched bytes per root-first frame path.
    let moment =
        flame::resolve(&d.layout, d.snap.trace(d.device).unwrap().len(), At::Peak).unwrap();
    let mut want: std::collections::HashMap<Vec<String>, u64> = Default::default();
    for e in flame::live_elements(&d.tl, &d.layout, &moment) {
        if r.elements.binary_search(&e).is_err() {
            continue;
        }
        let el = &d.tl.elements[e as usize];
        let mut sites = memviz_analysis::site::SiteCache::new(&d.snap, Default::default());
        let stack = element_stack(&d.snap, d.device, el);
        let frames = stack_frames(&d.snap, stack, v.options().frames, &mut sites);
        for k in 0..=frames.len() {
            *want.entry(frames[..k].to_vec()).or_insert(0) += d.layout.height_bytes(e);
        }
    }
    let path_of = |id: u32| -> Vec<String> {
        t.breadcrumb(id)
            .into_iter()
            .skip(1)
            .map(|n| t.node(n).unwrap().name.clone())
            .collect()
    };
    let mut marked = 0;
    for (id, n) in t.nodes.iter().enumerate() {
        let w = want.get(&path_of(id as u32)).copied().unwrap_or(0);
        assert_eq!(n.matched, w, "node {id} {}", n.name);
        marked += usize::from(w > 0);
    }
    assert!(marked >= 2 && marked < t.nodes.len(), "{marked}");
    let st = v.state();
    assert_eq!(st.matched, Some(want[&Vec::new()]));
    assert_eq!(st.only_matches, Some(false));
    // Colours: unmatched rects are the faint grey, matched ones keep the plain colour.
    v.zoom_to(0);
    let now = colors(&v);
    let faint = memviz_render::rgba(226, 226, 226, 255);
    for (i, r) in v.rects().iter().enumerate() {
        if t.node(r.node).unwrap().matched == 0 {
            assert_eq!(now[i], faint);
        } else {
            assert_eq!(now[i], plain_colors[i]);
        }
    }
    // Only matches: the tree of the matches alone.
    v.set_matches(
        &d.snap,
        d.device,
        &d.tl,
        &d.layout,
        Some((r.elements.clone(), true)),
    );
    assert_eq!(v.tree().grand_total, want[&Vec::new()]);
    assert!(v.tree().nodes.iter().all(|n| n.matched == n.total));
    // The hover text says what matched.
    let c = v.node_center_css(0).unwrap();
    let tip = node_tip(v.pointer_move(&d.snap, c[0], c[1]));
    assert!(tip.info.as_ref().unwrap().matched_text.is_some(), "{tip:?}");
    // Cleared.
    v.set_matches(&d.snap, d.device, &d.tl, &d.layout, None);
    assert_eq!(v.tree(), &plain);
    assert_eq!(colors(&v), plain_colors);
    assert!(v.state().matched.is_none());
}

/// The diff flamegraph: red where B grew, blue where it shrank, grey where equal, on screen;
/// setting a moment leaves it.
#[test]
fn diff_flamegraph_colours() {
    use memviz_analysis::flame::{FlameTree, ValueUnit};
    use memviz_viewer::flame_view::diff_color;
    let e = |f: &[&str], v: u64| (f.iter().map(|s| s.to_string()).collect::<Vec<_>>(), v);
    let a = [
        e(&["m", "grow"], 100),
        e(&["m", "same"], 100),
        e(&["gone"], 100),
    ];
    let b = [e(&["m", "grow"], 300), e(&["m", "same"], 100)];
    let tree = FlameTree::build_diff(&a, &b, ValueUnit::Bytes);
    let d = dev(&fixture("proto2_cxx.pickle"));
    let mut v = view(&d, 900.0, 400.0);
    let st = v.show_diff(tree, "a.pickle", "b.pickle", FrameMode::All);
    assert_eq!(st.frames, FrameMode::All);
    let diff = st.diff.as_ref().unwrap();
    assert_eq!(diff.a, "a.pickle");
    assert_eq!(diff.a_total, 300);
    assert_eq!(diff.b_total, 400);
    assert_eq!(st.total_bytes, 500);
    assert_eq!(diff_color(5, 5), memviz_render::rgba(214, 214, 214, 255));
    let red = diff_color(100, 300);
    let px = |c: u32| c.to_le_bytes();
    assert!(px(red)[0] > px(red)[2] + 80, "{:?}", px(red));
    let blue = diff_color(100, 0);
    assert_eq!(px(blue)[..3], [31, 119, 180], "all gone: the full blue");
    let node = |v: &FlameView, name: &str| {
        v.tree().nodes.iter().position(|n| n.name == name).unwrap() as u32
    };
    let info = node_tip(v.node_tooltip(node(&v, "grow"))).info.unwrap();
    assert_eq!((info.a, info.b), (Some(100), Some(300)));
    assert!(info.delta_text.unwrap().starts_with('+'));
    if let Some(mut off) = offscreen("diff_flamegraph") {
        let img = render(&mut v, &mut off);
        write_png(&img, "viewer_flame_diff.png");
        for (name, want) in [("grow", red), ("gone", blue), ("same", diff_color(1, 1))] {
            let c = v.node_center_css(node(&v, name)).unwrap();
            let p = img.pixel(c[0] as u32, c[1] as u32).unwrap();
            let w = px(want);
            assert!(
                (0..3).all(|i| p[i].abs_diff(w[i]) <= 3),
                "{name}: {p:?} vs {w:?}"
            );
        }
    }
    // A moment leaves the diff.
    let st = v.set_moment(
        &d.snap,
        d.device,
        &d.tl,
        &d.layout,
        At::Peak,
        false,
        FrameMode::Python,
    );
    assert!(st.diff.is_none());
    assert_eq!(st.total_bytes, d.layout.peak_bytes);
}

/// Through [`memviz_viewer::App`]: a search while the flamegraph is shown marks it (and works on
/// the Active Memory Timeline, whatever timeline was shown before), switching views keeps it
/// until cleared; a phase is a time range (its bytes × lifetime equal the area under the
/// outline over the phase's timesteps); the diff flamegraph of two opened files.
#[test]
fn app_search_phase_range_and_diff() {
    use memviz_viewer::ViewKind;
    let path = fixture("proto5.pickle");
    let mut app = load_app(&path);
    app.resize(1000.0, 600.0, 1.0);
    app.set_view(ViewKind::Segments);
    app.set_view(ViewKind::Flame);
    let state = |app: &mut memviz_viewer::App| app.flame_info().expect("flame info").state;
    let st = state(&mut app);
    assert!(st.matched.is_none());
    let peak = st.total_bytes;
    // Search for something every allocation has: all of the peak is matched.
    let r = app.search("/./", false).unwrap();
    assert!(r.count > 0);
    let st = state(&mut app);
    assert_eq!(st.matched, Some(peak), "{st:?}");
    // A search that matches nothing: nothing matched; only matches → an empty tree.
    app.search("no such frame anywhere", true);
    let st = state(&mut app);
    assert_eq!(st.matched, Some(0));
    assert_eq!(st.total_bytes, 0);
    assert_eq!(st.only_matches, Some(true));
    // The Active timeline carries the highlight; clearing clears the flamegraph too.
    app.set_view(ViewKind::Active);
    assert_eq!(app.highlighted(), Some(0));
    app.set_view(ViewKind::Flame);
    app.set_highlight(None, false);
    let st = state(&mut app);
    assert!(st.matched.is_none());
    assert_eq!(st.total_bytes, peak);
    // Phases as time ranges.
    let phases = app.flame_phases();
    assert!(!phases.is_empty());
    let layout = app.layout().unwrap().clone();
    for p in &phases {
        let (a, b) = (p.start_step, p.end_step);
        let st = ready(app.flame_set(FlameAt::Phase { index: p.index }, false, None));
        let area: u64 = layout.live_at_step().range(a as usize, b as usize).sum();
        assert_eq!(st.total_bytes, area, "{p:?}");
        assert_eq!(st.unit, FlameUnit::ByteSteps);
        assert_eq!(st.step_range, Some([a, b]));
        let st = ready(app.flame_set(FlameAt::Range { from: a, to: b }, false, None));
        assert_eq!(st.total_bytes, area);
    }
    // A bad range is the peak again.
    let st = ready(app.flame_set(FlameAt::Range { from: 9, to: 1 }, false, None));
    assert_eq!(st.total_bytes, peak);
    // The diff flamegraph of the file against a second, different file.
    let bytes = std::fs::read(fixture("proto2_cxx.pickle")).unwrap();
    app.add_file("b.pickle", memviz_snapshot::load_slice(&bytes).unwrap());
    let st = ready(app.flame_diff(0, 1, None));
    assert_eq!(app.view(), ViewKind::Flame);
    let diff = st.diff.unwrap();
    assert_eq!(diff.a, "proto5.pickle");
    assert_eq!(diff.b, "b.pickle");
    let live = |i: usize| -> u64 {
        let s = app.file_snapshot(i).unwrap();
        s.segments
            .iter()
            .flat_map(|seg| s.segment_blocks(seg))
            .filter(|b| b.state == memviz_snapshot::BlockState::ActiveAllocated)
            .map(|b| b.requested_size)
            .sum()
    };
    assert_eq!(diff.a_total, live(0));
    assert_eq!(diff.b_total, live(1));
    assert!(app.flame_diff(0, 7, None).is_none());
}
