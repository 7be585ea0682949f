//! The values the VM moves around: scalars inline, everything else by id.

use crate::intern::{BigIntId, BytesId, StrId};

/// Handle of a container (list, dict, tuple) owned by a [`crate::Builder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjId(pub u32);

/// One pickle value. `Copy` and 16 bytes: containers and long data live elsewhere, by id.
///
/// `repr(u64)` puts every payload at offset 8, so a copy is two aligned 8-byte moves (with the
/// default layout a `Bool` payload at offset 1 made copies overlap and stall store forwarding:
/// a third of the VM's time on memo gets).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(u64)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An integer outside `i64` (e.g. a LONG1 of 9 bytes); see [`crate::Atoms::big_int`].
    BigInt(BigIntId),
    Float(f64),
    Str(StrId),
    Bytes(BytesId),
    /// A list, dict or tuple built by the [`crate::Builder`].
    Obj(ObjId),
}

impl Value {
    /// Short name of the value's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::BigInt(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::Obj(_) => "container",
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn values_stay_small() {
        assert_eq!(std::mem::size_of::<super::Value>(), 16);
        assert_eq!(std::mem::size_of::<Option<super::Value>>(), 16);
    }
}
