//! The [`Builder`] impl: the unpickler's calls that make and fill containers (new list, dict,
//! tuple; APPEND(S), SETITEM(S)), where trace entries, frame lists, blocks and segments are
//! lowered as they arrive.

use super::*;

impl Builder for SnapshotBuilder {
    fn new_list(&mut self, _: &Atoms) -> Result<ObjId, BuildError> {
        self.add(Obj::List(EMPTY))
    }

    fn new_dict(&mut self, _: &Atoms) -> Result<ObjId, BuildError> {
        self.add(Obj::Dict(EMPTY))
    }

    fn new_tuple(&mut self, items: &[Value], _: &Atoms) -> Result<ObjId, BuildError> {
        self.mark_consumed(items);
        let idx = if items.is_empty() {
            EMPTY
        } else {
            self.new_store(items, false)?
        };
        self.add(Obj::Tuple(idx))
    }

    fn extend_list(
        &mut self,
        list: Value,
        items: &[Value],
        atoms: &Atoms,
    ) -> Result<(), BuildError> {
        self.mark_consumed(items);
        let Value::Obj(ObjId(i)) = list else {
            return Err(BuildError::Corrupt(format!(
                "APPENDS onto a {}, expected a list",
                list.type_name()
            )));
        };
        match self.objs.get(i as usize) {
            Some(Obj::List(EMPTY)) if items.is_empty() => Ok(()),
            Some(Obj::List(EMPTY)) => {
                // A trace list: a run of consecutive event rows, kept as (first row, count).
                if let Some(first) = items.first().and_then(|v| self.event_row(*v)) {
                    let consecutive = items
                        .iter()
                        .enumerate()
                        .all(|(k, v)| self.event_row(*v) == first.checked_add(k as u32));
                    if consecutive {
                        let run = u32::try_from(self.runs.len())
                            .map_err(|_| BuildError::Limit("too many trace lists".into()))?;
                        room(&mut self.runs, "the trace lists")?;
                        self.runs.push((first, items.len() as u32));
                        self.objs.set(i as usize, Obj::Events(run));
                        return Ok(());
                    }
                }
                // A frame list (a traceback): intern it now instead of keeping its items.
                let slot = match self.intern_stack(items, atoms, true)? {
                    Some(id) => Obj::FreshStack(id),
                    None => Obj::List(self.new_store(items, false)?),
                };
                self.objs.set(i as usize, slot);
                self.budget.check()
            }
            Some(Obj::List(idx)) => {
                let idx = self.extend_store(idx, items, false)?;
                self.objs.set(i as usize, Obj::List(idx));
                Ok(())
            }
            Some(Obj::Events(run)) => {
                let (start, len) = self.runs.get(run as usize).copied().unwrap_or((0, 0));
                let next = start.saturating_add(len);
                let consecutive = items
                    .iter()
                    .enumerate()
                    .all(|(k, v)| self.event_row(*v) == next.checked_add(k as u32));
                if consecutive {
                    if let Some(r) = self.runs.get_mut(run as usize) {
                        r.1 = len.saturating_add(items.len() as u32);
                    }
                    return Ok(());
                }
                // No longer a run: a generic list from here on.
                let mut v = self.event_run_values(run);
                v.extend_from_slice(items);
                let idx = self.new_store(&v, false)?;
                self.objs.set(i as usize, Obj::List(idx));
                Ok(())
            }
            Some(Obj::FreshStack(s)) => {
                // A second batch (a stack of more than 1 000 frames, as CPython writes it).
                self.open_stack(i, s, false, items, atoms)?;
                self.budget.check()
            }
            Some(Obj::Stack(s)) => {
                // A frame list extended after it was used (never done by real producers): the
                // next use interns it again, charged to the budget.
                self.open_stack(i, s, true, items, atoms)?;
                self.budget.check()
            }
            Some(Obj::OpenStack(k)) => {
                self.extend_open(k, items, atoms)?;
                self.budget.check()
            }
            _ => Err(BuildError::Corrupt(
                "APPENDS onto something that is not a list".into(),
            )),
        }
    }

    fn set_items(&mut self, dict: Value, pairs: &[Value], atoms: &Atoms) -> Result<(), BuildError> {
        let Value::Obj(ObjId(i)) = dict else {
            self.mark_consumed(pairs);
            return Err(BuildError::Corrupt(format!(
                "SETITEMS onto a {}, expected a dict",
                dict.type_name()
            )));
        };
        let action = Value::Str(self.keys.action);
        let obj = self.objs.get(i as usize);
        if let Some(Obj::Dict(EMPTY)) = obj {
            if pairs.first() == Some(&action) || pairs.chunks_exact(2).any(|kv| kv[0] == action) {
                // A trace entry: lower it to a row right away (which marks its containers).
                let row = self.apply_event(None, pairs, atoms);
                self.objs.set(i as usize, Obj::Event(row));
                return self.budget.check();
            }
        }
        self.mark_consumed(pairs);
        match obj {
            Some(Obj::Dict(EMPTY)) => {
                let slot = if let Some(record) = self.lower_record(pairs, atoms)? {
                    record
                } else {
                    Obj::Dict(self.new_store(pairs, true)?)
                };
                self.objs.set(i as usize, slot);
                self.budget.check()
            }
            Some(Obj::Dict(idx)) => {
                let idx = self.extend_store(idx, pairs, true)?;
                self.objs.set(i as usize, Obj::Dict(idx));
                Ok(())
            }
            Some(Obj::Event(row)) => {
                self.apply_event(Some(row), pairs, atoms);
                self.budget.check()
            }
            Some(Obj::Segment(_) | Obj::Block(_) | Obj::PlacedBlock(_)) => Err(
                BuildError::Unexpected(
                    "SETITEMS onto a segment or block dict that was already read (its items in two parts)"
                        .into(),
                ),
            ),
            _ => Err(BuildError::Corrupt(
                "SETITEMS onto something that is not a dict".into(),
            )),
        }
    }
}
