//! [`History`]: the merged event list read from the trace in place, and checkpoints of the
//! allocator state stored as compact differences from the final state.
//!
//! # Memory (150 MB tiled real file, 2.24 M trace entries, 115 k segments and 151 k blocks
//! live throughout)
//! * Events are not copied: event `k`'s trace row comes from the row of every 64th event
//!   ([`SAMPLE`]) and a short walk, since a merged `free` (§2) is recognised from two
//!   neighbouring rows alone. Its fields are read from the trace's columns. 0.06 bytes per
//!   trace entry, where a `Vec<Event>` took 56.
//! * A checkpoint is the overlay of the state at that event on the final state (the entries
//!   that differ, `None` for one the final state has and this one lacks), varint-encoded in one
//!   byte buffer, plus the header totals. Whole-state copies (15 MB each there) took 7 bytes
//!   per trace entry; with a 2-byte budget the overlays there are 30 checkpoints of about
//!   110 kB (9 k entries), 1.45 bytes per trace entry in all, and a selection undoes at most
//!   209 k events (37 ms native, with the final state's rebuild and the merge).
//! * The final state is not kept: [`State::from_snapshot`] rebuilds it (a sort of the
//!   device's final segments and blocks) for each selection.
//!
//! Checkpoints are placed by a byte budget ([`History::build_within`]): every event earns
//! `bytes_per_event` of credit, and at most every [`MIN_GAP`] events a checkpoint is written
//! when the credit covers its estimated size. Their total stays under the budget whatever the
//! state's size; small overlays are frequent, large ones far apart.

use memviz_snapshot::{Action, DeviceTrace, Snapshot, StackId};
use rustc_hash::FxHashMap;

use super::map::{undo, State};
use super::work::Work;
use super::{Blk, Event, Kind, Seg, Src};

/// Every `SAMPLE`-th event's trace row is kept; other rows are found by a walk of fewer than
/// `SAMPLE` rows.
const SAMPLE: usize = 64;
/// The checkpoint budget the viewer and the CLI use, bytes per trace event (see the module
/// docs for what it buys).
pub const BYTES_PER_EVENT: usize = 2;
/// Fewest events between two budgeted checkpoints (each costs 40 bytes of bookkeeping).
const MIN_GAP: usize = 512;

/// Whether row `r` is a `free_completed` merged into the `free_requested` just before it
/// (§2). The row before cannot itself be merged (a merged row is a `free_completed`), so two
/// rows decide it.
pub(super) fn absorbed(tr: &DeviceTrace, r: usize) -> bool {
    r > 0
        && tr.action(r) == Some(Action::FreeCompleted)
        && tr.action(r - 1) == Some(Action::FreeRequested)
        && tr.addr(r - 1).unwrap_or(0) == tr.addr(r).unwrap_or(0)
}

/// The merged event starting at trace row `r` (not an absorbed row).
pub(super) fn event_at(tr: &DeviceTrace, r: usize) -> Event {
    let kind = match tr.action(r) {
        Some(Action::Alloc) => Kind::Alloc,
        Some(Action::FreeRequested) if absorbed(tr, r + 1) => Kind::Free,
        Some(Action::FreeRequested) => Kind::FreeRequested,
        Some(Action::FreeCompleted) => Kind::FreeCompleted,
        Some(Action::SegmentAlloc) => Kind::SegmentAlloc,
        Some(Action::SegmentFree) => Kind::SegmentFree,
        Some(Action::SegmentMap) => Kind::SegmentMap,
        Some(Action::SegmentUnmap) => Kind::SegmentUnmap,
        _ => Kind::Other,
    };
    let row = r as u32;
    Event {
        row,
        kind,
        addr: tr.addr(r).unwrap_or(0),
        size: tr.size(r).unwrap_or(0),
        stream: tr.stream.get(r).unwrap_or(0),
        stack: tr.stack(r).unwrap_or(StackId(0)),
        pool: tr
            .pool_id
            .binary_search_by_key(&row, |p| p.0)
            .ok()
            .and_then(|j| tr.pool_id.get(j))
            .map_or((0, 0), |p| p.1),
    }
}

/// The row of the event before the one at row `r` (`r > 0`).
pub(super) fn prev_row(tr: &DeviceTrace, r: usize) -> usize {
    let p = r.saturating_sub(1);
    if absorbed(tr, p) {
        p.saturating_sub(1)
    } else {
        p
    }
}

/// Event index → trace row, from every [`SAMPLE`]-th event's row.
#[derive(Clone, Debug, Default)]
struct EventIndex {
    len: usize,
    samples: Vec<u32>,
}

impl EventIndex {
    fn build(tr: &DeviceTrace) -> Self {
        let mut out = EventIndex::default();
        for r in 0..tr.len() {
            let Ok(r32) = u32::try_from(r) else {
                break;
            };
            if absorbed(tr, r) {
                continue;
            }
            if out.len % SAMPLE == 0 {
                out.samples.push(r32);
            }
            out.len += 1;
        }
        out.samples.shrink_to_fit();
        out
    }

    fn row(&self, tr: &DeviceTrace, k: usize) -> Option<usize> {
        if k >= self.len {
            return None;
        }
        let mut r = *self.samples.get(k / SAMPLE)? as usize;
        let mut left = k % SAMPLE;
        while left > 0 {
            r += 1;
            if r >= tr.len() {
                return None;
            }
            if !absorbed(tr, r) {
                left -= 1;
            }
        }
        Some(r)
    }
}

fn put_var(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn get_var(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift = shift.checked_add(7).filter(|&s| s < 70)?;
    }
}

/// A checkpoint: the state after event `k` as an overlay at `bytes[start..]`, and its totals.
#[derive(Clone, Copy, Debug)]
struct Checkpoint {
    k: usize,
    start: usize,
    reserved: u64,
    allocated: u64,
    inconsistencies: u32,
}

/// Where checkpoints go.
#[derive(Clone, Copy, Debug)]
enum Spacing {
    /// After every `n`-th event counted back from the last.
    Every(usize),
    /// By a byte budget per event (see the module docs).
    Budget(usize),
}

/// The merged events of one device with checkpoints of the state.
#[derive(Clone, Debug)]
pub struct History {
    pub device: i64,
    index: EventIndex,
    /// `k` ascending; the last is the final state (an empty overlay).
    checkpoints: Vec<Checkpoint>,
    /// The checkpoints' overlays, varint-encoded one after the other.
    bytes: Vec<u8>,
    /// Distinct `(stream, pool)` of overlay segments (an overlay stores the index).
    stream_pools: Vec<(u64, (i64, i64))>,
    /// Most events a selection undoes (the longest run from a checkpoint back to the one
    /// before it, or to event 0).
    pub interval: usize,
}

/// Writes overlays into a [`History`]'s buffer during the backward pass.
struct Writer {
    bytes: Vec<u8>,
    stream_pools: Vec<(u64, (i64, i64))>,
    sp_index: FxHashMap<(u64, (i64, i64)), u32>,
}

impl Writer {
    fn sp(&mut self, stream: u64, pool: (i64, i64)) -> u32 {
        let next = self.stream_pools.len() as u32;
        let id = *self.sp_index.entry((stream, pool)).or_insert(next);
        if id == next {
            self.stream_pools.push((stream, pool));
        }
        id
    }

    /// Encodes `w`'s overlay; its start offset.
    fn write(&mut self, w: &Work) -> usize {
        let start = self.bytes.len();
        put_var(&mut self.bytes, w.segs.len() as u64);
        let mut prev = 0u64;
        for (&a, v) in &w.segs {
            put_var(&mut self.bytes, a.wrapping_sub(prev));
            prev = a;
            match v {
                None => self.bytes.push(0),
                Some(s) => {
                    let sp = self.sp(s.stream, s.pool);
                    self.bytes.push(1);
                    put_var(&mut self.bytes, s.size);
                    put_var(&mut self.bytes, u64::from(sp));
                    put_var(&mut self.bytes, u64::from(s.src.0));
                }
            }
        }
        put_var(&mut self.bytes, w.blocks.len() as u64);
        let mut prev = 0u64;
        for (&a, v) in &w.blocks {
            put_var(&mut self.bytes, a.wrapping_sub(prev));
            prev = a;
            match v {
                None => self.bytes.push(0),
                Some(b) => {
                    let exact = b.requested == b.size;
                    self.bytes
                        .push(1 | (u8::from(b.pending) << 1) | (u8::from(!exact) << 2));
                    put_var(&mut self.bytes, b.size);
                    if !exact {
                        put_var(&mut self.bytes, b.requested);
                    }
                    put_var(&mut self.bytes, u64::from(b.src.0));
                }
            }
        }
        start
    }
}

/// The most entries the overlay on the final state (the difference a checkpoint stores) has
/// at any event of `device`'s trace: one backward pass.
fn largest_overlay(snap: &Snapshot, device: i64, base: &State) -> usize {
    let Some(tr) = snap.trace(device) else {
        return 0;
    };
    let index = EventIndex::build(tr);
    let Some(last) = index.len.checked_sub(1) else {
        return 0;
    };
    let Some(mut r) = index.row(tr, last) else {
        return 0;
    };
    let mut work = Work::new(base);
    let mut most = 0;
    for _ in 0..last {
        undo(&mut work, &event_at(tr, r));
        r = prev_row(tr, r);
        most = most.max(work.overlay_len());
    }
    most
}

impl History {
    /// Builds the event list and a checkpoint after every `interval`-th event counted back from
    /// the last (at least 1), in one backward pass.
    #[must_use]
    pub fn build(snap: &Snapshot, device: i64, interval: usize) -> History {
        Self::build_with(snap, device, Spacing::Every(interval.max(1)))
    }

    /// Builds the event list and checkpoints taking about `bytes_per_event` bytes per event in
    /// all (see the module docs).
    #[must_use]
    pub fn build_within(snap: &Snapshot, device: i64, bytes_per_event: usize) -> History {
        Self::build_with(snap, device, Spacing::Budget(bytes_per_event))
    }

    fn build_with(snap: &Snapshot, device: i64, spacing: Spacing) -> History {
        let mut h = History {
            device,
            index: EventIndex::default(),
            checkpoints: Vec::new(),
            bytes: Vec::new(),
            stream_pools: Vec::new(),
            interval: 0,
        };
        let Some(tr) = snap.trace(device) else {
            return h;
        };
        h.index = EventIndex::build(tr);
        let Some(last) = h.index.len.checked_sub(1) else {
            return h;
        };
        let Some(mut r) = h.index.row(tr, last) else {
            return h;
        };
        let base = State::from_snapshot(snap, device);
        let mut work = Work::new(&base);
        let mut out = Writer {
            bytes: Vec::new(),
            stream_pools: Vec::new(),
            sp_index: FxHashMap::default(),
        };
        let mut checkpoints = Vec::new();
        let mut push = |k: usize, work: &Work, out: &mut Writer| {
            let start = out.write(work);
            checkpoints.push(Checkpoint {
                k,
                start,
                reserved: work.reserved,
                allocated: work.allocated,
                inconsistencies: work.inconsistencies,
            });
            out.bytes.len() - start
        };
        push(last, &work, &mut out);
        let (mut credit, mut gap) = (0usize, 0usize);
        // Encoded bytes per overlay entry, as last measured (blocks restored by an undone
        // free take about 9).
        let mut per_entry = 12usize;
        for k in (0..last).rev() {
            undo(&mut work, &event_at(tr, r));
            r = prev_row(tr, r);
            gap += 1;
            let due = match spacing {
                Spacing::Every(n) => (last - k) % n == 0,
                Spacing::Budget(b) => {
                    credit = credit.saturating_add(b);
                    gap >= MIN_GAP && credit >= work.overlay_len() * per_entry + 48
                }
            };
            if due {
                let entries = work.overlay_len();
                let cost = push(k, &work, &mut out);
                if let Some(p) = cost.checked_div(entries) {
                    per_entry = p.max(1);
                }
                credit = credit.saturating_sub(cost + 40);
                gap = 0;
            }
        }
        checkpoints.reverse();
        let first = checkpoints.first().map_or(0, |c| c.k);
        h.interval = checkpoints
            .windows(2)
            .map(|w| match w {
                [a, b] => b.k - a.k,
                _ => 0,
            })
            .fold(first, usize::max);
        checkpoints.shrink_to_fit();
        out.bytes.shrink_to_fit();
        out.stream_pools.shrink_to_fit();
        h.checkpoints = checkpoints;
        h.bytes = out.bytes;
        h.stream_pools = out.stream_pools;
        h
    }

    /// The overlay of checkpoint `c` on `base`.
    fn decode<'b>(&self, c: &Checkpoint, base: &'b State) -> Option<Work<'b>> {
        let mut w = Work::new(base);
        w.reserved = c.reserved;
        w.allocated = c.allocated;
        w.inconsistencies = c.inconsistencies;
        let b = self.bytes.as_slice();
        let mut at = c.start;
        let n = get_var(b, &mut at)?;
        let mut addr = 0u64;
        let mut segs = Vec::new();
        for _ in 0..n {
            addr = addr.wrapping_add(get_var(b, &mut at)?);
            let tag = *b.get(at)?;
            at += 1;
            if tag == 0 {
                segs.push((addr, None));
                continue;
            }
            let size = get_var(b, &mut at)?;
            let &(stream, pool) = self.stream_pools.get(get_var(b, &mut at)? as usize)?;
            let src = Src(u32::try_from(get_var(b, &mut at)?).ok()?);
            segs.push((
                addr,
                Some(Seg {
                    size,
                    stream,
                    pool,
                    src,
                }),
            ));
        }
        w.segs = segs.into_iter().collect();
        w.index_overlay();
        let n = get_var(b, &mut at)?;
        let mut addr = 0u64;
        let mut blocks = Vec::new();
        for _ in 0..n {
            addr = addr.wrapping_add(get_var(b, &mut at)?);
            let tag = *b.get(at)?;
            at += 1;
            if tag == 0 {
                blocks.push((addr, None));
                continue;
            }
            let size = get_var(b, &mut at)?;
            let requested = if tag & 4 != 0 {
                get_var(b, &mut at)?
            } else {
                size
            };
            let src = Src(u32::try_from(get_var(b, &mut at)?).ok()?);
            blocks.push((
                addr,
                Some(Blk {
                    size,
                    requested,
                    pending: tag & 2 != 0,
                    src,
                }),
            ));
        }
        w.blocks = blocks.into_iter().collect();
        Some(w)
    }

    /// A checkpoint interval keeping [`History::build`]'s checkpoints near `budget_bytes` in all
    /// (at least 64). A checkpoint is the difference between the state at its event and the
    /// final state, which can be far larger than the final state (a trace that ends after
    /// `empty_cache()` is nearly empty at the end): the interval is chosen from the largest
    /// difference along the trace, found by one backward pass, not from the final state (which
    /// made a 9.4 MB trace take 1 GB of checkpoints). [`History::build_within`] bounds the bytes
    /// directly and needs no such pass.
    #[must_use]
    pub fn interval_for(snap: &Snapshot, device: i64, budget_bytes: usize) -> usize {
        let n = snap.trace(device).map_or(0, |t| t.len());
        let base = State::from_snapshot(snap, device);
        // Bytes per overlay entry as a whole state holds them (an encoded entry takes less).
        let entry = std::mem::size_of::<(u64, Blk)>();
        let per_state = base
            .heap_bytes()
            .max(largest_overlay(snap, device, &base).saturating_mul(entry))
            .max(64);
        let count = (budget_bytes / per_state).max(1);
        (n / count).max(64)
    }

    /// Number of merged events.
    #[must_use]
    pub fn len(&self) -> usize {
        self.index.len
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.index.len == 0
    }

    /// Event `k` of the merged list, read from `snap` (the snapshot the history was built
    /// from).
    #[must_use]
    pub fn event(&self, snap: &Snapshot, k: usize) -> Option<Event> {
        let tr = snap.trace(self.device)?;
        Some(event_at(tr, self.index.row(tr, k)?))
    }

    /// Every merged event in order.
    pub fn events<'a>(&'a self, snap: &'a Snapshot) -> impl Iterator<Item = Event> + 'a {
        let tr = snap.trace(self.device);
        (0..tr.map_or(0, |t| t.len()))
            .filter_map(move |r| tr.filter(|t| !absorbed(t, r)).map(|t| event_at(t, r)))
            .take(self.index.len)
    }

    /// The state after event `k` (`None` when `k` is past the end): the nearest checkpoint at
    /// or after `k` merged into the final state, then at most [`History::interval`] undo steps.
    #[must_use]
    pub fn state_after(&self, snap: &Snapshot, k: usize) -> Option<State> {
        if k >= self.index.len {
            return None;
        }
        let tr = snap.trace(self.device)?;
        let at = self.checkpoints.partition_point(|c| c.k < k);
        let c = self.checkpoints.get(at)?;
        let base = State::from_snapshot(snap, self.device);
        let mut work = self.decode(c, &base)?;
        let mut r = self.index.row(tr, c.k)?;
        for j in (k + 1..=c.k).rev() {
            undo(&mut work, &event_at(tr, r));
            if j > k + 1 {
                r = prev_row(tr, r);
            }
        }
        Some(work.into_state())
    }

    /// The final snapshot's state (after the last event; also with no events).
    #[must_use]
    pub fn final_state(&self, snap: &Snapshot) -> State {
        State::from_snapshot(snap, self.device)
    }

    /// Heap bytes of the history (checkpoints and the event index).
    #[must_use]
    pub fn checkpoint_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.checkpoints.capacity() * std::mem::size_of::<Checkpoint>()
            + self.stream_pools.capacity() * std::mem::size_of::<(u64, (i64, i64))>()
            + self.index.samples.capacity() * 4
    }

    /// The events the checkpoints are at, ascending (the last event's included).
    pub fn checkpoint_events(&self) -> impl Iterator<Item = usize> + '_ {
        self.checkpoints.iter().map(|c| c.k)
    }
}
