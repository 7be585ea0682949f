//! Allocator State History (SEMANTICS.md §6): the segments and live blocks of one device after
//! any event of the merged event list, without replaying the whole trace per selection.
//!
//! # How it works
//! §2's merge rule (a `free_completed` right after its own `free_requested` becomes one
//! `free`) gives the merged event list ([`merged_events`] builds it whole; [`History`] reads it
//! from the trace in place). The state after the **last** event is the final snapshot (§6.1:
//! segments of the device, `active_allocated` / `active_pending_free` blocks). Earlier states
//! come from undoing events backwards (§6.2, §6.3 for expandable segments).
//! [`History::build`] walks backwards once and keeps checkpoints, each the difference between
//! the state there and the final state; [`History::state_after`] merges the nearest checkpoint
//! at or after the wanted event into the final state and undoes at most
//! [`History::interval`] events (`history` has the memory budget and its numbers).
//! [`State`] keeps its segments and blocks in sorted vectors ([`AddrMap`], `map` says why).
//! [`OomScan`] explains every `oom` event of a device in one backward pass of its own
//! (`oom_scan` says how), rather than a state per event.
//!
//! # Labels
//! Every [`Seg`] and [`Blk`] carries a [`Src`] (4 bytes, in place of a stack id, so checkpoint
//! memory does not grow): the trace row of the event that created it (the undone `free` /
//! `free_completed` / `segment_free` / `segment_unmap`, or the forward `alloc` / `segment_*`
//! of [`apply`]), or its index in the final snapshot. Its §2 label version, stack, user
//! metadata and forward frames are looked up through it ([`Blk::label`], [`Seg::label`],
//! [`Blk::stack`], …), as memory_viz's objects carry the event's or the file's fields.
//! Expandable segments, as memory_viz does it: a range restored by undoing an unmap that
//! coalesces with its neighbours keeps the label (and stack and pool) of the **lower** segment
//! (the restored range's own when only the next one merges, the previous segment's otherwise);
//! undoing a map that shrinks a segment from the front keeps the segment's label at its new
//! address; the upper part of a split takes the undone map event's label and stack.

mod alloc_rows;
mod history;
mod map;
mod oom;
mod oom_scan;
#[cfg(test)]
mod tests;
mod work;

pub use alloc_rows::AllocRows;
pub use history::{History, BYTES_PER_EVENT};
pub use map::{apply, AddrMap, Iter, State};
pub use oom::{explain_oom, segment_size_for, OomReport};
pub use oom_scan::{OomScan, OomScanError, Reports, WORK_LIMIT};

use memviz_snapshot::{Action, Snapshot, StackId};

/// What a merged event does to the allocator state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Alloc,
    /// `free_requested` immediately followed by its `free_completed` (§2 merge).
    Free,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    /// `oom`, `snapshot`, `annotate` and unknown actions: no state change.
    Other,
}

/// One event of the merged list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Row of the device trace (the `free_requested` row for a merged `free`).
    pub row: u32,
    pub kind: Kind,
    pub addr: u64,
    pub size: u64,
    pub stream: u64,
    pub stack: StackId,
    /// The event's `pool_id`, `(0, 0)` when it has none.
    pub pool: (i64, i64),
}

impl Event {
    /// The action name shown for the event (`free` for a merged pair).
    #[must_use]
    pub fn action_name<'a>(&self, snap: &'a Snapshot, device: i64) -> &'a str {
        if self.kind == Kind::Free {
            return "free";
        }
        snap.trace(device)
            .and_then(|t| t.action(self.row as usize))
            .map_or("", |a| snap.action_name(a))
    }
}

/// The index in the §2 merged event list (a `free_completed` right after its `free_requested`
/// is one `free`) of trace row `row` of `device`: how the State History, `memviz oom` and
/// `memviz state --event` number events. Without a trace, `row` itself.
#[must_use]
pub fn merged_index(snap: &Snapshot, device: i64, row: u64) -> u64 {
    let Some(tr) = snap.trace(device) else {
        return row;
    };
    let end = usize::try_from(row).unwrap_or(usize::MAX).min(tr.len());
    let merged = (1..end)
        .filter(|&j| {
            tr.action(j) == Some(Action::FreeCompleted)
                && tr.action(j - 1) == Some(Action::FreeRequested)
                && tr.addr(j - 1) == tr.addr(j)
        })
        .count() as u64;
    row.saturating_sub(merged)
}

/// The §2 merged event list of `device` (empty without a trace), whole: 56 bytes per event,
/// for tests and tools; [`History`] reads the same events from the trace in place.
#[must_use]
pub fn merged_events(snap: &Snapshot, device: i64) -> Vec<Event> {
    let Some(tr) = snap.trace(device) else {
        return Vec::new();
    };
    let mut out: Vec<Event> = Vec::with_capacity(tr.len());
    for (i, action) in tr.actions().enumerate() {
        let addr = tr.addr(i).unwrap_or(0);
        let kind = match action {
            Action::Alloc => Kind::Alloc,
            Action::FreeRequested => Kind::FreeRequested,
            Action::FreeCompleted => {
                if let Some(last) = out.last_mut() {
                    if last.kind == Kind::FreeRequested && last.addr == addr {
                        last.kind = Kind::Free;
                        continue;
                    }
                }
                Kind::FreeCompleted
            }
            Action::SegmentAlloc => Kind::SegmentAlloc,
            Action::SegmentFree => Kind::SegmentFree,
            Action::SegmentMap => Kind::SegmentMap,
            Action::SegmentUnmap => Kind::SegmentUnmap,
            _ => Kind::Other,
        };
        out.push(Event {
            row: i as u32,
            kind,
            addr,
            size: tr.size(i).unwrap_or(0),
            stream: tr.stream.get(i).unwrap_or(0),
            stack: tr.stack(i).unwrap_or(StackId(0)),
            pool: tr
                .pool_id
                .binary_search_by_key(&(i as u32), |p| p.0)
                .ok()
                .and_then(|j| tr.pool_id.get(j))
                .map_or((0, 0), |p| p.1),
        });
    }
    out
}

/// Where a segment or block of a [`State`] comes from, packed in 4 bytes so that [`Blk`] keeps
/// its 24 bytes: the trace row of the event whose undo (or forward [`apply`]) created it, or its
/// index in the final snapshot ([`Snapshot::blocks`] for a block, [`Snapshot::segments`] for a
/// segment). Its label version (§2), stack and user metadata are looked up through it.
///
/// Encoding: `u32::MAX` unknown; top bit set: final-snapshot index; else a trace row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Src(u32);

/// [`Src`] unpacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Row of the device trace (for a merged `free`, the `free_requested` row).
    Row(u32),
    /// Index in the final snapshot's blocks or segments.
    Final(u32),
    /// A row or an index too large to pack (≥ 2³¹): no version, no stack.
    Unknown,
}

impl Src {
    const FINAL: u32 = 1 << 31;
    pub const UNKNOWN: Src = Src(u32::MAX);

    /// The event at trace row `row` created it.
    #[must_use]
    pub fn row(row: u32) -> Src {
        if row < Self::FINAL {
            Src(row)
        } else {
            Self::UNKNOWN
        }
    }

    /// Entry `index` of the final snapshot's blocks or segments.
    #[must_use]
    pub fn final_index(index: usize) -> Src {
        match u32::try_from(index) {
            Ok(i) if i < Self::FINAL - 1 => Src(i | Self::FINAL),
            _ => Self::UNKNOWN,
        }
    }

    #[must_use]
    pub fn get(self) -> Source {
        if self == Self::UNKNOWN {
            Source::Unknown
        } else if self.0 & Self::FINAL != 0 {
            Source::Final(self.0 & !Self::FINAL)
        } else {
            Source::Row(self.0)
        }
    }

    /// The trace row's stack, or `final_stack(index)` for a final-snapshot entry.
    fn stack(
        self,
        snap: &Snapshot,
        device: i64,
        final_stack: impl Fn(usize) -> Option<StackId>,
    ) -> StackId {
        match self.get() {
            Source::Row(r) => snap.trace(device).and_then(|t| t.stack(r as usize)),
            Source::Final(i) => final_stack(i as usize),
            Source::Unknown => None,
        }
        .unwrap_or(StackId::EMPTY)
    }

    /// The §2 version: the trace row's, or `final_version[index]`.
    fn version(self, ctx: &RowContext, final_version: &Packed) -> u32 {
        match self.get() {
            Source::Row(r) => ctx.events.get(r as usize),
            Source::Final(i) => final_version.get(i as usize),
            Source::Unknown => None,
        }
        .unwrap_or(crate::versions::NO_VERSION)
    }

    /// The event's `user_metadata` (`""` for final-snapshot entries, which have none).
    #[must_use]
    pub fn user_metadata(self, snap: &Snapshot, device: i64) -> &str {
        match self.get() {
            Source::Row(r) => snap
                .trace(device)
                .and_then(|t| t.user_metadata.get(r as usize))
                .map_or("", |id| snap.str(id)),
            _ => "",
        }
    }

    /// The forward-pass stack lines (`forward_frames`) of the event or final block; segments
    /// never have them.
    fn forward_frames<'a>(
        self,
        snap: &'a Snapshot,
        device: i64,
        block: bool,
    ) -> Option<&'a [memviz_snapshot::StrId]> {
        let sparse = |v: &'a [(u32, Vec<memviz_snapshot::StrId>)], key: u32| {
            v.binary_search_by_key(&key, |e| e.0)
                .ok()
                .and_then(|j| v.get(j))
                .map(|e| e.1.as_slice())
        };
        match self.get() {
            Source::Row(r) => snap
                .trace(device)
                .and_then(|t| sparse(&t.forward_frames, r)),
            Source::Final(i) if block => sparse(&snap.block_forward_frames, i),
            _ => None,
        }
    }
}

fn label(prefix: char, addr: u64, version: u32) -> String {
    crate::versions::address_label(prefix, addr, version)
}

/// A segment (or a mapped range of an expandable one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seg {
    pub size: u64,
    pub stream: u64,
    /// Private pool id (`(0, 0)`: the default pool).
    pub pool: (i64, i64),
    /// Which event or final segment it comes from (label version, stack, user metadata).
    pub src: Src,
}

impl Seg {
    /// The segment an event inserts (undone `segment_free` / `segment_unmap`, forward
    /// `segment_alloc` / `segment_map`).
    fn of_event(e: &Event) -> Seg {
        Seg {
            size: e.size,
            stream: e.stream,
            pool: e.pool,
            src: Src::row(e.row),
        }
    }

    /// The stack shown for the segment: the `segment_*` event's or the final segment's.
    #[must_use]
    pub fn stack(&self, snap: &Snapshot, device: i64) -> StackId {
        self.src
            .stack(snap, device, |i| snap.segments.get(i).map(|s| s.stack))
    }

    /// The §2 address version of the segment.
    #[must_use]
    pub fn version(&self, ctx: &RowContext) -> u32 {
        self.src.version(ctx, &ctx.segments)
    }

    /// `s<hex>_<version>` (`_undefined` without one) of the segment at `addr`.
    #[must_use]
    pub fn label(&self, addr: u64, ctx: &RowContext) -> String {
        label('s', addr, self.version(ctx))
    }
}

/// A live block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blk {
    pub size: u64,
    pub requested: u64,
    /// `active_pending_free`: freed, waiting on `record_stream`.
    pub pending: bool,
    /// Which event or final block it comes from (label version, stack, user metadata). Takes
    /// the place of a stack id, so the struct stays 24 bytes.
    pub src: Src,
}

impl Blk {
    /// The stack shown for the block: the event's (alloc, or the free whose undo restored it)
    /// or the final block's.
    #[must_use]
    pub fn stack(&self, snap: &Snapshot, device: i64) -> StackId {
        self.src
            .stack(snap, device, |i| snap.blocks.get(i).map(|b| b.stack))
    }

    /// The §2 address version of the block.
    #[must_use]
    pub fn version(&self, ctx: &RowContext) -> u32 {
        self.src.version(ctx, &ctx.blocks)
    }

    /// `b<hex>_<version>` (`_undefined` without one) of the block at `addr`.
    #[must_use]
    pub fn label(&self, addr: u64, ctx: &RowContext) -> String {
        label('b', addr, self.version(ctx))
    }

    /// Forward-pass stack lines of the block's event or final block, if recorded.
    #[must_use]
    pub fn forward_frames<'a>(
        &self,
        snap: &'a Snapshot,
        device: i64,
    ) -> Option<&'a [memviz_snapshot::StrId]> {
        self.src.forward_frames(snap, device, true)
    }
}

/// Versions (§2) packed in the narrowest integer that holds them all, [`NO_VERSION`] as the
/// type's maximum: on a 150 MB tiled real file every version fits in 16 bits, so the
/// per-event versions take 2 bytes per trace entry instead of 4.
///
/// [`NO_VERSION`]: crate::versions::NO_VERSION
#[derive(Clone, Debug)]
enum Packed {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
}

impl Packed {
    fn new(v: Vec<u32>) -> Packed {
        use crate::versions::NO_VERSION;
        let max = v
            .iter()
            .filter(|&&x| x != NO_VERSION)
            .max()
            .copied()
            .unwrap_or(0);
        if max < u32::from(u8::MAX) {
            Packed::U8(v.iter().map(|&x| x.min(u32::from(u8::MAX)) as u8).collect())
        } else if max < u32::from(u16::MAX) {
            Packed::U16(
                v.iter()
                    .map(|&x| x.min(u32::from(u16::MAX)) as u16)
                    .collect(),
            )
        } else {
            Packed::U32(v)
        }
    }

    fn get(&self, i: usize) -> Option<u32> {
        use crate::versions::NO_VERSION;
        match self {
            Packed::U8(v) => v.get(i).map(|&x| {
                if x == u8::MAX {
                    NO_VERSION
                } else {
                    u32::from(x)
                }
            }),
            Packed::U16(v) => v.get(i).map(|&x| {
                if x == u16::MAX {
                    NO_VERSION
                } else {
                    u32::from(x)
                }
            }),
            Packed::U32(v) => v.get(i).copied(),
        }
    }
}

/// What the event list's rows need besides the events: §2's address versions (per trace row
/// of the device, per final block and per final segment) and stream ordinals (built once per
/// device).
#[derive(Clone, Debug)]
pub struct RowContext {
    device: i64,
    events: Packed,
    blocks: Packed,
    segments: Packed,
    streams: crate::versions::StreamOrdinals,
}

impl RowContext {
    #[must_use]
    pub fn new(snap: &Snapshot, device: i64) -> Self {
        let v = crate::versions::versions(snap, device);
        Self {
            device,
            events: Packed::new(v.events),
            blocks: Packed::new(v.blocks),
            segments: Packed::new(v.segments),
            streams: crate::versions::stream_ordinals(snap),
        }
    }

    /// The device it was built for.
    #[must_use]
    pub fn device(&self) -> i64 {
        self.device
    }

    /// §2's address version of trace row `row` of the device ([`crate::versions::NO_VERSION`]
    /// for actions without one; `None` past the end).
    #[must_use]
    pub fn event_version(&self, row: usize) -> Option<u32> {
        self.events.get(row)
    }

    /// §2's address version of final block `i` ([`Snapshot::blocks`] order).
    #[must_use]
    pub fn block_version(&self, i: usize) -> Option<u32> {
        self.blocks.get(i)
    }

    /// §2's address version of final segment `i` ([`Snapshot::segments`] order).
    #[must_use]
    pub fn segment_version(&self, i: usize) -> Option<u32> {
        self.segments.get(i)
    }

    /// The ordinal of a raw stream (0 for a stream the file never mentions).
    #[must_use]
    pub fn stream(&self, raw: u64) -> u32 {
        self.streams.get(raw).unwrap_or(0)
    }
}

/// The selected event's prefix (§6.4): `(<allocated> allocated / <reserved> reserved)` with
/// formatSize's long form, allocated = Σ block `requested` (pending included).
#[must_use]
pub fn header_text(state: &State) -> String {
    use crate::format::size_long;
    format!(
        "({} allocated / {} reserved)",
        size_long(state.allocated_bytes),
        size_long(state.reserved_bytes)
    )
}

impl History {
    /// The event list row of event `k` as memory_viz prints it (§7): the action padded to 14,
    /// the `b…_N` / `s…_N` label padded to 18, the size, then `\n(stream n)`; `oom` and
    /// `snapshot` rows have their own text.
    #[must_use]
    pub fn row_text(&self, snap: &Snapshot, ctx: &RowContext, k: usize) -> Option<String> {
        use crate::format::size_long;
        let e = self.event(snap, k)?;
        let tr = snap.trace(self.device)?;
        let action = tr.action(e.row as usize)?;
        let stream = ctx.streams.get(e.stream).unwrap_or(0);
        let line = match action {
            Action::Oom => {
                let free = tr
                    .device_free_of(e.row)
                    .map_or_else(|| "unknown".to_owned(), size_long);
                format!(
                    "OOM (requested {}, Device has {free} memory free)",
                    size_long(e.size)
                )
            }
            Action::Snapshot => "snapshot".to_owned(),
            _ => {
                let version = ctx
                    .event_version(e.row as usize)
                    .unwrap_or(crate::versions::NO_VERSION);
                let v = if version == crate::versions::NO_VERSION {
                    "undefined".to_owned()
                } else {
                    version.to_string()
                };
                let prefix = match e.kind {
                    Kind::SegmentAlloc
                    | Kind::SegmentFree
                    | Kind::SegmentMap
                    | Kind::SegmentUnmap => "s",
                    _ => "b",
                };
                let label = format!("{prefix}{:x}_{v}", e.addr);
                format!(
                    "{:<14}{label:<18}{}",
                    e.action_name(snap, self.device),
                    size_long(e.size)
                )
            }
        };
        Some(format!("{line}\n(stream {stream})"))
    }
}
