//! Leak suspects within one device's trace, from the Active Memory Timeline's elements
//! ([`crate::timeline::build`]) and timesteps ([`Steps`]).
//!
//! # Rules
//! Allocations are grouped by stack text as in [`crate::diff`] (filtered frames, innermost
//! first; [`crate::frames::element_stack`] gives an element's stack). Bytes are the timeline's
//! (requested sizes).
//!
//! *Settled.* The timestep after which the live-bytes level counts as settled
//! ([`LeakReport::settled_step`]), by the first rule that applies:
//! 1. **First iteration.** When the trace has times and at least two iteration phases
//!    ([`crate::annotations::iterations`], e.g. `ProfilerStep#N`) overlap it: the last timestep
//!    of the first such iteration. The first iteration is the warm-up (optimizer state, caches,
//!    autotuning); what later iterations leave behind is suspect.
//! 2. **90 % of the final level.** Otherwise: the first timestep `s` from which live bytes
//!    ([`Steps::live_at_step`]) never drop below 90 % of their final value again (0 when they
//!    never do). Up to `s` the level was still being built (weights loaded, optimizer state
//!    created); a run whose level keeps growing settles late, which is what (b) is for. Being a
//!    suffix minimum, one transient dip or spike does not move it, and it needs no annotations.
//!
//! *(a) `alive_at_end`.* Allocations of the trace (not ghosts or unmatched frees: those predate
//! it) that are still alive at the end and were pushed at a timestep after `settled_step`,
//! grouped by stack, **made in repeated steps**: what one pass of a program leaves alive (a
//! one-step forward benchmark's activations, an optimizer's first step creating its state,
//! weights loaded in a loop) is not a suspect. The evidence of repetition:
//! * with at least two iteration phases: the group's allocations fall in at least two
//!   iterations (after the first);
//! * without: at least three of them, at distinct timesteps, where between consecutive ones
//!   the live bytes of the *other* stacks rose by at least
//!   [`STEP_SWING_PERCENT`] % of the trace's peak and came back to within 10 % of that
//!   rise of their level at the earlier one (a step allocates and frees its activations; a
//!   loop over layers within one pass keeps much of each layer's memory): at least two such
//!   steps, in at least a third of the gaps.
//!
//! `bytes` and `count` are the group's; `first_event` is its earliest `alloc`.
//!
//! *Names.* A suspect is named after its stack's site ([`crate::site`]: the innermost user
//! frame, with the library line below it; a C++-only stack of autograd's backward thread after
//! its autograd node, `backward of bmm`; else the innermost native frame that is not allocator
//! or dispatcher plumbing).
//!
//! *(b) `iteration_growth`.* With at least three iteration phases overlapping a timed trace: the
//! live bytes of every stack at the end (last timestep) of each iteration, `y_0 … y_{K−1}`
//! (iterations ending at the same timestep count once). A stack is a suspect when its
//! least-squares slope over the iterations is positive, `y_{K−1} > y_0`, and it rose
//! (`y_{j+1} > y_j`) in at least two thirds of the `K − 1` transitions. Warm-up allocations that
//! appear once and then stay flat rise in one transition only and are not suspects.
//! `growth_per_iteration` is the slope (bytes per iteration), `bytes` / `count` are the stack's
//! live bytes and allocations at the end of the last iteration, and `first_event` is the
//! earliest `alloc` among those allocations made after the first iteration (else among all of
//! them).
//!
//! *Order.* `iteration_growth` suspects first, by growth descending, then `alive_at_end` ones
//! by bytes descending; ties by count descending, then by stack text.

use crate::annotations::{iteration_spans, phase_spans, PhaseSpan};
use crate::diff::{StackCache, StackGroups};
use crate::format::size_short;
use crate::frames::element_stack;
use crate::site::{Site, SiteCache};
use crate::steps::{Steps, NO_EVENT};
use crate::timeline::{Origin, Timeline};
use memviz_snapshot::{Snapshot, StackId, NO_TIME};
use serde::Serialize;

mod rounds;
pub use rounds::STEP_SWING_PERCENT;

/// The percentage of the final live bytes that settles the level (rule 2).
pub const SETTLED_PERCENT: u64 = 90;

#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
pub struct LeakSuspect {
    /// `"alive_at_end"` or `"iteration_growth"`.
    pub kind: &'static str,
    /// Filtered frames, innermost first (`filename:line:name`); `[]` for no frames.
    pub stack: Vec<String>,
    pub bytes: u64,
    pub count: u64,
    /// Least-squares growth in bytes per iteration (`iteration_growth` only).
    pub growth_per_iteration: Option<f64>,
    /// Trace event index of the first allocation concerned ([`NO_EVENT`] if none).
    pub first_event: u32,
    /// One plain-text sentence.
    pub explanation: String,
    /// The site the suspect is named after (of a representative stack of the group). Not
    /// serialised with the suspect: the viewer's answer flattens the suspect into its own
    /// (`SuspectAnswer`), whose wire format is the viewer's to choose; `memviz leaks --json`
    /// adds it as `site`, in [`Site`]'s own serialisation.
    #[serde(skip)]
    #[ts(skip)]
    pub site: Site,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LeakReport {
    /// Allocations pushed at a timestep after this one count as late.
    pub settled_step: u32,
    /// Which rule gave `settled_step`, in words.
    pub settled_rule: String,
    pub suspects: Vec<LeakSuspect>,
}

/// Per-group accumulator for `alive_at_end`.
#[derive(Clone)]
struct AliveAcc {
    bytes: u64,
    count: u64,
    first_event: u32,
    min_size: u64,
    max_size: u64,
    stack: StackId,
    /// Push timesteps of the allocations (sorted and distinct once all are in).
    pushes: Vec<u32>,
    /// Iterations (or inferred steps) the pushes fall in; 0 when not repeated.
    rounds: usize,
}

/// Longest phase name quoted in a sentence, in bytes: a name is data and may be any length
/// (real ones are like `ProfilerStep#12`); a longer one is cut, with `…`.
pub const NAME_SHOWN: usize = 200;

/// `name`, cut to [`NAME_SHOWN`] bytes (at a character boundary) when longer.
fn shown(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() <= NAME_SHOWN {
        return name.into();
    }
    let mut end = NAME_SHOWN;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", name.get(..end).unwrap_or("")).into()
}

fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Leak suspects of `device` (see the module documentation). `timeline` must be
/// [`crate::timeline::build`]`(snap, device)` and `layout` its layout.
pub fn leaks(snap: &Snapshot, device: i64, timeline: &Timeline, layout: &Steps) -> LeakReport {
    leaks_with(
        snap,
        device,
        timeline,
        layout,
        &mut SiteCache::default_for(snap),
    )
}

/// [`leaks`] with the suspects named by `sites` (its [`crate::site::UserCode`]).
pub fn leaks_with(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Steps,
    sites: &mut SiteCache,
) -> LeakReport {
    let steps = layout.step_count();
    let timed = snap
        .trace(device)
        .is_some_and(|t| t.times().any(|x| x != NO_TIME));
    let iters: Vec<PhaseSpan> = if timed {
        iteration_spans(snap, &phase_spans(snap, device, layout))
            .into_iter()
            .filter(|p| p.end_step > 0 && p.start_step < steps)
            .collect()
    } else {
        Vec::new()
    };
    let last_step = steps.saturating_sub(1);
    let (settled_step, settled_rule) = match iters.as_slice() {
        [first, _, ..] => {
            let s = first.end_step.saturating_sub(1).min(last_step);
            (
                s,
                format!(
                    "end of the first iteration phase ({}, {} phases): timestep {s}",
                    shown(first.name(snap)),
                    iters.len()
                ),
            )
        }
        _ => {
            let live = layout.live_at_step();
            let fin = live.last().unwrap_or(0);
            let below =
                |v: u64| u128::from(v) * 100 < u128::from(fin) * u128::from(SETTLED_PERCENT);
            let s = live
                .iter()
                .enumerate()
                .filter(|&(_, v)| below(v))
                .last()
                .map_or(0, |(i, _)| (i as u32).saturating_add(1))
                .min(last_step);
            (
                s,
                format!(
                    "live bytes stay at or above {SETTLED_PERCENT}% of the final level ({}) from timestep {s} on",
                    size_short(fin)
                ),
            )
        }
    };

    let mut groups = StackGroups::default();
    let mut cache = StackCache::new(snap);
    let mut group_of =
        |groups: &mut StackGroups, el: &crate::timeline::Element| -> (u32, StackId) {
            let st = element_stack(snap, device, el);
            (cache.group(groups, st), st)
        };
    let mut suspects: Vec<LeakSuspect> = Vec::new();

    // (b) iteration growth.
    let mut boundaries: Vec<u32> = Vec::new();
    let mut boundary_names: Vec<&str> = Vec::new();
    for p in &iters {
        let b = p.end_step.saturating_sub(1).min(last_step);
        if boundaries.last().is_none_or(|&l| b > l) {
            boundaries.push(b);
            boundary_names.push(p.name(snap));
        }
    }
    let k = boundaries.len();
    let mut growth: Vec<LeakSuspect> = Vec::new();
    if k >= 3 {
        // The elements alive at a boundary, grouped by stack with a counting sort: 4 bytes per
        // element (its index), each element's other numbers looked up again when its group is
        // scored, rather than a 32-byte record per element.
        // (lo, hi, push step): alive at boundaries lo..hi.
        let alive_at = |ei: usize| -> Option<(usize, usize, u32)> {
            let (s, e) = layout.span(ei as u32)?;
            let lo = boundaries.partition_point(|&b| b < s);
            let hi = boundaries.partition_point(|&b| b < e);
            (lo < hi).then_some((lo, hi, s))
        };
        let mut start: Vec<usize> = Vec::new();
        let mut reps: Vec<StackId> = Vec::new();
        for (ei, el) in timeline.elements.iter().enumerate() {
            if alive_at(ei).is_none() {
                continue;
            }
            let (g, st) = group_of(&mut groups, el);
            let g = g as usize;
            if reps.len() <= g {
                reps.resize(g + 1, st);
            }
            if start.len() <= g + 1 {
                start.resize(g + 2, 0);
            }
            if let Some(c) = start.get_mut(g + 1) {
                *c += 1;
            }
        }
        for i in 1..start.len() {
            let prev = start.get(i - 1).copied().unwrap_or(0);
            if let Some(c) = start.get_mut(i) {
                *c += prev;
            }
        }
        let mut members = vec![0u32; start.last().copied().unwrap_or(0)];
        let mut next = start.clone();
        for (ei, el) in timeline.elements.iter().enumerate() {
            if alive_at(ei).is_none() {
                continue;
            }
            let (g, _) = group_of(&mut groups, el);
            if let Some(n) = next.get_mut(g as usize) {
                if let Some(slot) = members.get_mut(*n) {
                    *slot = ei as u32;
                }
                *n += 1;
            }
        }
        drop(next);
        // (size, alloc event or NO_EVENT, push step, lo, hi) of a member.
        let numbers = |ei: u32| -> Option<(u64, u32, u32, usize, usize)> {
            let el = timeline.elements.get(ei as usize)?;
            let (lo, hi, s) = alive_at(ei as usize)?;
            let ev = match el.origin {
                Origin::Alloc { event } => event,
                _ => NO_EVENT,
            };
            Some((el.size_bytes, ev, s, lo, hi))
        };
        let first_b = boundaries.first().copied().unwrap_or(0);
        // Σ_j d_j² with d_j = 2j − (k − 1): the same for every group.
        let kk = k as i128;
        let sdd = (0..kk).fold(0i128, |a, j| {
            let d = 2 * j - (kk - 1);
            a.saturating_add(d.saturating_mul(d))
        });
        // A group's live bytes per boundary, y_j, change only where a member starts or stops
        // being alive: its (boundary, change) pairs, sorted, give y as constant runs, so a
        // group costs O(members log members), not O(k) (a vector of k per group was quadratic:
        // 50 k iterations with a new stack each took 17 s).
        let mut changes: Vec<(usize, i128)> = Vec::new();
        for g in 0..start.len().saturating_sub(1) {
            let (Some(&a), Some(&z)) = (start.get(g), start.get(g + 1)) else {
                continue;
            };
            let Some(run) = members.get(a..z).filter(|r| !r.is_empty()) else {
                continue;
            };
            let (mut y_first, mut y_last, mut count) = (0u64, 0u64, 0u64);
            let (mut late_first, mut any_first) = (NO_EVENT, NO_EVENT);
            changes.clear();
            for (size, ev, s, lo, hi) in run.iter().filter_map(|&ei| numbers(ei)) {
                if lo == 0 {
                    y_first = y_first.saturating_add(size);
                }
                if hi == k {
                    y_last = y_last.saturating_add(size);
                    count += 1;
                    if ev != NO_EVENT {
                        any_first = any_first.min(ev);
                        if s > first_b {
                            late_first = late_first.min(ev);
                        }
                    }
                }
                changes.push((lo, i128::from(size)));
                if hi < k {
                    changes.push((hi, -i128::from(size)));
                }
            }
            if y_last <= y_first {
                continue;
            }
            changes.sort_unstable_by_key(|c| c.0);
            // y_j rises at j > 0 exactly where the net change at j is positive; Σ_j d_j · y_j
            // sums each constant run [p, q) of value y as y · Σ_{p ≤ j < q} d_j =
            // y · (q − p) · (p + q − k).
            let (mut rises, mut sdy, mut y, mut at) = (0usize, 0i128, 0i128, 0usize);
            let mut i = 0;
            while i < changes.len() {
                let j = changes.get(i).map_or(k, |c| c.0);
                let mut net = 0i128;
                while let Some(&(_, d)) = changes.get(i).filter(|c| c.0 == j) {
                    net = net.saturating_add(d);
                    i += 1;
                }
                let (p, q) = (at as i128, j as i128);
                sdy = sdy.saturating_add(y.saturating_mul((q - p).saturating_mul(p + q - kk)));
                y = y.saturating_add(net);
                if j > 0 && net > 0 {
                    rises += 1;
                }
                at = j;
            }
            let (p, q) = (at as i128, kk);
            sdy = sdy.saturating_add(y.saturating_mul((q - p).saturating_mul(p + q - kk)));
            if sdy <= 0 || sdd == 0 || rises * 3 < 2 * (k - 1) {
                continue;
            }
            let slope = 2.0 * sdy as f64 / sdd as f64;
            let first_event = if late_first != NO_EVENT {
                late_first
            } else {
                any_first
            };
            let site = sites
                .site(snap, reps.get(g).copied().unwrap_or(StackId::EMPTY))
                .clone();
            let explanation = format!(
                "Live memory from {} rose in {rises} of {} iterations ({} to {}), by {} per iteration on average, to {} in {} at the end of {}.",
                site.display(),
                k - 1,
                shown(boundary_names.first().copied().unwrap_or("")),
                shown(boundary_names.last().copied().unwrap_or("")),
                size_short(slope.round() as u64),
                size_short(y_last),
                plural(count, "allocation", "allocations"),
                shown(boundary_names.last().copied().unwrap_or("")),
            );
            growth.push(LeakSuspect {
                kind: "iteration_growth",
                stack: groups.lines(g),
                bytes: y_last,
                count,
                growth_per_iteration: Some(slope),
                first_event,
                explanation,
                site,
            });
        }
        growth.sort_by(|a, b| {
            let ga = a.growth_per_iteration.unwrap_or(0.0);
            let gb = b.growth_per_iteration.unwrap_or(0.0);
            gb.total_cmp(&ga)
                .then(b.bytes.cmp(&a.bytes))
                .then(b.count.cmp(&a.count))
                .then_with(|| a.stack.cmp(&b.stack))
        });
    }
    suspects.extend(growth);

    // (a) alive at the end, allocated after the settled step, in repeated steps.
    let mut alive: Vec<Option<AliveAcc>> = Vec::new();
    for (ei, el) in timeline.elements.iter().enumerate() {
        let Origin::Alloc { event } = el.origin else {
            continue;
        };
        if el.free_event.is_some() {
            continue;
        }
        let Some((s, _)) = layout.span(ei as u32) else {
            continue;
        };
        if s <= settled_step {
            continue;
        }
        let (g, st) = group_of(&mut groups, el);
        let g = g as usize;
        if alive.len() <= g {
            alive.resize(g + 1, None);
        }
        let Some(slot) = alive.get_mut(g) else {
            continue;
        };
        let size = el.size_bytes;
        match slot {
            Some(a) => {
                a.bytes = a.bytes.saturating_add(size);
                a.count = a.count.saturating_add(1);
                a.first_event = a.first_event.min(event);
                a.min_size = a.min_size.min(size);
                a.max_size = a.max_size.max(size);
                a.pushes.push(s);
            }
            None => {
                *slot = Some(AliveAcc {
                    bytes: size,
                    count: 1,
                    first_event: event,
                    min_size: size,
                    max_size: size,
                    stack: st,
                    pushes: vec![s],
                    rounds: 0,
                })
            }
        }
    }
    for a in alive.iter_mut().flatten() {
        a.pushes.sort_unstable();
        a.pushes.dedup();
    }
    let need = if iters.len() >= 2 { 2 } else { 3 };
    let candidate: Vec<bool> = alive
        .iter()
        .map(|a| a.as_ref().is_some_and(|a| a.pushes.len() >= need))
        .collect();
    if iters.len() >= 2 {
        // Iterations: the distinct iterations (after the first) the pushes fall in.
        for a in alive.iter_mut().flatten() {
            let mut its: Vec<usize> = a
                .pushes
                .iter()
                .filter_map(|&s| {
                    let k = boundaries.partition_point(|&b| b < s);
                    (k < boundaries.len()).then_some(k)
                })
                .collect();
            its.dedup();
            a.rounds = its.len();
        }
    } else if candidate.iter().any(|&c| c) {
        // Inferred steps: each candidate stack's own live bytes, from all its elements.
        let mut slid = vec![false; layout.element_count()];
        for s in &layout.slides {
            if let Some(x) = layout
                .element_at_order(s.order)
                .and_then(|e| slid.get_mut(e as usize))
            {
                *x = true;
            }
        }
        let mut members: Vec<Vec<(u32, bool)>> = vec![Vec::new(); alive.len()];
        for (ei, el) in timeline.elements.iter().enumerate() {
            let (g, _) = group_of(&mut groups, el);
            if candidate.get(g as usize).copied().unwrap_or(false) {
                if let Some(m) = members.get_mut(g as usize) {
                    m.push((ei as u32, slid.get(ei).copied().unwrap_or(false)));
                }
            }
        }
        drop(slid);
        let live = rounds::LiveMax::new(layout);
        for (g, a) in alive.iter_mut().enumerate() {
            let (Some(a), Some(m)) = (a.as_mut(), members.get(g)) else {
                continue;
            };
            if m.is_empty() {
                continue;
            }
            let stack_live = rounds::StackLive::new(layout, m);
            let (r, gaps) = rounds::inferred_rounds(&live, &stack_live, &a.pushes);
            // Several steps, and a step in at least a third of the gaps (a stack may allocate
            // a few times per step).
            a.rounds = if r >= 2 && 3 * r >= gaps { r + 1 } else { 0 };
        }
    }
    let mut late: Vec<LeakSuspect> = alive
        .iter()
        .enumerate()
        .filter_map(|(g, a)| a.as_ref().map(|a| (g, a)))
        .filter(|(g, a)| candidate.get(*g).copied().unwrap_or(false) && a.rounds >= 2)
        .map(|(g, a)| {
            let site = sites.site(snap, a.stack).clone();
            let site_text = site.display();
            let what = if a.min_size == a.max_size {
                format!(
                    "{} of {}",
                    plural(a.count, "allocation", "allocations"),
                    size_short(a.max_size)
                )
            } else {
                format!(
                    "{} of {} to {}",
                    plural(a.count, "allocation", "allocations"),
                    size_short(a.min_size),
                    size_short(a.max_size)
                )
            };
            let verb = if a.count == 1 { "is" } else { "are" };
            let steps = if iters.len() >= 2 {
                format!("in {} iterations", a.rounds)
            } else {
                format!(
                    "in {} repeated steps (the other stacks' memory rose and fell back between them)",
                    a.rounds
                )
            };
            LeakSuspect {
                kind: "alive_at_end",
                stack: groups.lines(g),
                bytes: a.bytes,
                count: a.count,
                growth_per_iteration: None,
                first_event: a.first_event,
                explanation: format!(
                    "{what} from {site_text} allocated after timestep {settled_step} {steps} {verb} still alive at the end ({}).",
                    size_short(a.bytes)
                ),
                site,
            }
        })
        .collect();
    late.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then(b.count.cmp(&a.count))
            .then_with(|| a.stack.cmp(&b.stack))
    });
    suspects.extend(late);
    LeakReport {
        settled_step,
        settled_rule,
        suspects,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut() {
        assert_eq!(shown("ProfilerStep#3"), "ProfilerStep#3");
        let long = "é".repeat(150);
        let cut = shown(&long);
        assert!(cut.ends_with('…') && cut.len() <= NAME_SHOWN + '…'.len_utf8());
        assert!(long.starts_with(cut.trim_end_matches('…')));
    }
}
