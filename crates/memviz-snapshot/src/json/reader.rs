//! The reader: chunks in (a token cut by a chunk's end carried to the next), a state machine
//! over the tokens of `lexer.rs`, strings interned (repeats found in `dedupe.rs`'s cache). The
//! open containers, whose items wait on one value stack until they are made through the
//! [`Builder`], are `containers.rs`; frames and frame lists shared as the pickle memo shares
//! them, `dedupe.rs` and `raw.rs`; the end of the text, whole or cut, `cut.rs`.

use super::dedupe::{self, Dedupe, StrCache};
use super::lexer::{self, is_ws, shown, LexError, Num, Resume};
use super::raw::RawLists;
use super::{JsonError, JsonErrorKind};
use memviz_pickle::{Atoms, BuildError, Builder, Limits, ObjId, StrId, Value};

/// Items (pairs, for an object) a container buffers before it is made and given them: CPython's
/// pickler batches APPENDS and SETITEMS by this many too.
pub(super) const BATCH: usize = 1000;

/// What the next token may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Expect {
    /// The top-level value (after an optional byte order mark).
    Start,
    Value,
    /// A value or `]` (just after `[`).
    ValueOrClose,
    /// A key (after `,` in an object).
    Key,
    /// A key or `}` (just after `{`).
    KeyOrClose,
    Colon,
    CommaOrClose,
    /// The top-level value is complete: only whitespace may follow.
    End,
}

/// An open container.
#[derive(Clone, Copy, Debug)]
pub(super) struct Open {
    /// Made already (it outgrew a batch).
    pub(super) obj: Option<ObjId>,
    /// Where its buffered items start on the value stack.
    pub(super) start: usize,
    pub(super) object: bool,
    /// An array: every item so far is a frame dict. An object: every key so far is a frame
    /// key and every value a string or an integer.
    pub(super) frames: bool,
    /// Values so far (items of an array, pairs of an object), given or buffered.
    pub(super) items: u64,
    /// An array: the run (see `JsonReader::serial`) and index of its `[`, to store its text
    /// when it closes in the same buffer.
    pub(super) raw_at: Option<(u64, usize)>,
}

/// A push-based JSON reader building through `B` (see the [module docs](super)). Feed bytes
/// with [`push`](Self::push), then call [`finish`](Self::finish) (or
/// [`recover`](Self::recover) for what a cut text holds).
pub struct JsonReader<B: Builder> {
    pub(super) builder: B,
    pub(super) atoms: Atoms,
    pub(super) limits: Limits,
    pub(super) stack: Vec<Open>,
    /// Items of the open containers (key/value pairs for objects), each container's from its
    /// `start`.
    pub(super) vals: Vec<Value>,
    pub(super) expect: Expect,
    /// The bytes of a token cut by the end of the last chunk.
    pub(super) carry: Vec<u8>,
    /// Where the scan of the carried string stopped (relative to its opening quote).
    pub(super) resume: Option<Resume>,
    /// Offset of the first byte not consumed (the start of `carry`).
    pub(super) offset: u64,
    pub(super) root: Option<Value>,
    pub(super) failed: Option<JsonError>,
    /// Decoded text of a string with escapes.
    pub(super) scratch: String,
    pub(super) dedupe: Dedupe,
    pub(super) cache: StrCache,
    pub(super) raw: RawLists,
    /// Counts the buffers read (each `run`), so a container knows it closes in the buffer it
    /// opened in.
    pub(super) serial: u64,
}

/// A token's error at `base + e.at` (a syntax error, or a number past its limit).
fn syntax(base: u64, e: LexError) -> JsonError {
    JsonError {
        offset: base + e.at as u64,
        kind: if e.limit {
            JsonErrorKind::Limit
        } else {
            JsonErrorKind::Syntax
        },
        message: e.message,
    }
}

pub(super) fn err(offset: u64, kind: JsonErrorKind, message: impl Into<String>) -> JsonError {
    JsonError {
        offset,
        kind,
        message: message.into(),
    }
}

pub(super) fn build_err(offset: u64, e: BuildError) -> JsonError {
    let message = e.to_string();
    err(offset, JsonErrorKind::Builder(e), message)
}

impl<B: Builder> JsonReader<B> {
    /// A reader building through `builder`, its strings interned into `atoms` (a builder's keys
    /// interned beforehand keep their ids).
    pub fn new(builder: B, mut atoms: Atoms, limits: Limits) -> Self {
        let dedupe = Dedupe::new(&mut atoms);
        JsonReader {
            builder,
            atoms,
            limits,
            stack: Vec::new(),
            vals: Vec::new(),
            expect: Expect::Start,
            carry: Vec::new(),
            resume: None,
            offset: 0,
            root: None,
            failed: None,
            scratch: String::new(),
            dedupe,
            cache: StrCache::new(),
            raw: RawLists::default(),
            serial: 0,
        }
    }

    pub fn builder(&self) -> &B {
        &self.builder
    }

    pub fn builder_mut(&mut self) -> &mut B {
        &mut self.builder
    }

    pub fn atoms(&self) -> &Atoms {
        &self.atoms
    }

    /// Bytes consumed so far (a token cut by the end of the last chunk excluded).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// True once the top-level value is complete.
    pub fn is_done(&self) -> bool {
        self.root.is_some()
    }

    /// Feed the next chunk.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), JsonError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = self.push_chunk(chunk);
        if let Err(e) = &r {
            self.failed = Some(e.clone());
        }
        r
    }

    fn push_chunk(&mut self, mut chunk: &[u8]) -> Result<(), JsonError> {
        if !self.carry.is_empty() {
            // Finish the token cut by the last chunk with as few new bytes as possible (64,
            // then 4x more while it is still cut), then go on in `chunk` itself. A string's
            // scan resumes where it stopped, so a long string costs its length once.
            let carry_len = self.carry.len();
            let mut take = chunk.len().min(64);
            loop {
                let mut buf = std::mem::take(&mut self.carry);
                buf.truncate(carry_len);
                buf.extend_from_slice(chunk.get(..take).unwrap_or(chunk));
                let pos = self.run(&buf)?;
                if pos >= carry_len && pos > 0 {
                    self.offset += pos as u64;
                    chunk = chunk.get(pos - carry_len..).unwrap_or(&[]);
                    break;
                }
                self.carry = buf;
                if take == chunk.len() {
                    return self.check_carry();
                }
                take = (take * 4).min(chunk.len());
            }
        }
        let pos = self.run(chunk)?;
        self.offset += pos as u64;
        self.carry
            .extend_from_slice(chunk.get(pos..).unwrap_or(&[]));
        self.check_carry()
    }

    /// A token cut by a chunk's end may not grow past the longest string.
    fn check_carry(&self) -> Result<(), JsonError> {
        let max = self.limits.max_string_bytes;
        if self.carry.len() > max.saturating_add(2) {
            return Err(err(
                self.offset,
                JsonErrorKind::Limit,
                format!("a string longer than {max} bytes exceeds the limit"),
            ));
        }
        Ok(())
    }

    /// Read the tokens of `buf` (which starts at `self.offset`); the index of the first token
    /// cut by its end (its length when none is).
    fn run(&mut self, buf: &[u8]) -> Result<usize, JsonError> {
        let base = self.offset;
        let hint = self.resume.take();
        self.serial += 1;
        let mut pos = 0usize;
        loop {
            while buf.get(pos).is_some_and(|&b| is_ws(b)) {
                pos += 1;
            }
            let Some(&b) = buf.get(pos) else {
                return Ok(pos);
            };
            let at = pos;
            let hint = hint.filter(|_| at == 0);
            match self.expect {
                Expect::Value | Expect::ValueOrClose => match b {
                    b'"' => match self.string(buf, at, hint)? {
                        Some((s, end)) => {
                            self.value(Value::Str(s), false, at)?;
                            pos = end;
                        }
                        None => return Ok(at),
                    },
                    b'{' => {
                        self.open(true, at)?;
                        pos += 1;
                    }
                    b'[' => {
                        if let Some((id, end)) = self.raw.find(buf, at, base + at as u64) {
                            self.value(Value::Obj(id), false, at)?;
                            pos = end;
                            continue;
                        }
                        self.open(false, at)?;
                        if let Some(o) = self.stack.last_mut() {
                            o.raw_at = Some((self.serial, at));
                        }
                        pos += 1;
                    }
                    b']' if self.expect == Expect::ValueOrClose => {
                        self.close_list(buf, at)?;
                        pos += 1;
                    }
                    b'-' | b'0'..=b'9' => {
                        let next = buf.get(at + 1).copied();
                        if b == b'-' && next == Some(b'I') {
                            match self.literal(buf, at, b"-Infinity", Value::Float(f64::NEG_INFINITY))? {
                                Some(end) => pos = end,
                                None => return Ok(at),
                            }
                            continue;
                        }
                        if b == b'-' && next.is_none() {
                            return Ok(at);
                        }
                        let Some((num, end)) = lexer::number(buf, at).map_err(|e| syntax(base, e))?
                        else {
                            return Ok(at);
                        };
                        let v = match num {
                            Num::Int(i) => Value::Int(i),
                            Num::Float(f) => Value::Float(f),
                            Num::BigInt => {
                                let bytes = lexer::big_int_bytes(buf.get(at..end).unwrap_or(&[]));
                                Value::BigInt(self.atoms.add_big_int(&bytes))
                            }
                        };
                        self.value(v, false, at)?;
                        pos = end;
                    }
                    b't' | b'f' | b'n' | b'N' | b'I' => {
                        let (lit, v): (&[u8], Value) = match b {
                            b't' => (b"true", Value::Bool(true)),
                            b'f' => (b"false", Value::Bool(false)),
                            b'n' => (b"null", Value::None),
                            b'N' => (b"NaN", Value::Float(f64::NAN)),
                            _ => (b"Infinity", Value::Float(f64::INFINITY)),
                        };
                        match self.literal(buf, at, lit, v)? {
                            Some(end) => pos = end,
                            None => return Ok(at),
                        }
                    }
                    _ => {
                        return Err(err(
                            base + at as u64,
                            JsonErrorKind::Syntax,
                            format!(
                                "expected a value (an object, array, string, number, true, false or null), found {}",
                                shown(b)
                            ),
                        ))
                    }
                },
                Expect::Key | Expect::KeyOrClose => match b {
                    b'"' => match self.string(buf, at, hint)? {
                        Some((k, end)) => {
                            self.key(k, at)?;
                            pos = end;
                        }
                        None => return Ok(at),
                    },
                    b'}' if self.expect == Expect::KeyOrClose => {
                        self.close(at)?;
                        pos += 1;
                    }
                    _ => {
                        let what = if self.expect == Expect::KeyOrClose {
                            "a key (a string in double quotes) or '}' after '{'"
                        } else {
                            "a key (a string in double quotes) after ','"
                        };
                        return Err(err(
                            base + at as u64,
                            JsonErrorKind::Syntax,
                            format!("expected {what}, found {}", shown(b)),
                        ));
                    }
                },
                Expect::Colon => {
                    if b != b':' {
                        return Err(err(
                            base + at as u64,
                            JsonErrorKind::Syntax,
                            format!("expected ':' after an object key, found {}", shown(b)),
                        ));
                    }
                    self.expect = Expect::Value;
                    pos += 1;
                }
                Expect::CommaOrClose => {
                    let object = self.stack.last().is_some_and(|o| o.object);
                    match (b, object) {
                        (b',', true) => self.expect = Expect::Key,
                        (b',', false) => self.expect = Expect::Value,
                        (b'}', true) => self.close(at).map(drop)?,
                        (b']', false) => self.close_list(buf, at)?,
                        (_, true) => {
                            return Err(err(
                                base + at as u64,
                                JsonErrorKind::Syntax,
                                format!("expected ',' or '}}' after an object member, found {}", shown(b)),
                            ))
                        }
                        (_, false) => {
                            return Err(err(
                                base + at as u64,
                                JsonErrorKind::Syntax,
                                format!("expected ',' or ']' after an array item, found {}", shown(b)),
                            ))
                        }
                    }
                    pos += 1;
                }
                Expect::Start => {
                    if b == 0xEF && base + at as u64 == 0 {
                        // A UTF-8 byte order mark.
                        const BOM: &[u8] = b"\xEF\xBB\xBF";
                        let have = buf.get(at..).unwrap_or(&[]);
                        if have.starts_with(BOM) {
                            pos += BOM.len();
                            continue;
                        }
                        if BOM.starts_with(have) {
                            return Ok(at);
                        }
                    }
                    if b != b'{' && b != b'[' {
                        return Err(err(
                            base + at as u64,
                            JsonErrorKind::Syntax,
                            format!(
                                "expected '{{' or '[' to start the JSON text (a memory snapshot is an object, or a list of segments), found {}",
                                shown(b)
                            ),
                        ));
                    }
                    self.open(b == b'{', at)?;
                    pos += 1;
                }
                Expect::End => {
                    return Err(err(
                        base + at as u64,
                        JsonErrorKind::Syntax,
                        format!(
                            "expected only whitespace after the end of the JSON text's top-level value, found {} \
                             (more data follows the snapshot: two files written into one, or a damaged end?)",
                            shown(b)
                        ),
                    ))
                }
            }
        }
    }

    /// The literal `lit` at `at`, read as `v`: its end, or None when `buf` ends inside it.
    fn literal(
        &mut self,
        buf: &[u8],
        at: usize,
        lit: &[u8],
        v: Value,
    ) -> Result<Option<usize>, JsonError> {
        match lexer::literal(buf, at, lit).map_err(|e| syntax(self.offset, e))? {
            Some(end) => {
                self.value(v, false, at)?;
                Ok(Some(end))
            }
            None => Ok(None),
        }
    }

    /// The string whose opening quote is at `at`, interned, and the index after it; None when
    /// `buf` ends inside it (where the scan stopped is kept for the next try).
    #[inline]
    fn string(
        &mut self,
        buf: &[u8],
        at: usize,
        hint: Option<Resume>,
    ) -> Result<Option<(StrId, usize)>, JsonError> {
        let base = self.offset;
        let hint = hint.map(|r| Resume {
            from: r.from + at,
            escaped: r.escaped,
        });
        let end = match lexer::string_end(buf, at, hint).map_err(|e| syntax(base, e))? {
            Ok(end) => end,
            Err(r) => {
                self.resume = Some(Resume {
                    from: r.from - at,
                    escaped: r.escaped,
                });
                return Ok(None);
            }
        };
        let raw = buf.get(at + 1..end.quote).unwrap_or(&[]);
        if raw.len() > self.limits.max_string_bytes {
            return Err(err(
                base + at as u64,
                JsonErrorKind::Limit,
                format!(
                    "a string longer than {} bytes exceeds the limit",
                    self.limits.max_string_bytes
                ),
            ));
        }
        let h = dedupe::hash(raw);
        if let Some(id) = self.cache.get(h, raw) {
            return Ok(Some((id, end.quote + 1)));
        }
        let text = lexer::decode(raw, at + 1, end.escaped, &mut self.scratch)
            .map_err(|e| syntax(base, e))?;
        let Some(id) = self.atoms.strings.try_intern(text) else {
            return Err(err(
                base + at as u64,
                JsonErrorKind::OutOfMemory,
                format!(
                    "out of memory: the table of the file's strings needs more than {} bytes and \
                     the system has no more to give (the file is too large for the memory available)",
                    self.atoms.strings.heap_bytes()
                ),
            ));
        };
        self.cache.put(h, raw, id);
        Ok(Some((id, end.quote + 1)))
    }
}
