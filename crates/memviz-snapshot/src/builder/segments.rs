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

    /// The blocks of a segment's `blocks` value, in order. With `placed_at`, the pending ones
    /// are taken: their dicts stand from then on for blocks `placed_at..` of
    /// [`Records::blocks`], where the caller puts them.
    fn gather_blocks(
        &mut self,
        list: Option<Value>,
        placed_at: Option<u32>,
        dest_len: usize,
        atoms: &Atoms,
    ) -> Vec<PendingBlock> {
        let items: Vec<Value> = match list.and_then(|l| self.obj(l)) {
            Some(Obj::SegmentBlocks(s)) => {
                // A block list met before, in another segment: its blocks again.
                let (a, b) = self
                    .records
                    .segments
                    .get(s as usize)
                    .map_or((0, 0), |s| s.blocks);
                if !self.blocks_fit(dest_len + b.saturating_sub(a) as usize) {
                    return Vec::new();
                }
                let mut out = Vec::new();
                for j in a..b {
                    out.extend(self.placed_block(j));
                }
                return out;
            }
            _ => {
                // Read no more items than the blocks that may still be placed (a shared list is
                // not read again whole for each segment once that is spent).
                let room = self
                    .objs
                    .len()
                    .saturating_add(BLOCKS_SLACK)
                    .saturating_sub(dest_len);
                if list
                    .and_then(|b| self.list_len(b))
                    .is_some_and(|n| n > room)
                {
                    self.blocks_fit(usize::MAX);
                }
                list.and_then(|b| self.list_prefix(b, room))
                    .unwrap_or_default()
            }
        };
        let mut out: Vec<PendingBlock> = Vec::with_capacity(items.len());
        for b in items {
            if !self.blocks_fit(dest_len + out.len() + 1) {
                break;
            }
            let p = match self.obj(b) {
                Some(Obj::Block(i)) => {
                    let slot = self.records.pending.get_mut(i as usize);
                    let p = match placed_at {
                        Some(_) => slot.and_then(Option::take),
                        None => slot.and_then(|p| p.clone()),
                    };
                    let Some(p) = p else { continue };
                    if let (Some(at), Value::Obj(ObjId(o))) = (placed_at, b) {
                        self.records.pending_live -= 1;
                        let j = at.saturating_add(out.len() as u32);
                        self.objs.set(o as usize, Obj::PlacedBlock(j));
                    }
                    p
                }
                Some(Obj::PlacedBlock(j)) => {
                    // Placed earlier in this same list (its block is still in `out`), or before.
                    let here = placed_at
                        .and_then(|at| j.checked_sub(at))
                        .and_then(|k| out.get(k as usize).cloned());
                    let lines = here
                        .as_ref()
                        .and_then(|p| p.forward_frames.as_ref())
                        .map_or(0, Vec::len);
                    if lines > 0 && !self.charge_forward_copy(lines) {
                        continue;
                    }
                    match here.or_else(|| self.placed_block(j)) {
                        Some(p) => p,
                        None => continue,
                    }
                }
                Some(Obj::Dict(idx)) => {
                    let pairs = self.items(idx);
                    self.block_fields(&pairs, atoms)
                }
                _ => {
                    self.warnings
                        .warn("block type", || "a block is not a dict; skipped".into());
                    continue;
                }
            };
            out.push(p);
        }
        out
    }

    /// Whether a destination of `total` blocks stays within what the input can describe: a block
    /// list or dict shared by several segments is copied into each, and a few bytes of memo
    /// references can share one list thousands of times (quadratic memory from a small file).
    /// The model never has more blocks than the file has containers (plus 4 096), as a file
    /// that shares nothing.
    fn blocks_fit(&mut self, total: usize) -> bool {
        if total <= self.objs.len().saturating_add(BLOCKS_SLACK) {
            return true;
        }
        self.warnings.warn_always("shared blocks", || {
            "segments share blocks more often than the file has containers; the copies past that are dropped".into()
        });
        false
    }

    /// A placed block of [`Records::blocks`] as a pending one again (a block dict that two
    /// segments share: placed again in the second, its legacy fill already done).
    /// Its `forward_frames` are copied: charged to the budget.
    fn placed_block(&mut self, j: u32) -> Option<PendingBlock> {
        let block = self.records.blocks.get(j as usize)?.clone();
        let ff = self
            .records
            .forward_frames
            .binary_search_by_key(&j, |f| f.0)
            .ok();
        let lines = ff
            .and_then(|i| self.records.forward_frames.get(i))
            .map_or(0, |f| f.1.len());
        let forward_frames = match ff {
            Some(i) if self.charge_forward_copy(lines) => {
                self.records.forward_frames.get(i).map(|f| f.1.clone())
            }
            _ => None,
        };
        Some(PendingBlock {
            block,
            file_addr: None,
            has_frames: true,
            history: None,
            forward_frames,
        })
    }

    /// Charge a copy of `lines` forward-frame lines of a block placed again; false when the
    /// budget is spent (the refusal is kept).
    fn charge_forward_copy(&mut self, lines: usize) -> bool {
        lines == 0
            || self
                .budget
                .charge(
                    lines as u64 * 4 + 32,
                    "a block placed in several segments copies its `forward_frames` into each",
                )
                .is_ok()
    }

    /// A block's own fields.
    pub(super) fn block_fields(&mut self, pairs: &[Value], atoms: &Atoms) -> PendingBlock {
        let mut p = PendingBlock {
            block: Block {
                address: 0,
                size: 0,
                requested_size: 0,
                state: BlockState::Inactive,
                stack: StackId::EMPTY,
                history: (0, 0),
            },
            file_addr: None,
            has_frames: false,
            history: None,
            forward_frames: None,
        };
        let b = &mut p.block;
        for kv in pairs.chunks_exact(2) {
            let Value::Str(key) = kv[0] else { continue };
            let val = kv[1];
            let k = &self.keys;
            if key == k.size {
                b.size = self.u64_of(val, atoms, "block size");
            } else if key == k.requested_size {
                b.requested_size = self.u64_of(val, atoms, "block requested_size");
            } else if key == k.state {
                let k = &self.keys;
                b.state = match val {
                    Value::Str(s) if s == k.active_allocated => BlockState::ActiveAllocated,
                    Value::Str(s) if s == k.active_pending_free => BlockState::ActivePendingFree,
                    Value::Str(s) if s == k.inactive => BlockState::Inactive,
                    Value::Str(s) => {
                        let name = crate::warnings::quoted(atoms.str(s));
                        self.warnings.warn(&format!("block state {name}"), || {
                            format!("unknown block state {name}")
                        });
                        BlockState::Unknown
                    }
                    _ => BlockState::Unknown,
                };
            } else if key == k.frames {
                p.has_frames = true;
                b.stack = self.stack_of(val, atoms);
            } else if key == k.address {
                p.file_addr = Some(self.u64_of(val, atoms, "block address"));
            } else if key == k.history {
                p.history = Some(val);
            } else if key == k.forward_frames {
                p.forward_frames = Some(self.strs_of(val, "forward_frames"));
            } else {
                let name = crate::warnings::quoted(atoms.str(key));
                self.warnings.warn(&format!("block key {name}"), || {
                    format!("blocks have an unknown key {name}; ignored")
                });
            }
        }
        p
    }

    /// A block at `computed_addr`: the address checked, legacy history read and filled in
    /// (SEMANTICS.md §2); and its `forward_frames`.
    fn place_block(
        &mut self,
        p: PendingBlock,
        computed_addr: u64,
        atoms: &Atoms,
    ) -> (Block, Option<Vec<StrId>>) {
        let mut b = p.block;
        b.address = computed_addr;
        if let Some(fa) = p.file_addr {
            if fa != computed_addr {
                self.warnings.warn("block address", || {
                    format!("a block's `address` 0x{fa:x} differs from its position in the segment 0x{computed_addr:x}; the position is used")
                });
            }
        }
        // Legacy (torch 2.0) history entries.
        let mut first_real_size = None;
        let mut first_stack = None;
        let shared = match p.history {
            Some(Value::Obj(ObjId(l))) => self.history_ranges.get(&l).copied(),
            _ => None,
        };
        if let Some((start, end)) = shared {
            // A history list read for another block: the same entries, shared by range (a list
            // shared by n blocks was copied n times: 10 GB from an 840 KB file).
            if let Some(he) = self
                .records
                .history
                .get(start as usize)
                .filter(|_| end > start)
            {
                first_real_size = Some(he.real_size);
                first_stack = Some(he.stack);
            }
            b.history = (start, end);
        } else if let Some(h) = p.history {
            let start = self.records.history.len() as u32;
            let n = self.list_len(h).unwrap_or(0);
            let charged = self.budget.charge(
                n as u64 * std::mem::size_of::<HistoryEntry>() as u64,
                "the entries of legacy `history` lists are copied for each reference to their dicts",
            );
            let entries: Vec<Value> = match charged {
                Ok(()) => self.list_items(h).unwrap_or_default(),
                Err(_) => Vec::new(),
            };
            for e in entries {
                let Some(ep) = self.dict_pairs(e) else {
                    continue;
                };
                let mut he = HistoryEntry {
                    addr: 0,
                    real_size: 0,
                    stack: StackId::EMPTY,
                };
                for kv in ep.chunks_exact(2) {
                    let Value::Str(key) = kv[0] else { continue };
                    let k = &self.keys;
                    if key == k.addr {
                        he.addr = self.u64_of(kv[1], atoms, "history addr");
                    } else if key == k.real_size {
                        he.real_size = self.u64_of(kv[1], atoms, "history real_size");
                    } else if key == k.frames {
                        he.stack = self.stack_of(kv[1], atoms);
                    }
                }
                if first_real_size.is_none() {
                    first_real_size = Some(he.real_size);
                    first_stack = Some(he.stack);
                }
                if let Err(e) = room(&mut self.records.history, "the history entries") {
                    self.budget.fail(e);
                    break;
                }
                self.records.history.push(he);
            }
            let end = self.records.history.len() as u32;
            if let Value::Obj(ObjId(l)) = h {
                self.history_ranges.insert(l, (start, end));
            }
            b.history = (start, end);
        }
        if !p.has_frames {
            // SEMANTICS.md §2 legacy fill: frames = history[0].frames; requested = requested || history[0].real_size || size.
            b.stack = first_stack.unwrap_or(StackId::EMPTY);
            if b.requested_size == 0 {
                b.requested_size = match first_real_size {
                    Some(r) => r,
                    None => b.size,
                };
            }
        }
        (b, p.forward_frames)
    }

    /// The model's segments and blocks from the `segments` list (and the forward frames of the
    /// blocks, by block index).
    #[allow(clippy::type_complexity)]
    pub(super) fn read_segments(
        &mut self,
        v: Value,
        atoms: &Atoms,
    ) -> Result<(Vec<Segment>, Vec<Block>, Vec<(u32, Vec<StrId>)>), BuildError> {
        let Some(len) = self.list_len(v) else {
            return Err(BuildError::Unexpected(
                "not a memory snapshot: `segments` is not a list".into(),
            ));
        };
        // Usually the list holds exactly the segments read as they came, in that order (checked
        // in place: the list's values would take 16 bytes per segment).
        let n = self.records.segments.len();
        let at = match self.obj(v) {
            Some(Obj::List(idx) | Obj::Tuple(idx)) if idx != EMPTY => Some(Store::items_at(idx)),
            _ => None,
        };
        let as_read = len == n
            && (0..n).all(|i| {
                let it = at.and_then(|at| self.store.seq_value(at, i));
                matches!(it.and_then(|it| self.obj(it)), Some(Obj::Segment(s)) if s as usize == i)
            });
        let tiled = self
            .records
            .segments
            .iter()
            .try_fold(0u32, |end, s| (s.blocks.0 == end).then_some(s.blocks.1))
            == Some(self.records.blocks.len() as u32);
        if as_read && tiled {
            let r = &mut self.records;
            return Ok((
                std::mem::take(&mut r.segments),
                std::mem::take(&mut r.blocks),
                std::mem::take(&mut r.forward_frames),
            ));
        }
        let items = self.list_items(v).unwrap_or_default();
        // Room for one segment per container of the file at most: a list of references to one
        // dict asks for more (each copy is charged to the budget as it is made).
        let mut segments = Vec::with_capacity(items.len().min(self.objs.len()));
        // Sized once (doubling left up to half of the blocks' bytes unused in the model).
        let n_blocks: usize = items
            .iter()
            .map(|it| match self.obj(*it) {
                Some(Obj::Segment(s)) => self
                    .records
                    .segments
                    .get(s as usize)
                    .map_or(0, |s| s.blocks.1.saturating_sub(s.blocks.0) as usize),
                Some(Obj::Dict(idx))
                    if idx != EMPTY && self.budget.read(self.store.len(Store::items_at(idx))) =>
                {
                    self.store
                        .dict_value(Store::items_at(idx), self.keys.blocks)
                        .and_then(|b| self.list_len(b))
                        .unwrap_or(0)
                }
                _ => 0,
            })
            .sum();
        let mut blocks = Vec::new();
        blocks
            .try_reserve_exact(n_blocks.min(self.objs.len().saturating_add(BLOCKS_SLACK)))
            .map_err(|_| super::frames::oom("the blocks", n_blocks.saturating_mul(48)))?;
        let mut ff = Vec::new();
        // A segment listed again is a copy in the model: charged to the budget.
        let mut seen = rustc_hash::FxHashSet::default();
        for it in items {
            if let Value::Obj(ObjId(o)) = it {
                if !seen.insert(o) {
                    self.budget.charge(
                        std::mem::size_of::<Segment>() as u64,
                        "a segment dict listed again in `segments` is copied for each reference",
                    )?;
                }
            }
            match self.obj(it) {
                Some(Obj::Segment(i)) => {
                    let Some(mut s) = self.records.segments.get(i as usize).cloned() else {
                        continue;
                    };
                    let first = blocks.len() as u32;
                    let n = s.blocks.1.saturating_sub(s.blocks.0) as usize;
                    let range = if self.blocks_fit(blocks.len() + n) {
                        s.blocks.0..s.blocks.1
                    } else {
                        0..0
                    };
                    for j in range {
                        if let Some(p) = self.placed_block(j) {
                            if let Some(f) = p.forward_frames {
                                ff.push((blocks.len() as u32, f));
                            }
                            room(&mut blocks, "the blocks")?;
                            blocks.push(p.block);
                        }
                    }
                    s.blocks = (first, blocks.len() as u32);
                    room(&mut segments, "the segments")?;
                    segments.push(s);
                }
                Some(Obj::Dict(idx)) => {
                    let pairs = self.items(idx);
                    let (mut s, list) = self.segment_fields(&pairs, atoms);
                    let first = blocks.len() as u32;
                    let mut addr = s.address;
                    for p in self.gather_blocks(list, None, blocks.len(), atoms) {
                        let (b, f) = self.place_block(p, addr, atoms);
                        addr = addr.wrapping_add(b.size);
                        if let Some(f) = f {
                            ff.push((blocks.len() as u32, f));
                        }
                        room(&mut blocks, "the blocks")?;
                        blocks.push(b);
                    }
                    s.blocks = (first, blocks.len() as u32);
                    room(&mut segments, "the segments")?;
                    segments.push(s);
                }
                _ => self
                    .warnings
                    .warn("segment type", || "a segment is not a dict; skipped".into()),
            }
        }
        Ok((segments, blocks, ff))
    }
}

#[cfg(test)]
mod tests {
    /// A pickle of `m` segments that all share one list of `n` references to one block dict
    /// (a few bytes per segment).
    fn shared_blocks(m: usize, n: usize) -> Vec<u8> {
        let mut p = vec![0x80, 2, b'}', b'('];
        let s = |p: &mut Vec<u8>, t: &str| {
            p.push(0x8c);
            p.push(t.len() as u8);
            p.extend_from_slice(t.as_bytes());
        };
        s(&mut p, "segments");
        p.extend([b']', b'(']);
        for k in 0..m {
            p.extend([b'}', b'(']);
            s(&mut p, "address");
            p.extend([b'J', 0, 0, 0, 1]);
            s(&mut p, "total_size");
            p.extend([b'M', 0, 2]);
            s(&mut p, "blocks");
            if k == 0 {
                p.extend([b']', b'q', 2, b'(', b'}', b'q', 1, b'(']);
                s(&mut p, "size");
                p.extend([b'M', 0, 2]);
                s(&mut p, "state");
                s(&mut p, "active_allocated");
                p.push(b'u');
                for _ in 1..n {
                    p.extend([b'h', 1]);
                }
                p.push(b'e');
            } else {
                p.extend([b'h', 2]);
            }
            p.push(b'u');
        }
        p.push(b'e');
        s(&mut p, "device_traces");
        p.extend([b']', b'(', b']', b'e', b'u', b'.']);
        p
    }

    #[test]
    fn blocks_shared_by_many_segments_stay_bounded() {
        let few = crate::load_slice(&shared_blocks(3, 5));
        let few = few.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(few.segments.len(), 3);
        assert_eq!(few.blocks.len(), 15);
        assert!(few.segments.iter().all(|s| s.blocks.1 - s.blocks.0 == 5));
        // 20 000 segments x 20 000 blocks from under 1 MB: not 400 M blocks.
        let many = crate::load_slice(&shared_blocks(20_000, 20_000));
        let many = many.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(many.segments.len(), 20_000);
        assert!(many.blocks.len() < 100_000, "{}", many.blocks.len());
        assert!(many.warnings.iter().any(|w| w.contains("share blocks")));
    }
}
