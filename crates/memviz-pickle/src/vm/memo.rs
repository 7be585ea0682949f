//! The memo: compact slots, one `u32` each.

use crate::value::{ObjId, Value};

/// The memo: one `u32` per slot, as it holds an entry for nearly every container and string of
/// the file (26 M slots for a 2 GB snapshot: 105 MB saved over `u64` slots). A slot packs a tag
/// in the low 3 bits and the payload above (ids below 2^29, integers of up to 28 bits plus
/// sign); other values (floats, wider integers, larger ids) go to `wide` and the slot holds
/// their index.
#[derive(Default)]
pub(super) struct Memo {
    pub(super) slots: Vec<u32>,
    wide: Vec<Value>,
}

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
        self.slots.len()
    }

    pub(super) fn reserve(&mut self, n: usize) {
        let _ = self.slots.try_reserve_exact(n);
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
        let slot = *self.slots.get(i)?;
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

    /// Push a container id (its slot encoded inline, no `Value` through memory).
    #[inline]
    pub(super) fn push_obj(&mut self, o: ObjId) {
        if o.0 < M_PAYLOAD {
            self.slots.push((o.0 << 3) | M_OBJ);
        } else {
            self.push(Value::Obj(o));
        }
    }

    /// Push a string id.
    #[inline]
    pub(super) fn push_str(&mut self, s: crate::StrId) {
        if s.0 < M_PAYLOAD {
            self.slots.push((s.0 << 3) | M_STR);
        } else {
            self.push(Value::Str(s));
        }
    }

    pub(super) fn push(&mut self, v: Value) {
        let e = self.encode(v);
        self.slots.push(e);
    }

    pub(super) fn set(&mut self, i: usize, v: Value) {
        let e = self.encode(v);
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = e;
        }
    }

    pub(super) fn fill_unset_to(&mut self, len: usize) {
        self.slots.resize(len.max(self.slots.len()), M_UNSET);
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
            m.push(v);
        }
        for (i, v) in vals.iter().enumerate() {
            assert_eq!(m.get(i), Some(*v), "{v:?}");
        }
    }
}
