//! Unwrapping a `torch.save`d snapshot: the bytes of a zip archive's `data.pkl` entry, handed
//! on as the archive streams in.
//!
//! `torch.save(obj, f)` writes a zip archive (PyTorch's `caffe2/serialize/inline_container.cc`
//! through miniz): `<name>/data.pkl` (the object as a protocol-2 pickle, the first entry),
//! `<name>/.format_version`, `<name>/.storage_alignment`, `<name>/byteorder`, one
//! `<name>/data/N` per tensor storage, `<name>/version`, `<name>/.data/serialization_id`. Every
//! entry is stored (method 0), its data aligned to 64 bytes by an extra field (id 0x4246,
//! "FB") padding the local header; torch 2.x's miniz sets general purpose flag bit 3, so the
//! local header's crc-32 and sizes are 0 and a signed data descriptor follows the data (see
//! `tests/fixtures/formats.py`, which writes the same bytes). A snapshot saved this way
//! (`torch.save(torch.cuda.memory._snapshot(), "snapshot.pt")`) is its data.pkl.
//!
//! [`ZipStream`] reads the archive's local entries from its first byte in chunks of any size
//! (the result does not depend on the chunking), skips the entries before the snapshot entry
//! by their sizes, and hands the snapshot entry's bytes (inflated for a deflated entry) to a
//! sink as they arrive, holding at most one local header (≤ 128 KiB), 64 KiB of stored data
//! and, for a deflated entry, an inflater and 32 KiB of its output.
//!
//! Why not the `zip` crate: it reads the central directory at the end of the archive first
//! (`Read + Seek` over the whole file), while the page's Web Worker gets a file as pushed
//! chunks and a `?url=` download is a stream; memviz never holds a whole file. The local
//! headers say all a stream needs (APPNOTE.TXT §4.3.6: each entry's local header comes right
//! before its data), so this is a streaming local-header reader of a few hundred lines, in
//! the manner of `java.util.zip.ZipInputStream` or libarchive's streaming zip reader.
//!
//! Sizes: from the local header; with general-purpose flag bit 3 (sizes in a data descriptor
//! after the data, §4.3.9) a deflated entry ends where its deflate stream does, and a stored
//! one where a descriptor whose sizes equal the bytes so far is followed by the next
//! record's signature (checked by the descriptor's crc-32); zip64 sizes come from the zip64
//! extra field (§4.5.3). Reading stops at the central directory (§4.3.12) or any record after
//! the entries. A deflated entry may expand at most [`crate::GZIP_MAX_RATIO`] times its
//! compressed bytes plus [`crate::GZIP_FLOOR`], like gzip input. Every error is a
//! [`LoadError`] with its byte offset in the archive.

mod data;
mod header;
mod messages;

use crate::load::{LoadError, LoadErrorKind};
use flate2::{Crc, Decompress};
use header::{method_name, record, zip_error, Local, Record, DEFLATED, STORED};
pub use messages::in_entry;
use messages::{check_crc, hex};
use LoadErrorKind::{Malformed, NotPickle};

/// Where the snapshot entry's bytes go: an error stops the stream and is returned, placed in
/// the entry by [`in_entry`].
pub type Sink<'a> = dyn FnMut(&[u8]) -> Result<(), LoadError> + 'a;

/// Names kept for the message of an archive without a data.pkl.
const MAX_NAMES: usize = 8;

/// What [`ZipStream::finish`] found: the snapshot entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZipEntry {
    /// Its name in the archive, as text (at most 120 characters).
    pub name: String,
    /// Bytes handed to the sink (the uncompressed data).
    pub bytes: u64,
    /// Its data ended where the archive says; false when the input ended first (a cut
    /// archive: the sink got a prefix).
    pub complete: bool,
}

/// A push-based reader of a zip archive's local entries: see the module doc.
pub struct ZipStream {
    state: State,
    /// Archive bytes consumed.
    pos: u64,
    /// Local headers read.
    entries: u64,
    /// The first [`MAX_NAMES`] entry names.
    names: Vec<String>,
    /// The entry whose data (or descriptor) is being read.
    cur: Option<Current>,
    /// Buffer of inflated bytes (allocated at the first deflated entry).
    out: Vec<u8>,
}

/// The entry being read.
struct Current {
    local: Local,
    /// The snapshot entry: its bytes go to the sink (else they are skipped).
    emit: bool,
    /// Crc-32 of the uncompressed bytes (only computed for the snapshot entry).
    crc: Crc,
    /// Uncompressed bytes so far.
    bytes: u64,
    /// Compressed bytes consumed so far.
    consumed: u64,
    /// Offset of its data in the archive (where deflate errors are placed: how far an
    /// inflater reads ahead depends on the chunking).
    data_at: u64,
}

enum State {
    /// Reading a record (a local header, or the signature after the entries): its bytes so far.
    Header(Vec<u8>),
    /// Stored data, or data skipped by its size: bytes left.
    Data {
        left: u64,
    },
    /// Deflated data; `left`: compressed bytes left when known; `ended`: the deflate stream
    /// ended (the rest of `left` is skipped).
    Inflate {
        z: Box<Decompress>,
        left: Option<u64>,
        ended: bool,
    },
    /// Stored data whose size is in the descriptor after it: the bytes not yet handed on.
    Scan {
        buf: Vec<u8>,
        seen: u64,
    },
    /// The data descriptor after an entry's data: its bytes so far.
    Descriptor(Vec<u8>),
    /// The snapshot entry's data ended: the rest is ignored.
    Done,
    /// The entries ended (central directory) without a snapshot entry.
    End,
    Failed(LoadError),
}

impl Default for ZipStream {
    fn default() -> Self {
        Self::new()
    }
}

impl ZipStream {
    pub fn new() -> Self {
        ZipStream {
            state: State::Header(Vec::new()),
            pos: 0,
            entries: 0,
            names: Vec::new(),
            cur: None,
            out: Vec::new(),
        }
    }

    /// Feeds archive bytes (the next ones after those already pushed); the snapshot entry's
    /// uncompressed bytes go to `sink` as they come.
    pub fn push(&mut self, chunk: &[u8], sink: &mut Sink) -> Result<(), LoadError> {
        let mut input = chunk;
        loop {
            if let State::Failed(e) = &self.state {
                return Err(e.clone());
            }
            if input.is_empty() {
                return Ok(());
            }
            match self.step(input, sink) {
                Ok(used) => {
                    self.pos += used as u64;
                    input = input.get(used..).unwrap_or_default();
                }
                Err(e) => self.state = State::Failed(e),
            }
        }
    }

    /// True once the snapshot entry's data ended where the archive says: the rest of the
    /// archive may be skipped. False while it is read, and for a stored entry of unknown size
    /// until its data descriptor is found.
    pub fn entry_done(&self) -> bool {
        matches!(self.state, State::Done)
            || matches!((&self.state, &self.cur), (State::Descriptor(_), Some(c)) if c.emit)
    }

    /// The snapshot entry's name, once its local header was read.
    pub fn entry_name(&self) -> Option<&str> {
        self.cur
            .as_ref()
            .filter(|c| c.emit)
            .map(|c| c.local.name.as_str())
    }

    /// End of input: the snapshot entry (whole, or cut with the archive), or the error saying
    /// what the archive holds or where it ends.
    pub fn finish(mut self, sink: &mut Sink) -> Result<ZipEntry, LoadError> {
        let emit = self.cur.as_ref().is_some_and(|c| c.emit);
        let complete = match &mut self.state {
            State::Failed(e) => return Err(e.clone()),
            State::End => return Err(self.no_snapshot()),
            State::Done => true,
            State::Descriptor(_) if emit => true,
            State::Scan { buf, seen } if emit => {
                // Cut after the data descriptor: the entry is whole (the descriptor is not data).
                // Cut elsewhere: the last bytes held may be the start of the descriptor, so only
                // those before them are surely data (a cut entry loses at most 27 more bytes).
                let zip64 = self.cur.as_ref().is_some_and(|c| c.local.zip64);
                let end = data::scan_end_at_eof(buf, *seen, zip64);
                let n = end.map_or(buf.len().saturating_sub(data::SCAN_TAIL), |(n, _)| n);
                if let Some(c) = &mut self.cur {
                    c.bytes += n as u64;
                    c.emit(buf.get(..n).unwrap_or_default(), sink)?;
                    if let Some((_, crc)) = end {
                        check_crc(c, crc, self.pos - (buf.len() - n) as u64)?;
                    }
                }
                end.is_some()
            }
            State::Data { .. } | State::Inflate { .. } if emit => false,
            _ => return Err(self.truncated()),
        };
        let c = self.cur.as_ref().filter(|c| c.emit);
        Ok(ZipEntry {
            name: c.map(|c| c.local.name.clone()).unwrap_or_default(),
            bytes: c.map_or(0, |c| c.bytes),
            complete,
        })
    }

    /// Consumes some of `input` (never none of a non-empty input unless the state changed).
    fn step(&mut self, input: &[u8], sink: &mut Sink) -> Result<usize, LoadError> {
        match &mut self.state {
            State::Failed(_) | State::Done | State::End => Ok(input.len()),
            State::Header(_) => self.header(input),
            State::Data { left } => {
                let n = input
                    .len()
                    .min(usize::try_from(*left).unwrap_or(usize::MAX));
                *left -= n as u64;
                let ended = *left == 0;
                let data = input.get(..n).unwrap_or_default();
                if let Some(c) = self.cur.as_mut().filter(|c| c.emit) {
                    c.bytes += n as u64;
                    c.emit(data, sink)?;
                }
                if ended {
                    self.end_of_data(self.pos + n as u64)?;
                }
                Ok(n)
            }
            State::Inflate { .. } => self.inflate(input, sink),
            State::Scan { .. } => self.scan(input, sink),
            State::Descriptor(_) => self.descriptor(input),
        }
    }

    /// Reads a record where a local header may start.
    fn header(&mut self, input: &[u8]) -> Result<usize, LoadError> {
        let State::Header(buf) = &mut self.state else {
            return Ok(0);
        };
        let mut used = 0;
        loop {
            match record(buf) {
                Record::Need(total) => {
                    let take = (total - buf.len()).min(input.len() - used);
                    buf.extend_from_slice(input.get(used..used + take).unwrap_or_default());
                    used += take;
                    if buf.len() < total {
                        return Ok(used);
                    }
                }
                Record::AfterEntries => {
                    self.state = State::End;
                    return Ok(used);
                }
                Record::Other(sig) => {
                    let at = self.pos + used as u64 - buf.len() as u64;
                    let after = match &self.cur {
                        Some(c) => format!("after entry '{}'", c.local.name),
                        None => "at the start".into(),
                    };
                    return Err(zip_error(
                        Malformed,
                        at,
                        format!(
                            "expected a zip local file header (50 4b 03 04) or the central \
                             directory {after}, found {}: the zip archive is damaged; copy or \
                             save it again",
                            hex(&sig)
                        ),
                    ));
                }
                Record::Local => {
                    let head = std::mem::take(buf);
                    let at = self.pos + used as u64 - head.len() as u64;
                    let local = Local::parse(&head, at)?;
                    self.begin(local, at + head.len() as u64)?;
                    return Ok(used);
                }
            }
        }
    }

    /// A local header was read: choose how to read its data (starting at byte `data_at`).
    fn begin(&mut self, local: Local, data_at: u64) -> Result<(), LoadError> {
        self.entries += 1;
        if self.names.len() < MAX_NAMES {
            self.names.push(local.name.clone());
        }
        let emit = local.is_snapshot;
        if emit {
            if local.encrypted() {
                return Err(local.error(
                    NotPickle,
                    local.at + 6,
                    "is encrypted (general purpose flag bits 0, 6 or 13), which memviz cannot \
                     read: extract it with its password (`unzip FILE`) and open that data.pkl",
                ));
            }
            if local.method != STORED && local.method != DEFLATED {
                return Err(local.error(
                    NotPickle,
                    local.at + 8,
                    &format!(
                        "is compressed with {} (method {}), which memviz does not read (it reads \
                         stored and deflated entries, as torch.save and zip write them): extract \
                         it (`unzip FILE`) and open that data.pkl",
                        method_name(local.method),
                        local.method
                    ),
                ));
            }
        }
        self.state = if local.size_known() && (local.method == STORED || !emit) {
            State::Data { left: local.csize }
        } else if local.method == DEFLATED {
            State::Inflate {
                z: Box::new(Decompress::new(false)),
                left: local.size_known().then_some(local.csize),
                ended: false,
            }
        } else if local.method == STORED {
            State::Scan {
                buf: Vec::new(),
                seen: 0,
            }
        } else {
            return Err(local.error(
                NotPickle,
                data_at,
                &format!(
                    "comes before the data.pkl, is compressed with {} (method {}) and has its \
                     size after its data (flag bit 3), so memviz cannot skip it while reading \
                     the archive as a stream: extract the archive (`unzip FILE`) and open its \
                     data.pkl",
                    method_name(local.method),
                    local.method
                ),
            ));
        };
        let empty = matches!(self.state, State::Data { left: 0 });
        self.cur = Some(Current {
            local,
            emit,
            crc: Crc::new(),
            bytes: 0,
            consumed: 0,
            data_at,
        });
        if empty {
            self.end_of_data(data_at)?;
        }
        Ok(())
    }

    /// The current entry's data ended at byte `at`: check it (the snapshot entry), then read
    /// its descriptor or the next record.
    fn end_of_data(&mut self, at: u64) -> Result<(), LoadError> {
        let Some(c) = self.cur.as_ref() else {
            return Ok(());
        };
        let l = &c.local;
        if c.emit && !l.has_descriptor() {
            check_crc(c, l.crc, at)?;
            if c.bytes != l.usize {
                return Err(l.error(
                    Malformed,
                    at,
                    &format!(
                        "holds {} bytes of data, not the {} its local header says: the zip \
                         archive is damaged; copy or save it again",
                        c.bytes, l.usize
                    ),
                ));
            }
        }
        self.state = if l.has_descriptor() {
            State::Descriptor(Vec::new())
        } else if c.emit {
            State::Done
        } else {
            State::Header(Vec::new())
        };
        Ok(())
    }
}

impl Current {
    /// Hands the snapshot entry's bytes on; an error of the sink is placed in the entry
    /// ([`in_entry`]).
    fn emit(&mut self, data: &[u8], sink: &mut Sink) -> Result<(), LoadError> {
        self.crc.update(data);
        sink(data).map_err(|e| in_entry(e, &self.local.name))
    }
}
