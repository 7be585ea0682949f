//! A generic builder: containers as plain vectors. For tests, tools and oracles; the snapshot
//! model uses its own builder that lowers records while parsing.

use crate::intern::Atoms;
use crate::value::{ObjId, Value};
use crate::vm::{Builder, Unpickler};
use crate::{BuildError, PickleError};

#[derive(Debug, Clone, PartialEq)]
pub enum Obj {
    List(Vec<Value>),
    /// Key/value pairs in insertion order (a later equal key replaces the value, as in Python).
    Dict(Vec<(Value, Value)>),
    Tuple(Vec<Value>),
}

#[derive(Default, Debug)]
pub struct TreeBuilder {
    pub objs: Vec<Obj>,
}

impl TreeBuilder {
    pub fn get(&self, v: Value) -> Option<&Obj> {
        match v {
            Value::Obj(ObjId(i)) => self.objs.get(i as usize),
            _ => None,
        }
    }

    fn add(&mut self, o: Obj) -> Result<ObjId, BuildError> {
        let id = u32::try_from(self.objs.len())
            .map_err(|_| BuildError::Limit("too many containers".into()))?;
        self.objs.push(o);
        Ok(ObjId(id))
    }

    fn obj_mut(&mut self, v: Value) -> Result<&mut Obj, BuildError> {
        match v {
            Value::Obj(ObjId(i)) => self
                .objs
                .get_mut(i as usize)
                .ok_or_else(|| BuildError::Corrupt("unknown container".into())),
            other => Err(BuildError::Corrupt(format!(
                "expected a container, found {}",
                other.type_name()
            ))),
        }
    }
}

impl Builder for TreeBuilder {
    fn new_list(&mut self, _: &Atoms) -> Result<ObjId, BuildError> {
        self.add(Obj::List(Vec::new()))
    }
    fn new_dict(&mut self, _: &Atoms) -> Result<ObjId, BuildError> {
        self.add(Obj::Dict(Vec::new()))
    }
    fn new_tuple(&mut self, items: &[Value], _: &Atoms) -> Result<ObjId, BuildError> {
        self.add(Obj::Tuple(items.to_vec()))
    }
    fn extend_list(&mut self, list: Value, items: &[Value], _: &Atoms) -> Result<(), BuildError> {
        match self.obj_mut(list)? {
            Obj::List(v) => {
                v.extend_from_slice(items);
                Ok(())
            }
            _ => Err(BuildError::Corrupt(
                "APPEND(S) onto something that is not a list".into(),
            )),
        }
    }
    fn set_items(&mut self, dict: Value, pairs: &[Value], _: &Atoms) -> Result<(), BuildError> {
        match self.obj_mut(dict)? {
            Obj::Dict(d) => {
                for kv in pairs.chunks_exact(2) {
                    if let Some(slot) = d.iter_mut().find(|(k, _)| *k == kv[0]) {
                        slot.1 = kv[1];
                    } else {
                        d.push((kv[0], kv[1]));
                    }
                }
                Ok(())
            }
            _ => Err(BuildError::Corrupt(
                "SETITEM(S) onto something that is not a dict".into(),
            )),
        }
    }
}

/// Parse a whole buffer into a generic tree.
pub fn parse_tree(bytes: &[u8]) -> Result<(Value, Atoms, TreeBuilder), PickleError> {
    let mut u = Unpickler::new(TreeBuilder::default());
    u.push(bytes)?;
    u.finish()
}

/// Render a value as Python-like text (for tests and debugging). Dict keys keep file order.
/// Containers can refer to themselves through the memo, so output stops at depth 64 and after
/// 100 000 values, with `...`.
pub fn render(v: Value, atoms: &Atoms, tree: &TreeBuilder, out: &mut String) {
    let mut budget = 100_000usize;
    render_bounded(v, atoms, tree, out, 0, &mut budget);
}

fn render_bounded(
    v: Value,
    atoms: &Atoms,
    tree: &TreeBuilder,
    out: &mut String,
    depth: u32,
    budget: &mut usize,
) {
    use std::fmt::Write;
    if depth > 64 || *budget == 0 {
        out.push_str("...");
        return;
    }
    *budget -= 1;
    let items = |items: &[Value], out: &mut String, budget: &mut usize| {
        for (i, it) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            render_bounded(*it, atoms, tree, out, depth + 1, budget);
        }
    };
    match v {
        Value::None => out.push_str("None"),
        Value::Bool(b) => out.push_str(if b { "True" } else { "False" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::BigInt(id) => match atoms.big_int_i128(id) {
            Some(i) => {
                let _ = write!(out, "{i}");
            }
            None => out.push_str("<bigint>"),
        },
        Value::Float(f) => {
            let _ = write!(out, "{f:?}");
        }
        Value::Str(s) => {
            let _ = write!(out, "{:?}", atoms.str(s));
        }
        Value::Bytes(b) => {
            let _ = write!(out, "b{:?}", atoms.bytes(b));
        }
        Value::Obj(_) => match tree.get(v) {
            Some(Obj::List(list)) => {
                out.push('[');
                items(list, out, budget);
                out.push(']');
            }
            Some(Obj::Tuple(t)) => {
                out.push('(');
                items(t, out, budget);
                if t.len() == 1 {
                    out.push(',');
                }
                out.push(')');
            }
            Some(Obj::Dict(pairs)) => {
                out.push('{');
                for (i, (k, val)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    render_bounded(*k, atoms, tree, out, depth + 1, budget);
                    out.push_str(": ");
                    render_bounded(*val, atoms, tree, out, depth + 1, budget);
                }
                out.push('}');
            }
            None => out.push_str("<?>"),
        },
    }
}
