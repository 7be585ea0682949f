//! A streaming, push-based, non-executing pickle reader (protocols 2-5) with interned strings and aliasing memo.
//!
//! # How it works
//! [`Unpickler`] is a small virtual machine over the pickle opcode stream. Bytes arrive with
//! [`Unpickler::push`] in chunks of any size; an opcode cut by a chunk boundary is kept in a small
//! carry buffer and decoded when the rest arrives, so the result never depends on the chunking.
//! Scalars (ints, floats, bools, interned strings) are [`Value`]s on one value stack; marks are
//! indices into that stack, so a million items above one MARK (the C++ pickler's style) cost
//! nothing special. Containers are not built by the VM: it asks a [`Builder`] to create and fill
//! them and only keeps the [`ObjId`] handle the builder returns. Memo slots hold `Value`s, so a
//! `BINGET` of a list yields the *same* handle (an alias, never a copy) — which also means a
//! list memoized while still empty resolves to the filled list later, as pickle requires.
//!
//! Nothing is ever imported or executed: `GLOBAL`, `STACK_GLOBAL`, `REDUCE`, `BUILD`, `NEWOBJ`,
//! `INST`, `OBJ`, `EXT*` and `PERSID` are refused with an error naming the opcode, its byte offset
//! and (for globals) the class the file wanted. Limits ([`Limits`]) bound the mark depth, memo size,
//! stack size and string length so hostile input cannot exhaust memory; the stack, the memo and
//! the string table grow fallibly (an [`ErrorKind::OutOfMemory`] error, never an abort), and
//! the [`Store`] of generic containers grows every container by doubling (linear in the items
//! it is given, in whatever order and batches they come).
//!
//! [`tree::TreeBuilder`] is a generic builder (a plain value tree) for tests and tools.

mod error;
mod intern;
pub mod store;
pub mod tree;
mod value;
mod vm;

pub use error::{BuildError, ErrorKind, PickleError};
pub use intern::{Atoms, BigIntId, BytesId, Interner, StrId};
pub use store::{Items, Store, StoreError};
pub use value::{ObjId, Value};
pub use vm::{Builder, Limits, Unpickler};
