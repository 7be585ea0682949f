//! `memviz state FILE [--device D] [--event K] [--json]`: the allocator state after event K of the
//! merged event list ([`memviz_analysis::state`]). The history's checkpoints are placed by a
//! byte budget per event ([`History::build_within`]), so their memory stays linear in the trace
//! whatever the state's size along it (an interval chosen from the final state grew with the
//! largest mid-trace state: a trace ending in `empty_cache()` took 1 GB).

use crate::cli::StateArgs;
use crate::load;
use crate::out::{stdout, Done};
use memviz_analysis::state::{History, BYTES_PER_EVENT};
use std::io::Write;

/// Runs `memviz state` with the arguments after the command name.
pub fn run(a: &StateArgs) -> Done {
    let (file, event) = (a.file.as_str(), a.event);
    let snap = load(file)?;
    let device = a.device.unwrap_or_else(|| snap.default_device());
    let history = History::build_within(&snap, device, BYTES_PER_EVENT);
    let n = history.len();
    let (k, st) = if event == -1 {
        (n.checked_sub(1), history.final_state(&snap))
    } else {
        let k = usize::try_from(event)
            .ok()
            .filter(|&k| k < n)
            .ok_or_else(|| {
                format!(
                    "{file}: device {device} has {n} events (merged): --event takes 0 to {} or -1",
                    n.saturating_sub(1)
                )
            })?;
        let st = history
            .state_after(&snap, k)
            .ok_or_else(|| format!("{file}: no event {k} on device {device}"))?;
        (Some(k), st)
    };
    let action = k
        .and_then(|k| history.event(&snap, k))
        .map_or("", |e| e.action_name(&snap, device));
    let line = serde_json::json!({
        "event": event,
        "action": action,
        "reserved_bytes": st.reserved_bytes,
        "allocated_bytes": st.allocated_bytes,
        "segments": st.segments.len(),
        "blocks": st.blocks.len(),
    });
    let mut out = stdout();
    writeln!(out, "{line}")?;
    out.finish()
}
