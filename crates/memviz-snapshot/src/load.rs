//! Streaming entry point: sniff the format, decompress gzip, unpickle, build the model.

use crate::builder::{BuildError, Recovered, SnapshotBuilder};
use crate::model::{Snapshot, TRUNCATED_WARNING};
use crate::sniff::{hex, sniff_other, what_it_is, SNIFF_LEN};
use memviz_pickle::{ErrorKind, Limits, PickleError, Unpickler};
use std::fmt;
use std::io::Write;

/// Why a file could not be loaded: one line (its Display: "at byte N: " when there is an
/// offset, then the message), and what kind of refusal it is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{}", AtByte(*.offset), .message)]
pub struct LoadError {
    /// What kind of file or failure this is (the message says the rest).
    pub kind: LoadErrorKind,
    /// Byte offset in the (decompressed) pickle, when the problem is at a place in it.
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
    /// The file, or its gzip stream, ends before the pickle does, and nothing that can be shown
    /// was read before the cut (a raw pickle cut after a whole segment or event opens instead).
    Truncated,
    /// Another format: text, JSON, HTML or XML, an image, a PDF, a zip archive, data compressed
    /// another way (or gzip inside gzip), unknown binary data.
    NotPickle,
    /// A model checkpoint or saved tensors (`torch.save`): a pickle naming torch's, numpy's or
    /// `collections.OrderedDict`'s classes.
    Checkpoint,
    /// A pickle that is not a memory snapshot: another structure, other classes, opcodes
    /// snapshots never use, or a text protocol (0 or 1), which memviz does not read.
    NotSnapshot,
    /// A broken pickle (a byte that is no opcode, a stack, mark or memo that does not add up,
    /// an impossible length or protocol) or corrupt gzip data.
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
    fn from_build(e: BuildError) -> Self {
        LoadError::new(build_kind(&e), e.to_string())
    }

    fn from_pickle(e: &PickleError, gzip: bool) -> Self {
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

/// The most pickle bytes a gzip file may decompress to per compressed byte (beyond
/// [`GZIP_FLOOR`]). Real snapshots compress 9 to 40 times (`gzip -9` on the corpus); deflate
/// can reach 1 032, so a 10 MB file could otherwise stand for a 10 GB pickle, and the model is
/// linear in the pickle bytes.
pub const GZIP_MAX_RATIO: u64 = 100;
/// Pickle bytes any gzip file may decompress to.
pub const GZIP_FLOOR: u64 = 64 << 20;

/// Feeds decompressed bytes to the unpickler; keeps the first error.
struct PickleSink {
    u: Unpickler<SnapshotBuilder>,
    error: Option<PickleError>,
    /// The decompressed data is refused before the unpickler sees it: not a pickle (what it
    /// is, see [`what_it_is`]), or a decompression bomb.
    refused: Option<LoadError>,
    /// The first decompressed bytes, until there are enough to tell a pickle ([`SNIFF_LEN`]).
    head: Option<Vec<u8>>,
    /// Decompressed bytes written.
    written: u64,
    /// Compressed bytes pushed so far (the chunk being decompressed included).
    compressed: u64,
}

impl PickleSink {
    fn new(u: Unpickler<SnapshotBuilder>) -> Self {
        PickleSink {
            u,
            error: None,
            refused: None,
            head: Some(Vec::new()),
            written: 0,
            compressed: 0,
        }
    }

    /// Feed decompressed bytes (the sniffed head first).
    fn feed(&mut self, buf: &[u8]) {
        if self.failed() {
            return;
        }
        self.u.builder_mut().set_input_bytes(self.written);
        if let Err(e) = self.u.push(buf) {
            self.error = Some(e);
        }
    }

    /// Decide from the first decompressed bytes (all of them at the end of the stream).
    fn sniff(&mut self, at_end: bool) {
        let Some(head) = self.head.as_ref() else {
            return;
        };
        if head.len() < SNIFF_LEN && !at_end {
            return;
        }
        let head = self.head.take().unwrap_or_default();
        if head.first() == Some(&0x80) || head.is_empty() {
            self.feed(&head);
        } else {
            let (kind, what) = what_it_is(&head);
            self.refused = Some(LoadError::new(
                kind,
                format!(
                    "this gzip-compressed file holds {what} (first bytes after decompression: {})",
                    hex(&head)
                ),
            ));
        }
    }

    fn failed(&self) -> bool {
        self.error.is_some() || self.refused.is_some()
    }
}

impl Write for PickleSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.written += buf.len() as u64;
        let limit = self
            .compressed
            .saturating_mul(GZIP_MAX_RATIO)
            .saturating_add(GZIP_FLOOR);
        if self.written > limit && !self.failed() {
            self.refused = Some(LoadError::new(
                LoadErrorKind::TooBig,
                format!(
                    "this gzip file expands to more than {} MB of pickle from {} compressed bytes \
                     (more than {GZIP_MAX_RATIO} times; memory snapshots compress 9 to 40 times): \
                     refused as a decompression bomb. If it is a real snapshot, decompress it \
                     (`gzip -dc FILE > FILE.pickle`) and open the pickle",
                    limit >> 20,
                    self.compressed
                ),
            ));
        }
        match &mut self.head {
            Some(head) => {
                head.extend_from_slice(buf);
                self.sniff(false);
            }
            None => self.feed(buf),
        }
        if self.failed() {
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
    /// A gzip stream of one or more members (as `cat a.gz b.gz` and `pigz` write), decompressed
    /// as it arrives.
    Gzip(Box<flate2::write::MultiGzDecoder<PickleSink>>),
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

/// Real and generated snapshots spend 67 to 330 bytes of pickle per trace entry; sizing for 72
/// over-reserves most (the slack is given back at STOP: 9 % of the rows of a 79-byte-per-entry
/// file), while sizing for more than a file spends makes every column copy itself once more
/// near the end (a generated 79-byte-per-entry file did, with 80; the 67-byte tile of a real
/// file grows its columns once, by the rest the trace's rate projects).
const BYTES_PER_EVENT_MIN: u64 = 72;

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

    /// Trace entries read so far (every device): what a file's memory follows, so the page can
    /// project it to the whole file while reading.
    pub fn trace_entries(&self) -> u64 {
        match &self.state {
            State::Raw(u) => u.builder().entries() as u64,
            State::Gzip(g) => g.get_ref().u.builder().entries() as u64,
            _ => 0,
        }
    }

    /// Pickle bytes so far: [`Self::bytes_read`] for a raw pickle, the decompressed bytes for
    /// gzip input (what the model's size follows).
    pub fn pickle_bytes(&self) -> u64 {
        match &self.state {
            State::Gzip(g) => g.get_ref().written,
            _ => self.bytes_read,
        }
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
            // Containers and memo slots run at 1.0 to 1.3 per event (their chunks' words are
            // reserved now, the trace columns' rows at the first trace entry); `grow` sizes them
            // again from the rate so far when they fill up.
            u.builder_mut().reserve(events);
            u.reserve_memo(events);
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
            State::Raw(u) => {
                u.builder_mut().set_input_bytes(self.bytes_read);
                let r = u.push(chunk);
                Self::grow(u, self.bytes_read, self.size_hint);
                r.map_err(|e| self.fail(LoadError::from_pickle(&e, false)))
            }
            State::Gzip(g) => {
                g.get_mut().compressed = self.bytes_read;
                match g.write_all(chunk) {
                    Ok(()) => {
                        Self::grow(&mut g.get_mut().u, self.bytes_read, self.size_hint);
                        Ok(())
                    }
                    Err(io) => {
                        let sink = g.get_ref();
                        let e = match (sink.error.as_ref(), sink.refused.as_ref()) {
                            (Some(pe), _) => LoadError::from_pickle(pe, true),
                            (None, Some(refused)) => refused.clone(),
                            (None, None) => LoadError::new(
                                LoadErrorKind::Malformed,
                                format!(
                                    "the gzip data is corrupt ({io}): the .gz file is damaged; \
                                     copy or compress the snapshot again"
                                ),
                            ),
                        };
                        Err(self.fail(e))
                    }
                }
            }
        }
    }

    /// Size the big tables for the rest of the file (see [`SnapshotBuilder::grow_for`]).
    fn grow(u: &mut Unpickler<SnapshotBuilder>, done: u64, total: u64) {
        if total > 0 {
            u.grow_memo_for(done, total);
            u.builder_mut().grow_for(done, total);
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
            let sink = PickleSink::new(self.unpickler(true));
            self.state = State::Gzip(Box::new(flate2::write::MultiGzDecoder::new(sink)));
        } else {
            return Err(self.fail(sniff_other(&head)));
        }
        self.bytes_read -= head.len() as u64;
        self.push(&head)
    }

    /// End of input: the snapshot, or why there is none.
    ///
    /// A raw pickle that ends before STOP (a dump that crashed, a copy cut short) gives what was
    /// read before the cut when that holds a whole segment or trace event: see
    /// [`SnapshotBuilder::recover`]; its first warning starts with [`TRUNCATED_WARNING`]. A
    /// gzip stream that ends early is an error (decompress what there is, then open that).
    pub fn finish(mut self) -> Result<Snapshot, LoadError> {
        if let State::Sniff(head) = &mut self.state {
            if head.is_empty() {
                return Err(LoadError::new(
                    LoadErrorKind::Empty,
                    "the file is empty (0 bytes): there is no snapshot in it; was the dump interrupted before it wrote anything?",
                ));
            }
            let head = std::mem::take(head);
            self.start(head)?;
        }
        let bytes_read = self.bytes_read;
        let (u, gzip, total) = match self.state {
            State::Failed(e) => return Err(e),
            State::Sniff(_) => {
                return Err(LoadError::new(
                    LoadErrorKind::Empty,
                    "the file is empty (0 bytes)",
                ))
            }
            State::Raw(u) => (*u, false, bytes_read),
            State::Gzip(mut g) => {
                let finished = g.try_finish();
                let sink = g.get_mut();
                let written = sink.written;
                // A stream shorter than the sniffing window is decided now.
                if finished.is_ok() {
                    sink.sniff(true);
                }
                if let Some(refused) = &sink.refused {
                    return Err(refused.clone());
                }
                if let Some(pe) = &sink.error {
                    return Err(LoadError::from_pickle(pe, true));
                }
                match finished.and_then(|()| g.finish()) {
                    Ok(sink) => (sink.u, true, sink.written),
                    Err(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                        return Err(LoadError::new(LoadErrorKind::Truncated, format!(
                            "the gzip file is truncated: its compressed data ends after {bytes_read} bytes \
                             ({written} bytes decompressed), before the end of the gzip stream. \
                             Was the copy incomplete? `gzip -dc FILE > FILE.pickle` keeps what can be \
                             decompressed, and memviz opens that part of a cut snapshot"
                        )))
                    }
                    Err(io) => {
                        return Err(LoadError::new(LoadErrorKind::Malformed, format!(
                            "the gzip data is corrupt or truncated ({io}) after {bytes_read} bytes \
                             ({written} bytes decompressed); the .gz file is damaged: copy or compress the snapshot again"
                        )))
                    }
                }
            }
        };
        if !u.is_done() {
            return Self::truncated(u, gzip, total);
        }
        let protocol = u.protocol();
        let (root, atoms, builder) = u.finish().map_err(|e| LoadError::from_pickle(&e, gzip))?;
        builder
            .finish(root, atoms, protocol)
            .map_err(LoadError::from_build)
    }

    /// The pickle ended before STOP: what was read before the cut, with a warning, or the
    /// truncation error saying how far it got.
    fn truncated(
        mut u: Unpickler<SnapshotBuilder>,
        gzip: bool,
        total: u64,
    ) -> Result<Snapshot, LoadError> {
        let offset = u.offset();
        let protocol = u.protocol();
        let atoms = u.atoms().clone();
        let builder = std::mem::replace(u.builder_mut(), SnapshotBuilder::new().0);
        let cut = match u.finish() {
            Err(e) => e,
            Ok(_) => PickleError {
                offset,
                kind: ErrorKind::Truncated { inside: None },
            },
        };
        match builder.recover(atoms, protocol) {
            Ok((mut snap, rec)) => {
                snap.warnings.insert(0, truncation_warning(&rec, offset, total, gzip));
                Ok(snap)
            }
            Err(why) => Err(LoadError {
                kind: LoadErrorKind::Truncated,
                offset: Some(cut.offset),
                message: format!(
                    "{}; {why}, so there is nothing to show{}. Was the dump interrupted or the copy incomplete?",
                    cut.kind,
                    if gzip { " (offset in the decompressed data)" } else { "" }
                ),
            }),
        }
    }
}

/// The warning of a snapshot read from a file cut before STOP (FORMAT.md §2: segments come
/// first, then `device_traces`).
fn truncation_warning(rec: &Recovered, offset: u64, total: u64, gzip: bool) -> String {
    let data = if gzip {
        "decompressed pickle"
    } else {
        "pickle"
    };
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    let segments = plural(rec.segments, "segment", "segments");
    let events = plural(rec.events, "trace event", "trace events");
    let what = if rec.only_stop_missing {
        format!("everything but the final STOP opcode was read: {segments} and {events}")
    } else if !rec.segments_complete {
        format!(
            "showing the {segments} read before the cut (the segment list is incomplete and no trace was read)"
        )
    } else if rec.traces_complete {
        format!("showing all {segments} and {events}; what followed `device_traces` is missing")
    } else if let Some(d) = rec.cut_device {
        format!(
            "showing the {segments} and the {events} read before the cut (device {d}'s trace stops there; \
             later events, devices and keys are missing, and the segments are the state at the end of the dump)"
        )
    } else {
        format!("showing the {segments} read before the cut (no trace was read)")
    };
    format!(
        "{TRUNCATED_WARNING} the {data} ends after {offset} of {total} bytes without its STOP opcode \
         (an interrupted dump or an incomplete copy); {what}"
    )
}

/// Load a whole buffer.
pub fn load_slice(bytes: &[u8]) -> Result<Snapshot, LoadError> {
    let mut l = Loader::new();
    l.push(bytes)?;
    l.finish()
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
}
