//! The container slots of the builder, by [`ObjId`](memviz_pickle::ObjId), in chunks of
//! [`CHUNK`] ids.
//!
//! Nearly every container of a snapshot is a trace entry, lowered to a row the moment its items
//! arrive, and entries come one after the other: a chunk whose ids are all trace entries with
//! consecutive rows is kept as its first row (4 bytes instead of 64 slots of 8). Measured on
//! two 150 MB tiles (1.9 M and 2.2 M entries): the slots took 16.7 MB and 25.5 MB (0.11x and
//! 0.17x the file) as one `Vec<Obj>`, a few hundred kB this way. Chunks are compacted once the
//! next one is full (an entry's dict gets its row only after its nested containers, a new
//! traceback's frame dicts, got their ids); the storage of a compacted chunk is reused.

use super::Obj;

/// Ids per chunk.
const CHUNK: usize = 64;
/// A chunk's word: this bit set = compact (the rest is its first row), else the index of its
/// slots in [`Objs::slots`] (in chunks).
const COMPACT: u32 = 1 << 31;

#[derive(Default)]
pub(super) struct Objs {
    chunks: Vec<u32>,
    /// The slots of the chunks that are not compact, [`CHUNK`] each.
    slots: Vec<Obj>,
    /// Chunks of `slots` free for reuse.
    free: Vec<u32>,
    len: usize,
    /// Chunks below this one were already considered for compaction.
    settled: usize,
}

impl Objs {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Room for about `n` more containers.
    pub(super) fn reserve(&mut self, n: usize) {
        let _ = self.chunks.try_reserve_exact(n / CHUNK + 1);
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.chunks.shrink_to_fit();
        self.free = Vec::new();
    }

    #[inline]
    pub(super) fn get(&self, i: usize) -> Option<Obj> {
        if i >= self.len {
            return None;
        }
        let c = *self.chunks.get(i / CHUNK)?;
        let k = i % CHUNK;
        if c & COMPACT != 0 {
            return Some(Obj::Event((c & !COMPACT) + k as u32));
        }
        self.slots.get(c as usize * CHUNK + k).copied()
    }

    /// Replace the slot of container `i` (no-op past the end).
    #[inline]
    pub(super) fn set(&mut self, i: usize, o: Obj) {
        if i >= self.len {
            return;
        }
        let Some(&c) = self.chunks.get(i / CHUNK) else {
            return;
        };
        let c = if c & COMPACT != 0 {
            self.expand(i / CHUNK)
        } else {
            c
        };
        if let Some(slot) = self.slots.get_mut(c as usize * CHUNK + i % CHUNK) {
            *slot = o;
        }
    }

    /// Give a compact chunk its slots back (never happens with the builder's lowering: an
    /// entry's slot does not change once it is a row); the index of its slots.
    #[cold]
    fn expand(&mut self, chunk: usize) -> u32 {
        let first = self.chunks.get(chunk).map_or(0, |c| c & !COMPACT);
        let s = self.new_chunk();
        for (k, slot) in self.slot_chunk(s).iter_mut().enumerate() {
            *slot = Obj::Event(first.wrapping_add(k as u32));
        }
        if let Some(w) = self.chunks.get_mut(chunk) {
            *w = s;
        }
        s
    }

    /// A new container; its id.
    #[inline]
    pub(super) fn push(&mut self, o: Obj) -> Result<u32, String> {
        if self.len.is_multiple_of(CHUNK) {
            self.start_chunk()?;
        }
        let id = self.len as u32;
        self.len += 1;
        self.set(id as usize, o);
        Ok(id)
    }

    /// Slots for the next chunk (the one before last is settled first).
    #[cold]
    fn start_chunk(&mut self) -> Result<(), String> {
        if self.len >= u32::MAX as usize {
            return Err("more than 4 billion containers".into());
        }
        let c = self.chunks.len();
        self.settle(c.saturating_sub(1));
        let s = self.new_chunk();
        self.chunks.push(s);
        Ok(())
    }

    /// Slots for a chunk (reused or new), as a chunk index into `slots`.
    fn new_chunk(&mut self) -> u32 {
        if let Some(s) = self.free.pop() {
            return s;
        }
        let s = (self.slots.len() / CHUNK) as u32;
        self.slots
            .resize(self.slots.len() + CHUNK, Obj::List(super::EMPTY));
        s
    }

    fn slot_chunk(&mut self, s: u32) -> &mut [Obj] {
        let at = s as usize * CHUNK;
        self.slots.get_mut(at..at + CHUNK).unwrap_or(&mut [])
    }

    /// Compact the chunks below `end` that are runs of consecutive entry rows.
    fn settle(&mut self, end: usize) {
        while self.settled < end {
            let c = self.settled;
            self.settled += 1;
            let Some(&s) = self.chunks.get(c) else {
                continue;
            };
            if s & COMPACT != 0 {
                continue;
            }
            let at = s as usize * CHUNK;
            let Some(slots) = self.slots.get(at..at + CHUNK) else {
                continue;
            };
            let first = match slots.first() {
                Some(Obj::Event(r)) if r & COMPACT == 0 && *r <= !COMPACT - CHUNK as u32 => *r,
                _ => continue,
            };
            let run = slots
                .iter()
                .enumerate()
                .all(|(k, o)| matches!(o, Obj::Event(r) if *r == first + k as u32));
            if run {
                if let Some(w) = self.chunks.get_mut(c) {
                    *w = COMPACT | first;
                }
                self.free.push(s);
            }
        }
    }

    /// Approximate heap bytes.
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.chunks.capacity() * 4 + self.slots.capacity() * std::mem::size_of::<Obj>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_events_compact_and_read_back() {
        let mut o = Objs::default();
        let mut want = Vec::new();
        // A few generic containers, then 10 000 entries with a stack list every 1 000.
        for i in 0..10 {
            want.push(Obj::Dict(i));
        }
        for r in 0..10_000u32 {
            want.push(Obj::Event(r));
            if r % 1000 == 999 {
                want.push(Obj::List(r));
            }
        }
        for (i, w) in want.iter().enumerate() {
            assert_eq!(o.push(*w).ok(), Some(i as u32));
        }
        for (i, w) in want.iter().enumerate() {
            assert_eq!(o.get(i).map(|x| format!("{x:?}")), Some(format!("{w:?}")));
        }
        assert!(o.get(want.len()).is_none());
        assert!(
            o.heap_bytes() < 4 * 1024 + 16 * CHUNK * 8,
            "{}",
            o.heap_bytes()
        );
        // Setting a slot of a compact chunk expands it.
        o.set(500, Obj::Tuple(7));
        assert!(matches!(o.get(500), Some(Obj::Tuple(7))));
        assert!(matches!(o.get(501), Some(Obj::Event(491))));
        assert!(matches!(o.get(499), Some(Obj::Event(489))));
    }
}
