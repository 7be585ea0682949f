//! Segments and blocks (the allocator state at the end of the dump), read the moment their
//! dicts are complete.
//!
//! A block dict whose keys are all block keys becomes a pending [`Block`] when its items
//! arrive; a segment dict whose keys are all segment keys becomes a [`Segment`] of
//! [`Records::segments`] when its items arrive, its blocks placed in [`Records::blocks`] (their
//! addresses follow from the segment's), so neither is kept as a generic dict until STOP. On a
//! 150 MB file tiled from a real snapshot (115 k segments, 228 k blocks) their generic items
//! took 31 MB (0.21x the file), more than the segments and blocks themselves. At STOP, a
//! `segments` list of exactly these segments in order is the model's as it is; any other list
//! (other dicts in it, an order of its own) is read item by item, generic dicts as before.
//!
//! Here: the records, the keys that tell them and the lowering of a complete dict; the blocks
//! of a segment in [`blocks`], the `segments` list read at STOP in [`read`].

mod blocks;
mod read;
#[cfg(test)]
mod tests;

use super::*;

/// A block dict read when its items arrived, waiting for its segment (the block's address is
/// the segment's plus the sizes of the blocks before it).
#[derive(Clone, Debug)]
pub(super) struct PendingBlock {
    /// Its fields; `address` is set when placed.
    block: Block,
    /// The block's own `address`, checked against its position when placed.
    file_addr: Option<u64>,
    has_frames: bool,
    /// Legacy (torch 2.0) `history` list, read when placed.
    history: Option<Value>,
    forward_frames: Option<Vec<StrId>>,
}

/// Segments and blocks read so far.
#[derive(Default)]
pub(super) struct Records {
    /// Segments read as their dicts completed ([`Obj::Segment`]), in that order.
    pub(super) segments: Vec<Segment>,
    /// Their blocks, each segment's in order.
    pub(super) blocks: Vec<Block>,
    /// `forward_frames` of those blocks, by index into `blocks`.
    pub(super) forward_frames: Vec<(u32, Vec<StrId>)>,
    /// Legacy history entries of any block read so far.
    pub(super) history: Vec<HistoryEntry>,
    /// Block dicts read but not yet placed ([`Obj::Block`]); a slot is taken when placed.
    pending: Vec<Option<PendingBlock>>,
    /// Slots of `pending` not taken.
    pending_live: usize,
}

impl Records {
    /// Give back growth slack (the trace begins: no more segments in the usual layout).
    pub(super) fn shrink_to_fit(&mut self) {
        self.segments.shrink_to_fit();
        self.blocks.shrink_to_fit();
    }
}

/// Blocks the model may have beyond one per container of the file (see
/// [`SnapshotBuilder::blocks_fit`]).
const BLOCKS_SLACK: usize = 4096;

/// Bits of a key in [`RecordKeys`].
const BLOCK_KEY: u8 = 1;
const SEGMENT_KEY: u8 = 2;

/// Which record kinds a key belongs to, by string id (the keys are interned first).
pub(super) struct RecordKeys(Vec<u8>);

impl RecordKeys {
    pub(super) fn new(k: &Keys) -> RecordKeys {
        let block = [
            k.address,
            k.size,
            k.requested_size,
            k.state,
            k.frames,
            k.history,
            k.forward_frames,
        ];
        let segment = [
            k.device,
            k.address,
            k.total_size,
            k.allocated_size,
            k.active_size,
            k.requested_size,
            k.stream,
            k.segment_type,
            k.segment_pool_id,
            k.pool_id,
            k.is_expandable,
            k.frames,
            k.blocks,
        ];
        let len = block
            .iter()
            .chain(&segment)
            .map(|s| s.0 as usize + 1)
            .max()
            .unwrap_or(0);
        let mut t = vec![0u8; len];
        for (keys, bit) in [(&block[..], BLOCK_KEY), (&segment[..], SEGMENT_KEY)] {
            for s in keys {
                if let Some(x) = t.get_mut(s.0 as usize) {
                    *x |= bit;
                }
            }
        }
        RecordKeys(t)
    }

    /// The kinds every key of `pairs` belongs to (0 when one is not a string).
    fn kinds(&self, pairs: &[Value]) -> u8 {
        pairs
            .chunks_exact(2)
            .fold(BLOCK_KEY | SEGMENT_KEY, |acc, kv| match kv[0] {
                Value::Str(s) => acc & self.0.get(s.0 as usize).copied().unwrap_or(0),
                _ => 0,
            })
    }
}

impl RecordKeys {
    /// True when one key of `pairs` is a segment's.
    pub(super) fn any_segment_key(&self, pairs: &[Value]) -> bool {
        pairs.chunks_exact(2).any(|kv| match kv[0] {
            Value::Str(s) => self
                .0
                .get(s.0 as usize)
                .is_some_and(|k| k & SEGMENT_KEY != 0),
            _ => false,
        })
    }
}

fn has_key(pairs: &[Value], key: StrId) -> bool {
    pairs.chunks_exact(2).any(|kv| kv[0] == Value::Str(key))
}

impl SnapshotBuilder {
    /// A complete dict that is a block or a segment, read now; None for any other dict.
    pub(super) fn lower_record(
        &mut self,
        pairs: &[Value],
        atoms: &Atoms,
    ) -> Result<Option<Obj>, BuildError> {
        let kinds = self.record_keys.kinds(pairs);
        if kinds == 0 {
            return Ok(None);
        }
        let k = &self.keys;
        if kinds & BLOCK_KEY != 0 && has_key(pairs, k.size) {
            let p = self.block_fields(pairs, atoms);
            let i = u32::try_from(self.records.pending.len())
                .map_err(|_| BuildError::Limit("too many blocks".into()))?;
            room(&mut self.records.pending, "the blocks")?;
            self.records.pending.push(Some(p));
            self.records.pending_live += 1;
            return Ok(Some(Obj::Block(i)));
        }
        if kinds & SEGMENT_KEY != 0
            && has_key(pairs, k.address)
            && (has_key(pairs, k.total_size) || has_key(pairs, k.blocks))
        {
            let i = u32::try_from(self.records.segments.len())
                .map_err(|_| BuildError::Limit("too many segments".into()))?;
            let (mut s, list) = self.segment_fields(pairs, atoms);
            let first = self.records.blocks.len() as u32;
            let gathered = self.gather_blocks(list, Some(first), first as usize, atoms);
            let mut addr = s.address;
            for p in gathered {
                let (b, f) = self.place_block(p, addr, atoms);
                addr = addr.wrapping_add(b.size);
                if let Some(f) = f {
                    let at = self.records.blocks.len() as u32;
                    room(&mut self.records.forward_frames, "the blocks")?;
                    self.records.forward_frames.push((at, f));
                }
                room(&mut self.records.blocks, "the blocks")?;
                self.records.blocks.push(b);
            }
            s.blocks = (first, self.records.blocks.len() as u32);
            room(&mut self.records.segments, "the segments")?;
            self.records.segments.push(s);
            if let Some(Value::Obj(ObjId(l))) = list {
                // The list's blocks are placed: it stands for them now, and its items (usually
                // the last container of the store) are given back.
                if let Some(Obj::List(idx)) = self.objs.get(l as usize) {
                    if idx != EMPTY {
                        self.store.free(Store::items_at(idx));
                    }
                    self.objs.set(l as usize, Obj::SegmentBlocks(i));
                }
            }
            if self.records.pending_live == 0 {
                self.records.pending.clear();
            }
            return Ok(Some(Obj::Segment(i)));
        }
        Ok(None)
    }

    /// A segment's own fields, and its `blocks` value.
    fn segment_fields(&mut self, pairs: &[Value], atoms: &Atoms) -> (Segment, Option<Value>) {
        let mut s = Segment {
            device: 0,
            address: 0,
            total_size: 0,
            allocated_size: 0,
            active_size: 0,
            requested_size: 0,
            stream: 0,
            segment_type: NO_STR,
            pool_id: (0, 0),
            is_expandable: false,
            stack: StackId::EMPTY,
            blocks: (0, 0),
        };
        let mut block_list = None;
        for kv in pairs.chunks_exact(2) {
            let Value::Str(key) = kv[0] else { continue };
            let val = kv[1];
            let k = &self.keys;
            if key == k.device {
                s.device = self.i64_of(val, atoms, "segment device");
            } else if key == k.address {
                s.address = self.u64_of(val, atoms, "segment address");
            } else if key == k.total_size {
                s.total_size = self.u64_of(val, atoms, "total_size");
            } else if key == k.allocated_size {
                s.allocated_size = self.u64_of(val, atoms, "allocated_size");
            } else if key == k.active_size {
                s.active_size = self.u64_of(val, atoms, "active_size");
            } else if key == k.requested_size {
                s.requested_size = self.u64_of(val, atoms, "segment requested_size");
            } else if key == k.stream {
                s.stream = int_i128(val, atoms).map(|x| x as u64).unwrap_or(0);
            } else if key == k.segment_type {
                s.segment_type = self.str_of(val, "segment_type");
            } else if key == k.segment_pool_id || key == k.pool_id {
                s.pool_id = self.pair_of(val, atoms, "segment_pool_id");
            } else if key == k.is_expandable {
                s.is_expandable = matches!(val, Value::Bool(true));
            } else if key == k.frames {
                s.stack = self.stack_of(val, atoms);
            } else if key == k.blocks {
                block_list = Some(val);
            } else {
                let name = crate::warnings::quoted(atoms.str(key));
                self.warnings.warn(&format!("segment key {name}"), || {
                    format!("segments have an unknown key {name}; ignored")
                });
            }
        }
        (s, block_list)
    }
}
