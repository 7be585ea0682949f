//! The push-based pickle VM: the [`Unpickler`], its limits and the helpers its opcode loop
//! ([`run`]) uses; the memo in [`memo`], the opcodes by name in [`op`], excerpts for messages
//! in [`names`].

mod memo;
mod names;
mod op;

use crate::error::{BuildError, ErrorKind, PickleError};
use crate::intern::Atoms;
use crate::value::{ObjId, Value};
use memo::Memo;
use names::printable;

/// Creates and fills containers for the VM. The VM never looks inside a container; it only keeps
/// the handle. Errors are a [`BuildError`] (a message and what it says about the input); the VM
/// adds the byte offset.
pub trait Builder {
    fn new_list(&mut self, atoms: &Atoms) -> Result<ObjId, BuildError>;
    fn new_dict(&mut self, atoms: &Atoms) -> Result<ObjId, BuildError>;
    fn new_tuple(&mut self, items: &[Value], atoms: &Atoms) -> Result<ObjId, BuildError>;
    /// APPEND / APPENDS / LIST: `items` go at the end of `list`.
    fn extend_list(
        &mut self,
        list: Value,
        items: &[Value],
        atoms: &Atoms,
    ) -> Result<(), BuildError>;
    /// SETITEM / SETITEMS / DICT: `pairs` is `[k0, v0, k1, v1, …]`.
    fn set_items(&mut self, dict: Value, pairs: &[Value], atoms: &Atoms) -> Result<(), BuildError>;
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
        op::name($op)
    };
}

// After `opname!`, which it uses.
mod run;

impl<B: Builder> Unpickler<B> {
    pub fn new(builder: B) -> Self {
        Self::with_atoms(builder, Atoms::new(), Limits::default())
    }

    /// Start with pre-interned atoms (so a builder can know the ids of the keys it cares about).
    pub fn with_atoms(builder: B, atoms: Atoms, limits: Limits) -> Self {
        Unpickler {
            builder,
            atoms,
            // Never more room than `max_stack`: a value fits while `len < capacity`.
            stack: Vec::with_capacity(1024.min(limits.max_stack)),
            marks: Vec::with_capacity(64),
            memo: Memo::default(),
            carry: Vec::new(),
            offset: 0,
            state: State::Start,
            limits,
            protocol: 0,
        }
    }

    /// Reserve room for `memo_slots` memo entries up front (their chunks' words: growing a
    /// large table step by step copies it each time, which wasm cannot avoid).
    pub fn reserve_memo(&mut self, memo_slots: usize) {
        self.memo.reserve(memo_slots.min(self.limits.max_memo));
    }

    /// `done` of `total` input bytes were read: when the memo is nearly full, size it for the
    /// rest of the input at the rate so far (plus 5 %, and at least a sixteenth more) instead
    /// of letting it double.
    pub fn grow_memo_for(&mut self, done: u64, total: u64) {
        let (len, cap) = (self.memo.len(), self.memo.capacity());
        if done == 0 || total <= done || len < cap - cap / 10 {
            return;
        }
        let left = (total - done) as f64 / done as f64 * 1.05;
        let want = len + (len as f64 * left) as usize + 4096;
        if want > cap {
            let want = want.max(cap + cap / 16).min(self.limits.max_memo);
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
                let inside = self.carry.first().map(|&b| op::name(b));
                Err(PickleError {
                    offset: self.offset,
                    kind: ErrorKind::Truncated { inside },
                })
            }
        }
    }

    pub(super) fn err(&self, at: u64, kind: ErrorKind) -> PickleError {
        PickleError { offset: at, kind }
    }

    pub(super) fn pop(&mut self, at: u64, op: u8) -> Result<Value, PickleError> {
        self.stack.pop().ok_or_else(|| {
            self.err(
                at,
                ErrorKind::StackUnderflow {
                    opcode: opname!(op),
                },
            )
        })
    }

    pub(super) fn top(&self, at: u64, op: u8) -> Result<Value, PickleError> {
        self.stack.last().copied().ok_or_else(|| {
            self.err(
                at,
                ErrorKind::StackUnderflow {
                    opcode: opname!(op),
                },
            )
        })
    }

    #[inline]
    pub(super) fn push_value(&mut self, at: u64, v: Value) -> Result<(), PickleError> {
        if self.stack.len() == self.stack.capacity() {
            self.grow_stack(at)?;
        }
        self.stack.push(v);
        Ok(())
    }

    /// Room for more values on the stack, fallibly: double it (never past `max_stack`, so the
    /// capacity is the limit), or fail with an error instead of aborting when the limit is
    /// reached or the memory is not there.
    #[cold]
    #[inline(never)]
    pub(super) fn grow_stack(&mut self, at: u64) -> Result<(), PickleError> {
        let len = self.stack.len();
        if len >= self.limits.max_stack {
            return Err(self.err(
                at,
                ErrorKind::Limit {
                    what: "values on the stack",
                    limit: self.limits.max_stack as u64,
                },
            ));
        }
        let more = len
            .max(1024)
            .min(self.limits.max_stack.saturating_sub(len))
            .max(1);
        self.stack.try_reserve_exact(more).map_err(|_| {
            self.err(
                at,
                ErrorKind::OutOfMemory {
                    what: "the pickle's value stack",
                    bytes: (len + more) as u64 * std::mem::size_of::<Value>() as u64,
                },
            )
        })
    }

    pub(super) fn pop_mark(&mut self, at: u64, op: u8) -> Result<usize, PickleError> {
        self.marks.pop().ok_or_else(|| {
            self.err(
                at,
                ErrorKind::NoMark {
                    opcode: opname!(op),
                },
            )
        })
    }

    pub(super) fn memo_put(&mut self, at: u64, index: u64, v: Value) -> Result<(), PickleError> {
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
            if !self.memo.set(idx, v) {
                return Err(self.memo_oom(at));
            }
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
            if !(self.memo.fill_unset_to(idx) && self.memo.push(v)) {
                return Err(self.memo_oom(at));
            }
        }
        Ok(())
    }

    /// The error for a memo that cannot grow.
    #[cold]
    pub(super) fn memo_oom(&self, at: u64) -> PickleError {
        self.err(
            at,
            ErrorKind::OutOfMemory {
                what: "the pickle's memo",
                bytes: self.memo.len() as u64 * 4,
            },
        )
    }

    pub(super) fn memo_get(&mut self, at: u64, index: u64) -> Result<(), PickleError> {
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

    pub(super) fn builder_err(&self, at: u64, e: BuildError) -> PickleError {
        self.err(at, ErrorKind::Builder(e))
    }

    pub(super) fn string(&mut self, at: u64, raw: &[u8]) -> Result<Value, PickleError> {
        let s = match std::str::from_utf8(raw) {
            Ok(s) => self.atoms.strings.try_intern(s),
            // Python writes lone surrogates with 'surrogatepass'; keep the text, replace the bad bytes.
            Err(_) => {
                let lossy = String::from_utf8_lossy(raw);
                self.atoms.strings.try_intern(&lossy)
            }
        };
        match s {
            Some(s) => Ok(Value::Str(s)),
            None => Err(self.err(
                at,
                ErrorKind::OutOfMemory {
                    what: "the table of the file's strings",
                    bytes: self.atoms.strings.heap_bytes() as u64,
                },
            )),
        }
    }

    pub(super) fn check_len(&self, at: u64, op: u8, len: u64) -> Result<usize, PickleError> {
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
}
