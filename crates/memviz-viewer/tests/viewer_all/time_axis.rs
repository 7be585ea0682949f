//! The wall-clock time axis: linear in `time_us` (ticks, hover, brush, window), on a file with
//! uneven event times (`generate.py landmarks-uneven`), and event order where times are not
//! usable.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use memviz_viewer::answer::Tooltip;
use memviz_viewer::App;

/// Runs python on `generate.py` (args), writing `name` into a fresh directory.
fn generated(name: &str, args: &[&str]) -> PathBuf {
    let dir = repo_root()
        .join("target/test-fixtures")
        .join(format!("time-axis-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(name);
    let st = Command::new("python3")
        .current_dir(repo_root())
        .args(args)
        .arg(&out)
        .status()
        .expect("python3 runs");
    assert!(st.success(), "{args:?}");
    out
}

const MIB: f64 = 1048576.0;

/// The element the app's hover finds at time `t_us` (µs after the first event) and `bytes`.
fn element_at_time(app: &mut App, t_us: f64, bytes: f64) -> Option<u32> {
    let g = *app.geometry();
    let p = app.camera().css_px_from_data(&g, [t_us, bytes]);
    assert!(g.plot.contains(p), "({t_us}, {bytes}) is outside the plot");
    match app.hover(p[0], p[1]) {
        Some(Tooltip::Element(e)) => Some(e.info.element),
        None => None,
        other => panic!("not a timeline tooltip: {other:?}"),
    }
}

/// Ticks at `left + (v - x0) / (x1 - x0) * width`, in round steps, labelled in one unit.
fn assert_linear_ticks(app: &App, unit: &str) -> Vec<String> {
    let ticks = app.axis_ticks();
    assert_eq!(ticks.x_unit, "time");
    let (x0, x1) = app.camera().x_range;
    let p = app.geometry().plot;
    assert!(ticks.x.len() >= 3, "{:?}", ticks.x);
    for t in &ticks.x {
        let want = p.left + (t.value - x0) / (x1 - x0) * p.width();
        assert!((t.pos_css_px - want).abs() < 1e-6, "{t:?}: want {want}");
        assert!(t.label.ends_with(&format!(" {unit}")), "{t:?}");
    }
    let step = ticks.x[1].value - ticks.x[0].value;
    for w in ticks.x.windows(2) {
        assert!((w[1].value - w[0].value - step).abs() < 1e-9 * step.max(1.0));
    }
    ticks.x.iter().map(|t| t.label.clone()).collect()
}

#[test]
fn time_axis_is_linear_in_time_us() {
    // Step times (µs): 0, 200, 2200, 2300 ×4 (beta's free and gamma's slide), 10000 (delta).
    let p = generated(
        "lu.pickle",
        &["tests/fixtures/generate.py", "landmarks-uneven"],
    );
    let mut app = load_app(&p);
    app.resize(1024.0, 600.0, 1.0);
    assert!(app.state().timeline.has_time);
    assert_eq!(
        app.axis_ticks().x_unit,
        "timesteps",
        "event order by default"
    );
    assert_eq!(app.camera().full_x, (0.0, 8.0));
    app.set_time_axis(true);
    assert_eq!(app.state().x_axis, "time");
    let cam = *app.camera();
    assert_eq!(cam.full_x, (0.0, 10_000.0));
    assert_eq!(cam.x_range, cam.full_x, "the fitted window stays fitted");
    let labels = assert_linear_ticks(&app, "ms");
    assert_eq!(labels, ["0 ms", "2 ms", "4 ms", "6 ms", "8 ms", "10 ms"]);
    // What is drawn is in µs too.
    let (_, batches) = app.plot_batches();
    let lo = batches
        .iter()
        .map(|b| b.bbox[0])
        .fold(f64::INFINITY, f64::min);
    let hi = batches
        .iter()
        .map(|b| b.bbox[1])
        .fold(f64::NEG_INFINITY, f64::max);
    assert_eq!((lo, hi), (0.0, 10_000.0));

    // Hover picks what is alive at that time (elements: 0 alpha, 1 beta, 2 gamma, 3 delta).
    assert_eq!(element_at_time(&mut app, 100.0, 2.0 * MIB), Some(0));
    assert_eq!(
        element_at_time(&mut app, 100.0, 6.0 * MIB),
        None,
        "beta comes at 200 µs"
    );
    assert_eq!(element_at_time(&mut app, 1000.0, 8.0 * MIB), Some(1));
    assert_eq!(
        element_at_time(&mut app, 1000.0, 13.0 * MIB),
        None,
        "gamma comes at 2.2 ms"
    );
    assert_eq!(element_at_time(&mut app, 2250.0, 13.0 * MIB), Some(2));
    // Beta's free and three slide steps share 2300 µs; gamma then slides over 2.3–10 ms, from
    // 6.67 MiB (16/3 MiB down) to 4 MiB: at 6150 µs its bottom is at 5.33 MiB.
    assert_eq!(element_at_time(&mut app, 6150.0, 7.2 * MIB), Some(2));
    assert_eq!(element_at_time(&mut app, 6150.0, 5.2 * MIB), None);
    assert_eq!(element_at_time(&mut app, 6150.0, 7.5 * MIB), None);
    // Delta comes with the last event: zero width on a time axis, nothing to hover.
    assert_eq!(element_at_time(&mut app, 9990.0, 7.0 * MIB), None);

    // Zoomed in to 600 µs: µs labels, still linear.
    let y = app.camera().y_range;
    app.set_window(2000.0, 2600.0, y.0, y.1);
    assert_eq!(app.camera().x_range, (2000.0, 2600.0));
    let labels = assert_linear_ticks(&app, "µs");
    assert!(labels.contains(&"2300 µs".to_string()), "{labels:?}");

    // The brush (µs): y fits the live bytes of the timesteps shown (14 MiB at 2.2 ms).
    app.set_x_window(1000.0, 2250.0);
    let c = *app.camera();
    assert_eq!(c.x_range, (1000.0, 2250.0));
    assert!((c.y_range.1 - 14.0 * MIB * 1.05).abs() < 1.0, "{c:?}");

    // Back to event order: the same moments, in timesteps (1000 µs is 4/10 into step 1).
    app.set_time_axis(false);
    let c = *app.camera();
    assert_eq!(app.state().x_axis, "timesteps");
    assert_eq!(c.full_x, (0.0, 8.0));
    assert!(
        (c.x_range.0 - 1.4).abs() < 1e-9 && (c.x_range.1 - 2.5).abs() < 1e-9,
        "{c:?}"
    );
    assert_eq!(
        app.plot_batches()
            .1
            .iter()
            .map(|b| b.bbox[1])
            .fold(0.0, f64::max),
        8.0
    );
}

/// Times that are all equal, or mostly out of order, are not a time axis: event order stays.
#[test]
fn unusable_times_keep_event_order() {
    let code = |times: &str| {
        format!(
            "import sys; sys.path.insert(0, 'tests/fixtures'); import generate as g; \
             g.write_pickle(g.fx_landmarks({times}), sys.argv[1], 4)"
        )
    };
    for (name, times, usable) in [
        ("equal.pickle", "[0] * 6", false),
        ("backwards.pickle", "[0, 5000, 100, 200, 300, 400]", false),
        ("one-late.pickle", "[0, 200, 100, 2300, 2300, 10000]", true),
    ] {
        let p = generated(name, &["-c", &code(times)]);
        let mut app = load_app(&p);
        assert_eq!(app.state().timeline.has_time, usable, "{name}");
        app.set_time_axis(true);
        assert_eq!(
            app.state().x_axis,
            if usable { "time" } else { "timesteps" },
            "{name}"
        );
        let cam = *app.camera();
        assert!(cam.full_x.1 > cam.full_x.0, "{name}: {cam:?}");
        // Hover, ticks and a window work on either axis (no division by a zero span).
        let g = *app.geometry();
        let mid = [(g.plot.left + g.plot.right) / 2.0, g.plot.bottom - 5.0];
        assert!(app.hover(mid[0], mid[1]).is_some(), "{name}");
        assert!(app.axis_ticks().x.len() >= 2, "{name}");
        app.set_x_window(cam.full_x.0, cam.full_x.0);
        assert!(app.camera().x_range.1 > app.camera().x_range.0);
    }
}

/// The Active Cached Segment Timeline and the Private Pools view have x ticks on both axes.
#[test]
fn segment_and_pool_timelines_have_x_ticks() {
    use memviz_viewer::ViewKind;
    for name in ["pools.pickle", "expandable.pickle"] {
        let mut app = load_app(&fixture(name));
        for kind in [ViewKind::Segments, ViewKind::Pools, ViewKind::Active] {
            app.set_view(kind);
            for time in [false, true] {
                app.set_time_axis(time);
                let st = app.state();
                let ticks = app.axis_ticks();
                let want = if time && st.timeline.has_time {
                    "time"
                } else {
                    "timesteps"
                };
                assert_eq!(ticks.x_unit, want, "{name} {kind:?}");
                assert!(ticks.x.len() >= 2, "{name} {kind:?} {want}: {:?}", ticks.x);
                let p = app.geometry().plot;
                let (x0, x1) = app.camera().x_range;
                for t in &ticks.x {
                    let at = p.left + (t.value - x0) / (x1 - x0) * p.width();
                    assert!((t.pos_css_px - at).abs() < 1e-6, "{name} {kind:?}: {t:?}");
                }
                eprintln!(
                    "{name} {kind:?} {want}: {:?}",
                    ticks.x.iter().map(|t| &t.label).collect::<Vec<_>>()
                );
            }
        }
    }
}
