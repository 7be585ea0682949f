//! The push-based pickle VM.

use crate::error::{ErrorKind, PickleError};
use crate::intern::{le_to_i128, Atoms};
use crate::value::{ObjId, Value};

/// Creates and fills containers for the VM. The VM never looks inside a container; it only keeps
/// the handle. Errors are plain messages; the VM adds the byte offset.
pub trait Builder {
    fn new_list(&mut self, atoms: &Atoms) -> Result<ObjId, String>;
    fn new_dict(&mut self, atoms: &Atoms) -> Result<ObjId, String>;
    fn new_tuple(&mut self, items: &[Value], atoms: &Atoms) -> Result<ObjId, String>;
    /// APPEND / APPENDS / LIST: `items` go at the end of `list`.
    fn extend_list(&mut self, list: Value, items: &[Value], atoms: &Atoms) -> Result<(), String>;
    /// SETITEM / SETITEMS / DICT: `pairs` is `[k0, v0, k1, v1, …]`.
    fn set_items(&mut self, dict: Value, pairs: &[Value], atoms: &Atoms) -> Result<(), String>;
}

/// The largest gap between memo indices: over the whole input, an index may exceed the bytes
/// read before its put by at most this many slots (8 MiB of memo).
const MAX_MEMO_GAP: usize = 1 << 20;

/// Bounds that keep hostile input from exhausting memory.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Open MARKs at once (container nesting). Real snapshots need fewer than 10.
    pub max_marks: usize,
    /// Memo slots.
    pub max_memo: usize,
    /// Values on the stack at once (the C++ pickler puts a whole list above one MARK).
    pub max_stack: usize,
    /// Bytes in one string or byte string.
    pub max_string_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_marks: 1024,
            max_memo: 1 << 28,
            max_stack: 1 << 28,
            max_string_bytes: 1 << 28,
        }
    }
}

#[derive(Debug)]
enum State {
    Start,
    Running,
    Done(Value),
    Failed(PickleError),
}

/// A push-based unpickler. Feed bytes with [`push`](Self::push), then call
/// [`finish`](Self::finish). The output does not depend on how the input is chunked.
pub struct Unpickler<B: Builder> {
    builder: B,
    atoms: Atoms,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: Memo,
    /// Bytes of an opcode cut by a chunk boundary.
    carry: Vec<u8>,
    /// Absolute offset of the first byte not yet consumed (the start of `carry`, if any).
    offset: u64,
    state: State,
    limits: Limits,
    protocol: u8,
}

/// Result of decoding one buffer: how far it got.
enum Step {
    /// Stopped at an incomplete opcode starting at this position.
    NeedMore(usize),
    /// STOP reached.
    Stopped,
}

macro_rules! opname {
    ($op:expr) => {
        opcode_name($op)
    };
}

impl<B: Builder> Unpickler<B> {
    pub fn new(builder: B) -> Self {
        Self::with_atoms(builder, Atoms::new(), Limits::default())
    }

    /// Start with pre-interned atoms (so a builder can know the ids of the keys it cares about).
    pub fn with_atoms(builder: B, atoms: Atoms, limits: Limits) -> Self {
        Unpickler {
            builder,
            atoms,
            stack: Vec::with_capacity(1024),
            marks: Vec::with_capacity(64),
            memo: Memo::default(),
            carry: Vec::new(),
            offset: 0,
            state: State::Start,
            limits,
            protocol: 0,
        }
    }

    /// Reserve room for `memo_slots` memo entries up front (growing a large memo step by step
    /// copies it each time, which wasm cannot avoid).
    pub fn reserve_memo(&mut self, memo_slots: usize) {
        self.memo.reserve(memo_slots.min(self.limits.max_memo));
    }

    /// `done` of `total` input bytes were read: when the memo is nearly full, size it for the
    /// rest of the input at the rate so far (plus 5 %) instead of letting it double.
    pub fn grow_memo_for(&mut self, done: u64, total: u64) {
        let (len, cap) = (self.memo.len(), self.memo.slots.capacity());
        if done == 0 || total <= done || len < cap - cap / 10 {
            return;
        }
        let left = (total - done) as f64 / done as f64 * 1.05;
        let want = (len + (len as f64 * left) as usize + 4096).min(self.limits.max_memo);
        if want > cap {
            self.memo.reserve(want - len);
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

    /// The protocol from the PROTO opcode (0 before it is read).
    pub fn protocol(&self) -> u8 {
        self.protocol
    }

    /// Bytes consumed so far (decoded opcodes, excluding a partial one waiting for more input).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// True once STOP was read; further input is ignored (trailing bytes are legal).
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done(_))
    }

    /// Feed the next chunk.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), PickleError> {
        match &self.state {
            State::Done(_) => return Ok(()),
            State::Failed(e) => return Err(e.clone()),
            _ => {}
        }
        let mut chunk = chunk;
        if !self.carry.is_empty() {
            // Complete the opcode cut by the last boundary with as few new bytes as possible
            // (64, then 4x more while it is still incomplete), then go on in `chunk` itself, so
            // whole chunks are never copied.
            let carry_len = self.carry.len();
            let mut take = chunk.len().min(64);
            loop {
                let mut buf = std::mem::take(&mut self.carry);
                buf.truncate(carry_len);
                buf.extend_from_slice(&chunk[..take]);
                match self.run(&buf) {
                    Err(e) => {
                        self.state = State::Failed(e.clone());
                        return Err(e);
                    }
                    Ok(Step::Stopped) => return Ok(()),
                    Ok(Step::NeedMore(pos)) if pos >= carry_len => {
                        chunk = &chunk[pos - carry_len..];
                        break;
                    }
                    Ok(Step::NeedMore(_)) => {
                        // Nothing was consumed: the cut opcode needs still more bytes.
                        let done = take == chunk.len();
                        self.carry = buf;
                        if done {
                            return Ok(());
                        }
                        take = (take * 4).min(chunk.len());
                    }
                }
            }
        }
        match self.run(chunk) {
            Ok(Step::NeedMore(pos)) => {
                self.carry.extend_from_slice(&chunk[pos..]);
                Ok(())
            }
            Ok(Step::Stopped) => Ok(()),
            Err(e) => {
                self.state = State::Failed(e.clone());
                Err(e)
            }
        }
    }

    /// End of input: returns the top-level value, the atoms and the builder.
    pub fn finish(self) -> Result<(Value, Atoms, B), PickleError> {
        match self.state {
            State::Done(v) => Ok((v, self.atoms, self.builder)),
            State::Failed(e) => Err(e),
            State::Start if self.carry.is_empty() => Err(PickleError {
                offset: 0,
                kind: ErrorKind::Truncated { inside: None },
            }),
            _ => {
                let inside = self.carry.first().map(|&b| opcode_name(b));
                Err(PickleError {
                    offset: self.offset,
                    kind: ErrorKind::Truncated { inside },
                })
            }
        }
    }

    fn err(&self, at: u64, kind: ErrorKind) -> PickleError {
        PickleError { offset: at, kind }
    }

    fn pop(&mut self, at: u64, op: u8) -> Result<Value, PickleError> {
        self.stack.pop().ok_or_else(|| {
            self.err(
                at,
                ErrorKind::StackUnderflow {
                    opcode: opname!(op),
                },
            )
        })
    }

    fn top(&self, at: u64, op: u8) -> Result<Value, PickleError> {
        self.stack.last().copied().ok_or_else(|| {
            self.err(
                at,
                ErrorKind::StackUnderflow {
                    opcode: opname!(op),
                },
            )
        })
    }

    fn push_value(&mut self, at: u64, v: Value) -> Result<(), PickleError> {
        if self.stack.len() >= self.limits.max_stack {
            return Err(self.err(
                at,
                ErrorKind::Limit {
                    what: "values on the stack",
                    limit: self.limits.max_stack as u64,
                },
            ));
        }
        self.stack.push(v);
        Ok(())
    }

    fn pop_mark(&mut self, at: u64, op: u8) -> Result<usize, PickleError> {
        self.marks.pop().ok_or_else(|| {
            self.err(
                at,
                ErrorKind::NoMark {
                    opcode: opname!(op),
                },
            )
        })
    }

    fn memo_put(&mut self, at: u64, index: u64, v: Value) -> Result<(), PickleError> {
        let idx = index as usize;
        if idx >= self.limits.max_memo || index > usize::MAX as u64 {
            return Err(self.err(
                at,
                ErrorKind::Limit {
                    what: "memo index",
                    limit: self.limits.max_memo as u64,
                },
            ));
        }
        if idx < self.memo.len() {
            self.memo.set(idx, v);
        } else {
            // Real producers number slots sequentially, one put per opcode of at least one byte,
            // so an index never exceeds the bytes read. Allow modest gaps, but bound them in
            // total, not per put: each put of a gap would otherwise add up to 8 MiB of slots for
            // 5 bytes of input (255 puts: 2 GiB from a 1.3 KB file).
            let allowed = at.saturating_add(MAX_MEMO_GAP as u64);
            if idx - self.memo.len() > MAX_MEMO_GAP || index > allowed {
                return Err(self.err(
                    at,
                    ErrorKind::Limit {
                        what: "gap between memo indices",
                        limit: MAX_MEMO_GAP as u64,
                    },
                ));
            }
            self.memo.fill_unset_to(idx);
            self.memo.push(v);
        }
        Ok(())
    }

    fn memo_get(&mut self, at: u64, index: u64) -> Result<(), PickleError> {
        match self.memo.get(index as usize) {
            Some(v) => self.push_value(at, v),
            None => Err(self.err(
                at,
                ErrorKind::BadMemo {
                    index,
                    len: self.memo.len() as u64,
                },
            )),
        }
    }

    fn builder_err(&self, at: u64, msg: String) -> PickleError {
        self.err(at, ErrorKind::Builder(msg))
    }

    fn string(&mut self, at: u64, raw: &[u8]) -> Result<Value, PickleError> {
        let s = match std::str::from_utf8(raw) {
            Ok(s) => self.atoms.strings.intern(s),
            // Python writes lone surrogates with 'surrogatepass'; keep the text, replace the bad bytes.
            Err(_) => {
                let lossy = String::from_utf8_lossy(raw);
                self.atoms.strings.intern(&lossy)
            }
        };
        let _ = at;
        Ok(Value::Str(s))
    }

    fn check_len(&self, at: u64, op: u8, len: u64) -> Result<usize, PickleError> {
        if len > self.limits.max_string_bytes as u64 {
            return Err(self.err(
                at,
                ErrorKind::Limit {
                    what: "string length",
                    limit: self.limits.max_string_bytes as u64,
                },
            ));
        }
        let _ = op;
        Ok(len as usize)
    }

    /// Decode as many whole opcodes from `buf` as possible.
    fn run(&mut self, buf: &[u8]) -> Result<Step, PickleError> {
        let mut pos = 0usize;
        let base = self.offset;
        macro_rules! need {
            ($start:expr, $n:expr) => {
                if buf.len() - $start < $n {
                    self.offset = base + $start as u64;
                    return Ok(Step::NeedMore($start));
                }
            };
        }
        macro_rules! rd_u8 {
            () => {{
                let v = buf[pos];
                pos += 1;
                v
            }};
        }
        macro_rules! rd {
            ($ty:ty, $n:expr) => {{
                let mut a = [0u8; $n];
                a.copy_from_slice(&buf[pos..pos + $n]);
                pos += $n;
                <$ty>::from_le_bytes(a)
            }};
        }
        if matches!(self.state, State::Start) {
            need!(0, 1);
            if buf[0] != 0x80 {
                return Err(self.err(base, ErrorKind::NotAPickle { first_byte: buf[0] }));
            }
            self.state = State::Running;
        }
        while pos < buf.len() {
            let start = pos;
            let at = base + start as u64;
            let op = buf[pos];
            pos += 1;
            match op {
                // ---- memo: hottest first
                b'j' | b'h' => {
                    // Memo gets come in long runs (a traceback is ~35 of them): decode the whole
                    // run here so the opcode dispatch stays predictable.
                    let mut op_at = start;
                    loop {
                        let len = if buf[op_at] == b'j' { 5 } else { 2 };
                        if buf.len() - op_at < len {
                            break;
                        }
                        let i = if len == 5 {
                            let mut a = [0u8; 4];
                            a.copy_from_slice(&buf[op_at + 1..op_at + 5]);
                            u32::from_le_bytes(a) as usize
                        } else {
                            buf[op_at + 1] as usize
                        };
                        match self.memo.get(i) {
                            Some(v) if self.stack.len() < self.limits.max_stack => {
                                self.stack.push(v)
                            }
                            _ => {
                                self.memo_get(base + op_at as u64, i as u64)?;
                            }
                        }
                        op_at += len;
                        if op_at >= buf.len() || !matches!(buf[op_at], b'j' | b'h') {
                            break;
                        }
                    }
                    if op_at == start {
                        need!(start, if op == b'j' { 5 } else { 2 });
                    }
                    pos = op_at;
                }
                0x94 => {
                    // MEMOIZE: the next slot, always.
                    let v = self.top(at, op)?;
                    if self.memo.len() >= self.limits.max_memo {
                        return Err(self.err(
                            at,
                            ErrorKind::Limit {
                                what: "memo size",
                                limit: self.limits.max_memo as u64,
                            },
                        ));
                    }
                    self.memo.push(v);
                }
                b'q' => {
                    need!(start, 2);
                    let i = rd_u8!();
                    let v = self.top(at, op)?;
                    self.memo_put(at, i as u64, v)?;
                }
                b'r' => {
                    need!(start, 5);
                    let i = rd!(u32, 4);
                    let v = self.top(at, op)?;
                    self.memo_put(at, i as u64, v)?;
                }
                // ---- ints
                b'K' => {
                    need!(start, 2);
                    let v = rd_u8!();
                    self.push_value(at, Value::Int(v as i64))?;
                }
                b'M' => {
                    need!(start, 3);
                    let v = rd!(u16, 2);
                    self.push_value(at, Value::Int(v as i64))?;
                }
                b'J' => {
                    need!(start, 5);
                    let v = rd!(i32, 4);
                    self.push_value(at, Value::Int(v as i64))?;
                }
                0x8a => {
                    // LONG1
                    need!(start, 2);
                    let n = buf[pos] as usize;
                    need!(start, 2 + n);
                    pos += 1;
                    let bytes = &buf[pos..pos + n];
                    pos += n;
                    let v = self.long(bytes);
                    self.push_value(at, v)?;
                }
                0x8b => {
                    // LONG4
                    need!(start, 5);
                    let n = rd!(i32, 4);
                    if n < 0 {
                        return Err(self.err(
                            at,
                            ErrorKind::BadLength {
                                opcode: "LONG4",
                                len: n as i128,
                            },
                        ));
                    }
                    let n = self.check_len(at, op, n as u64)?;
                    need!(start, 5 + n);
                    let bytes = &buf[pos..pos + n];
                    pos += n;
                    let v = self.long(bytes);
                    self.push_value(at, v)?;
                }
                0x88 => self.push_value(at, Value::Bool(true))?,
                0x89 => self.push_value(at, Value::Bool(false))?,
                b'N' => self.push_value(at, Value::None)?,
                b'G' => {
                    need!(start, 9);
                    let mut a = [0u8; 8];
                    a.copy_from_slice(&buf[pos..pos + 8]);
                    pos += 8;
                    self.push_value(at, Value::Float(f64::from_be_bytes(a)))?;
                }
                // ---- strings and bytes
                0x8c => {
                    need!(start, 2);
                    let n = buf[pos] as usize;
                    need!(start, 2 + n);
                    pos += 1;
                    let v = self.string(at, &buf[pos..pos + n])?;
                    pos += n;
                    self.push_value(at, v)?;
                }
                b'X' => {
                    need!(start, 5);
                    let n = rd!(u32, 4) as u64;
                    let n = self.check_len(at, op, n)?;
                    need!(start, 5 + n);
                    let v = self.string(at, &buf[pos..pos + n])?;
                    pos += n;
                    self.push_value(at, v)?;
                }
                0x8d => {
                    need!(start, 9);
                    let n = rd!(u64, 8);
                    let n = self.check_len(at, op, n)?;
                    need!(start, 9 + n);
                    let v = self.string(at, &buf[pos..pos + n])?;
                    pos += n;
                    self.push_value(at, v)?;
                }
                b'C' | b'B' | 0x8e => {
                    let (hdr, n) = match op {
                        b'C' => {
                            need!(start, 2);
                            (2, buf[pos] as u64)
                        }
                        b'B' => {
                            need!(start, 5);
                            let mut a = [0u8; 4];
                            a.copy_from_slice(&buf[pos..pos + 4]);
                            (5, u32::from_le_bytes(a) as u64)
                        }
                        _ => {
                            need!(start, 9);
                            let mut a = [0u8; 8];
                            a.copy_from_slice(&buf[pos..pos + 8]);
                            (9, u64::from_le_bytes(a))
                        }
                    };
                    let n = self.check_len(at, op, n)?;
                    need!(start, hdr + n);
                    pos = start + hdr;
                    let id = self.atoms.add_bytes(&buf[pos..pos + n]);
                    pos += n;
                    self.push_value(at, Value::Bytes(id))?;
                }
                // ---- structure
                b'(' => {
                    if self.marks.len() >= self.limits.max_marks {
                        return Err(self.err(
                            at,
                            ErrorKind::Limit {
                                what: "nesting depth (open MARKs)",
                                limit: self.limits.max_marks as u64,
                            },
                        ));
                    }
                    self.marks.push(self.stack.len());
                }
                b'}' => {
                    let id = self
                        .builder
                        .new_dict(&self.atoms)
                        .map_err(|m| self.builder_err(at, m))?;
                    self.push_value(at, Value::Obj(id))?;
                }
                b']' => {
                    let id = self
                        .builder
                        .new_list(&self.atoms)
                        .map_err(|m| self.builder_err(at, m))?;
                    self.push_value(at, Value::Obj(id))?;
                }
                b')' => {
                    let id = self
                        .builder
                        .new_tuple(&[], &self.atoms)
                        .map_err(|m| self.builder_err(at, m))?;
                    self.push_value(at, Value::Obj(id))?;
                }
                b'u' => {
                    let m = self.pop_mark(at, op)?;
                    if m == 0 || m > self.stack.len() {
                        return Err(self.err(at, ErrorKind::StackUnderflow { opcode: "SETITEMS" }));
                    }
                    if !(self.stack.len() - m).is_multiple_of(2) {
                        return Err(self.err(
                            at,
                            ErrorKind::Type {
                                opcode: "SETITEMS",
                                expected: "key/value pairs",
                                found: "an odd number of items",
                            },
                        ));
                    }
                    let dict = self.stack[m - 1];
                    self.builder
                        .set_items(dict, &self.stack[m..], &self.atoms)
                        .map_err(|e| PickleError {
                            offset: at,
                            kind: ErrorKind::Builder(e),
                        })?;
                    self.stack.truncate(m);
                }
                b's' => {
                    let v = self.pop(at, op)?;
                    let k = self.pop(at, op)?;
                    let dict = self.top(at, op)?;
                    self.builder
                        .set_items(dict, &[k, v], &self.atoms)
                        .map_err(|m| self.builder_err(at, m))?;
                }
                b'e' => {
                    let m = self.pop_mark(at, op)?;
                    if m == 0 || m > self.stack.len() {
                        return Err(self.err(at, ErrorKind::StackUnderflow { opcode: "APPENDS" }));
                    }
                    let list = self.stack[m - 1];
                    self.builder
                        .extend_list(list, &self.stack[m..], &self.atoms)
                        .map_err(|e| PickleError {
                            offset: at,
                            kind: ErrorKind::Builder(e),
                        })?;
                    self.stack.truncate(m);
                }
                b'a' => {
                    let v = self.pop(at, op)?;
                    let list = self.top(at, op)?;
                    self.builder
                        .extend_list(list, &[v], &self.atoms)
                        .map_err(|m| self.builder_err(at, m))?;
                }
                0x85..=0x87 => {
                    let n = (op - 0x84) as usize;
                    if self.stack.len() < n {
                        return Err(self.err(
                            at,
                            ErrorKind::StackUnderflow {
                                opcode: opname!(op),
                            },
                        ));
                    }
                    let from = self.stack.len() - n;
                    let id = self
                        .builder
                        .new_tuple(&self.stack[from..], &self.atoms)
                        .map_err(|e| PickleError {
                            offset: at,
                            kind: ErrorKind::Builder(e),
                        })?;
                    self.stack.truncate(from);
                    self.stack.push(Value::Obj(id));
                }
                b't' | b'l' | b'd' => {
                    let m = self.pop_mark(at, op)?;
                    if m > self.stack.len() {
                        return Err(self.err(
                            at,
                            ErrorKind::StackUnderflow {
                                opcode: opname!(op),
                            },
                        ));
                    }
                    let id = match op {
                        b't' => self.builder.new_tuple(&self.stack[m..], &self.atoms),
                        b'l' => self.builder.new_list(&self.atoms).and_then(|id| {
                            self.builder
                                .extend_list(Value::Obj(id), &self.stack[m..], &self.atoms)
                                .map(|_| id)
                        }),
                        _ => {
                            if !(self.stack.len() - m).is_multiple_of(2) {
                                return Err(self.err(
                                    at,
                                    ErrorKind::Type {
                                        opcode: "DICT",
                                        expected: "key/value pairs",
                                        found: "an odd number of items",
                                    },
                                ));
                            }
                            self.builder.new_dict(&self.atoms).and_then(|id| {
                                self.builder
                                    .set_items(Value::Obj(id), &self.stack[m..], &self.atoms)
                                    .map(|_| id)
                            })
                        }
                    }
                    .map_err(|e| PickleError {
                        offset: at,
                        kind: ErrorKind::Builder(e),
                    })?;
                    self.stack.truncate(m);
                    self.stack.push(Value::Obj(id));
                }
                b'0' => {
                    // POP
                    self.pop(at, op)?;
                }
                b'1' => {
                    // POP_MARK
                    let m = self.pop_mark(at, op)?;
                    self.stack.truncate(m);
                }
                b'2' => {
                    // DUP
                    let v = self.top(at, op)?;
                    self.push_value(at, v)?;
                }
                // ---- framing
                0x80 => {
                    need!(start, 2);
                    let p = rd_u8!();
                    if !(2..=5).contains(&p) {
                        return Err(self.err(at, ErrorKind::UnsupportedProtocol(p)));
                    }
                    self.protocol = p;
                }
                0x95 => {
                    // FRAME: a length hint; frames need no special handling in a streaming reader.
                    need!(start, 9);
                    pos += 8;
                }
                b'.' => {
                    let v = self
                        .stack
                        .pop()
                        .ok_or_else(|| self.err(at, ErrorKind::EmptyStop))?;
                    self.state = State::Done(v);
                    self.offset = base + pos as u64;
                    self.stack = Vec::new();
                    self.memo = Memo::default();
                    return Ok(Step::Stopped);
                }
                // ---- refused: would import or execute code
                b'c' => {
                    // GLOBAL "module\nname\n": name the target in the message. Look for both
                    // lines in a fixed window after the opcode (waiting for more input until the
                    // window is there), so the message never depends on chunking.
                    const WINDOW: usize = 256;
                    let avail = &buf[pos..buf.len().min(pos + WINDOW)];
                    let mut lines = avail.splitn(3, |&b| b == b'\n');
                    let target = match (lines.next(), lines.next(), lines.next()) {
                        (Some(m), Some(n), Some(_)) => {
                            Some(format!("{}.{}", printable(m), printable(n)))
                        }
                        _ if avail.len() < WINDOW => {
                            need!(start, 1 + WINDOW);
                            None
                        }
                        _ => None,
                    };
                    return Err(self.err(
                        at,
                        ErrorKind::Refused {
                            opcode: "GLOBAL",
                            target,
                        },
                    ));
                }
                0x93 => {
                    let n = self.stack.len();
                    let target = if n >= 2 {
                        match (self.stack[n - 2], self.stack[n - 1]) {
                            (Value::Str(m), Value::Str(c)) => Some(format!(
                                "{}.{}",
                                printable(self.atoms.str(m).as_bytes()),
                                printable(self.atoms.str(c).as_bytes())
                            )),
                            _ => None,
                        }
                    } else {
                        None
                    };
                    return Err(self.err(
                        at,
                        ErrorKind::Refused {
                            opcode: "STACK_GLOBAL",
                            target,
                        },
                    ));
                }
                b'R' | b'b' | 0x81 | 0x92 | b'i' | b'o' | 0x82 | 0x83 | 0x84 | b'P' | b'Q' => {
                    return Err(self.err(
                        at,
                        ErrorKind::Refused {
                            opcode: opname!(op),
                            target: None,
                        },
                    ));
                }
                b'I' | b'L' | b'F' | b'S' | b'V' | b'T' | b'U' | b'p' | b'g' | 0x8f | 0x90
                | 0x91 | 0x96 | 0x97 | 0x98 => {
                    return Err(self.err(
                        at,
                        ErrorKind::Unsupported {
                            opcode: opname!(op),
                        },
                    ));
                }
                other => return Err(self.err(at, ErrorKind::UnknownOpcode(other))),
            }
        }
        self.offset = base + pos as u64;
        Ok(Step::NeedMore(pos))
    }

    fn long(&mut self, bytes: &[u8]) -> Value {
        if bytes.len() <= 8 {
            if bytes.is_empty() {
                return Value::Int(0);
            }
            let negative = bytes[bytes.len() - 1] & 0x80 != 0;
            let mut a = if negative { [0xffu8; 8] } else { [0u8; 8] };
            a[..bytes.len()].copy_from_slice(bytes);
            return Value::Int(i64::from_le_bytes(a));
        }
        match le_to_i128(bytes) {
            Some(v) if i64::try_from(v).is_ok() => Value::Int(v as i64),
            _ => Value::BigInt(self.atoms.add_big_int(bytes)),
        }
    }
}

/// The memo: one `u32` per slot, as it holds an entry for nearly every container and string of
/// the file (26 M slots for a 2 GB snapshot: 105 MB saved over `u64` slots). A slot packs a tag
/// in the low 3 bits and the payload above (ids below 2^29, integers of up to 28 bits plus
/// sign); other values (floats, wider integers, larger ids) go to `wide` and the slot holds
/// their index.
#[derive(Default)]
struct Memo {
    slots: Vec<u32>,
    wide: Vec<Value>,
}

const M_UNSET: u32 = 0;
const M_NONE: u32 = 1;
const M_FALSE: u32 = 2;
const M_TRUE: u32 = 3;
const M_INT: u32 = 4;
const M_STR: u32 = 5;
const M_OBJ: u32 = 6;
const M_WIDE: u32 = 7;
const M_PAYLOAD: u32 = 1 << 29;

impl Memo {
    fn len(&self) -> usize {
        self.slots.len()
    }

    fn reserve(&mut self, n: usize) {
        let _ = self.slots.try_reserve_exact(n);
    }

    fn encode(&mut self, v: Value) -> u32 {
        const SMALL: i64 = 1 << 28;
        match v {
            Value::None => M_NONE,
            Value::Bool(false) => M_FALSE,
            Value::Bool(true) => M_TRUE,
            Value::Int(i) if (-SMALL..SMALL).contains(&i) => ((i as u32) << 3) | M_INT,
            Value::Str(s) if s.0 < M_PAYLOAD => (s.0 << 3) | M_STR,
            Value::Obj(o) if o.0 < M_PAYLOAD => (o.0 << 3) | M_OBJ,
            other => match u32::try_from(self.wide.len()) {
                Ok(w) if w < M_PAYLOAD => {
                    self.wide.push(other);
                    (w << 3) | M_WIDE
                }
                // More than 2^29 wide values: the slot reads as unset (a BadMemo error on get),
                // never a wrong value.
                _ => M_UNSET,
            },
        }
    }

    #[inline]
    fn get(&self, i: usize) -> Option<Value> {
        let slot = *self.slots.get(i)?;
        let payload = slot >> 3;
        // The common cases first, as plain branches: a jump table here mispredicts when memo
        // gets alternate between keys (strings) and containers.
        let tag = slot & 7;
        if tag == M_OBJ {
            return Some(Value::Obj(ObjId(payload)));
        }
        if tag == M_STR {
            return Some(Value::Str(crate::StrId(payload)));
        }
        Some(match tag {
            M_NONE => Value::None,
            M_FALSE => Value::Bool(false),
            M_TRUE => Value::Bool(true),
            M_INT => Value::Int(((slot as i32) >> 3) as i64),
            M_WIDE => return self.wide.get(payload as usize).copied(),
            _ => return None,
        })
    }

    fn push(&mut self, v: Value) {
        let e = self.encode(v);
        self.slots.push(e);
    }

    fn set(&mut self, i: usize, v: Value) {
        let e = self.encode(v);
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = e;
        }
    }

    fn fill_unset_to(&mut self, len: usize) {
        self.slots.resize(len.max(self.slots.len()), M_UNSET);
    }
}

/// At most 100 characters of `b` for a message, with control characters escaped.
fn printable(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let mut out: String = s.chars().take(100).flat_map(|c| c.escape_debug()).collect();
    if s.chars().count() > 100 {
        out.push('…');
    }
    out
}

/// The pickle name of an opcode byte, for messages.
pub fn opcode_name(op: u8) -> &'static str {
    match op {
        b'(' => "MARK",
        b'.' => "STOP",
        b'0' => "POP",
        b'1' => "POP_MARK",
        b'2' => "DUP",
        b'F' => "FLOAT",
        b'I' => "INT",
        b'J' => "BININT",
        b'K' => "BININT1",
        b'L' => "LONG",
        b'M' => "BININT2",
        b'N' => "NONE",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        b'R' => "REDUCE",
        b'S' => "STRING",
        b'T' => "BINSTRING",
        b'U' => "SHORT_BINSTRING",
        b'V' => "UNICODE",
        b'X' => "BINUNICODE",
        b'a' => "APPEND",
        b'b' => "BUILD",
        b'c' => "GLOBAL",
        b'd' => "DICT",
        b'}' => "EMPTY_DICT",
        b'e' => "APPENDS",
        b'g' => "GET",
        b'h' => "BINGET",
        b'i' => "INST",
        b'j' => "LONG_BINGET",
        b'l' => "LIST",
        b']' => "EMPTY_LIST",
        b'o' => "OBJ",
        b'p' => "PUT",
        b'q' => "BINPUT",
        b'r' => "LONG_BINPUT",
        b's' => "SETITEM",
        b't' => "TUPLE",
        b')' => "EMPTY_TUPLE",
        b'u' => "SETITEMS",
        b'G' => "BINFLOAT",
        b'B' => "BINBYTES",
        b'C' => "SHORT_BINBYTES",
        0x80 => "PROTO",
        0x81 => "NEWOBJ",
        0x82 => "EXT1",
        0x83 => "EXT2",
        0x84 => "EXT4",
        0x85 => "TUPLE1",
        0x86 => "TUPLE2",
        0x87 => "TUPLE3",
        0x88 => "NEWTRUE",
        0x89 => "NEWFALSE",
        0x8a => "LONG1",
        0x8b => "LONG4",
        0x8c => "SHORT_BINUNICODE",
        0x8d => "BINUNICODE8",
        0x8e => "BINBYTES8",
        0x8f => "EMPTY_SET",
        0x90 => "ADDITEMS",
        0x91 => "FROZENSET",
        0x92 => "NEWOBJ_EX",
        0x93 => "STACK_GLOBAL",
        0x94 => "MEMOIZE",
        0x95 => "FRAME",
        0x96 => "BYTEARRAY8",
        0x97 => "NEXT_BUFFER",
        0x98 => "READONLY_BUFFER",
        _ => "unknown opcode",
    }
}

#[cfg(test)]
mod memo_tests {
    use super::*;

    #[test]
    fn memo_slots_round_trip() {
        let mut m = Memo::default();
        let vals = [
            Value::None,
            Value::Bool(true),
            Value::Bool(false),
            Value::Int(0),
            Value::Int(-1),
            Value::Int((1 << 28) - 1),
            Value::Int(-(1 << 28)),
            Value::Int(1 << 28),
            Value::Int(i64::MIN),
            Value::Float(1.5),
            Value::Str(crate::StrId(7)),
            Value::Str(crate::StrId(u32::MAX)),
            Value::Obj(ObjId((1 << 29) - 1)),
            Value::Obj(ObjId(1 << 29)),
        ];
        for v in vals {
            m.push(v);
        }
        for (i, v) in vals.iter().enumerate() {
            assert_eq!(m.get(i), Some(*v), "{v:?}");
        }
    }
}
