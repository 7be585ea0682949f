//! Memory per structure and per view, as the page's worker builds them: heap bytes (counted by
//! the allocator) after parsing, after each structure of the first view, and after each other
//! view is shown, with bytes per trace entry and the ratio to the file. One JSON line per step.
//! `peak_per_file` is the high-water mark so far (what wasm memory keeps); `step_peak_per_file`
//! the highest heap during that step alone, so a step's transient shows even below an earlier
//! peak (the parse's).
//! `cargo run -p memviz-viewer --release --example mem_budget -- FILE [--views]`
//! (docs/limits.md has the table.)
#![allow(clippy::unwrap_used, clippy::print_stdout)]
use std::time::Instant;

use cap::Cap;
use memviz_viewer::{App, ViewKind};

#[global_allocator]
static ALLOC: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

struct Meter {
    file_bytes: f64,
    entries: f64,
    last: usize,
    t: Instant,
    /// Counted by the allocator but never touched (no page is used): it lifts the heap to the
    /// high-water mark at the start of a step, so any byte the step holds above its starting
    /// heap raises the mark (the allocator has no reset).
    ballast: Vec<u8>,
    /// The high-water mark without the ballast.
    peak: usize,
}

impl Meter {
    fn step(&mut self, what: &str) {
        let ms = self.t.elapsed().as_secs_f64() * 1e3;
        let ballast = self.ballast.capacity();
        let now = ALLOC.allocated() - ballast;
        let peak = ALLOC.max_allocated();
        let delta = now as f64 - self.last as f64;
        println!(
            "{{\"step\":\"{what}\",\"ms\":{ms:.0},\"delta_bytes\":{delta:.0},\"bytes_per_entry\":{:.1},\"heap_bytes\":{now},\"heap_per_file\":{:.3},\"peak_per_file\":{:.3},\"step_peak_bytes\":{},\"step_peak_per_file\":{:.3}}}",
            delta / self.entries.max(1.0),
            now as f64 / self.file_bytes,
            self.peak.max(peak - ballast) as f64 / self.file_bytes,
            peak - ballast,
            (peak - ballast) as f64 / self.file_bytes,
        );
        self.peak = self.peak.max(peak - ballast);
        self.last = now;
        self.ballast = Vec::new();
        self.ballast = Vec::with_capacity(ALLOC.max_allocated() - ALLOC.allocated());
        self.t = Instant::now();
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: mem_budget FILE [--views]");
    let views = args.any(|a| a == "--views");
    let file_bytes = std::fs::metadata(&path).unwrap().len() as f64;
    let t = Instant::now();
    // Streamed in 4 MiB chunks as the page does (the file is never whole in memory).
    let mut loader = memviz_snapshot::Loader::new().with_size_hint(file_bytes as u64);
    let mut f = std::fs::File::open(&path).unwrap();
    let mut buf = vec![0u8; 4 << 20];
    loop {
        let n = std::io::Read::read(&mut f, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        loader.push(buf.get(..n).unwrap()).unwrap();
    }
    drop(buf);
    let snap = loader.finish().unwrap();
    let device = snap.default_device();
    let entries = snap.trace(device).map_or(0, |t| t.len()) as f64;
    let mut m = Meter {
        file_bytes,
        entries,
        last: 0,
        t,
        ballast: Vec::new(),
        peak: 0,
    };
    println!(
        "{{\"file\":{:?},\"file_bytes\":{file_bytes},\"entries\":{entries},\"file_bytes_per_entry\":{:.1}}}",
        path,
        file_bytes / entries.max(1.0)
    );
    m.step("model");
    let mut tl = memviz_analysis::timeline::build(&snap, device);
    m.step("timeline");
    // As the app: the timeline's steps go back while the layout is built.
    let layout = memviz_analysis::layout::Layout::build_dropping_steps(
        &mut tl,
        memviz_viewer::VIEWER_LAYOUT,
    );
    m.step("layout");
    let colors = memviz_analysis::color::element_colors(&snap, device, &tl);
    m.step("colors");
    // The first scene as the app's `initial_scene` builds it.
    let scene = if layout.exact_point_count() > memviz_viewer::scene::STATIC_MAX_POINTS {
        let steps = f64::from(layout.step_count().max(1));
        let peak = (layout.peak_bytes as f64 * memviz_viewer::camera::Y_HEADROOM).max(1.0);
        memviz_viewer::scene::build_columns(
            &layout,
            &colors,
            [0.0, steps, 0.0, peak],
            memviz_viewer::app::FIRST_SCENE_COLUMNS,
            peak / 512.0,
        )
    } else {
        memviz_viewer::scene::build_static(&layout, &colors)
    };
    m.step("first_scene");
    drop((tl, layout, colors, scene));
    m.step("dropped");
    let mut app = App::new("x", snap);
    m.step("app_first_view");
    if let Some(l) = app.layout() {
        println!(
            "{{\"layout_heap_bytes\":{},\"hit_index_bytes\":{},\"timeline_steps\":{},\"slides\":{},\"layout_steps\":{},\"elements\":{}}}",
            l.heap_bytes(),
            l.heap_bytes() - l.heap_bytes_without_hit(),
            app.timeline().map_or(0, |t| t.steps.len()),
            l.slides.len(),
            l.step_count(),
            l.element_count()
        );
    }
    if views {
        for kind in [
            ViewKind::Segments,
            ViewKind::Pools,
            ViewKind::State,
            ViewKind::Flame,
        ] {
            app.set_view(kind);
            m.step(kind.name());
        }
    }
}
