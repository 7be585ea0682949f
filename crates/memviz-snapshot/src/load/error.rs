//! Why a file could not be loaded: [`LoadError`], its kinds, and the kinds of the pickle
//! reader's, the JSON reader's and the builder's errors.

use crate::builder::BuildError;
use crate::json::{JsonError, JsonErrorKind};
use memviz_pickle::{ErrorKind, PickleError};
use std::fmt;

/// Why a file could not be loaded: one line (its Display: "at byte N: " when there is an
/// offset, then the message), and what kind of refusal it is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{}", AtByte(*.offset), .message)]
pub struct LoadError {
    /// What kind of file or failure this is (the message says the rest).
    pub kind: LoadErrorKind,
    /// Byte offset in the (decompressed) pickle or JSON text, when the problem is at a place in
    /// it.
    pub offset: Option<u64>,
    pub message: String,
}

/// The kinds of [`LoadError`], for a page or a tool to react to (serialized in snake_case:
/// `"not_pickle"`, `"too_big"`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadErrorKind {
    /// The file has no bytes at all.
    Empty,
    /// The file, or its gzip stream, ends before the pickle (or JSON text) does, and nothing that
    /// can be shown was read before the cut (a file cut after a whole segment or event opens
    /// instead).
    Truncated,
    /// Another format: text, HTML or XML, an image, a PDF, a zip archive, data compressed
    /// another way (or gzip inside gzip), unknown binary data. (JSON is read: a snapshot saved
    /// with `json.dump`.)
    NotPickle,
    /// A model checkpoint or saved tensors (`torch.save`): a pickle naming torch's, numpy's or
    /// `collections.OrderedDict`'s classes.
    Checkpoint,
    /// A pickle or JSON text that is not a memory snapshot: another structure, other classes,
    /// opcodes snapshots never use, or a text protocol (0 or 1), which memviz does not read.
    NotSnapshot,
    /// A broken pickle (a byte that is no opcode, a stack, mark or memo that does not add up,
    /// an impossible length or protocol), JSON that is not valid JSON, or corrupt gzip data.
    Malformed,
    /// Refused for what it would take: past the budget of copies or reads (bounded by the
    /// bytes read), past a limit of the reader (nesting, stack, memo, string length, a count
    /// past 32 bits), past the memory available, or gzip expanding past its ratio.
    TooBig,
}

/// "at byte N: " before a message, or nothing.
struct AtByte(Option<u64>);

impl fmt::Display for AtByte {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(o) => write!(f, "at byte {o}: "),
            None => Ok(()),
        }
    }
}

impl LoadError {
    pub(crate) fn new(kind: LoadErrorKind, message: impl Into<String>) -> Self {
        LoadError {
            kind,
            offset: None,
            message: message.into(),
        }
    }

    /// The builder's refusal at STOP (the model could not be read from the pickle).
    pub(crate) fn from_build(e: BuildError) -> Self {
        LoadError::new(build_kind(&e), e.to_string())
    }

    /// The builder's refusal at the end of a JSON text: its words say JSON where they say
    /// pickle.
    pub(crate) fn from_build_json(e: BuildError) -> Self {
        let mut l = LoadError::from_build(e);
        l.message = json_words(&l.message);
        l
    }

    /// A JSON reader's error (`gzip`: the offset is in the decompressed data).
    pub(crate) fn from_json(e: &JsonError, gzip: bool) -> Self {
        let kind = match &e.kind {
            JsonErrorKind::Syntax => LoadErrorKind::Malformed,
            JsonErrorKind::Truncated => LoadErrorKind::Truncated,
            JsonErrorKind::Limit | JsonErrorKind::OutOfMemory => LoadErrorKind::TooBig,
            JsonErrorKind::Builder(b) => build_kind(b),
        };
        let mut message = match &e.kind {
            JsonErrorKind::Builder(_) => json_words(&e.message),
            _ => e.message.clone(),
        };
        if gzip {
            message.push_str(" (offset in the decompressed data)");
        }
        LoadError {
            kind,
            offset: Some(e.offset),
            message,
        }
    }

    pub(crate) fn from_pickle(e: &PickleError, gzip: bool) -> Self {
        let mut message = e.kind.to_string();
        if let ErrorKind::Refused { target, .. } = &e.kind {
            message.push_str(if target.as_deref().is_some_and(is_checkpoint_class) {
                ". This is a model checkpoint (torch.save), not a memory snapshot: \
                 open the file written by torch.cuda.memory._dump_snapshot()"
            } else {
                ". This looks like a model checkpoint or another pickled Python object, not a memory snapshot: \
                 open the file written by torch.cuda.memory._dump_snapshot()"
            });
        }
        if gzip {
            message.push_str(" (offset in the decompressed data)");
        }
        LoadError {
            kind: pickle_kind(&e.kind),
            offset: Some(e.offset),
            message,
        }
    }
}

/// A builder message about a pickle, said of a JSON text.
fn json_words(message: &str) -> String {
    message
        .replace("a valid pickle, but not", "valid JSON, but not")
        .replace("pickle bytes read", "JSON bytes read")
}

/// The kind of a pickle error.
fn pickle_kind(e: &ErrorKind) -> LoadErrorKind {
    use LoadErrorKind::*;
    match e {
        ErrorKind::NotAPickle { .. } => NotPickle,
        ErrorKind::Truncated { .. } => Truncated,
        ErrorKind::Refused { target, .. } if target.as_deref().is_some_and(is_checkpoint_class) => {
            Checkpoint
        }
        ErrorKind::Refused { .. } | ErrorKind::Unsupported { .. } => NotSnapshot,
        ErrorKind::UnsupportedProtocol(_)
        | ErrorKind::UnknownOpcode(_)
        | ErrorKind::StackUnderflow { .. }
        | ErrorKind::NoMark { .. }
        | ErrorKind::BadMemo { .. }
        | ErrorKind::Type { .. }
        | ErrorKind::BadLength { .. }
        | ErrorKind::EmptyStop => Malformed,
        ErrorKind::Limit { .. } | ErrorKind::OutOfMemory { .. } => TooBig,
        ErrorKind::Builder(b) => build_kind(b),
    }
}

/// The kind of a builder's refusal.
fn build_kind(e: &BuildError) -> LoadErrorKind {
    match e {
        BuildError::Corrupt(_) => LoadErrorKind::Malformed,
        BuildError::Unexpected(_) => LoadErrorKind::NotSnapshot,
        BuildError::Limit(_) | BuildError::OutOfMemory(_) => LoadErrorKind::TooBig,
    }
}

/// Classes that checkpoints and saved tensors name with GLOBAL / STACK_GLOBAL (torch.save
/// pickles tensors through torch's rebuild functions, state_dicts as OrderedDicts).
fn is_checkpoint_class(target: &str) -> bool {
    ["torch", "collections.OrderedDict", "numpy"]
        .iter()
        .any(|p| target.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use LoadErrorKind::*;

    /// Every pickle error and builder refusal has the kind its message describes (the ones no
    /// small input reaches, such as running out of memory, included).
    #[test]
    fn every_pickle_error_has_its_kind() {
        let op = "X";
        let cases = [
            (ErrorKind::NotAPickle { first_byte: 1 }, NotPickle),
            (ErrorKind::UnsupportedProtocol(9), Malformed),
            (ErrorKind::Truncated { inside: None }, Truncated),
            (
                ErrorKind::Refused {
                    opcode: "GLOBAL",
                    target: Some("numpy.core.multiarray._reconstruct".into()),
                },
                Checkpoint,
            ),
            (
                ErrorKind::Refused {
                    opcode: "GLOBAL",
                    target: Some("builtins.set".into()),
                },
                NotSnapshot,
            ),
            (
                ErrorKind::Refused {
                    opcode: "REDUCE",
                    target: None,
                },
                NotSnapshot,
            ),
            (ErrorKind::Unsupported { opcode: op }, NotSnapshot),
            (ErrorKind::UnknownOpcode(0xff), Malformed),
            (ErrorKind::StackUnderflow { opcode: op }, Malformed),
            (ErrorKind::NoMark { opcode: op }, Malformed),
            (ErrorKind::BadMemo { index: 1, len: 0 }, Malformed),
            (
                ErrorKind::Type {
                    opcode: op,
                    expected: "a",
                    found: "b",
                },
                Malformed,
            ),
            (
                ErrorKind::BadLength {
                    opcode: op,
                    len: -1,
                },
                Malformed,
            ),
            (ErrorKind::EmptyStop, Malformed),
            (
                ErrorKind::Limit {
                    what: "memo size",
                    limit: 1,
                },
                TooBig,
            ),
            (
                ErrorKind::OutOfMemory {
                    what: "the memo",
                    bytes: 1,
                },
                TooBig,
            ),
            (
                ErrorKind::Builder(BuildError::Corrupt("c".into())),
                Malformed,
            ),
            (
                ErrorKind::Builder(BuildError::Unexpected("u".into())),
                NotSnapshot,
            ),
            (ErrorKind::Builder(BuildError::Limit("l".into())), TooBig),
            (
                ErrorKind::Builder(BuildError::OutOfMemory("o".into())),
                TooBig,
            ),
        ];
        for (kind, want) in cases {
            let e = PickleError { offset: 7, kind };
            let l = LoadError::from_pickle(&e, false);
            assert_eq!(l.kind, want, "{e}");
            assert_eq!(l.offset, Some(7));
            assert!(l.to_string().starts_with(&e.to_string()), "{l}");
        }
        let l = LoadError::from_build(BuildError::OutOfMemory("out of memory: x".into()));
        assert_eq!((l.kind, l.offset), (TooBig, None));
        assert_eq!(l.to_string(), "out of memory: x");
    }

    /// Every JSON error has the kind its message describes; a builder's words about a pickle
    /// are said of JSON; gzip offsets say they are in the decompressed data.
    #[test]
    fn every_json_error_has_its_kind() {
        let cases = [
            (JsonErrorKind::Syntax, Malformed),
            (JsonErrorKind::Truncated, Truncated),
            (JsonErrorKind::Limit, TooBig),
            (JsonErrorKind::OutOfMemory, TooBig),
            (
                JsonErrorKind::Builder(BuildError::Corrupt("c".into())),
                Malformed,
            ),
            (
                JsonErrorKind::Builder(BuildError::Unexpected("u".into())),
                NotSnapshot,
            ),
            (
                JsonErrorKind::Builder(BuildError::Limit("l".into())),
                TooBig,
            ),
        ];
        for (kind, want) in cases {
            let e = JsonError {
                offset: 9,
                kind,
                message: "m".into(),
            };
            let l = LoadError::from_json(&e, false);
            assert_eq!((l.kind, l.offset), (want, Some(9)), "{e}");
            assert_eq!(l.to_string(), "at byte 9: m");
            let g = LoadError::from_json(&e, true);
            assert_eq!(g.message, "m (offset in the decompressed data)");
        }
        let l = LoadError::from_build_json(BuildError::Unexpected(
            "a valid pickle, but not a memory snapshot: the top level is int".into(),
        ));
        assert_eq!(l.kind, NotSnapshot);
        assert_eq!(
            l.message,
            "valid JSON, but not a memory snapshot: the top level is int"
        );
    }
}
