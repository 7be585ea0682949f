//! Memory per structure, per view and per panel, as the page's worker builds them: heap bytes
//! (counted by the allocator) after parsing, after each structure of the first view, and after
//! each other view is shown, with bytes per trace entry and the ratio to the file. One JSON line
//! per step. `--views` also walks the other views; `--panels` the panels and lazy structures
//! (hit index, tooltips, leaks, source lines, alive at the peak, search, compare and diff
//! flamegraph against itself), each with its peak above what was held before
//! (`peak_bytes_per_entry`, what `memviz_viewer::memory::panel_bytes_per_event` must cover) and
//! what it keeps (`kept_bytes_per_entry`). `peak_per_file` is the high-water mark so far (what wasm memory
//! keeps); `step_peak_per_file` the highest heap during that step alone, so a step's transient
//! shows even below an earlier peak (the parse's).
//! `--time-axis` switches the x axis to wall-clock time and back (the scene rebuilt in µs).
//! `cargo run -p memviz-viewer --release --example mem_budget -- FILE [--views] [--panels] [--time-axis]`
//! (docs/limits.md has the table.)
#![allow(clippy::unwrap_used, clippy::print_stdout)]
use memviz_viewer::FlameAt;
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
    let path = args
        .next()
        .expect("usage: mem_budget FILE [--views] [--panels]");
    let rest: Vec<String> = args.collect();
    let views = rest.iter().any(|a| a == "--views");
    let panels = rest.iter().any(|a| a == "--panels");
    let time_axis = rest.iter().any(|a| a == "--time-axis");
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
    let layout = memviz_present::layout::Layout::build_dropping_steps(
        &mut tl,
        memviz_viewer::VIEWER_LAYOUT,
    );
    m.step("layout");
    let colors = memviz_present::color::element_colors(&snap, device, &tl);
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
    let counts = format!(
        "{{\"stacks\":{},\"stack_frames\":{},\"frames\":{},\"segments\":{},\"blocks\":{}}}",
        snap.stacks.len(),
        (0..snap.stacks.len())
            .map(|i| snap.stack(memviz_snapshot::StackId(i as u32)).len())
            .sum::<usize>(),
        snap.frames.len(),
        snap.segments.len(),
        snap.blocks.len()
    );
    println!("{counts}");
    if panels {
        own_timeline_leaks(&snap, device, &mut m);
    }
    let mut app = App::new("x", snap);
    m.step("app_first_view");
    // As the page: the summary (its JSON and table) once the file is open.
    if let Some(snap) = app.file_snapshot(0) {
        let summary = memviz_analysis::summary::summarize(snap);
        let kept = (summary.to_json(), summary.to_table());
        drop(summary);
        m.step("summary");
        drop(kept);
    }
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
    if time_axis {
        // The wall-clock axis: the scene rebuilt in µs (settled at the canvas's width), then
        // event order again; what each holds above the event-order view before it.
        app.set_time_axis(true);
        app.settle();
        let st = app.state();
        println!(
            "{{\"x_axis\":{:?},\"full_x\":{:?},\"instances\":{},\"scene_build_ms\":{:.0}}}",
            st.x_axis, st.timeline.full_x, st.timeline.instances, st.timeline.scene_build_ms
        );
        m.step("time_axis");
        app.set_time_axis(false);
        app.settle();
        m.step("event_order_again");
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
        app.set_view(ViewKind::Active);
    }
    if panels {
        walk_panels(&mut app, &mut m);
    }
}

/// Runs `f`, printing the most the heap held above what it held before (the peak) and what
/// is still held after the result is dropped, per trace entry.
fn panel<T>(m: &mut Meter, what: &str, f: impl FnOnce() -> T) {
    let before = ALLOC.allocated();
    // Raises what is held now to the high-water mark so far, so that the high-water mark after
    // `f` is this panel's own peak. Never touched, so it costs address space only.
    let filler: Vec<u8> = Vec::with_capacity(ALLOC.max_allocated().saturating_sub(before));
    let base = ALLOC.max_allocated();
    let t = Instant::now();
    let r = f();
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let peak = ALLOC.max_allocated() - base;
    drop(r);
    drop(filler);
    let kept = ALLOC.allocated() as f64 - before as f64;
    println!(
        "{{\"panel\":\"{what}\",\"ms\":{ms:.0},\"peak_bytes\":{peak},\"peak_bytes_per_entry\":{:.2},\"kept_bytes_per_entry\":{:.2},\"heap_bytes\":{}}}",
        peak as f64 / m.entries.max(1.0),
        kept / m.entries.max(1.0),
        ALLOC.allocated()
    );
    m.last = ALLOC.allocated();
    m.t = Instant::now();
}

/// Leak suspects when the Active Memory Timeline is not built: the panel builds its own
/// timeline and compact layout.
fn own_timeline_leaks(snap: &memviz_snapshot::Snapshot, device: i64, m: &mut Meter) {
    panel(m, "leaks_own_timeline", || {
        let mut tl = memviz_analysis::timeline::build(snap, device);
        let l = memviz_present::layout::Layout::build(&tl, memviz_viewer::memory::PANEL_LAYOUT);
        tl.drop_steps();
        memviz_analysis::leaks::leaks(snap, device, &tl, &l)
            .suspects
            .len()
    });
    panel(m, "leaks_own_timeline_exact", || {
        let tl = memviz_analysis::timeline::build(snap, device);
        let l = memviz_present::layout::Layout::build(&tl, Default::default());
        memviz_analysis::leaks::leaks(snap, device, &tl, &l)
            .suspects
            .len()
    });
}

fn walk_panels(app: &mut App, m: &mut Meter) {
    let g = *app.geometry();
    let (cx, cy) = (
        (g.plot.left + g.plot.right) / 2.0,
        (g.plot.top + g.plot.bottom) * 0.75,
    );
    let (elements, device) = (app.layout().map_or(0, |l| l.element_count()), app.device());
    println!("{{\"elements\":{elements}}}");
    panel(m, "hit_index", || {
        app.layout().map(|l| l.hit_index_heap_bytes())
    });
    if let Some(snap) = app.snapshot() {
        panel(m, "address_versions", || {
            memviz_present::tooltip::versions(snap, device)
        });
    }
    panel(m, "tooltips", || app.hover(cx, cy));
    let _ = app.pin(-1);
    panel(m, "leaks", || app.leaks());
    panel(m, "lines", || app.lines(false));
    panel(m, "lines_all_frames", || app.lines(true));
    let (file, line, name) = app
        .lines(false)
        .ready()
        .and_then(|rows| rows.into_iter().next())
        .map(|r| (r.row.file, r.row.line, r.row.name))
        .unwrap_or_default();
    panel(m, "highlight_line", || {
        app.highlight_line(&file, line, &name, false)
    });
    app.set_highlight(None, false);
    panel(m, "highlight_all", || {
        app.set_highlight(Some((0..elements as u32).collect()), false);
    });
    app.set_highlight(None, false);
    panel(m, "live_at_peak", || app.live(-1));
    panel(m, "search_all", || app.search("/./", false));
    app.set_highlight(None, false);
    panel(m, "search_labels", || app.search("fff_", false));
    app.set_highlight(None, false);
    panel(m, "diff_itself", || app.diff(0, 0));
    app.set_view(ViewKind::Flame);
    panel(m, "flame_at_peak", || {
        app.flame_set(FlameAt::Peak, false, None)
    });
    panel(m, "flame_lifetime", || {
        app.flame_set(FlameAt::Peak, true, None)
    });
    panel(m, "flame_diff_itself", || app.flame_diff(0, 0, None));
}
