//! The Active Memory Timeline's elements (SEMANTICS.md §3.1–3.2): allocations paired with their
//! frees, unmatched frees and ghost blocks as memory present from the start, and live bytes.
//!
//! # How it works
//! One pass over a device's trace applies the annotate step's merge rule (a `free_completed`
//! right after its own `free_requested` is one `free` event that keeps the request's fields) and
//! pairs frees with the allocation remembered at their address. Frees with no remembered
//! allocation become elements present from the start (the allocation predates the trace), and
//! every `active_allocated` block of the final state not accounted for becomes a ghost element.

use memviz_snapshot::{Action, BlockState, Snapshot};
use rustc_hash::FxHashMap;

/// Where a timeline element comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// An `alloc` event (index into the device trace).
    Alloc { event: u32 },
    /// A free whose allocation is not in the trace (index of the free event that carries its
    /// fields: the `free_requested` of a merged pair, else the `free_completed`).
    UnmatchedFree { event: u32 },
    /// An `active_allocated` block of the final state with no allocation in the trace.
    Ghost { block: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Element {
    pub size_bytes: u64,
    pub origin: Origin,
    /// Trace event index of the free, if freed within the trace.
    pub free_event: Option<u32>,
}

impl Element {
    pub fn present_at_start(&self) -> bool {
        !matches!(self.origin, Origin::Alloc { .. })
    }
}

/// One step of the timeline: an element appears or disappears.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub element: u32,
    pub event: u32,
    pub is_alloc: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Timeline {
    pub elements: Vec<Element>,
    /// Elements present from the start, bottom of the stack first (the reference's order:
    /// ghosts from the last final-state block down, then unmatched frees, latest first).
    pub initially_present: Vec<u32>,
    /// Allocations and frees in trace order.
    pub steps: Vec<Step>,
    pub start_live_bytes: u64,
    pub peak_live_bytes: u64,
    pub final_live_bytes: u64,
}

/// Pair a device's trace with its final state.
pub fn build(snap: &Snapshot, device: i64) -> Timeline {
    let mut t = Timeline::default();
    let mut remembered: FxHashMap<u64, u32> = FxHashMap::default();
    let mut unmatched: Vec<u32> = Vec::new();
    if let Some(tr) = snap.trace(device) {
        let allocs = tr.action.iter().filter(|a| **a == Action::Alloc).count();
        let frees = tr
            .action
            .iter()
            .filter(|a| **a == Action::FreeCompleted)
            .count();
        t.elements.reserve(allocs + frees / 8);
        t.steps.reserve(allocs + frees);
        remembered.reserve(allocs.min(1 << 20));
        // The previous *output* event of the annotate step, if it is a free_requested: (addr, index).
        let mut prev_request: Option<(u64, u32)> = None;
        for i in 0..tr.len() {
            let (action, addr) = (tr.action[i], tr.addr[i]);
            let ev = i as u32;
            let pending = prev_request.take();
            match action {
                Action::Alloc => {
                    let id = t.elements.len() as u32;
                    t.elements.push(Element {
                        size_bytes: tr.size[i],
                        origin: Origin::Alloc { event: ev },
                        free_event: None,
                    });
                    remembered.insert(addr, id);
                    t.steps.push(Step {
                        element: id,
                        event: ev,
                        is_alloc: true,
                    });
                }
                Action::FreeRequested => prev_request = Some((addr, ev)),
                Action::FreeCompleted => {
                    // Merged with the request right before it, the free keeps the request's fields.
                    let carrier = match pending {
                        Some((a, req)) if a == addr => req,
                        _ => ev,
                    };
                    match remembered.remove(&addr) {
                        Some(id) => {
                            if let Some(e) = t.elements.get_mut(id as usize) {
                                e.free_event = Some(carrier);
                            }
                            t.steps.push(Step {
                                element: id,
                                event: carrier,
                                is_alloc: false,
                            });
                        }
                        None => {
                            let id = t.elements.len() as u32;
                            t.elements.push(Element {
                                size_bytes: tr.size[carrier as usize],
                                origin: Origin::UnmatchedFree { event: carrier },
                                free_event: Some(carrier),
                            });
                            unmatched.push(id);
                            t.steps.push(Step {
                                element: id,
                                event: carrier,
                                is_alloc: false,
                            });
                        }
                    }
                }
                _ => {}
            }
        }
    }
    // Ghosts: live blocks of the final state that the trace does not account for.
    let mut ghosts = Vec::new();
    for seg in snap.segments.iter().filter(|s| s.device == device) {
        for bi in seg.blocks.0..seg.blocks.1 {
            let Some(b) = snap.blocks.get(bi as usize) else {
                continue;
            };
            if b.state == BlockState::ActiveAllocated && !remembered.contains_key(&b.address) {
                let id = t.elements.len() as u32;
                t.elements.push(Element {
                    size_bytes: b.requested_size,
                    origin: Origin::Ghost { block: bi },
                    free_event: None,
                });
                ghosts.push(id);
            }
        }
    }
    // Reference order: [unmatched frees…, ghosts…] reversed, so the last final-state block is at
    // the bottom and the earliest unmatched free on top.
    t.initially_present = unmatched.into_iter().chain(ghosts).rev().collect();

    let mut live: u64 = t
        .initially_present
        .iter()
        .map(|&i| t.elements[i as usize].size_bytes)
        .sum();
    t.start_live_bytes = live;
    let mut peak = live;
    for s in &t.steps {
        let size = t.elements[s.element as usize].size_bytes;
        if s.is_alloc {
            live = live.saturating_add(size);
            peak = peak.max(live);
        } else {
            live = live.saturating_sub(size);
        }
    }
    t.peak_live_bytes = peak;
    t.final_live_bytes = live;
    t
}
