//! Renders known trapezoids headlessly and checks pixels. Without any wgpu adapter (not even a
//! software one) each test prints a skip note and passes, unless `MEMVIZ_REQUIRE_GPU=1` is set
//! (then it fails, so a CI machine that should have llvmpipe/lavapipe cannot skip silently).
//! `WGPU_BACKEND=gl` or `=vulkan` picks the backend; see `Offscreen::new` for what is tried.
//!
//! Also writes `target/screenshots/render_offscreen.png` (a memory-timeline-like scene) to look at.

// Native only: offscreen rendering and file access do not exist on wasm32.
#![cfg(not(target_arch = "wasm32"))]

use std::path::PathBuf;

use memviz_render::{
    renderer::upload_chunked, rgba, InstanceBatch, Offscreen, RenderError, Trapezoid, View,
};

const BLACK: [f64; 4] = [0.0, 0.0, 0.0, 1.0];
const RED: u32 = rgba(255, 0, 0, 255);
const GREEN: u32 = rgba(0, 255, 0, 255);
const BLUE: u32 = rgba(0, 0, 255, 255);
const YELLOW: u32 = rgba(255, 255, 0, 255);
const GREY: u32 = rgba(128, 128, 128, 255);

fn offscreen(test: &str) -> Option<Offscreen> {
    Offscreen::for_test(test)
}

/// 200 × 100 px showing data x in [1e9, 1e9 + 100], y in [0, 50]: 2 px per data unit, and a
/// large x origin so the f64 → relative f32 path is exercised.
const X0: f64 = 1.0e9;
fn view() -> View {
    View {
        x_range: (X0, X0 + 100.0),
        y_range: (0.0, 50.0),
        viewport_px: (200, 100),
    }
}

/// Pixel column and row (row 0 at the top) of data point (x - X0, y) in [`view`].
fn px(x: f64, y: f64) -> (u32, u32) {
    ((x * 2.0) as u32, (100.0 - y * 2.0) as u32)
}

fn scene() -> Vec<Trapezoid> {
    vec![
        // A rect: x [10, 30], y [10, 20].
        Trapezoid::rect(10.0, 30.0, 10.0, 20.0, RED),
        // 0.01 px wide (0.005 data units), 10 data units tall: must still cover a column.
        Trapezoid::rect(70.25, 70.255, 10.0, 20.0, GREEN),
        // Zero height: a 1 px hairline at y = 45.
        Trapezoid::rect(5.0, 95.0, 45.0, 45.0, BLUE),
        // A slanted trapezoid: left edge [0, 10] at x = 40, right edge [20, 30] at x = 60.
        Trapezoid::new(40.0, 60.0, [0.0, 10.0], [20.0, 30.0], GREY),
    ]
}

fn count_in_row(image: &memviz_render::Image, row: u32, color: [u8; 4]) -> usize {
    (0..image.width)
        .filter(|&x| image.pixel(x, row) == Some(color))
        .count()
}

fn count_in_column(image: &memviz_render::Image, column: u32, color: [u8; 4]) -> usize {
    (0..image.height)
        .filter(|&y| image.pixel(column, y) == Some(color))
        .count()
}

#[test]
fn known_trapezoids_land_on_known_pixels() {
    let Some(mut gpu) = offscreen("known_trapezoids_land_on_known_pixels") else {
        return;
    };
    let batch = gpu.upload([X0, 0.0], &scene());
    // A second batch with its own origin: rel [0, 10] × [0, 10] → data [80, 90] × [30, 40].
    let second = gpu.upload(
        [X0 + 80.0, 30.0],
        &[Trapezoid::rect(0.0, 10.0, 0.0, 10.0, YELLOW)],
    );
    let image = gpu
        .render(&view(), BLACK, &[&batch, &second])
        .expect("render");
    assert_eq!(
        (image.width, image.height, image.rgba.len()),
        (200, 100, 200 * 100 * 4)
    );

    let at = |x: f64, y: f64| {
        let (c, r) = px(x, y);
        image.pixel(c, r).expect("inside")
    };
    // The red rect, its inside and its outside.
    assert_eq!(at(20.0, 15.0), [255, 0, 0, 255]);
    assert_eq!(at(10.25, 10.25), [255, 0, 0, 255]);
    assert_eq!(at(29.75, 19.75), [255, 0, 0, 255]);
    assert_eq!(at(9.75, 15.0), [0, 0, 0, 255]);
    assert_eq!(at(30.25, 15.0), [0, 0, 0, 255]);
    assert_eq!(at(20.0, 20.25), [0, 0, 0, 255]);
    // Exactly 40 × 20 px of red.
    let red_px = image
        .rgba
        .chunks_exact(4)
        .filter(|p| *p == [255, 0, 0, 255])
        .count();
    assert_eq!(red_px, 40 * 20);

    // The 0.01 px sliver covers one column for its whole height.
    let (_, row) = px(70.0, 15.0);
    assert_eq!(
        count_in_row(&image, row, [0, 255, 0, 255]),
        1,
        "sliver width"
    );
    let (column, _) = px(70.25, 15.0);
    assert_eq!(
        count_in_column(&image, column, [0, 255, 0, 255]),
        20,
        "sliver height"
    );

    // The zero-height line is one row, 180 px long.
    let (column, _) = px(50.0, 45.0);
    assert_eq!(
        count_in_column(&image, column, [0, 0, 255, 255]),
        1,
        "hairline height"
    );
    let (_, row) = px(50.0, 45.0);
    let blue_row = (0..100)
        .find(|&r| image.pixel(column, r) == Some([0, 0, 255, 255]))
        .expect("hairline");
    assert!(
        row.abs_diff(blue_row) <= 1,
        "hairline at row {blue_row}, expected {row}"
    );
    assert_eq!(
        count_in_row(&image, blue_row, [0, 0, 255, 255]),
        180,
        "hairline length"
    );

    // The trapezoid: at x = 50 it spans y [10, 20]; grey survives the sRGB round trip exactly.
    assert_eq!(at(50.0, 15.0), [128, 128, 128, 255]);
    assert_eq!(at(50.0, 21.0), [0, 0, 0, 255]);
    assert_eq!(at(50.0, 9.0), [0, 0, 0, 255]);
    assert_eq!(at(41.0, 9.0), [128, 128, 128, 255]);
    assert_eq!(at(59.0, 21.0), [128, 128, 128, 255]);

    // The second batch, placed by its own origin.
    assert_eq!(at(85.0, 35.0), [255, 255, 0, 255]);
    assert_eq!(at(79.5, 35.0), [0, 0, 0, 255]);
}

#[test]
fn translucent_colours_blend_in_linear_light() {
    let Some(mut gpu) = offscreen("translucent_colours_blend_in_linear_light") else {
        return;
    };
    let white_half = gpu.upload(
        [0.0, 0.0],
        &[Trapezoid::rect(
            0.0,
            1.0,
            0.0,
            1.0,
            rgba(255, 255, 255, 128),
        )],
    );
    let view = View {
        x_range: (0.0, 1.0),
        y_range: (0.0, 1.0),
        viewport_px: (4, 4),
    };
    let image = gpu.render(&view, BLACK, &[&white_half]).expect("render");
    // 50 % white over black is 0.502 in linear light, 188 once sRGB-encoded (128 would mean the
    // blend happened on encoded values, as on a non-sRGB target).
    let p = image.pixel(1, 1).expect("pixel");
    assert!(
        (186..=190).contains(&p[0]) && p[0] == p[1] && p[1] == p[2],
        "{p:?}"
    );
    // The clear colour is sRGB-encoded too: 0.5 → 128.
    let image = gpu
        .render(&view, [0.5, 0.5, 0.5, 1.0], &[])
        .expect("render");
    let p = image.pixel(0, 0).expect("pixel");
    assert!((127..=129).contains(&p[0]), "{p:?}");
}

#[test]
fn split_buffers_and_many_batches_draw_the_same_picture() {
    let Some(mut gpu) = offscreen("split_buffers_and_many_batches_draw_the_same_picture") else {
        return;
    };
    let instances = scene();
    let whole = gpu.upload([X0, 0.0], &instances);
    assert_eq!(whole.buffer_count(), 1);
    let reference = gpu.render(&view(), BLACK, &[&whole]).expect("render");

    // One buffer per instance.
    let split = upload_chunked(gpu.device(), [X0, 0.0], &instances, 1);
    assert_eq!(
        (split.buffer_count(), split.len()),
        (instances.len(), instances.len())
    );
    assert_eq!(
        gpu.render(&view(), BLACK, &[&split]).expect("render"),
        reference
    );

    // One batch per instance, each with its own origin (more batches than uniform slots).
    let batches: Vec<InstanceBatch> = instances
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let dx = 7.0 * i as f32;
            let moved = Trapezoid {
                x0: t.x0 - dx,
                x1: t.x1 - dx,
                ..*t
            };
            gpu.upload([X0 + f64::from(dx), 0.0], &[moved])
        })
        .collect();
    let empty = gpu.upload([0.0, 0.0], &[]);
    let mut refs: Vec<&InstanceBatch> = vec![&empty];
    refs.extend(batches.iter());
    assert_eq!(
        gpu.render(&view(), BLACK, &refs).expect("render"),
        reference
    );
}

#[test]
fn a_flipped_view_mirrors_the_picture() {
    let Some(mut gpu) = offscreen("a_flipped_view_mirrors_the_picture") else {
        return;
    };
    let batch = gpu.upload([X0, 0.0], &scene());
    let normal = gpu.render(&view(), BLACK, &[&batch]).expect("render");
    let flipped_view = View {
        x_range: (X0 + 100.0, X0),
        ..view()
    };
    let flipped = gpu.render(&flipped_view, BLACK, &[&batch]).expect("render");
    // Solid areas mirror exactly (the 1 px sliver may round to a neighbouring column).
    for (x, y) in [(20.0, 15.0), (50.0, 15.0), (85.0, 35.0), (9.75, 15.0)] {
        let (c, r) = px(x, y);
        assert_eq!(
            normal.pixel(c, r),
            flipped.pixel(199 - c, r),
            "at data ({x}, {y})"
        );
    }
    let (_, row) = px(70.0, 15.0);
    assert_eq!(
        count_in_row(&flipped, row, [0, 255, 0, 255]),
        1,
        "sliver still one column"
    );
}

#[test]
fn bad_sizes_are_errors_not_panics() {
    let Some(mut gpu) = offscreen("bad_sizes_are_errors_not_panics") else {
        return;
    };
    let zero = View {
        viewport_px: (0, 10),
        ..view()
    };
    assert!(matches!(
        gpu.render(&zero, BLACK, &[]),
        Err(RenderError::InvalidSize { .. })
    ));
    let huge = View {
        viewport_px: (1 << 20, 10),
        ..view()
    };
    assert!(matches!(
        gpu.render(&huge, BLACK, &[]),
        Err(RenderError::InvalidSize { .. })
    ));
}

/// A memory-timeline-like picture: stacked allocations (each band one trapezoid per step,
/// sliding down when a band below is freed), tiny allocations that must stay visible, and axis
/// hairlines. Written to target/screenshots/render_offscreen.png.
#[test]
fn screenshot_of_a_timeline_like_scene() {
    let Some(mut gpu) = offscreen("screenshot_of_a_timeline_like_scene") else {
        return;
    };
    let (width, height) = (640_u32, 320_u32);
    let steps = 40_usize;
    // Band sizes in "MiB", alive during [start, end) steps.
    let bands: [(f32, usize, usize); 8] = [
        (40.0, 0, 40),
        (25.0, 3, 18),
        (60.0, 6, 30),
        (0.001, 8, 35), // a tiny allocation: far below a pixel tall
        (30.0, 12, 26),
        (45.0, 20, 38),
        (15.0, 22, 40),
        (35.0, 28, 40),
    ];
    let palette = [
        rgba(0x4e, 0x79, 0xa7, 255),
        rgba(0xf2, 0x8e, 0x2b, 255),
        rgba(0xe1, 0x57, 0x59, 255),
        rgba(0xff, 0xff, 0xff, 255),
        rgba(0x76, 0xb7, 0xb2, 255),
        rgba(0x59, 0xa1, 0x4f, 255),
        rgba(0xed, 0xc9, 0x48, 255),
        rgba(0xb0, 0x7a, 0xa1, 255),
    ];
    let bottom_at = |step: usize, band: usize| -> f32 {
        bands[..band]
            .iter()
            .filter(|b| b.1 <= step && step < b.2)
            .map(|b| b.0)
            .sum()
    };
    let mut instances = Vec::new();
    // The tiny band goes last: drawn first, the band above it would paint over its 1 px row.
    for i in [0, 1, 2, 4, 5, 6, 7, 3] {
        let (size, start, end) = bands[i];
        for step in start..end.min(steps) {
            // Each step is drawn from its own layout to the next one (which is the same while
            // nothing below changes); the band ends flat at its last step.
            let b0 = bottom_at(step, i);
            let b1 = if step + 1 < end {
                bottom_at(step + 1, i)
            } else {
                b0
            };
            instances.push(Trapezoid::new(
                step as f32,
                step as f32 + 1.0,
                [b0, b0 + size],
                [b1, b1 + size],
                palette[i],
            ));
        }
    }
    // Axis hairlines and a 1-byte-wide "event" marker at step 10.5.
    instances.push(Trapezoid::rect(
        0.0,
        steps as f32,
        0.0,
        0.0,
        rgba(200, 200, 200, 255),
    ));
    instances.push(Trapezoid::rect(
        0.0,
        0.0,
        0.0,
        250.0,
        rgba(200, 200, 200, 255),
    ));
    instances.push(Trapezoid::rect(
        10.5,
        10.500_001,
        0.0,
        250.0,
        rgba(255, 255, 255, 160),
    ));
    let batch = gpu.upload([0.0, 0.0], &instances);
    let view = View {
        x_range: (-1.0, steps as f64 + 1.0),
        y_range: (-10.0, 260.0),
        viewport_px: (width, height),
    };
    let image = gpu
        .render(&view, [0.08, 0.08, 0.1, 1.0], &[&batch])
        .expect("render");

    let path = target_dir()
        .join("screenshots")
        .join("render_offscreen.png");
    image.write_png(&path).expect("write png");
    eprintln!("wrote {}", path.display());

    // The tiny white band (0.001 units ≈ 0.001 px) is still visible at every step it lives.
    let white = image
        .rgba
        .chunks_exact(4)
        .filter(|p| *p == [255, 255, 255, 255])
        .count();
    assert!(white >= 27 * 14, "tiny band covers only {white} px");
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    )
}

/// `FLAG_EDGE_TOP`: two stacked quads of one colour show a darker one-pixel row where they
/// meet (and at the top of the upper one), on both rects and slanted trapezoids, in a flipped
/// view too; a quad under 2 px tall keeps its colour.
#[test]
fn edge_flag_draws_a_darker_boundary_between_same_colour_items() {
    let Some(mut gpu) = offscreen("edge_flag_draws_a_darker_boundary_between_same_colour_items")
    else {
        return;
    };
    let c = rgba(200, 120, 40, 255);
    let edge = Trapezoid::FLAG_EDGE_TOP;
    let instances = [
        // Two rects stacked at x [10, 30]: y [10, 20] and [20, 30] (data), 2 px per unit.
        Trapezoid::rect(10.0, 30.0, 10.0, 20.0, c).with_flags(edge),
        Trapezoid::rect(10.0, 30.0, 20.0, 30.0, c).with_flags(edge),
        // Two slanted trapezoids stacked at x [40, 60].
        Trapezoid::new(40.0, 60.0, [5.0, 15.0], [10.0, 20.0], c).with_flags(edge),
        Trapezoid::new(40.0, 60.0, [15.0, 25.0], [20.0, 30.0], c).with_flags(edge),
        // A quad 0.6 data units = 1.2 px tall on top of a tall one at x [70, 90].
        Trapezoid::rect(70.0, 90.0, 10.0, 20.0, c).with_flags(edge),
        Trapezoid::rect(70.0, 90.0, 20.0, 20.6, c).with_flags(edge),
        // Without the flag: no edge at x [92, 98].
        Trapezoid::rect(92.0, 98.0, 10.0, 20.0, c),
        Trapezoid::rect(92.0, 98.0, 20.0, 30.0, c),
    ];
    let batch = gpu.upload([X0, 0.0], &instances);
    for flipped in [false, true] {
        let mut v = view();
        if flipped {
            v.y_range = (50.0, 0.0);
        }
        let image = gpu.render(&v, BLACK, &[&batch]).expect("render");
        // Pixel row of data y (row 0 at the top of the image).
        let row_of = |y: f64| {
            let r = (100.0 - y * 2.0) as u32;
            if flipped {
                99 - r
            } else {
                r
            }
        };
        let column = |x: f64| (x * 2.0) as u32;
        let fill = [200, 120, 40, 255];
        let is_dark = |p: [u8; 4]| p[0] < 170 && p[0] > 60 && p[3] == 255;
        // Walk a column from data y 10 to 30 and collect the dark rows.
        let dark_rows = |x: f64, y0: f64, y1: f64| -> Vec<f64> {
            let mut out = Vec::new();
            let mut y = y0 + 0.25;
            while y < y1 {
                let p = image.pixel(column(x), row_of(y)).expect("inside");
                if is_dark(p) {
                    out.push(y);
                } else {
                    assert_eq!(p, fill, "flipped={flipped} x={x} y={y}");
                }
                y += 0.5;
            }
            out
        };
        // Rects: the row just under y = 20 (where they meet) and just under y = 30.
        assert_eq!(
            dark_rows(20.0, 10.0, 30.0),
            vec![19.75, 29.75],
            "flipped={flipped}"
        );
        // Trapezoids at x = 50.25: from y 7.56 up, they meet at 17.56 and end at 27.56.
        let rows = dark_rows(50.25, 8.0, 27.0);
        assert_eq!(rows.len(), 1, "flipped={flipped}: {rows:?}");
        assert!(rows[0] > 16.5 && rows[0] < 18.0, "{rows:?}");
        // The 1.2 px quad keeps its colour and the tall one under it still has its edge.
        let rows = dark_rows(80.0, 10.0, 20.5);
        assert_eq!(rows, vec![19.75], "flipped={flipped}");
        assert_eq!(image.pixel(column(80.0), row_of(20.25)), Some(fill));
        // Unflagged: no dark row.
        assert!(dark_rows(95.0, 10.0, 30.0).is_empty());
        if !flipped {
            let path = target_dir().join("screenshots").join("render_edges.png");
            image.write_png(&path).expect("write png");
        }
    }
}
