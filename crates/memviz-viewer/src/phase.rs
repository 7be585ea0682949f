//! The embedder's hook told of each step of building a view (benchmarks: the page's worker
//! records its wasm memory and heap there; `memviz_web::memory::phases`). It depends on nothing
//! in the crate, so the scene builders low in the crate call it without reaching up to
//! [`crate::memory`] (which re-exports [`set_phase_hook`], the embedder's path).

/// The hook, once installed.
static PHASE_HOOK: std::sync::OnceLock<fn(&'static str)> = std::sync::OnceLock::new();

/// Installs the hook [`phase`] calls (first call wins).
pub fn set_phase_hook(hook: fn(&'static str)) {
    let _ = PHASE_HOOK.set(hook);
}

/// A step of building a view is done: tells the embedder's hook, if any.
pub(crate) fn phase(name: &'static str) {
    if let Some(hook) = PHASE_HOOK.get() {
        hook(name);
    }
}
