//! Viewer behaviour on the §3.6 test vector, a generated fixture and a real corpus file:
//! fitting, zoom anchoring, panning, hover, ticks, the brush, and an offscreen screenshot.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)]

use crate::common;

use common::*;
use memviz_viewer::answer::{ElementTip, SceneKind, TimelineState, Tooltip};
use memviz_viewer::App;

fn state(app: &App) -> TimelineState {
    app.state().timeline
}

/// A timeline element's tooltip, or a failure naming what came instead.
fn element_tip(t: Option<Tooltip>) -> ElementTip {
    match t {
        Some(Tooltip::Element(e)) => e,
        other => panic!("not a timeline tooltip: {other:?}"),
    }
}

fn check_fit(app: &App) {
    let layout = app.layout().unwrap();
    let cam = app.camera();
    assert_eq!(cam.x_range.0, 0.0);
    assert!(cam.x_range.1 >= f64::from(layout.step_count()));
    assert!(cam.y_range.0 <= 0.0);
    assert!(
        cam.y_range.1 >= layout.peak_bytes as f64,
        "top clips the peak"
    );
    // The peak's pixel row lies inside the plot, below its top edge.
    let g = app.geometry();
    let p = cam.css_px_from_data(g, [f64::from(layout.peak_step), layout.peak_bytes as f64]);
    assert!(p[1] > g.plot.top && p[1] <= g.plot.bottom, "{p:?}");
}

#[test]
fn vector_fit_hover_and_ticks() {
    let mut app = load_app(&fixture("vector.pickle"));
    app.resize(800.0, 500.0, 1.0);
    check_fit(&app);
    let s = state(&app);
    assert_eq!(s.peak_bytes, 55);
    assert_eq!(s.steps, 9);
    assert_eq!(s.scene, SceneKind::Static);
    // Element y (alloc A+30 = 0x1000001e, 25 bytes) sits on 30 bytes during timesteps [2, 4).
    let g = *app.geometry();
    let p = app.camera().css_px_from_data(&g, [3.5, 42.5]);
    let v = element_tip(app.hover(p[0], p[1]));
    assert!(v.info.address_label.starts_with("b1000001e_"), "{v:?}");
    assert_eq!(v.info.size_bytes, 25);
    let title = &v.info.title;
    assert!(
        title.contains("Addr: b1000001e_") && title.contains("Size: 25.0B (25 bytes)"),
        "{title}"
    );
    assert!(v.text.starts_with(title.as_str()));
    // Nothing above the stack.
    let above = app.camera().css_px_from_data(&g, [3.5, 56.0]);
    assert!(app.hover(above[0], above[1]).is_none());
    // Click pins; hovering elsewhere keeps the pinned tooltip; clicking again unpins.
    assert!(app.click(p[0], p[1]).is_some());
    assert_eq!(app.pinned(), Some(v.info.element));
    let still = app.hover(above[0], above[1]).expect("pinned tooltip");
    assert!(still.pinned());
    app.click(above[0], above[1]);
    assert_eq!(app.pinned(), None);
    let ticks = app.axis_ticks();
    assert!(ticks.y.len() >= 2, "{ticks:?}");
    assert!(ticks
        .y
        .iter()
        .all(|t| t.label == "0" || t.label.ends_with(" B")));
}

#[test]
fn small_fixture_interactions() {
    let mut app = load_app(&fixture("long1_big.pickle"));
    app.resize(1000.0, 600.0, 2.0);
    check_fit(&app);
    zoom_pan_checks(&mut app);
}

/// Default device = the longest trace (first on ties); switching devices refits.
#[test]
fn device_selector() {
    let mut app = load_app(&fixture("multidevice.pickle"));
    let snap = app.snapshot().unwrap();
    let lens: Vec<usize> = snap.traces.iter().map(|t| t.len()).collect();
    let longest = lens
        .iter()
        .enumerate()
        .fold(
            (0usize, 0usize),
            |best, (i, &l)| if l > best.1 { (i, l) } else { best },
        )
        .0;
    assert_eq!(app.device(), longest as i64, "{lens:?}");
    let devs = app.devices();
    assert!(devs.len() >= 2, "{devs:?}");
    for d in devs {
        let id = d.device;
        app.set_device(id);
        assert_eq!(app.device(), id);
        check_fit(&app);
        assert_eq!(app.state().device, id);
    }
    // A device that does not exist: empty, no panic.
    app.set_device(77);
    let _ = app.hover(500.0, 300.0);
    let _ = app.axis_ticks();
    app.settle();
    assert!(!app.select_file(5));
}

/// Every small fixture that loads survives the whole interaction surface.
#[test]
fn every_fixture_survives_interaction() {
    let dir = fixture("vector.pickle").parent().unwrap().to_path_buf();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for path in names {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Ok(snap) = memviz_snapshot::load_slice(&bytes) else {
            eprintln!(
                "{}: does not load (expected for broken fixtures)",
                path.display()
            );
            continue;
        };
        let mut app = App::new("f", snap);
        for (w, h, dpr) in [(1.0, 1.0, 0.0), (f64::NAN, 300.0, 3.0), (640.0, 400.0, 1.5)] {
            app.resize(w, h, dpr);
            let g = *app.geometry();
            for i in 0..20 {
                for j in 0..12 {
                    let x = g.css_w * f64::from(i) / 19.0;
                    let y = g.css_h * f64::from(j) / 11.0;
                    let _ = app.pointer_move(x, y);
                }
            }
            app.pointer_down(g.plot.left + 10.0, g.plot.top + 10.0);
            let _ = app.pointer_move(g.plot.left + 60.0, g.plot.top + 30.0);
            let _ = app.pointer_up(g.plot.left + 60.0, g.plot.top + 30.0);
            app.pointer_down(g.overview.left + 5.0, g.overview.top + 5.0);
            let _ = app.pointer_move(g.overview.left + 50.0, g.overview.top + 5.0);
            let _ = app.pointer_up(g.overview.left + 50.0, g.overview.top + 5.0);
            app.wheel(g.plot.left + 30.0, g.plot.top + 30.0, -500.0);
            for k in [
                "w",
                "s",
                "a",
                "d",
                "ArrowUp",
                "ArrowDown",
                "+",
                "-",
                "0",
                "x",
            ] {
                app.key(k);
            }
            app.settle();
            let _ = app.tick(0.0);
            let _ = app.tick(1000.0);
            let _ = app.overlay();
            let t = app.axis_ticks();
            assert!(t.y.windows(2).all(|w| w[0].value < w[1].value));
            let _ = app.legend(5);
            let _ = app.state();
            app.set_x_window(-5.0, 1e12);
            app.set_x_window(f64::NAN, 3.0);
            app.double_click();
        }
    }
}

fn zoom_pan_checks(app: &mut App) {
    let g = *app.geometry();
    let cursor = [
        g.plot.left + g.plot.width() * 0.3,
        g.plot.top + g.plot.height() * 0.6,
    ];
    let before = app.camera().data_from_css_px(&g, cursor);
    app.zoom_at(cursor[0], cursor[1], 2.0);
    let after = app.camera().data_from_css_px(&g, cursor);
    let (sx, sy) = (
        app.camera().x_range.1 - app.camera().x_range.0,
        app.camera().y_range.1 - app.camera().y_range.0,
    );
    assert!(
        (before[0] - after[0]).abs() <= sx * 1e-9,
        "{before:?} {after:?}"
    );
    assert!(
        (before[1] - after[1]).abs() <= sy * 1e-9,
        "{before:?} {after:?}"
    );
    // The zoom halved the spans.
    assert!(sx < (app.camera().full_x.1 - app.camera().full_x.0) * 0.6);
    // Pan right by 100 px: the window moves left (content follows the pointer).
    let x0 = app.camera().x_range.0;
    app.pan_by(100.0, 0.0);
    let moved = x0 - app.camera().x_range.0;
    assert!(
        (moved - 100.0 * sx / g.plot.width()).abs() < sx * 1e-9,
        "moved {moved}"
    );
    // Keys.
    assert!(app.key("d"));
    assert!(app.key("ArrowUp"));
    assert!(!app.key("q"));
    app.key("0");
    assert_eq!(app.camera().x_range, app.camera().full_x);
    app.zoom_at(cursor[0], cursor[1], 4.0);
    app.double_click();
    assert_eq!(app.camera().y_range, app.camera().full_y);
    // Absurd input never panics and keeps a sane window.
    app.zoom_at(f64::NAN, 1.0, 1e300);
    app.zoom_at(cursor[0], cursor[1], 1e300);
    app.pan_by(f64::INFINITY, 3.0);
    app.pan_by(1e300, -1e300);
    let c = app.camera();
    assert!(c.x_range.0.is_finite() && c.x_range.1 > c.x_range.0);
    assert!(c.y_range.0.is_finite() && c.y_range.1 > c.y_range.0);
    assert!(c.x_range.1 - c.x_range.0 >= c.min_span.0 * 0.999);
    app.fit();
}

#[test]
fn real_file_fit_zoom_hover_brush_ticks() {
    let Some(path) = corpus_file(NOT_HANMIN) else {
        return;
    };
    let mut app = load_app(&path);
    app.resize(1280.0, 720.0, 1.0);
    check_fit(&app);
    let s = state(&app);
    eprintln!("state: {s:?}");
    zoom_pan_checks(&mut app);

    // Hover in the middle of the tallest element's life.
    let layout = app.layout().unwrap();
    let e = (0..layout.element_count() as u32)
        .filter(|&e| layout.span(e).is_some_and(|(a, b)| b > a))
        .max_by_key(|&e| layout.height_bytes(e))
        .unwrap();
    let (a, b) = layout.span(e).unwrap();
    let x = f64::from(a + (b - a) / 2) + 0.5;
    let y = layout.bottom_at(e, x).unwrap() + layout.height_bytes(e) as f64 / 2.0;
    let size = layout.height_bytes(e);
    let g = *app.geometry();
    let p = app.camera().css_px_from_data(&g, [x, y]);
    let v = element_tip(app.hover(p[0], p[1]));
    assert_eq!(v.info.element, e);
    let label = &v.info.address_label;
    assert!(label.starts_with('b'));
    let title = &v.info.title;
    assert!(title.contains(&format!("Addr: {label}")), "{title}");
    assert!(
        title.contains(&memviz_analysis::format::size_long(size)),
        "{title}"
    );

    // Ticks: increasing, binary units, adapting to zoom.
    let t0 = app.axis_ticks();
    assert!(t0.y.len() >= 3 && t0.x.len() >= 3, "{t0:?}");
    for axis in [&t0.x, &t0.y] {
        assert!(axis.windows(2).all(|w| w[0].value < w[1].value));
    }
    assert!(t0.y.windows(2).all(|w| w[0].pos_css_px > w[1].pos_css_px));
    assert!(t0.x.windows(2).all(|w| w[0].pos_css_px < w[1].pos_css_px));
    assert!(
        t0.y.iter()
            .skip(1)
            .all(|t| t.label.ends_with("iB") || t.label.ends_with(" B")),
        "{:?}",
        t0.y
    );
    eprintln!(
        "x ({}): {:?}",
        t0.x_unit,
        t0.x.iter().map(|t| &t.label).collect::<Vec<_>>()
    );
    eprintln!("y: {:?}", t0.y.iter().map(|t| &t.label).collect::<Vec<_>>());
    let step0 = t0.y[1].value - t0.y[0].value;
    app.zoom_at(g.plot.left + 300.0, g.plot.top + 200.0, 16.0);
    let t1 = app.axis_ticks();
    assert!(t1.y.len() >= 2);
    assert!(
        t1.y[1].value - t1.y[0].value < step0,
        "y ticks adapt to zoom"
    );
    // Event order is the default; the time axis when chosen (and the trace has times).
    assert_eq!(t0.x_unit, "timesteps");
    if s.has_time {
        app.set_time_axis(true);
        let t = app.axis_ticks();
        assert_eq!(t.x_unit, "time");
        assert!(t.x.iter().all(|t| t.label.ends_with('s')), "{:?}", t.x);
        app.set_time_axis(false);
        assert_eq!(app.axis_ticks().x_unit, "timesteps");
    }

    // Brush: a window fits y to its own maximum.
    let steps = f64::from(app.layout().unwrap().step_count());
    app.set_x_window(steps * 0.1, steps * 0.2);
    let layout = app.layout().unwrap();
    let (a, b) = (
        (steps * 0.1).floor() as usize,
        (steps * 0.2).ceil() as usize,
    );
    let m = layout.live_at_step().range(a, b).max().unwrap() as f64;
    let c = app.camera();
    assert!((c.x_range.0 - steps * 0.1).abs() < 1e-6 && (c.x_range.1 - steps * 0.2).abs() < 1e-6);
    assert!((c.y_range.1 - m * 1.05).abs() < 1.0 && c.y_range.1 >= m);

    // Devices and legend JSON.
    assert!(app.devices().iter().any(|d| d.current));
    assert!(!app.legend(8).is_empty());
}

#[test]
fn screenshot_real_timeline() {
    let Some(path) = corpus_file(NOT_HANMIN) else {
        return;
    };
    let Some(mut off) = offscreen("screenshot_real_timeline") else {
        return;
    };
    let mut app = load_app(&path);
    app.resize(1280.0, 720.0, 1.0);
    app.settle();
    let mut gpu = memviz_viewer::GpuScene::new();
    let img = gpu.render_offscreen(app.frame(), &mut off).expect("render");
    let out = write_png(&img, "viewer_timeline.png");
    eprintln!("wrote {}", out.display());
    let mut colors = std::collections::HashSet::new();
    for px in img.rgba.chunks_exact(4) {
        colors.insert([px[0], px[1], px[2]]);
    }
    assert!(colors.len() >= 8, "only {} colours", colors.len());
    // The plot is not blank: a good share of the plot's pixels are not background.
    let g = *app.geometry();
    let mut painted = 0u32;
    let mut total = 0u32;
    for y in (g.plot.top as u32 + 2..g.plot.bottom as u32 - 2).step_by(4) {
        for x in (g.plot.left as u32 + 2..g.plot.right as u32 - 2).step_by(4) {
            total += 1;
            if img.pixel(x, y).is_some_and(|p| p != [255, 255, 255, 255]) {
                painted += 1;
            }
        }
    }
    assert!(painted * 5 > total, "plot mostly blank: {painted}/{total}");
    // A zoom only changes the view: no re-upload of a static scene.
    app.zoom_at(g.plot.left + 400.0, g.plot.top + 300.0, 3.0);
    let _ = gpu
        .render_offscreen(app.frame(), &mut off)
        .expect("render zoomed");
    // Frames before the camera settles reuse the uploaded batches.
    assert_eq!(gpu.uploads, 1);
    app.settle();
    // Hover draws the element's outline.
    let hovered = app.hover(g.plot.left + 700.0, g.plot.top + 200.0);
    assert!(hovered.is_some());
    let img2 = gpu
        .render_offscreen(app.frame(), &mut off)
        .expect("render zoomed");
    write_png(&img2, "viewer_timeline_zoomed.png");
    // The window lies inside the data: its lower half is painted all the way across.
    let mut blank = 0u32;
    let mut total = 0u32;
    let mid = (g.plot.top + g.plot.bottom) as u32 / 2;
    for y in (mid..g.plot.bottom as u32 - 2).step_by(7) {
        for x in (g.plot.left as u32 + 2..g.plot.right as u32 - 2).step_by(5) {
            total += 1;
            if img2.pixel(x, y) == Some([255, 255, 255, 255]) {
                blank += 1;
            }
        }
    }
    assert!(
        blank * 50 < total,
        "zoomed plot has holes: {blank}/{total} blank"
    );
    assert_eq!(gpu.uploads, if app.is_windowed() { 2 } else { 1 });
}
