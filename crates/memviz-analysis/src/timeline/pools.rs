//! [`build_pools`]: Allocated Memory incl. Private Pools (the module documentation's *Private
//! pools*), and the final segments by address ([`SegmentIndex`]).

use memviz_snapshot::{Action, BlockState, DeviceTrace, Snapshot};
use rustc_hash::FxHashMap;

use super::{Origin, PoolInfo, Step, Timeline};

/// The event's own pool id (the trace entry's `pool_id` / `segment_pool_id`), if it has one.
fn event_pool(tr: &DeviceTrace, event: u32) -> Option<(i64, i64)> {
    tr.pool_id
        .binary_search_by_key(&event, |p| p.0)
        .ok()
        .and_then(|j| tr.pool_id.get(j))
        .map(|p| p.1)
}

/// `Some` only for a private pool: set and not `(0, 0)`.
fn private(pool: Option<(i64, i64)>) -> Option<(i64, i64)> {
    pool.filter(|p| *p != (0, 0))
}

/// The device's final segments by address, for memory_viz's `find_pool_id` (also behind
/// `tooltip::TooltipContext::pool_of_address`): (address, end, pool id, segment index).
#[derive(Clone, Debug)]
pub struct SegmentIndex(Vec<(u64, u64, (i64, i64), u32)>);

impl SegmentIndex {
    pub fn new(snap: &Snapshot, device: i64) -> Self {
        let mut v: Vec<(u64, u64, (i64, i64), u32)> = snap
            .segments
            .iter()
            .enumerate()
            .filter(|(_, s)| s.device == device)
            .map(|(i, s)| {
                (
                    s.address,
                    s.address.saturating_add(s.total_size),
                    s.pool_id,
                    i as u32,
                )
            })
            .collect();
        v.sort_by_key(|s| (s.0, s.3));
        SegmentIndex(v)
    }

    /// The pool id of the final segment containing `addr`.
    pub fn pool_of(&self, addr: u64) -> Option<(i64, i64)> {
        let i = self.0.partition_point(|s| s.0 <= addr);
        let s = self.0.get(i.checked_sub(1)?)?;
        (addr < s.1).then_some(s.2)
    }
}

/// What a trace event does, for [`build_pools`]: a step of a non-pool element, or a change of a
/// pool's active or reserved bytes.
enum PoolOp {
    Step(Step),
    Pool {
        pool: u32,
        event: u32,
        reserved: bool,
        grow: bool,
        size: u64,
    },
}

/// A pool being built: key, starting values, running totals.
struct PoolAcc {
    id: (i64, i64),
    stream: u64,
    /// Active bytes at the start: unmatched frees and ghosts of the pool.
    active_start: i128,
    /// Σ final `total_size` of the pool's segments.
    final_reserved: i128,
    /// Σ the trace's segment deltas of the pool.
    deltas: i128,
}

#[derive(Default)]
struct Pools {
    index: FxHashMap<((i64, i64), u64), u32>,
    list: Vec<PoolAcc>,
}

impl Pools {
    fn get(&mut self, id: (i64, i64), stream: u64) -> u32 {
        let list = &mut self.list;
        *self.index.entry((id, stream)).or_insert_with(|| {
            list.push(PoolAcc {
                id,
                stream,
                active_start: 0,
                final_reserved: 0,
                deltas: 0,
            });
            (list.len() - 1) as u32
        })
    }

    fn acc(&mut self, pool: u32) -> Option<&mut PoolAcc> {
        self.list.get_mut(pool as usize)
    }
}

fn clamp_u64(v: i128) -> u64 {
    u64::try_from(v.max(0)).unwrap_or(u64::MAX)
}

/// Whether the device has a private pool: a final segment or a trace event whose pool id is set
/// and not `(0, 0)`. Without one, [`build_pools`] is [`build`] (a viewer can share the Active
/// Memory Timeline's timeline and layout instead of building a second copy of them).
///
/// [`build`]: super::build
pub fn has_private_pool(snap: &Snapshot, device: i64) -> bool {
    snap.segments
        .iter()
        .any(|s| s.device == device && private(Some(s.pool_id)).is_some())
        || snap
            .trace(device)
            .is_some_and(|tr| tr.pool_id.iter().any(|p| private(Some(p.1)).is_some()))
}

/// Allocated Memory incl. Private Pools (SEMANTICS.md §5, simplified): [`build`] without the
/// allocations of private pools (the event's pool id, else the pool of the final segment
/// containing the address; ghosts: their segment's), plus per pool `(id, stream)` an envelope
/// that only grows, to max(active bytes, reserved bytes) of the pool so far. The envelope is
/// drawn as never-freed elements: [`Origin::PoolInitial`] (present from the start, if > 0) and
/// one [`Origin::PoolGrowth`] per growth, allocated at the event that caused it. The pools are
/// in [`Timeline::pools`]. Live bytes after every event are at least [`build`]'s (the envelope
/// is never below the pool's active bytes), and equal them when the device has no private pool.
///
/// [`build`]: super::build
pub fn build_pools(snap: &Snapshot, device: i64) -> Timeline {
    enum Remembered {
        Element(u32),
        Pool(u32, u64),
    }
    let mut t = Timeline::default();
    let segs = SegmentIndex::new(snap, device);
    let mut pools = Pools::default();
    // Final reserved bytes; the final segments also define the pools' order.
    for seg in snap.segments.iter().filter(|s| s.device == device) {
        if let Some(id) = private(Some(seg.pool_id)) {
            let p = pools.get(id, seg.stream);
            if let Some(acc) = pools.acc(p) {
                acc.final_reserved = acc
                    .final_reserved
                    .saturating_add(i128::from(seg.total_size));
            }
        }
    }
    let mut ops: Vec<PoolOp> = Vec::new();
    let mut remembered: FxHashMap<u64, Remembered> = FxHashMap::default();
    // Address of a segment_alloc / segment_map of a private pool → that pool.
    let mut segment_pool: FxHashMap<u64, u32> = FxHashMap::default();
    let mut unmatched: Vec<u32> = Vec::new();
    if let Some(tr) = snap.trace(device) {
        ops.reserve(tr.len());
        let mut prev_request: Option<(u64, u32)> = None;
        for (i, action) in tr.actions().enumerate() {
            let ev = i as u32;
            let addr = tr.addr(i).unwrap_or(0);
            let size = tr.size(i).unwrap_or(0);
            let stream = tr.stream.get(i).unwrap_or(0);
            let pending = prev_request.take();
            match action {
                Action::Alloc => match private(event_pool(tr, ev).or_else(|| segs.pool_of(addr))) {
                    Some(id) => {
                        let p = pools.get(id, stream);
                        remembered.insert(addr, Remembered::Pool(p, size));
                        ops.push(PoolOp::Pool {
                            pool: p,
                            event: ev,
                            reserved: false,
                            grow: true,
                            size,
                        });
                    }
                    None => {
                        let id = t.push_element(size, Origin::Alloc { event: ev }, None);
                        remembered.insert(addr, Remembered::Element(id));
                        ops.push(PoolOp::Step(Step {
                            element: id,
                            event: ev,
                            is_alloc: true,
                        }));
                    }
                },
                Action::FreeRequested => prev_request = Some((addr, ev)),
                Action::FreeCompleted => {
                    let carrier = match pending {
                        Some((a, req)) if a == addr => req,
                        _ => ev,
                    };
                    match remembered.remove(&addr) {
                        Some(Remembered::Element(id)) => {
                            if let Some(e) = t.elements.get_mut(id as usize) {
                                e.free_event = Some(carrier);
                            }
                            ops.push(PoolOp::Step(Step {
                                element: id,
                                event: carrier,
                                is_alloc: false,
                            }));
                        }
                        Some(Remembered::Pool(p, size)) => ops.push(PoolOp::Pool {
                            pool: p,
                            event: carrier,
                            reserved: false,
                            grow: false,
                            size,
                        }),
                        None => {
                            let size = tr.size(carrier as usize).unwrap_or(0);
                            let pool = event_pool(tr, carrier)
                                .or_else(|| event_pool(tr, ev))
                                .or_else(|| segs.pool_of(addr));
                            match private(pool) {
                                Some(id) => {
                                    let s = tr.stream.get(carrier as usize).unwrap_or(stream);
                                    let p = pools.get(id, s);
                                    if let Some(acc) = pools.acc(p) {
                                        acc.active_start =
                                            acc.active_start.saturating_add(i128::from(size));
                                    }
                                    ops.push(PoolOp::Pool {
                                        pool: p,
                                        event: carrier,
                                        reserved: false,
                                        grow: false,
                                        size,
                                    });
                                }
                                None => {
                                    let id = t.push_element(
                                        size,
                                        Origin::UnmatchedFree { event: carrier },
                                        Some(carrier),
                                    );
                                    unmatched.push(id);
                                    ops.push(PoolOp::Step(Step {
                                        element: id,
                                        event: carrier,
                                        is_alloc: false,
                                    }));
                                }
                            }
                        }
                    }
                }
                Action::SegmentAlloc
                | Action::SegmentMap
                | Action::SegmentFree
                | Action::SegmentUnmap => {
                    let grow = matches!(action, Action::SegmentAlloc | Action::SegmentMap);
                    let pool = match private(event_pool(tr, ev)) {
                        Some(id) => Some(pools.get(id, stream)),
                        None => segment_pool.get(&addr).copied().or_else(|| {
                            private(segs.pool_of(addr)).map(|id| pools.get(id, stream))
                        }),
                    };
                    if let Some(p) = pool {
                        if grow {
                            segment_pool.insert(addr, p);
                        }
                        if let Some(acc) = pools.acc(p) {
                            let d = i128::from(size);
                            acc.deltas = if grow {
                                acc.deltas.saturating_add(d)
                            } else {
                                acc.deltas.saturating_sub(d)
                            };
                        }
                        ops.push(PoolOp::Pool {
                            pool: p,
                            event: ev,
                            reserved: true,
                            grow,
                            size,
                        });
                    }
                }
                _ => {}
            }
        }
    }
    // Ghosts: outside private pools elements, inside them active bytes from the start.
    let mut ghosts = Vec::new();
    for seg in snap.segments.iter().filter(|s| s.device == device) {
        let pool = private(Some(seg.pool_id)).map(|id| pools.get(id, seg.stream));
        for bi in seg.blocks.0..seg.blocks.1 {
            let Some(b) = snap.blocks.get(bi as usize) else {
                continue;
            };
            if b.state != BlockState::ActiveAllocated || remembered.contains_key(&b.address) {
                continue;
            }
            match pool {
                Some(p) => {
                    if let Some(acc) = pools.acc(p) {
                        acc.active_start = acc
                            .active_start
                            .saturating_add(i128::from(b.requested_size));
                    }
                }
                None => {
                    ghosts.push(t.push_element(b.requested_size, Origin::Ghost { block: bi }, None))
                }
            }
        }
    }
    // Starting envelopes at the bottom, then §3.2's order.
    let mut active: Vec<i128> = Vec::with_capacity(pools.list.len());
    let mut reserved: Vec<i128> = Vec::with_capacity(pools.list.len());
    let mut envelope: Vec<u64> = Vec::with_capacity(pools.list.len());
    for (pi, acc) in pools.list.iter().enumerate() {
        let r = acc.final_reserved.saturating_sub(acc.deltas);
        let env = clamp_u64(acc.active_start.max(r));
        let mut info = PoolInfo {
            id: acc.id,
            stream: acc.stream,
            capacity_bytes: env,
            envelope: Vec::new(),
        };
        if env > 0 {
            let id = t.push_element(env, Origin::PoolInitial { pool: pi as u32 }, None);
            t.initially_present.push(id);
            info.envelope.push((id, env));
        }
        t.pools.push(info);
        active.push(acc.active_start);
        reserved.push(r);
        envelope.push(env);
    }
    t.initially_present
        .extend(unmatched.into_iter().chain(ghosts).rev());
    t.steps.reserve(ops.len());
    for op in ops {
        match op {
            PoolOp::Step(s) => t.steps.push(s),
            PoolOp::Pool {
                pool,
                event,
                reserved: is_reserved,
                grow,
                size,
            } => {
                let pi = pool as usize;
                let (Some(a), Some(r), Some(env)) = (
                    active.get_mut(pi),
                    reserved.get_mut(pi),
                    envelope.get_mut(pi),
                ) else {
                    continue;
                };
                let v = if is_reserved { &mut *r } else { &mut *a };
                let d = i128::from(size);
                *v = if grow {
                    v.saturating_add(d)
                } else {
                    v.saturating_sub(d)
                };
                let want = clamp_u64((*a).max(*r));
                if want > *env {
                    let id = t.push_element(want - *env, Origin::PoolGrowth { pool }, None);
                    *env = want;
                    t.push_step(id, event, true);
                    if let Some(info) = t.pools.get_mut(pi) {
                        info.envelope.push((id, want));
                        info.capacity_bytes = want;
                    }
                }
            }
        }
    }
    t.compute_live_bytes();
    t
}
