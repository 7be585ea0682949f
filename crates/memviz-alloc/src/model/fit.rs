//! Request sizes and best fit: rounding, the cached-block lookup, splitting and new plain segments.

use super::{Model, Seg, SegKind, NONE, SIM_VA_BASE};
use crate::consts::*;
use crate::settings::Settings;

/// The size a request is rounded to (ALLOCATOR.md §1, `round_size`).
#[must_use]
pub fn round_size(settings: &Settings, size: u64) -> u64 {
    if size < MIN_BLOCK {
        return MIN_BLOCK;
    }
    let d = settings.divisions(size);
    if d > 1 && size > MIN_BLOCK.saturating_mul(d) {
        next_division(size, d)
    } else {
        size.div_ceil(MIN_BLOCK).saturating_mul(MIN_BLOCK)
    }
}

/// `roundup_power2_next_division`: a power of 2 stays; else up to the next of `d` equal steps
/// between the powers of 2 around it.
fn next_division(size: u64, d: u64) -> u64 {
    if size.is_power_of_two() {
        return size;
    }
    let floor = 1u64 << (63 - size.leading_zeros());
    let step = floor >> (63 - d.leading_zeros());
    if step == 0 {
        return floor.saturating_mul(2);
    }
    let down = size & !(step - 1);
    if down == size {
        size
    } else {
        down.saturating_add(step)
    }
}

/// The `cudaMalloc` size of a new segment for a rounded request (`get_allocation_size`).
#[must_use]
pub fn allocation_size(size: u64) -> u64 {
    if size <= SMALL_SIZE {
        SMALL_BUFFER
    } else if size < MIN_LARGE_ALLOC {
        LARGE_BUFFER
    } else {
        size.div_ceil(ROUND_LARGE).saturating_mul(ROUND_LARGE)
    }
}

impl Model {
    fn alloc_size_of(&self, size: u64) -> u64 {
        allocation_size(size)
    }

    fn max_split(&self) -> u64 {
        self.settings.max_split_size.unwrap_or(u64::MAX)
    }

    /// `get_free_block`: best fit by (stream, size, addr) with the expandable ranking and the
    /// oversize rules. Takes the block out of the set.
    pub(super) fn get_free_block(&mut self, pool: u32, stream: u64, size: u64) -> Option<u32> {
        if self.gc_capacity.is_some() {
            if let Some(p) = self.pools.get_mut(pool as usize) {
                p.gc_calls += 1;
            }
        }
        let cur = self.find_free_block(pool, stream, size)?;
        if let Some(p) = self.pools.get_mut(pool as usize) {
            p.blocks.remove(&cur);
        }
        Some(cur.3)
    }

    /// Whether a request of `req` bytes would be served from the cache (no new segment).
    #[must_use]
    pub fn would_hit(&mut self, req: u64, stream: u64, pool_id: (i64, i64)) -> bool {
        let size = round_size(&self.settings, req);
        let pool = self.pool(pool_id, size <= SMALL_SIZE);
        self.find_free_block(pool, stream, size).is_some()
    }

    /// The lookup of [`Self::get_free_block`], without taking the block.
    fn find_free_block(&self, pool: u32, stream: u64, size: u64) -> Option<(u64, u64, u64, u32)> {
        let expandable_on = self.settings.expandable_segments;
        let max_split = self.max_split();
        let rounding = self.settings.max_non_split_rounding;
        let p = self.pools.get(pool as usize)?;
        let mut it = p.blocks.range((stream, size, 0, 0)..);
        let mut cur = *it.next()?;
        if cur.0 != stream {
            return None;
        }
        if self.is_expandable(cur.3) {
            if expandable_on {
                let exp_size = |m: &Model, id: u32| -> u64 {
                    m.blk(id).map_or(0, |b| {
                        let tail = m.blk(b.next).filter(|n| !n.mapped).map_or(0, |n| n.size);
                        b.size.saturating_add(tail)
                    })
                };
                for next in it {
                    if !(self.is_expandable(cur.3)
                        && next.0 == stream
                        && exp_size(self, next.3) < exp_size(self, cur.3))
                    {
                        break;
                    }
                    cur = *next;
                }
            } else {
                // Expandable blocks left from earlier settings are skipped.
                let mut found = None;
                for next in it {
                    if next.0 != stream {
                        break;
                    }
                    if !self.is_expandable(next.3) {
                        found = Some(*next);
                        break;
                    }
                }
                cur = found?;
            }
        }
        let bsize = cur.1;
        if size < max_split && bsize >= max_split {
            return None;
        }
        if size >= max_split && bsize >= size.saturating_add(rounding) {
            return None;
        }
        Some(cur)
    }

    pub(super) fn should_split(&self, id: u32, size: u64) -> bool {
        let Some(b) = self.blk(id) else { return false };
        let rem = b.size.saturating_sub(size);
        let small = self.pools.get(b.pool as usize).is_some_and(|p| p.small);
        if small || self.settings.expandable_segments {
            rem >= MIN_BLOCK
        } else {
            size < self.max_split() && rem > SMALL_SIZE
        }
    }

    /// A free address range of `size` bytes: the hint when it is free, else a new one.
    pub(super) fn place(&mut self, size: u64) -> u64 {
        if let Some(h) = self.addr_hint.take() {
            let end = h.saturating_add(size);
            let before_ok = self
                .ranges
                .range(..=h)
                .next_back()
                .is_none_or(|(_, &e)| e <= h);
            let after_ok = self.ranges.range(h..end).next().is_none();
            if before_ok && after_ok && h < SIM_VA_BASE {
                self.ranges.insert(h, end);
                return h;
            }
        }
        let a = self.next_va;
        self.next_va = a.saturating_add(size.div_ceil(ROUND_LARGE).saturating_mul(ROUND_LARGE));
        self.ranges.insert(a, a.saturating_add(size));
        a
    }

    /// `alloc_block`: a new segment (or mapped pages) for a request of rounded `size`.
    pub(super) fn alloc_block(
        &mut self,
        pool: u32,
        stream: u64,
        size: u64,
        cap: Option<u64>,
    ) -> Option<u32> {
        if self.settings.expandable_segments {
            return self.alloc_expandable(pool, stream, size, cap);
        }
        let alloc = self.alloc_size_of(size);
        if cap.is_some_and(|c| self.reserved.saturating_add(alloc) > c) {
            return None;
        }
        let addr = self.place(alloc);
        let seg = self.new_seg(Seg {
            addr,
            expandable: false,
            page: 0,
            head: NONE,
        });
        let id = self.new_segment_block(seg, addr, alloc, stream, pool, true);
        self.emit(SegKind::Alloc, alloc);
        Some(id)
    }
}
