//! [`AllocRows`]: the `alloc` row behind a live block, so a block restored by undoing its free
//! (whose [`super::Src`] is the free's row, as memory_viz's state shows the free's frames) is
//! named by the stack that allocated it ([`crate::site`]).

use super::{Blk, Source};
use memviz_snapshot::{Action, Snapshot, StackId};
use rustc_hash::FxHashMap;

/// The `alloc` row of each `free_requested` / `free_completed` row of one device's trace,
/// built by one forward pass on first use (O(trace)); 8 bytes per free that has an alloc.
#[derive(Default)]
pub struct AllocRows {
    built: bool,
    of_free: FxHashMap<u32, u32>,
}

impl AllocRows {
    #[must_use]
    pub fn new() -> AllocRows {
        AllocRows::default()
    }

    fn build(&mut self, snap: &Snapshot, device: i64) {
        self.built = true;
        let Some(tr) = snap.trace(device) else {
            return;
        };
        let mut last: FxHashMap<u64, u32> = FxHashMap::default();
        for i in 0..tr.len() {
            let (Some(a), Some(addr)) = (tr.action(i), tr.addr(i)) else {
                continue;
            };
            match a {
                Action::Alloc => {
                    last.insert(addr, i as u32);
                }
                Action::FreeRequested => {
                    if let Some(&r) = last.get(&addr) {
                        self.of_free.insert(i as u32, r);
                    }
                }
                Action::FreeCompleted => {
                    if let Some(r) = last.remove(&addr) {
                        self.of_free.insert(i as u32, r);
                    }
                }
                _ => {}
            }
        }
    }

    /// The stack that allocated `blk` (of `device` of `snap`): the `alloc` row's when the
    /// block's source row is a free with a known alloc, else [`Blk::stack`].
    pub fn stack(&mut self, snap: &Snapshot, device: i64, blk: &Blk) -> StackId {
        if let Source::Row(r) = blk.src.get() {
            let is_free = snap
                .trace(device)
                .and_then(|t| t.action(r as usize))
                .is_some_and(|a| matches!(a, Action::FreeRequested | Action::FreeCompleted));
            if is_free {
                if !self.built {
                    self.build(snap, device);
                }
                if let Some(&a) = self.of_free.get(&r) {
                    return snap
                        .trace(device)
                        .and_then(|t| t.stack(a as usize))
                        .unwrap_or(StackId::EMPTY);
                }
            }
        }
        blk.stack(snap, device)
    }
}
