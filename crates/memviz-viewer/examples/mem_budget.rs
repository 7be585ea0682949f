//! Memory per structure and per view, as the page's worker builds them: heap bytes (counted by
//! the allocator) after parsing, after each structure of the first view, and after each other
//! view is shown, with bytes per trace entry and the ratio to the file. One JSON line per step.
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
}

impl Meter {
    fn step(&mut self, what: &str) {
        let now = ALLOC.allocated();
        let delta = now as f64 - self.last as f64;
        println!(
            "{{\"step\":\"{what}\",\"ms\":{:.0},\"delta_bytes\":{delta:.0},\"bytes_per_entry\":{:.1},\"heap_bytes\":{now},\"heap_per_file\":{:.3},\"peak_per_file\":{:.3}}}",
            self.t.elapsed().as_secs_f64() * 1e3,
            delta / self.entries.max(1.0),
            now as f64 / self.file_bytes,
            ALLOC.max_allocated() as f64 / self.file_bytes,
        );
        self.last = now;
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
    };
    println!(
        "{{\"file\":{:?},\"file_bytes\":{file_bytes},\"entries\":{entries},\"file_bytes_per_entry\":{:.1}}}",
        path,
        file_bytes / entries.max(1.0)
    );
    m.step("model");
    let tl = memviz_analysis::timeline::build(&snap, device);
    m.step("timeline");
    let layout = memviz_analysis::layout::Layout::build(&tl, memviz_viewer::VIEWER_LAYOUT);
    m.step("layout");
    let colors = memviz_analysis::color::element_colors(&snap, device, &tl);
    m.step("colors");
    drop((tl, layout, colors));
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
