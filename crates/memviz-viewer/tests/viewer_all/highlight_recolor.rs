//! A highlight repaints the scene (`PlotScene::recolor`) instead of building it again: the
//! repainted static, exact windowed and column scenes are the ones built with the new colours
//! (instances compared per batch as sets: a column level of detail's order within a batch is
//! a hash map's).
#![allow(clippy::unwrap_used, clippy::float_cmp)]

use crate::common;

use common::{fixture, load_app};
use memviz_analysis::timeline;
use memviz_present::{color, layout::Layout};
use memviz_viewer::scene::{build_columns, build_static, build_windowed, PlotScene};
use memviz_viewer::Batch;

/// Each batch's origin, box and instances (sorted), and the extent.
type Key = (Vec<([u64; 6], Vec<[u32; 8]>)>, [u64; 2]);

fn batches_key(batches: &[Batch], extent: [f64; 2]) -> Key {
    let batches = batches
        .iter()
        .map(|b| {
            let mut inst: Vec<[u32; 8]> = b
                .instances
                .iter()
                .map(|t| {
                    [
                        t.x0.to_bits(),
                        t.x1.to_bits(),
                        t.bottom0.to_bits(),
                        t.top0.to_bits(),
                        t.bottom1.to_bits(),
                        t.top1.to_bits(),
                        t.color,
                        t.flags,
                    ]
                })
                .collect();
            inst.sort_unstable();
            let [ox, oy] = b.origin;
            let [x0, x1, y0, y1] = b.bbox;
            let bits = [ox, oy, x0, x1, y0, y1].map(f64::to_bits);
            (bits, inst)
        })
        .collect();
    (batches, extent.map(f64::to_bits))
}

/// A scene built over a layout with the given colours.
type Build<'a> = Box<dyn Fn(&[u8]) -> PlotScene + 'a>;

fn key(s: &PlotScene) -> Key {
    batches_key(&s.batches, s.extent)
}

/// `colors` with every other element (and every third, with `only`) matched.
fn highlighted(colors: &[u8], only: bool) -> Vec<u8> {
    let other = if only {
        color::HIDDEN_COLOR
    } else {
        color::DIM_COLOR
    };
    let step = if only { 3 } else { 2 };
    let mut out = vec![other; colors.len()];
    for (e, c) in colors.iter().enumerate().step_by(step) {
        out[e] = *c;
    }
    out
}

#[test]
fn repainted_scenes_equal_rebuilt_ones() {
    for name in ["vector.pickle", "proto5.pickle", "pools.pickle"] {
        let path = fixture(name);
        let snap = memviz_snapshot::load_slice(&std::fs::read(&path).unwrap()).unwrap();
        for d in snap.devices() {
            let tl = timeline::build(&snap, d);
            let layout = Layout::build(&tl, Default::default());
            if layout.step_count() == 0 || layout.peak_bytes == 0 {
                continue;
            }
            let base = color::element_colors(&snap, d, &tl);
            let n = f64::from(layout.step_count());
            let peak = layout.peak_bytes as f64 * 1.05;
            let windows = [[0.0, n, 0.0, peak], [n * 0.3, n * 0.7, peak * 0.1, peak]];
            let builds: Vec<(&str, Build<'_>)> = vec![
                ("static", Box::new(|c: &[u8]| build_static(&layout, c))),
                (
                    "windowed",
                    Box::new(|c: &[u8]| build_windowed(&layout, c, windows[1], 97, peak / 400.0)),
                ),
                (
                    "columns (fit)",
                    Box::new(|c: &[u8]| build_columns(&layout, c, windows[0], 64, peak / 97.0)),
                ),
                (
                    "columns (window)",
                    Box::new(|c: &[u8]| build_columns(&layout, c, windows[1], 301, peak / 211.0)),
                ),
            ];
            for (what, build) in &builds {
                let mut scene = build(&base);
                let before = key(&scene);
                for only in [false, true] {
                    let hl = highlighted(&base, only);
                    assert!(scene.recolor(&hl), "{name} {what}");
                    assert!(
                        key(&scene) == key(&build(&hl)),
                        "{name} device {d} {what} only {only}: repainted ≠ rebuilt"
                    );
                }
                assert!(scene.recolor(&base));
                assert!(
                    key(&scene) == before,
                    "{name} device {d} {what}: cleared ≠ first"
                );
            }
        }
    }
}

/// Through the app: a highlight repaints the plot without a rebuild pending, and clearing it
/// gives back the plot as first drawn.
#[test]
fn app_highlight_repaints_and_clears() {
    let mut app = load_app(&fixture("vector.pickle"));
    app.resize(900.0, 500.0, 1.0);
    app.settle();
    let (_, b) = app.plot_batches();
    let first = batches_key(b, [0.0; 2]);
    let n = app.layout().unwrap().element_count() as u32;
    app.set_highlight(Some((0..n).step_by(2).collect()), false);
    assert!(!app.is_settling());
    let (_, b) = app.plot_batches();
    assert!(
        batches_key(b, [0.0; 2]) != first,
        "the highlight changed no colour"
    );
    app.set_highlight(None, false);
    let (_, b) = app.plot_batches();
    assert!(batches_key(b, [0.0; 2]) == first);
}
