//! The one way the commands print: [`stdout`] (buffered, locked once) and [`Fail`], the error of
//! a command.
//!
//! A reader that stops early (`memviz summary FILE | head -1`) closes the pipe: the next write
//! fails with `BrokenPipe` (Rust ignores SIGPIPE). That is a normal end, not an error: every
//! write to stdout goes through `?` on an `io::Result`, which turns `BrokenPipe` into
//! [`Fail::Closed`], and `main` ends quietly with exit 0. `println!` would panic there (exit 101).

use std::io::{self, BufWriter, StdoutLock, Write};

/// Why a command stopped early.
#[derive(Debug)]
pub(crate) enum Fail {
    /// One sentence for stderr; exit 2 (its kind: [`crate::ErrorKind::Other`]).
    Msg(String),
    /// One sentence of a known kind ([`crate::Error`]); exit 2, as [`Fail::Msg`].
    Kind(crate::Error),
    /// Stdout was closed by its reader: a quiet normal end.
    Closed,
}

impl From<String> for Fail {
    fn from(s: String) -> Self {
        Fail::Msg(s)
    }
}

impl From<crate::Error> for Fail {
    fn from(e: crate::Error) -> Self {
        Fail::Kind(e)
    }
}

impl From<&str> for Fail {
    fn from(s: &str) -> Self {
        Fail::Msg(s.to_string())
    }
}

/// A failed write to stdout (the only `io::Error` the commands pass through `?` unmapped:
/// reading files maps its errors to sentences that name the file).
impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Fail::Closed
        } else {
            Fail::Kind(crate::Error::new(
                crate::ErrorKind::Io,
                format!("cannot write to stdout: {e}"),
            ))
        }
    }
}

/// A failed JSON write to stdout.
impl From<serde_json::Error> for Fail {
    fn from(e: serde_json::Error) -> Self {
        match e.io_error_kind() {
            Some(io::ErrorKind::BrokenPipe) => Fail::Closed,
            Some(_) => Fail::Kind(crate::Error::new(
                crate::ErrorKind::Io,
                format!("cannot write to stdout: {e}"),
            )),
            None => Fail::Msg(format!("cannot write JSON: {e}")),
        }
    }
}

/// A command's result.
pub(crate) type Done = Result<(), Fail>;

/// Buffered stdout, or a buffer while [`crate::memory::capture`] runs. Call [`Out::finish`] at
/// the end so that a failed last write is seen.
pub(crate) enum Out {
    /// The process's stdout.
    Stdout(BufWriter<StdoutLock<'static>>),
    /// Kept in memory; handed to the capture when dropped.
    Memory(Vec<u8>),
}

/// The buffered, locked stdout (or the capture's buffer).
pub(crate) fn stdout() -> Out {
    if crate::memory::capturing() {
        Out::Memory(Vec::new())
    } else {
        Out::Stdout(BufWriter::with_capacity(64 << 10, io::stdout().lock()))
    }
}

impl Out {
    /// Flushes what is left.
    pub(crate) fn finish(mut self) -> Done {
        self.flush()?;
        Ok(())
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        if let Out::Memory(v) = self {
            crate::memory::keep_stdout(v);
        }
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Out::Stdout(w) => w.write(buf),
            Out::Memory(v) => v.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Out::Stdout(w) => w.write_all(buf),
            Out::Memory(v) => v.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Stdout(w) => w.flush(),
            Out::Memory(_) => Ok(()),
        }
    }
}

/// A line on stderr (a warning, or the error of `main`); a closed stderr is ignored rather
/// than a panic, as `eprintln!` would.
pub(crate) fn warn(line: &str) {
    if crate::memory::keep_warning(line) {
        return;
    }
    let _ = writeln!(io::stderr().lock(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_pipe_is_a_quiet_end() {
        let e = io::Error::from(io::ErrorKind::BrokenPipe);
        assert!(matches!(Fail::from(e), Fail::Closed));
        let e = io::Error::from(io::ErrorKind::PermissionDenied);
        assert!(
            matches!(Fail::from(e), Fail::Kind(e) if e.kind == crate::ErrorKind::Io
                && e.message.starts_with("cannot write to stdout"))
        );
        let j = serde_json::Error::io(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(matches!(Fail::from(j), Fail::Closed));
    }
}
