//! The `memviz` command as a library: [`run`] is the whole command line (the binary in main.rs
//! and the Python package's console script, through memviz-py, both call it), and [`capture`]
//! runs one command in-process on snapshots already in memory and returns what it would print
//! (the Python API's methods: the same JSON as `--json`, from the same code). No global
//! allocator here: the binary installs its own (huge_pages.rs), an extension module must not.

use memviz_snapshot::{LoadError, Loader, Snapshot};
use std::ffi::OsString;
use std::io::Read;
use std::sync::Arc;

pub mod answer;
pub mod capacity;
pub mod cli;
mod cmd;
mod device;
mod error;
mod memory;
mod out;
mod svg;

pub use error::{Error, ErrorKind};
pub use memory::{capture, load_bytes, open, Captured, Named};

/// Why a file named on the command line could not be read or loaded: one sentence that starts
/// with the file's name (what `main` prints after `memviz: `, exit 2).
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be opened.
    #[error("{path}: cannot open: {error}")]
    Open { path: String, error: std::io::Error },
    /// Reading it failed.
    #[error("{path}: cannot read: {error}")]
    Read { path: String, error: std::io::Error },
    /// Its `len` bytes do not fit in the memory left.
    #[error("{path}: cannot read: its {len} bytes do not fit in memory")]
    TooLarge { path: String, len: u64 },
    /// The loader refused it.
    #[error("{path}: {error}")]
    Load { path: String, error: LoadError },
}

impl From<FileError> for out::Fail {
    fn from(e: FileError) -> Self {
        out::Fail::Kind(e.into())
    }
}

impl FileError {
    fn open(path: &str) -> impl FnOnce(std::io::Error) -> FileError + '_ {
        move |error| FileError::Open {
            path: path.to_string(),
            error,
        }
    }

    fn read(path: &str) -> impl FnOnce(std::io::Error) -> FileError + '_ {
        move |error| FileError::Read {
            path: path.to_string(),
            error,
        }
    }
}

/// Read and parse a file in 1 MiB chunks, as the browser does. A file that ends before the
/// pickle's STOP opens with what was read before the cut, and a warning on stderr.
pub fn load(path: &str) -> Result<Arc<Snapshot>, FileError> {
    if let Some(s) = memory::snapshot(path) {
        return Ok(s);
    }
    let mut f = std::fs::File::open(path).map_err(FileError::open(path))?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut loader = Loader::new().with_size_hint(size);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(FileError::read(path))?;
        if n == 0 {
            break;
        }
        loader.push(&buf[..n]).map_err(|e| describe(path, e))?;
    }
    let snap = loader.finish().map_err(|e| describe(path, e))?;
    // A file cut before its end opens with what was read; say so where it cannot be missed
    // (stderr, whatever the command prints on stdout).
    if let Some(w) = snap.truncation_warning() {
        out::warn(&format!("memviz: warning: {path}: {w}"));
    }
    Ok(Arc::new(snap))
}

/// The loader's refusal of the file at `path`.
pub(crate) fn describe(path: &str, error: LoadError) -> FileError {
    FileError::Load {
        path: path.to_string(),
        error,
    }
}

/// The whole file in memory, its buffer reserved fallibly: a file larger than the memory left
/// is a sentence (exit 2), not an abort.
pub(crate) fn read_whole(path: &str) -> Result<Vec<u8>, FileError> {
    if let Some(raw) = memory::raw(path) {
        return Ok(raw.to_vec());
    }
    let mut f = std::fs::File::open(path).map_err(FileError::open(path))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut v = Vec::new();
    v.try_reserve_exact(usize::try_from(len).unwrap_or(usize::MAX))
        .map_err(|_| FileError::TooLarge {
            path: path.to_string(),
            len,
        })?;
    f.read_to_end(&mut v).map_err(FileError::read(path))?;
    Ok(v)
}

/// Runs the command line `args` (the program's name first, as `std::env::args_os`), printing
/// on stdout and stderr; returns the exit code: 0, or 2 with one line on stderr.
pub fn run(args: impl IntoIterator<Item = OsString>) -> u8 {
    match dispatch(args) {
        Ok(()) | Err(out::Fail::Closed) => 0,
        Err(out::Fail::Msg(msg)) => {
            out::warn(&format!("memviz: {msg}"));
            2
        }
        Err(out::Fail::Kind(e)) => {
            out::warn(&format!("memviz: {}", e.message));
            2
        }
    }
}

/// Parses `args` and runs the command.
pub(crate) fn dispatch(args: impl IntoIterator<Item = OsString>) -> out::Done {
    let Some(cli) = cli::parse(args)? else {
        return Ok(());
    };
    use cli::Command;
    match &cli.command {
        Command::Summary(a) => cmd::summary::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::State(a) => cmd::state::run(a),
        Command::Oom(a) => cmd::oom::run(a),
        Command::Folded(a) => cmd::folded::run(a),
        Command::Diff(a) => cmd::diff::run(a),
        Command::Leaks(a) => cmd::leaks::run(a),
        Command::Lines(a) => cmd::lines::run(a),
        Command::Stats(a) => cmd::memory_viz::stats(a),
        Command::Trace(a) => cmd::memory_viz::trace(a),
        Command::Segments(a) => {
            cmd::memory_viz::reserved(a, memviz_analysis::memory_viz::ReservedBy::Segment)
        }
        Command::Memory(a) => {
            cmd::memory_viz::reserved(a, memviz_analysis::memory_viz::ReservedBy::Stream)
        }
        Command::Html(a) => cmd::html::run(a),
        Command::Ranks(a) => cmd::ranks::run(a),
        Command::Open(a) => cmd::open::run(a),
        Command::Whatif(a) => cmd::whatif::run(a),
        Command::Export(a) => cmd::export::run(a),
        Command::Query(a) => cmd::query::run(a),
    }
}
