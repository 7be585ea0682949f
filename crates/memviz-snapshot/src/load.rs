//! Streaming entry point: sniff the format, decompress gzip, unpickle, build the model.

use crate::builder::{Recovered, SnapshotBuilder};
use crate::model::{Snapshot, TRUNCATED_WARNING};
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
            offset: Some(e.offset),
            message,
        }
    }
}

/// Classes that checkpoints and saved tensors name with GLOBAL / STACK_GLOBAL (torch.save
/// pickles tensors through torch's rebuild functions, state_dicts as OrderedDicts).
fn is_checkpoint_class(target: &str) -> bool {
    ["torch", "collections.OrderedDict", "numpy"]
        .iter()
        .any(|p| target.starts_with(p))
}

/// How many leading bytes decide the format (a fixed window, so messages never depend on chunking).
const SNIFF_LEN: usize = 64;

/// Names what a non-pickle file looks like, from its first bytes.
pub fn sniff_other(head: &[u8]) -> String {
    let head = &head[..head.len().min(SNIFF_LEN)];
    format!(
        "this file is {} (first bytes: {})",
        what_it_is(head),
        hex(head)
    )
}

/// The first 8 bytes in hex, for messages.
fn hex(head: &[u8]) -> String {
    let hex: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
    hex.join(" ")
}

/// What data that is not a pickle of protocol 2 or later looks like, from its first bytes.
fn what_it_is(head: &[u8]) -> &'static str {
    let head = &head[..head.len().min(SNIFF_LEN)];
    let starts = |m: &[u8]| head.starts_with(m);
    let trimmed: &[u8] = {
        let n = head.iter().take_while(|b| b.is_ascii_whitespace()).count();
        head.get(n..).unwrap_or(&[])
    };
    if starts(b"PK\x03\x04") {
        "a zip archive (torch.save writes model checkpoints and tensors this way), not a memory snapshot"
    } else if starts(b"\x89PNG") {
        "a PNG image, not a memory snapshot"
    } else if starts(b"\xff\xd8\xff") {
        "a JPEG image, not a memory snapshot"
    } else if starts(b"GIF8") {
        "a GIF image, not a memory snapshot"
    } else if starts(b"%PDF") {
        "a PDF document, not a memory snapshot"
    } else if starts(&[0x1f, 0x8b]) {
        "gzip-compressed data inside gzip; decompress it (`gzip -dc FILE > FILE.pickle`) and open the result"
    } else if starts(b"BZh") {
        "bzip2-compressed data; decompress it first (memviz opens raw and gzip-compressed pickles)"
    } else if starts(b"\xfd7zXZ") {
        "xz-compressed data; decompress it first (memviz opens raw and gzip-compressed pickles)"
    } else if starts(b"\x28\xb5\x2f\xfd") {
        "zstd-compressed data; decompress it first (memviz opens raw and gzip-compressed pickles)"
    } else if protocol0(head) {
        "a pickle of protocol 0 (the text protocol of pickle.dump(obj, f, protocol=0)), which \
         torch never writes for memory snapshots and memviz does not read: load it in Python and \
         dump it again with a binary protocol (pickle.dump(obj, f), protocol 2 to 5)"
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
    }
}

/// True when `head` reads as the start of a protocol-0 pickle: text opcodes only, each whole
/// (the last one may be cut by the end of `head`), the first a MARK, a container, a scalar or a
/// class name. Plain text fails at its first letter that is no such opcode (or a line that is
/// no such operand).
fn protocol0(head: &[u8]) -> bool {
    /// The argument line of a text opcode: all of it up to `\n`, and whether it is valid.
    fn line(rest: &[u8], ok: impl Fn(&[u8]) -> bool) -> Option<(usize, bool)> {
        match rest.iter().position(|&b| b == b'\n') {
            Some(n) => Some((n + 1, ok(&rest[..n]))),
            // Cut by the end of the window: valid so far.
            None => Some((rest.len(), true)),
        }
    }
    let digits = |l: &[u8]| !l.is_empty() && l.iter().all(u8::is_ascii_digit);
    let int = |l: &[u8]| {
        let l = l.strip_prefix(b"-").unwrap_or(l);
        let l = l.strip_suffix(b"L").unwrap_or(l);
        digits(l) || l == b"00" || l == b"01"
    };
    let float = |l: &[u8]| {
        !l.is_empty()
            && l.iter()
                .all(|b| b.is_ascii_digit() || b"+-.eEinfa".contains(b))
    };
    let quoted =
        |l: &[u8]| l.len() >= 2 && matches!(l.first(), Some(b'\'' | b'"')) && l.first() == l.last();
    let ident = |l: &[u8]| {
        !l.is_empty()
            && l.iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.'))
    };
    let mut pos = 0;
    let mut ops = 0;
    while pos < head.len() {
        let op = head[pos];
        let rest = &head[pos + 1..];
        let arg = match op {
            b'(' | b')' | b'N' | b'd' | b'l' | b't' | b'a' | b's' | b'u' | b'e' | b'0' | b'1'
            | b'2' | b'R' | b'b' => Some((0, true)),
            b'.' => return ops > 0,
            b'p' | b'g' => line(rest, digits),
            b'I' => line(rest, int),
            b'L' => line(rest, int),
            b'F' => line(rest, float),
            b'S' => line(rest, quoted),
            // Raw-unicode-escaped text: any line.
            b'V' => line(rest, |_| true),
            // GLOBAL / INST: module line then name line.
            b'c' | b'i' => line(rest, ident).and_then(|(n, ok)| {
                let more = line(&rest[n..], ident)?;
                Some((n + more.0, ok && more.1))
            }),
            _ => None,
        };
        match arg {
            Some((n, true)) => pos += 1 + n,
            _ => return false,
        }
        ops += 1;
        if ops == 1
            && !matches!(
                op,
                b'(' | b'N' | b'I' | b'L' | b'F' | b'S' | b'V' | b'c' | b'i'
            )
        {
            return false;
        }
    }
    ops >= 2
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
    /// The decompressed data is not a pickle: what it is (see [`what_it_is`]).
    not_pickle: Option<String>,
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
            not_pickle: None,
            head: Some(Vec::new()),
            written: 0,
            compressed: 0,
        }
    }

    /// Feed decompressed bytes (the sniffed head first).
    fn feed(&mut self, buf: &[u8]) {
        if self.error.is_some() || self.not_pickle.is_some() {
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
            self.not_pickle = Some(format!(
                "this gzip-compressed file holds {} (first bytes after decompression: {})",
                what_it_is(&head),
                hex(&head)
            ));
        }
    }

    fn failed(&self) -> bool {
        self.error.is_some() || self.not_pickle.is_some()
    }
}

impl Write for PickleSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.written += buf.len() as u64;
        let limit = self
            .compressed
            .saturating_mul(GZIP_MAX_RATIO)
            .saturating_add(GZIP_FLOOR);
        if self.written > limit && self.not_pickle.is_none() && self.error.is_none() {
            self.not_pickle = Some(format!(
                "this gzip file expands to more than {} MB of pickle from {} compressed bytes \
                 (more than {GZIP_MAX_RATIO} times; memory snapshots compress 9 to 40 times): \
                 refused as a decompression bomb. If it is a real snapshot, decompress it \
                 (`gzip -dc FILE > FILE.pickle`) and open the pickle",
                limit >> 20,
                self.compressed
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
                        let e = match (sink.error.as_ref(), sink.not_pickle.as_ref()) {
                            (Some(pe), _) => LoadError::from_pickle(pe, true),
                            (None, Some(what)) => LoadError::plain(what.clone()),
                            (None, None) => LoadError::plain(format!(
                                "the gzip data is corrupt ({io}): the .gz file is damaged; \
                                 copy or compress the snapshot again"
                            )),
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
            return Err(self.fail(LoadError::plain(sniff_other(&head))));
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
                return Err(LoadError::plain(
                    "the file is empty (0 bytes): there is no snapshot in it; was the dump interrupted before it wrote anything?",
                ));
            }
            let head = std::mem::take(head);
            self.start(head)?;
        }
        let bytes_read = self.bytes_read;
        let (u, gzip, total) = match self.state {
            State::Failed(e) => return Err(e),
            State::Sniff(_) => return Err(LoadError::plain("the file is empty (0 bytes)")),
            State::Raw(u) => (*u, false, bytes_read),
            State::Gzip(mut g) => {
                let finished = g.try_finish();
                let sink = g.get_mut();
                let written = sink.written;
                // A stream shorter than the sniffing window is decided now.
                if finished.is_ok() {
                    sink.sniff(true);
                }
                if let Some(what) = &sink.not_pickle {
                    return Err(LoadError::plain(what.clone()));
                }
                if let Some(pe) = &sink.error {
                    return Err(LoadError::from_pickle(pe, true));
                }
                match finished.and_then(|()| g.finish()) {
                    Ok(sink) => (sink.u, true, sink.written),
                    Err(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                        return Err(LoadError::plain(format!(
                            "the gzip file is truncated: its compressed data ends after {bytes_read} bytes \
                             ({written} bytes decompressed), before the end of the gzip stream. \
                             Was the copy incomplete? `gzip -dc FILE > FILE.pickle` keeps what can be \
                             decompressed, and memviz opens that part of a cut snapshot"
                        )))
                    }
                    Err(io) => {
                        return Err(LoadError::plain(format!(
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
            .map_err(|e| LoadError::plain(e.to_string()))
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
