//! Giving memory back: the failure path's releases, garbage collection and `empty_cache`.

use super::{Model, SegKind, St, NONE};

impl Model {
    /// `release_block`: cudaFree of a whole free segment (in its set).
    fn release_block(&mut self, id: u32) -> u64 {
        if !self.is_whole(id) || self.is_expandable(id) {
            return 0;
        }
        let Some(b) = self.blk(id).cloned() else {
            return 0;
        };
        self.remove_free(id);
        self.drop_block(id);
        self.drop_seg(b.seg);
        self.emit(SegKind::Free, b.size);
        b.size
    }

    /// `release_blocks(pool)`: every whole free segment, then the free pages of expandable
    /// segments, in set order.
    fn release_pool(&mut self, pool: u32) {
        let Some(p) = self.pools.get(pool as usize) else {
            return;
        };
        let ids: Vec<u32> = p.blocks.iter().map(|k| k.3).collect();
        let mut unmap = Vec::new();
        for id in ids {
            if self.is_expandable(id) {
                unmap.push(id);
            } else if self.is_whole(id) {
                self.release_block(id);
            }
        }
        for id in unmap {
            self.unmap_block(id);
        }
    }

    /// `release_cached_blocks` = `torch.cuda.empty_cache()`: completes pending frees, then
    /// releases the default large pool, then the small one (private pools are not released:
    /// the trace does not say when they become freeable).
    pub fn empty_cache(&mut self) {
        for id in std::mem::take(&mut self.pending) {
            if self.blk(id).is_some_and(|b| b.state == St::Pending) {
                self.free_block(id);
            }
        }
        let large = self.pool((0, 0), false);
        let small = self.pool((0, 0), true);
        self.release_pool(large);
        self.release_pool(small);
    }

    /// `release_available_cached_blocks` (only with max_split_size set).
    pub(super) fn release_available(&mut self, pool: u32, stream: u64, size: u64) -> bool {
        let Some(ms) = self.settings.max_split_size else {
            return false;
        };
        let key = size.max(ms);
        let Some(p) = self.pools.get(pool as usize) else {
            return false;
        };
        let hit = p.blocks.range((stream, key, 0, 0)..).next().copied();
        if let Some(h) = hit.filter(|h| h.0 == stream && !self.is_expandable(h.3)) {
            self.release_block(h.3);
            return true;
        }
        let below: Vec<(u64, u64, u64, u32)> = p
            .blocks
            .range(..(stream, key, 0, 0))
            .rev()
            .take_while(|k| k.0 == stream && k.1 >= ms)
            .copied()
            .collect();
        let mut total = 0u64;
        for k in below {
            if total >= key {
                break;
            }
            if !self.is_expandable(k.3) {
                total = total.saturating_add(self.release_block(k.3));
            }
        }
        total >= key
    }

    /// `garbage_collect_cached_blocks`: frees whole free segments of the default large pool,
    /// oldest first by average age, until reserved is below threshold × capacity.
    pub(super) fn garbage_collect(&mut self) {
        let (Some(cap), Some(t)) = (self.gc_capacity, self.settings.garbage_collection_threshold)
        else {
            return;
        };
        let threshold = (t * cap as f64) as u64;
        if self.reserved <= threshold {
            return;
        }
        let target = self.reserved - threshold;
        let large = self.pool((0, 0), false);
        let Some(p) = self.pools.get(large as usize) else {
            return;
        };
        let calls = p.gc_calls;
        let mut cands: Vec<(u32, u64)> = Vec::new();
        for k in &p.blocks {
            if self.is_whole(k.3) && !self.is_expandable(k.3) {
                let age = calls.saturating_sub(self.blk(k.3).map_or(calls, |b| b.gc_base));
                cands.push((k.3, age));
            }
        }
        let mut total_age: u64 = cands.iter().map(|c| c.1).sum();
        let mut count = cands.len() as u64;
        let mut reclaimed = 0u64;
        let mut freed = true;
        while reclaimed < target && freed && count > 0 {
            let avg = total_age as f64 / count as f64;
            freed = false;
            for c in &mut cands {
                if c.0 != NONE && c.1 as f64 >= avg {
                    reclaimed = reclaimed.saturating_add(self.release_block(c.0));
                    total_age = total_age.saturating_sub(c.1);
                    count -= 1;
                    freed = true;
                    c.0 = NONE;
                }
            }
        }
    }
}
