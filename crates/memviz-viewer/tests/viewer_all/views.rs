//! The allocator views through [`App`]: switching views, the State History's selection,
//! map hover texts and OOM report, and an offscreen screenshot of the segment map.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)]

use crate::common;

use common::*;
use memviz_viewer::answer::{MapItemKind, StateSelection, Tooltip};
use memviz_viewer::{App, ViewKind};

/// The selection after selecting event `k` (it exists).
fn select(app: &mut App, k: i64) -> StateSelection {
    app.state_select(k).expect("a selection")
}

/// Canvas point of a map item's centre.
fn centre(app: &mut App, kind: MapItemKind, addr: u64) -> [f64; 2] {
    app.state_item_center(kind, addr)
        .unwrap_or_else(|| panic!("{kind:?} {addr:#x} in the map"))
}

#[test]
fn state_history_on_the_vector() {
    const A: u64 = 0x1000_0000;
    let mut app = load_app(&fixture("vector.pickle"));
    app.resize(900.0, 500.0, 1.0);
    app.set_view(ViewKind::State);
    assert_eq!(app.view(), ViewKind::State);
    assert!(app.axis_ticks().y.is_empty(), "no axes over the map");
    // SEMANTICS §6.4: (reserved, allocated) after each event.
    let expected = [
        (100, 10),
        (100, 30),
        (100, 55),
        (100, 35),
        (100, 38),
        (100, 35),
    ];
    for (k, (r, a)) in expected.iter().enumerate() {
        let sel = select(&mut app, k as i64);
        assert_eq!(sel.event, Some(k));
        assert_eq!(
            (sel.reserved_bytes, sel.allocated_bytes),
            (*r, *a),
            "event {k}"
        );
        assert!(sel.oom.is_none());
    }
    let last = select(&mut app, -1);
    assert_eq!(last.event, Some(expected.len() - 1));
    assert_eq!(
        last.header,
        "(35.0B (35 bytes) allocated / 100.0B (100 bytes) reserved)"
    );
    // Rows: memory_viz's text, two lines each.
    let rows = app.state_rows(0, 100);
    assert_eq!(rows.len(), expected.len());
    assert!(!rows[0].text.contains("(stream 0)") && !rows[0].text.contains('\n'));
    // Search wraps and goes both ways.
    let k = app.state_search("free", 0, true);
    assert!(k > 0, "a free row after event 0");
    assert_eq!(app.state_search("no such text", 0, true), -1);
    let back = app.state_search("free", k, false);
    assert!(back >= 0 && back != k || rows.iter().filter(|r| r.text.contains("free")).count() == 1);
    assert!(rows[back as usize].text.contains("free"));
    assert!(!rows[0].text.contains("free") || k != 0);

    // Hover texts after event 2: blocks A (10/10), A+10 (20/20), A+30 (size 30, requested 25).
    app.state_select(2);
    let p = centre(&mut app, MapItemKind::Block, A + 10);
    let tip = app.pointer_move(p[0], p[1]).expect("block tooltip");
    assert!(matches!(tip, Tooltip::Item(_)), "{tip:?}");
    assert!(tip.title().starts_with("b1000000a_"), "{tip:?}");
    assert!(
        tip.text().contains("20.0B (20 bytes) allocation"),
        "{tip:?}"
    );
    let p = centre(&mut app, MapItemKind::Waste, A + 30);
    let tip = app.pointer_move(p[0], p[1]).expect("waste tooltip");
    assert!(
        tip.title()
            .starts_with("Free space lost due to rounding 5.0B (5 bytes)"),
        "{tip:?}"
    );
    // The segment beyond its last block (byte 80 of 100).
    let s = centre(&mut app, MapItemKind::Segment, A);
    let a = centre(&mut app, MapItemKind::Block, A);
    let px_per_byte = (s[0] - a[0]) / 45.0;
    let tip = app
        .pointer_move(s[0] + 30.0 * px_per_byte, s[1])
        .expect("segment tooltip");
    assert!(
        tip.title()
            .starts_with("s10000000_0: segment 100.0B (100 bytes) allocated"),
        "{tip:?}"
    );
    // A click pins; zoom and pan move the map camera, not the timeline's.
    let before = app.camera().x_range;
    app.pointer_down(p[0], p[1]);
    assert!(app.pointer_up(p[0], p[1]).unwrap().pinned());
    app.zoom_at(450.0, 250.0, 2.0);
    assert_eq!(
        app.camera().x_range,
        before,
        "the timeline camera did not move"
    );
    let st = app.state();
    assert_eq!(st.view, ViewKind::State);
    let xr = st.state_view.expect("the map's state").x_range;
    assert!(xr[1] - xr[0] < 150.0, "map zoomed: {xr:?}");
    // Back to the timeline: its hover works again.
    app.set_view(ViewKind::Active);
    assert_eq!(app.view(), ViewKind::Active);
    assert!(!app.axis_ticks().y.is_empty());
}

#[test]
fn oom_report_segments_and_pools_views() {
    let mut app = load_app(&fixture("expandable.pickle"));
    app.resize(900.0, 500.0, 1.0);
    app.set_view(ViewKind::State);
    let ooms = app.state_ooms();
    let k = *ooms.first().expect("an oom event");
    let sel = select(&mut app, k as i64);
    let oom = sel.oom.as_ref().unwrap_or_else(|| panic!("{sel:?}"));
    assert!(sel.text.as_deref().unwrap().starts_with("OOM (requested "));
    assert!(["fragmentation", "out_of_memory"].contains(&oom.report.kind));
    if let Some(b) = oom.biggest_live_text.first() {
        let addr: u64 = b.addr.parse().unwrap();
        let Some(Tooltip::Item(tip)) = app.state_focus(addr) else {
            panic!("focus gives a map tooltip")
        };
        assert!(tip.lines.pinned);
        assert_eq!(tip.item.addr, addr.to_string());
    }
    let settings = app.allocator_settings();
    assert!(settings
        .iter()
        .any(|r| r.key == "expandable_segments" && r.value == "True"));
    app.set_view(ViewKind::Segments);
    let st = app.state();
    assert_eq!(st.view, ViewKind::Segments);
    assert!(st.timeline.elements > 0);
    let mut pools = load_app(&fixture("pools.pickle"));
    pools.set_view(ViewKind::Pools);
    let st = pools.state();
    assert_eq!(st.view, ViewKind::Pools);
    assert!(st.timeline.elements > 0);
}

#[test]
fn screenshot_state_map() {
    let Some(mut off) = offscreen("screenshot_state_map") else {
        return;
    };
    let path = corpus_file(NOT_HANMIN).unwrap_or_else(|| fixture("deferred.pickle"));
    let mut app = load_app(&path);
    app.resize(1000.0, 600.0, 1.0);
    app.set_view(ViewKind::State);
    let mut gpu = memviz_viewer::GpuScene::new();
    let img = gpu.render_offscreen(app.frame(), &mut off).expect("render");
    write_png(&img, "viewer_state_map.png");
    let mut colors = std::collections::HashSet::new();
    for px in img.rgba.chunks_exact(4) {
        colors.insert([px[0], px[1], px[2]]);
    }
    assert!(colors.len() >= 4, "only {} colours", colors.len());
    // Zoomed in, segments get their borders (black) in the overlay.
    app.zoom_at(300.0, 100.0, 8.0);
    let zoomed = gpu.render_offscreen(app.frame(), &mut off).expect("render");
    write_png(&zoomed, "viewer_state_map_zoomed.png");
    assert!(
        zoomed.rgba.chunks_exact(4).any(|p| p[..3] == [0, 0, 0]),
        "borders drawn"
    );
    // Selecting an earlier event re-uploads the map.
    let n = select(&mut app, -1).count as u64;
    app.state_select((n / 2) as i64);
    let img2 = gpu.render_offscreen(app.frame(), &mut off).expect("render");
    write_png(&img2, "viewer_state_map_mid.png");
    assert_eq!(gpu.uploads, 2);
}

/// The GPU side uploads a frame's plot batches again exactly when what they belong to (file,
/// device, view kind) or their generation changes: a view switch re-uploads even at an equal
/// generation, a camera move or a redraw does not.
#[test]
fn gpu_scene_uploads_per_source_and_generation() {
    let Some(mut off) = offscreen("gpu_scene_uploads_per_source_and_generation") else {
        return;
    };
    let mut app = load_app(&fixture("deferred.pickle"));
    let mut gpu = memviz_viewer::GpuScene::new();
    let first = app.frame();
    assert_eq!(first.source.kind, ViewKind::Active);
    assert!(!first.batches.is_empty(), "the timeline has plot batches");
    gpu.render_offscreen(first, &mut off).expect("render");
    assert!(
        !app.needs_redraw(),
        "composing the frame takes the redraw flag"
    );
    gpu.render_offscreen(app.frame(), &mut off).expect("render");
    app.pan_by(30.0, 0.0);
    let panned = app.frame();
    let instances = gpu.visible_instances(&panned);
    gpu.render_offscreen(panned, &mut off).expect("render");
    assert_eq!(gpu.uploads, 1, "redraws and camera moves reuse the upload");
    assert!(instances > 0);
    // Same generation, another source: uploaded again.
    let mut other = app.frame();
    other.source.kind = ViewKind::Segments;
    gpu.render_offscreen(other, &mut off).expect("render");
    let mut other = app.frame();
    other.source.device += 1;
    gpu.render_offscreen(other, &mut off).expect("render");
    assert_eq!(gpu.uploads, 3);
    // Same source, another generation: uploaded again.
    let mut next = app.frame();
    next.generation = next.generation.wrapping_add(1);
    gpu.render_offscreen(next, &mut off).expect("render");
    assert_eq!(gpu.uploads, 4);
    // The app's own switches: to the State History and back.
    gpu.render_offscreen(app.frame(), &mut off).expect("render");
    app.set_view(ViewKind::State);
    let state = app.frame();
    assert_eq!(state.source.kind, ViewKind::State);
    gpu.render_offscreen(state, &mut off).expect("render");
    app.set_view(ViewKind::Active);
    gpu.render_offscreen(app.frame(), &mut off).expect("render");
    assert_eq!(gpu.uploads, 7);
}

/// A deep link's window and selection: `set_window` sets (and clamps) the visible window, `pin`
/// pins an element's tooltip and unpins on a negative or unknown element, and neither acts in
/// the State History or the flamegraph.
#[test]
fn deep_link_window_and_pin() {
    let mut app = load_app(&fixture("vector.pickle"));
    app.resize(900.0, 500.0, 1.0);
    app.set_window(1.0, 4.0, 0.0, 40.0);
    let st = app.state().timeline;
    assert_eq!(st.x_range, [1.0, 4.0]);
    assert_eq!(st.y_range, [0.0, 40.0]);
    // Out of range: clamped to the trace; NaN: ignored.
    app.set_window(-100.0, 1e9, 0.0, 1e12);
    let st = app.state().timeline;
    let (x, full) = (st.x_range, st.full_x);
    assert!(x[0] <= full[0] && x[1] >= full[1], "{x:?} covers {full:?}");
    assert!(x[1] - x[0] < 2.0 * (full[1] - full[0]), "{x:?} is clamped");
    app.set_window(f64::NAN, 2.0, 0.0, 1.0);
    assert_eq!(app.state().timeline.x_range, x);
    let Some(Tooltip::Element(tip)) = app.pin(1) else {
        panic!("element 1 exists")
    };
    assert!(tip.pinned);
    assert!(tip.info.title.starts_with("1 "), "{tip:?}");
    assert_eq!(app.pinned(), Some(1));
    assert!(app.pin(-1).is_none());
    assert_eq!(app.pinned(), None);
    assert!(app.pin(1_000_000).is_none());
    app.set_view(ViewKind::State);
    assert!(app.pin(1).is_none());
    app.set_window(0.0, 1.0, 0.0, 1.0);
    app.set_view(ViewKind::Active);
    assert_eq!(app.pinned(), None);
}

thread_local! {
    static USED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}
fn used() -> u64 {
    USED.with(std::cell::Cell::get)
}

/// A view that cannot fit in the memory left says so and is not built; the others keep
/// working, and views of other kinds are released to make room first.
#[test]
fn views_that_cannot_fit_say_so_and_the_others_work() {
    use memviz_viewer::memory::{view_bytes_per_event, Memory};
    let bytes = std::fs::read(fixture("pools.pickle")).unwrap();
    let snap = memviz_snapshot::load_slice(&bytes).unwrap();
    let events = snap.trace(snap.default_device()).unwrap().len() as u64;
    // Room for the Active Memory Timeline and the State History, not for Private Pools.
    let budget = events * view_bytes_per_event(ViewKind::Active) + 1000;
    let mut app = App::with_memory("pools.pickle", snap, Memory { used, budget });
    assert!(app.layout().is_some(), "the active timeline fits");
    assert_eq!(app.unavailable(), None);
    // Pretend the active view took its estimate: Private Pools no longer fits, even after
    // releasing the active view (the probe does not see the release).
    USED.with(|u| u.set(events * view_bytes_per_event(ViewKind::Active)));
    app.set_view(ViewKind::Pools);
    assert_eq!(app.view(), ViewKind::Pools);
    let why = app.unavailable().expect("pools cannot fit").to_owned();
    assert!(
        why.starts_with("The Allocated Memory incl. Private Pools view of this trace (")
            && why.contains("not shown; the other views still work"),
        "{why}"
    );
    assert!(app.layout().is_none(), "nothing built for it");
    // Its frame draws nothing and asks for nothing else.
    let _ = app.overlay();
    let _ = app.axis_ticks();
    // Memory freed: the same view builds when shown again, and its notice is gone.
    USED.with(|u| u.set(0));
    app.set_view(ViewKind::Active);
    assert_eq!(app.unavailable(), None);
    assert!(app.layout().is_some(), "the active timeline is rebuilt");
    app.set_view(ViewKind::Pools);
    assert_eq!(app.unavailable(), None);
    assert!(app.layout().is_some(), "pools built once there is room");
}

/// `set_theme`: the dark theme clears to the page's dark background and draws the gutters,
/// axes and the State History map's segments and borders in dark-theme colours; the data
/// colours are the same in both themes; switching back gives the light picture again.
#[test]
fn dark_theme_covers_the_canvas_and_the_state_map() {
    let Some(mut off) = offscreen("dark_theme_covers_the_canvas_and_the_state_map") else {
        return;
    };
    let path = corpus_file(NOT_HANMIN).unwrap_or_else(|| fixture("deferred.pickle"));
    let mut app = load_app(&path);
    app.resize(900.0, 500.0, 1.0);
    let mut gpu = memviz_viewer::GpuScene::new();
    let dark_bg = [21, 24, 30, 255];
    let colors = |img: &memviz_render::Image| {
        img.rgba
            .chunks_exact(4)
            .map(|p| [p[0], p[1], p[2], p[3]])
            .collect::<std::collections::HashSet<[u8; 4]>>()
    };
    let light = gpu.render_offscreen(app.frame(), &mut off).expect("render");
    assert_eq!(light.pixel(2, 2), Some([255, 255, 255, 255]));
    let req = serde_json::from_str(r#"{"method":"set_theme","dark":true}"#).unwrap();
    assert_eq!(app.request(req), memviz_viewer::Reply::SetTheme(()));
    assert!(app.theme().dark && app.needs_redraw());
    let dark = gpu.render_offscreen(app.frame(), &mut off).expect("render");
    write_png(&dark, "viewer_dark_timeline.png");
    // Gutter, overview strip background, no white left; the data colours are unchanged.
    assert_eq!(dark.pixel(2, 2), Some(dark_bg));
    assert!(!colors(&dark).contains(&[255, 255, 255, 255]));
    let (w, h) = (dark.width, dark.height);
    let mid = |img: &memviz_render::Image| img.pixel(w / 2, h / 2);
    assert_eq!(mid(&dark), mid(&light), "a data pixel keeps its colour");
    // The State History map: dark segment fill and masks.
    app.set_view(ViewKind::State);
    let map = gpu.render_offscreen(app.frame(), &mut off).expect("render");
    write_png(&map, "viewer_dark_state_map.png");
    assert_eq!(map.pixel(1, 1), Some(dark_bg));
    let c = colors(&map);
    assert!(!c.contains(&[238, 238, 238, 255]) && !c.contains(&[255, 255, 255, 255]));
    app.zoom_at(300.0, 100.0, 8.0);
    let zoomed = gpu.render_offscreen(app.frame(), &mut off).expect("render");
    let c = colors(&zoomed);
    assert!(c.contains(&[154, 163, 181, 255]), "light borders");
    assert!(!c.contains(&[0, 0, 0, 255]), "no black borders");
    // And back to light.
    app.set_theme(false);
    let again = gpu.render_offscreen(app.frame(), &mut off).expect("render");
    assert_eq!(again.pixel(1, 1), Some([255, 255, 255, 255]));
    assert!(
        colors(&again).contains(&[0, 0, 0, 255]),
        "black borders again"
    );
}
