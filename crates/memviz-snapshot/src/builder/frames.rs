//! Frames and stacks: frame dicts and frame lists interned on first use.

use super::*;

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
                let name = atoms.str(key).to_string();
                self.warnings.warn(&format!("frame key {name}"), || {
                    format!("frames have an unknown key `{name}`; ignored")
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
                let id = FrameId(self.frames.len() as u32);
                self.frames.push(f);
                self.frame_index.insert(f, id);
                id
            }
        };
        self.objs.set(i as usize, Obj::Frame(id));
        Some(id)
    }

    /// The stack a value (a list of frame dicts) stands for, interning it on first use.
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
            Some(Obj::List(idx)) => self.take_items(idx),
            Some(Obj::Tuple(idx)) => self.items(idx),
            _ => {
                self.warnings.warn("frames type", || {
                    "`frames` is not a list; ignored".to_string()
                });
                return StackId::EMPTY;
            }
        };
        let id = self
            .intern_stack(&items, atoms, false)
            .unwrap_or(StackId::EMPTY);
        self.objs.set(i as usize, Obj::Stack(id));
        id
    }

    /// True for a frame dict: already lowered, or a dict with a `filename` key.
    pub(super) fn is_frame(&self, v: Value) -> bool {
        match self.obj(v) {
            Some(Obj::Frame(_)) => true,
            Some(Obj::Dict(idx)) => {
                idx != EMPTY
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
    ) -> Option<StackId> {
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
                return Some(id);
            }
        }
        let id = self.intern_stack_slow(items, atoms, strict);
        if let (true, Some(id)) = (all_objs, id) {
            self.stack_by_objs.insert(Box::from(&key[..]), id);
        }
        self.obj_scratch = key;
        id
    }

    pub(super) fn intern_stack_slow(
        &mut self,
        items: &[Value],
        atoms: &Atoms,
        strict: bool,
    ) -> Option<StackId> {
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
                    return None;
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
        let id = match self.stack_index.get(&scratch[..]) {
            Some(id) => *id,
            None => {
                let id = self.stacks.push(&scratch);
                self.stack_index.insert(Box::from(&scratch[..]), id);
                id
            }
        };
        self.scratch = scratch;
        Some(id)
    }

    pub(super) fn strs_of(&mut self, v: Value, what: &'static str) -> Vec<StrId> {
        let items: Vec<Value> = match self.list_items(v) {
            Some(items) => items,
            None => return Vec::new(),
        };
        items.into_iter().map(|x| self.str_of(x, what)).collect()
    }
}
