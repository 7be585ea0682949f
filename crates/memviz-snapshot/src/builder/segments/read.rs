//! The `segments` list read at STOP: the segments read as they came when it holds exactly
//! those, else item by item.

use super::*;

impl SnapshotBuilder {
    /// The model's segments and blocks from the `segments` list (and the forward frames of the
    /// blocks, by block index).
    #[allow(clippy::type_complexity)]
    pub(in crate::builder) fn read_segments(
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
