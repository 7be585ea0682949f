//! Errors with the byte offset of the opcode that failed and what was expected there.

use std::fmt;

/// A pickle decoding error. `offset` is the byte offset (from the start of the pickle) of the
/// opcode being decoded when the error happened.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("at byte {offset}: {kind}")]
pub struct PickleError {
    pub offset: u64,
    pub kind: ErrorKind,
}

/// What went wrong. Every variant's message says what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ErrorKind {
    /// The first byte is not the PROTO opcode (0x80).
    #[error(
        "not a pickle of protocol 2 or later: expected the PROTO opcode 0x80 as the first byte, found 0x{first_byte:02x}"
    )]
    NotAPickle { first_byte: u8 },
    /// PROTO with a version outside 2..=5.
    #[error("unsupported pickle protocol {0}: expected a protocol from 2 to 5")]
    UnsupportedProtocol(u8),
    /// The input ended before STOP; `inside` names the opcode that was cut, if any.
    #[error("{}", Cut(*.inside))]
    Truncated { inside: Option<&'static str> },
    /// An opcode that would import or execute code. `target` is the class it names, if known.
    #[error("{}", Import(opcode, .target.as_deref()))]
    Refused {
        opcode: &'static str,
        target: Option<String>,
    },
    /// A valid pickle opcode this reader does not support (text protocols, sets, out-of-band buffers).
    #[error("{opcode} opcode is not used by memory snapshots and is not supported")]
    Unsupported { opcode: &'static str },
    /// A byte that is not a pickle opcode.
    #[error("byte 0x{0:02x} is not a pickle opcode: expected an opcode")]
    UnknownOpcode(u8),
    /// An opcode needed more values on the stack.
    #[error("{opcode} needs more values on the stack than there are: the pickle is corrupt")]
    StackUnderflow { opcode: &'static str },
    /// An opcode needed a MARK and there was none.
    #[error("{opcode} expects a MARK before it and there is none: the pickle is corrupt")]
    NoMark { opcode: &'static str },
    /// A memo get of a slot that was never set.
    #[error(
        "memo get of slot {index}, which was never set (memo has {len} slots): expected a slot set earlier"
    )]
    BadMemo { index: u64, len: u64 },
    /// A value of the wrong type, e.g. APPENDS onto a dict.
    #[error("{opcode} expected {expected} but found {found}: the pickle is corrupt")]
    Type {
        opcode: &'static str,
        expected: &'static str,
        found: &'static str,
    },
    /// A configured limit was exceeded.
    #[error("{what} exceeds the limit of {limit}")]
    Limit { what: &'static str, limit: u64 },
    /// A length field that cannot be right (negative, or beyond the limits).
    #[error("{opcode} has an impossible length {len}")]
    BadLength { opcode: &'static str, len: i128 },
    /// STOP with an empty stack.
    #[error("STOP with nothing on the stack: expected a value to return")]
    EmptyStop,
    /// The builder rejected a container operation.
    #[error("{0}")]
    Builder(BuildError),
    /// Memory for `what` (about `bytes` in all) could not be allocated: reported instead of
    /// aborting the process.
    #[error(
        "out of memory: {what} needs more than {bytes} bytes and the system has no more to give (the file is too large for the memory available)"
    )]
    OutOfMemory { what: &'static str, bytes: u64 },
}

/// Why a [`Builder`](crate::Builder) refused a container operation; the VM adds the byte offset
/// ([`ErrorKind::Builder`]). The message is the variant's text alone; the variant says what the
/// refusal tells about the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The operation cannot apply to the values it was given (APPENDS onto a dict): the pickle
    /// is corrupt.
    #[error("{0}")]
    Corrupt(String),
    /// A well-formed operation on data that is not what the builder reads (its structure).
    #[error("{0}")]
    Unexpected(String),
    /// The input asks for more than a bound allows: a count past what the builder can number,
    /// or copies past a budget.
    #[error("{0}")]
    Limit(String),
    /// The memory was not there.
    #[error("{0}")]
    OutOfMemory(String),
}

/// The message of [`ErrorKind::Truncated`].
struct Cut(Option<&'static str>);

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(op) => write!(
                f,
                "the file ends in the middle of a {op} opcode: expected more bytes (the file is truncated)"
            ),
            None => f.write_str(
                "the file ends before the pickle's STOP opcode: expected more data (the file is truncated)",
            ),
        }
    }
}

/// The message of [`ErrorKind::Refused`].
struct Import<'a>(&'a str, Option<&'a str>);

impl fmt::Display for Import<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Import(opcode, target) = self;
        match target {
            Some(t) => write!(
                f,
                "{opcode} opcode refers to the Python object `{t}`; memory snapshots contain only plain data, and this reader never imports or executes anything"
            ),
            None => write!(
                f,
                "{opcode} opcode would build a Python object; memory snapshots contain only plain data, and this reader never imports or executes anything"
            ),
        }
    }
}
