//! Tables read straight from the model: trace, frames, stacks, segments.

use crate::build::{coded, Columns, Dict};
use crate::TableError;
use arrow_array::types::{Int64Type, UInt32Type, UInt64Type};
use arrow_array::{ArrayRef, ListArray, RecordBatch, UInt32Array};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};
use memviz_analysis::site::SiteCache;
use memviz_snapshot::{Action, FrameId, Snapshot, StackId, StrId, NO_STR, NO_TIME};
use std::sync::Arc;

/// The trace of `device` (None: every device's, one after the other), one row per event:
/// `event` (the row in the device's trace), `device`, `action` (a dictionary of the names as
/// written), `address`, `size`, `stream` (the raw `cudaStream_t`), `time_us` (null without a
/// time), `stack` (a stack id of [`stacks`]), `compile_context` and `user_metadata` (null when
/// absent).
pub fn trace(snap: &Snapshot, device: Option<i64>) -> Result<RecordBatch, TableError> {
    trace_with(snap, device, None)
}

/// [`trace`], its `stack` column shared with `snap` when the table is one device's trace:
/// the model's own vector of stack ids, which Arrow (and pyarrow, polars, DuckDB after it)
/// reads in place; the table keeps the snapshot alive. The model's other trace columns are
/// compact codes (distinct-value tables, time offsets per chunk, runs), which a table must
/// decode.
pub fn trace_shared(snap: &Arc<Snapshot>, device: Option<i64>) -> Result<RecordBatch, TableError> {
    trace_with(snap, device, Some(snap))
}

/// The bytes of device `device`'s stack column, owned through the snapshot.
struct StackBytes {
    snap: Arc<Snapshot>,
    device: i64,
}

impl AsRef<[u8]> for StackBytes {
    fn as_ref(&self) -> &[u8] {
        self.snap
            .trace(self.device)
            .map_or(&[], |t| bytemuck::cast_slice(t.stacks()))
    }
}

fn trace_with(
    snap: &Snapshot,
    device: Option<i64>,
    shared: Option<&Arc<Snapshot>>,
) -> Result<RecordBatch, TableError> {
    let devices: Vec<(i64, &memviz_snapshot::DeviceTrace)> = (0..snap.traces.len() as i64)
        .filter(|d| device.is_none_or(|w| w == *d))
        .filter_map(|d| snap.trace(d).map(|t| (d, t)))
        .collect();
    let rows: usize = devices.iter().map(|(_, t)| t.len()).sum();
    // One device whose stack column has a row per event: share it.
    let share = match (shared, devices.as_slice()) {
        (Some(a), [(d, t)]) if t.stacks().len() == t.len() => Some(StackBytes {
            snap: Arc::clone(a),
            device: *d,
        }),
        _ => None,
    };
    let mut event: Vec<u32> = Vec::with_capacity(rows);
    let mut dev: Vec<i64> = Vec::with_capacity(rows);
    let mut codes: Vec<u8> = Vec::with_capacity(rows);
    let mut addr: Vec<u64> = Vec::with_capacity(rows);
    let mut size: Vec<u64> = Vec::with_capacity(rows);
    let mut stream: Vec<u64> = Vec::with_capacity(rows);
    let mut time: Vec<i64> = Vec::with_capacity(rows);
    let mut timed: Vec<bool> = Vec::with_capacity(rows);
    let mut stack: Vec<u32> = Vec::with_capacity(rows);
    let mut cc: Dict<StrId> = Dict::with_capacity(rows);
    let mut um: Dict<StrId> = Dict::with_capacity(rows);
    for (d, t) in devices {
        let n = t.len();
        event.extend(0..n as u32);
        dev.extend(std::iter::repeat_n(d, n));
        codes.extend(t.actions().map(Action::code));
        addr.extend(t.addrs());
        size.extend(t.sizes());
        stream.extend(t.stream.iter().chain(std::iter::repeat(0)).take(n));
        if t.has_time() {
            for x in t.times().chain(std::iter::repeat(NO_TIME)).take(n) {
                time.push(if x == NO_TIME { 0 } else { x });
                timed.push(x != NO_TIME);
            }
        } else {
            time.extend(std::iter::repeat_n(0, n));
            timed.extend(std::iter::repeat_n(false, n));
        }
        if share.is_none() {
            stack.extend(
                t.stacks()
                    .iter()
                    .map(|s| s.0)
                    .chain(std::iter::repeat(0))
                    .take(n),
            );
        }
        for (col, dict) in [(&t.compile_context, &mut cc), (&t.user_metadata, &mut um)] {
            for s in col.iter().chain(std::iter::repeat(NO_STR)).take(n) {
                if s == NO_STR {
                    dict.push_null();
                } else {
                    dict.push(s, || snap.str(s).to_string());
                }
            }
        }
    }
    // The action codes that occur, renumbered: a dictionary of distinct names.
    let mut used = [u8::MAX; 256];
    let mut names: Vec<String> = Vec::new();
    for c in &mut codes {
        let slot = &mut used[*c as usize];
        if *slot == u8::MAX {
            *slot = names.len() as u8;
            names.push(snap.action_name(Action::from_code(*c)).to_string());
        }
        *c = *slot;
    }
    let mut out = Columns::new();
    out.values::<UInt32Type>("event", event);
    out.values::<Int64Type>("device", dev);
    out.add("action", coded(codes, names)?, false);
    out.values::<UInt64Type>("address", addr);
    out.values::<UInt64Type>("size", size);
    out.values::<UInt64Type>("stream", stream);
    out.masked::<Int64Type>("time_us", time, timed)?;
    match share {
        Some(owner) => {
            let n = owner.as_ref().len() / 4;
            let buffer = arrow_buffer::Buffer::from(bytes::Bytes::from_owner(owner));
            let values = ScalarBuffer::<u32>::new(buffer, 0, n);
            out.add("stack", Arc::new(UInt32Array::new(values, None)), false);
        }
        None => out.values::<UInt32Type>("stack", stack),
    }
    out.add("compile_context", cc.into_array()?, true);
    out.add("user_metadata", um.into_array()?, true);
    out.finish()
}

/// Every frame: `frame` (its id, as in [`stacks`]), `filename`, `line`, `name`, and `kind`
/// (`user`, `library`, `interpreter` or `native`: memviz's frame classifier under the user
/// code of `sites`).
pub fn frames(snap: &Snapshot, sites: &mut SiteCache) -> Result<RecordBatch, TableError> {
    let n = snap.frames.len();
    let mut kinds: Dict<&'static str> = Dict::with_capacity(n);
    for i in 0..n {
        let k = sites.frame_kind(snap, FrameId(i as u32)).as_str();
        kinds.push(k, || k.to_string());
    }
    let mut out = Columns::new();
    out.values::<UInt32Type>("frame", (0..n as u32).collect());
    out.strings("filename", snap.frames.iter().map(|f| snap.str(f.filename)));
    out.values::<Int64Type>("line", snap.frames.iter().map(|f| f.line).collect());
    out.strings("name", snap.frames.iter().map(|f| snap.str(f.name)));
    out.add("kind", kinds.into_array()?, false);
    out.finish()
}

/// Every interned stack: `stack` (its id) and `frames` (a list of frame ids, innermost first).
/// Stack 0 is the empty stack.
pub fn stacks(snap: &Snapshot) -> Result<RecordBatch, TableError> {
    let n = snap.stacks.len();
    let mut offsets: Vec<i32> = Vec::with_capacity(n + 1);
    let mut flat: Vec<u32> = Vec::new();
    offsets.push(0);
    for i in 0..n {
        flat.extend(snap.stack(StackId(i as u32)).iter().map(|f| f.0));
        let end = i32::try_from(flat.len())
            .map_err(|_| TableError::BadArgument("more than 2^31 frames in stacks".into()))?;
        offsets.push(end);
    }
    let item = Arc::new(Field::new("item", DataType::UInt32, false));
    let values: ArrayRef = Arc::new(UInt32Array::new(ScalarBuffer::from(flat), None));
    // The offsets ascend from 0 by construction.
    let list = ListArray::try_new(
        item,
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        values,
        None,
    )?;
    let mut out = Columns::new();
    out.values::<UInt32Type>("stack", (0..n as u32).collect());
    out.add("frames", Arc::new(list), false);
    out.finish()
}

/// The snapshot's segments (the state at the end): `device`, `address`, `total_size`,
/// `allocated_size`, `active_size`, `requested_size`, `stream`, `segment_type`, `pool_id_0`,
/// `pool_id_1` (`segment_pool_id`), `is_expandable`, `stack`, `blocks` (how many).
pub fn segments(snap: &Snapshot) -> Result<RecordBatch, TableError> {
    let s = &snap.segments;
    let mut types: Dict<StrId> = Dict::with_capacity(s.len());
    for seg in s {
        types.push(seg.segment_type, || snap.str(seg.segment_type).to_string());
    }
    let mut out = Columns::new();
    out.values::<Int64Type>("device", s.iter().map(|x| x.device).collect());
    out.values::<UInt64Type>("address", s.iter().map(|x| x.address).collect());
    out.values::<UInt64Type>("total_size", s.iter().map(|x| x.total_size).collect());
    out.values::<UInt64Type>(
        "allocated_size",
        s.iter().map(|x| x.allocated_size).collect(),
    );
    out.values::<UInt64Type>("active_size", s.iter().map(|x| x.active_size).collect());
    out.values::<UInt64Type>(
        "requested_size",
        s.iter().map(|x| x.requested_size).collect(),
    );
    out.values::<UInt64Type>("stream", s.iter().map(|x| x.stream).collect());
    out.add("segment_type", types.into_array()?, false);
    out.values::<Int64Type>("pool_id_0", s.iter().map(|x| x.pool_id.0).collect());
    out.values::<Int64Type>("pool_id_1", s.iter().map(|x| x.pool_id.1).collect());
    out.bools("is_expandable", s.iter().map(|x| x.is_expandable).collect());
    out.values::<UInt32Type>("stack", s.iter().map(|x| x.stack.0).collect());
    out.values::<UInt32Type>(
        "blocks",
        s.iter()
            .map(|x| x.blocks.1.saturating_sub(x.blocks.0))
            .collect(),
    );
    out.finish()
}
