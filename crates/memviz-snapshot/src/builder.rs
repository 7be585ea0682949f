//! The pickle [`Builder`] that turns a snapshot pickle into the typed model while it streams.
//!
//! # How it works
//! Containers get an [`Obj`] slot. A dict whose items include the key `action` is a trace entry:
//! its items are written straight into event columns and the slot becomes `Obj::Event(row)`, so no
//! generic dict is kept for the (millions of) events. Frame dicts and frame lists stay generic
//! until first used, then are interned and their slot replaced by `Obj::Frame` / `Obj::Stack`, so
//! a memo alias of the same list (how PyTorch shares tracebacks) costs one lookup. At STOP,
//! [`SnapshotBuilder::finish`] reads the top-level dict: segments, blocks and settings (few) from
//! their generic dicts, and each device's trace by gathering its event rows.

use crate::columns::{ActionColumn, TimeColumn, U64Column};
use crate::model::*;
use crate::warnings::Warnings;
use memviz_pickle::{Atoms, Builder, ObjId, Store, StrId, Value};
use rustc_hash::FxHashMap;

/// A container slot: 8 bytes. Generic containers keep their items in `SnapshotBuilder::store`
/// (index `EMPTY` = no items yet, no storage), lowered ones only an id.
#[derive(Clone, Copy)]
enum Obj {
    List(u32),
    /// Flat key/value pairs.
    Dict(u32),
    Tuple(u32),
    Event(u32),
    /// A list whose items so far are the event rows `runs[i].0 ..` (`runs[i].1` of them), in
    /// order: how a trace list is kept (a generic list would cost a 16-byte value per event,
    /// 400 MB for a 2 GB file, and more while it doubles).
    Events(u32),
    Frame(FrameId),
    Stack(StackId),
}

const EMPTY: u32 = u32::MAX;

macro_rules! keys {
    ($($field:ident),* $(,)?) => {
        /// Ids of the key strings the builder recognises (interned before parsing starts).
        #[allow(non_snake_case)]
        pub(crate) struct Keys { $(pub(crate) $field: StrId,)* }
        impl Keys {
            fn new(atoms: &mut Atoms) -> Keys {
                Keys { $($field: atoms.strings.intern(stringify!($field)),)* }
            }
        }
    };
}

keys!(
    action,
    addr,
    size,
    stream,
    time_us,
    frames,
    compile_context,
    user_metadata,
    device_free,
    internal_metadata,
    category,
    forward_frames,
    pool_id,
    segment_pool_id,
    name,
    filename,
    line,
    fx_node_op,
    fx_node_name,
    fx_node_target,
    fx_original_trace,
    segments,
    device_traces,
    allocator_settings,
    external_annotations,
    host_segments,
    host_traces,
    categories,
    device,
    address,
    total_size,
    allocated_size,
    active_size,
    requested_size,
    segment_type,
    is_expandable,
    blocks,
    state,
    history,
    real_size,
    stage,
    active_allocated,
    active_pending_free,
    inactive,
);

/// Event rows in file order, before they are split by device: written straight into the
/// compact columns of the model (so a whole trace in file order moves into its
/// [`DeviceTrace`] without a copy).
struct Rows {
    action: Vec<u8>,
    addr: U64Column,
    size: U64Column,
    time_us: TimeColumn,
    stack: Vec<StackId>,
    stream: Column<u64>,
    compile_context: Column<StrId>,
    user_metadata: Column<StrId>,
    /// Rows expected in all (reserved); a column that stops being constant reserves this many.
    hint: usize,
    /// Codes of the values of `stream`, `compile_context`, `user_metadata` while coded.
    stream_codes: FxHashMap<u64, u16>,
    cc_codes: FxHashMap<StrId, u16>,
    um_codes: FxHashMap<StrId, u16>,
    device_free: Vec<(u32, u64)>,
    pool_id: Vec<(u32, (i64, i64))>,
    internal_metadata: Vec<(u32, StrId)>,
    category: Vec<(u32, StrId)>,
    forward_frames: Vec<(u32, Vec<StrId>)>,
}

impl Default for Rows {
    fn default() -> Self {
        Rows {
            action: Vec::new(),
            addr: U64Column::default(),
            size: U64Column::default(),
            time_us: TimeColumn::default(),
            stack: Vec::new(),
            stream: Column::constant(0, 0),
            compile_context: Column::constant(NO_STR, 0),
            user_metadata: Column::constant(NO_STR, 0),
            hint: 0,
            stream_codes: FxHashMap::default(),
            cc_codes: FxHashMap::default(),
            um_codes: FxHashMap::default(),
            device_free: Vec::new(),
            pool_id: Vec::new(),
            internal_metadata: Vec::new(),
            category: Vec::new(),
            forward_frames: Vec::new(),
        }
    }
}

/// The dense fields of one event row.
#[derive(Clone, Copy)]
struct Row {
    action: Action,
    addr: u64,
    size: u64,
    stream: u64,
    time_us: i64,
    stack: StackId,
    compile_context: StrId,
    user_metadata: StrId,
}

impl Row {
    const EMPTY: Row = Row {
        action: Action::Unknown(UnknownAction(0)),
        addr: 0,
        size: 0,
        stream: 0,
        time_us: NO_TIME,
        stack: StackId::EMPTY,
        compile_context: NO_STR,
        user_metadata: NO_STR,
    };
}

impl Rows {
    fn len(&self) -> usize {
        self.action.len()
    }

    fn read(&self, r: usize) -> Row {
        Row {
            action: self
                .action
                .get(r)
                .map_or(Row::EMPTY.action, |&c| Action::from_code(c)),
            addr: self.addr.get(r).unwrap_or(0),
            size: self.size.get(r).unwrap_or(0),
            stream: self.stream.get(r).unwrap_or(0),
            time_us: self.time_us.get(r).unwrap_or(NO_TIME),
            stack: self.stack.get(r).copied().unwrap_or(StackId::EMPTY),
            compile_context: self.compile_context.get(r).unwrap_or(NO_STR),
            user_metadata: self.user_metadata.get(r).unwrap_or(NO_STR),
        }
    }

    #[inline]
    fn push(&mut self, e: &Row) {
        self.action.push(e.action.code());
        self.addr.push(e.addr);
        self.size.push(e.size);
        self.time_us.push(e.time_us);
        self.stack.push(e.stack);
        self.stream
            .push(e.stream, self.hint, &mut self.stream_codes);
        self.compile_context
            .push(e.compile_context, self.hint, &mut self.cc_codes);
        self.user_metadata
            .push(e.user_metadata, self.hint, &mut self.um_codes);
    }

    fn set(&mut self, r: usize, e: &Row) {
        if let Some(a) = self.action.get_mut(r) {
            *a = e.action.code();
        }
        self.addr.set(r, e.addr);
        self.size.set(r, e.size);
        self.time_us.set(r, e.time_us);
        if let Some(s) = self.stack.get_mut(r) {
            *s = e.stack;
        }
        self.stream.set(r, e.stream);
        self.compile_context.set(r, e.compile_context);
        self.user_metadata.set(r, e.user_metadata);
    }

    /// Seal the columns into a device trace.
    fn into_trace(mut self) -> DeviceTrace {
        self.action.shrink_to_fit();
        self.stack.shrink_to_fit();
        self.addr.seal();
        self.size.seal();
        self.time_us.seal();
        DeviceTrace {
            action: ActionColumn(self.action),
            addr: self.addr,
            size: self.size,
            time_us: self.time_us,
            stack: self.stack,
            stream: self.stream.sealed(),
            compile_context: self.compile_context.sealed(),
            user_metadata: self.user_metadata.sealed(),
            device_free: self.device_free,
            pool_id: self.pool_id,
            internal_metadata: self.internal_metadata,
            category: self.category,
            forward_frames: self.forward_frames,
        }
    }
}

pub struct SnapshotBuilder {
    objs: Vec<Obj>,
    /// (first row, rows) of each [`Obj::Events`] list.
    runs: Vec<(u32, u32)>,
    /// Items of the generic containers (compact: see [`Store`]).
    store: Store,
    keys: Keys,
    rows: Rows,
    actions: FxHashMap<StrId, Action>,
    /// Names of unknown actions; index 0 is "no action key".
    unknown_actions: Vec<StrId>,
    block_forward_frames: Vec<(u32, Vec<StrId>)>,
    frames: Vec<Frame>,
    frame_index: FxHashMap<Frame, FrameId>,
    stacks: StackTable,
    stack_index: FxHashMap<Box<[FrameId]>, StackId>,
    /// Stacks by the container ids of their frame dicts: Python shares frame dicts by identity,
    /// so a repeated traceback is the same id sequence, found without touching each frame.
    stack_by_objs: FxHashMap<Box<[u32]>, StackId>,
    scratch: Vec<FrameId>,
    obj_scratch: Vec<u32>,
    /// One bit per container: set once it became an item of another container. At a cut, the
    /// containers without it are exactly those still open on the VM's stack (see [`Self::recover`]).
    consumed: Vec<u64>,
    pub(crate) warnings: Warnings,
}

/// What [`SnapshotBuilder::recover`] found in a file that ends before STOP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// Whole segments read.
    pub segments: usize,
    /// The segment list was read to its end (false: the cut is inside it).
    pub segments_complete: bool,
    /// Whole trace events read, over every device.
    pub events: usize,
    /// The device whose trace the cut is in (None: no trace was being read).
    pub cut_device: Option<usize>,
    /// `device_traces` was read to its end.
    pub traces_complete: bool,
    /// The top-level dict was complete: only STOP was missing.
    pub only_stop_missing: bool,
}

fn int_i128(v: Value, atoms: &Atoms) -> Option<i128> {
    match v {
        Value::Int(i) => Some(i as i128),
        Value::BigInt(b) => atoms.big_int_i128(b),
        Value::Bool(b) => Some(b as i128),
        _ => None,
    }
}

impl SnapshotBuilder {
    /// Trace entries read so far (every device).
    pub(crate) fn entries(&self) -> usize {
        self.rows.stack.len()
    }

    /// A builder and the atoms (with its keys pre-interned) to start the unpickler with.
    pub fn new() -> (SnapshotBuilder, Atoms) {
        let mut atoms = Atoms::new();
        let keys = Keys::new(&mut atoms);
        let mut stack_index = FxHashMap::default();
        stack_index.insert(Box::from(&[][..]), StackId::EMPTY);
        let b = SnapshotBuilder {
            objs: Vec::new(),
            runs: Vec::new(),
            store: Store::new(),
            keys,
            rows: Rows::default(),
            actions: FxHashMap::default(),
            unknown_actions: vec![NO_STR],
            block_forward_frames: Vec::new(),
            frames: Vec::new(),
            frame_index: FxHashMap::default(),
            stacks: StackTable::default(),
            stack_index,
            stack_by_objs: FxHashMap::default(),
            scratch: Vec::new(),
            obj_scratch: Vec::new(),
            consumed: Vec::new(),
            warnings: Warnings::default(),
        };
        (b, atoms)
    }

    /// Reserve room for about `events` trace entries (and their containers) up front.
    pub fn reserve(&mut self, events: usize) {
        self.reserve_rows(events);
        let _ = self.objs.try_reserve_exact(events);
    }

    /// Room for exactly `more` event rows in every column.
    fn reserve_rows(&mut self, more: usize) {
        let r = &mut self.rows;
        r.hint = r.len().saturating_add(more);
        let _ = r.action.try_reserve_exact(more);
        r.addr.reserve(more);
        r.size.reserve(more);
        r.time_us.reserve(more);
        let _ = r.stack.try_reserve_exact(more);
    }

    /// `done` of `total` input bytes were read: when the event columns or the container slots
    /// are nearly full, size them for the rest of the file at the rate so far (plus 5 %),
    /// instead of letting them double. On a 150 MB file of 67 bytes per entry (fewer than the
    /// loader's first guess) doubling left 1.9 M rows of 15 bytes unused; this keeps the
    /// slack to a few percent.
    pub(crate) fn grow_for(&mut self, done: u64, total: u64) {
        fn more(len: usize, cap: usize, done: u64, total: u64) -> Option<usize> {
            if done == 0 || total <= done || len < cap - cap / 10 {
                return None;
            }
            let left = (total - done) as f64 / done as f64 * 1.05;
            let want = len + (len as f64 * left) as usize + 4096;
            (want > cap).then(|| want - len)
        }
        let rows = self.rows.len();
        if let Some(m) = more(rows, self.rows.stack.capacity(), done, total) {
            self.reserve_rows(m);
        }
        if let Some(m) = more(self.objs.len(), self.objs.capacity(), done, total) {
            let _ = self.objs.try_reserve_exact(m);
        }
    }

    /// Mark the containers among `items` as consumed (they are now inside another one).
    fn mark_consumed(&mut self, items: &[Value]) {
        for v in items {
            if let Value::Obj(ObjId(i)) = *v {
                let w = (i / 64) as usize;
                if w >= self.consumed.len() {
                    self.consumed.resize(w + 1, 0);
                }
                if let Some(word) = self.consumed.get_mut(w) {
                    *word |= 1 << (i % 64);
                }
            }
        }
    }

    fn is_consumed(&self, i: u32) -> bool {
        self.consumed
            .get((i / 64) as usize)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn add(&mut self, o: Obj) -> Result<ObjId, String> {
        let id = u32::try_from(self.objs.len())
            .map_err(|_| "more than 4 billion containers".to_string())?;
        self.objs.push(o);
        Ok(ObjId(id))
    }

    fn obj(&self, v: Value) -> Option<Obj> {
        match v {
            Value::Obj(ObjId(i)) => self.objs.get(i as usize).copied(),
            _ => None,
        }
    }

    fn items(&self, idx: u32) -> Vec<Value> {
        if idx == EMPTY {
            return Vec::new();
        }
        self.store.get(Store::items_at(idx))
    }

    /// Move the items out of a generic container's storage.
    fn take_items(&mut self, idx: u32) -> Vec<Value> {
        if idx == EMPTY {
            return Vec::new();
        }
        self.store.take(Store::items_at(idx))
    }

    /// Storage for a new generic container (`dict`: `items` are key/value pairs).
    fn new_store(&mut self, items: &[Value], dict: bool) -> Result<u32, String> {
        let at = if dict {
            self.store.new_dict(items)?
        } else {
            self.store.new_seq(items)?
        };
        Ok(Store::raw(at))
    }

    /// Append to a generic container's storage; returns its (possibly moved) index.
    fn extend_store(&mut self, idx: u32, items: &[Value], dict: bool) -> Result<u32, String> {
        if idx == EMPTY {
            return self.new_store(items, dict);
        }
        Ok(Store::raw(self.store.extend(
            Store::items_at(idx),
            items,
            dict,
        )?))
    }

    /// The items of an [`Obj::Events`] list as values (fresh event containers, marked consumed):
    /// only for rare paths (a trace list that stops being a run, recovery of a cut file).
    fn event_run_values(&mut self, run: u32) -> Vec<Value> {
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
    fn event_row(&self, v: Value) -> Option<u32> {
        match self.obj(v) {
            Some(Obj::Event(r)) => Some(r),
            _ => None,
        }
    }

    fn u64_of(&mut self, v: Value, atoms: &Atoms, what: &'static str) -> u64 {
        match int_i128(v, atoms).and_then(|i| u64::try_from(i).ok()) {
            Some(x) => x,
            None => {
                self.warnings.warn(what, || {
                    format!(
                        "`{what}` is not a non-negative integer that fits 64 bits ({}); read as 0",
                        v.type_name()
                    )
                });
                0
            }
        }
    }

    fn i64_of(&mut self, v: Value, atoms: &Atoms, what: &'static str) -> i64 {
        match int_i128(v, atoms).and_then(|i| i64::try_from(i).ok()) {
            Some(x) => x,
            None => {
                self.warnings.warn(what, || {
                    format!(
                        "`{what}` is not an integer that fits 64 bits ({}); read as 0",
                        v.type_name()
                    )
                });
                0
            }
        }
    }

    fn str_of(&mut self, v: Value, what: &'static str) -> StrId {
        match v {
            Value::Str(s) => s,
            Value::None => NO_STR,
            other => {
                self.warnings.warn(what, || {
                    format!("`{what}` is not a string ({}); ignored", other.type_name())
                });
                NO_STR
            }
        }
    }

    fn pair_of(&mut self, v: Value, atoms: &Atoms, what: &'static str) -> (i64, i64) {
        let items: Option<[Value; 2]> = match self.list_items(v).as_deref() {
            Some(&[a, b]) => Some([a, b]),
            _ => None,
        };
        match items {
            Some([a, b]) => (self.i64_of(a, atoms, what), self.i64_of(b, atoms, what)),
            None => {
                self.warnings.warn(what, || {
                    format!("`{what}` is not a pair of integers; read as (0, 0)")
                });
                (0, 0)
            }
        }
    }

    /// The frame a value (a frame dict) stands for, interning it on first use.
    fn frame_of(&mut self, v: Value, atoms: &Atoms) -> Option<FrameId> {
        let Value::Obj(ObjId(i)) = v else { return None };
        let pairs = match self.objs.get(i as usize).copied() {
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
        if let Some(slot) = self.objs.get_mut(i as usize) {
            *slot = Obj::Frame(id);
        }
        Some(id)
    }

    /// The stack a value (a list of frame dicts) stands for, interning it on first use.
    fn stack_of(&mut self, v: Value, atoms: &Atoms) -> StackId {
        let Value::Obj(ObjId(i)) = v else {
            if v != Value::None {
                self.warnings.warn("frames type", || {
                    format!("`frames` is not a list ({}); ignored", v.type_name())
                });
            }
            return StackId::EMPTY;
        };
        let items: Vec<Value> = match self.objs.get(i as usize).copied() {
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
        if let Some(slot) = self.objs.get_mut(i as usize) {
            *slot = Obj::Stack(id);
        }
        id
    }

    /// True for a frame dict: already lowered, or a dict with a `filename` key.
    fn is_frame(&self, v: Value) -> bool {
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
    fn intern_stack(&mut self, items: &[Value], atoms: &Atoms, strict: bool) -> Option<StackId> {
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

    fn intern_stack_slow(
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
                    Some(Obj::Frame(f)) => Some(*f),
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

    fn strs_of(&mut self, v: Value, what: &'static str) -> Vec<StrId> {
        let items: Vec<Value> = match self.list_items(v) {
            Some(items) => items,
            None => return Vec::new(),
        };
        items.into_iter().map(|x| self.str_of(x, what)).collect()
    }

    /// The action for an unknown name; after [`Action::MAX_UNKNOWN`] - 1 distinct names the rest
    /// share the last id (an action is one byte in the model).
    fn unknown_action(&mut self, name: StrId) -> Action {
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

    /// Write trace-entry items into row `row`, or into a new row (returned) when None.
    fn apply_event(&mut self, row: Option<u32>, pairs: &[Value], atoms: &Atoms) -> u32 {
        let (mut e, row) = match row {
            Some(r) => (self.rows.read(r as usize), r),
            None => (Row::EMPTY, self.rows.len() as u32),
        };
        for kv in pairs.chunks_exact(2) {
            let (key, val) = (kv[0], kv[1]);
            let Value::Str(key) = key else {
                self.warnings.warn("event key type", || {
                    "a trace entry has a non-string key; ignored".into()
                });
                continue;
            };
            let k = &self.keys;
            if key == k.action {
                e.action = match val {
                    Value::Str(s) => match self.actions.get(&s) {
                        Some(a) => *a,
                        None => {
                            let a = match Action::from_name(atoms.str(s)) {
                                Some(a) => a,
                                None => self.unknown_action(s),
                            };
                            self.actions.insert(s, a);
                            a
                        }
                    },
                    _ => Action::Unknown(UnknownAction(0)),
                };
            } else if key == k.addr {
                e.addr = self.u64_of(val, atoms, "addr");
            } else if key == k.size {
                e.size = self.u64_of(val, atoms, "size");
            } else if key == k.stream {
                // Stream handles are raw pointers; keep the bit pattern of negative values.
                e.stream = int_i128(val, atoms).map(|x| x as u64).unwrap_or(0);
            } else if key == k.time_us {
                e.time_us = self.i64_of(val, atoms, "time_us");
            } else if key == k.frames {
                e.stack = self.stack_of(val, atoms);
            } else if key == k.compile_context {
                e.compile_context = self.str_of(val, "compile_context");
            } else if key == k.user_metadata {
                e.user_metadata = self.str_of(val, "user_metadata");
            } else if key == k.device_free {
                let x = self.u64_of(val, atoms, "device_free");
                self.rows.device_free.push((row, x));
            } else if key == k.pool_id || key == k.segment_pool_id {
                let p = self.pair_of(val, atoms, "pool_id");
                self.rows.pool_id.push((row, p));
            } else if key == k.internal_metadata {
                let s = self.str_of(val, "internal_metadata");
                self.rows.internal_metadata.push((row, s));
            } else if key == k.category {
                let s = self.str_of(val, "category");
                self.rows.category.push((row, s));
            } else if key == k.forward_frames {
                let f = self.strs_of(val, "forward_frames");
                self.rows.forward_frames.push((row, f));
            } else {
                let name = atoms.str(key).to_string();
                self.warnings.warn(&format!("event key {name}"), || {
                    format!("trace entries have an unknown key `{name}`; ignored")
                });
            }
        }
        if (row as usize) < self.rows.len() {
            self.rows.set(row as usize, &e);
        } else {
            self.rows.push(&e);
        }
        row
    }

    fn get(pairs: &[Value], key: StrId) -> Option<Value> {
        pairs
            .chunks_exact(2)
            .rev()
            .find(|kv| kv[0] == Value::Str(key))
            .map(|kv| kv[1])
    }

    fn dict_pairs(&self, v: Value) -> Option<Vec<Value>> {
        match self.obj(v) {
            Some(Obj::Dict(idx)) => Some(self.items(idx)),
            _ => None,
        }
    }

    /// Number of items of a list or tuple.
    fn list_len(&self, v: Value) -> Option<usize> {
        match self.obj(v) {
            Some(Obj::List(EMPTY) | Obj::Tuple(EMPTY)) => Some(0),
            Some(Obj::List(idx) | Obj::Tuple(idx)) => Some(self.store.len(Store::items_at(idx))),
            _ => None,
        }
    }

    /// Items of a list or tuple.
    fn list_items(&self, v: Value) -> Option<Vec<Value>> {
        match self.obj(v) {
            Some(Obj::List(idx) | Obj::Tuple(idx)) => Some(self.items(idx)),
            _ => None,
        }
    }

    /// Generic conversion to JSON (settings, extensions). Containers can contain themselves
    /// through the memo, so the output is cut at depth 64 and after 100 000 values.
    fn to_json(&self, v: Value, atoms: &Atoms, depth: u32) -> serde_json::Value {
        // (Non-string dict keys are cut to MAX_KEY_CHARS by `short_key`.)
        let mut budget = 100_000usize;
        self.to_json_bounded(v, atoms, depth, &mut budget)
    }

    fn to_json_bounded(
        &self,
        v: Value,
        atoms: &Atoms,
        depth: u32,
        budget: &mut usize,
    ) -> serde_json::Value {
        use serde_json::Value as J;
        if depth > 64 || *budget == 0 {
            return J::String("...".into());
        }
        *budget -= 1;
        match v {
            Value::None => J::Null,
            Value::Bool(b) => J::Bool(b),
            Value::Int(i) => J::from(i),
            Value::BigInt(b) => match atoms.big_int_i128(b) {
                Some(i) => u64::try_from(i)
                    .map(J::from)
                    .unwrap_or_else(|_| J::String(i.to_string())),
                None => J::String("<integer too large>".into()),
            },
            Value::Float(f) => serde_json::Number::from_f64(f)
                .map(J::Number)
                .unwrap_or(J::Null),
            Value::Str(s) => J::String(atoms.str(s).to_string()),
            Value::Bytes(b) => J::String(String::from_utf8_lossy(atoms.bytes(b)).into_owned()),
            Value::Obj(_) => match self.obj(v) {
                Some(Obj::List(idx) | Obj::Tuple(idx)) => J::Array(
                    self.items(idx)
                        .iter()
                        .map(|x| self.to_json_bounded(*x, atoms, depth + 1, budget))
                        .collect(),
                ),
                Some(Obj::Dict(idx)) => {
                    let mut m = serde_json::Map::new();
                    for kv in self.items(idx).chunks_exact(2) {
                        let key = match kv[0] {
                            Value::Str(s) => atoms.str(s).to_string(),
                            // A container key becomes its JSON text, cut short: keys nested as
                            // each other's keys would otherwise re-escape and double per level.
                            other => short_key(
                                self.to_json_bounded(other, atoms, depth + 1, budget)
                                    .to_string(),
                            ),
                        };
                        m.insert(key, self.to_json_bounded(kv[1], atoms, depth + 1, budget));
                    }
                    J::Object(m)
                }
                Some(Obj::Event(_)) => J::String("<trace entry>".into()),
                Some(Obj::Events(run)) => {
                    let len = self.runs.get(run as usize).map_or(0, |r| r.1);
                    J::Array(
                        (0..len)
                            .map(|_| {
                                if depth + 1 > 64 || *budget == 0 {
                                    J::String("...".into())
                                } else {
                                    *budget -= 1;
                                    J::String("<trace entry>".into())
                                }
                            })
                            .collect(),
                    )
                }
                Some(Obj::Frame(_)) => J::String("<frame>".into()),
                Some(Obj::Stack(_)) => J::String("<stack>".into()),
                None => J::Null,
            },
        }
    }

    /// Read the top-level value into a [`Snapshot`]. Errors only when it is not a snapshot at all.
    pub fn finish(
        mut self,
        root: Value,
        mut atoms: Atoms,
        protocol: u8,
    ) -> Result<Snapshot, String> {
        // The peak of a parse is here, while the segments are built from the generic items:
        // first give back what the rest no longer needs (on a 150 MB file tiled from a real
        // snapshot, 115 k segments: 12 MB, peak 0.825 -> 0.78 x the file).
        self.objs.shrink_to_fit();
        self.store.shrink_to_fit();
        self.rows.addr.release_index();
        self.rows.size.release_index();
        let k = &self.keys;
        let (layout, seg_list, traces_val) = match self.obj(root) {
            Some(Obj::Dict(idx)) => {
                let pairs = self.items(idx);
                let seg = Self::get(&pairs, k.segments);
                let tr = Self::get(&pairs, k.device_traces);
                if seg.is_none() && tr.is_none() {
                    let found: Vec<String> = pairs
                        .chunks_exact(2)
                        .take(12)
                        .map(|kv| match kv[0] {
                            Value::Str(s) => format!("'{}'", atoms.str(s)),
                            other => other.type_name().to_string(),
                        })
                        .collect();
                    return Err(format!(
                        "a valid pickle, but not a memory snapshot: expected a dict with the keys 'segments' and 'device_traces', found {}",
                        if found.is_empty() { "an empty dict".to_string() } else { format!("the keys {}", found.join(", ")) }
                    ));
                }
                (Layout::Dict, seg, tr)
            }
            Some(Obj::List(idx)) => {
                // A bare list of segments (FORMAT.md §6); a list holding no dict at all is
                // some other pickled list.
                let items = self.items(idx);
                if let Some(first) = items.first().filter(|_| {
                    !items
                        .iter()
                        .any(|v| matches!(self.obj(*v), Some(Obj::Dict(_))))
                }) {
                    let what = match self.obj(*first) {
                        Some(Obj::Event(_)) => "trace entries",
                        Some(Obj::List(_) | Obj::Stack(_)) => "lists",
                        Some(Obj::Tuple(_)) => "tuples",
                        Some(Obj::Frame(_)) => "stack frames",
                        _ => first.type_name(),
                    };
                    return Err(format!(
                        "a valid pickle, but not a memory snapshot: the top level is a list of {what} \
                         (expected a dict with the keys 'segments' and 'device_traces', or a list of segment dicts)"
                    ));
                }
                (Layout::BareList, Some(root), None)
            }
            Some(Obj::Event(_)) => {
                return Err("a valid pickle, but not a memory snapshot: the top level is a single trace entry".into())
            }
            Some(Obj::Events(_)) => {
                return Err("a valid pickle, but not a memory snapshot: the top level is a list of trace entries \
                         (expected a dict with the keys 'segments' and 'device_traces', or a list of segment dicts)".into())
            }
            _ => {
                return Err(format!(
                    "a valid pickle, but not a memory snapshot: the top level is {} (expected a dict with 'segments' and 'device_traces')",
                    match self.obj(root) {
                        Some(Obj::Tuple(_)) => "a tuple",
                        _ => root.type_name(),
                    }
                ))
            }
        };

        // Other top-level keys.
        let mut allocator_settings = None;
        let mut annotations = Vec::new();
        let mut extra = Vec::new();
        if layout == Layout::Dict {
            let pairs: Vec<Value> = self
                .dict_pairs(root)
                .map(|p| p.to_vec())
                .unwrap_or_default();
            for kv in pairs.chunks_exact(2) {
                let Value::Str(key) = kv[0] else { continue };
                let k = &self.keys;
                if key == k.segments || key == k.device_traces {
                } else if key == k.allocator_settings {
                    allocator_settings = Some(self.to_json(kv[1], &atoms, 0));
                } else if key == k.external_annotations {
                    annotations = self.read_annotations(kv[1], &atoms);
                } else if key == k.host_segments || key == k.host_traces || key == k.categories {
                    extra.push((atoms.str(key).to_string(), self.to_json(kv[1], &atoms, 0)));
                } else {
                    let name = atoms.str(key).to_string();
                    self.warnings.warn(&format!("top key {name}"), || {
                        format!("unknown top-level key `{name}` ignored")
                    });
                    extra.push((name, self.to_json(kv[1], &atoms, 0)));
                }
            }
        }

        let (segments, blocks, history) = match seg_list {
            Some(v) => self.read_segments(v, &atoms)?,
            None => {
                self.warnings.warn("no segments", || {
                    "the file has no `segments`: no final allocator state".into()
                });
                (Vec::new(), Vec::new(), Vec::new())
            }
        };
        let traces = match traces_val {
            Some(v) => self.read_traces(v, &atoms)?,
            None => Vec::new(),
        };
        self.check_invariants(&segments, &blocks, &traces, &atoms);

        atoms.strings.freeze();
        let SnapshotBuilder {
            frames,
            stacks,
            warnings,
            unknown_actions,
            block_forward_frames,
            ..
        } = self;
        Ok(Snapshot {
            strings: atoms.strings,
            frames,
            stacks,
            segments,
            blocks,
            history,
            block_forward_frames,
            unknown_actions,
            traces,
            allocator_settings,
            external_annotations: annotations,
            extra,
            layout,
            protocol,
            warnings: warnings.into_strings(),
        })
    }

    /// A snapshot from a file that ends before STOP: every whole segment and trace event read
    /// before the cut, or an error when there is none (or the layout is not recognised).
    ///
    /// The containers not yet inside another one are exactly the values still open on the
    /// pickle VM's stack, in the order they were created. For the layout every producer writes
    /// (`{segments: [...], device_traces: [[...], ...], ...}`, segments first, FORMAT.md §2)
    /// that is: the top-level dict, the segment list, then either the whole segments read so
    /// far (a cut inside the segment list) or the `device_traces` list, its device lists so far
    /// and the events of the last one not yet appended to it (a cut inside the traces). A
    /// record cut in the middle is dropped; so are the keys after `device_traces`.
    pub(crate) fn recover(
        mut self,
        atoms: Atoms,
        protocol: u8,
    ) -> Result<(Snapshot, Recovered), String> {
        let open: Vec<u32> = (0..self.objs.len() as u32)
            .filter(|&i| !self.is_consumed(i))
            .collect();
        let mut it = open.iter().copied().peekable();
        let Some(root) = it.next() else {
            return Err("nothing was read before the cut".into());
        };
        let mut rec = Recovered::default();
        let bare = match self.objs.get(root as usize).copied() {
            Some(Obj::Dict(EMPTY)) => false,
            Some(Obj::Dict(idx)) => {
                // The top-level dict got its items: only STOP is missing.
                let pairs = self.items(idx);
                let k = &self.keys;
                if Self::get(&pairs, k.segments).is_none()
                    && Self::get(&pairs, k.device_traces).is_none()
                {
                    return Err("the top level read before the cut is not a memory snapshot".into());
                }
                let snap = self.finish(Value::Obj(ObjId(root)), atoms, protocol)?;
                rec.segments = snap.segments.len();
                rec.segments_complete = true;
                rec.events = snap.traces.iter().map(DeviceTrace::len).sum();
                rec.traces_complete = true;
                rec.only_stop_missing = true;
                return Ok((snap, rec));
            }
            Some(Obj::List(_) | Obj::Events(_)) => true,
            _ => return Err("the top level read before the cut is not a memory snapshot".into()),
        };
        let is_list = |b: &Self, i: u32| {
            matches!(b.objs.get(i as usize), Some(Obj::List(_) | Obj::Events(_)))
        };
        // The segment list: the top level itself (a bare list), or the first value in the dict.
        let seg_list = if bare {
            Some(root)
        } else {
            it.next_if(|&i| is_list(&self, i))
        };
        let mut segments: Vec<Value> = Vec::new();
        let seg_obj = seg_list.and_then(|l| self.objs.get(l as usize).copied());
        if let Some(Obj::Events(_)) = seg_obj {
            return Err("the first value read before the cut is not a list of segments".into());
        }
        if let Some(Obj::List(idx)) = seg_obj {
            segments.extend_from_slice(&self.items(idx));
            if !segments
                .iter()
                .all(|v| matches!(self.obj(*v), Some(Obj::Dict(_))))
            {
                return Err("the first value read before the cut is not a list of segments".into());
            }
        }
        // Whole segments not yet appended to the list (the cut is inside the segment list).
        let mut pending_segments = false;
        while let Some(i) = it.next_if(|&i| self.is_segment_dict(i)) {
            segments.push(Value::Obj(ObjId(i)));
            pending_segments = true;
        }
        rec.segments = segments.len();
        let mut traces: Option<Vec<Value>> = None;
        if !bare && !pending_segments {
            if let Some(d) = it.next_if(|&i| is_list(&self, i)) {
                rec.segments_complete = true;
                match self.objs.get(d as usize).copied() {
                    Some(Obj::List(idx)) if idx != EMPTY => {
                        // `device_traces` was read to its end.
                        rec.traces_complete = true;
                        traces = Some(self.items(idx).to_vec());
                    }
                    Some(Obj::Events(run)) => {
                        rec.traces_complete = true;
                        traces = Some(self.event_run_values(run));
                    }
                    _ => {
                        // The device lists read so far; the cut is in the last one.
                        let mut lists: Vec<u32> = Vec::new();
                        while let Some(t) = it.next_if(|&i| self.is_trace_list(i)) {
                            lists.push(t);
                        }
                        let mut tail: Vec<Value> = Vec::new();
                        while let Some(e) = it
                            .next_if(|&i| matches!(self.objs.get(i as usize), Some(Obj::Event(_))))
                        {
                            tail.push(Value::Obj(ObjId(e)));
                        }
                        let mut out: Vec<Value> =
                            lists.iter().map(|&t| Value::Obj(ObjId(t))).collect();
                        if let Some(last) = lists.last() {
                            rec.cut_device = Some(lists.len() - 1);
                            if !tail.is_empty() {
                                let mut items = match self.objs.get(*last as usize).copied() {
                                    Some(Obj::List(idx)) => self.items(idx).to_vec(),
                                    Some(Obj::Events(run)) => self.event_run_values(run),
                                    _ => Vec::new(),
                                };
                                items.extend_from_slice(&tail);
                                let l = self.new_list_of(&items)?;
                                if let Some(slot) = out.last_mut() {
                                    *slot = l;
                                }
                            }
                        }
                        traces = Some(out);
                    }
                }
            }
        }
        let seg_value = self.new_list_of(&segments)?;
        let root = if bare {
            seg_value
        } else {
            let mut pairs = vec![Value::Str(self.keys.segments), seg_value];
            if let Some(t) = traces {
                let t = self.new_list_of(&t)?;
                pairs.extend([Value::Str(self.keys.device_traces), t]);
            }
            let idx = self.new_store(&pairs, true)?;
            Value::Obj(self.add(Obj::Dict(idx))?)
        };
        let snap = self.finish(root, atoms, protocol)?;
        rec.events = snap.traces.iter().map(DeviceTrace::len).sum();
        if snap.segments.is_empty() && rec.events == 0 {
            return Err("no whole segment or trace event was read before the cut".into());
        }
        Ok((snap, rec))
    }

    /// A generic list holding `items` (a value for [`Self::finish`]).
    fn new_list_of(&mut self, items: &[Value]) -> Result<Value, String> {
        let idx = if items.is_empty() {
            EMPTY
        } else {
            self.new_store(items, false)?
        };
        Ok(Value::Obj(self.add(Obj::List(idx))?))
    }

    /// A whole segment dict: its items arrived and include `total_size` or `blocks`.
    fn is_segment_dict(&self, i: u32) -> bool {
        match self.objs.get(i as usize) {
            Some(Obj::Dict(idx)) if *idx != EMPTY => self.items(*idx).chunks_exact(2).any(|kv| {
                kv[0] == Value::Str(self.keys.total_size) || kv[0] == Value::Str(self.keys.blocks)
            }),
            _ => false,
        }
    }

    /// A device's trace list: empty so far, or holding only trace events.
    fn is_trace_list(&self, i: u32) -> bool {
        match self.objs.get(i as usize) {
            Some(Obj::List(EMPTY) | Obj::Events(_)) => true,
            Some(Obj::List(idx)) => self
                .items(*idx)
                .iter()
                .all(|v| matches!(self.obj(*v), Some(Obj::Event(_)))),
            _ => false,
        }
    }

    fn read_annotations(&mut self, v: Value, atoms: &Atoms) -> Vec<Annotation> {
        let items = self.list_items(v).map(|x| x.to_vec()).unwrap_or_default();
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            let Some(pairs) = self.dict_pairs(it).map(|p| p.to_vec()) else {
                self.warnings.warn("annotation type", || {
                    "an external annotation is not a dict; skipped".into()
                });
                continue;
            };
            let mut a = Annotation {
                name: NO_STR,
                stage: NO_STR,
                device: 0,
                time_us: NO_TIME,
                extra: Vec::new(),
            };
            for kv in pairs.chunks_exact(2) {
                let Value::Str(key) = kv[0] else { continue };
                let k = &self.keys;
                if key == k.name {
                    a.name = self.str_of(kv[1], "annotation name");
                } else if key == k.stage {
                    a.stage = self.str_of(kv[1], "annotation stage");
                } else if key == k.device {
                    a.device = self.i64_of(kv[1], atoms, "annotation device");
                } else if key == k.time_us {
                    a.time_us = self.i64_of(kv[1], atoms, "annotation time_us");
                } else if let Value::Str(s) = kv[1] {
                    a.extra.push((key, s));
                }
            }
            out.push(a);
        }
        out
    }

    #[allow(clippy::type_complexity)]
    fn read_segments(
        &mut self,
        v: Value,
        atoms: &Atoms,
    ) -> Result<(Vec<Segment>, Vec<Block>, Vec<HistoryEntry>), String> {
        let Some(items) = self.list_items(v).map(|x| x.to_vec()) else {
            return Err("not a memory snapshot: `segments` is not a list".into());
        };
        let mut segments = Vec::with_capacity(items.len());
        // Sized once (doubling left up to half of the blocks' bytes unused in the model).
        let n_blocks: usize = items
            .iter()
            .filter_map(|it| match self.obj(*it) {
                Some(Obj::Dict(idx)) if idx != EMPTY => self
                    .store
                    .dict_value(Store::items_at(idx), self.keys.blocks),
                _ => None,
            })
            .filter_map(|b| self.list_len(b))
            .sum();
        let mut blocks = Vec::with_capacity(n_blocks);
        let mut history = Vec::new();
        for it in items {
            let Some(pairs) = self.dict_pairs(it).map(|p| p.to_vec()) else {
                self.warnings
                    .warn("segment type", || "a segment is not a dict; skipped".into());
                continue;
            };
            let mut s = Segment {
                device: 0,
                address: 0,
                total_size: 0,
                allocated_size: 0,
                active_size: 0,
                requested_size: 0,
                stream: 0,
                segment_type: NO_STR,
                pool_id: (0, 0),
                is_expandable: false,
                stack: StackId::EMPTY,
                blocks: (0, 0),
            };
            let mut block_list = None;
            for kv in pairs.chunks_exact(2) {
                let Value::Str(key) = kv[0] else { continue };
                let val = kv[1];
                let k = &self.keys;
                if key == k.device {
                    s.device = self.i64_of(val, atoms, "segment device");
                } else if key == k.address {
                    s.address = self.u64_of(val, atoms, "segment address");
                } else if key == k.total_size {
                    s.total_size = self.u64_of(val, atoms, "total_size");
                } else if key == k.allocated_size {
                    s.allocated_size = self.u64_of(val, atoms, "allocated_size");
                } else if key == k.active_size {
                    s.active_size = self.u64_of(val, atoms, "active_size");
                } else if key == k.requested_size {
                    s.requested_size = self.u64_of(val, atoms, "segment requested_size");
                } else if key == k.stream {
                    s.stream = int_i128(val, atoms).map(|x| x as u64).unwrap_or(0);
                } else if key == k.segment_type {
                    s.segment_type = self.str_of(val, "segment_type");
                } else if key == k.segment_pool_id || key == k.pool_id {
                    s.pool_id = self.pair_of(val, atoms, "segment_pool_id");
                } else if key == k.is_expandable {
                    s.is_expandable = matches!(val, Value::Bool(true));
                } else if key == k.frames {
                    s.stack = self.stack_of(val, atoms);
                } else if key == k.blocks {
                    block_list = Some(val);
                } else {
                    let name = atoms.str(key).to_string();
                    self.warnings.warn(&format!("segment key {name}"), || {
                        format!("segments have an unknown key `{name}`; ignored")
                    });
                }
            }
            let first = blocks.len() as u32;
            let mut addr = s.address;
            let bl: Vec<Value> = block_list
                .and_then(|b| self.list_items(b))
                .map(|x| x.to_vec())
                .unwrap_or_default();
            for b in bl {
                let Some(bp) = self.dict_pairs(b).map(|p| p.to_vec()) else {
                    self.warnings
                        .warn("block type", || "a block is not a dict; skipped".into());
                    continue;
                };
                let block = self.read_block(&bp, blocks.len() as u32, addr, atoms, &mut history);
                addr = addr.wrapping_add(block.size);
                blocks.push(block);
            }
            s.blocks = (first, blocks.len() as u32);
            segments.push(s);
        }
        Ok((segments, blocks, history))
    }

    fn read_block(
        &mut self,
        pairs: &[Value],
        block_index: u32,
        computed_addr: u64,
        atoms: &Atoms,
        history: &mut Vec<HistoryEntry>,
    ) -> Block {
        let mut b = Block {
            address: computed_addr,
            size: 0,
            requested_size: 0,
            state: BlockState::Inactive,
            stack: StackId::EMPTY,
            history: (0, 0),
        };
        let mut has_frames = false;
        let mut file_addr = None;
        let mut hist: Option<Value> = None;
        for kv in pairs.chunks_exact(2) {
            let Value::Str(key) = kv[0] else { continue };
            let val = kv[1];
            let k = &self.keys;
            if key == k.size {
                b.size = self.u64_of(val, atoms, "block size");
            } else if key == k.requested_size {
                b.requested_size = self.u64_of(val, atoms, "block requested_size");
            } else if key == k.state {
                let k = &self.keys;
                b.state = match val {
                    Value::Str(s) if s == k.active_allocated => BlockState::ActiveAllocated,
                    Value::Str(s) if s == k.active_pending_free => BlockState::ActivePendingFree,
                    Value::Str(s) if s == k.inactive => BlockState::Inactive,
                    Value::Str(s) => {
                        let name = atoms.str(s).to_string();
                        self.warnings.warn(&format!("block state {name}"), || {
                            format!("unknown block state `{name}`")
                        });
                        BlockState::Unknown
                    }
                    _ => BlockState::Unknown,
                };
            } else if key == k.frames {
                has_frames = true;
                b.stack = self.stack_of(val, atoms);
            } else if key == k.address {
                file_addr = Some(self.u64_of(val, atoms, "block address"));
            } else if key == k.history {
                hist = Some(val);
            } else if key == k.forward_frames {
                let f = self.strs_of(val, "forward_frames");
                self.block_forward_frames.push((block_index, f));
            } else {
                let name = atoms.str(key).to_string();
                self.warnings.warn(&format!("block key {name}"), || {
                    format!("blocks have an unknown key `{name}`; ignored")
                });
            }
        }
        if let Some(fa) = file_addr {
            if fa != computed_addr {
                self.warnings.warn("block address", || {
                    format!("a block's `address` 0x{fa:x} differs from its position in the segment 0x{computed_addr:x}; the position is used")
                });
            }
        }
        // Legacy (torch 2.0) history entries.
        let mut first_real_size = None;
        let mut first_stack = None;
        if let Some(h) = hist {
            let start = history.len() as u32;
            let entries: Vec<Value> = self.list_items(h).map(|x| x.to_vec()).unwrap_or_default();
            for e in entries {
                let Some(ep) = self.dict_pairs(e).map(|p| p.to_vec()) else {
                    continue;
                };
                let mut he = HistoryEntry {
                    addr: 0,
                    real_size: 0,
                    stack: StackId::EMPTY,
                };
                for kv in ep.chunks_exact(2) {
                    let Value::Str(key) = kv[0] else { continue };
                    let k = &self.keys;
                    if key == k.addr {
                        he.addr = self.u64_of(kv[1], atoms, "history addr");
                    } else if key == k.real_size {
                        he.real_size = self.u64_of(kv[1], atoms, "history real_size");
                    } else if key == k.frames {
                        he.stack = self.stack_of(kv[1], atoms);
                    }
                }
                if first_real_size.is_none() {
                    first_real_size = Some(he.real_size);
                    first_stack = Some(he.stack);
                }
                history.push(he);
            }
            b.history = (start, history.len() as u32);
        }
        if !has_frames {
            // SEMANTICS.md §2 legacy fill: frames = history[0].frames; requested = requested || history[0].real_size || size.
            b.stack = first_stack.unwrap_or(StackId::EMPTY);
            if b.requested_size == 0 {
                b.requested_size = match first_real_size {
                    Some(r) => r,
                    None => b.size,
                };
            }
        }
        b
    }

    fn read_traces(&mut self, v: Value, atoms: &Atoms) -> Result<Vec<DeviceTrace>, String> {
        let Some(lists) = self.list_items(v).map(|x| x.to_vec()) else {
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
                        let p = self.items(idx).to_vec();
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
    fn gather_all(&mut self) -> DeviceTrace {
        std::mem::take(&mut self.rows).into_trace()
    }

    /// Copy the given event rows into one device's columns.
    fn gather(&mut self, rows: &[u32]) -> DeviceTrace {
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

    fn check_invariants(
        &mut self,
        segments: &[Segment],
        blocks: &[Block],
        traces: &[DeviceTrace],
        atoms: &Atoms,
    ) {
        for s in segments {
            let bl = blocks
                .get(s.blocks.0 as usize..s.blocks.1 as usize)
                .unwrap_or(&[]);
            if bl.is_empty() {
                continue;
            }
            let total: u64 = bl
                .iter()
                .map(|b| b.size)
                .fold(0u64, |a, b| a.wrapping_add(b));
            let legacy = bl.iter().any(|b| b.history.1 > b.history.0);
            if total != s.total_size && !legacy {
                let addr = s.address;
                self.warnings.warn("tile", || {
                    format!("blocks do not tile their segment (e.g. segment 0x{addr:x}: blocks sum to {total}, total_size {})", s.total_size)
                });
            }
            let alloc: u64 = bl
                .iter()
                .filter(|b| b.state == BlockState::ActiveAllocated)
                .map(|b| b.size)
                .sum();
            if alloc != s.allocated_size && !legacy {
                let addr = s.address;
                self.warnings.warn("allocated_size", || {
                    format!("a segment's allocated_size differs from the sum of its active blocks (e.g. segment 0x{addr:x}: {} vs {alloc})", s.allocated_size)
                });
            }
        }
        for (d, t) in traces.iter().enumerate() {
            let mut prev = NO_TIME;
            if t.times().any(|x| {
                let back = prev != NO_TIME && x != NO_TIME && x < prev;
                prev = x;
                back
            }) {
                self.warnings.warn("time order", || {
                    format!("device {d}: time_us goes backwards in the trace")
                });
            }
            let mut unknown: Vec<UnknownAction> = t
                .actions()
                .filter_map(|a| {
                    if let Action::Unknown(s) = a {
                        Some(s)
                    } else {
                        None
                    }
                })
                .collect();
            unknown.sort_unstable();
            unknown.dedup();
            for u in unknown {
                let s = self
                    .unknown_actions
                    .get(u.0 as usize)
                    .copied()
                    .unwrap_or(NO_STR);
                let name = if s == NO_STR {
                    "<missing>".to_string()
                } else {
                    atoms.str(s).to_string()
                };
                let n = t.actions().filter(|a| *a == Action::Unknown(u)).count();
                self.warnings.warn(&format!("unknown action {d} {name}"), || {
                    format!("device {d}: {n} trace entries have the unknown action `{name}`; shown as unknown events")
                });
            }
        }
    }
}

impl Builder for SnapshotBuilder {
    fn new_list(&mut self, _: &Atoms) -> Result<ObjId, String> {
        self.add(Obj::List(EMPTY))
    }

    fn new_dict(&mut self, _: &Atoms) -> Result<ObjId, String> {
        self.add(Obj::Dict(EMPTY))
    }

    fn new_tuple(&mut self, items: &[Value], _: &Atoms) -> Result<ObjId, String> {
        self.mark_consumed(items);
        let idx = if items.is_empty() {
            EMPTY
        } else {
            self.new_store(items, false)?
        };
        self.add(Obj::Tuple(idx))
    }

    fn extend_list(&mut self, list: Value, items: &[Value], atoms: &Atoms) -> Result<(), String> {
        self.mark_consumed(items);
        let Value::Obj(ObjId(i)) = list else {
            return Err(format!(
                "APPENDS onto a {}, expected a list",
                list.type_name()
            ));
        };
        match self.objs.get(i as usize).copied() {
            Some(Obj::List(EMPTY)) if items.is_empty() => Ok(()),
            Some(Obj::List(EMPTY)) => {
                // A trace list: a run of consecutive event rows, kept as (first row, count).
                if let Some(first) = items.first().and_then(|v| self.event_row(*v)) {
                    let consecutive = items
                        .iter()
                        .enumerate()
                        .all(|(k, v)| self.event_row(*v) == first.checked_add(k as u32));
                    if consecutive {
                        let run = u32::try_from(self.runs.len())
                            .map_err(|_| "too many trace lists".to_string())?;
                        self.runs.push((first, items.len() as u32));
                        if let Some(o) = self.objs.get_mut(i as usize) {
                            *o = Obj::Events(run);
                        }
                        return Ok(());
                    }
                }
                // A frame list (a traceback): intern it now instead of keeping its items.
                let slot = match self.intern_stack(items, atoms, true) {
                    Some(id) => Obj::Stack(id),
                    None => Obj::List(self.new_store(items, false)?),
                };
                if let Some(o) = self.objs.get_mut(i as usize) {
                    *o = slot;
                }
                Ok(())
            }
            Some(Obj::List(idx)) => {
                let idx = self.extend_store(idx, items, false)?;
                if let Some(o) = self.objs.get_mut(i as usize) {
                    *o = Obj::List(idx);
                }
                Ok(())
            }
            Some(Obj::Events(run)) => {
                let (start, len) = self.runs.get(run as usize).copied().unwrap_or((0, 0));
                let next = start.saturating_add(len);
                let consecutive = items
                    .iter()
                    .enumerate()
                    .all(|(k, v)| self.event_row(*v) == next.checked_add(k as u32));
                if consecutive {
                    if let Some(r) = self.runs.get_mut(run as usize) {
                        r.1 = len.saturating_add(items.len() as u32);
                    }
                    return Ok(());
                }
                // No longer a run: a generic list from here on.
                let mut v = self.event_run_values(run);
                v.extend_from_slice(items);
                let idx = self.new_store(&v, false)?;
                if let Some(o) = self.objs.get_mut(i as usize) {
                    *o = Obj::List(idx);
                }
                Ok(())
            }
            Some(Obj::Stack(s)) => {
                // A frame list extended after first use (never done by real producers): re-intern.
                let mut frames = self.stacks.get(s).to_vec();
                for it in items {
                    if let Some(f) = self.frame_of(*it, atoms) {
                        frames.push(f);
                    }
                }
                let id = self.stacks.push(&frames);
                if let Some(slot) = self.objs.get_mut(i as usize) {
                    *slot = Obj::Stack(id);
                }
                Ok(())
            }
            _ => Err("APPENDS onto something that is not a list".into()),
        }
    }

    fn set_items(&mut self, dict: Value, pairs: &[Value], atoms: &Atoms) -> Result<(), String> {
        self.mark_consumed(pairs);
        let Value::Obj(ObjId(i)) = dict else {
            return Err(format!(
                "SETITEMS onto a {}, expected a dict",
                dict.type_name()
            ));
        };
        let action = Value::Str(self.keys.action);
        match self.objs.get(i as usize).copied() {
            Some(Obj::Dict(EMPTY)) => {
                let slot = if pairs.chunks_exact(2).any(|kv| kv[0] == action) {
                    // A trace entry: lower it to a row right away.
                    let row = self.apply_event(None, pairs, atoms);
                    Obj::Event(row)
                } else {
                    Obj::Dict(self.new_store(pairs, true)?)
                };
                if let Some(o) = self.objs.get_mut(i as usize) {
                    *o = slot;
                }
                Ok(())
            }
            Some(Obj::Dict(idx)) => {
                let idx = self.extend_store(idx, pairs, true)?;
                if let Some(o) = self.objs.get_mut(i as usize) {
                    *o = Obj::Dict(idx);
                }
                Ok(())
            }
            Some(Obj::Event(row)) => {
                self.apply_event(Some(row), pairs, atoms);
                Ok(())
            }
            _ => Err("SETITEMS onto something that is not a dict".into()),
        }
    }
}

/// At most this many characters of a non-string dict key's JSON text are kept.
const MAX_KEY_CHARS: usize = 200;

/// `text` cut to [`MAX_KEY_CHARS`] characters (with `…` when cut).
fn short_key(mut text: String) -> String {
    if let Some((i, _)) = text.char_indices().nth(MAX_KEY_CHARS) {
        text.truncate(i);
        text.push('…');
    }
    text
}
