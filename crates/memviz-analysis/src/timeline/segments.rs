//! [`build_segments`]: the Active Cached Segment Timeline (the module documentation's
//! *Segments*).

use std::collections::BTreeMap;

use memviz_snapshot::{Action, Snapshot};

use super::{Origin, Timeline};

/// Live address ranges of [`build_segments`]: start → (end, element), pairwise disjoint, every
/// range non-empty.
type Ranges = BTreeMap<u64, (u64, u32)>;

/// Removes the live ranges overlapping `[a, b)` (`a < b`) into `out`, in address order.
fn take_overlapping(live: &mut Ranges, a: u64, b: u64, out: &mut Vec<(u64, u64, u32)>) {
    out.clear();
    if let Some((&s, &(e, el))) = live.range(..a).next_back() {
        if e > a {
            out.push((s, e, el));
        }
    }
    out.extend(live.range(a..b).map(|(&s, &(e, el))| (s, e, el)));
    for &(s, _, _) in out.iter() {
        live.remove(&s);
    }
}

/// Ends the elements of the `hit` ranges at `event`. Returns the bytes of `[a, b)` they covered.
fn end_overlapping(t: &mut Timeline, hit: &[(u64, u64, u32)], a: u64, b: u64, event: u32) -> u64 {
    let mut covered: u64 = 0;
    for &(s, e, el) in hit {
        covered = covered.saturating_add(e.min(b).saturating_sub(s.max(a)));
        if let Some(x) = t.elements.get_mut(el as usize) {
            x.free_event = Some(event);
        }
        t.push_step(el, event, false);
    }
    covered
}

/// Starts the parts of the `hit` ranges outside `[a, b)` again, as new elements with the origin
/// of the range they come from, allocated at `event`.
fn restart_outside(
    t: &mut Timeline,
    live: &mut Ranges,
    hit: &[(u64, u64, u32)],
    a: u64,
    b: u64,
    event: u32,
) {
    for &(s, e, el) in hit {
        let Some(origin) = t.elements.get(el as usize).map(|x| x.origin) else {
            continue;
        };
        for (ps, pe) in [(s, a.min(e)), (b.max(s), e)] {
            if ps < pe {
                let id = t.push_element(pe - ps, origin, None);
                live.insert(ps, (pe, id));
                t.push_step(id, event, true);
            }
        }
    }
}

/// The Active Cached Segment Timeline (SEMANTICS.md §4) of a device: `segment_alloc` /
/// `segment_map` as (range) allocations, `segment_free` / `segment_unmap` as (range) frees,
/// expandable segments included (see the module documentation). Live bytes after every trace
/// event equal the bytes mapped at that point; after the last one they equal Σ `total_size` of
/// the device's final segments when the trace is consistent with the final state.
pub fn build_segments(snap: &Snapshot, device: i64) -> Timeline {
    let mut t = Timeline::default();
    let mut live: Ranges = BTreeMap::new();
    let mut unmatched: Vec<u32> = Vec::new();
    let mut hit: Vec<(u64, u64, u32)> = Vec::new();
    if let Some(tr) = snap.trace(device) {
        for (i, action) in tr.actions().enumerate() {
            let ev = i as u32;
            let addr = tr.addr(i).unwrap_or(0);
            let size = tr.size(i).unwrap_or(0);
            match action {
                Action::SegmentAlloc | Action::SegmentMap => {
                    let (a, b) = (addr, addr.saturating_add(size));
                    if a >= b {
                        continue;
                    }
                    // A real allocator never maps mapped memory: replace whatever is there.
                    take_overlapping(&mut live, a, b, &mut hit);
                    end_overlapping(&mut t, &hit, a, b, ev);
                    restart_outside(&mut t, &mut live, &hit, a, b, ev);
                    let id = t.push_element(b - a, Origin::SegmentAlloc { event: ev }, None);
                    live.insert(a, (b, id));
                    t.push_step(id, ev, true);
                }
                Action::SegmentFree | Action::SegmentUnmap => {
                    let a = addr;
                    let mut b = addr.saturating_add(size);
                    if action == Action::SegmentFree {
                        // cudaFree releases the whole allocation at that address.
                        if let Some(&(end, _)) = live.get(&addr) {
                            b = b.max(end);
                        }
                    }
                    if a >= b {
                        continue;
                    }
                    take_overlapping(&mut live, a, b, &mut hit);
                    let covered = end_overlapping(&mut t, &hit, a, b, ev);
                    let gap = (b - a).saturating_sub(covered);
                    if gap > 0 {
                        let id = t.push_element(
                            gap,
                            Origin::UnmatchedSegmentFree { event: ev },
                            Some(ev),
                        );
                        unmatched.push(id);
                        t.push_step(id, ev, false);
                    }
                    restart_outside(&mut t, &mut live, &hit, a, b, ev);
                }
                _ => {}
            }
        }
    }
    // Final segments: the bytes not covered by a live range were there from the start.
    let mut starts: Vec<u64> = Vec::with_capacity(live.len());
    let mut ends: Vec<u64> = Vec::with_capacity(live.len());
    let mut prefix: Vec<u64> = Vec::with_capacity(live.len() + 1);
    prefix.push(0);
    let mut acc: u64 = 0;
    for (&s, &(e, _)) in &live {
        starts.push(s);
        ends.push(e);
        acc = acc.saturating_add(e - s);
        prefix.push(acc);
    }
    // Bytes of [s, e) covered by live ranges: O(log ranges).
    let covered = |s: u64, e: u64| -> u64 {
        let lo = ends.partition_point(|&x| x <= s);
        let hi = starts.partition_point(|&x| x < e);
        if lo >= hi {
            return 0;
        }
        let whole = prefix
            .get(hi)
            .copied()
            .unwrap_or(0)
            .saturating_sub(prefix.get(lo).copied().unwrap_or(0));
        let cut_front = s.saturating_sub(starts.get(lo).copied().unwrap_or(s));
        let cut_back = ends.get(hi - 1).copied().unwrap_or(e).saturating_sub(e);
        whole.saturating_sub(cut_front).saturating_sub(cut_back)
    };
    let mut pre_existing = Vec::new();
    for (si, seg) in snap.segments.iter().enumerate() {
        if seg.device != device {
            continue;
        }
        let end = seg.address.saturating_add(seg.total_size);
        let uncovered = seg.total_size.saturating_sub(covered(seg.address, end));
        if uncovered > 0 {
            let id = t.push_element(uncovered, Origin::Segment { segment: si as u32 }, None);
            pre_existing.push(id);
        }
    }
    // As §3.2: the last final segment at the bottom, the earliest unmatched free on top.
    t.initially_present = unmatched.into_iter().chain(pre_existing).rev().collect();
    t.compute_live_bytes();
    t
}
