//! Interned strings, big integers and byte strings: the atoms values refer to by id.

use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Id of an interned string in an [`Interner`]. Equal strings have equal ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrId(pub u32);

/// Id of an integer that does not fit `i64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BigIntId(pub u32);

/// Id of a byte string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BytesId(pub u32);

/// A string table: each distinct string is stored once.
#[derive(Default, Debug, Clone)]
pub struct Interner {
    strings: Vec<Arc<str>>,
    index: FxHashMap<Arc<str>, StrId>,
    heap_bytes: usize,
}

impl Interner {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `s`, adding it if new. Aborts when memory runs out: for file data use
    /// [`Self::try_intern`].
    pub fn intern(&mut self, s: &str) -> StrId {
        match self.try_intern(s) {
            Some(id) => id,
            None => {
                self.strings.reserve(1);
                self.try_intern(s).unwrap_or(StrId(u32::MAX))
            }
        }
    }

    /// The id of `s`, adding it if new; None when the tables cannot grow (no memory, or
    /// 2^32 - 1 strings) instead of aborting.
    pub fn try_intern(&mut self, s: &str) -> Option<StrId> {
        if let Some(id) = self.index.get(s) {
            return Some(*id);
        }
        let id = StrId(
            u32::try_from(self.strings.len())
                .ok()
                .filter(|&i| i != u32::MAX)?,
        );
        if self.strings.len() == self.strings.capacity() {
            self.strings.try_reserve(self.strings.len().max(64)).ok()?;
        }
        self.index.try_reserve(1).ok()?;
        let arc: Arc<str> = Arc::from(s);
        self.heap_bytes += s.len() + 16;
        self.strings.push(arc.clone());
        self.index.insert(arc, id);
        Some(id)
    }

    /// The id of `s` if it was interned.
    pub fn lookup(&self, s: &str) -> Option<StrId> {
        self.index.get(s).copied()
    }

    /// The string behind `id` (empty for an unknown id).
    pub fn get(&self, id: StrId) -> &str {
        self.strings.get(id.0 as usize).map(|s| &**s).unwrap_or("")
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }

    /// Approximate heap bytes held (strings, table and index).
    pub fn heap_bytes(&self) -> usize {
        self.heap_bytes + self.strings.capacity() * 16 + self.index.capacity() * 24
    }

    /// Drop the lookup index (keeps every string and id); saves memory once parsing is done.
    pub fn freeze(&mut self) {
        self.index = FxHashMap::default();
    }
}

/// Everything a [`crate::Value`] can point at that is not a container.
#[derive(Default, Debug, Clone)]
pub struct Atoms {
    pub strings: Interner,
    big_ints: Vec<Box<[u8]>>,
    bytes: Vec<Box<[u8]>>,
}

impl Atoms {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add an integer that does not fit `i64`, as little-endian two's complement bytes (how
    /// pickle's LONG1 / LONG4 store it; the JSON reader of memviz-snapshot writes the same).
    pub fn add_big_int(&mut self, le_twos_complement: &[u8]) -> BigIntId {
        self.big_ints.push(le_twos_complement.into());
        BigIntId((self.big_ints.len() - 1) as u32)
    }

    pub(crate) fn add_bytes(&mut self, b: &[u8]) -> BytesId {
        self.bytes.push(b.into());
        BytesId((self.bytes.len() - 1) as u32)
    }

    /// Little-endian two's complement bytes of a big integer.
    pub fn big_int(&self, id: BigIntId) -> &[u8] {
        self.big_ints
            .get(id.0 as usize)
            .map(|b| &**b)
            .unwrap_or(&[])
    }

    /// A big integer as `i128`, if it fits.
    pub fn big_int_i128(&self, id: BigIntId) -> Option<i128> {
        le_to_i128(self.big_int(id))
    }

    pub fn bytes(&self, id: BytesId) -> &[u8] {
        self.bytes.get(id.0 as usize).map(|b| &**b).unwrap_or(&[])
    }

    pub fn str(&self, id: StrId) -> &str {
        self.strings.get(id)
    }
}

/// Decode little-endian two's complement (pickle LONG1/LONG4) into `i128` if it fits.
pub(crate) fn le_to_i128(b: &[u8]) -> Option<i128> {
    if b.is_empty() {
        return Some(0);
    }
    let negative = b.last().is_some_and(|x| x & 0x80 != 0);
    // Strip redundant sign-extension bytes so oversized encodings of small numbers still fit.
    let mut len = b.len();
    let ext = if negative { 0xff } else { 0x00 };
    while len > 1 && b[len - 1] == ext && ((b[len - 2] & 0x80 != 0) == negative) {
        len -= 1;
    }
    if len > 16 {
        return None;
    }
    let mut buf = [ext; 16];
    buf[..len].copy_from_slice(&b[..len]);
    Some(i128::from_le_bytes(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn le_decoding() {
        assert_eq!(le_to_i128(&[]), Some(0));
        assert_eq!(le_to_i128(&[0xff]), Some(-1));
        assert_eq!(le_to_i128(&[0x00, 0x80]), Some(-32768));
        assert_eq!(
            le_to_i128(&[0, 0, 0, 0, 0, 0, 0, 0x80, 0]),
            Some(1i128 << 63)
        );
        let mut big = vec![0u8; 17];
        big[16] = 1;
        assert_eq!(le_to_i128(&big), None);
        let mut padded = vec![5u8];
        padded.extend([0u8; 20]);
        assert_eq!(le_to_i128(&padded), Some(5));
    }

    #[test]
    fn interning_dedups() {
        let mut i = Interner::new();
        let a = i.intern("alloc");
        let b = i.intern("free");
        assert_eq!(i.intern("alloc"), a);
        assert_ne!(a, b);
        assert_eq!(i.get(b), "free");
        assert_eq!(i.lookup("free"), Some(b));
        assert_eq!(i.get(StrId(99)), "");
    }
}
