//! The opcodes that snapshots use rarely or never, and the refused ones: [`Unpickler::run_cold`],
//! out of the hot loop in `run/mod.rs`.

use super::*;

/// What [`Unpickler::run_cold`] did with its opcode.
pub(super) enum Cold {
    /// Decoded: go on at this position.
    Next(usize),
    /// Cut by the end of the buffer.
    NeedMore,
    /// STOP.
    Stopped,
}

impl<B: Builder> Unpickler<B> {
    /// The opcodes that snapshots use rarely or never (and the refused ones), out of the hot
    /// loop: a smaller loop is compiled better, by the wasm engine above all.
    #[inline(never)]
    pub(super) fn run_cold(&mut self, buf: &[u8], start: usize) -> Result<Cold, PickleError> {
        let base = self.offset;
        let at = base + start as u64;
        let op = buf[start];
        let mut pos = start + 1;
        macro_rules! need {
            ($start:expr, $n:expr) => {
                if buf.len() - $start < $n {
                    return Ok(Cold::NeedMore);
                }
            };
        }
        match op {
            op::BINPUT => {
                need!(start, 2);
                let i = rd_u8!(buf, pos);
                let v = self.top(at, op)?;
                self.memo_put(at, i as u64, v)?;
            }
            op::LONG_BINPUT => {
                need!(start, 5);
                let i = rd!(buf, pos, u32, 4);
                let v = self.top(at, op)?;
                self.memo_put(at, i as u64, v)?;
            }
            op::EMPTY_TUPLE => {
                let id = self
                    .builder
                    .new_tuple(&[], &self.atoms)
                    .map_err(|m| self.builder_err(at, m))?;
                self.push_value(at, Value::Obj(id))?;
            }
            op::SETITEM => {
                let v = self.pop(at, op)?;
                let k = self.pop(at, op)?;
                let dict = self.top(at, op)?;
                self.builder
                    .set_items(dict, &[k, v], &self.atoms)
                    .map_err(|m| self.builder_err(at, m))?;
            }
            op::APPEND => {
                let v = self.pop(at, op)?;
                let list = self.top(at, op)?;
                self.builder
                    .extend_list(list, &[v], &self.atoms)
                    .map_err(|m| self.builder_err(at, m))?;
            }
            op::TUPLE1..=op::TUPLE3 => {
                let n = (op - op::TUPLE1) as usize + 1;
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
                self.push_value(at, Value::Obj(id))?;
            }
            op::LONG4 => {
                need!(start, 5);
                let n = rd!(buf, pos, i32, 4);
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
            op::BINFLOAT => {
                need!(start, 9);
                let mut a = [0u8; 8];
                a.copy_from_slice(&buf[pos..pos + 8]);
                pos += 8;
                self.push_value(at, Value::Float(f64::from_be_bytes(a)))?;
            }
            op::BINUNICODE8 => {
                need!(start, 9);
                let n = rd!(buf, pos, u64, 8);
                let n = self.check_len(at, op, n)?;
                need!(start, 9 + n);
                let v = self.string(at, &buf[pos..pos + n])?;
                pos += n;
                self.push_value(at, v)?;
            }
            op::SHORT_BINBYTES | op::BINBYTES | op::BINBYTES8 => {
                let (hdr, n) = match op {
                    op::SHORT_BINBYTES => {
                        need!(start, 2);
                        (2, buf[pos] as u64)
                    }
                    op::BINBYTES => {
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
            op::TUPLE | op::LIST | op::DICT => {
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
                    op::TUPLE => self.builder.new_tuple(&self.stack[m..], &self.atoms),
                    op::LIST => self.builder.new_list(&self.atoms).and_then(|id| {
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
                self.push_value(at, Value::Obj(id))?;
            }
            op::POP => {
                self.pop(at, op)?;
            }
            op::POP_MARK => {
                let m = self.pop_mark(at, op)?;
                self.stack.truncate(m);
            }
            op::DUP => {
                let v = self.top(at, op)?;
                self.push_value(at, v)?;
            }
            // ---- framing
            op::PROTO => {
                need!(start, 2);
                let p = rd_u8!(buf, pos);
                if !(2..=5).contains(&p) {
                    return Err(self.err(at, ErrorKind::UnsupportedProtocol(p)));
                }
                self.protocol = p;
            }
            op::FRAME => {
                // FRAME: a length hint; frames need no special handling in a streaming reader.
                need!(start, 9);
                pos += 8;
            }
            op::STOP => {
                let v = self
                    .stack
                    .pop()
                    .ok_or_else(|| self.err(at, ErrorKind::EmptyStop))?;
                self.state = State::Done(v);
                self.offset = base + pos as u64;
                self.stack = Vec::new();
                self.memo = Memo::default();
                return Ok(Cold::Stopped);
            }
            // ---- refused: would import or execute code
            op::GLOBAL => {
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
            op::STACK_GLOBAL => {
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
            op::REDUCE
            | op::BUILD
            | op::NEWOBJ
            | op::NEWOBJ_EX
            | op::INST
            | op::OBJ
            | op::EXT1
            | op::EXT2
            | op::EXT4
            | op::PERSID
            | op::BINPERSID => {
                return Err(self.err(
                    at,
                    ErrorKind::Refused {
                        opcode: opname!(op),
                        target: None,
                    },
                ));
            }
            op::INT
            | op::LONG
            | op::FLOAT
            | op::STRING
            | op::UNICODE
            | op::BINSTRING
            | op::SHORT_BINSTRING
            | op::PUT
            | op::GET
            | op::EMPTY_SET
            | op::ADDITEMS
            | op::FROZENSET
            | op::BYTEARRAY8
            | op::NEXT_BUFFER
            | op::READONLY_BUFFER => {
                return Err(self.err(
                    at,
                    ErrorKind::Unsupported {
                        opcode: opname!(op),
                    },
                ));
            }
            other => return Err(self.err(at, ErrorKind::UnknownOpcode(other))),
        }
        Ok(Cold::Next(pos))
    }
}
