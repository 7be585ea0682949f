//! The text commands of PyTorch's `_memory_viz.py` (SEMANTICS.md §8), over the final segments
//! and the trace: `stats` ([`stats()`]: memory_viz's `segsum`), `trace` ([`write_trace`]) and the
//! folded lines of reserved memory by segment, block state and stack ([`reserved_lines`]: the
//! `segments` and `memory` commands, the fragmentation flamegraph). The CLI prints them; the
//! viewer's flamegraph builds its "reserved memory at the end" tree from [`reserved_entries`],
//! the same lines.
//!
//! # Where memviz differs from the reference (on purpose)
//! * Frame file names are cut at the last `/` **or** `\` ([`crate::frames::basename`]): the
//!   reference splits on `/` only, which keeps whole Windows paths (§9).
//! * `trace`'s trailer `TOTAL MEM:` is the bytes still allocated at the end of the trace
//!   (Σ `alloc` − Σ `free_completed`); the reference prints its loop index plus the last
//!   allocation's size (§9). Each device's trailer ends its line.
//! * Folded lines: an `inactive` block is one line `…;inactive;<free> size` (the reference
//!   prints the block's stale stack and stale `requested_size`, then a `<gaps>` line that can
//!   be negative). An active block whose `requested_size` exceeds its size counts its size.
//!   So every count is ≥ 0 and a segment's lines add up to the sizes of its blocks; blocks that
//!   cover less than `total_size` leave a `<unaccounted>` line for the rest. A stack whose frames
//!   the filter drops entirely prints [`crate::flame::ALL_FILTERED`] (the reference: an empty
//!   frame). Lines with a count of 0 are left out.
//! * The trace listing names a segment `seg_k` only from the final segments of the trace's own
//!   device (`k` still counts every segment of the file, as the reference does), and a trace
//!   segment's `cudaMalloc` name stops covering addresses after its `cudaFree`.

mod reserved;
mod stats;
mod trace;

pub use reserved::*;
pub use stats::*;
pub use trace::*;

use crate::format::size_short;

/// memory_viz's `Bytes` (`{:3.1f}` and a binary unit, e.g. `2.0MiB`, `512.0B`), signed.
#[must_use]
pub fn py_bytes(v: i128) -> String {
    let s = size_short(u64::try_from(v.unsigned_abs()).unwrap_or(u64::MAX));
    if v < 0 {
        format!("-{s}")
    } else {
        s
    }
}

#[cfg(test)]
mod tests;
