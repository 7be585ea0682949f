//! The only wasm-bindgen surface of memviz: WebViewer (streams snapshots in, draws the timeline into an OffscreenCanvas, answers input) and WebHandle (summary only).
//!
//! - [`WebViewer`] (wasm32 only; logic in the plain-Rust [`ViewerCore`]) is the page's viewer.
//!   Its only caller is `www/js/worker.js`, the Web Worker that owns parsing and drawing.
//! - [`WebHandle`] parses one file to its summary without any GPU: node tests and the CLI
//!   parity checks use it. The rest of this page is about it.
//!
//! # How it works
//! JS creates one [`WebHandle`] per file, calls [`WebHandle::push`] with each chunk it reads
//! (any size; the result does not depend on chunking), then [`WebHandle::finish`], which parses
//! the rest, builds the summary and returns it as JSON. The text table is then available from
//! [`WebHandle::summary_table`]. Every error is turned into a `JsError` here, exactly once; the
//! logic itself lives in [`Session`], which is plain Rust and is unit-tested natively.
//!
//! A panic is a bug: the hook installed by [`WebHandle::new`] logs it to the console and records
//! it, so that JS can ask [`WebHandle::has_panicked`] (a static function: after a panic the handle
//! itself may be unusable) and tell the user to reload the page.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use wasm_bindgen::prelude::*;

pub mod memory;
mod viewer;
pub use viewer::{OpenError, OpenErrorKind, ViewerCore};
#[cfg(target_arch = "wasm32")]
mod gpu_setup;
#[cfg(target_arch = "wasm32")]
mod web_viewer;
#[cfg(target_arch = "wasm32")]
pub use gpu_setup::Created;
#[cfg(target_arch = "wasm32")]
pub use web_viewer::WebViewer;

static PANICKED: AtomicBool = AtomicBool::new(false);
static PANIC_HOOK: Once = Once::new();

/// Installs (once per module instance) a panic hook that records the panic and then logs it
/// to the browser console with `console_error_panic_hook`.
fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            PANICKED.store(true, Ordering::SeqCst);
            console_error_panic_hook::hook(info);
        }));
    });
}

/// Where a [`Session`] is in its life.
enum Stage {
    /// Accepting chunks.
    Loading(memviz_snapshot::Loader),
    /// `finish` succeeded; the summary is kept for [`Session::summary_table`].
    Done { table: String },
    /// A call failed; the error is repeated by every later call.
    Failed(OpenError),
}

/// One file being loaded: the plain-Rust core of [`WebHandle`] (errors are [`OpenError`]s).
pub struct Session {
    stage: Stage,
    bytes_read: u64,
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

impl Session {
    /// A session waiting for its first chunk.
    pub fn new() -> Self {
        Self {
            stage: Stage::Loading(memviz_snapshot::Loader::new()),
            bytes_read: 0,
        }
    }

    /// Feeds the next chunk of the file.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), OpenError> {
        match &mut self.stage {
            Stage::Loading(loader) => {
                memory::grow_ahead(chunk.len() as u64 * 4);
                let result = loader.push(chunk);
                self.bytes_read = loader.bytes_read();
                result.map_err(|err| self.fail(err.into()))
            }
            Stage::Done { .. } => Err(OpenError::out_of_order(
                "push after finish: create a new WebHandle for each file",
            )),
            Stage::Failed(msg) => Err(msg.clone()),
        }
    }

    /// Size the tables for a file of `file_bytes`; only before the first chunk.
    pub fn reserve(&mut self, file_bytes: u64) {
        if self.bytes_read == 0 {
            if let Stage::Loading(loader) = &mut self.stage {
                let fresh = std::mem::take(loader);
                *loader = fresh.with_size_hint(file_bytes);
            }
        }
    }

    /// Bytes accepted so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Ends the input and returns the summary as JSON (`{"devices":[…],"warnings":[…]}`).
    pub fn finish(&mut self) -> Result<String, OpenError> {
        let stage = std::mem::replace(
            &mut self.stage,
            Stage::Failed(OpenError::out_of_order("finish called twice")),
        );
        match stage {
            Stage::Loading(loader) => {
                self.bytes_read = loader.bytes_read();
                match loader.finish() {
                    Ok(snapshot) => {
                        let summary = memviz_analysis::summary::summarize(&snapshot);
                        let json = summary.to_json();
                        self.stage = Stage::Done {
                            table: summary.to_table(),
                        };
                        Ok(json)
                    }
                    Err(err) => Err(self.fail(err.into())),
                }
            }
            Stage::Done { table } => {
                self.stage = Stage::Done { table };
                Err(OpenError::out_of_order(
                    "finish called twice: create a new WebHandle for each file",
                ))
            }
            Stage::Failed(msg) => {
                self.stage = Stage::Failed(msg.clone());
                Err(msg)
            }
        }
    }

    /// The human-readable summary table; empty until `finish` succeeded.
    pub fn summary_table(&self) -> String {
        match &self.stage {
            Stage::Done { table } => table.clone(),
            Stage::Loading(_) | Stage::Failed(_) => String::new(),
        }
    }

    fn fail(&mut self, err: OpenError) -> OpenError {
        self.stage = Stage::Failed(err.clone());
        err
    }
}

/// The JS-facing handle: one per file. See the crate docs for the call sequence.
#[wasm_bindgen]
pub struct WebHandle {
    session: Session,
}

impl Default for WebHandle {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen]
impl WebHandle {
    /// A handle ready for the first chunk. Installs the panic hook on first use.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Self {
        install_panic_hook();
        Self {
            session: Session::new(),
        }
    }

    /// Feeds the next chunk (a `Uint8Array` of any length). Throws an `Error` whose message
    /// names the byte offset when the data is not a readable snapshot.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), JsError> {
        self.session
            .push(chunk)
            .map_err(|e| JsError::new(&e.message))
    }

    /// Size the parser's tables once for a file of `file_bytes` (call before the first `push`
    /// when the size is known). Growing large tables step by step copies them each time (wasm
    /// has no mremap), which on a fresh page costs as much as the parse itself.
    pub fn reserve(&mut self, file_bytes: f64) {
        self.session.reserve(file_bytes.max(0.0) as u64);
    }

    /// Bytes accepted so far (a JS number; exact below 2^53).
    pub fn bytes_read(&self) -> f64 {
        self.session.bytes_read() as f64
    }

    /// Ends the input; returns the summary JSON (`{"devices":[…],"warnings":[…]}`).
    pub fn finish(&mut self) -> Result<String, JsError> {
        self.session.finish().map_err(|e| JsError::new(&e.message))
    }

    /// The summary as a human-readable text table (empty until `finish` succeeded).
    pub fn summary_table(&self) -> String {
        self.session.summary_table()
    }

    /// True once any Rust code in this module has panicked: the page should then be reloaded.
    /// Static, because after a panic the handle that panicked may still be marked as borrowed.
    pub fn has_panicked() -> bool {
        PANICKED.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::Session;

    #[test]
    fn garbage_is_an_error_that_sticks() {
        let mut s = Session::new();
        let first = s
            .push(b"this is not a pickle")
            .and_then(|()| s.finish().map(|_| ()));
        let err = first.expect_err("garbage must not parse");
        assert_eq!(err.kind.name(), "not_pickle", "{err}");
        // Every later call repeats an error instead of panicking.
        assert!(s.push(b"more").is_err());
        assert!(s.finish().is_err());
        assert_eq!(s.summary_table(), "");
    }

    #[test]
    fn empty_input_is_an_error() {
        let mut s = Session::new();
        assert!(s.finish().is_err());
        assert_eq!(s.bytes_read(), 0);
    }
}
