//! The pickle memo's sharing, emulated: equal frame dicts are one container, and so are frame
//! lists made of the same frame containers.
//!
//! PyTorch shares tracebacks by identity, so its pickle writes each frame dict and frame list
//! once and refers to it again with a memo get; the builder interns stacks by container id
//! (`stack_by_objs`) and turns a frame dict into a frame once. JSON writes every reference out
//! again (a 2.6 MB pickle became 60 MB of JSON): without this, each would be a container of its
//! own, one builder slot and one stack lookup by content per frame written. Here a frame dict
//! is looked up by its content (interned key and string ids, integers) and a frame list by its
//! frames' container ids, and a repeat gets the first one's [`ObjId`] with no builder call.
//!
//! Both tables hold one entry per distinct frame or frame list the text wrote out: linear in
//! the bytes read.

use memviz_pickle::{Atoms, ObjId, StrId, Value};
use rustc_hash::FxHashMap;

/// The keys a frame dict may have (FORMAT.md §3.4).
const FRAME_KEYS: [&str; 7] = [
    "filename",
    "line",
    "name",
    "fx_node_op",
    "fx_node_name",
    "fx_node_target",
    "fx_original_trace",
];

pub(super) struct Dedupe {
    /// Ids of [`FRAME_KEYS`].
    keys: [StrId; 7],
    frames: FxHashMap<Box<[u64]>, ObjId>,
    lists: FxHashMap<Box<[u32]>, ObjId>,
    words: Vec<u64>,
    ids: Vec<u32>,
}

impl Dedupe {
    /// Interns the frame keys in `atoms` (a builder that knows them already has their ids).
    pub(super) fn new(atoms: &mut Atoms) -> Dedupe {
        let keys = FRAME_KEYS.map(|k| atoms.strings.intern(k));
        Dedupe {
            keys,
            frames: FxHashMap::default(),
            lists: FxHashMap::default(),
            words: Vec::new(),
            ids: Vec::new(),
        }
    }

    /// True for a key a frame dict may have.
    #[inline]
    pub(super) fn is_frame_key(&self, k: StrId) -> bool {
        self.keys.contains(&k)
    }

    /// Encode frame dict pairs (keys checked by the caller) as the lookup key in `self.words`;
    /// false when a value is neither a string nor an integer.
    fn frame_words(&mut self, pairs: &[Value]) -> bool {
        self.words.clear();
        for kv in pairs.chunks_exact(2) {
            let Value::Str(k) = kv[0] else { return false };
            let (tag, v) = match kv[1] {
                Value::Str(s) => (0, s.0 as u64),
                Value::Int(i) => (1, i as u64),
                _ => return false,
            };
            self.words.push(((k.0 as u64) << 1) | tag);
            self.words.push(v);
        }
        true
    }

    /// The container of an equal frame dict read before, if any; else the lookup key is kept
    /// for [`Self::add_frame`]. None (and nothing kept) when the pairs cannot be shared.
    pub(super) fn find_frame(&mut self, pairs: &[Value]) -> Option<Option<ObjId>> {
        if !self.frame_words(pairs) {
            return None;
        }
        Some(self.frames.get(&self.words[..]).copied())
    }

    /// Remember `id` for the frame dict last looked up with [`Self::find_frame`].
    pub(super) fn add_frame(&mut self, id: ObjId) -> bool {
        if self.frames.try_reserve(1).is_err() {
            return false;
        }
        self.frames.insert(Box::from(&self.words[..]), id);
        true
    }

    /// The list of the same frame containers read before, if any; else the lookup key is kept
    /// for [`Self::add_list`].
    pub(super) fn find_list(&mut self, items: &[Value]) -> Option<ObjId> {
        self.ids.clear();
        self.ids.extend(items.iter().map(|v| match v {
            Value::Obj(ObjId(i)) => *i,
            _ => u32::MAX,
        }));
        self.lists.get(&self.ids[..]).copied()
    }

    /// Remember `id` for the frame list last looked up with [`Self::find_list`].
    pub(super) fn add_list(&mut self, id: ObjId) -> bool {
        if self.lists.try_reserve(1).is_err() {
            return false;
        }
        self.lists.insert(Box::from(&self.ids[..]), id);
        true
    }
}

/// Strings of at most this many bytes are cached by [`StrCache`].
const CACHED_LEN: usize = 256;
/// Slots of [`StrCache`] (a power of two).
const CACHE_SLOTS: usize = 4096;

/// The string ids of recently read strings by their raw bytes (escapes as written): a repeat
/// costs a hash and a compare of its bytes instead of UTF-8 validation, decoding and the
/// interner's lookup. JSON repeats every key and frame text once per reference, so most strings
/// are repeats (measured: the interner took 40 % of the time on a twin of a real snapshot).
/// Direct-mapped, at most [`CACHE_SLOTS`] strings of [`CACHED_LEN`] bytes (1 MiB).
pub(super) struct StrCache {
    /// (hash, id, raw bytes); no id in a slot never filled.
    slots: Vec<(u64, Option<StrId>, Vec<u8>)>,
}

/// A hash of `raw`: its 8-byte words from the first byte (the last one zero-padded, an empty
/// one when the length is a multiple of 8), then its length.
#[inline]
pub(super) fn hash(raw: &[u8]) -> u64 {
    let mut h = 0;
    let mut words = raw.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = mix(h, u64::from_le_bytes(b));
    }
    let mut b = [0u8; 8];
    let rest = words.remainder();
    b[..rest.len()].copy_from_slice(rest);
    finish(mix(h, u64::from_le_bytes(b)), raw.len())
}

/// One word into the hash.
#[inline]
fn mix(h: u64, w: u64) -> u64 {
    const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    (h.rotate_left(5) ^ w).wrapping_mul(K)
}

/// The hash of `len` bytes whose words gave `h`.
#[inline]
fn finish(h: u64, len: usize) -> u64 {
    let h = mix(h, len as u64);
    h ^ (h >> 29)
}

impl StrCache {
    pub(super) fn new() -> StrCache {
        StrCache { slots: Vec::new() }
    }

    /// The id of the string last read with these raw bytes and hash, if cached.
    #[inline]
    pub(super) fn get(&self, h: u64, raw: &[u8]) -> Option<StrId> {
        let (sh, id, bytes) = self.slots.get(h as usize & (CACHE_SLOTS - 1))?;
        if *sh == h && bytes[..] == *raw {
            *id
        } else {
            None
        }
    }

    /// Remember `id` for these raw bytes (short strings only).
    pub(super) fn put(&mut self, h: u64, raw: &[u8], id: StrId) {
        if raw.len() > CACHED_LEN {
            return;
        }
        if self.slots.is_empty() {
            if self.slots.try_reserve_exact(CACHE_SLOTS).is_err() {
                return;
            }
            self.slots.resize(CACHE_SLOTS, (0, None, Vec::new()));
        }
        if let Some(slot) = self.slots.get_mut(h as usize & (CACHE_SLOTS - 1)) {
            slot.0 = h;
            slot.1 = Some(id);
            slot.2.clear();
            slot.2.extend_from_slice(raw);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_holds_only_what_was_put() {
        let mut c = StrCache::new();
        assert_eq!(c.get(hash(b""), b""), None);
        c.put(hash(b"x"), b"x", StrId(3));
        // An empty slot (hash 0, no bytes) is no entry for "" (whose hash may be anything).
        assert_eq!(c.get(hash(b""), b""), None);
        assert_eq!(c.get(0, b""), None);
        assert_eq!(c.get(hash(b"x"), b"x"), Some(StrId(3)));
        c.put(hash(b""), b"", StrId(4));
        assert_eq!(c.get(hash(b""), b""), Some(StrId(4)));
    }
}
