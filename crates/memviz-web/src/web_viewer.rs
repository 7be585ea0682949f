//! [`WebViewer`]: the browser viewer's wasm surface. It owns a [`ViewerCore`] (files, parser,
//! timeline app) and a wgpu surface on an `OffscreenCanvas`; `www/js/worker.js` (a Web Worker)
//! is its only caller. Every method is cheap to call per input event; drawing happens only in
//! [`WebViewer::frame`], which the worker calls once per animation frame while it returns true.

use memviz_render::{create_for_canvas, Backend, Canvas, CanvasContext, Renderer};
use memviz_viewer::GpuScene;
use wasm_bindgen::prelude::*;

use crate::viewer::ViewerCore;

struct Gpu {
    ctx: CanvasContext,
    renderer: Renderer,
}

/// The viewer: create with [`WebViewer::create`], then stream files in with `begin` / `push` /
/// `finish`, forward input, and call `frame` per animation frame.
#[wasm_bindgen]
pub struct WebViewer {
    core: ViewerCore,
    canvas: web_sys::OffscreenCanvas,
    gpu: Option<Gpu>,
    gpu_error: String,
    scene: GpuScene,
    /// Canvas CSS size and device pixel ratio.
    size: (f64, f64, f64),
    last_frame_ms: f64,
}

thread_local! {
    /// `performance` and its `now` of the global scope (window or worker), when present.
    static PERFORMANCE: Option<(JsValue, js_sys::Function)> = {
        let perf = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("performance")).ok();
        perf.and_then(|p| {
            let now = js_sys::Reflect::get(&p, &JsValue::from_str("now")).ok()?;
            now.dyn_into::<js_sys::Function>().ok().map(|f| (p, f))
        })
    };
}

/// Milliseconds: `performance.now()` (sub-millisecond), else `Date.now()`.
fn now_ms() -> f64 {
    PERFORMANCE
        .with(|p| {
            p.as_ref()
                .and_then(|(perf, now)| now.call0(perf).ok()?.as_f64())
        })
        .unwrap_or_else(js_sys::Date::now)
}

/// `mb` MiB in bytes (0 for anything not a positive number).
fn mib(mb: f64) -> u64 {
    if mb.is_finite() && mb > 0.0 {
        (mb * 1_048_576.0) as u64
    } else {
        0
    }
}

#[wasm_bindgen]
impl WebViewer {
    /// Claims `canvas` for drawing with `backend` (`auto`, `webgpu` or `webgl2`). Never fails:
    /// when no backend works, the viewer still opens files (summary only) and
    /// [`WebViewer::gpu_error`] says why nothing can be drawn.
    pub async fn create(canvas: web_sys::OffscreenCanvas, backend: String) -> WebViewer {
        crate::install_panic_hook();
        memviz_viewer::scene::set_clock(now_ms);
        memviz_viewer::memory::set_phase_hook(crate::memory::record_phase);
        let mut viewer = WebViewer {
            core: ViewerCore::new(),
            canvas: canvas.clone(),
            gpu: None,
            gpu_error: String::new(),
            scene: GpuScene::new(),
            size: (f64::from(canvas.width()), f64::from(canvas.height()), 1.0),
            last_frame_ms: 0.0,
        };
        let Some(prefer) = Backend::parse(&backend) else {
            viewer.gpu_error = format!(
                "unknown backend {:?}: use ?backend=webgpu, ?backend=webgl2 or leave it out",
                backend.chars().take(40).collect::<String>()
            );
            return viewer;
        };
        match create_for_canvas(Canvas::Offscreen(canvas), prefer).await {
            Ok(ctx) => {
                let renderer = Renderer::new(&ctx.device, ctx.render_format());
                viewer.gpu = Some(Gpu { ctx, renderer });
            }
            Err(msg) => viewer.gpu_error = msg,
        }
        viewer
    }

    /// `"WebGPU"`, `"WebGL2"` or `""` when nothing can be drawn.
    pub fn backend(&self) -> String {
        self.gpu
            .as_ref()
            .map(|g| g.ctx.tier.name().to_owned())
            .unwrap_or_default()
    }

    /// The adapter's name and driver, for the about line.
    pub fn adapter(&self) -> String {
        self.gpu
            .as_ref()
            .map(|g| {
                let i = &g.ctx.adapter_info;
                format!("{} ({:?}, {})", i.name, i.backend, i.driver)
            })
            .unwrap_or_default()
    }

    /// Why nothing can be drawn (empty when a backend works).
    pub fn gpu_error(&self) -> String {
        self.gpu_error.clone()
    }

    // ----- files ----------------------------------------------------------------------------

    /// Starts streaming a file of `total_bytes` (0 when unknown).
    pub fn begin(&mut self, name: &str, total_bytes: f64) {
        self.core.begin(name, total_bytes.max(0.0) as u64);
    }

    /// True when the last file was refused because it cannot fit in memory (the message
    /// says how much it needs and what the CLI does instead).
    pub fn refused_memory(&self) -> bool {
        self.core.refused_memory()
    }

    /// Bytes the Rust heap holds now, and the budget the viewer decides with.
    pub fn memory_used(&self) -> f64 {
        self.core.memory().used() as f64
    }

    /// `[wasm memory bytes, Rust heap bytes now, Rust heap high-water]` (`memory::probe`).
    pub fn memory_probe(&self) -> Vec<f64> {
        crate::memory::probe().iter().map(|&b| b as f64).collect()
    }

    /// The view-building steps since the last call, JSON `[[name, wasm memory bytes, heap
    /// bytes, heap high-water], …]` (`memory::take_phases`; benchmarks).
    pub fn memory_phases(&self) -> String {
        let rows: Vec<(&str, [u64; 3])> = crate::memory::take_phases();
        serde_json::to_string(&rows).unwrap_or_else(|_| "[]".to_owned())
    }

    /// Lowers the memory budget files and views are checked against to `mb` MiB (tests:
    /// `?mem_budget_mb=`).
    pub fn set_mem_budget_mb(&mut self, mb: f64) {
        self.core.set_memory_budget(mib(mb));
    }

    /// Lowers the hard allocation limit to `mb` MiB (tests: `?mem_limit_mb=`): an allocation
    /// past it fails as a real out-of-memory does, and the worker dies.
    pub fn set_mem_limit_mb(&mut self, mb: f64) {
        let bytes = mib(mb);
        crate::memory::set_hard_limit(if bytes == 0 { u64::MAX } else { bytes });
    }

    /// The current file's notice (shown above it, not an error): why it is incomplete when it
    /// was cut before its end, or `""`.
    pub fn notice(&self) -> String {
        self.core.notice()
    }

    /// Feeds the next chunk. Throws an `Error` naming the byte offset for a bad file.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), JsError> {
        self.core.push(chunk).map_err(|m| JsError::new(&m))
    }

    /// Bytes of the current file accepted so far.
    pub fn bytes_read(&self) -> f64 {
        self.core.bytes_read() as f64
    }

    /// Drops the file being loaded.
    pub fn cancel(&mut self) {
        self.core.cancel();
    }

    /// Ends the file's parse (the model's last tables); [`WebViewer::finish`] then lays it out.
    pub fn finish_parse(&mut self) -> Result<(), JsError> {
        self.core.finish_parse().map_err(|m| JsError::new(&m))
    }

    /// Ends the file and makes it current; [`WebViewer::draw`] then draws it. Its summary is
    /// made on the first [`WebViewer::summary_json`] / [`WebViewer::summary_table`] call.
    pub fn finish(&mut self) -> Result<(), JsError> {
        self.core.finish().map_err(|m| JsError::new(&m))?;
        let (w, h, dpr) = self.size;
        if let Some(app) = self.core.app() {
            app.resize(w, h, dpr);
            app.fit();
        }
        Ok(())
    }

    /// The current file's summary JSON.
    pub fn summary_json(&mut self) -> String {
        self.core.summary_json()
    }

    /// The current file's summary as a text table.
    pub fn summary_table(&mut self) -> String {
        self.core.summary_table()
    }

    /// Makes file `index` current (false when there is no such file).
    pub fn select_file(&mut self, index: u32) -> bool {
        self.core
            .app()
            .is_some_and(|a| a.select_file(index as usize))
    }

    /// Switches the device of the current file.
    pub fn set_device(&mut self, device: f64) {
        if let Some(app) = self.core.app() {
            app.set_device(device as i64);
        }
    }

    /// x axis: wall-clock time (when the trace has times) or timesteps.
    pub fn set_time_axis(&mut self, on: bool) {
        if let Some(app) = self.core.app() {
            app.set_time_axis(on);
        }
    }

    /// Shows a view: `active`, `segments`, `pools` (timelines) or `state` (Allocator State
    /// History). False for an unknown name.
    pub fn set_view(&mut self, name: &str) -> bool {
        match (memviz_viewer::ViewKind::parse(name), self.core.app()) {
            (Some(kind), Some(app)) => {
                app.set_view(kind);
                true
            }
            _ => false,
        }
    }

    /// Selects event `k` of the state history (-1: the last): the selection JSON (header, row
    /// text, counts, OOM report).
    pub fn state_select(&mut self, k: f64) -> String {
        let k = if k.is_finite() { k as i64 } else { -1 };
        self.core
            .app()
            .map_or_else(|| "null".to_owned(), |a| a.state_select(k))
    }

    /// Rows `[start, start + count)` of the event list, JSON `[{k, text, kind}]` (at most 1000).
    pub fn state_rows(&mut self, start: f64, count: f64) -> String {
        let clamp = |v: f64| {
            if v.is_finite() {
                v.clamp(0.0, 4e9) as usize
            } else {
                0
            }
        };
        self.core.app().map_or_else(
            || "[]".to_owned(),
            |a| a.state_rows(clamp(start), clamp(count)),
        )
    }

    /// Indices of the `oom` events, JSON.
    pub fn state_ooms(&mut self) -> String {
        self.core
            .app()
            .map_or_else(|| "[]".to_owned(), |a| a.state_ooms())
    }

    /// The next (`forward`) or previous event from `from` whose row contains `query`
    /// (case-insensitive, wrapping), or -1.
    pub fn state_search(&mut self, query: &str, from: f64, forward: bool) -> f64 {
        let from = if from.is_finite() { from as i64 } else { -1 };
        self.core
            .app()
            .map_or(-1.0, |a| a.state_search(query, from, forward) as f64)
    }

    /// Pins and centres the block at `addr` (a decimal string) in the map: its tooltip JSON.
    pub fn state_focus(&mut self, addr: &str) -> Option<String> {
        let addr = addr.parse::<u64>().ok()?;
        self.core.app().and_then(|a| a.state_focus(addr))
    }

    /// Canvas CSS px `[x, y]` of a map item's centre (`segment` / `block` / `waste`, address
    /// as a decimal string), JSON, or `null`.
    pub fn state_item_center(&mut self, kind: &str, addr: &str) -> String {
        let Ok(addr) = addr.parse::<u64>() else {
            return "null".to_owned();
        };
        let c = self
            .core
            .app()
            .and_then(|a| a.state_item_center(kind, addr));
        serde_json::to_string(&c).unwrap_or_else(|_| "null".to_owned())
    }

    /// Searches the current timeline (substring or `/regex/`) and highlights the matches
    /// (`only`: hides the rest); empty clears. JSON `{query, count, bytes, size, error}`.
    pub fn search(&mut self, query: &str, only: bool) -> String {
        self.core
            .app()
            .map_or_else(|| "null".to_owned(), |a| a.search(query, only))
    }

    /// The per-source-line table of the current timeline, JSON (`{"unavailable": sentence}`
    /// when it cannot fit in memory, as for every panel below).
    pub fn lines(&mut self, all_frames: bool) -> String {
        self.core
            .app()
            .map_or_else(|| "[]".to_owned(), |a| a.lines_json(all_frames))
    }

    /// Highlights one row of the source-line table; JSON: how many allocations, or
    /// `{"unavailable": sentence}`.
    pub fn highlight_line(
        &mut self,
        file: &str,
        line: f64,
        name: &str,
        all_frames: bool,
    ) -> String {
        let line = if line.is_finite() { line as i64 } else { 0 };
        match self
            .core
            .app()
            .map(|a| a.highlight_line(file, line, name, all_frames))
        {
            Some(Ok(n)) => n.to_string(),
            Some(Err(why)) => memviz_viewer::app::unavailable_json(&why),
            None => "0".to_owned(),
        }
    }

    /// Leak suspects of the current device, JSON (`LeakReport` with a `size` per suspect).
    pub fn leaks(&mut self) -> String {
        self.core
            .app()
            .map_or_else(|| "null".to_owned(), memviz_viewer::App::leaks_json)
    }

    /// Every allocation alive at timestep `step` (`-1`: the last clicked one, or the peak
    /// before any click; below -1: the peak), JSON `{step, count, total, rows}`.
    pub fn live(&mut self, step: f64) -> String {
        let Some(app) = self.core.app() else {
            return "null".to_owned();
        };
        let step = if step.is_finite() && step >= 0.0 {
            step as i64
        } else if step == -1.0 {
            app.last_click_step().map_or(-1, i64::from)
        } else {
            -1
        };
        app.live_json(step)
    }

    /// Compares the live allocations of opened files `a` and `b`, JSON (`App::diff_json`).
    pub fn diff(&mut self, a: u32, b: u32) -> String {
        self.core.app().map_or_else(
            || "null".to_owned(),
            |app| app.diff_json(a as usize, b as usize),
        )
    }

    /// Every opened file's peak, final and reserved bytes (its default device), JSON.
    pub fn files(&mut self) -> String {
        self.core.files_json()
    }

    /// Rebuilds the flamegraph: `at` = `peak`, `click` (the last clicked timestep), a
    /// timestep, `range:<from>:<to>` or `phase:<i>` (bytes × lifetime within a time range);
    /// `lifetime`: bytes × lifetime over the trace. Returns its state JSON.
    pub fn flame_set(&mut self, at: &str, lifetime: bool, all_frames: bool) -> String {
        self.core.app().map_or_else(
            || "null".to_owned(),
            |a| a.flame_set(memviz_viewer::FlameAt::parse(at), lifetime, all_frames),
        )
    }

    /// Pins the tooltip of a timeline element (negative: unpin); the tooltip JSON or `null`.
    pub fn pin(&mut self, element: f64) -> String {
        let e = if element.is_finite() {
            element as i64
        } else {
            -1
        };
        self.core
            .app()
            .and_then(|a| a.pin(e))
            .unwrap_or_else(|| "null".to_owned())
    }

    /// Sets the timeline's visible window (timesteps x0..x1, bytes y0..y1).
    pub fn set_window(&mut self, x0: f64, x1: f64, y0: f64, y1: f64) {
        if let Some(a) = self.core.app() {
            a.set_window(x0, x1, y0, y1);
        }
    }

    /// The annotation phases usable as flamegraph time ranges, JSON.
    pub fn flame_phases(&mut self) -> String {
        self.core
            .app()
            .map_or_else(|| "[]".to_owned(), |a| a.flame_phases())
    }

    /// Shows the diff flamegraph of opened files `a` and `b` (live allocations at the end).
    /// Returns its state JSON.
    pub fn flame_diff(&mut self, a: u32, b: u32, all_frames: bool) -> String {
        self.core.app().map_or_else(
            || "null".to_owned(),
            |app| app.flame_diff(a as usize, b as usize, all_frames),
        )
    }

    /// The flamegraph's breadcrumb, labels (CSS px) and state, JSON.
    pub fn flame_info(&mut self) -> String {
        self.core
            .app()
            .map_or_else(|| "null".to_owned(), memviz_viewer::App::flame_info)
    }

    /// Zooms the flamegraph to a node (from the breadcrumb).
    pub fn flame_zoom_to(&mut self, node: u32) -> bool {
        self.core.app().is_some_and(|a| a.flame_zoom_to(node))
    }

    /// Canvas CSS px `[x, y]` of a flamegraph node's centre, JSON, or `null`.
    pub fn flame_node_center(&mut self, node: u32) -> String {
        let c = self.core.app().and_then(|a| a.flame_node_center(node));
        serde_json::to_string(&c).unwrap_or_else(|_| "null".to_owned())
    }

    /// Clears a search or row highlight.
    pub fn clear_highlight(&mut self) {
        if let Some(a) = self.core.app() {
            a.set_highlight(None, false);
        }
    }

    // ----- geometry and input ---------------------------------------------------------------

    /// The canvas's CSS size and device pixel ratio changed: resizes the drawing buffer.
    pub fn resize(&mut self, css_w: f64, css_h: f64, device_pixel_ratio: f64) {
        let css_w = if css_w.is_finite() {
            css_w.clamp(1.0, 16384.0)
        } else {
            1.0
        };
        let css_h = if css_h.is_finite() {
            css_h.clamp(1.0, 16384.0)
        } else {
            1.0
        };
        let dpr = if device_pixel_ratio.is_finite() {
            device_pixel_ratio.clamp(0.25, 8.0)
        } else {
            1.0
        };
        self.size = (css_w, css_h, dpr);
        let mut px = ((css_w * dpr).round() as u32, (css_h * dpr).round() as u32);
        if let Some(g) = self.gpu.as_mut() {
            let max = g.ctx.device.limits().max_texture_dimension_2d;
            px = (px.0.clamp(1, max), px.1.clamp(1, max));
            self.canvas.set_width(px.0);
            self.canvas.set_height(px.1);
            g.ctx.resize(px.0, px.1);
        }
        if let Some(app) = self.core.app() {
            app.resize(css_w, css_h, dpr);
        }
    }

    /// Wheel at a canvas point (CSS px); `delta_y` in pixels (negative zooms in).
    pub fn wheel(&mut self, css_x: f64, css_y: f64, delta_y: f64) {
        if let Some(app) = self.core.app() {
            app.wheel(css_x, css_y, delta_y);
        }
    }

    /// Zooms both axes by `factor` around a canvas point.
    pub fn zoom_at(&mut self, css_x: f64, css_y: f64, factor: f64) {
        if let Some(app) = self.core.app() {
            if factor.is_finite() && factor > 0.0 {
                app.zoom_at(css_x, css_y, factor);
            }
        }
    }

    /// Pans by CSS px.
    pub fn pan_by(&mut self, dx: f64, dy: f64) {
        if let Some(app) = self.core.app() {
            app.pan_by(dx, dy);
        }
    }

    /// Shows the whole trace.
    pub fn fit(&mut self) {
        if let Some(app) = self.core.app() {
            app.fit();
        }
    }

    /// A key press (`KeyboardEvent.key`); true when it was used.
    pub fn key(&mut self, key: &str) -> bool {
        self.core.app().is_some_and(|a| a.key(key))
    }

    /// Pointer pressed at a canvas point.
    pub fn pointer_down(&mut self, css_x: f64, css_y: f64) {
        if let Some(app) = self.core.app() {
            app.pointer_down(css_x, css_y);
        }
    }

    /// Pointer moved: the tooltip JSON to show, or `undefined`.
    pub fn pointer_move(&mut self, css_x: f64, css_y: f64) -> Option<String> {
        self.core.app().and_then(|a| a.pointer_move(css_x, css_y))
    }

    /// Pointer released (a click pins / unpins): the tooltip JSON to show, or `undefined`.
    pub fn pointer_up(&mut self, css_x: f64, css_y: f64) -> Option<String> {
        self.core.app().and_then(|a| a.pointer_up(css_x, css_y))
    }

    /// The pointer left the canvas: the pinned tooltip, if any.
    pub fn pointer_leave(&mut self) -> Option<String> {
        self.core.app().and_then(|a| a.hover(-1.0e9, -1.0e9))
    }

    /// Double click: fit.
    pub fn double_click(&mut self) {
        if let Some(app) = self.core.app() {
            app.double_click();
        }
    }

    /// The overview brush: shows timesteps `[x0, x1)`, y fitted to them.
    pub fn set_x_window(&mut self, x0: f64, x1: f64) {
        if let Some(app) = self.core.app() {
            app.set_x_window(x0, x1);
        }
    }

    // ----- text for the shell ---------------------------------------------------------------

    /// Files, devices, legend (`legend_entries` largest sites), ticks and state, JSON.
    pub fn panel(&self, legend_entries: u32) -> String {
        self.core.panel_json(legend_entries as usize)
    }

    /// Axis ticks for the current camera, JSON.
    pub fn ticks(&self) -> String {
        self.core.ticks_json()
    }

    /// The app state JSON (camera, counts, scene), `null` before the first file.
    pub fn state(&self) -> String {
        self.core
            .app_ref()
            .map_or_else(|| "null".to_owned(), memviz_viewer::App::state_json)
    }

    // ----- drawing --------------------------------------------------------------------------

    /// Call once per animation frame with `performance.now()`: settles windowed scenes and
    /// draws when something changed. Returns bit 0 set when it drew, bit 1 set while more
    /// frames are needed.
    pub fn frame(&mut self, now: f64) -> u32 {
        let Some(app) = self.core.app() else {
            return 0;
        };
        let dirty = app.tick(now);
        if dirty {
            self.draw();
        }
        let more = self
            .core
            .app_ref()
            .is_some_and(|a| a.is_settling() || a.needs_redraw());
        u32::from(dirty) | (u32::from(more) << 1)
    }

    /// Draws now (even when nothing changed); returns the CPU time it took in ms.
    pub fn draw(&mut self) -> f64 {
        let t0 = now_ms();
        let (Some(app), Some(gpu)) = (self.core.app(), self.gpu.as_mut()) else {
            return 0.0;
        };
        use memviz_render::wgpu::CurrentSurfaceTexture as C;
        let frame = match gpu.ctx.surface.get_current_texture() {
            C::Success(t) | C::Suboptimal(t) => t,
            C::Outdated | C::Lost => {
                gpu.ctx
                    .surface
                    .configure(&gpu.ctx.device, &gpu.ctx.choice.config);
                return 0.0;
            }
            _ => return 0.0,
        };
        let view = gpu.ctx.choice.frame_view(&frame.texture);
        self.scene.render(
            app,
            &mut gpu.renderer,
            &gpu.ctx.device,
            &gpu.ctx.queue,
            &view,
        );
        gpu.ctx.queue.present(frame);
        self.last_frame_ms = now_ms() - t0;
        self.last_frame_ms
    }

    /// CPU time of the last draw, ms.
    pub fn last_frame_ms(&self) -> f64 {
        self.last_frame_ms
    }

    /// True once any Rust code in this module has panicked: the page should be reloaded.
    pub fn has_panicked() -> bool {
        crate::PANICKED.load(std::sync::atomic::Ordering::SeqCst)
    }
}
