//! The column level of detail (`scene::build_columns`) against a brute force: every cell (a
//! column's sampled timestep × a pixel row) it colours takes the colour of a largest element
//! drawn in that row at that timestep, and every row an element covers whole is coloured.
//! Ties between equal elements may go either way.
#![allow(clippy::unwrap_used, clippy::float_cmp)]

use crate::common;

use std::collections::HashMap;

use common::{corpus_file, fixture, NOT_HANMIN};
use memviz_analysis::timeline;
use memviz_present::{color, layout::Layout};
use memviz_viewer::scene::{build_columns, color_u32};

/// The sampled timestep of column `c`, as `build_columns` picks it: the highest live bytes in
/// the column's timesteps, the earliest of equals.
fn sample(layout: &Layout, wx0: f64, col_w: f64, c: u32) -> Option<u32> {
    let live = layout.live_at_step();
    let n = live.len();
    let xa = wx0 + f64::from(c) * col_w;
    let s0 = xa.max(0.0).floor() as usize;
    let s1 = ((xa + col_w).max(0.0).ceil() as usize).min(n).max(s0 + 1);
    (s0..s1.min(n))
        .zip(live.range(s0, s1))
        .max_by_key(|&(s, v)| (v, std::cmp::Reverse(s)))
        .map(|(s, _)| s as u32)
}

fn check(path: &std::path::Path) -> usize {
    let snap = memviz_snapshot::load_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut cells = 0;
    for d in snap.devices() {
        let tl = timeline::build(&snap, d);
        let layout = Layout::build(&tl, Default::default());
        let colors = color::element_colors(&snap, d, &tl);
        let n = f64::from(layout.step_count());
        let peak = layout.peak_bytes as f64 * 1.05;
        if layout.step_count() == 0 || peak <= 0.0 {
            continue;
        }
        let windows = [
            [0.0, n, 0.0, peak],
            [n * 0.3, n * 0.7, 0.0, peak],
            [n * 0.4, n * 0.6, peak * 0.2, peak * 0.6],
        ];
        for w in windows {
            for cols in [64u32, 301] {
                let rows = 97.0;
                let px = (w[3] - w[2]) / rows;
                let col_w = (w[1] - w[0]) / f64::from(cols);
                let scene = build_columns(&layout, &colors, w, cols, px);
                // Cells coloured: (column, row) → colour.
                let mut drawn: HashMap<(u32, i64), u32> = HashMap::new();
                for b in &scene.batches {
                    for t in &b.instances {
                        let x0 = b.origin[0] + f64::from(t.x0);
                        let x1 = b.origin[0] + f64::from(t.x1);
                        let y0 = b.origin[1] + f64::from(t.bottom0);
                        let y1 = b.origin[1] + f64::from(t.top0);
                        // Columns whose middle the piece covers (pieces are split at tile
                        // boundaries, which f32 coordinates may put a hair off a column's).
                        let c0 = ((x0 - w[0]) / col_w - 0.5 - 1e-3).ceil() as i64;
                        let c1 = ((x1 - w[0]) / col_w - 0.5 + 1e-3).ceil() as i64;
                        let r0 = ((y0 - w[2]) / px).round() as i64;
                        let r1 = ((y1 - w[2]) / px).round() as i64;
                        for c in c0.max(0)..c1 {
                            for r in r0..r1 {
                                let old = drawn.insert((c as u32, r), t.color);
                                assert!(
                                    old.is_none_or(|o| o == t.color),
                                    "{}: cell ({c}, {r}) drawn twice in two colours",
                                    path.display()
                                );
                            }
                        }
                    }
                }
                for c in 0..cols {
                    let Some(step) = sample(&layout, w[0], col_w, c) else {
                        continue;
                    };
                    // Not checked while a freed element slides out: the column stack still
                    // holds it at the last timestep of its span, which the hit index (and so
                    // `elements_at`) no longer does (one timestep; left for now).
                    if layout.slide_at_step(step).is_some() {
                        continue;
                    }
                    let stack: Vec<(f64, f64, u32)> = layout
                        .elements_at(step)
                        .into_iter()
                        .map(|(bottom, e)| (bottom, bottom + layout.height_bytes(e) as f64, e))
                        .filter(|&(b, t, _)| t > b)
                        .collect();
                    for r in 0..(rows as i64) {
                        let (lo, hi) = (w[2] + r as f64 * px, w[2] + (r + 1) as f64 * px);
                        // Elements reaching into the row by more than rounding.
                        let eps = px * 1e-3;
                        let inside: Vec<&(f64, f64, u32)> = stack
                            .iter()
                            .filter(|&&(b, t, _)| b < hi - eps && t > lo + eps)
                            .collect();
                        let tallest = inside.iter().map(|&&(b, t, _)| t - b).fold(0.0, f64::max);
                        let got = drawn.get(&(c, r));
                        if let Some(&got) = got {
                            // Near-ties in f64 aside, the colour is a tallest element's.
                            let ok = stack.iter().any(|&(b, t, e)| {
                                b < hi + eps
                                    && t > lo - eps
                                    && (t - b) >= tallest * (1.0 - 1e-9)
                                    && color_u32(colors.get(e as usize).copied().unwrap_or(u8::MAX))
                                        == got
                            });
                            assert!(ok, "{}: dev {d} window {w:?} cols {cols}: cell ({c}, {r}) at step {step} is not a tallest element's colour", path.display());
                            cells += 1;
                        } else {
                            let covered = stack.iter().any(|&(b, t, _)| b <= lo && t >= hi);
                            assert!(!covered, "{}: dev {d} window {w:?} cols {cols}: cell ({c}, {r}) at step {step} is covered by an element but not drawn", path.display());
                        }
                    }
                }
            }
        }
    }
    cells
}

#[test]
fn columns_colour_each_cell_with_a_largest_element() {
    let mut cells = 0;
    for name in [
        "pools.pickle",
        "multidevice.pickle",
        "deferred.pickle",
        "expandable.pickle",
        "proto5.pickle",
    ] {
        cells += check(&fixture(name));
    }
    if let Some(p) = corpus_file(NOT_HANMIN) {
        cells += check(&p);
    }
    assert!(cells > 10_000, "only {cells} cells checked");
}
