//! A snapshot from a file cut before STOP.

use super::*;

/// What [`SnapshotBuilder::recover`] found in a file that ends before STOP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// Whole segments read.
    pub segments: usize,
    /// The segment list was read to its end (false: the cut is inside it).
    pub segments_complete: bool,
    /// Whole trace events read, over every device.
    pub events: usize,
    /// The device whose trace the cut is in (None: no trace was being read).
    pub cut_device: Option<usize>,
    /// `device_traces` was read to its end.
    pub traces_complete: bool,
    /// The top-level dict was complete: only STOP was missing.
    pub only_stop_missing: bool,
}

impl SnapshotBuilder {
    /// A snapshot from a file that ends before STOP: every whole segment and trace event read
    /// before the cut, or an error when there is none (or the layout is not recognised).
    ///
    /// The containers not yet inside another one are exactly the values still open on the
    /// pickle VM's stack, in the order they were created. For the layout every producer writes
    /// (`{segments: [...], device_traces: [[...], ...], ...}`, segments first, FORMAT.md §2)
    /// that is: the top-level dict, the segment list, then either the whole segments read so
    /// far (a cut inside the segment list) or the `device_traces` list, its device lists so far
    /// and the events of the last one not yet appended to it (a cut inside the traces). A
    /// record cut in the middle is dropped; so are the keys after `device_traces`.
    pub(crate) fn recover(
        mut self,
        atoms: Atoms,
        protocol: u8,
    ) -> Result<(Snapshot, Recovered), BuildError> {
        let open: Vec<u32> = (0..self.objs.len() as u32)
            .filter(|&i| !self.is_consumed(i))
            .collect();
        let mut it = open.iter().copied().peekable();
        let Some(root) = it.next() else {
            return Err(BuildError::Unexpected(
                "nothing was read before the cut".into(),
            ));
        };
        let mut rec = Recovered::default();
        let bare = match self.objs.get(root as usize) {
            Some(Obj::Dict(EMPTY)) => false,
            Some(Obj::Dict(idx)) => {
                // The top-level dict got its items: only STOP is missing.
                let pairs = self.items(idx);
                let k = &self.keys;
                if Self::get(&pairs, k.segments).is_none()
                    && Self::get(&pairs, k.device_traces).is_none()
                {
                    return Err(BuildError::Unexpected(
                        "the top level read before the cut is not a memory snapshot".into(),
                    ));
                }
                let snap = self.finish(Value::Obj(ObjId(root)), atoms, protocol)?;
                rec.segments = snap.segments.len();
                rec.segments_complete = true;
                rec.events = snap.traces.iter().map(DeviceTrace::len).sum();
                rec.traces_complete = true;
                rec.only_stop_missing = true;
                return Ok((snap, rec));
            }
            Some(Obj::List(_) | Obj::Events(_)) => true,
            _ => {
                return Err(BuildError::Unexpected(
                    "the top level read before the cut is not a memory snapshot".into(),
                ))
            }
        };
        let is_list = |b: &Self, i: u32| {
            matches!(b.objs.get(i as usize), Some(Obj::List(_) | Obj::Events(_)))
        };
        // The segment list: the top level itself (a bare list), or the first value in the dict.
        let seg_list = if bare {
            Some(root)
        } else {
            it.next_if(|&i| is_list(&self, i))
        };
        let mut segments: Vec<Value> = Vec::new();
        let seg_obj = seg_list.and_then(|l| self.objs.get(l as usize));
        if let Some(Obj::Events(_)) = seg_obj {
            return Err(BuildError::Unexpected(
                "the first value read before the cut is not a list of segments".into(),
            ));
        }
        if let Some(Obj::List(idx)) = seg_obj {
            segments.extend_from_slice(&self.items(idx));
            if !segments
                .iter()
                .all(|v| matches!(self.obj(*v), Some(Obj::Dict(_) | Obj::Segment(_))))
            {
                return Err(BuildError::Unexpected(
                    "the first value read before the cut is not a list of segments".into(),
                ));
            }
        }
        // Whole segments not yet appended to the list (the cut is inside the segment list).
        let mut pending_segments = false;
        while let Some(i) = it.next_if(|&i| self.is_segment_dict(i)) {
            segments.push(Value::Obj(ObjId(i)));
            pending_segments = true;
        }
        rec.segments = segments.len();
        let mut traces: Option<Vec<Value>> = None;
        if !bare && !pending_segments {
            if let Some(d) = it.next_if(|&i| is_list(&self, i)) {
                rec.segments_complete = true;
                match self.objs.get(d as usize) {
                    Some(Obj::List(idx)) if idx != EMPTY => {
                        // `device_traces` was read to its end.
                        rec.traces_complete = true;
                        traces = Some(self.items(idx));
                    }
                    Some(Obj::Events(run)) => {
                        rec.traces_complete = true;
                        traces = Some(self.event_run_values(run));
                    }
                    _ => {
                        // The device lists read so far; the cut is in the last one.
                        let mut lists: Vec<u32> = Vec::new();
                        while let Some(t) = it.next_if(|&i| self.is_trace_list(i)) {
                            lists.push(t);
                        }
                        let mut tail: Vec<Value> = Vec::new();
                        while let Some(e) = it
                            .next_if(|&i| matches!(self.objs.get(i as usize), Some(Obj::Event(_))))
                        {
                            tail.push(Value::Obj(ObjId(e)));
                        }
                        let mut out: Vec<Value> =
                            lists.iter().map(|&t| Value::Obj(ObjId(t))).collect();
                        if let Some(last) = lists.last() {
                            rec.cut_device = Some(lists.len() - 1);
                            if !tail.is_empty() {
                                let mut items = match self.objs.get(*last as usize) {
                                    Some(Obj::List(idx)) => self.items(idx),
                                    Some(Obj::Events(run)) => self.event_run_values(run),
                                    _ => Vec::new(),
                                };
                                items.extend_from_slice(&tail);
                                let l = self.new_list_of(&items)?;
                                if let Some(slot) = out.last_mut() {
                                    *slot = l;
                                }
                            }
                        }
                        traces = Some(out);
                    }
                }
            }
        }
        let seg_value = self.new_list_of(&segments)?;
        let root = if bare {
            seg_value
        } else {
            let mut pairs = vec![Value::Str(self.keys.segments), seg_value];
            if let Some(t) = traces {
                let t = self.new_list_of(&t)?;
                pairs.extend([Value::Str(self.keys.device_traces), t]);
            }
            let idx = self.new_store(&pairs, true)?;
            Value::Obj(self.add(Obj::Dict(idx))?)
        };
        let snap = self.finish(root, atoms, protocol)?;
        rec.events = snap.traces.iter().map(DeviceTrace::len).sum();
        if snap.segments.is_empty() && rec.events == 0 {
            return Err(BuildError::Unexpected(
                "no whole segment or trace event was read before the cut".into(),
            ));
        }
        Ok((snap, rec))
    }

    /// A generic list holding `items` (a value for [`Self::finish`]).
    pub(super) fn new_list_of(&mut self, items: &[Value]) -> Result<Value, BuildError> {
        let idx = if items.is_empty() {
            EMPTY
        } else {
            self.new_store(items, false)?
        };
        Ok(Value::Obj(self.add(Obj::List(idx))?))
    }

    /// A whole segment dict: read as it completed, or its items arrived and include
    /// `total_size` or `blocks`.
    pub(super) fn is_segment_dict(&self, i: u32) -> bool {
        match self.objs.get(i as usize) {
            Some(Obj::Segment(_)) => true,
            Some(Obj::Dict(idx)) if idx != EMPTY => self.items(idx).chunks_exact(2).any(|kv| {
                kv[0] == Value::Str(self.keys.total_size) || kv[0] == Value::Str(self.keys.blocks)
            }),
            _ => false,
        }
    }

    /// A device's trace list: empty so far, or holding only trace events.
    pub(super) fn is_trace_list(&self, i: u32) -> bool {
        match self.objs.get(i as usize) {
            Some(Obj::List(EMPTY) | Obj::Events(_)) => true,
            Some(Obj::List(idx)) => self
                .items(idx)
                .iter()
                .all(|v| matches!(self.obj(*v), Some(Obj::Event(_)))),
            _ => false,
        }
    }
}
