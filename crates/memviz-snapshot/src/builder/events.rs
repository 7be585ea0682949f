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
    ///
    /// When the columns cannot grow, the error is kept in the budget (the caller's
    /// `budget.check()` returns it) and nothing is written: a `Result` here cost the hot path
    /// 10 instructions per entry.
    pub(super) fn apply_event(&mut self, row: Option<u32>, pairs: &[Value], atoms: &Atoms) -> u32 {
        if !self.trace_started {
            self.start_trace();
        }
        let (mut e, row) = match row {
            Some(r) => (self.rows.read(r as usize), r),
            None => {
                if self.rows.full() {
                    if let Err(e) = self.grow_rows() {
                        self.budget.fail(e);
                        return 0;
                    }
                }
                match u32::try_from(self.rows.len()) {
                    Ok(r) => (Row::EMPTY, r),
                    Err(_) => {
                        self.budget.fail(BuildError::Limit(
                            "more than 4 billion trace entries".into(),
                        ));
                        return 0;
                    }
                }
            }
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
        let r = &mut self.rows;
        let grown = match self.event_keys.get(key) {
            EventKey::DeviceFree => room(&mut r.device_free, "the trace's sparse fields"),
            EventKey::PoolId => room(&mut r.pool_id, "the trace's sparse fields"),
            EventKey::InternalMetadata => {
                room(&mut r.internal_metadata, "the trace's sparse fields")
            }
            EventKey::Category => room(&mut r.category, "the trace's sparse fields"),
            EventKey::ForwardFrames => room(&mut r.forward_frames, "the trace's sparse fields"),
            _ => Ok(()),
        };
        if let Err(e) = grown {
            self.budget.fail(e);
            return;
        }
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
                let name = crate::warnings::quoted(atoms.str(key));
                self.warnings.warn(&format!("event key {name}"), || {
                    format!("trace entries have an unknown key {name}; ignored")
                });
            }
            _ => {}
        }
    }

    pub(super) fn read_traces(
        &mut self,
        v: Value,
        atoms: &Atoms,
    ) -> Result<Vec<DeviceTrace>, BuildError> {
        let Some(lists) = self.list_items(v) else {
            return Err(BuildError::Unexpected(
                "not a memory snapshot: `device_traces` is not a list".into(),
            ));
        };
        // Each device's trace is a model structure of its own, made per list (a reference to
        // one list, or an empty one, is two bytes of the file): charged to the budget.
        self.budget.charge(
            lists.len() as u64 * std::mem::size_of::<DeviceTrace>() as u64,
            "each list of `device_traces` becomes a device trace of its own (hundreds of bytes \
             each, even when the list is empty or shared)",
        )?;
        // The sparse columns (device_free, pool ids, …) by row, once, for every device's lookup
        // (each device scanned all of them: quadratic with many devices).
        self.rows.sort_sparse();
        let mut out = Vec::new();
        // Rows copied out so far: past the rows staged, a list is shared by several devices.
        let mut gathered = 0usize;
        out.try_reserve_exact(lists.len())
            .map_err(|_| frames::oom("the device traces", lists.len() * 400))?;
        for l in lists {
            if let Some(Obj::Events(run)) = self.obj(l) {
                let (start, len) = self.runs.get(run as usize).copied().unwrap_or((0, 0));
                if start == 0 && len as usize == self.rows.len() {
                    out.push(self.gather_all());
                } else {
                    let end = start.saturating_add(len);
                    gathered = gathered.saturating_add(len as usize);
                    let why = RowCopy::of(len as usize, gathered, self.rows.len());
                    out.push(self.gather(start..end, len as usize, why)?);
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
                        self.budget.check()?;
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
            // (Rows added here for entries without `action` come last: still sorted.)
            let n = rows.len();
            gathered = gathered.saturating_add(n);
            let why = RowCopy::of(n, gathered, self.rows.len());
            out.push(self.gather(rows.into_iter(), n, why)?);
        }
        self.budget.check()?;
        Ok(out)
    }

    /// Move all staged rows, in order, into one device's columns.
    pub(super) fn gather_all(&mut self) -> DeviceTrace {
        std::mem::take(&mut self.rows).into_trace()
    }

    /// Copy the given event rows (about `n` of them) into one device's columns: a copy,
    /// charged to the budget; `why` says what the refusal names.
    pub(super) fn gather(
        &mut self,
        rows: impl Iterator<Item = u32>,
        n: usize,
        why: RowCopy,
    ) -> Result<DeviceTrace, BuildError> {
        self.budget.charge(n as u64 * ROW_BYTES, why.sentence())?;
        // Rows already moved out (a trace list referenced twice) are dropped, so that every
        // column keeps the same length.
        let staged = self.rows.len();
        let r = &self.rows;
        let mut out = Rows {
            hint: n,
            ..Rows::default()
        };
        out.try_reserve(n)
            .map_err(|_| frames::oom("a device's trace", n * ROW_BYTES as usize))?;
        let has_sparse = r.has_sparse();
        for row in rows.filter(|&r| (r as usize) < staged) {
            let pos = out.len() as u32;
            out.push(&r.read(row as usize));
            if has_sparse {
                let lines = r.copy_sparse(row, pos, &mut out);
                if lines > 0 {
                    self.budget.charge(
                        lines as u64 * 4 + 32,
                        "a trace list shared by several devices copies its `forward_frames` into each",
                    )?;
                }
            }
        }
        // A row listed twice or out of order puts its sparse entries out of order.
        out.sort_sparse();
        Ok(out.into_trace())
    }
}

/// Model bytes of a trace row copied into a device's trace (action, address and size codes,
/// time, stack), as charged to the budget.
const ROW_BYTES: u64 = 16;

/// Why [`SnapshotBuilder::gather`] copies rows, for the refusal's sentence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RowCopy {
    /// One list holds more entries than were read: entries referenced many times.
    SharedEntries,
    /// The lists hold more entries than were read: a list shared by several devices.
    SharedList,
    /// Each device's own entries.
    OwnRows,
}

impl RowCopy {
    /// A list of `n` entries, `gathered` copied so far with it, of `staged` read.
    fn of(n: usize, gathered: usize, staged: usize) -> RowCopy {
        if n > staged {
            RowCopy::SharedEntries
        } else if gathered > staged {
            RowCopy::SharedList
        } else {
            RowCopy::OwnRows
        }
    }

    fn sentence(self) -> &'static str {
        match self {
            RowCopy::SharedEntries => {
                "a trace entry referenced many times in a trace list is copied for each reference"
            }
            RowCopy::SharedList => "a trace list shared by several devices is copied into each",
            RowCopy::OwnRows => {
                "each device's trace entries are copied into columns of their own (16 bytes an \
                 entry) while every entry read is still held"
            }
        }
    }
}
