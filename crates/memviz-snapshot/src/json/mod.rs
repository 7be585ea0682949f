//! A streaming, push-based JSON reader that feeds a [`memviz_pickle::Builder`]: a snapshot saved
//! as JSON (`json.dump(torch.cuda.memory._snapshot(), f)`, or JSON written from C++) becomes the
//! same model as its pickle, through the same [`crate::builder::SnapshotBuilder`].
//!
//! # Why a reader of our own
//! The page's Web Worker receives a file in chunks and must not hold it whole (a JSON snapshot is
//! about 50 times its pickle: every frame list is written out again where the pickle's memo
//! shares it). serde_json and the other JSON crates parse from a whole buffer or a blocking
//! `Read`, or push events through a callback that cannot stop at a chunk's end and resume; none
//! builds through a caller's `Builder` either. So this reader takes chunks of any size
//! ([`JsonReader::push`]); a token cut by a chunk's end is kept in a small carry buffer and
//! finished with the next chunk, so the result never depends on the chunking. Tokens are scanned
//! in place (strings eight bytes at a time, `lexer.rs`), and a string is interned straight from
//! the input bytes (escapes are decoded into one reused buffer; a repeat is found by its bytes
//! in a small cache), so there is no allocation per token. Measured on JSON twins of real and
//! generated snapshots (34 to 284 MB, on a loaded 2-core machine): 620 to 1 000 MB/s natively,
//! 220 to 470 MB/s in wasm (node, cold), where CPython's `json.loads` does 70.
//!
//! # What the builder sees
//! Containers are made lazily (`containers.rs`): an object's pairs and an array's items wait on
//! the reader's own value stack until the container closes, then it is made with `new_dict` +
//! `set_items` (or `new_list` + `extend_list`); a container of more than 1 000 items is made
//! when the 1 001st arrives and given its items 1 000 at a time (as CPython's pickler batches
//! them), so a trace list of millions of entries streams through and is never held. Waiting
//! lets the reader emulate the pickle memo's sharing (`dedupe.rs`): a frame dict (every key a
//! frame key, every value a string or an integer) equal to one read before is the same
//! container, with no builder call at all, and so is a frame list whose frames all are the same
//! containers as an earlier list's. The builder already interns shared frames and stacks by
//! container id, so a JSON snapshot costs the same model as its pickle. No other object is
//! shared (entries, blocks and segments are lowered once each). A frame list written exactly as
//! one before (most of a JSON snapshot's bytes) is found by its text without reading its tokens
//! (`raw.rs`).
//!
//! # Accepted text
//! RFC 8259 JSON with a leading UTF-8 byte order mark allowed, the top level an object or an
//! array, plus Python's `NaN`, `Infinity` and `-Infinity` (`json.dump` writes them by default).
//! Integers outside `i64` are big integers (little-endian two's complement, as pickle stores
//! them). Strings must be UTF-8 with control characters escaped; a `\u` escape of a lone
//! surrogate (Python writes those for text it read with `surrogateescape`) becomes U+FFFD, as
//! the pickle reader replaces invalid UTF-8. Only whitespace may follow the top-level value:
//! anything else is an error with its offset (the safest reading: two snapshots written into
//! one file, or a file damaged at its end, are not shown as if the first part were the whole).
//! Limits (the pickle reader's [`Limits`](memviz_pickle::Limits)): nesting depth
//! (`max_marks`, 1 024), values held at once (`max_stack`), string length
//! (`max_string_bytes`); numbers of at most 4 096 characters. Memory: the model and the
//! builder's as for a pickle, plus the tables of distinct frames, frame lists (their text too,
//! at most 64 MiB) and a 1 MiB string cache, all linear in the bytes read.

mod containers;
mod cut;
mod dedupe;
mod lexer;
mod raw;
mod reader;

pub use cut::JsonCut;
pub use reader::JsonReader;

use memviz_pickle::BuildError;

/// Why a JSON text could not be read: the byte offset (from the start of the text) and what is
/// wrong there.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("at byte {offset}: {message}")]
pub struct JsonError {
    pub offset: u64,
    pub kind: JsonErrorKind,
    pub message: String,
}

/// The kinds of [`JsonError`].
#[derive(Debug, Clone, PartialEq)]
pub enum JsonErrorKind {
    /// Not valid JSON (or not an object or array at the top).
    Syntax,
    /// The text ends before its top-level value does.
    Truncated,
    /// Past a limit (nesting, string or number length, values held).
    Limit,
    /// The memory was not there.
    OutOfMemory,
    /// The builder refused a container (its message is the error's).
    Builder(BuildError),
}
