//! Allocator State History (SEMANTICS.md §6): the segments and live blocks of one device after
//! any event of the merged event list, without replaying the whole trace per selection.
//!
//! # How it works
//! [`merged_events`] applies §2's merge rule (a `free_completed` right after its own
//! `free_requested` becomes one `free`). The state after the **last** event is the final
//! snapshot (§6.1: segments of the device, `active_allocated` / `active_pending_free` blocks).
//! Earlier states come from undoing events backwards (§6.2, §6.3 for expandable segments).
//! [`History::build`] walks backwards once and keeps a copy of the state every
//! `interval` events (a checkpoint); [`History::state_after`] clones the nearest checkpoint at
//! or after the wanted event and undoes at most `interval` events: O(interval + state size).
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

use std::collections::BTreeMap;

use memviz_snapshot::{Action, BlockState as FileBlockState, Snapshot, StackId};

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

/// The §2 merged event list of `device` (empty without a trace).
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
    fn version(self, ctx: &RowContext, final_version: &[u32]) -> u32 {
        match self.get() {
            Source::Row(r) => ctx.versions.events.get(r as usize).copied(),
            Source::Final(i) => final_version.get(i as usize).copied(),
            Source::Unknown => None,
        }
        .unwrap_or(crate::tooltip::NO_VERSION)
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
    if version == crate::tooltip::NO_VERSION {
        format!("{prefix}{addr:x}_undefined")
    } else {
        format!("{prefix}{addr:x}_{version}")
    }
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
        self.src.version(ctx, &ctx.versions.segments)
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
        self.src.version(ctx, &ctx.versions.blocks)
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

/// Segments and live blocks by address, with the header's totals kept up to date.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct State {
    pub segments: BTreeMap<u64, Seg>,
    pub blocks: BTreeMap<u64, Blk>,
    /// Σ segment sizes.
    pub reserved_bytes: u64,
    /// Σ block `requested` (pending blocks included), as memory_viz's header.
    pub allocated_bytes: u64,
    /// Undo steps that found nothing to undo (the reference throws on some of them).
    pub inconsistencies: u32,
}

impl State {
    /// The final snapshot's state of `device` (§6.1).
    #[must_use]
    pub fn from_snapshot(snap: &Snapshot, device: i64) -> State {
        let mut s = State::default();
        for (si, seg) in snap.segments.iter().enumerate() {
            if seg.device != device {
                continue;
            }
            s.insert_segment(
                seg.address,
                Seg {
                    size: seg.total_size,
                    stream: seg.stream,
                    pool: seg.pool_id,
                    src: Src::final_index(si),
                },
            );
            let first = seg.blocks.0 as usize;
            for (j, b) in snap.segment_blocks(seg).iter().enumerate() {
                let pending = match b.state {
                    FileBlockState::ActiveAllocated => false,
                    FileBlockState::ActivePendingFree => true,
                    _ => continue,
                };
                s.insert_block(
                    b.address,
                    Blk {
                        size: b.size,
                        requested: b.requested_size,
                        pending,
                        src: Src::final_index(first.saturating_add(j)),
                    },
                );
            }
        }
        s
    }

    /// Inserts (or replaces) the segment at `addr`, keeping `reserved_bytes` right.
    pub fn insert_segment(&mut self, addr: u64, seg: Seg) {
        if let Some(old) = self.segments.insert(addr, seg) {
            self.reserved_bytes = self.reserved_bytes.saturating_sub(old.size);
        }
        self.reserved_bytes = self.reserved_bytes.saturating_add(seg.size);
    }

    /// Removes the segment at `addr`, keeping `reserved_bytes` right.
    pub fn remove_segment(&mut self, addr: u64) -> Option<Seg> {
        let old = self.segments.remove(&addr)?;
        self.reserved_bytes = self.reserved_bytes.saturating_sub(old.size);
        Some(old)
    }

    /// Inserts (or replaces) the block at `addr`, keeping `allocated_bytes` right.
    pub fn insert_block(&mut self, addr: u64, blk: Blk) {
        if let Some(old) = self.blocks.insert(addr, blk) {
            self.allocated_bytes = self.allocated_bytes.saturating_sub(old.requested);
        }
        self.allocated_bytes = self.allocated_bytes.saturating_add(blk.requested);
    }

    /// Removes the block at `addr`, keeping `allocated_bytes` right.
    pub fn remove_block(&mut self, addr: u64) -> Option<Blk> {
        let old = self.blocks.remove(&addr)?;
        self.allocated_bytes = self.allocated_bytes.saturating_sub(old.requested);
        Some(old)
    }

    /// Undoes `e` (§6.2): the state before `e` from the state after it.
    pub fn undo(&mut self, e: &Event) {
        let restored = Blk {
            size: e.size,
            requested: e.size,
            pending: false,
            src: Src::row(e.row),
        };
        let ok = match e.kind {
            Kind::Free => {
                self.insert_block(e.addr, restored);
                true
            }
            Kind::FreeCompleted => {
                self.insert_block(
                    e.addr,
                    Blk {
                        pending: true,
                        ..restored
                    },
                );
                true
            }
            Kind::FreeRequested => match self.blocks.get_mut(&e.addr) {
                Some(b) => {
                    b.pending = false;
                    true
                }
                None => false,
            },
            Kind::Alloc => self.remove_block(e.addr).is_some(),
            Kind::SegmentFree => {
                self.insert_segment(e.addr, Seg::of_event(e));
                true
            }
            Kind::SegmentAlloc => self.remove_segment(e.addr).is_some(),
            Kind::SegmentUnmap => {
                self.unmap_undo(e);
                true
            }
            Kind::SegmentMap => self.map_undo(e),
            Kind::Other => true,
        };
        if !ok {
            self.inconsistencies = self.inconsistencies.saturating_add(1);
        }
    }

    /// Undoing an unmap (§6.3): insert the range, coalesce with the next and previous segment
    /// when they touch it and have the same stream.
    fn unmap_undo(&mut self, e: &Event) {
        let mut addr = e.addr;
        let mut seg = Seg::of_event(e);
        let end = addr.saturating_add(seg.size);
        if let Some(next) = self.segments.get(&end).copied() {
            if next.stream == seg.stream {
                self.remove_segment(end);
                seg.size = seg.size.saturating_add(next.size);
            }
        }
        if let Some((&prev_addr, &prev)) = self.segments.range(..addr).next_back() {
            if prev_addr.saturating_add(prev.size) == addr && prev.stream == seg.stream {
                self.remove_segment(prev_addr);
                seg.size = seg.size.saturating_add(prev.size);
                // The lower segment's label, stack and pool stay (memory_viz grows `prev`).
                seg.src = prev.src;
                seg.pool = prev.pool;
                addr = prev_addr;
            }
        }
        self.insert_segment(addr, seg);
    }

    /// Undoing a map (§6.3): shrink the containing segment from the front or the back, or split
    /// it. False when no segment contains the range.
    fn map_undo(&mut self, e: &Event) -> bool {
        let start = e.addr;
        let end = start.saturating_add(e.size);
        let Some((&seg_addr, &seg)) = self.segments.range(..=start).next_back() else {
            return false;
        };
        let seg_end = seg_addr.saturating_add(seg.size);
        if end > seg_end {
            return false;
        }
        self.remove_segment(seg_addr);
        if seg_addr < start {
            self.insert_segment(
                seg_addr,
                Seg {
                    size: start - seg_addr,
                    ..seg
                },
            );
        }
        if end < seg_end {
            // Shrunk from the front, the segment keeps its label at the new address; the upper
            // part of a split is memory_viz's event segment object moved up: it takes the
            // undone event's label version and stack (at its own address).
            let src = if seg_addr < start {
                Src::row(e.row)
            } else {
                seg.src
            };
            self.insert_segment(
                end,
                Seg {
                    size: seg_end - end,
                    src,
                    ..seg
                },
            );
        }
        true
    }

    /// Approximate heap bytes (B-tree nodes hold the entries plus some slack).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        let seg = std::mem::size_of::<(u64, Seg)>();
        let blk = std::mem::size_of::<(u64, Blk)>();
        (self.segments.len() * seg + self.blocks.len() * blk) * 3 / 2
    }
}

/// The merged events of one device with checkpoints of the state.
#[derive(Clone, Debug)]
pub struct History {
    pub device: i64,
    pub events: Vec<Event>,
    /// `(k, state after event k)`, `k` ascending; the last is the final snapshot's state.
    checkpoints: Vec<(usize, State)>,
    /// The state of the final snapshot (after the last event; also with no events).
    final_state: State,
    pub interval: usize,
}

impl History {
    /// Builds the event list and a checkpoint every `interval` events (at least 1), in one
    /// backward pass.
    #[must_use]
    pub fn build(snap: &Snapshot, device: i64, interval: usize) -> History {
        let events = merged_events(snap, device);
        let interval = interval.max(1);
        let final_state = State::from_snapshot(snap, device);
        let mut checkpoints = Vec::new();
        if let Some(last) = events.len().checked_sub(1) {
            let mut state = final_state.clone();
            checkpoints.push((last, state.clone()));
            for k in (0..last).rev() {
                if let Some(e) = events.get(k + 1) {
                    state.undo(e);
                }
                if (last - k) % interval == 0 {
                    checkpoints.push((k, state.clone()));
                }
            }
            checkpoints.reverse();
        }
        History {
            device,
            events,
            checkpoints,
            final_state,
            interval,
        }
    }

    /// A checkpoint interval keeping the checkpoints' memory near `budget_bytes` (at least 64).
    #[must_use]
    pub fn interval_for(snap: &Snapshot, device: i64, budget_bytes: usize) -> usize {
        let n = snap.trace(device).map_or(0, |t| t.len());
        let per_state = State::from_snapshot(snap, device).heap_bytes().max(64);
        let count = (budget_bytes / per_state).max(1);
        (n / count).max(64)
    }

    /// The state after event `k` (`None` when `k` is past the end).
    #[must_use]
    pub fn state_after(&self, k: usize) -> Option<State> {
        if k >= self.events.len() {
            return None;
        }
        let at = self.checkpoints.partition_point(|(c, _)| *c < k);
        let (c, base) = self.checkpoints.get(at)?;
        let mut state = base.clone();
        for j in ((k + 1)..=*c).rev() {
            if let Some(e) = self.events.get(j) {
                state.undo(e);
            }
        }
        Some(state)
    }

    /// The final snapshot's state.
    #[must_use]
    pub fn final_state(&self) -> &State {
        &self.final_state
    }

    /// Heap bytes of the checkpoints.
    #[must_use]
    pub fn checkpoint_bytes(&self) -> usize {
        self.checkpoints.iter().map(|(_, s)| s.heap_bytes()).sum()
    }
}

/// Applies `e` forwards (the state after `e` from the state before it): the mirror of
/// [`State::undo`], for checking the undo path against a forward simulation. Blocks it creates
/// have `requested == size` (the trace has no requested size).
pub fn apply(state: &mut State, e: &Event) {
    match e.kind {
        Kind::Alloc => state.insert_block(
            e.addr,
            Blk {
                size: e.size,
                requested: e.size,
                pending: false,
                src: Src::row(e.row),
            },
        ),
        Kind::Free | Kind::FreeCompleted => {
            state.remove_block(e.addr);
        }
        Kind::FreeRequested => {
            if let Some(b) = state.blocks.get_mut(&e.addr) {
                b.pending = true;
            }
        }
        Kind::SegmentAlloc => state.insert_segment(e.addr, Seg::of_event(e)),
        Kind::SegmentFree => {
            state.remove_segment(e.addr);
        }
        // Forwards, a map adds the range (merged like an undone unmap) and an unmap removes it.
        Kind::SegmentMap => state.unmap_undo(e),
        Kind::SegmentUnmap => {
            state.map_undo(e);
        }
        Kind::Other => {}
    }
}

impl State {
    /// The free byte ranges `(address, length)` of the segment at `seg_addr`: the segment minus
    /// its live blocks.
    #[must_use]
    pub fn free_ranges(&self, seg_addr: u64) -> Vec<(u64, u64)> {
        let Some(seg) = self.segments.get(&seg_addr) else {
            return Vec::new();
        };
        let end = seg_addr.saturating_add(seg.size);
        let mut out = Vec::new();
        let mut at = seg_addr;
        for (&a, b) in self.blocks.range(seg_addr..end) {
            if a > at {
                out.push((at, a - at));
            }
            at = at.max(a.saturating_add(b.size));
        }
        if end > at {
            out.push((at, end - at));
        }
        out
    }
}

/// Why an allocation failed: the numbers at an `oom` event and a one-line verdict.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OomReport {
    /// Index of the `oom` event in the merged list.
    pub event: usize,
    pub requested_bytes: u64,
    /// What the device still had (`device_free` of the event), when recorded.
    pub device_free_bytes: Option<u64>,
    pub reserved_bytes: u64,
    pub allocated_bytes: u64,
    /// Free bytes inside reserved segments (all streams and pools).
    pub reserved_free_bytes: u64,
    /// The largest free block in reserved segments of the request's stream and pool.
    pub largest_free_block_bytes: u64,
    pub stream: u64,
    pub pool: (i64, i64),
    /// `fragmentation` or `out_of_memory`.
    pub kind: &'static str,
    pub verdict: String,
    /// The biggest live blocks at that moment: `(address, size)`, largest first (at most 10).
    pub biggest_live: Vec<(u64, u64)>,
}

/// Explains a request of `requested` bytes on `stream` / `pool` that failed in `state`.
#[must_use]
pub fn explain_oom(
    state: &State,
    event: usize,
    requested: u64,
    device_free: Option<u64>,
    stream: u64,
    pool: (i64, i64),
) -> OomReport {
    use crate::format::size_short as sz;
    let mut reserved_free = 0u64;
    let mut largest = 0u64;
    for (&a, seg) in &state.segments {
        for (_, len) in state.free_ranges(a) {
            reserved_free = reserved_free.saturating_add(len);
            if seg.stream == stream && seg.pool == pool {
                largest = largest.max(len);
            }
        }
    }
    let dev = device_free.unwrap_or(0);
    let (kind, verdict) = if largest >= requested {
        (
            "fragmentation",
            format!(
                "A free block of {} in a reserved segment of this stream could hold the {} requested, \
                 but the allocator did not use it (a size-class or split rule); \
                 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True usually avoids this.",
                sz(largest),
                sz(requested)
            ),
        )
    } else if reserved_free >= requested {
        (
            "fragmentation",
            format!(
                "Fragmentation: {} is free inside reserved segments, but the largest free block of \
                 this stream is {}, smaller than the {} requested; \
                 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True or fewer long-lived allocations would help.",
                sz(reserved_free),
                sz(largest),
                sz(requested)
            ),
        )
    } else if reserved_free.saturating_add(dev) >= requested {
        (
            "fragmentation",
            format!(
                "Memory held in the cache: {} free in reserved segments plus {} free on the device would \
                 hold the {} requested, but neither alone does; releasing cached segments \
                 (torch.cuda.empty_cache()) or expandable segments would help.",
                sz(reserved_free),
                sz(dev),
                sz(requested)
            ),
        )
    } else {
        (
            "out_of_memory",
            format!(
                "Genuinely out of memory: {} requested, with only {} free in reserved segments and {} \
                 on the device; live allocations hold {}.",
                sz(requested),
                sz(reserved_free),
                sz(dev),
                sz(state.allocated_bytes)
            ),
        )
    };
    let mut biggest: Vec<(u64, u64)> = state.blocks.iter().map(|(&a, b)| (a, b.size)).collect();
    biggest.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    biggest.truncate(10);
    OomReport {
        event,
        requested_bytes: requested,
        device_free_bytes: device_free,
        reserved_bytes: state.reserved_bytes,
        allocated_bytes: state.allocated_bytes,
        reserved_free_bytes: reserved_free,
        largest_free_block_bytes: largest,
        stream,
        pool,
        kind,
        verdict,
        biggest_live: biggest,
    }
}

impl History {
    /// A report for every `oom` event of the trace.
    #[must_use]
    pub fn oom_reports(&self, snap: &Snapshot) -> Vec<OomReport> {
        let tr = snap.trace(self.device);
        self.events
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                tr.and_then(|t| t.action(e.row as usize))
                    .is_some_and(|a| a == Action::Oom)
            })
            .filter_map(|(k, e)| {
                let state = self.state_after(k)?;
                let device_free = tr.and_then(|t| t.device_free_of(e.row));
                Some(explain_oom(
                    &state,
                    k,
                    e.size,
                    device_free,
                    e.stream,
                    e.pool,
                ))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(segs: &[(u64, u64, u64)], blocks: &[(u64, u64)]) -> State {
        let mut s = State::default();
        for &(a, size, stream) in segs {
            s.insert_segment(
                a,
                Seg {
                    size,
                    stream,
                    pool: (0, 0),
                    src: Src::UNKNOWN,
                },
            );
        }
        for &(a, size) in blocks {
            s.insert_block(
                a,
                Blk {
                    size,
                    requested: size,
                    pending: false,
                    src: Src::UNKNOWN,
                },
            );
        }
        s
    }

    fn ev(row: u32, kind: Kind, addr: u64, size: u64) -> Event {
        Event {
            row,
            kind,
            addr,
            size,
            stream: 0,
            stack: StackId(0),
            pool: (0, 0),
        }
    }

    /// Expandable segments: which label (source) each range keeps.
    #[test]
    fn expandable_labels() {
        let mut s = State::default();
        let final_seg = |size| Seg {
            size,
            stream: 0,
            pool: (0, 0),
            src: Src::final_index(0),
        };
        s.insert_segment(1000, final_seg(100));
        // Undoing an unmap of [1100, 1150) that touches [1000, 1100) and [1150, 1200): one
        // segment with the lower one's label.
        s.insert_segment(
            1150,
            Seg {
                src: Src::final_index(1),
                ..final_seg(50)
            },
        );
        s.undo(&ev(7, Kind::SegmentUnmap, 1100, 50));
        assert_eq!(s.segments.len(), 1);
        assert_eq!(
            s.segments.get(&1000).map(|g| (g.size, g.src)),
            Some((200, Src::final_index(0)))
        );
        assert_eq!(s.reserved_bytes, 200);
        // Only the next one touches: the restored (lower) range's own label.
        s.undo(&ev(8, Kind::SegmentUnmap, 900, 100));
        assert_eq!(s.segments.len(), 1);
        assert_eq!(
            s.segments.get(&900).map(|g| (g.size, g.src)),
            Some((300, Src::row(8)))
        );
        // Undoing a map: from the front keeps the label; a split's upper part takes the event's.
        s.undo(&ev(10, Kind::SegmentMap, 900, 50));
        assert_eq!(
            s.segments.get(&950).map(|g| (g.size, g.src)),
            Some((250, Src::row(8)))
        );
        s.undo(&ev(11, Kind::SegmentMap, 1000, 50));
        assert_eq!(
            s.segments.get(&950).map(|g| (g.size, g.src)),
            Some((50, Src::row(8)))
        );
        assert_eq!(
            s.segments.get(&1050).map(|g| (g.size, g.src)),
            Some((150, Src::row(11)))
        );
        // From the back: the segment keeps its label.
        s.undo(&ev(12, Kind::SegmentMap, 1150, 50));
        assert_eq!(
            s.segments.get(&1050).map(|g| (g.size, g.src)),
            Some((100, Src::row(11)))
        );
        assert_eq!(s.segments.len(), 2);
        assert_eq!(s.reserved_bytes, 150);
        assert_eq!(s.inconsistencies, 0);
    }

    #[test]
    fn src_packing() {
        assert_eq!(Src::row(5).get(), Source::Row(5));
        assert_eq!(Src::final_index(5).get(), Source::Final(5));
        assert_eq!(Src::row(u32::MAX).get(), Source::Unknown);
        assert_eq!(Src::row((1 << 31) - 1).get(), Source::Row((1 << 31) - 1));
        assert_eq!(Src::final_index(usize::MAX).get(), Source::Unknown);
        assert_eq!(Src::final_index((1 << 31) - 1).get(), Source::Unknown);
        assert_eq!(
            Src::final_index((1 << 31) - 2).get(),
            Source::Final((1 << 31) - 2)
        );
        assert_eq!(std::mem::size_of::<Blk>(), 24);
        assert_eq!(std::mem::size_of::<Seg>(), 40);
    }

    #[test]
    fn free_ranges_are_the_gaps() {
        let s = state(&[(1000, 100, 0)], &[(1010, 20), (1050, 10)]);
        assert_eq!(s.free_ranges(1000), [(1000, 10), (1030, 20), (1060, 40)]);
        assert_eq!(s.free_ranges(5), []);
    }

    #[test]
    fn oom_verdicts() {
        // Two segments of 100 on stream 0, each with 60 free in gaps of 30: 120 free in all.
        let s = state(
            &[(0, 100, 0), (1000, 100, 0), (5000, 500, 7)],
            &[(0, 20), (50, 20), (1000, 20), (1050, 20), (5000, 500)],
        );
        let r = explain_oom(&s, 3, 100, Some(0), 0, (0, 0));
        assert_eq!(
            (r.reserved_free_bytes, r.largest_free_block_bytes),
            (120, 30)
        );
        assert_eq!(r.kind, "fragmentation");
        assert!(r.verdict.starts_with("Fragmentation"), "{}", r.verdict);
        assert_eq!(r.biggest_live.first(), Some(&(5000, 500)));
        let r = explain_oom(&s, 3, 200, Some(100), 0, (0, 0));
        assert!(
            r.verdict.starts_with("Memory held in the cache"),
            "{}",
            r.verdict
        );
        let r = explain_oom(&s, 3, 1000, Some(100), 0, (0, 0));
        assert_eq!(r.kind, "out_of_memory");
        let r = explain_oom(&s, 3, 25, None, 0, (0, 0));
        assert!(r.verdict.starts_with("A free block"), "{}", r.verdict);
        // Another stream's free space is not the request's largest block.
        let r = explain_oom(&s, 3, 25, None, 7, (0, 0));
        assert_eq!(r.largest_free_block_bytes, 0);
    }
}

/// What the event list's rows need besides the events: §2's address versions and stream
/// ordinals (built once per device).
#[derive(Clone, Debug)]
pub struct RowContext {
    versions: crate::tooltip::Versions,
    streams: crate::tooltip::StreamOrdinals,
}

impl RowContext {
    #[must_use]
    pub fn new(snap: &Snapshot, device: i64) -> Self {
        Self {
            versions: crate::tooltip::versions(snap, device),
            streams: crate::tooltip::stream_ordinals(snap),
        }
    }

    /// The device it was built for.
    #[must_use]
    pub fn device(&self) -> i64 {
        self.versions.device
    }

    /// §2's address versions of the device's events and of the final blocks and segments.
    #[must_use]
    pub fn versions(&self) -> &crate::tooltip::Versions {
        &self.versions
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
        let e = self.events.get(k)?;
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
                    .versions
                    .events
                    .get(e.row as usize)
                    .copied()
                    .unwrap_or(crate::tooltip::NO_VERSION);
                let v = if version == crate::tooltip::NO_VERSION {
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
