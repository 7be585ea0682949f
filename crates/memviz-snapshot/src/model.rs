//! The model types. Ids index tables; hot per-event data is struct-of-arrays.

pub use crate::columns::Column;
use crate::columns::{ActionColumn, TimeColumn, U64Column};
use memviz_pickle::{Interner, StrId};

/// "No string here" in optional string columns.
pub const NO_STR: StrId = StrId(u32::MAX);
/// "No timestamp" in [`DeviceTrace::time_us`].
pub const NO_TIME: i64 = i64::MIN;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameId(pub u32);

/// An interned call stack (innermost frame first). `StackId::EMPTY` is the empty stack.
/// `Pod`: a slice of them is a slice of `u32`s (`bytemuck::cast_slice`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, bytemuck::Pod, bytemuck::Zeroable,
)]
#[repr(transparent)]
pub struct StackId(pub u32);

impl StackId {
    pub const EMPTY: StackId = StackId(0);
}

/// One stack frame. Optional strings are [`NO_STR`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub name: StrId,
    pub filename: StrId,
    pub line: i64,
    pub fx_node_op: StrId,
    pub fx_node_name: StrId,
    pub fx_node_target: StrId,
    pub fx_original_trace: StrId,
}

/// Interned stacks stored flat: stack `i` is `frames[offsets[i]..offsets[i+1]]`.
#[derive(Debug, Clone)]
pub struct StackTable {
    pub(crate) offsets: Vec<u32>,
    pub(crate) frames: Vec<FrameId>,
}

impl Default for StackTable {
    fn default() -> Self {
        StackTable {
            offsets: vec![0, 0],
            frames: Vec::new(),
        }
    }
}

impl StackTable {
    pub fn get(&self, id: StackId) -> &[FrameId] {
        let i = id.0 as usize;
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => self.frames.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Add a stack: None (and nothing added) when the memory is not there, or past 2^32 - 1
    /// frames or stacks (the offsets are `u32`).
    pub(crate) fn try_push(&mut self, frames: &[FrameId]) -> Option<StackId> {
        let id = StackId(u32::try_from(self.offsets.len() - 1).ok()?);
        let end = u32::try_from(self.frames.len().checked_add(frames.len())?).ok()?;
        if self.frames.capacity() - self.frames.len() < frames.len() {
            let more = frames.len().max(self.frames.len());
            self.frames.try_reserve(more).ok()?;
        }
        if self.offsets.len() == self.offsets.capacity() {
            self.offsets.try_reserve(self.offsets.len()).ok()?;
        }
        self.frames.extend_from_slice(frames);
        self.offsets.push(end);
        Some(id)
    }
}

/// Id of an unknown action's name in [`Snapshot::unknown_actions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnknownAction(pub u8);

/// What an allocator event did (FORMAT.md §4). `Unknown` keeps the name (by id) and becomes a
/// warning. Stored as one byte per event ([`Action::code`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Snapshot,
    Oom,
    Annotate,
    Unknown(UnknownAction),
}

impl Action {
    pub fn from_name(s: &str) -> Option<Action> {
        Some(match s {
            "alloc" => Action::Alloc,
            "free_requested" => Action::FreeRequested,
            "free_completed" => Action::FreeCompleted,
            "segment_alloc" => Action::SegmentAlloc,
            "segment_free" => Action::SegmentFree,
            "segment_map" => Action::SegmentMap,
            "segment_unmap" => Action::SegmentUnmap,
            "snapshot" => Action::Snapshot,
            "oom" => Action::Oom,
            "annotate" => Action::Annotate,
            _ => return None,
        })
    }

    /// Distinct unknown action names a trace can tell apart (codes 10 to 255).
    pub const MAX_UNKNOWN: usize = 246;

    /// One byte: the known actions are 0 to 9, `Unknown(k)` is 10 + k (k < [`Self::MAX_UNKNOWN`];
    /// larger k saturate at 255).
    #[inline]
    pub fn code(self) -> u8 {
        match self {
            Action::Alloc => 0,
            Action::FreeRequested => 1,
            Action::FreeCompleted => 2,
            Action::SegmentAlloc => 3,
            Action::SegmentFree => 4,
            Action::SegmentMap => 5,
            Action::SegmentUnmap => 6,
            Action::Snapshot => 7,
            Action::Oom => 8,
            Action::Annotate => 9,
            Action::Unknown(UnknownAction(k)) => k.saturating_add(10),
        }
    }

    #[inline]
    pub fn from_code(c: u8) -> Action {
        match c {
            0 => Action::Alloc,
            1 => Action::FreeRequested,
            2 => Action::FreeCompleted,
            3 => Action::SegmentAlloc,
            4 => Action::SegmentFree,
            5 => Action::SegmentMap,
            6 => Action::SegmentUnmap,
            7 => Action::Snapshot,
            8 => Action::Oom,
            9 => Action::Annotate,
            k => Action::Unknown(UnknownAction(k - 10)),
        }
    }

    /// The name as written in the file, for the known actions.
    pub fn known_name(&self) -> Option<&'static str> {
        Some(match self {
            Action::Alloc => "alloc",
            Action::FreeRequested => "free_requested",
            Action::FreeCompleted => "free_completed",
            Action::SegmentAlloc => "segment_alloc",
            Action::SegmentFree => "segment_free",
            Action::SegmentMap => "segment_map",
            Action::SegmentUnmap => "segment_unmap",
            Action::Snapshot => "snapshot",
            Action::Oom => "oom",
            Action::Annotate => "annotate",
            Action::Unknown(_) => return None,
        })
    }
}

/// One device's trace, as columns. Row `i` of every column is event `i`. The hot columns
/// (action, address, size, time, stack) are compact ([`crate::columns`]) and read through
/// accessors that mirror `Vec::get`: `None` past the end. Absent strings are [`NO_STR`].
#[derive(Debug, Clone)]
pub struct DeviceTrace {
    pub(crate) action: ActionColumn,
    pub(crate) addr: U64Column,
    pub(crate) size: U64Column,
    /// Empty when no event has a time.
    pub(crate) time_us: TimeColumn,
    pub(crate) stack: Vec<StackId>,
    /// Raw `cudaStream_t` value.
    pub stream: Column<u64>,
    pub compile_context: Column<StrId>,
    pub user_metadata: Column<StrId>,
    /// Rarely present fields, sorted by event index.
    pub device_free: Vec<(u32, u64)>,
    pub pool_id: Vec<(u32, (i64, i64))>,
    pub internal_metadata: Vec<(u32, StrId)>,
    pub category: Vec<(u32, StrId)>,
    pub forward_frames: Vec<(u32, Vec<StrId>)>,
}

impl DeviceTrace {
    /// A trace from plain columns (tests, synthetic data): `time_us` may be empty (no times);
    /// the other columns must have the length of `action` (shorter ones read as absent rows).
    /// The sparse and string columns start empty / constant; set them afterwards.
    pub fn from_columns(
        action: &[Action],
        addr: &[u64],
        size: &[u64],
        time_us: &[i64],
        stack: &[StackId],
    ) -> DeviceTrace {
        let n = action.len();
        DeviceTrace {
            action: ActionColumn(action.iter().map(|a| a.code()).collect()),
            addr: U64Column::from_values(addr.iter().copied()),
            size: U64Column::from_values(size.iter().copied()),
            time_us: TimeColumn::from_values(time_us.iter().copied()),
            stack: stack.to_vec(),
            stream: Column::constant(0, n),
            compile_context: Column::constant(NO_STR, n),
            user_metadata: Column::constant(NO_STR, n),
            device_free: Vec::new(),
            pool_id: Vec::new(),
            internal_metadata: Vec::new(),
            category: Vec::new(),
            forward_frames: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.action.len()
    }
    pub fn is_empty(&self) -> bool {
        self.action.is_empty()
    }
    pub fn has_time(&self) -> bool {
        !self.time_us.is_empty()
    }
    #[inline]
    pub fn action(&self, i: usize) -> Option<Action> {
        self.action.get(i)
    }
    #[inline]
    pub fn addr(&self, i: usize) -> Option<u64> {
        self.addr.get(i)
    }
    #[inline]
    pub fn size(&self, i: usize) -> Option<u64> {
        self.size.get(i)
    }
    /// The event's `time_us` ([`NO_TIME`] when it has none); `None` past the end or when no
    /// event of the trace has a time.
    #[inline]
    pub fn time_us(&self, i: usize) -> Option<i64> {
        self.time_us.get(i)
    }
    #[inline]
    pub fn stack(&self, i: usize) -> Option<StackId> {
        self.stack.get(i).copied()
    }
    pub fn actions(&self) -> impl Iterator<Item = Action> + '_ {
        self.action.iter()
    }
    /// The event's address key (see [`U64Column::key`]): equal keys, equal addresses.
    #[inline]
    pub fn addr_key(&self, i: usize) -> Option<u64> {
        self.addr.key(i)
    }
    /// Some(n) when every address key is below n (a coded column), None when keys are addresses.
    pub fn addr_key_space(&self) -> Option<usize> {
        self.addr.key_space()
    }
    /// The address an [`Self::addr_key`] stands for.
    pub fn addr_of_key(&self, key: u64) -> u64 {
        self.addr.value_of_key(key)
    }
    pub fn addrs(&self) -> impl Iterator<Item = u64> + '_ {
        self.addr.iter()
    }
    pub fn sizes(&self) -> impl Iterator<Item = u64> + '_ {
        self.size.iter()
    }
    /// Every event's time ([`NO_TIME`] for events without one); empty when no event has one.
    pub fn times(&self) -> impl Iterator<Item = i64> + '_ {
        self.time_us.iter()
    }
    pub fn stacks(&self) -> &[StackId] {
        &self.stack
    }
    pub fn has_compile_context(&self) -> bool {
        !self.compile_context.all_equal_to(NO_STR)
    }
    pub fn has_user_metadata(&self) -> bool {
        !self.user_metadata.all_equal_to(NO_STR)
    }
    pub fn device_free_of(&self, event: u32) -> Option<u64> {
        self.device_free
            .binary_search_by_key(&event, |e| e.0)
            .ok()
            .and_then(|i| self.device_free.get(i))
            .map(|e| e.1)
    }
    /// Heap bytes per part: action, addr (codes), addr table, size (codes), size table, time,
    /// stack, stream / compile_context / user_metadata, sparse columns.
    pub fn heap_bytes_by_part(&self) -> Vec<(&'static str, usize)> {
        let (addr_rows, addr_table) = self.addr.heap_bytes();
        let (size_rows, size_table) = self.size.heap_bytes();
        vec![
            ("trace.action", self.action.heap_bytes()),
            ("trace.addr", addr_rows),
            ("trace.addr_table", addr_table),
            ("trace.size", size_rows),
            ("trace.size_table", size_table),
            ("trace.time_us", self.time_us.heap_bytes()),
            ("trace.stack", self.stack.capacity() * 4),
            (
                "trace.stream_cc_um",
                self.stream.heap_bytes()
                    + self.compile_context.heap_bytes()
                    + self.user_metadata.heap_bytes(),
            ),
            (
                "trace.sparse",
                self.device_free.capacity() * 16
                    + self.pool_id.capacity() * 24
                    + (self.internal_metadata.capacity() + self.category.capacity()) * 8
                    + self
                        .forward_frames
                        .iter()
                        .map(|f| 32 + f.1.capacity() * 4)
                        .sum::<usize>(),
            ),
        ]
    }
    pub fn heap_bytes(&self) -> usize {
        self.heap_bytes_by_part().iter().map(|p| p.1).sum()
    }
}

/// A block's `state`. An unknown state string is a warning (which names it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockState {
    ActiveAllocated,
    ActivePendingFree,
    Inactive,
    Unknown,
}

/// One block of a segment. `address` is computed (segment address + sizes of earlier blocks),
/// as the reference viewer does; `requested_size` has the legacy fill applied (SEMANTICS.md §2).
#[derive(Clone, Debug)]
pub struct Block {
    pub address: u64,
    pub size: u64,
    pub requested_size: u64,
    pub state: BlockState,
    pub stack: StackId,
    /// Legacy (torch 2.0) `history` entries: `history[start..end]` of [`Snapshot::history`].
    pub history: (u32, u32),
}

/// A legacy `history` entry of a torch 2.0 block.
#[derive(Clone, Copy, Debug)]
pub struct HistoryEntry {
    pub addr: u64,
    pub real_size: u64,
    pub stack: StackId,
}

#[derive(Clone, Debug)]
pub struct Segment {
    pub device: i64,
    pub address: u64,
    pub total_size: u64,
    pub allocated_size: u64,
    pub active_size: u64,
    pub requested_size: u64,
    pub stream: u64,
    /// `small`, `large`, or whatever the file says.
    pub segment_type: StrId,
    pub pool_id: (i64, i64),
    pub is_expandable: bool,
    pub stack: StackId,
    /// Blocks `blocks[start..end]` of [`Snapshot::blocks`], in address order.
    pub blocks: (u32, u32),
}

/// An `external_annotations` entry (`record_function` ranges and the like).
#[derive(Clone, Debug)]
pub struct Annotation {
    pub name: StrId,
    pub stage: StrId,
    pub device: i64,
    pub time_us: i64,
    /// Any other string key/value pairs, in file order.
    pub extra: Vec<(StrId, StrId)>,
}

/// Which top-level shape the file had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `{segments, device_traces, …}` (torch ≥ 2.0).
    Dict,
    /// A bare list of segments (`torch.cuda.memory_snapshot()` pickled).
    BareList,
}

/// How the warning of a partial snapshot starts: the file ended before the pickle's STOP and
/// the snapshot holds what was read before the cut ([`Snapshot::truncation_warning`]).
pub const TRUNCATED_WARNING: &str = "truncated file:";

/// A whole snapshot, immutable after loading.
#[derive(Debug)]
pub struct Snapshot {
    pub strings: Interner,
    pub frames: Vec<Frame>,
    pub stacks: StackTable,
    pub segments: Vec<Segment>,
    pub blocks: Vec<Block>,
    pub history: Vec<HistoryEntry>,
    /// `forward_frames` of blocks that have them: (block index, lines), by block index.
    pub block_forward_frames: Vec<(u32, Vec<StrId>)>,
    /// Names of unknown actions; [`Action::Unknown`] holds an index into this.
    pub unknown_actions: Vec<StrId>,
    /// Index = device ordinal, as in the file's `device_traces`.
    pub traces: Vec<DeviceTrace>,
    pub allocator_settings: Option<serde_json::Value>,
    pub external_annotations: Vec<Annotation>,
    /// `host_segments` / `host_traces` and other extensions, kept as plain data.
    pub extra: Vec<(String, serde_json::Value)>,
    pub layout: Layout,
    /// The pickle protocol (2 to 5); 0 for a snapshot saved as JSON.
    pub protocol: u8,
    pub warnings: Vec<String>,
}

impl Snapshot {
    pub fn str(&self, id: StrId) -> &str {
        if id == NO_STR {
            ""
        } else {
            self.strings.get(id)
        }
    }

    /// The warning of a partial snapshot (the file ends before STOP; this is what was read
    /// before the cut), if this is one.
    #[must_use]
    pub fn truncation_warning(&self) -> Option<&str> {
        self.warnings
            .iter()
            .find(|w| w.starts_with(TRUNCATED_WARNING))
            .map(String::as_str)
    }

    /// The name of an action as written in the file.
    pub fn action_name(&self, a: Action) -> &str {
        match a {
            Action::Unknown(UnknownAction(i)) => match self.unknown_actions.get(i as usize) {
                Some(&s) if s != NO_STR => self.str(s),
                _ => "<missing>",
            },
            known => known.known_name().unwrap_or(""),
        }
    }

    pub fn stack(&self, id: StackId) -> &[FrameId] {
        self.stacks.get(id)
    }

    pub fn frame(&self, id: FrameId) -> Option<&Frame> {
        self.frames.get(id.0 as usize)
    }

    pub fn segment_blocks(&self, seg: &Segment) -> &[Block] {
        self.blocks
            .get(seg.blocks.0 as usize..seg.blocks.1 as usize)
            .unwrap_or(&[])
    }

    /// Every device with a trace list or a segment, ascending.
    pub fn devices(&self) -> Vec<i64> {
        let mut d: Vec<i64> = (0..self.traces.len() as i64).collect();
        d.extend(self.segments.iter().map(|s| s.device));
        d.sort_unstable();
        d.dedup();
        d
    }

    /// The device a viewer opens first: the longest trace (first on ties); without a
    /// non-empty trace the first device with segments, else 0.
    #[must_use]
    pub fn default_device(&self) -> i64 {
        let mut best: Option<(usize, i64)> = None;
        for (i, t) in self.traces.iter().enumerate() {
            if best.is_none_or(|(len, _)| t.len() > len) {
                best = Some((t.len(), i as i64));
            }
        }
        match best {
            Some((len, d)) if len > 0 => d,
            _ => self.devices().first().copied().unwrap_or(0),
        }
    }

    /// How many `oom` events the device's trace has (0 without a trace).
    pub fn oom_count(&self, device: i64) -> usize {
        self.trace(device)
            .map_or(0, |t| t.actions().filter(|&a| a == Action::Oom).count())
    }

    /// The segment whose blocks include `block` (an index into [`Snapshot::blocks`]). Segments
    /// take their blocks in order while loading, so the ranges ascend and a binary search finds
    /// it (a linear scan per ghost was quadratic: a 150 MB file with 115 k segments spent 7 s
    /// on its live table); the scan remains only for ranges that do not ascend.
    pub fn segment_of_block(&self, block: u32) -> Option<&Segment> {
        let has = |s: &&Segment| s.blocks.0 <= block && block < s.blocks.1;
        let i = self.segments.partition_point(|s| s.blocks.1 <= block);
        self.segments
            .get(i)
            .filter(has)
            .or_else(|| self.segments.iter().find(has))
    }

    /// The trace of `device`, if the file has one.
    pub fn trace(&self, device: i64) -> Option<&DeviceTrace> {
        usize::try_from(device)
            .ok()
            .and_then(|d| self.traces.get(d))
    }

    /// Approximate heap bytes of the whole model.
    pub fn heap_bytes(&self) -> usize {
        self.heap_bytes_by_part().iter().map(|p| p.1).sum()
    }

    /// Approximate heap bytes of the model per structure (trace parts summed over devices),
    /// so a benchmark can print bytes per trace entry of each.
    pub fn heap_bytes_by_part(&self) -> Vec<(&'static str, usize)> {
        use std::mem::size_of;
        let mut out: Vec<(&'static str, usize)> = vec![
            ("strings", self.strings.heap_bytes()),
            ("frames", self.frames.capacity() * size_of::<Frame>()),
            (
                "stacks",
                self.stacks.offsets.capacity() * 4 + self.stacks.frames.capacity() * 4,
            ),
            ("segments", self.segments.capacity() * size_of::<Segment>()),
            ("blocks", self.blocks.capacity() * size_of::<Block>()),
            (
                "history",
                self.history.capacity() * size_of::<HistoryEntry>(),
            ),
            (
                "annotations",
                self.external_annotations.capacity() * size_of::<Annotation>(),
            ),
            ("traces", self.traces.capacity() * size_of::<DeviceTrace>()),
        ];
        for t in &self.traces {
            for (name, bytes) in t.heap_bytes_by_part() {
                match out.iter_mut().find(|p| p.0 == name) {
                    Some(p) => p.1 += bytes,
                    None => out.push((name, bytes)),
                }
            }
        }
        out
    }
}
