//! The pickle [`Builder`] that turns a snapshot pickle into the typed model while it streams.
//!
//! # How it works
//! Containers get an [`Obj`] slot (`objs.rs`: a run of trace entries costs 4 bytes per 64). A
//! dict whose items include the key `action` is a trace entry: its items are written straight
//! into event columns and the slot becomes `Obj::Event(row)`, so no generic dict is kept for the
//! (millions of) events. A dict with only block keys, or only segment keys, becomes a block or a
//! segment of the model the same way (`segments/`). Frame dicts and frame lists stay generic
//! until first used, then are interned and their slot replaced by `Obj::Frame` / `Obj::Stack`, so
//! a memo alias of the same list (how PyTorch shares tracebacks) costs one lookup. At STOP,
//! [`SnapshotBuilder::finish`] reads the top-level dict: the segments read so far (or, for an odd
//! file, segments still generic), settings and annotations from their generic dicts, and each
//! device's trace by gathering its event rows.

pub mod budget;
mod containers;
mod events;
mod finish;
mod frames;
mod keys;
mod objs;
mod recover;
mod rows;
mod segments;

use crate::model::*;
use crate::warnings::Warnings;
use budget::Budget;
use frames::OpenStack;
use keys::{EventKeys, Keys};
use memviz_pickle::{Atoms, Builder, ObjId, Store, StrId, Value};

/// What the builder's steps fail with: a message, and whether the input is corrupt, not a
/// memory snapshot ([`BuildError::Unexpected`]), past a bound such as the [`budget`]
/// ([`BuildError::Limit`]) or past the memory available.
pub use memviz_pickle::BuildError;
use objs::Objs;
use rows::Rows;
use rustc_hash::FxHashMap;
use segments::{RecordKeys, Records};

pub(crate) use recover::Recovered;

/// A container slot: 8 bytes. Generic containers keep their items in `SnapshotBuilder::store`
/// (index `EMPTY` = no items yet, no storage), lowered ones only an id.
#[derive(Clone, Copy, Debug)]
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
    /// A frame list interned and used (handed to an event, block or segment).
    Stack(StackId),
    /// A frame list interned when its first batch of items arrived, not used yet: a second
    /// batch makes it an [`Obj::OpenStack`] (how CPython writes a stack of more than 1 000
    /// frames) without the copy a used stack costs.
    FreshStack(StackId),
    /// A frame list being filled in several batches: its frames so far are
    /// `open[i].frames`, interned (once) when it is first used, so n batches cost O(n) and
    /// not a new stack each (n²/2 frames: a 300 KB file asked for 8 GB).
    OpenStack(u32),
    /// A block dict read when its items arrived, not yet placed in a segment: index into
    /// `records.pending` (see [`segments`]).
    Block(u32),
    /// A block dict placed in a segment read as it completed: index into `records.blocks`.
    PlacedBlock(u32),
    /// A segment dict read when its items arrived: index into `records.segments`.
    Segment(u32),
    /// The `blocks` list of that segment (its items were placed, then given back).
    SegmentBlocks(u32),
}

const EMPTY: u32 = u32::MAX;

/// Entries of the action cache.
const ACTION_CACHE: usize = 16;

pub struct SnapshotBuilder {
    objs: Objs,
    /// Input bytes read before the first trace entry (as [`Self::grow_for`] last saw them).
    trace_from: u64,
    /// Trace entries expected ([`Self::reserve`]), and whether the first one came.
    row_hint: usize,
    trace_started: bool,
    /// (first row, rows) of each [`Obj::Events`] list.
    runs: Vec<(u32, u32)>,
    /// Items of the generic containers (compact: see [`Store`]).
    store: Store,
    keys: Keys,
    rows: Rows,
    event_keys: EventKeys,
    actions: FxHashMap<StrId, Action>,
    /// (string id, action code) by string id modulo [`ACTION_CACHE`], in front of `actions`.
    action_cache: [(u32, u8); ACTION_CACHE],
    /// Names of unknown actions; index 0 is "no action key".
    unknown_actions: Vec<StrId>,
    /// Segments and blocks read so far.
    records: Records,
    record_keys: RecordKeys,
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
    /// Frame lists being filled ([`Obj::OpenStack`]); entries given back are empty.
    open: Vec<OpenStack>,
    /// Entries of `open` free for reuse.
    open_free: Vec<u32>,
    /// Legacy `history` lists read so far, by container id: their range of
    /// [`Records::history`](segments::Records), shared by every block that refers to the list.
    history_ranges: FxHashMap<u32, (u32, u32)>,
    /// Copies made per reference, bounded by the bytes read ([`budget`]).
    pub(crate) budget: Budget,
    pub(crate) warnings: Warnings,
}

/// How many more items a table of `len` items with room for `cap` should reserve once `done`
/// of `total` input bytes were read: None until it is 90 % full and the rest of the input
/// should bring more than its room at the rate so far (plus 5 %); then that, and at least a
/// sixteenth of `cap`.
pub(crate) fn room_needed(len: usize, cap: usize, done: u64, total: u64) -> Option<usize> {
    if done == 0 || total <= done || len < cap - cap / 10 {
        return None;
    }
    let left = (total - done) as f64 / done as f64 * 1.05;
    let want = len + (len as f64 * left) as usize + 4096;
    (want > cap).then(|| want.max(cap + cap / 16) - len)
}

/// Room for one more item in `v`, fallibly (doubling, as `push` would): an error naming `what`
/// instead of an abort when the memory is not there.
#[inline]
pub(crate) fn room<T>(v: &mut Vec<T>, what: &str) -> Result<(), BuildError> {
    if v.len() == v.capacity() {
        v.try_reserve(v.len().max(16))
            .map_err(|_| frames::oom(what, v.len() * std::mem::size_of::<T>()))?;
    }
    Ok(())
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

    /// The pickle bytes read so far, counting the chunk about to be pushed: what the copies
    /// made per reference are bounded by ([`budget`]).
    pub fn set_input_bytes(&mut self, bytes: u64) {
        self.budget.set_input(bytes);
    }

    /// A builder and the atoms (with its keys pre-interned) to start the unpickler with.
    pub fn new() -> (SnapshotBuilder, Atoms) {
        let mut atoms = Atoms::new();
        let keys = Keys::new(&mut atoms);
        let mut stack_index = FxHashMap::default();
        stack_index.insert(Box::from(&[][..]), StackId::EMPTY);
        let b = SnapshotBuilder {
            objs: Objs::default(),
            trace_from: 0,
            row_hint: 0,
            trace_started: false,
            runs: Vec::new(),
            store: Store::new(),
            event_keys: EventKeys::new(&keys),
            record_keys: RecordKeys::new(&keys),
            keys,
            rows: Rows::default(),
            actions: FxHashMap::default(),
            action_cache: [(u32::MAX, 0); ACTION_CACHE],
            unknown_actions: vec![NO_STR],
            records: Records::default(),
            frames: Vec::new(),
            frame_index: FxHashMap::default(),
            stacks: StackTable::default(),
            stack_index,
            stack_by_objs: FxHashMap::default(),
            scratch: Vec::new(),
            obj_scratch: Vec::new(),
            consumed: Vec::new(),
            open: Vec::new(),
            open_free: Vec::new(),
            history_ranges: FxHashMap::default(),
            budget: Budget::default(),
            warnings: Warnings::default(),
        };
        (b, atoms)
    }

    /// Expect about `events` trace entries: room for their containers now, for their rows when
    /// the first one arrives (after the segments, whose slack is given back first).
    pub fn reserve(&mut self, events: usize) {
        self.row_hint = events;
        self.objs.reserve(events);
    }

    /// The first trace entry: the segments before it are done (in the usual layout), the
    /// columns get the rows expected.
    #[cold]
    fn start_trace(&mut self) {
        self.trace_started = true;
        self.records.shrink_to_fit();
        if self.row_hint > 0 {
            self.reserve_rows(self.row_hint);
        }
    }

    /// Room for exactly `more` event rows in every column (what the memory allows).
    fn reserve_rows(&mut self, more: usize) {
        let _ = self.rows.try_reserve(more);
    }

    /// Room for the next event row: the columns double, fallibly (an error instead of an
    /// abort when the memory is not there).
    #[cold]
    fn grow_rows(&mut self) -> Result<(), BuildError> {
        let len = self.rows.len();
        self.rows.try_reserve(len.max(1024)).map_err(|_| {
            BuildError::OutOfMemory(format!(
                "out of memory: the trace columns need room for more than {len} events and the \
                 system has no more to give (the file is too large for the memory available)"
            ))
        })
    }

    /// `done` of `total` input bytes were read: when the event columns are nearly full, size
    /// them for the rest of the file at the rate of the trace so far (plus 5 %, and at least
    /// a sixteenth more) instead of letting them double. On a 150 MB file of 67 bytes per
    /// entry (fewer than the loader's first guess) doubling left 1.9 M rows of 15 bytes
    /// unused. The rate counts the bytes since the first row only: the segments before the
    /// trace (11 % of that file) made it rise all along, and the columns grow four times.
    pub(crate) fn grow_for(&mut self, done: u64, total: u64) {
        let rows = self.rows.len();
        if rows == 0 {
            self.trace_from = done;
            return;
        }
        let trace_done = done.saturating_sub(self.trace_from);
        let trace_total = total.saturating_sub(self.trace_from);
        if let Some(m) = room_needed(rows, self.rows.stack.capacity(), trace_done, trace_total) {
            self.reserve_rows(m);
        }
    }

    /// Mark the containers among `items` as consumed (they are now inside another one).
    fn mark_consumed(&mut self, items: &[Value]) {
        for v in items {
            if let Value::Obj(ObjId(i)) = *v {
                self.consume(i);
            }
        }
    }

    /// Mark container `i` as consumed.
    #[inline]
    fn consume(&mut self, i: u32) {
        let w = (i / 64) as usize;
        if w >= self.consumed.len() {
            self.consumed.resize(w + 1, 0);
        }
        if let Some(word) = self.consumed.get_mut(w) {
            *word |= 1 << (i % 64);
        }
    }

    fn is_consumed(&self, i: u32) -> bool {
        self.consumed
            .get((i / 64) as usize)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn add(&mut self, o: Obj) -> Result<ObjId, BuildError> {
        Ok(ObjId(self.objs.push(o)?))
    }

    fn obj(&self, v: Value) -> Option<Obj> {
        match v {
            Value::Obj(ObjId(i)) => self.objs.get(i as usize),
            _ => None,
        }
    }

    /// The items of a generic container (counted against the reads of the [`budget`]:
    /// nothing once they are spent).
    fn items(&self, idx: u32) -> Vec<Value> {
        if idx == EMPTY || !self.budget.read(self.store.len(Store::items_at(idx))) {
            return Vec::new();
        }
        self.store.get(Store::items_at(idx))
    }

    /// Move the items out of a generic container's storage.
    fn take_items(&mut self, idx: u32) -> Vec<Value> {
        if idx == EMPTY || !self.budget.read(self.store.len(Store::items_at(idx))) {
            return Vec::new();
        }
        self.store.take(Store::items_at(idx))
    }

    /// Storage for a new generic container (`dict`: `items` are key/value pairs).
    fn new_store(&mut self, items: &[Value], dict: bool) -> Result<u32, BuildError> {
        let at = if dict {
            self.store.new_dict(items)?
        } else {
            self.store.new_seq(items)?
        };
        Ok(Store::raw(at))
    }

    /// Append to a generic container's storage; returns its (possibly moved) index.
    fn extend_store(&mut self, idx: u32, items: &[Value], dict: bool) -> Result<u32, BuildError> {
        if idx == EMPTY {
            return self.new_store(items, dict);
        }
        Ok(Store::raw(self.store.extend(
            Store::items_at(idx),
            items,
            dict,
        )?))
    }
}

impl SnapshotBuilder {
    #[inline]
    fn u64_of(&mut self, v: Value, atoms: &Atoms, what: &'static str) -> u64 {
        match v {
            Value::Int(i) if i >= 0 => i as u64,
            _ => self.u64_of_slow(v, atoms, what),
        }
    }

    #[cold]
    fn u64_of_slow(&mut self, v: Value, atoms: &Atoms, what: &'static str) -> u64 {
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

    #[inline]
    fn i64_of(&mut self, v: Value, atoms: &Atoms, what: &'static str) -> i64 {
        match v {
            Value::Int(i) => i,
            _ => self.i64_of_slow(v, atoms, what),
        }
    }

    #[cold]
    fn i64_of_slow(&mut self, v: Value, atoms: &Atoms, what: &'static str) -> i64 {
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
        // The length first: a long shared list is not read again for each reference.
        let items: Option<[Value; 2]> = match self.list_len(v) {
            Some(2) => match self.list_items(v).as_deref() {
                Some(&[a, b]) => Some([a, b]),
                _ => None,
            },
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

    /// The first `max` items of a list or tuple (counted against the reads of the budget).
    fn list_prefix(&self, v: Value, max: usize) -> Option<Vec<Value>> {
        let at = match self.obj(v) {
            Some(Obj::List(EMPTY) | Obj::Tuple(EMPTY)) => return Some(Vec::new()),
            Some(Obj::List(idx) | Obj::Tuple(idx)) => Store::items_at(idx),
            _ => return None,
        };
        let n = self.store.len(at).min(max);
        if !self.budget.read(n) {
            return Some(Vec::new());
        }
        Some((0..n).filter_map(|k| self.store.seq_value(at, k)).collect())
    }

    /// Items of a list or tuple.
    fn list_items(&self, v: Value) -> Option<Vec<Value>> {
        match self.obj(v) {
            Some(Obj::List(idx) | Obj::Tuple(idx)) => Some(self.items(idx)),
            _ => None,
        }
    }
}
