//! Errors with the byte offset of the opcode that failed and what was expected there.

use std::fmt;

/// A pickle decoding error. `offset` is the byte offset (from the start of the pickle) of the
/// opcode being decoded when the error happened.
#[derive(Debug, Clone, PartialEq)]
pub struct PickleError {
    pub offset: u64,
    pub kind: ErrorKind,
}

/// What went wrong. Every variant's message says what was expected.
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorKind {
    /// The first byte is not the PROTO opcode (0x80).
    NotAPickle { first_byte: u8 },
    /// PROTO with a version outside 2..=5.
    UnsupportedProtocol(u8),
    /// The input ended before STOP; `inside` names the opcode that was cut, if any.
    Truncated { inside: Option<&'static str> },
    /// An opcode that would import or execute code. `target` is the class it names, if known.
    Refused {
        opcode: &'static str,
        target: Option<String>,
    },
    /// A valid pickle opcode this reader does not support (text protocols, sets, out-of-band buffers).
    Unsupported { opcode: &'static str },
    /// A byte that is not a pickle opcode.
    UnknownOpcode(u8),
    /// An opcode needed more values on the stack.
    StackUnderflow { opcode: &'static str },
    /// An opcode needed a MARK and there was none.
    NoMark { opcode: &'static str },
    /// A memo get of a slot that was never set.
    BadMemo { index: u64, len: u64 },
    /// A value of the wrong type, e.g. APPENDS onto a dict.
    Type {
        opcode: &'static str,
        expected: &'static str,
        found: &'static str,
    },
    /// A configured limit was exceeded.
    Limit { what: &'static str, limit: u64 },
    /// A length field that cannot be right (negative, or beyond the limits).
    BadLength { opcode: &'static str, len: i128 },
    /// STOP with an empty stack.
    EmptyStop,
    /// The builder rejected a container operation.
    Builder(String),
    /// Memory for `what` (about `bytes` in all) could not be allocated: reported instead of
    /// aborting the process.
    OutOfMemory { what: &'static str, bytes: u64 },
}

impl fmt::Display for PickleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.kind)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ErrorKind::*;
        match self {
            NotAPickle { first_byte } => write!(
                f,
                "not a pickle of protocol 2 or later: expected the PROTO opcode 0x80 as the first byte, found 0x{first_byte:02x}"
            ),
            UnsupportedProtocol(p) => {
                write!(f, "unsupported pickle protocol {p}: expected a protocol from 2 to 5")
            }
            Truncated { inside: Some(op) } => {
                write!(f, "the file ends in the middle of a {op} opcode: expected more bytes (the file is truncated)")
            }
            Truncated { inside: None } => write!(
                f,
                "the file ends before the pickle's STOP opcode: expected more data (the file is truncated)"
            ),
            Refused { opcode, target: Some(t) } => write!(
                f,
                "{opcode} opcode refers to the Python object `{t}`; memory snapshots contain only plain data, and this reader never imports or executes anything"
            ),
            Refused { opcode, target: None } => write!(
                f,
                "{opcode} opcode would build a Python object; memory snapshots contain only plain data, and this reader never imports or executes anything"
            ),
            Unsupported { opcode } => {
                write!(f, "{opcode} opcode is not used by memory snapshots and is not supported")
            }
            UnknownOpcode(b) => write!(f, "byte 0x{b:02x} is not a pickle opcode: expected an opcode"),
            StackUnderflow { opcode } => {
                write!(f, "{opcode} needs more values on the stack than there are: the pickle is corrupt")
            }
            NoMark { opcode } => write!(f, "{opcode} expects a MARK before it and there is none: the pickle is corrupt"),
            BadMemo { index, len } => write!(
                f,
                "memo get of slot {index}, which was never set (memo has {len} slots): expected a slot set earlier"
            ),
            Type { opcode, expected, found } => {
                write!(f, "{opcode} expected {expected} but found {found}: the pickle is corrupt")
            }
            Limit { what, limit } => write!(f, "{what} exceeds the limit of {limit}"),
            BadLength { opcode, len } => write!(f, "{opcode} has an impossible length {len}"),
            EmptyStop => write!(f, "STOP with nothing on the stack: expected a value to return"),
            Builder(msg) => write!(f, "{msg}"),
            OutOfMemory { what, bytes } => write!(
                f,
                "out of memory: {what} needs more than {bytes} bytes and the system has no more to give (the file is too large for the memory available)"
            ),
        }
    }
}

impl std::error::Error for PickleError {}
