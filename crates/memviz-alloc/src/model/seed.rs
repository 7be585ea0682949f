//! Seeding the model with a segment of the state at the trace's start.

use super::{Block, Model, Piece, Seg, St, NONE};

impl Model {
    /// Seeds a segment of the state at the trace's start: `pieces` (address, size, what) tile
    /// it in address order (for an expandable one, unmapped pieces fill the gaps and the tail).
    /// Returns the block id of each piece (adjacent free pieces stay apart only if given so).
    pub fn seed_segment(
        &mut self,
        pool: u32,
        stream: u64,
        expandable: bool,
        pieces: &[(u64, u64, Piece)],
    ) -> Vec<u32> {
        let Some(&(addr, _, _)) = pieces.first() else {
            return Vec::new();
        };
        let span: u64 = pieces.iter().map(|p| p.1).sum();
        let page = if expandable { self.page_of(pool) } else { 0 };
        self.ranges.insert(addr, addr.saturating_add(span));
        let seg = self.new_seg(Seg {
            addr,
            expandable,
            page,
            head: NONE,
        });
        let mut ids = Vec::with_capacity(pieces.len());
        let mut prev = NONE;
        for &(a, size, what) in pieces {
            let state = match what {
                Piece::Allocated => St::Allocated,
                Piece::Pending => St::Pending,
                Piece::Free | Piece::Unmapped => St::Free,
            };
            let id = self.new_block(Block {
                addr: a,
                size,
                stream,
                pool,
                seg,
                prev,
                next: NONE,
                state,
                mapped: what != Piece::Unmapped,
                gc_base: 0,
            });
            if prev == NONE {
                if let Some(s) = self.segs.get_mut(seg as usize) {
                    s.head = id;
                }
            } else {
                self.link_next(prev, id);
            }
            prev = id;
            ids.push(id);
            match what {
                Piece::Allocated => self.allocated = self.allocated.saturating_add(size),
                Piece::Pending => {
                    self.allocated = self.allocated.saturating_add(size);
                    self.pending.push(id);
                }
                Piece::Free | Piece::Unmapped => self.insert_free(id),
            }
            if what != Piece::Unmapped {
                self.reserved = self.reserved.saturating_add(size);
            }
        }
        self.peak_reserved = self.peak_reserved.max(self.reserved);
        self.peak_allocated = self.peak_allocated.max(self.allocated);
        ids
    }
}
