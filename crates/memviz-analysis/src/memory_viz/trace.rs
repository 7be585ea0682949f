//! `memviz trace`: memory_viz's `trace` listing (SEMANTICS.md §8 "trace"), a Python-like line per
//! trace event of each device: `a = seg_0[offset:size]`, `del a # size`,
//! `# free completed for a size`, `b = cudaMalloc(addr, size)`, `cudaFree(b) # size`,
//! `raise OutOfMemoryError # X requested, Y free in CUDA`, `# annotate a: <metadata>`, and the
//! event as a dict for any other action. Names run `a`…`z`, `a1`…`z1`, … and are never reused.

use std::collections::BTreeMap;
use std::io::{self, Write};

use memviz_snapshot::{Action, DeviceTrace, Snapshot, NO_STR};
use rustc_hash::FxHashMap;

use super::py_bytes;

/// The `n`-th name: `a`…`z`, then `a1`…`z1`, `a2`, ….
#[must_use]
pub fn trace_name(n: u64) -> String {
    let letter = char::from(b'a' + (n % 26) as u8);
    match n / 26 {
        0 => letter.to_string(),
        r => format!("{letter}{r}"),
    }
}

/// The final segments of one device by address: (address, allocated_size, index in the file).
struct FinalSegments(Vec<(u64, u64, usize)>);

impl FinalSegments {
    fn new(snap: &Snapshot, device: i64) -> Self {
        let mut v: Vec<(u64, u64, usize)> = snap
            .segments
            .iter()
            .enumerate()
            .filter(|(_, s)| s.device == device)
            .map(|(i, s)| (s.address, s.allocated_size, i))
            .collect();
        v.sort_unstable();
        FinalSegments(v)
    }

    /// The first segment (in file order) whose `[address, address + allocated_size)` holds
    /// `addr`: (index, address).
    fn find(&self, addr: u64) -> Option<(usize, u64)> {
        let end = self.0.partition_point(|s| s.0 <= addr);
        self.0
            .get(..end)
            .unwrap_or(&[])
            .iter()
            .rev()
            .take(8)
            .filter(|s| addr - s.0 < s.1)
            .map(|s| (s.2, s.0))
            .min()
    }
}

/// A string of the file shown on one line: control characters, quotes and backslashes escaped.
fn one_line(s: &str) -> String {
    s.escape_debug().to_string()
}

/// Writes the listing of `device`'s trace: `Device <d> ----------------`, `<n> entries`, a
/// line per event and `TOTAL MEM: <bytes allocated at the end of the trace>`.
pub fn write_device_trace(
    w: &mut dyn Write,
    snap: &Snapshot,
    device: i64,
    tr: &DeviceTrace,
) -> io::Result<()> {
    writeln!(w, "Device {device} ----------------")?;
    writeln!(w, "{} entries", tr.len())?;
    let finals = FinalSegments::new(snap, device);
    // Live cudaMalloc ranges of the trace by address: (end, name).
    let mut cuda: BTreeMap<u64, (u64, String)> = BTreeMap::new();
    let mut allocs: FxHashMap<u64, String> = FxHashMap::default();
    let mut next = 0u64;
    let mut name = || {
        let n = trace_name(next);
        next += 1;
        n
    };
    let mut total: i128 = 0;
    let b = |v: u64| py_bytes(i128::from(v));
    for i in 0..tr.len() {
        let (Some(action), Some(addr), Some(size)) = (tr.action(i), tr.addr(i), tr.size(i)) else {
            continue;
        };
        let known = |allocs: &FxHashMap<u64, String>| {
            allocs
                .get(&addr)
                .cloned()
                .unwrap_or_else(|| addr.to_string())
        };
        match action {
            Action::Alloc => {
                let n = name();
                let seg = cuda
                    .range(..=addr)
                    .next_back()
                    .filter(|(_, (end, _))| addr < *end)
                    .map(|(&a, (_, n))| (n.clone(), a))
                    .or_else(|| finals.find(addr).map(|(k, a)| (format!("seg_{k}"), a)));
                let (seg, offset) = match seg {
                    Some((s, a)) => (s, addr - a),
                    None => ("MEM".to_string(), addr),
                };
                writeln!(w, "{n} = {seg}[{offset}:{}]", b(size))?;
                allocs.insert(addr, n);
                total += i128::from(size);
            }
            Action::FreeRequested => writeln!(w, "del {} # {}", known(&allocs), b(size))?,
            Action::FreeCompleted => {
                writeln!(w, "# free completed for {} {}", known(&allocs), b(size))?;
                allocs.remove(&addr);
                total -= i128::from(size);
            }
            Action::SegmentAlloc => {
                let n = name();
                writeln!(w, "{n} = cudaMalloc({addr}, {})", b(size))?;
                cuda.insert(addr, (addr.saturating_add(size), n));
            }
            Action::SegmentFree => {
                let n = cuda.remove(&addr).map_or_else(|| addr.to_string(), |c| c.1);
                writeln!(w, "cudaFree({n}) # {}", b(size))?;
            }
            Action::Oom => {
                let free = tr.device_free_of(i as u32).unwrap_or(0);
                writeln!(
                    w,
                    "raise OutOfMemoryError # {} requested, {} free in CUDA",
                    b(size),
                    b(free)
                )?;
            }
            Action::Annotate => {
                let meta = tr.user_metadata.get(i).unwrap_or(NO_STR);
                writeln!(
                    w,
                    "# annotate {}: {}",
                    known(&allocs),
                    one_line(snap.str(meta))
                )?;
            }
            other => {
                let stream = tr.stream.get(i).unwrap_or(0);
                writeln!(
                    w,
                    "{{'action': '{}', 'addr': {addr}, 'size': {size}, 'stream': {stream}}}",
                    one_line(snap.action_name(other))
                )?;
            }
        }
    }
    writeln!(w, "TOTAL MEM: {}", py_bytes(total))
}

/// Writes [`write_device_trace`] for `device`, or (`None`) for every device whose trace is not
/// empty, in device order.
pub fn write_trace(w: &mut dyn Write, snap: &Snapshot, device: Option<i64>) -> io::Result<()> {
    for (d, tr) in snap.traces.iter().enumerate() {
        let d = d as i64;
        let wanted = match device {
            Some(x) => x == d,
            None => !tr.is_empty(),
        };
        if wanted {
            write_device_trace(w, snap, d, tr)?;
        }
    }
    Ok(())
}
