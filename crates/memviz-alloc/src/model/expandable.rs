//! Expandable segments (ALLOCATOR.md §5): reservations, mapping and unmapping pages.

use super::{Block, Model, Seg, SegKind, St, DEFAULT_RESERVATION, NONE};
use crate::consts::*;

impl Model {
    pub(super) fn page_of(&self, pool: u32) -> u64 {
        if self.pools.get(pool as usize).is_some_and(|p| p.small) {
            SMALL_BUFFER
        } else {
            LARGE_BUFFER
        }
    }

    fn allocatable(&self, id: u32) -> bool {
        self.blk(id).is_some_and(|b| b.state == St::Free)
    }

    /// `try_allocate_expandable_block` (ALLOCATOR.md §5): the lowest unmapped range (with the
    /// free block before it) that holds `size`, or a new reservation; maps the pages needed.
    pub(super) fn alloc_expandable(
        &mut self,
        pool: u32,
        stream: u64,
        size: u64,
        cap: Option<u64>,
    ) -> Option<u32> {
        let page = self.page_of(pool);
        let mut cand = None;
        let unmapped: Vec<u32> = self
            .pools
            .get(pool as usize)?
            .unmapped
            .range((stream, 0, 0)..)
            .take_while(|k| k.0 == stream)
            .map(|k| k.2)
            .collect();
        for c in unmapped {
            let mut c = c;
            let prev = self.blk(c).map_or(NONE, |b| b.prev);
            if self.allocatable(prev) && self.blk(prev).is_some_and(|b| b.mapped) {
                c = prev;
            }
            let mut bytes = 0u64;
            let mut b = c;
            while bytes < size && self.allocatable(b) {
                bytes = bytes.saturating_add(self.blk(b).map_or(0, |x| x.size));
                b = self.blk(b).map_or(NONE, |x| x.next);
            }
            if bytes >= size {
                cand = Some(c);
                break;
            }
        }
        // Bytes to map, checked against the capacity before anything changes.
        let mut to_map = 0u64;
        if let Some(c) = cand {
            let mut have = 0u64;
            let mut b = c;
            while have < size {
                let Some(x) = self.blk(b) else { break };
                if x.mapped {
                    have = have.saturating_add(x.size);
                } else {
                    let m = (size - have)
                        .div_ceil(page)
                        .saturating_mul(page)
                        .min(x.size);
                    to_map = to_map.saturating_add(m);
                    have = have.saturating_add(m);
                }
                b = x.next;
            }
        } else {
            to_map = size.div_ceil(page).saturating_mul(page);
        }
        if cap.is_some_and(|c| self.reserved.saturating_add(to_map) > c) {
            return None;
        }
        let mut c = match cand {
            Some(c) => c,
            None => self.new_reservation(pool, stream, page, cap)?,
        };
        if self.blk(c).is_some_and(|b| !b.mapped) {
            let m = self.blk(c).map_or(0, |b| b.size).min(size);
            c = self.map_block(c, m)?;
        }
        while self.blk(c).is_some_and(|b| b.size < size) {
            let (csize, next) = self.blk(c).map_or((0, NONE), |b| (b.size, b.next));
            let nsize = self.blk(next).filter(|n| !n.mapped).map(|n| n.size)?;
            c = self.map_block(next, (size - csize).min(nsize))?;
        }
        self.remove_free(c);
        Some(c)
    }

    fn new_reservation(
        &mut self,
        pool: u32,
        stream: u64,
        page: u64,
        cap: Option<u64>,
    ) -> Option<u32> {
        let span = cap.map_or(DEFAULT_RESERVATION, |c| {
            (c / 8)
                .saturating_mul(9)
                .div_ceil(page)
                .max(1)
                .saturating_mul(page)
        });
        let addr = self.place(span);
        let seg = self.new_seg(Seg {
            addr,
            expandable: true,
            page,
            head: NONE,
        });
        let id = self.new_segment_block(seg, addr, span, stream, pool, false);
        self.insert_free(id);
        Some(id)
    }

    /// `map_block`: maps the pages covering the first `size` bytes of unmapped block `id`,
    /// merges with free neighbours and puts the result in the free set. Returns the merged
    /// block.
    fn map_block(&mut self, id: u32, size: u64) -> Option<u32> {
        let b = self.blk(id)?.clone();
        let page = self.seg(b.seg).map_or(LARGE_BUFFER, |s| s.page.max(1));
        self.remove_free(id);
        let m = size.div_ceil(page).saturating_mul(page).min(b.size);
        if m < b.size {
            let rest = self.new_block(Block {
                addr: b.addr.saturating_add(m),
                size: b.size - m,
                prev: id,
                next: b.next,
                mapped: false,
                state: St::Free,
                ..b.clone()
            });
            if b.next != NONE {
                self.link_prev(b.next, rest);
            }
            self.link_next(id, rest);
            self.insert_free(rest);
        }
        if let Some(x) = self.blk_mut(id) {
            x.mapped = true;
            x.size = m;
        }
        let prev = self.blk(id).map_or(NONE, |x| x.prev);
        self.try_merge(id, prev);
        let next = self.blk(id).map_or(NONE, |x| x.next);
        self.try_merge(id, next);
        self.insert_free(id);
        self.emit(SegKind::Map, m);
        Some(id)
    }

    /// `unmap_block`: unmaps the whole pages inside free block `id` (in its set).
    pub(super) fn unmap_block(&mut self, id: u32) {
        let Some(b) = self.blk(id).cloned() else {
            return;
        };
        let Some(seg) = self.seg(b.seg).cloned() else {
            return;
        };
        let page = seg.page.max(1);
        let off = b.addr.saturating_sub(seg.addr);
        let begin = off.div_ceil(page).saturating_mul(page);
        let end = (off.saturating_add(b.size) / page).saturating_mul(page);
        if begin >= end {
            return;
        }
        self.remove_free(id);
        let before = begin - off;
        if before > 0 {
            let nb = self.new_block(Block {
                size: before,
                prev: b.prev,
                next: id,
                ..b.clone()
            });
            if b.prev != NONE {
                self.link_next(b.prev, nb);
            } else if let Some(s) = self.segs.get_mut(b.seg as usize) {
                s.head = nb;
            }
            self.link_prev(id, nb);
            self.insert_free(nb);
        }
        let after = off.saturating_add(b.size) - end;
        if after > 0 {
            let na = self.new_block(Block {
                addr: seg.addr.saturating_add(end),
                size: after,
                prev: id,
                next: b.next,
                ..b.clone()
            });
            if b.next != NONE {
                self.link_prev(b.next, na);
            }
            self.link_next(id, na);
            self.insert_free(na);
        }
        if let Some(x) = self.blk_mut(id) {
            x.addr = seg.addr.saturating_add(begin);
            x.size = end - begin;
            x.mapped = false;
        }
        let prev = self.blk(id).map_or(NONE, |x| x.prev);
        self.try_merge(id, prev);
        let next = self.blk(id).map_or(NONE, |x| x.next);
        self.try_merge(id, next);
        self.insert_free(id);
        self.emit(SegKind::Unmap, end - begin);
        // A reservation with nothing mapped is released.
        if self
            .blk(id)
            .is_some_and(|x| x.prev == NONE && x.next == NONE && !x.mapped)
        {
            self.remove_free(id);
            self.drop_block(id);
            self.drop_seg(b.seg);
        }
    }
}
