//! The memo: compact slots, one `u32` each, in chunks of [`CHUNK`]; a chunk of consecutive
//! container ids is its first id alone.

use crate::value::{ObjId, Value};

/// The memo. It holds an entry for nearly every container and string of the file (26 M slots
/// for a 2 GB snapshot), so a slot is a `u32`: a tag in the low 3 bits and the payload above
/// (ids below 2^29, integers of up to 28 bits plus sign); other values (floats, wider
/// integers, larger ids) go to `wide` and the slot holds their index.
///
/// Slots come in chunks of [`CHUNK`]. Most of a snapshot's memo is its trace entries, each
/// dict memoized as it is created, one after the other: a chunk holding [`CHUNK`] consecutive
/// container ids is kept as its first id (4 bytes for 64 slots). On two 150 MB tiles the memo
/// took 8.3 MB and 12.8 MB (0.055x and 0.085x the file, the largest part of a parse's memory
/// besides the model), 0.15 MB and 0.3 MB this way (the segments before the trace are memoized
/// in creation order too). A chunk is compacted once the next one is full; a get then reads the
/// chunk's word, then (when it is not compact) the slot.
#[derive(Default)]
pub(super) struct Memo {
    /// Per chunk: `COMPACT | first id`, or the index (in chunks) of its slots in `slots`.
    chunks: Vec<u32>,
    /// The slots of the chunks that are not compact, [`CHUNK`] each.
    slots: Vec<u32>,
    /// Chunks of `slots` free for reuse.
    free: Vec<u32>,
    len: usize,
    /// Chunks below this one were considered for compaction.
    settled: usize,
    wide: Vec<Value>,
}

const CHUNK: usize = 64;
const COMPACT: u32 = 1 << 31;

const M_UNSET: u32 = 0;
const M_NONE: u32 = 1;
const M_FALSE: u32 = 2;
const M_TRUE: u32 = 3;
const M_INT: u32 = 4;
const M_STR: u32 = 5;
const M_OBJ: u32 = 6;
const M_WIDE: u32 = 7;
const M_PAYLOAD: u32 = 1 << 29;

impl Memo {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Room for the chunks of `n` more slots.
    pub(super) fn reserve(&mut self, n: usize) {
        let _ = self.chunks.try_reserve_exact(n / CHUNK + 1);
    }

    /// Slots that need no more allocation (the chunks' words).
    pub(super) fn capacity(&self) -> usize {
        self.chunks.capacity() * CHUNK
    }

    pub(super) fn encode(&mut self, v: Value) -> u32 {
        const SMALL: i64 = 1 << 28;
        match v {
            Value::None => M_NONE,
            Value::Bool(false) => M_FALSE,
            Value::Bool(true) => M_TRUE,
            Value::Int(i) if (-SMALL..SMALL).contains(&i) => ((i as u32) << 3) | M_INT,
            Value::Str(s) if s.0 < M_PAYLOAD => (s.0 << 3) | M_STR,
            Value::Obj(o) if o.0 < M_PAYLOAD => (o.0 << 3) | M_OBJ,
            other => match u32::try_from(self.wide.len()) {
                Ok(w) if w < M_PAYLOAD => {
                    self.wide.push(other);
                    (w << 3) | M_WIDE
                }
                // More than 2^29 wide values: the slot reads as unset (a BadMemo error on get),
                // never a wrong value.
                _ => M_UNSET,
            },
        }
    }

    #[inline]
    pub(super) fn get(&self, i: usize) -> Option<Value> {
        let c = *self.chunks.get(i / CHUNK)?;
        if c & COMPACT != 0 {
            // Only full chunks are compact: `i` is below the length.
            return Some(Value::Obj(ObjId((c & !COMPACT) + (i % CHUNK) as u32)));
        }
        // Slots past the length are unset.
        let slot = *self.slots.get(c as usize * CHUNK + i % CHUNK)?;
        let payload = slot >> 3;
        // The common cases first, as plain branches: a jump table here mispredicts when memo
        // gets alternate between keys (strings) and containers.
        let tag = slot & 7;
        if tag == M_OBJ {
            return Some(Value::Obj(ObjId(payload)));
        }
        if tag == M_STR {
            return Some(Value::Str(crate::StrId(payload)));
        }
        Some(match tag {
            M_NONE => Value::None,
            M_FALSE => Value::Bool(false),
            M_TRUE => Value::Bool(true),
            M_INT => Value::Int(((slot as i32) >> 3) as i64),
            M_WIDE => return self.wide.get(payload as usize).copied(),
            _ => return None,
        })
    }

    /// Append an encoded slot; false when the memory for it is not there.
    #[inline]
    fn push_slot(&mut self, e: u32) -> bool {
        if self.len.is_multiple_of(CHUNK) && !self.start_chunk() {
            return false;
        }
        let at = self
            .chunks
            .last()
            .map_or(0, |&c| c as usize * CHUNK + self.len % CHUNK);
        if let Some(s) = self.slots.get_mut(at) {
            *s = e;
        }
        self.len += 1;
        true
    }

    /// The slots of a new chunk (a free one, else more of `slots`), fallibly.
    fn take_chunk(&mut self) -> Option<u32> {
        if let Some(s) = self.free.pop() {
            return Some(s);
        }
        let s = u32::try_from(self.slots.len() / CHUNK).ok()?;
        if self.slots.len() == self.slots.capacity() {
            // Doubling, as `resize` would, but an error instead of an abort.
            let more = self.slots.len().max(16 * CHUNK);
            self.slots.try_reserve(more).ok()?;
        }
        self.slots.resize(self.slots.len() + CHUNK, M_UNSET);
        Some(s)
    }

    /// Slots for the next chunk (the one before last is compacted first, when it can be);
    /// false when the memory is not there.
    #[cold]
    fn start_chunk(&mut self) -> bool {
        let end = self.chunks.len().saturating_sub(1);
        while self.settled < end {
            let c = self.settled;
            self.settled += 1;
            self.compact(c);
        }
        if self.chunks.len() == self.chunks.capacity()
            && self.chunks.try_reserve(self.chunks.len().max(64)).is_err()
        {
            return false;
        }
        let Some(s) = self.take_chunk() else {
            return false;
        };
        // A reused chunk is cleared: slots past the length read as unset.
        let at = s as usize * CHUNK;
        if let Some(slots) = self.slots.get_mut(at..at + CHUNK) {
            slots.fill(M_UNSET);
        }
        self.chunks.push(s);
        true
    }

    /// Keep chunk `c` as its first id if it holds [`CHUNK`] consecutive container ids.
    fn compact(&mut self, c: usize) {
        let Some(&s) = self.chunks.get(c) else {
            return;
        };
        let at = s as usize * CHUNK;
        let Some(slots) = self.slots.get(at..at + CHUNK) else {
            return;
        };
        let first = match slots.first() {
            Some(&w) if w & 7 == M_OBJ => w >> 3,
            _ => return,
        };
        let run = slots
            .iter()
            .enumerate()
            .all(|(k, &w)| w == ((first + k as u32) << 3) | M_OBJ);
        if run && first + (CHUNK as u32) < M_PAYLOAD {
            if let Some(w) = self.chunks.get_mut(c) {
                *w = COMPACT | first;
            }
            self.free.push(s);
        }
    }

    /// The slots of chunk `c` (given back to a compact one).
    fn explicit(&mut self, c: usize) -> Option<usize> {
        let w = *self.chunks.get(c)?;
        if w & COMPACT == 0 {
            return Some(w as usize * CHUNK);
        }
        let first = w & !COMPACT;
        let s = self.take_chunk()?;
        let at = s as usize * CHUNK;
        for (k, slot) in self.slots.get_mut(at..at + CHUNK)?.iter_mut().enumerate() {
            *slot = ((first + k as u32) << 3) | M_OBJ;
        }
        if let Some(x) = self.chunks.get_mut(c) {
            *x = s;
        }
        Some(at)
    }

    /// Push a value; false when the memory for it is not there (so for every push below).
    pub(super) fn push(&mut self, v: Value) -> bool {
        let e = self.encode(v);
        self.push_slot(e)
    }

    /// Push a container id (its slot encoded inline, no `Value` through memory).
    #[inline]
    pub(super) fn push_obj(&mut self, o: ObjId) -> bool {
        if o.0 < M_PAYLOAD {
            self.push_slot((o.0 << 3) | M_OBJ)
        } else {
            self.push(Value::Obj(o))
        }
    }

    /// Push a string id.
    #[inline]
    pub(super) fn push_str(&mut self, s: crate::StrId) -> bool {
        if s.0 < M_PAYLOAD {
            self.push_slot((s.0 << 3) | M_STR)
        } else {
            self.push(Value::Str(s))
        }
    }

    /// Overwrite slot `i` (below the length); false when the memory for it is not there.
    pub(super) fn set(&mut self, i: usize, v: Value) -> bool {
        if i >= self.len {
            return true;
        }
        let e = self.encode(v);
        match self.explicit(i / CHUNK) {
            Some(at) => {
                if let Some(slot) = self.slots.get_mut(at + i % CHUNK) {
                    *slot = e;
                }
                true
            }
            None => false,
        }
    }

    /// Unset slots up to `len`; false when the memory for them is not there.
    pub(super) fn fill_unset_to(&mut self, len: usize) -> bool {
        while self.len < len {
            if !self.push_slot(M_UNSET) {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod memo_tests {
    use super::*;

    #[test]
    fn memo_slots_round_trip() {
        let mut m = Memo::default();
        let vals = [
            Value::None,
            Value::Bool(true),
            Value::Bool(false),
            Value::Int(0),
            Value::Int(-1),
            Value::Int((1 << 28) - 1),
            Value::Int(-(1 << 28)),
            Value::Int(1 << 28),
            Value::Int(i64::MIN),
            Value::Float(1.5),
            Value::Str(crate::StrId(7)),
            Value::Str(crate::StrId(u32::MAX)),
            Value::Obj(ObjId((1 << 29) - 1)),
            Value::Obj(ObjId(1 << 29)),
        ];
        for v in vals {
            assert!(m.push(v));
        }
        for (i, v) in vals.iter().enumerate() {
            assert_eq!(m.get(i), Some(*v), "{v:?}");
        }
    }

    #[test]
    fn runs_of_ids_compact() {
        let mut m = Memo::default();
        let mut want = Vec::new();
        for i in 0..10_000u32 {
            let v = if i % 1000 == 7 {
                Value::Str(crate::StrId(i))
            } else {
                Value::Obj(ObjId(i + 5))
            };
            assert!(m.push(v));
            want.push(v);
        }
        assert!(m.slots.len() < 40 * CHUNK, "{}", m.slots.len());
        for (i, v) in want.iter().enumerate() {
            assert_eq!(m.get(i), Some(*v));
        }
        assert_eq!(m.get(want.len()), None);
        // Overwriting a slot of a compact chunk, and a gap.
        assert!(m.set(500, Value::Int(3)));
        want[500] = Value::Int(3);
        assert!(m.fill_unset_to(10_100));
        assert!(m.push(Value::None));
        for (i, v) in want.iter().enumerate() {
            assert_eq!(m.get(i), Some(*v));
        }
        assert_eq!(m.get(10_050), None);
        assert_eq!(m.get(10_100), Some(Value::None));
        assert_eq!(m.len(), 10_101);
    }
}
