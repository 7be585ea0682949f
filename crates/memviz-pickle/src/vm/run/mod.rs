//! The opcode loop: decodes as many whole opcodes of a buffer as it can (the hot opcodes
//! here, the rest in [`cold`]).

// The readers both the hot loop and the cold opcodes use: the caller's `need!` has checked
// that the bytes are there.
macro_rules! rd_u8 {
    ($buf:ident, $pos:ident) => {{
        let v = $buf[$pos];
        $pos += 1;
        v
    }};
}
macro_rules! rd {
    ($buf:ident, $pos:ident, $ty:ty, $n:expr) => {{
        let mut a = [0u8; $n];
        a.copy_from_slice(&$buf[$pos..$pos + $n]);
        $pos += $n;
        <$ty>::from_le_bytes(a)
    }};
}

mod cold;

use super::*;
use crate::intern::le_to_i128;
use cold::Cold;

impl<B: Builder> Unpickler<B> {
    /// Decode as many whole opcodes from `buf` as possible.
    pub(super) fn run(&mut self, buf: &[u8]) -> Result<Step, PickleError> {
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
        if matches!(self.state, State::Start) {
            need!(0, 1);
            if buf[0] != op::PROTO {
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
                op::LONG_BINGET | op::BINGET => {
                    // Memo gets come in long runs (a traceback is ~35 of them): decode the whole
                    // run here so the opcode dispatch stays predictable.
                    let mut op_at = start;
                    loop {
                        let len = if buf[op_at] == op::LONG_BINGET { 5 } else { 2 };
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
                            // The capacity never exceeds `max_stack` (see `grow_stack`).
                            Some(v) if self.stack.len() < self.stack.capacity() => {
                                self.stack.push(v)
                            }
                            _ => {
                                self.memo_get(base + op_at as u64, i as u64)?;
                            }
                        }
                        op_at += len;
                        if op_at >= buf.len() || !matches!(buf[op_at], op::LONG_BINGET | op::BINGET)
                        {
                            break;
                        }
                    }
                    if op_at == start {
                        need!(start, if op == op::LONG_BINGET { 5 } else { 2 });
                    }
                    pos = op_at;
                }
                op::MEMOIZE => {
                    // The next slot, always.
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
                    if !self.memo.push(v) {
                        return Err(self.memo_oom(at));
                    }
                }
                // ---- ints
                op::BININT1 => {
                    need!(start, 2);
                    let v = rd_u8!(buf, pos);
                    self.push_value(at, Value::Int(v as i64))?;
                }
                op::BININT2 => {
                    need!(start, 3);
                    let v = rd!(buf, pos, u16, 2);
                    self.push_value(at, Value::Int(v as i64))?;
                }
                op::BININT => {
                    need!(start, 5);
                    let v = rd!(buf, pos, i32, 4);
                    self.push_value(at, Value::Int(v as i64))?;
                }
                op::LONG1 => {
                    need!(start, 2);
                    let n = buf[pos] as usize;
                    need!(start, 2 + n);
                    pos += 1;
                    let v = match buf.get(pos..pos + 8).map(<[u8; 8]>::try_from) {
                        Some(Ok(w)) if (1..=8).contains(&n) => {
                            // Eight bytes at once (the n of the integer and what follows), the
                            // n low ones kept and sign-extended: copying n bytes was a memcpy
                            // call and a stalled reload (11 % of the VM's time).
                            let shift = 64 - 8 * n as u32;
                            Value::Int(((u64::from_le_bytes(w) << shift) as i64) >> shift)
                        }
                        _ => self.long(&buf[pos..pos + n]),
                    };
                    pos += n;
                    self.push_value(at, v)?;
                }
                op::NEWTRUE => self.push_value(at, Value::Bool(true))?,
                op::NEWFALSE => self.push_value(at, Value::Bool(false))?,
                op::NONE => self.push_value(at, Value::None)?,
                // ---- strings and bytes
                op::SHORT_BINUNICODE => {
                    need!(start, 2);
                    let n = buf[pos] as usize;
                    need!(start, 2 + n);
                    pos += 1;
                    let v = self.string(at, &buf[pos..pos + n])?;
                    pos += n;
                    self.push_value(at, v)?;
                    if let Value::Str(id) = v {
                        pos += self.memoize_next_str(buf, pos, id);
                    }
                }
                op::BINUNICODE => {
                    need!(start, 5);
                    let n = rd!(buf, pos, u32, 4) as u64;
                    let n = self.check_len(at, op, n)?;
                    need!(start, 5 + n);
                    let v = self.string(at, &buf[pos..pos + n])?;
                    pos += n;
                    self.push_value(at, v)?;
                    if let Value::Str(id) = v {
                        pos += self.memoize_next_str(buf, pos, id);
                    }
                }
                // ---- structure
                op::MARK => {
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
                op::EMPTY_DICT => {
                    let id = self
                        .builder
                        .new_dict(&self.atoms)
                        .map_err(|m| self.builder_err(at, m))?;
                    self.push_value(at, Value::Obj(id))?;
                    pos += self.memoize_next_obj(buf, pos, id);
                }
                op::EMPTY_LIST => {
                    let id = self
                        .builder
                        .new_list(&self.atoms)
                        .map_err(|m| self.builder_err(at, m))?;
                    self.push_value(at, Value::Obj(id))?;
                    pos += self.memoize_next_obj(buf, pos, id);
                }
                op::SETITEMS => {
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
                op::APPENDS => {
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
                _ => match self.run_cold(buf, start)? {
                    Cold::Next(p) => pos = p,
                    Cold::NeedMore => {
                        self.offset = base + start as u64;
                        return Ok(Step::NeedMore(start));
                    }
                    Cold::Stopped => return Ok(Step::Stopped),
                },
            }
        }
        self.offset = base + pos as u64;
        Ok(Step::NeedMore(pos))
    }

    /// Bytes of the opcode at `pos` when it memoizes the value just pushed into the next free
    /// slot (MEMOIZE, or BINPUT / LONG_BINPUT of that index), else None.
    #[inline]
    fn memoizes_next(&self, buf: &[u8], pos: usize) -> Option<usize> {
        let len = self.memo.len();
        if len >= self.limits.max_memo {
            return None;
        }
        match *buf.get(pos)? {
            op::MEMOIZE => Some(1),
            op::BINPUT => (*buf.get(pos + 1)? as usize == len).then_some(2),
            op::LONG_BINPUT => {
                let w = <[u8; 4]>::try_from(buf.get(pos + 1..pos + 5)?).ok()?;
                (u32::from_le_bytes(w) as usize == len).then_some(5)
            }
            _ => None,
        }
    }

    /// When the opcode at `pos` memoizes container `id` (just pushed) into the next slot, do it
    /// here and return the bytes it took; else 0. Reading the value back from the stack right
    /// after pushing it stalled on store forwarding (a sixth of the VM's time on a trace of
    /// entry dicts), and a `Value` passed on to the memo went through memory in wasm.
    #[inline]
    fn memoize_next_obj(&mut self, buf: &[u8], pos: usize, id: ObjId) -> usize {
        match self.memoizes_next(buf, pos) {
            // When the memo cannot grow, the opcode is left to the loop (which fails there).
            Some(n) if self.memo.push_obj(id) => n,
            _ => 0,
        }
    }

    /// [`Self::memoize_next_obj`] for a string.
    #[inline]
    fn memoize_next_str(&mut self, buf: &[u8], pos: usize, id: crate::StrId) -> usize {
        match self.memoizes_next(buf, pos) {
            Some(n) if self.memo.push_str(id) => n,
            _ => 0,
        }
    }

    pub(super) fn long(&mut self, bytes: &[u8]) -> Value {
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
