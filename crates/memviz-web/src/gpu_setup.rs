//! Getting a GPU the page can rely on, and noticing when it stops working (wasm32 only).
//!
//! # Why
//! Some drivers, VMs and browser flag sets hand out a WebGPU adapter and device whose canvas or
//! buffers then fail: Chromium with `--enable-unsafe-webgpu --use-angle=swiftshader
//! --enable-features=Vulkan` loses the device as soon as a canvas is configured, and from then on
//! every `createBuffer(mappedAtCreation)` throws, which wgpu's WebGPU backend unwraps: a panic,
//! fatal to the whole module. So WebGPU is never trusted on its word:
//!
//! 1. [`create`] with `auto` first draws on a small *scratch* `OffscreenCanvas`: a clear frame,
//!    then a batch uploaded the way the viewer uploads (mapped at creation) and a mapped
//!    readback, all inside error scopes, waiting for the GPU to finish and for a device loss to
//!    be reported (WebGPU reports both asynchronously). Only when that worked is the page's
//!    canvas claimed for WebGPU (a canvas takes one kind of context for life, so a failure on
//!    the scratch canvas leaves the real one free for WebGL2). Otherwise WebGL2 draws, and
//!    [`Created::notice`] says why in one line.
//! 2. Every device gets a [`Health`]: its device-lost callback and its uncaptured-error handler
//!    record the first failure instead of wgpu's default handler, which panics. The viewer
//!    checks it before touching the GPU; once failed it draws nothing more and the worker asks
//!    the page for a fresh canvas to draw on with WebGL2 (www/README.md, `gpu-lost`), keeping the
//!    model and the open files.
//!
//! This lives here rather than in memviz-render's `context` so that crate stays a plain "make
//! a context" layer; it only uses memviz-render's public API.

use std::sync::{Arc, Mutex};

use memviz_render::wgpu;
use memviz_render::{
    create_for_canvas, rgba, Backend, Canvas, CanvasContext, Renderer, Trapezoid, View,
};
use wasm_bindgen::prelude::*;

/// The scratch canvas's size in pixels.
const SCRATCH_PX: u32 = 64;
/// How long a first frame (or a readback) may take before WebGPU counts as not working.
const SETTLE_TIMEOUT_MS: f64 = 4000.0;

/// The first failure of one device (its loss, or an error nobody captured), shared with the
/// callbacks wgpu calls. `None` while the device works.
#[derive(Clone, Debug, Default)]
pub(crate) struct Health(Arc<Mutex<Option<String>>>);

impl Health {
    /// Records `why` unless a failure is already recorded.
    fn fail(&self, why: String) {
        if let Ok(mut slot) = self.0.lock() {
            if slot.is_none() {
                *slot = Some(why);
            }
        }
    }

    /// The first failure, if any.
    pub(crate) fn failure(&self) -> Option<String> {
        self.0.lock().ok().and_then(|slot| slot.clone())
    }

    /// True once the device failed.
    pub(crate) fn failed(&self) -> bool {
        self.failure().is_some()
    }

    /// Routes `device`'s loss and uncaptured errors here (never to wgpu's panicking default).
    fn watch(&self, device: &wgpu::Device) {
        let lost = self.clone();
        device.set_device_lost_callback(move |reason, message| {
            let message = one_line(&message);
            lost.fail(if message.is_empty() {
                format!("the GPU device was lost ({reason:?})")
            } else {
                format!("the GPU device was lost: {message}")
            });
        });
        let errors = self.clone();
        device.on_uncaptured_error(Arc::new(move |error: wgpu::Error| {
            errors.fail(format!(
                "the GPU reported an error: {}",
                one_line(&error.to_string())
            ));
        }));
    }
}

/// `text` on one line, without a final full stop, at most 200 characters (GPU messages can be
/// long and multi-line; the page puts them inside its own sentence).
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = joined.trim_end_matches('.');
    if flat.chars().count() > 200 {
        format!("{}…", flat.chars().take(200).collect::<String>())
    } else {
        flat.to_owned()
    }
}

/// A canvas context that drew, with its renderer and its health.
pub(crate) struct Gpu {
    pub(crate) ctx: CanvasContext,
    pub(crate) renderer: Renderer,
    pub(crate) health: Health,
}

impl Gpu {
    fn new(ctx: CanvasContext) -> Self {
        let health = Health::default();
        health.watch(&ctx.device);
        let renderer = Renderer::new(&ctx.device, ctx.render_format());
        Self {
            ctx,
            renderer,
            health,
        }
    }
}

/// What [`create`] made: a GPU, or why there is none, and why WebGPU was passed over.
#[wasm_bindgen]
pub struct Created {
    pub(crate) gpu: Option<Gpu>,
    /// Why nothing can be drawn (empty when `gpu` is some).
    pub(crate) error: String,
    /// Why WebGPU was not used although the browser offers it (empty otherwise): a sentence
    /// fragment for the page's one-line notice.
    pub(crate) webgpu_failed: String,
}

/// Makes the GPU for `canvas` with `prefer` (see the module docs). Never fails: a failure is in
/// [`Created::error`].
pub(crate) async fn create(canvas: web_sys::OffscreenCanvas, prefer: Backend) -> Created {
    let on = |result: Result<CanvasContext, memviz_render::context::CanvasError>, webgpu_failed| {
        match result {
            Ok(ctx) => Created {
                gpu: Some(Gpu::new(ctx)),
                error: String::new(),
                webgpu_failed,
            },
            Err(e) => Created {
                gpu: None,
                error: if webgpu_failed.is_empty() {
                    e.to_string()
                } else {
                    format!("WebGPU does not work here ({webgpu_failed}) and {e}")
                },
                webgpu_failed,
            },
        }
    };
    match prefer {
        Backend::WebGl2 => on(
            create_for_canvas(Canvas::Offscreen(canvas), Backend::WebGl2).await,
            String::new(),
        ),
        // Forced (tests that must not fall back silently): no scratch trial, but the same
        // health watch, so a failure later is still noticed.
        Backend::WebGpu => on(
            create_for_canvas(Canvas::Offscreen(canvas), Backend::WebGpu).await,
            String::new(),
        ),
        Backend::Auto => match trial().await {
            Ok(()) => {
                match create_for_canvas(Canvas::Offscreen(canvas.clone()), Backend::WebGpu).await {
                    Ok(ctx) => on(Ok(ctx), String::new()),
                    Err(e) => on(
                        create_for_canvas(Canvas::Offscreen(canvas), Backend::WebGl2).await,
                        one_line(&e.to_string()),
                    ),
                }
            }
            Err(why) => on(
                create_for_canvas(Canvas::Offscreen(canvas), Backend::WebGl2).await,
                why.unwrap_or_default(),
            ),
        },
    }
}

/// Draws on a scratch canvas with WebGPU. `Err(None)`: the browser has no WebGPU (nothing to
/// tell the user); `Err(Some(why))`: it has, and it failed.
async fn trial() -> Result<(), Option<String>> {
    use memviz_render::context::{BackendError, CanvasError};
    let scratch = web_sys::OffscreenCanvas::new(SCRATCH_PX, SCRATCH_PX)
        .map_err(|_| Some("no scratch canvas to try it on".to_owned()))?;
    let ctx = match create_for_canvas(Canvas::Offscreen(scratch), Backend::WebGpu).await {
        Ok(ctx) => ctx,
        Err(CanvasError::WebGpuRequested(BackendError::NoBrowserWebGpu)) => return Err(None),
        Err(CanvasError::WebGpuRequested(e)) => return Err(Some(one_line(&e.to_string()))),
        Err(e) => return Err(Some(one_line(&e.to_string()))),
    };
    let health = Health::default();
    health.watch(&ctx.device);
    let result = first_frames(&ctx, &health).await;
    // Free the trial device now (its loss, reported to the discarded `health`, is harmless).
    ctx.device.destroy();
    result.map_err(Some)
}

/// Two frames and a readback on `ctx` inside error scopes; `Err` says what failed.
async fn first_frames(ctx: &CanvasContext, health: &Health) -> Result<(), String> {
    let device = &ctx.device;
    // Popped in reverse order at the end (and, on an early return, dropped in reverse order of
    // declaration, which is also the reverse of the pushes, as wgpu requires).
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
    let drawn = frames(ctx, health).await;
    let mut scoped = None;
    for scope in [internal.pop(), validation.pop(), oom.pop()] {
        if let Some(e) = scope.await {
            scoped.get_or_insert_with(|| {
                format!("the GPU reported an error ({})", one_line(&e.to_string()))
            });
        }
    }
    drawn?;
    if let Some(why) = scoped.or_else(|| health.failure()) {
        return Err(why);
    }
    Ok(())
}

async fn frames(ctx: &CanvasContext, health: &Health) -> Result<(), String> {
    let device = &ctx.device;
    let mut renderer = Renderer::new(device, ctx.render_format());
    // 1. A clear frame: configuring and presenting a canvas is where broken setups fail.
    draw_once(ctx, &mut renderer, &[])?;
    settle(ctx, health).await?;
    // 2. Only on a device still alive (a buffer mapped at creation on a lost device throws,
    //    and wgpu panics on it): a batch uploaded as the viewer does, drawn, and a readback.
    let batch = renderer.upload(
        device,
        [0.0, 0.0],
        &[Trapezoid::rect(0.0, 1.0, 0.0, 1.0, rgba(200, 40, 40, 255))],
    );
    draw_once(ctx, &mut renderer, &[&batch])?;
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("memviz-web trial readback"),
        size: 256,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mapped: Arc<Mutex<Option<bool>>> = Arc::default();
    let done = mapped.clone();
    readback.map_async(wgpu::MapMode::Read, .., move |r| {
        if let Ok(mut slot) = done.lock() {
            *slot = Some(r.is_ok());
        }
    });
    let ok = wait_for(|| mapped.lock().ok().and_then(|s| *s).is_some() || health.failed()).await;
    if let Some(why) = health.failure() {
        return Err(why);
    }
    if !ok || mapped.lock().ok().and_then(|s| *s) != Some(true) {
        return Err("a GPU buffer could not be read back".to_owned());
    }
    settle(ctx, health).await
}

/// Draws `batches` once into the surface and presents.
fn draw_once(
    ctx: &CanvasContext,
    renderer: &mut Renderer,
    batches: &[&memviz_render::InstanceBatch],
) -> Result<(), String> {
    use wgpu::CurrentSurfaceTexture as C;
    let frame = match ctx.surface.get_current_texture() {
        C::Success(t) | C::Suboptimal(t) => t,
        _ => return Err("the WebGPU canvas gave no frame to draw into".to_owned()),
    };
    let target = ctx.choice.frame_view(&frame.texture);
    let view = View {
        x_range: (0.0, 2.0),
        y_range: (0.0, 2.0),
        viewport_px: (ctx.choice.config.width, ctx.choice.config.height),
    };
    renderer.render(&ctx.device, &ctx.queue, &target, [1.0; 4], &view, batches);
    ctx.queue.present(frame);
    Ok(())
}

/// Waits until the GPU finished the work submitted so far, then a little longer so that a loss
/// it caused is reported; `Err` when the device failed or the work never finished.
async fn settle(ctx: &CanvasContext, health: &Health) -> Result<(), String> {
    let finished: Arc<Mutex<bool>> = Arc::default();
    let flag = finished.clone();
    ctx.queue.on_submitted_work_done(move || {
        if let Ok(mut f) = flag.lock() {
            *f = true;
        }
    });
    let ok = wait_for(|| finished.lock().is_ok_and(|f| *f) || health.failed()).await;
    sleep_ms(20).await;
    if let Some(why) = health.failure() {
        return Err(why);
    }
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the GPU did not finish a first frame within {} s",
            SETTLE_TIMEOUT_MS / 1000.0
        ))
    }
}

/// Polls `ready` every few ms until it is true (true) or [`SETTLE_TIMEOUT_MS`] passed (false).
async fn wait_for(ready: impl Fn() -> bool) -> bool {
    let start = js_sys::Date::now();
    loop {
        if ready() {
            return true;
        }
        if js_sys::Date::now() - start > SETTLE_TIMEOUT_MS {
            return false;
        }
        sleep_ms(4).await;
    }
}

/// `setTimeout(ms)` of the global scope (window or worker) as a future.
async fn sleep_ms(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        let global = js_sys::global();
        let timer = js_sys::Reflect::get(&global, &JsValue::from_str("setTimeout"))
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
        let scheduled =
            timer.is_some_and(|f| f.call2(&global, &resolve, &JsValue::from(ms)).is_ok());
        if !scheduled {
            // No timer: resolve at once (the caller's own timeout still ends its loop).
            let _ = resolve.call0(&JsValue::NULL);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}
