//! A compact store for the items of generic containers (lists, dicts, tuples a builder keeps as
//! values): one flat arena of 8-byte words instead of a `Vec<Value>` (16 bytes a value, plus a
//! 24-byte header and an allocation) per container.
//!
//! Measured on a 150 MB file tiled from a real snapshot (115 k segments, 228 k blocks, when
//! memviz-snapshot kept them generic until STOP): the generic items took 98 MB as
//! `Vec<Vec<Value>>`, and the heap's peak while parsing was 1.506x the file; here a value is
//! one word and a dict whose keys are all strings stores its key sequence once, as an interned
//! shape: 30 MB, peak 1.069x. (Segments and blocks are now read as their dicts complete; the
//! store keeps the few containers nothing reads earlier, 1.6 MB on that file.)
//!
//! A container is an offset into the arena; its first word is a header (length and capacity in
//! values), a dict of strings has a shape id next, then the values. A container extended when
//! it is no longer the last one in the arena moves to the end with room to double (a shaped
//! dict becomes flat key/value pairs then), so a list or dict filled in many batches (a segment
//! list: batches of 1000), or one item at a time, costs amortised constant time per item and
//! leaves garbage of at most about twice its size: the arena stays linear in the items the
//! pickle passed, whatever their order. Taking a container's items leaves its words as garbage.

use crate::error::BuildError;
use crate::intern::{BigIntId, BytesId, StrId};
use crate::value::{ObjId, Value};
use rustc_hash::FxHashMap;

/// Why a [`Store`] could not hold more items.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The arena would pass 4 billion words.
    #[error("too many generic container items (more than 4 billion)")]
    TooManyItems,
    /// One container would hold more than 4 billion items.
    #[error("a container with more than 4 billion items")]
    TooLong,
    /// The arena could not grow.
    #[error("out of memory for container items")]
    OutOfMemory,
}

/// A builder's refusal: the counts are a [`BuildError::Limit`], memory a
/// [`BuildError::OutOfMemory`] (same messages).
impl From<StoreError> for BuildError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::TooManyItems | StoreError::TooLong => BuildError::Limit(e.to_string()),
            StoreError::OutOfMemory => BuildError::OutOfMemory(e.to_string()),
        }
    }
}

/// Handle of a container's items in a [`Store`] (an offset into its arena).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Items(u32);

const T_NONE: u64 = 0;
const T_BOOL: u64 = 1;
const T_INT: u64 = 2;
const T_STR: u64 = 3;
const T_OBJ: u64 = 4;
const T_BIGINT: u64 = 5;
const T_BYTES: u64 = 6;
/// A float, or an integer outside the 61-bit inline range: index into `wide`.
const T_WIDE: u64 = 7;

/// Header flag: the container is a dict whose keys are a shape (the next word is its id).
const SHAPED: u64 = 1 << 63;

#[derive(Debug)]
pub struct Store {
    words: Vec<u64>,
    wide: Vec<Value>,
    shapes: Vec<Box<[StrId]>>,
    shape_index: FxHashMap<Box<[StrId]>, u32>,
    /// The last few distinct shapes used (ids into `shapes`; `u32::MAX` = none).
    recent_shapes: [u32; 4],
    scratch: Vec<StrId>,
}

impl Default for Store {
    fn default() -> Self {
        Store {
            words: Vec::new(),
            wide: Vec::new(),
            shapes: Vec::new(),
            shape_index: FxHashMap::default(),
            recent_shapes: [u32::MAX; 4],
            scratch: Vec::new(),
        }
    }
}

impl Store {
    pub fn new() -> Self {
        Self::default()
    }

    /// Give back the arena's growth slack (no more containers are coming).
    pub fn shrink_to_fit(&mut self) {
        self.words.shrink_to_fit();
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.words.capacity() * 8
            + self.wide.capacity() * 16
            + self.shapes.iter().map(|s| s.len() * 8 + 16).sum::<usize>()
    }

    fn encode(&mut self, v: Value) -> u64 {
        const SMALL: i64 = 1 << 60;
        match v {
            Value::None => T_NONE,
            Value::Bool(b) => ((b as u64) << 3) | T_BOOL,
            Value::Int(i) if (-SMALL..SMALL).contains(&i) => ((i as u64) << 3) | T_INT,
            Value::Str(s) => ((s.0 as u64) << 3) | T_STR,
            Value::Obj(o) => ((o.0 as u64) << 3) | T_OBJ,
            Value::BigInt(b) => ((b.0 as u64) << 3) | T_BIGINT,
            Value::Bytes(b) => ((b.0 as u64) << 3) | T_BYTES,
            other => {
                self.wide.push(other);
                (((self.wide.len() - 1) as u64) << 3) | T_WIDE
            }
        }
    }

    #[inline]
    fn decode(&self, w: u64) -> Value {
        let p = w >> 3;
        match w & 7 {
            T_NONE => Value::None,
            T_BOOL => Value::Bool(p != 0),
            T_INT => Value::Int((w as i64) >> 3),
            T_STR => Value::Str(StrId(p as u32)),
            T_OBJ => Value::Obj(ObjId(p as u32)),
            T_BIGINT => Value::BigInt(BigIntId(p as u32)),
            T_BYTES => Value::Bytes(BytesId(p as u32)),
            _ => self.wide.get(p as usize).copied().unwrap_or(Value::None),
        }
    }

    fn header(&self, at: Items) -> (usize, usize, bool) {
        let h = self.words.get(at.0 as usize).copied().unwrap_or(0);
        let shaped = h & SHAPED != 0;
        let h = h & !SHAPED;
        ((h & 0xffff_ffff) as usize, (h >> 32) as usize, shaped)
    }

    /// The shape id of these dict keys, if every key is a string.
    fn shape_of(&mut self, pairs: &[Value]) -> Option<u32> {
        let mut keys = std::mem::take(&mut self.scratch);
        keys.clear();
        let all_str = pairs.chunks_exact(2).all(|kv| match kv[0] {
            Value::Str(s) => {
                keys.push(s);
                true
            }
            _ => false,
        });
        // Dicts come in few shapes, often alternating (a segment, its blocks, the next
        // segment): the recent ones are compared before hashing.
        let recent = self.recent_shapes.iter().copied().find(|&id| {
            self.shapes
                .get(id as usize)
                .is_some_and(|s| s[..] == keys[..])
        });
        let id = if !(all_str && pairs.len().is_multiple_of(2)) {
            None
        } else if recent.is_some() {
            recent
        } else {
            match self.shape_index.get(&keys[..]) {
                Some(&id) => Some(id),
                None => u32::try_from(self.shapes.len()).ok().inspect(|&id| {
                    self.shapes.push(Box::from(&keys[..]));
                    self.shape_index.insert(Box::from(&keys[..]), id);
                }),
            }
        };
        if let (Some(id), None) = (id, recent) {
            self.recent_shapes.rotate_right(1);
            if let Some(first) = self.recent_shapes.first_mut() {
                *first = id;
            }
        }
        self.scratch = keys;
        id
    }

    /// A new container holding `items` (`shaped`: they are key/value pairs, stored as a shape
    /// when every key is a string), with room for `cap` values in all (flat containers only: a
    /// shaped dict never gets room).
    fn alloc(&mut self, items: &[Value], shaped: bool, cap: usize) -> Result<Items, StoreError> {
        let at = u32::try_from(self.words.len())
            .ok()
            .filter(|&a| a != u32::MAX)
            .ok_or(StoreError::TooManyItems)?;
        let shape = if shaped { self.shape_of(items) } else { None };
        let n = if shape.is_some() {
            items.len() / 2
        } else {
            items.len()
        };
        let cap = cap.max(n);
        let (n32, cap32) = match (u32::try_from(n), u32::try_from(cap)) {
            (Ok(a), Ok(b)) => (a, b),
            _ => return Err(StoreError::TooLong),
        };
        let mut h = (n32 as u64) | ((cap32 as u64) << 32);
        if shape.is_some() {
            h |= SHAPED;
        }
        self.words
            .try_reserve(cap + 2)
            .map_err(|_| StoreError::OutOfMemory)?;
        self.words.push(h);
        match shape {
            Some(id) => {
                self.words.push(id as u64);
                for kv in items.chunks_exact(2) {
                    let w = self.encode(kv[1]);
                    self.words.push(w);
                }
            }
            None => {
                for &v in items {
                    let w = self.encode(v);
                    self.words.push(w);
                }
            }
        }
        // Reserved room (zero words) for later items.
        self.words.resize(self.words.len() + (cap - n), 0);
        Ok(Items(at))
    }

    /// A new list or tuple.
    pub fn new_seq(&mut self, items: &[Value]) -> Result<Items, StoreError> {
        self.alloc(items, false, items.len())
    }

    /// A new dict from key/value pairs (string keys are stored once per distinct key sequence).
    pub fn new_dict(&mut self, pairs: &[Value]) -> Result<Items, StoreError> {
        self.alloc(pairs, true, 0)
    }

    /// The end (one past the last word) of a container.
    fn end(&self, at: Items) -> usize {
        let (_, cap, shaped) = self.header(at);
        at.0 as usize + 1 + shaped as usize + cap
    }

    /// Append items (pairs for a dict: `dict` is only documentation, both grow the same way);
    /// the handle may change.
    ///
    /// Every container grows with room to double, so filling one item at a time costs amortised
    /// constant time and at most about twice its final size in garbage. A dict stored as a
    /// shape becomes flat key/value pairs the first time it is extended (its keys change): a
    /// dict filled by single SETITEMs used to be moved whole at every one, n²/2 words for n
    /// items (a 300 KB file asked for 14 GB).
    pub fn extend(&mut self, at: Items, items: &[Value], dict: bool) -> Result<Items, StoreError> {
        let _ = dict;
        let (len, cap, shaped) = self.header(at);
        if !shaped && len + items.len() <= cap {
            // Room left (flat containers only): write in place.
            let base = at.0 as usize + 1 + len;
            for (k, &v) in items.iter().enumerate() {
                let w = self.encode(v);
                if let Some(slot) = self.words.get_mut(base + k) {
                    *slot = w;
                }
            }
            let n = (len + items.len()) as u64;
            if let Some(h) = self.words.get_mut(at.0 as usize) {
                *h = n | ((cap as u64) << 32);
            }
            return Ok(at);
        }
        let mut all = self.get(at);
        all.try_reserve(items.len())
            .map_err(|_| StoreError::OutOfMemory)?;
        all.extend_from_slice(items);
        let room = all.len().saturating_mul(2);
        if !shaped && self.end(at) == self.words.len() {
            // The last container: grow it in place.
            self.words.truncate(at.0 as usize);
        }
        // Else move to the end (the old words become garbage), with room to double.
        self.alloc(&all, false, room)
    }

    /// The items (key/value pairs for a dict) of a container.
    pub fn get(&self, at: Items) -> Vec<Value> {
        let mut out = Vec::new();
        self.get_into(at, &mut out);
        out
    }

    /// Like [`Self::get`], appending to `out`.
    pub fn get_into(&self, at: Items, out: &mut Vec<Value>) {
        let (len, _, shaped) = self.header(at);
        let start = at.0 as usize + 1;
        if shaped {
            let shape = self
                .words
                .get(start)
                .and_then(|&id| self.shapes.get(id as usize));
            let (Some(keys), Some(vals)) = (shape, self.words.get(start + 1..start + 1 + len))
            else {
                return;
            };
            out.reserve(len * 2);
            for (k, &w) in keys.iter().zip(vals) {
                out.push(Value::Str(*k));
                out.push(self.decode(w));
            }
        } else if let Some(vals) = self.words.get(start..start + len) {
            out.reserve(len);
            out.extend(vals.iter().map(|&w| self.decode(w)));
        }
    }

    /// Item `k` of a list or tuple (None past its end, or for a dict of string keys).
    pub fn seq_value(&self, at: Items, k: usize) -> Option<Value> {
        let (len, _, shaped) = self.header(at);
        if shaped || k >= len {
            return None;
        }
        let w = *self.words.get(at.0 as usize + 1 + k)?;
        Some(self.decode(w))
    }

    /// Number of items (pairs count twice for a dict).
    pub fn len(&self, at: Items) -> usize {
        let (len, _, shaped) = self.header(at);
        if shaped {
            len * 2
        } else {
            len
        }
    }

    pub fn is_empty(&self, at: Items) -> bool {
        self.len(at) == 0
    }

    /// True when a dict has a pair with the string key `key`.
    pub fn dict_has_key(&self, at: Items, key: StrId) -> bool {
        let (len, _, shaped) = self.header(at);
        let start = at.0 as usize + 1;
        if shaped {
            return self
                .words
                .get(start)
                .and_then(|&id| self.shapes.get(id as usize))
                .is_some_and(|keys| keys.iter().take(len).any(|&k| k == key));
        }
        self.words.get(start..start + len).is_some_and(|w| {
            w.chunks_exact(2)
                .any(|kv| self.decode(kv[0]) == Value::Str(key))
        })
    }

    /// The value of the last pair with the string key `key` in a dict, without decoding the
    /// rest.
    pub fn dict_value(&self, at: Items, key: StrId) -> Option<Value> {
        let (len, _, shaped) = self.header(at);
        let start = at.0 as usize + 1;
        if shaped {
            let keys = self
                .words
                .get(start)
                .and_then(|&id| self.shapes.get(id as usize))?;
            let k = keys.iter().take(len).rposition(|&k| k == key)?;
            return self.words.get(start + 1 + k).map(|&w| self.decode(w));
        }
        let w = self.words.get(start..start + len)?;
        w.chunks_exact(2)
            .rev()
            .find(|kv| self.decode(kv[0]) == Value::Str(key))
            .map(|kv| self.decode(kv[1]))
    }

    /// Empty a container (its words become garbage).
    pub fn clear(&mut self, at: Items) {
        let (_, cap, shaped) = self.header(at);
        if let Some(h) = self.words.get_mut(at.0 as usize) {
            *h = ((cap as u64) << 32) | if shaped { SHAPED } else { 0 };
        }
    }

    /// Drop a container: when it is the last one of the arena its words are given back, else
    /// they become garbage. The handle must not be used again (a later container may take its
    /// place).
    pub fn free(&mut self, at: Items) {
        if self.end(at) == self.words.len() {
            self.words.truncate(at.0 as usize);
        } else {
            self.clear(at);
        }
    }

    /// The items, leaving the container empty.
    pub fn take(&mut self, at: Items) -> Vec<Value> {
        let v = self.get(at);
        self.clear(at);
        v
    }

    /// Handle from its raw offset (as kept in a builder's slot).
    pub fn items_at(raw: u32) -> Items {
        Items(raw)
    }

    /// The raw offset of a handle.
    pub fn raw(at: Items) -> u32 {
        at.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        let mut s = Store::new();
        let vals = [
            Value::None,
            Value::Bool(true),
            Value::Bool(false),
            Value::Int(0),
            Value::Int(-1),
            Value::Int((1 << 60) - 1),
            Value::Int(-(1 << 60)),
            Value::Int(1 << 60),
            Value::Int(i64::MIN),
            Value::Int(i64::MAX),
            Value::Float(1.5),
            Value::Float(f64::NAN.copysign(-1.0)),
            Value::Str(StrId(u32::MAX)),
            Value::Obj(ObjId(u32::MAX)),
            Value::BigInt(BigIntId(7)),
            Value::Bytes(BytesId(9)),
        ];
        let a = s.new_seq(&vals).unwrap_or(Items(0));
        let got = s.get(a);
        assert_eq!(got.len(), vals.len());
        for (g, v) in got.iter().zip(&vals) {
            match (g, v) {
                (Value::Float(x), Value::Float(y)) => assert_eq!(x.to_bits(), y.to_bits()),
                _ => assert_eq!(g, v),
            }
        }
    }

    #[test]
    fn dicts_and_growth() {
        let mut s = Store::new();
        let k = |i| Value::Str(StrId(i));
        let d1 = s
            .new_dict(&[k(1), Value::Int(5), k(2), Value::None])
            .unwrap_or(Items(0));
        let d2 = s
            .new_dict(&[k(1), Value::Int(6), k(2), k(3)])
            .unwrap_or(Items(0));
        let mixed = s.new_dict(&[Value::Int(1), k(1)]).unwrap_or(Items(0));
        assert_eq!(s.shapes.len(), 1);
        assert_eq!(s.get(d1), vec![k(1), Value::Int(5), k(2), Value::None]);
        assert_eq!(s.get(d2), vec![k(1), Value::Int(6), k(2), k(3)]);
        assert_eq!(s.get(mixed), vec![Value::Int(1), k(1)]);
        assert_eq!(s.seq_value(mixed, 1), Some(k(1)));
        assert_eq!(s.seq_value(mixed, 2), None);
        assert_eq!(s.seq_value(d2, 0), None);
        assert!(s.dict_has_key(d2, StrId(2)));
        assert_eq!(s.dict_value(d2, StrId(2)), Some(k(3)));
        assert_eq!(s.dict_value(d2, StrId(3)), None);
        assert_eq!(s.dict_value(mixed, StrId(1)), None);
        assert!(!s.dict_has_key(d2, StrId(3)));
        assert!(!s.dict_has_key(mixed, StrId(9)));
        // Extending a dict that is not last moves it.
        let d1b = s.extend(d1, &[k(1), Value::Int(7)], true).unwrap_or(d1);
        assert_eq!(
            s.get(d1b),
            vec![k(1), Value::Int(5), k(2), Value::None, k(1), Value::Int(7)]
        );
        assert_eq!(s.get(d2), vec![k(1), Value::Int(6), k(2), k(3)]);
        // A list filled in many batches among other containers.
        let mut l = s.new_seq(&[Value::Int(0)]).unwrap_or(Items(0));
        let mut want = vec![Value::Int(0)];
        for i in 1..200 {
            let _ = s.new_dict(&[k(1), Value::Int(i)]);
            l = s
                .extend(l, &[Value::Int(i), Value::Int(-i)], false)
                .unwrap_or(l);
            want.extend([Value::Int(i), Value::Int(-i)]);
        }
        assert_eq!(s.get(l), want);
        assert!(
            s.words.len() < 200 * 3 + 4 * want.len() + 64,
            "{}",
            s.words.len()
        );
        assert_eq!(s.take(l).len(), want.len());
        // Freeing the last container gives its words back.
        let before = s.words.len();
        let last = s
            .new_seq(&[Value::Int(1), Value::Int(2)])
            .unwrap_or(Items(0));
        s.free(last);
        assert_eq!(s.words.len(), before);
        assert!(s.get(l).is_empty());
        assert_eq!(s.len(d2), 4);
    }

    /// A dict filled by single SETITEMs among other containers: linear words, not n²/2.
    #[test]
    fn dicts_filled_one_pair_at_a_time_stay_linear() {
        let mut s = Store::new();
        let k = |i| Value::Str(StrId(i));
        let mut d = s.new_dict(&[k(0), Value::Int(0)]).unwrap_or(Items(0));
        let n = 20_000u32;
        for i in 1..n {
            if i % 7 == 0 {
                let _ = s.new_seq(&[Value::Int(i as i64)]);
            }
            d = s
                .extend(d, &[k(i), Value::Int(i as i64)], true)
                .unwrap_or(d);
        }
        let pairs = s.get(d);
        assert_eq!(pairs.len(), 2 * n as usize);
        assert_eq!(s.dict_value(d, StrId(12_345)), Some(Value::Int(12_345)));
        assert!(s.dict_has_key(d, StrId(n - 1)));
        assert!(!s.dict_has_key(d, StrId(n)));
        // Live pairs, room to double and the garbage of earlier moves: a few words per item.
        assert!(s.words.len() < 10 * 2 * n as usize, "{}", s.words.len());
    }
}
