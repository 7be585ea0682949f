//! Running a command in-process (the Python API, through memviz-py): the snapshots it names are
//! already in memory, and what it prints is kept instead of written. While [`capture`] runs, on
//! this thread only, [`crate::load`] finds its snapshots by the names given, [`crate::out::stdout`]
//! writes into a buffer and [`crate::out::warn`] keeps its lines.

use crate::error::Error;
use crate::out::Fail;
use memviz_snapshot::{Loader, Snapshot};
use std::cell::RefCell;
use std::ffi::OsString;
use std::sync::Arc;

/// A snapshot in memory, named as a command line names a file. `raw` holds the file's bytes
/// when there is no file of that name (the single-file report embeds them).
#[derive(Clone)]
pub struct Named {
    /// The name the command line uses (also the name in messages).
    pub name: String,
    /// The parsed snapshot.
    pub snap: Arc<Snapshot>,
    /// The bytes it was parsed from, when they are not in a file called `name`.
    pub raw: Option<Arc<[u8]>>,
}

/// What a command printed: stdout's bytes and the warning lines of stderr.
#[derive(Debug, Default)]
pub struct Captured {
    /// Everything written to stdout.
    pub stdout: Vec<u8>,
    /// The lines written to stderr (warnings), without their newline.
    pub warnings: Vec<String>,
}

thread_local! {
    static SNAPSHOTS: RefCell<Vec<Named>> = const { RefCell::new(Vec::new()) };
    static CAPTURE: RefCell<Option<Captured>> = const { RefCell::new(None) };
}

/// Clears this thread's state when dropped, even when a panic unwinds through it.
struct Reset;

impl Drop for Reset {
    fn drop(&mut self) {
        SNAPSHOTS.with(|s| s.borrow_mut().clear());
        CAPTURE.with(|c| c.borrow_mut().take());
    }
}

/// Runs `f` with `snapshots` known by name and the output kept (the typed answers of
/// [`crate::answer`] run there too).
pub(crate) fn with_capture<T>(
    snapshots: &[Named],
    f: impl FnOnce() -> Result<T, Fail>,
) -> (Result<T, Error>, Captured) {
    let _reset = Reset;
    SNAPSHOTS.with(|s| *s.borrow_mut() = snapshots.to_vec());
    CAPTURE.with(|c| *c.borrow_mut() = Some(Captured::default()));
    let r = f().map_err(Error::from);
    let captured = CAPTURE.with(|c| c.borrow_mut().take()).unwrap_or_default();
    (r, captured)
}

/// Runs the command line `args` (without the program's name) on the snapshots `snapshots`
/// (which `args` names by their [`Named::name`]; other names are files); returns what it
/// printed, or its error (the CLI's one-line message, without `memviz: `, and its kind).
pub fn capture(args: &[String], snapshots: &[Named]) -> Result<Captured, Error> {
    let argv = std::iter::once(OsString::from("memviz")).chain(args.iter().map(OsString::from));
    let (r, captured) = with_capture(snapshots, || crate::dispatch(argv));
    r.map(|()| captured)
}

/// Opens the file at `path` as the CLI does; returns the snapshot and its warnings.
pub fn open(path: &str) -> Result<(Arc<Snapshot>, Vec<String>), Error> {
    let (r, captured) = with_capture(&[], || crate::load(path).map_err(Fail::from));
    r.map(|s| (s, captured.warnings))
}

/// Parses a whole file's `bytes` (named `name` in messages); returns the snapshot and its
/// warnings (a file cut before its end opens with what it holds, and says so).
pub fn load_bytes(name: &str, bytes: &[u8]) -> Result<(Arc<Snapshot>, Vec<String>), Error> {
    let mut loader = Loader::new().with_size_hint(bytes.len() as u64);
    for chunk in bytes.chunks(1 << 20) {
        loader
            .push(chunk)
            .map_err(|e| Error::from(crate::describe(name, e)))?;
    }
    let snap = loader
        .finish()
        .map_err(|e| Error::from(crate::describe(name, e)))?;
    let warnings = snap
        .truncation_warning()
        .map(|w| vec![format!("memviz: warning: {name}: {w}")])
        .unwrap_or_default();
    Ok((Arc::new(snap), warnings))
}

/// The snapshot named `name` while [`capture`] runs.
pub(crate) fn snapshot(name: &str) -> Option<Arc<Snapshot>> {
    SNAPSHOTS.with(|s| {
        s.borrow()
            .iter()
            .find(|n| n.name == name)
            .map(|n| n.snap.clone())
    })
}

/// The bytes of the snapshot named `name` while [`capture`] runs, when it has no file.
pub(crate) fn raw(name: &str) -> Option<Arc<[u8]>> {
    SNAPSHOTS.with(|s| {
        s.borrow()
            .iter()
            .find(|n| n.name == name)
            .and_then(|n| n.raw.clone())
    })
}

/// Whether output is being kept (on this thread).
pub(crate) fn capturing() -> bool {
    CAPTURE.with(|c| c.borrow().is_some())
}

/// Keeps `bytes` written to stdout; false when nothing is being kept.
pub(crate) fn keep_stdout(bytes: &[u8]) -> bool {
    CAPTURE.with(|c| match c.borrow_mut().as_mut() {
        Some(k) => {
            k.stdout.extend_from_slice(bytes);
            true
        }
        None => false,
    })
}

/// Keeps a line written to stderr; false when nothing is being kept.
pub(crate) fn keep_warning(line: &str) -> bool {
    CAPTURE.with(|c| match c.borrow_mut().as_mut() {
        Some(k) => {
            k.warnings.push(line.to_string());
            true
        }
        None => false,
    })
}
