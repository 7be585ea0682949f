//! `memviz state FILE [--device D] [--event K] [--json]`: the allocator state after event K of the
//! merged event list ([`memviz_analysis::state`]). The history's checkpoints are placed by a
//! byte budget per event ([`History::build_within`]), so their memory stays linear in the trace
//! whatever the state's size along it (an interval chosen from the final state grew with the
//! largest mid-trace state: a trace ending in `empty_cache()` took 1 GB).

use crate::cli::StateArgs;
use crate::load;
use crate::out::{stdout, Done, Fail};
use memviz_analysis::state::{History, BYTES_PER_EVENT};
use serde::Serialize;
use std::io::Write;

/// `memviz state`'s answer (its one JSON line).
#[derive(Clone, Debug, Serialize)]
pub struct StateAnswer {
    /// The merged event index asked for (-1: the final state).
    pub event: i64,
    /// That event's action (`alloc`, `free`, …; empty without events).
    pub action: String,
    /// Reserved bytes after it.
    pub reserved_bytes: u64,
    /// Allocated bytes after it.
    pub allocated_bytes: u64,
    /// Segments after it.
    pub segments: u64,
    /// Blocks after it.
    pub blocks: u64,
}

/// Runs `memviz state` with the arguments after the command name.
pub fn run(a: &StateArgs) -> Done {
    let line = serde_json::to_string(&answer(a)?)?;
    let mut out = stdout();
    writeln!(out, "{line}")?;
    out.finish()
}

/// `memviz state`'s answer.
pub fn answer(a: &StateArgs) -> Result<StateAnswer, Fail> {
    let (file, event) = (a.file.as_str(), a.event);
    let snap = load(file)?;
    let device = crate::device::one_device(file, &snap, a.device)?;
    let history = History::build_within(&snap, device, BYTES_PER_EVENT);
    let n = history.len();
    let (k, st) = if event == -1 {
        (n.checked_sub(1), history.final_state(&snap))
    } else {
        let k = usize::try_from(event)
            .ok()
            .filter(|&k| k < n)
            .ok_or_else(|| {
                crate::error::bad_argument(format!(
                    "{file}: device {device} has {n} events (merged): --event takes 0 to {} or -1",
                    n.saturating_sub(1)
                ))
            })?;
        let st = history
            .state_after(&snap, k)
            .ok_or_else(|| format!("{file}: no event {k} on device {device}"))?;
        (Some(k), st)
    };
    let action = k
        .and_then(|k| history.event(&snap, k))
        .map_or("", |e| e.action_name(&snap, device));
    Ok(StateAnswer {
        event,
        action: action.to_string(),
        reserved_bytes: st.reserved_bytes,
        allocated_bytes: st.allocated_bytes,
        segments: st.segments.len() as u64,
        blocks: st.blocks.len() as u64,
    })
}
