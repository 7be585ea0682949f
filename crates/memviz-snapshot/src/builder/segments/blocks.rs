//! The blocks of a segment: gathered from its `blocks` value, read from their dicts and placed
//! at their addresses (legacy history filled in), within the bound on shared blocks.

use super::*;

impl SnapshotBuilder {
    /// The blocks of a segment's `blocks` value, in order. With `placed_at`, the pending ones
    /// are taken: their dicts stand from then on for blocks `placed_at..` of
    /// [`Records::blocks`], where the caller puts them.
    pub(super) fn gather_blocks(
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
    pub(super) fn blocks_fit(&mut self, total: usize) -> bool {
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
    pub(super) fn placed_block(&mut self, j: u32) -> Option<PendingBlock> {
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
    pub(super) fn place_block(
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
}
