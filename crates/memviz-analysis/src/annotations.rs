//! Phases from `external_annotations` (FORMAT.md §7: `record_function` ranges such as
//! `ProfilerStep#N`, recorded as START / END pairs on the trace's `time_us` clock), placed on the
//! Active Memory Timeline's timesteps; the trace's `annotate` events (FORMAT.md §4); and the
//! periodic phases (training iterations) among the phases.
//!
//! # Rules
//! * *Pairing.* The annotations of one device are read in file order. A `START` opens a range of
//!   its name; an `END` closes the most recent open range of the same name (so ranges of one
//!   name may nest or repeat). An `END` with nothing open is a phase from the start of the trace
//!   (`start_us: None`), a `START` never closed runs to the end (`end_us: None`). Stages are
//!   compared case-insensitively; any other stage is ignored. A missing `time_us` is `None`.
//! * *Timesteps.* Every timestep gets the time of its trace event ([`Steps::step_event`]),
//!   forward-filled over steps without a timed event and made non-decreasing (memory_viz-viewer's
//!   `step_times` rule; steps before the first timed event get the first event's time). A phase
//!   covers the half-open timestep range `[start_step, end_step)`: the steps whose time `t`
//!   satisfies `start_us <= t <= end_us`, so on the plot it spans `x ∈ [start_step, end_step]`.
//!   `start_us: None` gives `start_step = 0`, `end_us: None` gives `end_step` = the number of
//!   timesteps. `end_step >= start_step` always. When the trace has no times, phases cannot be
//!   placed and get `start_step = end_step = 0`.
//! * *Order.* Phases are sorted by start time (`None` first), then by the file position of the
//!   annotation that opened them (the outer of two nested phases starting together comes first).

use crate::steps::{Steps, NO_EVENT};
use crate::timeline::{Element, Origin};
use memviz_snapshot::{Action, Snapshot, StrId, NO_STR, NO_TIME};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::HashMap;

/// One annotated range of a device, placed on the timeline's timesteps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Phase {
    pub name: String,
    /// `None`: an `END` without a `START` (the phase runs from the start of the trace), or a
    /// `START` without `time_us`.
    pub start_us: Option<i64>,
    /// `None`: a `START` without an `END` (the phase runs to the end of the trace), or an `END`
    /// without `time_us`.
    pub end_us: Option<i64>,
    /// First timestep of the phase.
    pub start_step: u32,
    /// One past the last timestep of the phase (`start_step == end_step`: no timestep inside).
    pub end_step: u32,
}

/// The absolute time (µs) of every timestep of `layout`: the time of its trace event,
/// forward-filled and made non-decreasing; steps before the first timed event get that event's
/// time. `None` when the device's trace has no timed event.
pub fn step_times_us(snap: &Snapshot, device: i64, layout: &Steps) -> Option<Vec<i64>> {
    let tr = snap.trace(device)?;
    let t0 = tr.times().find(|&t| t != NO_TIME)?;
    let mut last = t0;
    Some(
        layout
            .step_event()
            .iter()
            .map(|ev| {
                if ev != NO_EVENT {
                    if let Some(t) = tr.time_us(ev as usize) {
                        if t != NO_TIME {
                            last = last.max(t);
                        }
                    }
                }
                last
            })
            .collect(),
    )
}

fn time_of(t: i64) -> Option<i64> {
    (t != NO_TIME).then_some(t)
}

/// For each query `(time, inclusive)`: how many timesteps have a time ([`step_times_us`])
/// below `time` (at most `time` when `inclusive`), i.e. `partition_point` over those times.
/// One pass over the timesteps with the queries sorted, so the times (8 bytes per timestep)
/// are never stored. `None` when the device's trace has no timed event.
fn steps_before(
    snap: &Snapshot,
    device: i64,
    layout: &Steps,
    queries: &[(i64, bool)],
) -> Option<Vec<u32>> {
    let tr = snap.trace(device)?;
    let t0 = tr.times().find(|&t| t != NO_TIME)?;
    let steps = layout.step_count();
    let mut order: Vec<usize> = (0..queries.len()).collect();
    // A strict bound before an inclusive one of the same time: the answers then never decrease.
    order.sort_by_key(|&i| queries.get(i).copied().unwrap_or((i64::MAX, true)));
    let mut out = vec![steps; queries.len()];
    let passes = |t: i64, i: usize| match queries.get(i) {
        Some(&(v, true)) => t <= v,
        Some(&(v, false)) => t < v,
        None => true,
    };
    let mut next = order.iter().copied().peekable();
    let mut last = t0;
    for (j, ev) in layout.step_event().iter().enumerate() {
        if next.peek().is_none() {
            break;
        }
        if ev != NO_EVENT {
            if let Some(t) = tr.time_us(ev as usize).filter(|&t| t != NO_TIME) {
                last = last.max(t);
            }
        }
        while let Some(i) = next.next_if(|&i| !passes(last, i)) {
            if let Some(slot) = out.get_mut(i) {
                *slot = j as u32;
            }
        }
    }
    Some(out)
}

/// A [`Phase`] with its name as the snapshot's string id (the phases of a file share their few
/// names: [`phases`] copies the name into every phase, these do not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseSpan {
    /// The name ([`NO_STR`] for an empty or missing one).
    pub name: StrId,
    pub start_us: Option<i64>,
    pub end_us: Option<i64>,
    pub start_step: u32,
    pub end_step: u32,
}

impl PhaseSpan {
    /// The name's text.
    #[must_use]
    pub fn name<'s>(&self, snap: &'s Snapshot) -> &'s str {
        snap.str(self.name)
    }

    /// The [`Phase`] (its name copied).
    #[must_use]
    pub fn to_phase(&self, snap: &Snapshot) -> Phase {
        Phase {
            name: self.name(snap).to_string(),
            start_us: self.start_us,
            end_us: self.end_us,
            start_step: self.start_step,
            end_step: self.end_step,
        }
    }
}

/// The phases of `device` (see the module documentation for pairing, placement and order).
pub fn phases(snap: &Snapshot, device: i64, layout: &Steps) -> Vec<Phase> {
    phase_spans(snap, device, layout)
        .iter()
        .map(|p| p.to_phase(snap))
        .collect()
}

/// [`phases`] without copying names: O(annotations), whatever the names' lengths (names are
/// told apart by their interned ids, equal strings having equal ids, rather than hashed per
/// annotation: 100 k annotations sharing one 100 KB name took 28 s and 9.5 GB in
/// `memviz leaks`).
pub fn phase_spans(snap: &Snapshot, device: i64, layout: &Steps) -> Vec<PhaseSpan> {
    let steps = layout.step_count();
    // (sort key: start, file position) → phase, placed below.
    let mut out: Vec<((i64, usize), PhaseSpan)> = Vec::new();
    // Open STARTs per name: (file position, start time).
    let mut open: FxHashMap<StrId, Vec<(usize, Option<i64>)>> = FxHashMap::default();
    let phase = |name: StrId, start_us: Option<i64>, end_us: Option<i64>| PhaseSpan {
        name,
        start_us,
        end_us,
        start_step: 0,
        end_step: 0,
    };
    // Every empty name is one name, as its text is.
    let key = |id: StrId| if snap.str(id).is_empty() { NO_STR } else { id };
    for (i, a) in snap.external_annotations.iter().enumerate() {
        if a.device != device {
            continue;
        }
        let name = key(a.name);
        let stage = if a.stage == NO_STR {
            ""
        } else {
            snap.str(a.stage)
        };
        if stage.eq_ignore_ascii_case("START") {
            open.entry(name).or_default().push((i, time_of(a.time_us)));
        } else if stage.eq_ignore_ascii_case("END") {
            let end_us = time_of(a.time_us);
            let (pos, start_us) = open
                .get_mut(&name)
                .and_then(|v| v.pop())
                .unwrap_or((i, None));
            out.push((
                (start_us.unwrap_or(i64::MIN), pos),
                phase(name, start_us, end_us),
            ));
        }
    }
    for (name, starts) in open {
        for (pos, start_us) in starts {
            out.push((
                (start_us.unwrap_or(i64::MIN), pos),
                phase(name, start_us, None),
            ));
        }
    }
    // Placed on the timesteps: every phase's start (strict) and end (inclusive) at once.
    let mut queries: Vec<(i64, bool)> = Vec::with_capacity(2 * out.len());
    for (_, p) in &out {
        queries.push((p.start_us.unwrap_or(i64::MIN), false));
        queries.push((p.end_us.unwrap_or(i64::MAX), true));
    }
    if let Some(at) = steps_before(snap, device, layout, &queries) {
        for (j, (_, p)) in out.iter_mut().enumerate() {
            let s = match p.start_us {
                Some(_) => at.get(2 * j).copied().unwrap_or(0),
                None => 0,
            };
            let e = match p.end_us {
                Some(_) => at.get(2 * j + 1).copied().unwrap_or(steps),
                None => steps,
            };
            p.start_step = s;
            p.end_step = e.max(s);
        }
    }
    out.sort_by_key(|(k, _)| *k);
    out.into_iter().map(|(_, p)| p).collect()
}

/// The `annotate` events of `device`'s trace: (event index, the annotated allocation's address,
/// its `user_metadata` text, `""` when absent).
pub fn annotate_events(snap: &Snapshot, device: i64) -> Vec<(u32, u64, String)> {
    let Some(tr) = snap.trace(device) else {
        return Vec::new();
    };
    tr.actions()
        .enumerate()
        .filter(|(_, a)| *a == Action::Annotate)
        .map(|(i, _)| {
            let text = tr
                .user_metadata
                .get(i)
                .filter(|&s| s != NO_STR)
                .map_or_else(String::new, |s| snap.str(s).to_string());
            (i as u32, tr.addr(i).unwrap_or(0), text)
        })
        .collect()
}

/// The `annotate` events of one device, found by the allocation they label: an event at
/// address `a` and trace position `k` belongs to the block element at `a` that is live at `k`
/// (an `alloc` before `k` whose free, if any, is at or after `k`; an unmatched free at or after
/// `k`; a ghost block, live throughout).
#[derive(Clone, Debug, Default)]
pub struct AnnotationIndex {
    /// (address, event index, `user_metadata`), sorted.
    by_addr: Vec<(u64, u32, StrId)>,
}

impl AnnotationIndex {
    pub fn new(snap: &Snapshot, device: i64) -> Self {
        let mut by_addr: Vec<(u64, u32, StrId)> = match snap.trace(device) {
            Some(tr) => tr
                .actions()
                .enumerate()
                .filter(|(_, a)| *a == Action::Annotate)
                .map(|(i, _)| {
                    (
                        tr.addr(i).unwrap_or(0),
                        i as u32,
                        tr.user_metadata.get(i).unwrap_or(NO_STR),
                    )
                })
                .collect(),
            None => Vec::new(),
        };
        by_addr.sort_unstable();
        AnnotationIndex { by_addr }
    }

    pub fn is_empty(&self) -> bool {
        self.by_addr.is_empty()
    }

    /// The annotations of a timeline element, `(event index, user_metadata)` in trace order;
    /// empty for segment and pool elements.
    pub fn of_element(&self, snap: &Snapshot, device: i64, el: &Element) -> Vec<(u32, StrId)> {
        if self.by_addr.is_empty() {
            return Vec::new();
        }
        let addr_of = |e: u32| snap.trace(device).and_then(|t| t.addr(e as usize));
        let (addr, lo, hi) = match el.origin {
            Origin::Alloc { event } => (addr_of(event), Some(event), el.free_event),
            Origin::UnmatchedFree { event } => (addr_of(event), None, Some(event)),
            Origin::Ghost { block } => (
                snap.blocks.get(block as usize).map(|b| b.address),
                None,
                None,
            ),
            _ => (None, None, None),
        };
        let Some(addr) = addr else {
            return Vec::new();
        };
        let start = self.by_addr.partition_point(|x| x.0 < addr);
        self.by_addr[start..]
            .iter()
            .take_while(|x| x.0 == addr)
            .filter(|x| lo.is_none_or(|l| l < x.1) && hi.is_none_or(|h| x.1 <= h))
            .map(|x| (x.1, x.2))
            .collect()
    }
}

/// `name` without its trailing decimal number (`ProfilerStep#12` → `ProfilerStep#`), or `None`
/// when it does not end in a digit or is only digits.
pub fn periodic_base(name: &str) -> Option<&str> {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit());
    (base.len() < name.len() && !base.is_empty()).then_some(base)
}

/// torch.profiler's step ranges, preferred as iterations.
pub const PROFILER_STEP: &str = "ProfilerStep#";

/// The periodic phases (iterations), in the order given: the phases named base + trailing
/// number ([`periodic_base`]) for one base that occurs at least twice. `ProfilerStep#`
/// (torch.profiler's steps) when it does; otherwise the base whose phases cover the most time
/// (Σ `end_us − start_us` over its phases with both times), so an outer loop wins over the
/// numbered ranges inside it (`layers.0`, `layers.1`, …); ties: more phases, then the base
/// whose first phase comes first. Empty when no base repeats.
pub fn iterations(phases: &[Phase]) -> Vec<Phase> {
    // base → (phases, Σ µs, first position)
    let mut bases: HashMap<&str, (usize, i128, usize)> = HashMap::new();
    for (i, p) in phases.iter().enumerate() {
        if let Some(b) = periodic_base(&p.name) {
            let e = bases.entry(b).or_insert((0, 0, i));
            e.0 += 1;
            if let (Some(s), Some(t)) = (p.start_us, p.end_us) {
                e.1 += (i128::from(t) - i128::from(s)).max(0);
            }
        }
    }
    let best = match bases.get(PROFILER_STEP) {
        Some(&(n, _, _)) if n >= 2 => Some(PROFILER_STEP),
        _ => bases
            .into_iter()
            .filter(|(_, v)| v.0 >= 2)
            .max_by(|a, b| {
                (a.1 .1.cmp(&b.1 .1))
                    .then(a.1 .0.cmp(&b.1 .0))
                    .then(b.1 .2.cmp(&a.1 .2))
            })
            .map(|(b, _)| b),
    };
    let Some(best) = best else {
        return Vec::new();
    };
    phases
        .iter()
        .filter(|p| periodic_base(&p.name) == Some(best))
        .cloned()
        .collect()
}

/// [`iterations`] of [`PhaseSpan`]s: the same choice, with each distinct name's base found
/// once (by string id) rather than per phase.
pub fn iteration_spans(snap: &Snapshot, spans: &[PhaseSpan]) -> Vec<PhaseSpan> {
    // Distinct names → base id (u32::MAX: no base); distinct bases → their text.
    let mut base_of: FxHashMap<StrId, u32> = FxHashMap::default();
    let mut base_ids: HashMap<&str, u32> = HashMap::new();
    let mut base_text: Vec<&str> = Vec::new();
    let mut ids: Vec<u32> = Vec::with_capacity(spans.len());
    for p in spans {
        let id = *base_of
            .entry(p.name)
            .or_insert_with(|| match periodic_base(snap.str(p.name)) {
                Some(b) => *base_ids.entry(b).or_insert_with(|| {
                    base_text.push(b);
                    (base_text.len() - 1) as u32
                }),
                None => u32::MAX,
            });
        ids.push(id);
    }
    // base → (phases, Σ µs, first position)
    let mut bases: Vec<(usize, i128, usize)> = vec![(0, 0, usize::MAX); base_text.len()];
    for (i, (p, &b)) in spans.iter().zip(&ids).enumerate() {
        if let Some(e) = bases.get_mut(b as usize) {
            if e.0 == 0 {
                e.2 = i;
            }
            e.0 += 1;
            if let (Some(s), Some(t)) = (p.start_us, p.end_us) {
                e.1 += (i128::from(t) - i128::from(s)).max(0);
            }
        }
    }
    let best = match base_ids
        .get(PROFILER_STEP)
        .and_then(|&b| bases.get(b as usize))
    {
        Some(&(n, _, _)) if n >= 2 => base_ids.get(PROFILER_STEP).copied(),
        _ => bases
            .iter()
            .enumerate()
            .filter(|(_, v)| v.0 >= 2)
            .max_by(|a, b| {
                (a.1 .1.cmp(&b.1 .1))
                    .then(a.1 .0.cmp(&b.1 .0))
                    .then(b.1 .2.cmp(&a.1 .2))
            })
            .map(|(b, _)| b as u32),
    };
    let Some(best) = best else {
        return Vec::new();
    };
    spans
        .iter()
        .zip(&ids)
        .filter(|(_, &b)| b == best)
        .map(|(p, _)| *p)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ph(name: &str, s: i64, e: i64) -> Phase {
        Phase {
            name: name.into(),
            start_us: Some(s),
            end_us: Some(e),
            start_step: 0,
            end_step: 0,
        }
    }

    /// [`iteration_spans`] chooses as [`iterations`] does.
    #[test]
    fn spans_choose_as_phases_do() {
        let mut snap = crate::test_util::empty_snapshot();
        let cases: Vec<Vec<(&str, i64, i64)>> = vec![
            vec![
                ("layers.1", 0, 1),
                ("ProfilerStep#1", 0, 10),
                ("layers.2", 1, 2),
                ("ProfilerStep#2", 10, 20),
            ],
            vec![
                ("iter1", 0, 10),
                ("layers.1", 0, 1),
                ("layers.2", 1, 2),
                ("iter2", 10, 20),
            ],
            vec![("x1", 0, 1), ("y1", 1, 2)],
            vec![("b1", 0, 1), ("a1", 1, 2), ("a2", 2, 3), ("b2", 3, 4)],
            vec![
                ("b1", 0, 1),
                ("b2", 1, 3),
                ("a1", 3, 4),
                ("a2", 4, 5),
                ("a3", 5, 6),
            ],
        ];
        for case in cases {
            let phases: Vec<Phase> = case.iter().map(|&(n, a, b)| ph(n, a, b)).collect();
            let spans: Vec<PhaseSpan> = case
                .iter()
                .map(|&(n, a, b)| PhaseSpan {
                    name: snap.strings.intern(n),
                    start_us: Some(a),
                    end_us: Some(b),
                    start_step: 0,
                    end_step: 0,
                })
                .collect();
            let want: Vec<Phase> = iterations(&phases);
            let got: Vec<Phase> = iteration_spans(&snap, &spans)
                .iter()
                .map(|p| p.to_phase(&snap))
                .collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn bases() {
        assert_eq!(periodic_base("ProfilerStep#12"), Some("ProfilerStep#"));
        assert_eq!(periodic_base("forward"), None);
        assert_eq!(periodic_base("123"), None);
        assert_eq!(periodic_base(""), None);
    }

    #[test]
    fn choice_of_base() {
        let names = |v: Vec<Phase>| v.into_iter().map(|p| p.name).collect::<Vec<_>>();
        // ProfilerStep# first, even when another base is more frequent.
        let p = vec![
            ph("layers.1", 0, 1),
            ph("ProfilerStep#1", 0, 10),
            ph("layers.2", 1, 2),
            ph("layers.1", 10, 11),
            ph("ProfilerStep#2", 10, 20),
            ph("layers.2", 11, 12),
            ph("once", 5, 6),
        ];
        assert_eq!(names(iterations(&p)), ["ProfilerStep#1", "ProfilerStep#2"]);
        // Otherwise the base covering the most time: the outer loop.
        let p = vec![
            ph("iter1", 0, 10),
            ph("layers.1", 0, 1),
            ph("layers.2", 1, 2),
            ph("layers.3", 2, 3),
            ph("iter2", 10, 20),
        ];
        assert_eq!(names(iterations(&p)), ["iter1", "iter2"]);
        assert!(iterations(&[ph("x1", 0, 1), ph("y1", 1, 2)]).is_empty());
        // Ties: more phases, then the base seen first.
        assert_eq!(
            names(iterations(&[
                ph("b1", 0, 1),
                ph("a1", 1, 2),
                ph("a2", 2, 3),
                ph("b2", 3, 4)
            ])),
            ["b1", "b2"]
        );
        assert_eq!(
            names(iterations(&[
                ph("b1", 0, 1),
                ph("b2", 1, 3),
                ph("a1", 3, 4),
                ph("a2", 4, 5),
                ph("a3", 5, 6)
            ])),
            ["a1", "a2", "a3"]
        );
    }
}
