//! Streaming entry point: sniff the format, decompress gzip, read the pickle or JSON text,
//! build the model.

mod decoder;
mod error;

use crate::model::Snapshot;
use crate::sniff::{hex, is_json, sniff_other, what_it_is, SNIFF_LEN};
use crate::zip::{in_entry, ZipStream};
use decoder::{Decoder, Setup};
pub use error::{LoadError, LoadErrorKind};
use memviz_pickle::Limits;
use std::io::Write;

/// The most bytes (of pickle or JSON) a gzip file may decompress to per compressed byte
/// (beyond [`GZIP_FLOOR`]). Real snapshots compress 9 to 40 times (`gzip -9` on the corpus); deflate
/// can reach 1 032, so a 10 MB file could otherwise stand for a 10 GB pickle, and the model is
/// linear in the pickle bytes.
pub const GZIP_MAX_RATIO: u64 = 100;
/// Bytes any gzip file may decompress to.
pub const GZIP_FLOOR: u64 = 64 << 20;
/// [`GZIP_MAX_RATIO`] for JSON text: the JSON twins of the real corpus compress 35 to 91
/// times (`gzip -9`; frame lists repeat), and a JSON byte makes far less of the model than a
/// pickle byte (the same snapshot is 20 to 50 times larger as JSON).
const GZIP_JSON_MAX_RATIO: u64 = 400;

/// True when the file is read as JSON, decided on its first [`SNIFF_LEN`] bytes only (the head
/// may hold more: all of a first chunk, or of a first write of decompressed bytes), so the
/// choice never depends on the chunking: `{` or `[` first in that window (after an optional
/// byte order mark and whitespace), or a whole window of whitespace (a JSON text indented
/// further; the JSON reader says what follows, if it is not JSON). Before, a JSON text behind
/// 79 tabs was JSON whole and "a text file" in chunks of 64 bytes (the `snapshot` fuzz target:
/// crash-89c16439).
fn sniffs_json(head: &[u8]) -> bool {
    let window = head.get(..SNIFF_LEN).unwrap_or(head);
    let text = window.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(window);
    let blank = text
        .iter()
        .all(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'));
    is_json(window) || (window.len() == SNIFF_LEN && blank)
}

/// Feeds decompressed bytes to the reader of their format (sniffed from their first bytes);
/// keeps the first error.
struct Sink {
    /// The reader, once the first bytes said which.
    dec: Option<Decoder>,
    setup: Setup,
    error: Option<LoadError>,
    /// The decompressed data is refused before a reader sees it: neither a pickle nor JSON
    /// (what it is, see [`what_it_is`]), or a decompression bomb.
    refused: Option<LoadError>,
    /// The first decompressed bytes, until there are enough to tell the format ([`SNIFF_LEN`]).
    head: Option<Vec<u8>>,
    /// Decompressed bytes written.
    written: u64,
    /// Compressed bytes pushed so far (the chunk being decompressed included).
    compressed: u64,
}

impl Sink {
    fn new(setup: Setup) -> Self {
        Sink {
            dec: None,
            setup,
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
        let Some(dec) = self.dec.as_mut() else {
            return;
        };
        if let Err(e) = dec.push(buf, self.written, true) {
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
            self.dec = Some(Decoder::pickle(self.setup, true));
            self.feed(&head);
        } else if sniffs_json(&head) {
            self.dec = Some(Decoder::json(self.setup, true));
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

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.written += buf.len() as u64;
        let (ratio, data, real) = match self.dec {
            Some(Decoder::Json(_)) => (
                GZIP_JSON_MAX_RATIO,
                "JSON",
                "JSON snapshots compress 35 to 91 times",
            ),
            _ => (
                GZIP_MAX_RATIO,
                "pickle",
                "memory snapshots compress 9 to 40 times",
            ),
        };
        let limit = self
            .compressed
            .saturating_mul(ratio)
            .saturating_add(GZIP_FLOOR);
        if self.written > limit && !self.failed() {
            self.refused = Some(LoadError::new(
                LoadErrorKind::TooBig,
                format!(
                    "this gzip file expands to more than {} MB of {data} from {} compressed bytes \
                     (more than {ratio} times; {real}): refused as a decompression bomb. If it is \
                     a real snapshot, decompress it (`gzip -dc FILE > FILE.{}`) and open the result",
                    limit >> 20,
                    self.compressed,
                    if data == "JSON" { "json" } else { "pickle" }
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
            return Err(std::io::Error::other("snapshot error"));
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

enum State {
    Sniff(Vec<u8>),
    /// A pickle or JSON text, read as it arrives.
    Raw(Decoder),
    /// A gzip stream of one or more members (as `cat a.gz b.gz` and `pigz` write), decompressed
    /// as it arrives.
    Gzip(Box<flate2::write::MultiGzDecoder<Sink>>),
    /// A zip archive (`torch.save`): its data.pkl entry's bytes, as they arrive, go to a
    /// loader of their own (so a gzip'd or JSON data.pkl is read too).
    Zip(Box<ZipState>),
    Failed(LoadError),
}

/// A zip archive being read: the entry reader and the loader of the entry's bytes.
struct ZipState {
    zip: ZipStream,
    inner: Loader,
}

/// Streaming loader: [`push`](Self::push) chunks as they arrive, then [`finish`](Self::finish).
pub struct Loader {
    state: State,
    bytes_read: u64,
    limits: Limits,
    /// The file's size in bytes, if known: big tables are sized once from it.
    size_hint: u64,
    /// This loader reads a zip archive's entry: a zip archive there is refused, not opened
    /// (no nesting, so no recursion per level of a hostile archive).
    in_zip: bool,
}

impl Default for Loader {
    fn default() -> Self {
        Self::new()
    }
}

impl Loader {
    pub fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    /// A loader with these reader limits (for JSON: `max_marks` is the nesting depth,
    /// `max_stack` the values held at once, `max_string_bytes` the longest string).
    pub fn with_limits(limits: Limits) -> Self {
        Loader {
            state: State::Sniff(Vec::new()),
            bytes_read: 0,
            limits,
            size_hint: 0,
            in_zip: false,
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
        let dec = match &self.state {
            State::Raw(d) => Some(d),
            State::Gzip(g) => g.get_ref().dec.as_ref(),
            State::Zip(z) => return z.inner.trace_entries(),
            _ => None,
        };
        dec.map_or(0, |d| d.builder().entries() as u64)
    }

    /// Bytes of the pickle or JSON text so far: [`Self::bytes_read`] for a raw file, the
    /// decompressed bytes for gzip input (what the model's size follows). (The name is older
    /// than JSON input.)
    pub fn pickle_bytes(&self) -> u64 {
        match &self.state {
            State::Gzip(g) => g.get_ref().written,
            State::Zip(z) => z.inner.pickle_bytes(),
            _ => self.bytes_read,
        }
    }

    fn setup(&self) -> Setup {
        Setup {
            limits: self.limits,
            size_hint: self.size_hint,
        }
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
            State::Raw(d) => {
                let r = d.push(chunk, self.bytes_read, false);
                d.grow(self.bytes_read, self.size_hint);
                r.map_err(|e| self.fail(e))
            }
            State::Zip(z) => {
                let ZipState { zip, inner } = &mut **z;
                let r = zip.push(chunk, &mut |b| inner.push(b));
                r.map_err(|e| self.fail(e))
            }
            State::Gzip(g) => {
                g.get_mut().compressed = self.bytes_read;
                match g.write_all(chunk) {
                    Ok(()) => {
                        if let Some(d) = g.get_mut().dec.as_mut() {
                            d.grow(self.bytes_read, self.size_hint);
                        }
                        Ok(())
                    }
                    Err(io) => {
                        let sink = g.get_ref();
                        let e = match (sink.error.as_ref(), sink.refused.as_ref()) {
                            (Some(e), _) | (None, Some(e)) => e.clone(),
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

    fn fail(&mut self, e: LoadError) -> LoadError {
        self.state = State::Failed(e.clone());
        e
    }

    /// Choose the decoder from the first bytes, then feed them.
    fn start(&mut self, head: Vec<u8>) -> Result<(), LoadError> {
        if head.first() == Some(&0x80) {
            self.state = State::Raw(Decoder::pickle(self.setup(), false));
        } else if head.starts_with(&[0x1f, 0x8b]) {
            let sink = Sink::new(self.setup());
            self.state = State::Gzip(Box::new(flate2::write::MultiGzDecoder::new(sink)));
        } else if sniffs_json(&head) {
            self.state = State::Raw(Decoder::json(self.setup(), false));
        } else if head.starts_with(b"PK\x03\x04") && !self.in_zip {
            let mut inner = Loader::with_limits(self.limits).with_size_hint(self.size_hint);
            inner.in_zip = true;
            self.state = State::Zip(Box::new(ZipState {
                zip: ZipStream::new(),
                inner,
            }));
        } else {
            return Err(self.fail(sniff_other(&head)));
        }
        self.bytes_read -= head.len() as u64;
        self.push(&head)
    }

    /// End of input: the snapshot, or why there is none.
    ///
    /// A file that ends before its pickle's STOP or its JSON text's end (a dump that crashed, a
    /// copy cut short) gives what was read before the cut when that holds a whole segment or
    /// trace event: see [`SnapshotBuilder::recover`](crate::builder::SnapshotBuilder) and
    /// [`JsonReader::recover`](crate::json::JsonReader::recover); its first warning starts with
    /// [`TRUNCATED_WARNING`](crate::TRUNCATED_WARNING). A gzip stream that ends early is an
    /// error (decompress what there is, then open that).
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
        let (dec, gzip, total) = match self.state {
            State::Failed(e) => return Err(e),
            State::Sniff(_) => {
                return Err(LoadError::new(
                    LoadErrorKind::Empty,
                    "the file is empty (0 bytes)",
                ))
            }
            State::Raw(d) => (d, false, bytes_read),
            State::Zip(z) => {
                let ZipState { zip, mut inner } = *z;
                let entry = zip.finish(&mut |b| inner.push(b))?;
                return inner.finish().map_err(|e| in_entry(e, &entry.name));
            }
            State::Gzip(mut g) => {
                let finished = g.try_finish();
                let sink = g.get_mut();
                let written = sink.written;
                // A stream shorter than the sniffing window is decided now.
                if finished.is_ok() {
                    sink.sniff(true);
                }
                if let Some(e) = sink.refused.as_ref().or(sink.error.as_ref()) {
                    return Err(e.clone());
                }
                match finished.and_then(|()| g.finish()) {
                    Ok(sink) => match sink.dec {
                        Some(d) => (d, true, sink.written),
                        None => {
                            return Err(LoadError::new(
                                LoadErrorKind::Truncated,
                                "the gzip stream holds no data",
                            ))
                        }
                    },
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
        dec.finish(gzip, total)
    }
}

/// Load a whole buffer.
pub fn load_slice(bytes: &[u8]) -> Result<Snapshot, LoadError> {
    let mut l = Loader::new();
    l.push(bytes)?;
    l.finish()
}
