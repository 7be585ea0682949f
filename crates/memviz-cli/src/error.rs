//! What kind of failure a command's error is ([`ErrorKind`]), carried from where it is known
//! (the loader's [`LoadErrorKind`], a file's I/O, an option's value, the `--device` rule) to the
//! binary (one line, exit 2, whatever the kind) and to the Python API (one `MemvizError`
//! subclass per kind, docs/python.md): never guessed from the message's words.

use memviz_snapshot::LoadErrorKind;

/// The kinds of [`Error`]; each is a `MemvizError` subclass in Python.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The bytes are no memory snapshot: empty, another format, a checkpoint, a pickle or JSON
    /// of something else, or a broken pickle, JSON or gzip stream.
    NotASnapshot,
    /// The file ends before anything that can be shown was read.
    Truncated,
    /// Refused for what it would take: memory, a reader's limit, a gzip ratio, a scan's work.
    TooBig,
    /// An option's value, or the command line itself, is wrong.
    BadArgument,
    /// `--device D` names a device the snapshot does not have (a [`ErrorKind::BadArgument`]).
    UnknownDevice,
    /// A file could not be opened, read or written.
    Io,
    /// Anything else (a message without a kind).
    Other,
}

impl ErrorKind {
    /// The kind of the loader's refusal.
    #[must_use]
    pub fn of_load(kind: LoadErrorKind) -> ErrorKind {
        match kind {
            LoadErrorKind::Truncated => ErrorKind::Truncated,
            LoadErrorKind::TooBig => ErrorKind::TooBig,
            LoadErrorKind::Empty
            | LoadErrorKind::NotPickle
            | LoadErrorKind::Checkpoint
            | LoadErrorKind::NotSnapshot
            | LoadErrorKind::Malformed => ErrorKind::NotASnapshot,
        }
    }
}

/// A command's error: its kind and its one-line message (what the binary prints after
/// `memviz: `).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    /// What kind of failure it is.
    pub kind: ErrorKind,
    /// The one-line message.
    pub message: String,
}

impl Error {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }
}

impl From<crate::out::Fail> for Error {
    fn from(f: crate::out::Fail) -> Error {
        use crate::out::Fail;
        match f {
            Fail::Msg(m) => Error::new(ErrorKind::Other, m),
            Fail::Kind(e) => e,
            Fail::Closed => Error::new(ErrorKind::Io, "output closed"),
        }
    }
}

impl From<crate::FileError> for Error {
    fn from(e: crate::FileError) -> Error {
        use crate::FileError;
        let kind = match &e {
            FileError::Open { .. } | FileError::Read { .. } => ErrorKind::Io,
            FileError::TooLarge { .. } => ErrorKind::TooBig,
            FileError::Load { error, .. } => ErrorKind::of_load(error.kind),
        };
        Error::new(kind, e.to_string())
    }
}

/// A [`ErrorKind::BadArgument`] error, as a command's failure.
pub(crate) fn bad_argument(message: impl Into<String>) -> crate::out::Fail {
    crate::out::Fail::Kind(Error::new(ErrorKind::BadArgument, message))
}
