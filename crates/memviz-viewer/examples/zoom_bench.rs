//! Times zoom/pan steps (camera update + scene update + offscreen render) on a snapshot:
//! `cargo run -p memviz-viewer --release --example zoom_bench -- FILE`.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::time::Instant;

use memviz_viewer::{App, GpuScene};

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: zoom_bench FILE");
    let t = Instant::now();
    let bytes = std::fs::read(&path).expect("read");
    let snap = memviz_snapshot::load_slice(&bytes).expect("parse");
    println!("load {:.0} ms", ms(t));
    let t = Instant::now();
    let mut app = App::new(&path, snap);
    println!("timeline + layout + scene {:.0} ms", ms(t));
    app.resize(1280.0, 720.0, 1.0);
    if let Some(l) = app.layout() {
        for cols in [1196u32, 2392, 4784] {
            let colors = vec![0u8; l.element_count()];
            let t = Instant::now();
            let s = memviz_viewer::scene::build_windowed(
                l,
                &colors,
                [0.0, f64::from(l.step_count()), 0.0, l.peak_bytes as f64],
                cols,
                l.peak_bytes as f64 / 1232.0,
            );
            println!(
                "windowed at fit, {cols} columns: {} instances in {:.1} ms",
                s.instance_count(),
                ms(t)
            );
        }
    }
    println!(
        "state {}",
        serde_json::to_string(&app.state()).unwrap_or_default()
    );
    let mut off = match memviz_render::Offscreen::new() {
        Ok(o) => o,
        Err(e) => {
            println!("no adapter: {e}");
            return;
        }
    };
    println!("adapter {:?}", off.adapter_info().name);
    let mut gpu = GpuScene::new();
    let t = Instant::now();
    gpu.render_offscreen(app.frame(), &mut off).expect("render");
    println!("first frame (upload + render + readback) {:.1} ms", ms(t));
    let g = *app.geometry();
    let cursor = (
        g.plot.left + g.plot.width() * 0.4,
        g.plot.top + g.plot.height() * 0.5,
    );
    for i in 0..6 {
        let t = Instant::now();
        app.zoom_at(cursor.0, cursor.1, 1.6);
        let cam = ms(t);
        let t = Instant::now();
        gpu.render_offscreen(app.frame(), &mut off).expect("render");
        let frame = ms(t);
        let t = Instant::now();
        app.settle();
        let settle = ms(t);
        let t = Instant::now();
        gpu.render_offscreen(app.frame(), &mut off).expect("render");
        let frame2 = ms(t);
        println!(
            "zoom {i}: camera {cam:.3} ms, frame with old batch {frame:.1} ms, settle rebuild {settle:.1} ms ({} instances, build {:.1} ms), frame after upload {frame2:.1} ms",
            app.state().timeline.instances,
            app.scene_build_ms()
        );
    }
    for i in 0..3 {
        let t = Instant::now();
        app.pan_by(120.0, 0.0);
        gpu.render_offscreen(app.frame(), &mut off).expect("render");
        println!("pan {i}: camera + frame {:.1} ms", ms(t));
    }
    let t = Instant::now();
    let _ = app.hover(cursor.0, cursor.1);
    println!("hover {:.3} ms", ms(t));
}
