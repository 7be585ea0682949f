//! Frames and stacks: frame dicts and frame lists interned on first use.
//!
//! A frame list is interned when its first batch of items arrives ([`Obj::FreshStack`]). A list
//! that gets more batches (a stack deeper than CPython's batches of 1 000) collects its frames
//! in an [`OpenStack`] and is interned once, when first used; every further batch costs only its
//! own items. A list extended after it was used is interned again at its next use, and that
//! copy is charged to the [`budget`](super::budget).

use super::*;

/// The frames of a frame list being filled in several batches ([`Obj::OpenStack`]).
#[derive(Default)]
pub(super) struct OpenStack {
    frames: Vec<FrameId>,
    /// The list was used before it was extended: interning it again is a copy.
    used: bool,
}

/// Bytes an interned stack takes per frame: its frames in the table and in the index's key.
const STACK_FRAME_BYTES: u64 = 8;

/// The error for memory that is not there.
pub(super) fn oom(what: &str, bytes: usize) -> BuildError {
    BuildError::OutOfMemory(format!(
        "out of memory: {what} need more than {bytes} bytes and the system has no more to give \
         (the file is too large for the memory available)"
    ))
}

impl SnapshotBuilder {
    /// The frame a value (a frame dict) stands for, interning it on first use.
    pub(super) fn frame_of(&mut self, v: Value, atoms: &Atoms) -> Option<FrameId> {
        let Value::Obj(ObjId(i)) = v else { return None };
        let pairs = match self.objs.get(i as usize) {
            Some(Obj::Frame(f)) => return Some(f),
            Some(Obj::Dict(idx)) => self.take_items(idx),
            _ => return None,
        };
        let k = &self.keys;
        let mut f = Frame {
            name: NO_STR,
            filename: NO_STR,
            line: 0,
            fx_node_op: NO_STR,
            fx_node_name: NO_STR,
            fx_node_target: NO_STR,
            fx_original_trace: NO_STR,
        };
        for kv in pairs.chunks_exact(2) {
            let (key, val) = (kv[0], kv[1]);
            let Value::Str(key) = key else { continue };
            let slot = if key == k.name {
                &mut f.name
            } else if key == k.filename {
                &mut f.filename
            } else if key == k.line {
                f.line = int_i128(val, atoms)
                    .and_then(|x| i64::try_from(x).ok())
                    .unwrap_or(0);
                continue;
            } else if key == k.fx_node_op {
                &mut f.fx_node_op
            } else if key == k.fx_node_name {
                &mut f.fx_node_name
            } else if key == k.fx_node_target {
                &mut f.fx_node_target
            } else if key == k.fx_original_trace {
                &mut f.fx_original_trace
            } else {
                let name = crate::warnings::quoted(atoms.str(key));
                self.warnings.warn(&format!("frame key {name}"), || {
                    format!("frames have an unknown key {name}; ignored")
                });
                continue;
            };
            if let Value::Str(s) = val {
                *slot = s;
            }
        }
        let id = match self.frame_index.get(&f) {
            Some(id) => *id,
            None => {
                let id = FrameId(u32::try_from(self.frames.len()).ok()?);
                if self.frames.len() == self.frames.capacity()
                    && self.frames.try_reserve(self.frames.len().max(64)).is_err()
                {
                    let bytes = self.frames.len() * std::mem::size_of::<Frame>();
                    self.budget.fail(oom("the frames", bytes));
                    return None;
                }
                self.frames.push(f);
                self.frame_index.insert(f, id);
                id
            }
        };
        self.objs.set(i as usize, Obj::Frame(id));
        Some(id)
    }

    /// The stack a value (a list of frame dicts) stands for, interning it on first use. A
    /// failure (no memory, the budget spent) is kept in the budget and reads as the empty stack.
    pub(super) fn stack_of(&mut self, v: Value, atoms: &Atoms) -> StackId {
        let Value::Obj(ObjId(i)) = v else {
            if v != Value::None {
                self.warnings.warn("frames type", || {
                    format!("`frames` is not a list ({}); ignored", v.type_name())
                });
            }
            return StackId::EMPTY;
        };
        let items: Vec<Value> = match self.objs.get(i as usize) {
            Some(Obj::Stack(s)) => return s,
            Some(Obj::FreshStack(s)) => {
                self.objs.set(i as usize, Obj::Stack(s));
                return s;
            }
            Some(Obj::OpenStack(k)) => return self.close_open(i, k),
            Some(Obj::List(idx)) => self.take_items(idx),
            Some(Obj::Tuple(idx)) => self.items(idx),
            _ => {
                self.warnings.warn("frames type", || {
                    "`frames` is not a list; ignored".to_string()
                });
                return StackId::EMPTY;
            }
        };
        let id = match self.intern_stack(&items, atoms, false) {
            Ok(id) => id.unwrap_or(StackId::EMPTY),
            Err(e) => {
                self.budget.fail(e);
                StackId::EMPTY
            }
        };
        self.objs.set(i as usize, Obj::Stack(id));
        id
    }

    /// True for a frame dict: already lowered, or a dict with a `filename` key.
    pub(super) fn is_frame(&self, v: Value) -> bool {
        match self.obj(v) {
            Some(Obj::Frame(_)) => true,
            Some(Obj::Dict(idx)) => {
                // Counted as a read: a large dict checked again for each list would be
                // quadratic.
                idx != EMPTY
                    && self.budget.read(self.store.len(Store::items_at(idx)))
                    && self
                        .store
                        .dict_has_key(Store::items_at(idx), self.keys.filename)
            }
            _ => false,
        }
    }

    /// Intern the stack made of these frame values. With `strict`, give up (None) at the first
    /// item that is not a frame; otherwise skip such items with a warning.
    pub(super) fn intern_stack(
        &mut self,
        items: &[Value],
        atoms: &Atoms,
        strict: bool,
    ) -> Result<Option<StackId>, BuildError> {
        // Not a frame list at all (a trace or device list): no key is built for it.
        if strict && items.first().is_some_and(|v| !self.is_frame(*v)) {
            return Ok(None);
        }
        let mut key = std::mem::take(&mut self.obj_scratch);
        key.clear();
        let all_objs = items.iter().all(|v| match v {
            Value::Obj(ObjId(j)) => {
                key.push(*j);
                true
            }
            _ => false,
        });
        if all_objs {
            if let Some(id) = self.stack_by_objs.get(&key[..]) {
                let id = *id;
                self.obj_scratch = key;
                return Ok(Some(id));
            }
        }
        let id = self.intern_stack_slow(items, atoms, strict);
        if let (true, Ok(Some(id))) = (all_objs, &id) {
            self.stack_by_objs.insert(Box::from(&key[..]), *id);
        }
        self.obj_scratch = key;
        id
    }

    pub(super) fn intern_stack_slow(
        &mut self,
        items: &[Value],
        atoms: &Atoms,
        strict: bool,
    ) -> Result<Option<StackId>, BuildError> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        for it in items {
            let fast = match *it {
                Value::Obj(ObjId(j)) => match self.objs.get(j as usize) {
                    Some(Obj::Frame(f)) => Some(f),
                    _ => None,
                },
                _ => None,
            };
            let f = match fast {
                Some(f) => Some(f),
                None if strict && !self.is_frame(*it) => {
                    self.scratch = scratch;
                    return Ok(None);
                }
                None => self.frame_of(*it, atoms),
            };
            match f {
                Some(f) => scratch.push(f),
                None => self.warnings.warn("frame type", || {
                    "a stack frame is not a dict; skipped".to_string()
                }),
            }
        }
        let id = self.intern_frames(&scratch);
        self.scratch = scratch;
        id.map(Some)
    }

    /// The id of the stack of these frames, added when new (fallibly).
    fn intern_frames(&mut self, frames: &[FrameId]) -> Result<StackId, BuildError> {
        if let Some(id) = self.stack_index.get(frames) {
            return Ok(*id);
        }
        let id = self.stacks.try_push(frames).ok_or_else(|| {
            oom(
                "the interned stacks",
                (self.stacks.frames.len() + frames.len()) * 4,
            )
        })?;
        self.stack_index.insert(Box::from(frames), id);
        Ok(id)
    }

    /// Frame list `i`, interned as `s`, gets more items: it collects its frames from here on
    /// (`used`: it was used before, so interning it again is a copy).
    pub(super) fn open_stack(
        &mut self,
        i: u32,
        s: StackId,
        used: bool,
        items: &[Value],
        atoms: &Atoms,
    ) -> Result<(), BuildError> {
        let k32 = match self.open_free.pop() {
            Some(k) => k,
            None => u32::try_from(self.open.len())
                .map_err(|_| BuildError::Limit("too many frame lists".into()))?,
        };
        let k = k32 as usize;
        let have = self.stacks.get(s);
        let mut frames = Vec::new();
        frames
            .try_reserve(have.len().saturating_add(items.len()).max(16))
            .map_err(|_| oom("a frame list", (have.len() + items.len()) * 4))?;
        frames.extend_from_slice(have);
        let o = OpenStack { frames, used };
        match self.open.get_mut(k) {
            Some(slot) => *slot = o,
            None => self.open.push(o),
        }
        self.objs.set(i as usize, Obj::OpenStack(k32));
        self.extend_open(k32, items, atoms)
    }

    /// More frames for open frame list `k` (amortised: the buffer doubles, fallibly).
    pub(super) fn extend_open(
        &mut self,
        k: u32,
        items: &[Value],
        atoms: &Atoms,
    ) -> Result<(), BuildError> {
        let mut frames = match self.open.get_mut(k as usize) {
            Some(o) => std::mem::take(&mut o.frames),
            None => {
                return Err(BuildError::Corrupt(
                    "APPENDS onto an unknown frame list".into(),
                ))
            }
        };
        let mut res = Ok(());
        if frames.capacity() - frames.len() < items.len() {
            let more = items.len().max(frames.len());
            if frames.try_reserve(more).is_err() {
                res = Err(oom("a frame list", (frames.len() + more) * 4));
            }
        }
        if res.is_ok() {
            for it in items {
                match self.frame_of(*it, atoms) {
                    Some(f) => frames.push(f),
                    None => self.warnings.warn("frame type", || {
                        "a stack frame is not a dict; skipped".to_string()
                    }),
                }
            }
        }
        if let Some(o) = self.open.get_mut(k as usize) {
            o.frames = frames;
        }
        res
    }

    /// Intern open frame list `k` (container `i`) at its first use; its buffer is given back.
    fn close_open(&mut self, i: u32, k: u32) -> StackId {
        let Some(o) = self.open.get_mut(k as usize) else {
            return StackId::EMPTY;
        };
        let frames = std::mem::take(&mut o.frames);
        let used = o.used;
        self.open_free.push(k);
        let charged = if used {
            self.budget.charge(
                frames.len() as u64 * STACK_FRAME_BYTES + 4,
                "a frame list extended after it was used is interned again, whole, at its next use",
            )
        } else {
            Ok(())
        };
        let id = match charged.and_then(|()| self.intern_frames(&frames)) {
            Ok(id) => id,
            Err(e) => {
                self.budget.fail(e);
                StackId::EMPTY
            }
        };
        self.objs.set(i as usize, Obj::Stack(id));
        id
    }

    pub(super) fn strs_of(&mut self, v: Value, what: &'static str) -> Vec<StrId> {
        // Every reference gets its own copy in the model: charged before it is read.
        let n = self.list_len(v).unwrap_or(0);
        if self
            .budget
            .charge(
                n as u64 * 4 + 32,
                "a `forward_frames` list is copied for each trace entry or block that refers to it",
            )
            .is_err()
        {
            return Vec::new();
        }
        let items: Vec<Value> = match self.list_items(v) {
            Some(items) => items,
            None => return Vec::new(),
        };
        items.into_iter().map(|x| self.str_of(x, what)).collect()
    }
}
