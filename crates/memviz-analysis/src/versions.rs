//! The parts of memory_viz's annotate step (SEMANTICS.md §2) that the tooltips, the State
//! History, the live table and search share: address versions, the `b…_N` / `s…_N` address
//! labels and stream ordinals.

use memviz_snapshot::{Action, Column, Snapshot};
use rustc_hash::FxHashMap;

/// "No version" (events other than alloc/free/segment ones): printed `_undefined`.
pub const NO_VERSION: u32 = u32::MAX;

/// memory_viz's address label: `b` (a block) or `s` (a segment), the address in hex, `_` and the
/// address's version (how many times it was allocated before), or `_undefined` for
/// [`NO_VERSION`]. The one writer of the `b…_N` labels (tooltips, the State History, search).
pub fn write_address_label(out: &mut String, prefix: char, addr: u64, version: u32) {
    use std::fmt::Write;
    let _ = if version == NO_VERSION {
        write!(out, "{prefix}{addr:x}_undefined")
    } else {
        write!(out, "{prefix}{addr:x}_{version}")
    };
}

/// [`write_address_label`] into a new string.
pub fn address_label(prefix: char, addr: u64, version: u32) -> String {
    let mut s = String::new();
    write_address_label(&mut s, prefix, addr, version);
    s
}

/// The annotate step's address versions for one device: the k-th lifetime of an address is
/// version k (an alloc and its free share it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Versions {
    pub device: i64,
    /// Per trace event of `device` ([`NO_VERSION`] when the action has none). A
    /// `free_completed` merged into its `free_requested` has the request's version.
    pub events: Vec<u32>,
    /// Per block of the snapshot ([`Snapshot::blocks`] order), all devices.
    pub blocks: Vec<u32>,
    /// Per segment of the snapshot ([`Snapshot::segments`] order), all devices.
    pub segments: Vec<u32>,
}

/// Runs the annotate step's two version counters (§2): over every device trace in device order
/// (the counters are shared across devices, as in memory_viz), then over the segments and their
/// blocks in file order. O(total events) with one hash lookup each; keeps the versions of
/// `device`'s events only.
pub fn versions(snap: &Snapshot, device: i64) -> Versions {
    fn ver(map: &mut FxHashMap<u64, u32>, addr: u64, bump: bool) -> u32 {
        let v = map.entry(addr).or_insert(0);
        let r = *v;
        if bump {
            *v = v.saturating_add(1);
        }
        r
    }
    let mut block_ver: FxHashMap<u64, u32> = FxHashMap::default();
    let mut seg_ver: FxHashMap<u64, u32> = FxHashMap::default();
    let mut out = Versions {
        device,
        ..Versions::default()
    };
    for (d, tr) in snap.traces.iter().enumerate() {
        let mine = d as i64 == device;
        if mine {
            out.events.reserve(tr.len());
        }
        for (i, action) in tr.actions().enumerate() {
            let addr = tr.addr(i).unwrap_or(0);
            let v = match action {
                Action::FreeCompleted => ver(&mut block_ver, addr, true),
                Action::FreeRequested | Action::Alloc => ver(&mut block_ver, addr, false),
                Action::SegmentFree | Action::SegmentUnmap => ver(&mut seg_ver, addr, true),
                Action::SegmentAlloc | Action::SegmentMap => ver(&mut seg_ver, addr, false),
                _ => NO_VERSION,
            };
            if mine {
                out.events.push(v);
            }
        }
    }
    out.blocks = vec![NO_VERSION; snap.blocks.len()];
    out.segments = Vec::with_capacity(snap.segments.len());
    for seg in &snap.segments {
        out.segments.push(ver(&mut seg_ver, seg.address, false));
        for bi in seg.blocks.0..seg.blocks.1 {
            if let (Some(b), Some(slot)) = (
                snap.blocks.get(bi as usize),
                out.blocks.get_mut(bi as usize),
            ) {
                *slot = ver(&mut block_ver, b.address, false);
            }
        }
    }
    out
}

/// Raw `cudaStream_t` value → ordinal (§2): 0 is 0, others 1, 2, … in order of first
/// appearance over all traces (device order), then the segments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamOrdinals(FxHashMap<u64, u32>);

impl StreamOrdinals {
    /// The ordinal of a raw stream (every stream in the file has one).
    pub fn get(&self, raw: u64) -> Option<u32> {
        self.0.get(&raw).copied()
    }
    /// Number of distinct streams, stream 0 included.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

pub fn stream_ordinals(snap: &Snapshot) -> StreamOrdinals {
    let mut m: FxHashMap<u64, u32> = FxHashMap::default();
    m.insert(0, 0);
    let add = |raw: u64, m: &mut FxHashMap<u64, u32>| {
        let next = m.len() as u32;
        m.entry(raw).or_insert(next);
    };
    for tr in &snap.traces {
        match &tr.stream {
            Column::Const { value, len } => {
                if *len > 0 {
                    add(*value, &mut m);
                }
            }
            c => {
                let mut last = None;
                for s in c.iter() {
                    if last != Some(s) {
                        add(s, &mut m);
                        last = Some(s);
                    }
                }
            }
        }
    }
    for seg in &snap.segments {
        add(seg.stream, &mut m);
    }
    StreamOrdinals(m)
}
