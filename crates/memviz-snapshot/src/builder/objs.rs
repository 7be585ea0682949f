//! The container slots of the builder, by [`ObjId`](memviz_pickle::ObjId), in chunks of
//! [`CHUNK`] ids of 4-byte slots.
//!
//! Nearly every container of a snapshot is a trace entry, lowered to a row the moment its items
//! arrive, and entries come one after the other: a chunk whose ids are all trace entries with
//! consecutive rows is kept as its first row (4 bytes instead of 64 slots). Measured on two
//! 150 MB tiles (1.9 M and 2.2 M entries): the slots took 16.7 MB and 25.5 MB (0.11x and 0.17x
//! the file) as one `Vec<Obj>` of 8-byte slots; this way 0.5 MB and 2.8 MB (the segments and
//! blocks before the trace of the real-file tile leave 10 k chunks that are not trace entries).
//! Chunks are compacted once the next one is full (an entry's dict gets its row only after its
//! nested containers, a new traceback's frame dicts, got their ids); the storage of a compacted
//! chunk is reused.

use super::{BuildError, Obj, EMPTY};

/// Ids per chunk.
const CHUNK: usize = 64;
/// A chunk's word: this bit set = compact (the rest is its first row), else the index of its
/// slots in [`Objs::slots`] (in chunks).
const COMPACT: u32 = 1 << 31;

/// A slot: a kind in the low 4 bits, a payload above. Payloads from [`P_WIDE`] up (and any
/// [`T_WIDE`] slot) are in [`Objs::wide`]; [`EMPTY`] is [`P_EMPTY`].
const P_BITS: u32 = 28;
const P_EMPTY: u32 = (1 << P_BITS) - 1;
const P_WIDE: u32 = P_EMPTY;
const T_WIDE: u32 = 15;

#[derive(Default)]
pub(super) struct Objs {
    chunks: Vec<u32>,
    /// The slots of the chunks that are not compact, [`CHUNK`] each.
    slots: Vec<u32>,
    /// Slots whose payload does not fit 28 bits.
    wide: Vec<Obj>,
    /// Chunks of `slots` free for reuse.
    free: Vec<u32>,
    len: usize,
    /// Chunks below this one were already considered for compaction.
    settled: usize,
}

fn kind(o: Obj) -> (u32, u32) {
    match o {
        Obj::List(p) => (0, p),
        Obj::Dict(p) => (1, p),
        Obj::Tuple(p) => (2, p),
        Obj::Event(p) => (3, p),
        Obj::Events(p) => (4, p),
        Obj::Frame(f) => (5, f.0),
        Obj::Stack(s) => (6, s.0),
        Obj::Block(p) => (7, p),
        Obj::PlacedBlock(p) => (8, p),
        Obj::Segment(p) => (9, p),
        Obj::SegmentBlocks(p) => (10, p),
        Obj::FreshStack(s) => (11, s.0),
        Obj::OpenStack(p) => (12, p),
    }
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
    fn encode(&mut self, o: Obj) -> u32 {
        let (t, p) = kind(o);
        let p = match p {
            EMPTY => P_EMPTY,
            p if p < P_WIDE => p,
            _ => {
                // Beyond 2^28 (a store of more than 2 GB, 268 M rows...): kept whole aside.
                let w = self.wide.len() as u32;
                self.wide.push(o);
                return (w << 4) | T_WIDE;
            }
        };
        (p << 4) | t
    }

    #[inline]
    fn decode(&self, w: u32) -> Option<Obj> {
        let p = match w >> 4 {
            P_EMPTY => EMPTY,
            p => p,
        };
        Some(match w & 15 {
            0 => Obj::List(p),
            1 => Obj::Dict(p),
            2 => Obj::Tuple(p),
            3 => Obj::Event(p),
            4 => Obj::Events(p),
            5 => Obj::Frame(crate::FrameId(p)),
            6 => Obj::Stack(crate::StackId(p)),
            7 => Obj::Block(p),
            8 => Obj::PlacedBlock(p),
            9 => Obj::Segment(p),
            10 => Obj::SegmentBlocks(p),
            11 => Obj::FreshStack(crate::StackId(p)),
            12 => Obj::OpenStack(p),
            _ => return self.wide.get((w >> 4) as usize).copied(),
        })
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
        self.decode(*self.slots.get(c as usize * CHUNK + k)?)
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
        let w = self.encode(o);
        if let Some(slot) = self.slots.get_mut(c as usize * CHUNK + i % CHUNK) {
            *slot = w;
        }
    }

    /// Give a compact chunk its slots back (never happens with the builder's lowering: an
    /// entry's slot does not change once it is a row); the index of its slots.
    #[cold]
    fn expand(&mut self, chunk: usize) -> u32 {
        let first = self.chunks.get(chunk).map_or(0, |c| c & !COMPACT);
        let s = self.new_chunk();
        for k in 0..CHUNK {
            let w = self.encode(Obj::Event(first.wrapping_add(k as u32)));
            if let Some(slot) = self.slots.get_mut(s as usize * CHUNK + k) {
                *slot = w;
            }
        }
        if let Some(w) = self.chunks.get_mut(chunk) {
            *w = s;
        }
        s
    }

    /// A new container; its id.
    #[inline]
    pub(super) fn push(&mut self, o: Obj) -> Result<u32, BuildError> {
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
    fn start_chunk(&mut self) -> Result<(), BuildError> {
        if self.len >= u32::MAX as usize {
            return Err(BuildError::Limit("more than 4 billion containers".into()));
        }
        let c = self.chunks.len();
        self.settle(c.saturating_sub(1));
        // Grow fallibly (doubling, as `push` and `resize` would): an error, not an abort.
        let oom = || {
            BuildError::OutOfMemory(format!(
                "out of memory: the slots of more than {} containers do not fit the memory available",
                self.len
            ))
        };
        if self.chunks.len() == self.chunks.capacity() {
            self.chunks
                .try_reserve(self.chunks.len().max(64))
                .map_err(|_| oom())?;
        }
        if self.free.is_empty() && self.slots.capacity() - self.slots.len() < CHUNK {
            self.slots
                .try_reserve(self.slots.len().max(16 * CHUNK))
                .map_err(|_| oom())?;
        }
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
        self.slots.resize(self.slots.len() + CHUNK, 0);
        s
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
            let first = match self.slots.get(at).and_then(|&w| self.decode(w)) {
                Some(Obj::Event(r)) if r & COMPACT == 0 && r <= !COMPACT - CHUNK as u32 => r,
                _ => continue,
            };
            let run = (0..CHUNK).all(|k| {
                let w = self.slots.get(at + k).and_then(|&w| self.decode(w));
                matches!(w, Some(Obj::Event(r)) if r == first + k as u32)
            });
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
        self.chunks.capacity() * 4 + self.slots.capacity() * 4
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
        want.push(Obj::List(EMPTY));
        want.push(Obj::Segment(u32::MAX - 1));
        want.push(Obj::Stack(crate::StackId(P_WIDE)));
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
            o.heap_bytes() < 4 * 1024 + 16 * CHUNK * 4,
            "{}",
            o.heap_bytes()
        );
        // Setting a slot of a compact chunk expands it.
        o.set(503, Obj::Tuple(7));
        assert!(matches!(o.get(503), Some(Obj::Tuple(7))));
        assert!(matches!(o.get(504), Some(Obj::Event(491))));
        assert!(matches!(o.get(502), Some(Obj::Event(489))));
    }
}
