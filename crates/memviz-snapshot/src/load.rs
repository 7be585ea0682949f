//! Streaming entry point: sniff the format, decompress gzip, unpickle, build the model.

use crate::builder::SnapshotBuilder;
use crate::model::Snapshot;
use memviz_pickle::{ErrorKind, Limits, PickleError, Unpickler};
use std::fmt;
use std::io::Write;

/// Why a file could not be loaded: one line, with the byte offset where it applies.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    /// Byte offset in the (decompressed) pickle, when the problem is at a place in it.
    pub offset: Option<u64>,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(o) => write!(f, "at byte {o}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for LoadError {}

impl LoadError {
    fn plain(message: impl Into<String>) -> Self {
        LoadError {
            offset: None,
            message: message.into(),
        }
    }

    fn from_pickle(e: &PickleError, gzip: bool) -> Self {
        let mut message = e.kind.to_string();
        match &e.kind {
            ErrorKind::Refused { .. } => message.push_str(
                ". This looks like a model checkpoint or another pickled Python object, not a memory snapshot: \
                 open the file written by torch.cuda.memory._dump_snapshot()",
            ),
            ErrorKind::Truncated { .. } => {
                message = format!("{message}; read {} bytes{}. Was the dump interrupted or the copy incomplete?", e.offset, if gzip { " after decompression" } else { "" })
            }
            _ => {}
        }
        if gzip {
            message.push_str(" (offset in the decompressed data)");
        }
        LoadError {
            offset: Some(e.offset),
            message,
        }
    }
}

/// How many leading bytes decide the format (a fixed window, so messages never depend on chunking).
const SNIFF_LEN: usize = 64;

/// Names what a non-pickle file looks like, from its first bytes.
pub fn sniff_other(head: &[u8]) -> String {
    let head = &head[..head.len().min(SNIFF_LEN)];
    let starts = |m: &[u8]| head.starts_with(m);
    let trimmed: &[u8] = {
        let n = head.iter().take_while(|b| b.is_ascii_whitespace()).count();
        head.get(n..).unwrap_or(&[])
    };
    let what = if starts(b"PK\x03\x04") {
        "a zip archive (torch.save writes model checkpoints and tensors this way), not a memory snapshot"
    } else if starts(b"\x89PNG") {
        "a PNG image, not a memory snapshot"
    } else if starts(b"\xff\xd8\xff") {
        "a JPEG image, not a memory snapshot"
    } else if starts(b"GIF8") {
        "a GIF image, not a memory snapshot"
    } else if starts(b"%PDF") {
        "a PDF document, not a memory snapshot"
    } else if starts(b"BZh") {
        "bzip2-compressed data; decompress it first (memviz opens raw and gzip-compressed pickles)"
    } else if starts(b"\xfd7zXZ") {
        "xz-compressed data; decompress it first (memviz opens raw and gzip-compressed pickles)"
    } else if starts(b"\x28\xb5\x2f\xfd") {
        "zstd-compressed data; decompress it first (memviz opens raw and gzip-compressed pickles)"
    } else if trimmed.starts_with(b"{") || trimmed.starts_with(b"[") {
        "JSON text, not a pickle; memviz reads the pickle written by torch.cuda.memory._dump_snapshot()"
    } else if trimmed.starts_with(b"<") {
        "HTML or XML text, not a pickle; if it is a memory_viz HTML page, open the pickle it was made from"
    } else if !head.is_empty()
        && head
            .iter()
            .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace())
    {
        "a text file, not a pickle"
    } else if matches!(head.first(), Some(b'(' | b'}' | b']' | b'c' | b'I' | b'S')) {
        "a pickle of protocol 0 or 1 (text), which memory snapshots never use"
    } else {
        "not a pickle: unknown binary data"
    };
    let hex: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("this file is {what} (first bytes: {})", hex.join(" "))
}

/// Feeds decompressed bytes to the unpickler; keeps the first error.
struct PickleSink {
    u: Unpickler<SnapshotBuilder>,
    error: Option<PickleError>,
}

impl Write for PickleSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.error.is_none() {
            if let Err(e) = self.u.push(buf) {
                self.error = Some(e);
            }
        }
        if self.error.is_some() {
            return Err(std::io::Error::other("pickle error"));
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

enum State {
    Sniff(Vec<u8>),
    Raw(Box<Unpickler<SnapshotBuilder>>),
    Gzip(Box<flate2::write::GzDecoder<PickleSink>>),
    Failed(LoadError),
}

/// Streaming loader: [`push`](Self::push) chunks as they arrive, then [`finish`](Self::finish).
pub struct Loader {
    state: State,
    bytes_read: u64,
    limits: Limits,
    /// Expected pickle size in bytes, if known: big tables are sized once from it.
    size_hint: u64,
}

/// Real and generated snapshots spend 80 to 330 bytes of pickle per trace entry; sizing for 80
/// over-reserves at worst (reserved, untouched memory costs nothing until used).
const BYTES_PER_EVENT_MIN: u64 = 80;

impl Default for Loader {
    fn default() -> Self {
        Self::new()
    }
}

impl Loader {
    pub fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    pub fn with_limits(limits: Limits) -> Self {
        Loader {
            state: State::Sniff(Vec::new()),
            bytes_read: 0,
            limits,
            size_hint: 0,
        }
    }

    /// Tell the loader how big the file is (before the first push), so it can size its tables
    /// once instead of growing them step by step. For gzip input, pass the compressed size.
    pub fn with_size_hint(mut self, file_bytes: u64) -> Self {
        self.size_hint = file_bytes;
        self
    }

    /// Bytes pushed so far (compressed bytes for gzip input).
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    fn unpickler(&self, gzip: bool) -> Unpickler<SnapshotBuilder> {
        let (b, atoms) = SnapshotBuilder::new();
        let mut u = Unpickler::with_atoms(b, atoms, self.limits);
        // gzip'd snapshots expand several times; the tables then grow as needed.
        let bytes = if gzip {
            self.size_hint.saturating_mul(4)
        } else {
            self.size_hint
        };
        let events = usize::try_from(bytes / BYTES_PER_EVENT_MIN)
            .unwrap_or(usize::MAX)
            .min(1 << 26);
        if events > 1 << 14 {
            u.builder_mut().reserve(events);
            u.reserve_memo(events.saturating_mul(2));
        }
        u
    }

    pub fn push(&mut self, chunk: &[u8]) -> Result<(), LoadError> {
        self.bytes_read += chunk.len() as u64;
        match &mut self.state {
            State::Failed(e) => Err(e.clone()),
            State::Sniff(head) => {
                head.extend_from_slice(chunk);
                if head.len() < SNIFF_LEN {
                    return Ok(());
                }
                let head = std::mem::take(head);
                self.start(head)
            }
            State::Raw(u) => u
                .push(chunk)
                .map_err(|e| self.fail(LoadError::from_pickle(&e, false))),
            State::Gzip(g) => match g.write_all(chunk) {
                Ok(()) => Ok(()),
                Err(io) => {
                    let e = match g.get_ref().error.as_ref() {
                        Some(pe) => LoadError::from_pickle(pe, true),
                        None => LoadError::plain(format!("the gzip data is corrupt: {io}")),
                    };
                    Err(self.fail(e))
                }
            },
        }
    }

    fn fail(&mut self, e: LoadError) -> LoadError {
        self.state = State::Failed(e.clone());
        e
    }

    /// Choose the decoder from the first bytes, then feed them.
    fn start(&mut self, head: Vec<u8>) -> Result<(), LoadError> {
        if head.first() == Some(&0x80) {
            self.state = State::Raw(Box::new(self.unpickler(false)));
        } else if head.starts_with(&[0x1f, 0x8b]) {
            let sink = PickleSink {
                u: self.unpickler(true),
                error: None,
            };
            self.state = State::Gzip(Box::new(flate2::write::GzDecoder::new(sink)));
        } else {
            return Err(self.fail(LoadError::plain(sniff_other(&head))));
        }
        self.bytes_read -= head.len() as u64;
        self.push(&head)
    }

    /// End of input: the snapshot, or why there is none.
    pub fn finish(mut self) -> Result<Snapshot, LoadError> {
        if let State::Sniff(head) = &mut self.state {
            if head.is_empty() {
                return Err(LoadError::plain("the file is empty (0 bytes)"));
            }
            let head = std::mem::take(head);
            self.start(head)?;
        }
        let (u, gzip) = match self.state {
            State::Failed(e) => return Err(e),
            State::Sniff(_) => return Err(LoadError::plain("the file is empty (0 bytes)")),
            State::Raw(u) => (*u, false),
            State::Gzip(g) => match g.finish() {
                Ok(sink) => (sink.u, true),
                Err(io) => {
                    return Err(LoadError::plain(format!(
                        "the gzip data is corrupt or truncated: {io}"
                    )))
                }
            },
        };
        let protocol = u.protocol();
        let (root, atoms, builder) = u.finish().map_err(|e| LoadError::from_pickle(&e, gzip))?;
        builder
            .finish(root, atoms, protocol)
            .map_err(LoadError::plain)
    }
}

/// Load a whole buffer.
pub fn load_slice(bytes: &[u8]) -> Result<Snapshot, LoadError> {
    let mut l = Loader::new();
    l.push(bytes)?;
    l.finish()
}
