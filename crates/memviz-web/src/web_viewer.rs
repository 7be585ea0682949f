//! [`WebViewer`]: the browser viewer's wasm surface. It owns a [`ViewerCore`] (files, parser,
//! timeline app) and a wgpu surface on an `OffscreenCanvas`; `www/js/worker.js` (a Web Worker)
//! is its only caller. Every method is cheap to call per input event; drawing happens only in
//! [`WebViewer::frame`], which the worker calls once per animation frame while it returns true.

use memviz_render::Backend;
use memviz_viewer::answer::{FileRow, Panel};
use memviz_viewer::request::Host;
use memviz_viewer::{App, GpuScene, Reply};
use wasm_bindgen::prelude::*;

use crate::gpu_setup::{Created, Gpu};
use crate::viewer::ViewerCore;

/// The viewer: create with [`WebViewer::create`], then stream files in with `begin` / `push` /
/// `finish`, forward input, and call `frame` per animation frame.
#[wasm_bindgen]
pub struct WebViewer {
    core: ViewerCore,
    canvas: web_sys::OffscreenCanvas,
    gpu: Option<Gpu>,
    gpu_error: String,
    /// Why WebGPU was passed over although the browser offers it (`""` otherwise).
    webgpu_failed: String,
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

/// A JS `Error` with the open's message and its `kind` (`err.kind` in the worker).
fn open_error(e: crate::viewer::OpenError) -> JsValue {
    let err = js_sys::Error::new(&e.message);
    // Setting a property on a fresh Error cannot fail; if it did, the kind would read as
    // undefined and the page would treat the failure as unclassified.
    let _ = js_sys::Reflect::set(
        &err,
        &JsValue::from_str("kind"),
        &JsValue::from_str(e.kind.name()),
    );
    err.into()
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
    /// [`WebViewer::gpu_error`] says why nothing can be drawn. With `auto`, WebGPU is used only
    /// after it drew on a scratch canvas (`gpu_setup`); else WebGL2, and
    /// [`WebViewer::webgpu_failed`] says why.
    pub async fn create(canvas: web_sys::OffscreenCanvas, backend: String) -> WebViewer {
        crate::install_panic_hook();
        memviz_viewer::scene::set_clock(now_ms);
        memviz_viewer::memory::set_phase_hook(crate::memory::record_phase);
        let mut viewer = WebViewer {
            core: ViewerCore::new(),
            canvas: canvas.clone(),
            gpu: None,
            gpu_error: String::new(),
            webgpu_failed: String::new(),
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
        let created = crate::gpu_setup::create(canvas.clone(), prefer).await;
        viewer.attach(canvas, created);
        viewer
    }

    /// Makes a GPU for a fresh `canvas` (after [`WebViewer::gpu_failure`] said the current one
    /// failed): pass the result to [`WebViewer::attach_gpu`] with the same canvas. Static, as
    /// an async method cannot borrow the viewer.
    pub async fn create_gpu(canvas: web_sys::OffscreenCanvas, backend: String) -> Created {
        let prefer = Backend::parse(&backend).unwrap_or(Backend::WebGl2);
        crate::gpu_setup::create(canvas, prefer).await
    }

    /// Draws on `canvas` with `created` (from [`WebViewer::create_gpu`]) from now on, in place
    /// of the GPU that failed: the files, views and camera stay; the plot is uploaded again on
    /// the next [`WebViewer::draw`].
    pub fn attach_gpu(&mut self, canvas: web_sys::OffscreenCanvas, created: Created) {
        self.attach(canvas, created);
        let (w, h, dpr) = self.size;
        self.resize(w, h, dpr);
    }

    fn attach(&mut self, canvas: web_sys::OffscreenCanvas, created: Created) {
        self.canvas = canvas;
        self.gpu = created.gpu;
        self.gpu_error = created.error;
        self.webgpu_failed = created.webgpu_failed;
        // The old device's buffers are gone with it.
        self.scene = GpuScene::new();
    }

    /// Why the GPU in use stopped working (lost, or an error nobody captured), or `""`. Once
    /// it is set nothing more is drawn: the worker hands a fresh canvas to
    /// [`WebViewer::create_gpu`] / [`WebViewer::attach_gpu`].
    pub fn gpu_failure(&self) -> String {
        self.gpu
            .as_ref()
            .and_then(|g| g.health.failure())
            .unwrap_or_default()
    }

    /// Why WebGPU was passed over although the browser offers it (it failed to draw a first
    /// frame), or `""`.
    pub fn webgpu_failed(&self) -> String {
        self.webgpu_failed.clone()
    }

    /// Tests: destroys the GPU device, as a driver reset or a lost GPU process would.
    pub fn lose_device_for_test(&self) {
        if let Some(g) = self.gpu.as_ref() {
            g.ctx.device.destroy();
        }
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

    /// Bytes the Rust heap holds now, and the budget the viewer decides with.
    pub fn memory_used(&self) -> f64 {
        self.core.memory().used() as f64
    }

    /// `[wasm memory bytes, Rust heap bytes now, Rust heap high-water]` (`memory::probe`).
    pub fn memory_probe(&self) -> Vec<f64> {
        crate::memory::probe().iter().map(|&b| b as f64).collect()
    }

    /// The view-building steps since the last call, JSON `[[name, [wasm memory bytes, heap
    /// bytes, heap high-water], performance.now() ms after it], …]` (`memory::take_phases`;
    /// benchmarks).
    pub fn memory_phases(&self) -> String {
        let rows = crate::memory::take_phases();
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

    /// Feeds the next chunk. Throws an `Error` naming the byte offset for a bad file, with a
    /// `kind` the page branches on ([`crate::viewer::OpenErrorKind::name`]).
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), JsValue> {
        self.core.push(chunk).map_err(open_error)
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
    pub fn finish_parse(&mut self) -> Result<(), JsValue> {
        self.core.finish_parse().map_err(open_error)
    }

    /// Ends the file and makes it current; [`WebViewer::draw`] then draws it. Its summary is
    /// made on the first [`WebViewer::summary_json`] / [`WebViewer::summary_table`] call.
    pub fn finish(&mut self) -> Result<(), JsValue> {
        self.core.finish().map_err(open_error)?;
        let (w, h, dpr) = self.size;
        if let Some(app) = self.core.app() {
            app.resize(w, h, dpr);
            app.fit();
        }
        Ok(())
    }

    /// The current file's summary JSON (for the page's `opened` message; empty before the
    /// first file).
    pub fn summary_json(&mut self) -> String {
        self.core.summary_json()
    }

    // ----- requests ---------------------------------------------------------------------------

    /// Answers one request of the shell: `json` is a `memviz_viewer::Request`
    /// (`{"method": "…", …fields}`, see `www/js/generated/Request.ts`), the answer the JSON of
    /// its `Reply` (`www/js/generated/Answers.ts`). Throws an `Error` for a request that does
    /// not parse (an unknown method, a missing or mistyped field).
    pub fn request(&mut self, json: &str) -> Result<String, JsError> {
        let req: memviz_viewer::Request = serde_json::from_str(json)
            .map_err(|e| JsError::new(&format!("not a viewer request ({e})")))?;
        let reply = memviz_viewer::request::dispatch(self, req);
        serde_json::to_string(&reply).map_err(|e| JsError::new(&e.to_string()))
    }

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
        let canvas = &self.canvas;
        if let Some(g) = self.gpu.as_mut().filter(|g| !g.health.failed()) {
            let max = g.ctx.device.limits().max_texture_dimension_2d;
            px = (px.0.clamp(1, max), px.1.clamp(1, max));
            canvas.set_width(px.0);
            canvas.set_height(px.1);
            g.ctx.resize(px.0, px.1);
        }
        if let Some(app) = self.core.app() {
            app.resize(css_w, css_h, dpr);
        }
    }

    // ----- drawing --------------------------------------------------------------------------

    /// Call once per animation frame with `performance.now()`: settles windowed scenes and
    /// draws when something changed. Returns bit 0 set when it drew, bit 1 set while more
    /// frames are needed, bit 2 set when the GPU failed ([`WebViewer::gpu_failure`]).
    pub fn frame(&mut self, now: f64) -> u32 {
        let failed = u32::from(self.gpu.as_ref().is_some_and(|g| g.health.failed())) << 2;
        let Some(app) = self.core.app() else {
            return failed;
        };
        let dirty = app.tick(now);
        if dirty {
            self.draw();
        }
        let more = self
            .core
            .app_ref()
            .is_some_and(|a| a.is_settling() || a.needs_redraw());
        u32::from(dirty) | (u32::from(more) << 1) | failed
    }

    /// Draws now (even when nothing changed); returns the CPU time it took in ms.
    pub fn draw(&mut self) -> f64 {
        let t0 = now_ms();
        // A failed device is never touched again: on WebGPU a buffer mapped at creation on a
        // lost device throws, which wgpu turns into a panic.
        let (Some(app), Some(gpu)) = (
            self.core.app(),
            self.gpu.as_mut().filter(|g| !g.health.failed()),
        ) else {
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
            app.frame(),
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

/// The requests answered here (`@host` in the request table): `resize` resizes the canvas and
/// then the app ([`WebViewer::resize`]); the panel, the summaries and the files are
/// [`ViewerCore`]'s, and every other request goes through it to the app.
impl Host for WebViewer {
    type App = App;

    fn with_app(&mut self, answer: impl FnOnce(&mut App) -> Reply) -> Reply {
        Host::with_app(&mut self.core, answer)
    }

    fn resize(&mut self, css_w: f64, css_h: f64, dpr: f64) {
        WebViewer::resize(self, css_w, css_h, dpr);
    }

    fn panel(&mut self, legend_entries: u32) -> Panel {
        Host::panel(&mut self.core, legend_entries)
    }

    fn summary_table(&mut self) -> String {
        Host::summary_table(&mut self.core)
    }

    fn files(&mut self) -> Vec<FileRow> {
        Host::files(&mut self.core)
    }
}
