//! The commands of PyTorch's `_memory_viz.py` (SEMANTICS.md §8), over the final segments and
//! the trace ([`memviz_analysis::memory_viz`]):
//! * `memviz stats FILE [--device D]`: memory_viz's segment summary (pages, internal and
//!   external free, totals);
//! * `memviz trace FILE [--device D]`: the event listing of each device's trace;
//! * `memviz segments FILE [--device D] [--svg OUT]`: folded lines of reserved memory,
//!   `stream_<s>;seg_<address>;<state>;<frames> <bytes>`, free space (`<free>`) and rounding
//!   (`<gaps>`) as frames of their own: the fragmentation flamegraph;
//! * `memviz memory FILE [--device D] [--svg OUT]`: the same without the `seg_` level.
//!
//! These are reports over the file: every device unless `--device`.

use crate::cli::{FileDeviceArgs, ReservedArgs};
use crate::device::report_devices;
use crate::load;
use crate::out::{stdout, Done};
use memviz_analysis::memory_viz::{self, ReservedBy};

/// Runs `memviz stats`.
pub fn stats(a: &FileDeviceArgs) -> Done {
    let snap = load(&a.file)?;
    let device = report_devices(&a.file, &snap, a.device)?;
    let st = memory_viz::stats(&snap, device);
    let mut out = stdout();
    memory_viz::write_stats(&mut out, &st)?;
    out.finish()
}

/// Runs `memviz trace`.
pub fn trace(a: &FileDeviceArgs) -> Done {
    let snap = load(&a.file)?;
    let device = report_devices(&a.file, &snap, a.device)?;
    let mut out = stdout();
    memory_viz::write_trace(&mut out, &snap, device)?;
    out.finish()
}

/// Runs `memviz segments` (`by` = [`ReservedBy::Segment`]) or `memviz memory`.
pub fn reserved(a: &ReservedArgs, by: ReservedBy) -> Done {
    let snap = load(&a.file)?;
    let device = report_devices(&a.file, &snap, a.device)?;
    if let Some(path) = &a.svg {
        let mut folded = Vec::new();
        memory_viz::write_reserved(&mut folded, &snap, device, by)?;
        let what = match by {
            ReservedBy::Segment => "Reserved memory by segment, state and stack",
            ReservedBy::Stream => "Reserved memory by stream, state and stack",
        };
        return crate::svg::write_svg(&folded, path, what, "bytes");
    }
    let mut out = stdout();
    memory_viz::write_reserved(&mut out, &snap, device, by)?;
    out.finish()
}
