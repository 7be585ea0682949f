//! Trace entries: lowering an entry dict into a row, and gathering rows into device traces.

use super::keys::EventKey;
use super::rows::{Row, Rows};
use super::*;

impl SnapshotBuilder {
    /// The items of an [`Obj::Events`] list as values (fresh event containers, marked consumed):
    /// only for rare paths (a trace list that stops being a run, recovery of a cut file).
    pub(super) fn event_run_values(&mut self, run: u32) -> Vec<Value> {
        let (start, len) = self.runs.get(run as usize).copied().unwrap_or((0, 0));
        let mut out = Vec::with_capacity(len as usize);
        for r in start..start.saturating_add(len) {
            match self.add(Obj::Event(r)) {
                Ok(id) => {
                    self.mark_consumed(&[Value::Obj(id)]);
                    out.push(Value::Obj(id));
                }
                Err(_) => break,
            }
        }
        out
    }

    /// The event row of a value, if it is a lowered trace entry.
    pub(super) fn event_row(&self, v: Value) -> Option<u32> {
        match self.obj(v) {
            Some(Obj::Event(r)) => Some(r),
            _ => None,
        }
    }

    /// The action for an unknown name; after [`Action::MAX_UNKNOWN`] - 1 distinct names the rest
    /// share the last id (an action is one byte in the model).
    pub(super) fn unknown_action(&mut self, name: StrId) -> Action {
        let idx = match self.unknown_actions.iter().position(|&n| n == name) {
            Some(i) => i,
            None if self.unknown_actions.len() < Action::MAX_UNKNOWN => {
                self.unknown_actions.push(name);
                self.unknown_actions.len() - 1
            }
            None => {
                self.warnings.warn("too many unknown actions", || format!("more than {} distinct unknown action names; the rest are counted as the last one", Action::MAX_UNKNOWN - 1));
                Action::MAX_UNKNOWN - 1
            }
        };
        Action::Unknown(UnknownAction(idx as u8))
    }

    /// The action code of an `action` value: a few distinct names, looked up in a small
    /// direct-mapped cache by string id before the map.
    #[inline]
    fn action_code(&mut self, val: Value, atoms: &Atoms) -> u8 {
        let Value::Str(s) = val else {
            return Action::Unknown(UnknownAction(0)).code();
        };
        let slot = (s.0 as usize) % ACTION_CACHE;
        if let Some(&(id, code)) = self.action_cache.get(slot) {
            if id == s.0 {
                return code;
            }
        }
        self.action_code_slow(s, atoms)
    }

    #[cold]
    fn action_code_slow(&mut self, s: StrId, atoms: &Atoms) -> u8 {
        let a = match self.actions.get(&s) {
            Some(a) => *a,
            None => {
                let a = match Action::from_name(atoms.str(s)) {
                    Some(a) => a,
                    None => self.unknown_action(s),
                };
                self.actions.insert(s, a);
                a
            }
        };
        if let Some(c) = self.action_cache.get_mut((s.0 as usize) % ACTION_CACHE) {
            *c = (s.0, a.code());
        }
        a.code()
    }

    /// The stack of a `frames` value: one slot read when the list was interned before.
    #[inline]
    fn event_stack(&mut self, val: Value, atoms: &Atoms) -> StackId {
        if let Value::Obj(ObjId(j)) = val {
            if let Some(Obj::Stack(s)) = self.objs.get(j as usize) {
                return s;
            }
        }
        self.stack_of(val, atoms)
    }

    /// Write trace-entry items into row `row`, or into a new row (returned) when None; the
    /// containers among them are marked consumed.
    pub(super) fn apply_event(&mut self, row: Option<u32>, pairs: &[Value], atoms: &Atoms) -> u32 {
        if !self.trace_started {
            self.start_trace();
        }
        let (mut e, row) = match row {
            Some(r) => (self.rows.read(r as usize), r),
            None => (Row::EMPTY, self.rows.len() as u32),
        };
        for kv in pairs.chunks_exact(2) {
            let (key, val) = (kv[0], kv[1]);
            if let Value::Obj(ObjId(o)) = val {
                self.consume(o);
            }
            let Value::Str(key) = key else {
                if let Value::Obj(ObjId(o)) = key {
                    self.consume(o);
                }
                self.warnings.warn("event key type", || {
                    "a trace entry has a non-string key; ignored".into()
                });
                continue;
            };
            match self.event_keys.get(key) {
                EventKey::Action => e.action = self.action_code(val, atoms),
                EventKey::Addr => e.addr = self.u64_of(val, atoms, "addr"),
                EventKey::Size => e.size = self.u64_of(val, atoms, "size"),
                EventKey::Stream => {
                    // Stream handles are raw pointers; keep the bit pattern of negative values.
                    e.stream = match val {
                        Value::Int(i) => i as u64,
                        _ => int_i128(val, atoms).map(|x| x as u64).unwrap_or(0),
                    }
                }
                EventKey::TimeUs => e.time_us = self.i64_of(val, atoms, "time_us"),
                EventKey::Frames => e.stack = self.event_stack(val, atoms),
                EventKey::CompileContext => e.compile_context = self.str_of(val, "compile_context"),
                EventKey::UserMetadata => e.user_metadata = self.str_of(val, "user_metadata"),
                _ => self.apply_rare(key, val, row, atoms),
            }
        }
        if (row as usize) < self.rows.len() {
            self.rows.set(row as usize, &e);
        } else {
            self.rows.push(&e);
        }
        row
    }

    /// The rarely present keys of a trace entry (and unknown ones).
    #[inline(never)]
    fn apply_rare(&mut self, key: StrId, val: Value, row: u32, atoms: &Atoms) {
        match self.event_keys.get(key) {
            EventKey::DeviceFree => {
                let x = self.u64_of(val, atoms, "device_free");
                self.rows.device_free.push((row, x));
            }
            EventKey::PoolId => {
                let p = self.pair_of(val, atoms, "pool_id");
                self.rows.pool_id.push((row, p));
            }
            EventKey::InternalMetadata => {
                let s = self.str_of(val, "internal_metadata");
                self.rows.internal_metadata.push((row, s));
            }
            EventKey::Category => {
                let s = self.str_of(val, "category");
                self.rows.category.push((row, s));
            }
            EventKey::ForwardFrames => {
                let f = self.strs_of(val, "forward_frames");
                self.rows.forward_frames.push((row, f));
            }
            EventKey::Other => {
                let name = atoms.str(key).to_string();
                self.warnings.warn(&format!("event key {name}"), || {
                    format!("trace entries have an unknown key `{name}`; ignored")
                });
            }
            _ => {}
        }
    }

    pub(super) fn read_traces(
        &mut self,
        v: Value,
        atoms: &Atoms,
    ) -> Result<Vec<DeviceTrace>, String> {
        let Some(lists) = self.list_items(v) else {
            return Err("not a memory snapshot: `device_traces` is not a list".into());
        };
        let mut out = Vec::with_capacity(lists.len());
        for l in lists {
            if let Some(Obj::Events(run)) = self.obj(l) {
                let (start, len) = self.runs.get(run as usize).copied().unwrap_or((0, 0));
                if start == 0 && len as usize == self.rows.len() {
                    out.push(self.gather_all());
                } else {
                    let rows: Vec<u32> = (start..start.saturating_add(len)).collect();
                    out.push(self.gather(&rows));
                }
                continue;
            }
            // Take the generic list's items (freeing them): its rows are what we keep.
            let items: Vec<Value> = match self.obj(l) {
                Some(Obj::List(idx)) => self.take_items(idx),
                _ => {
                    self.warnings.warn("trace type", || {
                        "a device trace is not a list; read as empty".into()
                    });
                    Vec::new()
                }
            };
            // Usually every item is an event row, in file order from the first row: then the
            // trace is exactly the staged rows, and no row list is needed.
            let in_order = !items.is_empty()
                && items.len() == self.rows.len()
                && items
                    .iter()
                    .enumerate()
                    .all(|(k, it)| matches!(self.obj(*it), Some(Obj::Event(r)) if r as usize == k));
            if in_order {
                out.push(self.gather_all());
                continue;
            }
            let mut rows = Vec::with_capacity(items.len());
            for it in items {
                match self.obj(it) {
                    Some(Obj::Event(r)) => rows.push(r),
                    Some(Obj::Dict(idx)) => {
                        // A trace entry without `action`: keep it as an unknown event.
                        let p = self.items(idx);
                        let r = self.apply_event(None, &p, atoms);
                        self.warnings.warn("no action", || {
                            "a trace entry has no `action`; kept as an unknown event".into()
                        });
                        rows.push(r);
                    }
                    _ => self.warnings.warn("entry type", || {
                        "a trace entry is not a dict; skipped".into()
                    }),
                }
            }
            out.push(self.gather(&rows));
        }
        Ok(out)
    }

    /// Move all staged rows, in order, into one device's columns.
    pub(super) fn gather_all(&mut self) -> DeviceTrace {
        std::mem::take(&mut self.rows).into_trace()
    }

    /// Copy the given event rows into one device's columns.
    pub(super) fn gather(&mut self, rows: &[u32]) -> DeviceTrace {
        // Rows already moved out (a trace list referenced twice) are dropped, so that every
        // column keeps the same length.
        let staged = self.rows.len();
        let rows: Vec<u32> = rows
            .iter()
            .copied()
            .filter(|&r| (r as usize) < staged)
            .collect();
        let rows = &rows[..];
        let n = rows.len();
        let r = &self.rows;
        let mut out = Rows {
            hint: n,
            ..Rows::default()
        };
        for &row in rows {
            out.push(&r.read(row as usize));
        }
        // Sparse columns: map global row → position in this trace.
        let has_sparse = !(r.device_free.is_empty()
            && r.pool_id.is_empty()
            && r.internal_metadata.is_empty()
            && r.category.is_empty()
            && r.forward_frames.is_empty());
        if has_sparse && n > 0 {
            let mut pos: FxHashMap<u32, u32> = FxHashMap::default();
            for (p, row) in rows.iter().enumerate() {
                pos.insert(*row, p as u32);
            }
            fn remap<T: Clone>(src: &[(u32, T)], pos: &FxHashMap<u32, u32>) -> Vec<(u32, T)> {
                let mut v: Vec<(u32, T)> = src
                    .iter()
                    .filter_map(|(row, x)| pos.get(row).map(|p| (*p, x.clone())))
                    .collect();
                v.sort_by_key(|e| e.0);
                v
            }
            out.device_free = remap(&r.device_free, &pos);
            out.pool_id = remap(&r.pool_id, &pos);
            out.internal_metadata = remap(&r.internal_metadata, &pos);
            out.category = remap(&r.category, &pos);
            out.forward_frames = remap(&r.forward_frames, &pos);
        }
        out.into_trace()
    }
}
