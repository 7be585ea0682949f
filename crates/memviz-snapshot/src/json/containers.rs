//! The open containers: values and keys onto the value stack, `[` and `{`, batches given to
//! the builder, and closing (made, or found as a frame or frame list read before).

use super::reader::{build_err, err, Expect, JsonReader, Open, BATCH};
use super::JsonError;
use super::JsonErrorKind;
use memviz_pickle::{BuildError, Builder, ObjId, StrId, Value};

impl<B: Builder> JsonReader<B> {
    /// Room for one more value on the value stack, fallibly and within the limit.
    #[inline]
    pub(super) fn push_val(&mut self, v: Value, at: usize) -> Result<(), JsonError> {
        if self.vals.len() == self.vals.capacity() {
            self.grow_vals(at)?;
        }
        self.vals.push(v);
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn grow_vals(&mut self, at: usize) -> Result<(), JsonError> {
        let len = self.vals.len();
        let max = self.limits.max_stack;
        if len >= max {
            return Err(err(
                self.offset + at as u64,
                JsonErrorKind::Limit,
                format!("values held at once ({max}) exceed the limit"),
            ));
        }
        let more = len.max(1024).min(max - len);
        self.vals.try_reserve_exact(more).map_err(|_| {
            err(
                self.offset + at as u64,
                JsonErrorKind::OutOfMemory,
                format!(
                    "out of memory: the JSON reader's values need more than {} bytes and the \
                     system has no more to give (the file is too large for the memory available)",
                    (len + more) * std::mem::size_of::<Value>()
                ),
            )
        })
    }

    /// A value for the open container (after its key, in an object).
    #[inline]
    pub(super) fn value(&mut self, v: Value, frame: bool, at: usize) -> Result<(), JsonError> {
        let Some(&top) = self.stack.last() else {
            return Err(err(
                self.offset + at as u64,
                JsonErrorKind::Syntax,
                "a value outside the top-level object or array",
            ));
        };
        let frames = if top.object {
            top.frames && matches!(v, Value::Str(_) | Value::Int(_))
        } else {
            if self.vals.len() - top.start >= BATCH {
                self.flush(at)?;
            }
            top.frames && frame
        };
        self.push_val(v, at)?;
        if let Some(t) = self.stack.last_mut() {
            t.frames = frames;
            t.items += 1;
        }
        self.expect = Expect::CommaOrClose;
        Ok(())
    }

    /// A key for the open object.
    #[inline]
    pub(super) fn key(&mut self, k: StrId, at: usize) -> Result<(), JsonError> {
        let Some(&top) = self.stack.last() else {
            return Ok(());
        };
        if self.vals.len() - top.start >= 2 * BATCH {
            self.flush(at)?;
        }
        let frames = top.frames && self.dedupe.is_frame_key(k);
        self.push_val(Value::Str(k), at)?;
        if let Some(t) = self.stack.last_mut() {
            t.frames = frames;
        }
        self.expect = Expect::Colon;
        Ok(())
    }

    /// `{` or `[`.
    pub(super) fn open(&mut self, object: bool, at: usize) -> Result<(), JsonError> {
        let max = self.limits.max_marks;
        if self.stack.len() >= max {
            return Err(err(
                self.offset + at as u64,
                JsonErrorKind::Limit,
                format!(
                    "the JSON nests deeper than {max} levels, which exceeds the limit (memory \
                     snapshots nest fewer than 10)"
                ),
            ));
        }
        if self.stack.len() == self.stack.capacity() && self.stack.try_reserve(16).is_err() {
            return Err(err(
                self.offset + at as u64,
                JsonErrorKind::OutOfMemory,
                "out of memory: the JSON reader's open containers",
            ));
        }
        self.stack.push(Open {
            obj: None,
            start: self.vals.len(),
            object,
            frames: true,
            items: 0,
            raw_at: None,
        });
        self.expect = if object {
            Expect::KeyOrClose
        } else {
            Expect::ValueOrClose
        };
        Ok(())
    }

    /// The open container outgrew a batch: make it (once) and give it the items buffered.
    pub(super) fn flush(&mut self, at: usize) -> Result<(), JsonError> {
        let Some(&top) = self.stack.last() else {
            return Ok(());
        };
        let offset = self.offset + at as u64;
        let obj = match top.obj {
            Some(o) => o,
            None => {
                let o = if top.object {
                    self.builder.new_dict(&self.atoms)
                } else {
                    self.builder.new_list(&self.atoms)
                }
                .map_err(|e| build_err(offset, e))?;
                if let Some(t) = self.stack.last_mut() {
                    t.obj = Some(o);
                }
                o
            }
        };
        let items = self.vals.get(top.start..).unwrap_or(&[]);
        if top.object {
            self.builder.set_items(Value::Obj(obj), items, &self.atoms)
        } else {
            self.builder
                .extend_list(Value::Obj(obj), items, &self.atoms)
        }
        .map_err(|e| build_err(offset, e))?;
        self.vals.truncate(top.start);
        Ok(())
    }

    /// `]` at `at` in `buf`: the open array closes; a frame list whose `[` is in `buf` too
    /// is stored by its text (`raw.rs`).
    pub(super) fn close_list(&mut self, buf: &[u8], at: usize) -> Result<(), JsonError> {
        let from = match self.stack.last().and_then(|o| o.raw_at) {
            Some((serial, from)) if serial == self.serial => Some(from),
            _ => None,
        };
        if let (Some(id), Some(from)) = (self.close(at)?, from) {
            self.raw.store(buf.get(from..=at).unwrap_or(&[]), id);
        }
        Ok(())
    }

    /// `}` or `]` at `at`: the open container is made (or found, for a frame) and becomes a
    /// value of its parent, or the top-level value. A frame list (made or found by its frames)
    /// is returned.
    pub(super) fn close(&mut self, at: usize) -> Result<Option<ObjId>, JsonError> {
        let offset = self.offset + at as u64;
        let Some(open) = self.stack.pop() else {
            return Err(err(
                offset,
                JsonErrorKind::Syntax,
                "a closing bracket with nothing open",
            ));
        };
        let (id, frame) = self.make(open).map_err(|e| match e {
            Made::Build(e) => build_err(offset, e),
            Made::Memory => err(
                offset,
                JsonErrorKind::OutOfMemory,
                "out of memory: the table of shared frames and stacks",
            ),
        })?;
        self.vals.truncate(open.start);
        if self.stack.is_empty() {
            self.root = Some(Value::Obj(id));
            self.expect = Expect::End;
            return Ok(None);
        }
        self.value(Value::Obj(id), frame, at)?;
        let frame_list = !open.object && open.obj.is_none() && open.frames && open.items > 0;
        Ok(frame_list.then_some(id))
    }

    /// Make a closed container: its id, and whether it is a frame dict. A frame dict or a frame
    /// list equal to one made before is that one.
    fn make(&mut self, open: Open) -> Result<(ObjId, bool), Made> {
        let items = self.vals.get(open.start..).unwrap_or(&[]);
        let b = &mut self.builder;
        let atoms = &self.atoms;
        if let Some(obj) = open.obj {
            if !items.is_empty() {
                if open.object {
                    b.set_items(Value::Obj(obj), items, atoms)?;
                } else {
                    b.extend_list(Value::Obj(obj), items, atoms)?;
                }
            }
            return Ok((obj, false));
        }
        if open.frames && !items.is_empty() {
            if open.object {
                if let Some(found) = self.dedupe.find_frame(items) {
                    if let Some(id) = found {
                        return Ok((id, true));
                    }
                    let id = b.new_dict(atoms)?;
                    b.set_items(Value::Obj(id), items, atoms)?;
                    if !self.dedupe.add_frame(id) {
                        return Err(Made::Memory);
                    }
                    return Ok((id, true));
                }
            } else {
                if let Some(id) = self.dedupe.find_list(items) {
                    return Ok((id, false));
                }
                let id = b.new_list(atoms)?;
                b.extend_list(Value::Obj(id), items, atoms)?;
                if !self.dedupe.add_list(id) {
                    return Err(Made::Memory);
                }
                return Ok((id, false));
            }
        }
        let id = if open.object {
            b.new_dict(atoms)?
        } else {
            b.new_list(atoms)?
        };
        if !items.is_empty() {
            if open.object {
                b.set_items(Value::Obj(id), items, atoms)?;
            } else {
                b.extend_list(Value::Obj(id), items, atoms)?;
            }
        }
        Ok((id, false))
    }
}

/// Why [`JsonReader::make`] failed.
enum Made {
    Build(BuildError),
    Memory,
}

impl From<BuildError> for Made {
    fn from(e: BuildError) -> Self {
        Made::Build(e)
    }
}
