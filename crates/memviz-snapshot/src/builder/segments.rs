//! Segments and blocks (the allocator state at the end of the dump).

use super::*;

impl SnapshotBuilder {
    #[allow(clippy::type_complexity)]
    pub(super) fn read_segments(
        &mut self,
        v: Value,
        atoms: &Atoms,
    ) -> Result<(Vec<Segment>, Vec<Block>, Vec<HistoryEntry>), String> {
        let Some(items) = self.list_items(v).map(|x| x.to_vec()) else {
            return Err("not a memory snapshot: `segments` is not a list".into());
        };
        let mut segments = Vec::with_capacity(items.len());
        // Sized once (doubling left up to half of the blocks' bytes unused in the model).
        let n_blocks: usize = items
            .iter()
            .filter_map(|it| match self.obj(*it) {
                Some(Obj::Dict(idx)) if idx != EMPTY => self
                    .store
                    .dict_value(Store::items_at(idx), self.keys.blocks),
                _ => None,
            })
            .filter_map(|b| self.list_len(b))
            .sum();
        let mut blocks = Vec::with_capacity(n_blocks);
        let mut history = Vec::new();
        for it in items {
            let Some(pairs) = self.dict_pairs(it).map(|p| p.to_vec()) else {
                self.warnings
                    .warn("segment type", || "a segment is not a dict; skipped".into());
                continue;
            };
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
                    let name = atoms.str(key).to_string();
                    self.warnings.warn(&format!("segment key {name}"), || {
                        format!("segments have an unknown key `{name}`; ignored")
                    });
                }
            }
            let first = blocks.len() as u32;
            let mut addr = s.address;
            let bl: Vec<Value> = block_list
                .and_then(|b| self.list_items(b))
                .map(|x| x.to_vec())
                .unwrap_or_default();
            for b in bl {
                let Some(bp) = self.dict_pairs(b).map(|p| p.to_vec()) else {
                    self.warnings
                        .warn("block type", || "a block is not a dict; skipped".into());
                    continue;
                };
                let block = self.read_block(&bp, blocks.len() as u32, addr, atoms, &mut history);
                addr = addr.wrapping_add(block.size);
                blocks.push(block);
            }
            s.blocks = (first, blocks.len() as u32);
            segments.push(s);
        }
        Ok((segments, blocks, history))
    }

    pub(super) fn read_block(
        &mut self,
        pairs: &[Value],
        block_index: u32,
        computed_addr: u64,
        atoms: &Atoms,
        history: &mut Vec<HistoryEntry>,
    ) -> Block {
        let mut b = Block {
            address: computed_addr,
            size: 0,
            requested_size: 0,
            state: BlockState::Inactive,
            stack: StackId::EMPTY,
            history: (0, 0),
        };
        let mut has_frames = false;
        let mut file_addr = None;
        let mut hist: Option<Value> = None;
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
                        let name = atoms.str(s).to_string();
                        self.warnings.warn(&format!("block state {name}"), || {
                            format!("unknown block state `{name}`")
                        });
                        BlockState::Unknown
                    }
                    _ => BlockState::Unknown,
                };
            } else if key == k.frames {
                has_frames = true;
                b.stack = self.stack_of(val, atoms);
            } else if key == k.address {
                file_addr = Some(self.u64_of(val, atoms, "block address"));
            } else if key == k.history {
                hist = Some(val);
            } else if key == k.forward_frames {
                let f = self.strs_of(val, "forward_frames");
                self.block_forward_frames.push((block_index, f));
            } else {
                let name = atoms.str(key).to_string();
                self.warnings.warn(&format!("block key {name}"), || {
                    format!("blocks have an unknown key `{name}`; ignored")
                });
            }
        }
        if let Some(fa) = file_addr {
            if fa != computed_addr {
                self.warnings.warn("block address", || {
                    format!("a block's `address` 0x{fa:x} differs from its position in the segment 0x{computed_addr:x}; the position is used")
                });
            }
        }
        // Legacy (torch 2.0) history entries.
        let mut first_real_size = None;
        let mut first_stack = None;
        if let Some(h) = hist {
            let start = history.len() as u32;
            let entries: Vec<Value> = self.list_items(h).map(|x| x.to_vec()).unwrap_or_default();
            for e in entries {
                let Some(ep) = self.dict_pairs(e).map(|p| p.to_vec()) else {
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
                history.push(he);
            }
            b.history = (start, history.len() as u32);
        }
        if !has_frames {
            // SEMANTICS.md §2 legacy fill: frames = history[0].frames; requested = requested || history[0].real_size || size.
            b.stack = first_stack.unwrap_or(StackId::EMPTY);
            if b.requested_size == 0 {
                b.requested_size = match first_real_size {
                    Some(r) => r,
                    None => b.size,
                };
            }
        }
        b
    }
}
