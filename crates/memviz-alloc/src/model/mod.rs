//! The caching allocator itself (ALLOCATOR.md §1 to §6): pools, best fit, splitting, merging,
//! the failure path, garbage collection, `empty_cache` and expandable segments. Memory is
//! proportional to the live blocks and segments: blocks and segments live in slabs whose
//! slots are reused, free blocks in ordered sets per pool.

mod expandable;
mod fit;
mod release;
mod seed;
#[cfg(test)]
mod tests;

pub use fit::{allocation_size, round_size};

use crate::consts::*;
use crate::settings::Settings;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

const NONE: u32 = u32::MAX;

/// What a segment event did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SegKind {
    /// `cudaMalloc` of a segment (`segment_alloc`).
    Alloc,
    /// `cudaFree` of a segment (`segment_free`).
    Free,
    /// Pages of an expandable segment mapped (`segment_map`).
    Map,
    /// Pages unmapped (`segment_unmap`).
    Unmap,
}

/// A segment event of the model, with the trace event during which it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SegEvent {
    pub kind: SegKind,
    pub size: u64,
    pub event: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum St {
    /// In the free set (mapped) or the unmapped set.
    Free,
    Allocated,
    /// Freed by the user, waiting on stream events: neither reusable nor mergeable.
    Pending,
}

#[derive(Clone, Debug)]
struct Block {
    addr: u64,
    size: u64,
    stream: u64,
    pool: u32,
    seg: u32,
    prev: u32,
    next: u32,
    state: St,
    mapped: bool,
    gc_base: u64,
}

#[derive(Clone, Debug)]
struct Seg {
    addr: u64,
    expandable: bool,
    page: u64,
    head: u32,
}

#[derive(Clone, Debug, Default)]
struct Pool {
    small: bool,
    /// Free mapped blocks by (stream, size, addr).
    blocks: BTreeSet<(u64, u64, u64, u32)>,
    /// Unmapped expandable ranges by (stream, addr).
    unmapped: BTreeSet<(u64, u64, u32)>,
    /// Lookups since the start (GC ages, ALLOCATOR.md §3).
    gc_calls: u64,
}

/// One piece of a seeded segment (the state at the trace's start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece {
    Allocated,
    Pending,
    Free,
    /// Not mapped (expandable segments only).
    Unmapped,
}

/// What the device looked like when a request failed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FreeAtOom {
    /// Bytes reserved (segments and mapped pages) after the failure path's releases.
    pub reserved: u64,
    /// Bytes in allocated blocks (rounded sizes, pending frees included).
    pub allocated: u64,
    /// Free bytes inside the reserved segments (reserved − allocated).
    pub cached_free: u64,
    /// The largest free block in any pool.
    pub largest_free_block: u64,
    /// Capacity − reserved.
    pub device_free: u64,
}

/// The allocator's state and counters.
#[derive(Debug)]
pub struct Model {
    pub settings: Settings,
    blocks: Vec<Block>,
    spare_blocks: Vec<u32>,
    segs: Vec<Seg>,
    spare_segs: Vec<u32>,
    pools: Vec<Pool>,
    pool_index: FxHashMap<((i64, i64), bool), u32>,
    /// Address ranges in use by segments and reservations (addr → end).
    ranges: BTreeMap<u64, u64>,
    next_va: u64,
    pending: Vec<u32>,
    /// GC runs only when a capacity is given (ALLOCATOR.md §3: it needs a memory fraction).
    gc_capacity: Option<u64>,
    /// An address to place the next new segment at when it is free (the recorded one).
    pub addr_hint: Option<u64>,
    /// The trace event being replayed (stamped on segment events).
    pub event: u32,
    pub record_events: bool,
    pub seg_events: Vec<SegEvent>,
    pub reserved: u64,
    pub allocated: u64,
    pub peak_reserved: u64,
    pub peak_allocated: u64,
    /// The reserved peak was raised by the operation in progress.
    pub peak_moved: bool,
    pub cuda_mallocs: u64,
    pub cuda_frees: u64,
    pub live_segments: u64,
}

/// Where new segments go when the recorded address is taken: far above real addresses.
const SIM_VA_BASE: u64 = 1 << 56;
/// An expandable reservation without a capacity: 1 TiB of address space.
const DEFAULT_RESERVATION: u64 = 1 << 40;

impl Model {
    #[must_use]
    pub fn new(settings: Settings, capacity: Option<u64>) -> Model {
        let gc_capacity = capacity.filter(|_| settings.garbage_collection_threshold.is_some());
        let mut m = Model {
            settings,
            blocks: Vec::new(),
            spare_blocks: Vec::new(),
            segs: Vec::new(),
            spare_segs: Vec::new(),
            pools: Vec::new(),
            pool_index: FxHashMap::default(),
            ranges: BTreeMap::new(),
            next_va: SIM_VA_BASE,
            pending: Vec::new(),
            gc_capacity,
            addr_hint: None,
            event: 0,
            record_events: true,
            seg_events: Vec::new(),
            reserved: 0,
            allocated: 0,
            peak_reserved: 0,
            peak_allocated: 0,
            peak_moved: false,
            cuda_mallocs: 0,
            cuda_frees: 0,
            live_segments: 0,
        };
        m.pool((0, 0), false);
        m.pool((0, 0), true);
        m
    }

    /// The pool of private pool `id` ((0, 0) = the default pool), small or large.
    pub fn pool(&mut self, id: (i64, i64), small: bool) -> u32 {
        if let Some(&p) = self.pool_index.get(&(id, small)) {
            return p;
        }
        let p = self.pools.len() as u32;
        // Private pools (CUDA graphs, MemPool) are never released: only the default pool's
        // ids are looked up by `empty_cache` and GC.
        self.pools.push(Pool {
            small,
            ..Pool::default()
        });
        self.pool_index.insert((id, small), p);
        p
    }

    /// Heap bytes of the state (slabs, sets, maps): proportional to live blocks and segments.
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let sets: usize = self
            .pools
            .iter()
            .map(|p| (p.blocks.len() * 28 + p.unmapped.len() * 20) * 3 / 2)
            .sum();
        self.blocks.capacity() * size_of::<Block>()
            + self.segs.capacity() * size_of::<Seg>()
            + (self.spare_blocks.capacity() + self.spare_segs.capacity() + self.pending.capacity())
                * 4
            + self.ranges.len() * 24
            + sets
            + self.seg_events.capacity() * size_of::<SegEvent>()
    }

    fn blk(&self, id: u32) -> Option<&Block> {
        self.blocks.get(id as usize)
    }
    fn blk_mut(&mut self, id: u32) -> Option<&mut Block> {
        self.blocks.get_mut(id as usize)
    }
    fn seg(&self, id: u32) -> Option<&Seg> {
        self.segs.get(id as usize)
    }

    fn new_block(&mut self, b: Block) -> u32 {
        if let Some(id) = self.spare_blocks.pop() {
            if let Some(slot) = self.blocks.get_mut(id as usize) {
                *slot = b;
                return id;
            }
        }
        self.blocks.push(b);
        (self.blocks.len() - 1) as u32
    }
    /// A new segment's one free block, over all of it (`mapped`: false for an expandable
    /// reservation, whose pages are mapped on demand), made the segment's head.
    fn new_segment_block(
        &mut self,
        seg: u32,
        addr: u64,
        size: u64,
        stream: u64,
        pool: u32,
        mapped: bool,
    ) -> u32 {
        let id = self.new_block(Block {
            addr,
            size,
            stream,
            pool,
            seg,
            prev: NONE,
            next: NONE,
            state: St::Free,
            mapped,
            gc_base: 0,
        });
        if let Some(s) = self.segs.get_mut(seg as usize) {
            s.head = id;
        }
        id
    }
    fn drop_block(&mut self, id: u32) {
        self.spare_blocks.push(id);
    }
    fn new_seg(&mut self, s: Seg) -> u32 {
        self.live_segments += 1;
        if let Some(id) = self.spare_segs.pop() {
            if let Some(slot) = self.segs.get_mut(id as usize) {
                *slot = s;
                return id;
            }
        }
        self.segs.push(s);
        (self.segs.len() - 1) as u32
    }
    fn drop_seg(&mut self, id: u32) {
        if let Some(s) = self.segs.get(id as usize) {
            self.ranges.remove(&s.addr);
        }
        self.live_segments = self.live_segments.saturating_sub(1);
        self.spare_segs.push(id);
    }

    fn emit(&mut self, kind: SegKind, size: u64) {
        match kind {
            SegKind::Alloc | SegKind::Map => {
                self.cuda_mallocs += 1;
                self.reserved = self.reserved.saturating_add(size);
                if self.reserved > self.peak_reserved {
                    self.peak_reserved = self.reserved;
                    self.peak_moved = true;
                }
            }
            SegKind::Free | SegKind::Unmap => {
                self.cuda_frees += 1;
                self.reserved = self.reserved.saturating_sub(size);
            }
        }
        if self.record_events {
            self.seg_events.push(SegEvent {
                kind,
                size,
                event: self.event,
            });
        }
    }

    /// Puts a free mapped block into its pool's set (and starts its GC age).
    fn insert_free(&mut self, id: u32) {
        let Some(b) = self.blk(id) else { return };
        let (pool, key, mapped) = (b.pool, (b.stream, b.size, b.addr, id), b.mapped);
        let Some(p) = self.pools.get_mut(pool as usize) else {
            return;
        };
        if mapped {
            p.blocks.insert(key);
        } else {
            p.unmapped.insert((key.0, key.2, id));
        }
        let calls = p.gc_calls;
        if let Some(b) = self.blk_mut(id) {
            b.gc_base = calls;
        }
    }

    fn remove_free(&mut self, id: u32) {
        let Some(b) = self.blk(id) else { return };
        let (pool, key, mapped) = (b.pool, (b.stream, b.size, b.addr, id), b.mapped);
        if let Some(p) = self.pools.get_mut(pool as usize) {
            if mapped {
                p.blocks.remove(&key);
            } else {
                p.unmapped.remove(&(key.0, key.2, id));
            }
        }
    }

    fn is_expandable(&self, id: u32) -> bool {
        self.blk(id)
            .and_then(|b| self.seg(b.seg))
            .is_some_and(|s| s.expandable)
    }

    /// Neither split from nor merged with a neighbour: the whole segment.
    fn is_whole(&self, id: u32) -> bool {
        self.blk(id)
            .is_some_and(|b| b.prev == NONE && b.next == NONE)
    }

    fn link_prev(&mut self, id: u32, prev: u32) {
        if let Some(b) = self.blk_mut(id) {
            b.prev = prev;
        }
    }
    fn link_next(&mut self, id: u32, next: u32) {
        if let Some(b) = self.blk_mut(id) {
            b.next = next;
        }
    }

    /// `try_merge_blocks(dst, src)`: absorbs the free neighbour `src` (equally mapped) into
    /// `dst` (which is in no set). Returns the bytes absorbed.
    fn try_merge(&mut self, dst: u32, src: u32) -> u64 {
        let (Some(d), Some(s)) = (self.blk(dst), self.blk(src)) else {
            return 0;
        };
        if src == NONE || s.state != St::Free || s.mapped != d.mapped {
            return 0;
        }
        let (s_size, s_addr, s_prev, s_next) = (s.size, s.addr, s.prev, s.next);
        let (seg, d_next) = (d.seg, d.next);
        self.remove_free(src);
        if d_next == src {
            self.link_next(dst, s_next);
            if s_next != NONE {
                self.link_prev(s_next, dst);
            }
        } else {
            if let Some(d) = self.blk_mut(dst) {
                d.addr = s_addr;
                d.prev = s_prev;
            }
            if s_prev != NONE {
                self.link_next(s_prev, dst);
            } else if let Some(sg) = self.segs.get_mut(seg as usize) {
                sg.head = dst;
            }
        }
        if let Some(d) = self.blk_mut(dst) {
            d.size = d.size.saturating_add(s_size);
        }
        self.drop_block(src);
        s_size
    }

    /// `malloc` (ALLOCATOR.md §5) of `req` requested bytes on `stream` in private pool `pool_id`
    /// ((0, 0) = default), with `cap` as the device's capacity. `Err` is an OOM, with what was
    /// free after the failure path.
    pub fn malloc(
        &mut self,
        req: u64,
        stream: u64,
        pool_id: (i64, i64),
        cap: Option<u64>,
    ) -> Result<u32, FreeAtOom> {
        let size = round_size(&self.settings, req);
        let pool = self.pool(pool_id, size <= SMALL_SIZE);
        let mut block = self.get_free_block(pool, stream, size);
        if block.is_none() {
            if self.gc_capacity.is_some() {
                self.garbage_collect();
            }
            block = self.alloc_block(pool, stream, size, cap);
            if block.is_none() && self.release_available(pool, stream, size) {
                block = self.alloc_block(pool, stream, size, cap);
            }
            if block.is_none() {
                self.empty_cache();
                block = self.alloc_block(pool, stream, size, cap);
            }
        }
        self.addr_hint = None;
        let Some(id) = block else {
            return Err(self.free_at_oom(cap));
        };
        if self.should_split(id, size) {
            let b = self.blk(id).cloned().unwrap_or_else(unreachable_block);
            let rest = self.new_block(Block {
                addr: b.addr.saturating_add(size),
                size: b.size - size,
                prev: id,
                next: b.next,
                state: St::Free,
                ..b.clone()
            });
            if b.next != NONE {
                self.link_prev(b.next, rest);
            }
            self.link_next(id, rest);
            if let Some(x) = self.blk_mut(id) {
                x.size = size;
            }
            self.insert_free(rest);
        }
        let bsize = self.blk(id).map_or(0, |b| b.size);
        if let Some(x) = self.blk_mut(id) {
            x.state = St::Allocated;
        }
        self.allocated = self.allocated.saturating_add(bsize);
        self.peak_allocated = self.peak_allocated.max(self.allocated);
        Ok(id)
    }

    /// What was free when a request failed.
    #[must_use]
    pub fn free_at_oom(&self, cap: Option<u64>) -> FreeAtOom {
        FreeAtOom {
            reserved: self.reserved,
            allocated: self.allocated,
            cached_free: self.reserved.saturating_sub(self.allocated),
            largest_free_block: self.largest_free_block(),
            device_free: cap.map_or(0, |c| c.saturating_sub(self.reserved)),
        }
    }

    /// The largest free (mapped) block of any pool: the last block of each stream's run.
    #[must_use]
    pub fn largest_free_block(&self) -> u64 {
        let mut best = 0;
        for p in &self.pools {
            let mut upper: Option<u64> = None;
            loop {
                let last = match upper {
                    None => p.blocks.iter().next_back(),
                    Some(s) => p.blocks.range(..(s, 0, 0, 0)).next_back(),
                };
                let Some(&(st, sz, _, _)) = last else { break };
                best = best.max(sz);
                if st == 0 {
                    break;
                }
                upper = Some(st);
            }
        }
        best
    }

    /// `free()` of an allocated block: pending until [`Model::free_completed`].
    pub fn free_requested(&mut self, id: u32) {
        if let Some(b) = self.blk_mut(id) {
            if b.state == St::Allocated {
                b.state = St::Pending;
                self.pending.push(id);
            }
        }
    }

    /// `free_block`: the block goes back to its pool, merged with free neighbours.
    pub fn free_completed(&mut self, id: u32) {
        if self
            .blk(id)
            .is_some_and(|b| b.state == St::Allocated || b.state == St::Pending)
        {
            if let Some(i) = self.pending.iter().position(|&p| p == id) {
                self.pending.swap_remove(i);
            }
            self.free_block(id);
        }
    }

    fn free_block(&mut self, id: u32) {
        let Some(b) = self.blk(id) else { return };
        let size = b.size;
        self.allocated = self.allocated.saturating_sub(size);
        if let Some(x) = self.blk_mut(id) {
            x.state = St::Free;
        }
        let prev = self.blk(id).map_or(NONE, |x| x.prev);
        self.try_merge(id, prev);
        let next = self.blk(id).map_or(NONE, |x| x.next);
        self.try_merge(id, next);
        self.insert_free(id);
    }
}

#[cold]
fn unreachable_block() -> Block {
    Block {
        addr: 0,
        size: 0,
        stream: 0,
        pool: 0,
        seg: 0,
        prev: NONE,
        next: NONE,
        state: St::Free,
        mapped: true,
        gc_base: 0,
    }
}
