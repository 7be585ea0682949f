//! [`filter`]: a parsed filter over a device's allocations (module documentation of [`super`]).

use super::{ActionSel, FileMatch, Filter, FilterMatches, Pred, Term};
use crate::allocations::{Allocation, Allocations};
use crate::frames::frame_text;
use crate::search::Query;
use crate::site::{SiteCache, SiteKind};
use memviz_snapshot::{FrameId, Snapshot, StackId, NO_TIME};
use rustc_hash::FxHashMap;

/// The stack terms' results for one stack: bit `k` for the `k`-th stack term.
struct StackMasks<'f> {
    /// (bit, term) of the stack terms.
    terms: Vec<(u32, &'f Pred)>,
    /// Bits of the terms that look at frames (`frame`, bare words).
    frame_terms: Vec<(u32, &'f Query)>,
    /// Per stack: the mask, valid when `done`.
    masks: Vec<u64>,
    done: Vec<bool>,
    other: FxHashMap<StackId, u64>,
    /// Per frame: which frame terms match its text.
    frame_masks: FxHashMap<FrameId, u64>,
}

impl<'f> StackMasks<'f> {
    fn new(snap: &Snapshot, f: &'f Filter) -> Self {
        let mut terms = Vec::new();
        let mut frame_terms = Vec::new();
        for t in f.terms.iter().filter(|t| t.pred.is_stack_term()) {
            let bit = terms.len() as u32;
            terms.push((bit, &t.pred));
            if let Pred::Frame(q) | Pred::Text(q) = &t.pred {
                frame_terms.push((bit, q));
            }
        }
        let n = if terms.is_empty() {
            0
        } else {
            snap.stacks.len()
        };
        StackMasks {
            terms,
            frame_terms,
            masks: vec![0; n],
            done: vec![false; n],
            other: FxHashMap::default(),
            frame_masks: FxHashMap::default(),
        }
    }

    fn mask(&mut self, snap: &Snapshot, sites: &mut SiteCache, stack: StackId) -> u64 {
        let i = stack.0 as usize;
        if self.done.get(i) == Some(&true) {
            return self.masks.get(i).copied().unwrap_or(0);
        }
        if let Some(&m) = self.other.get(&stack) {
            return m;
        }
        let m = self.compute(snap, sites, stack);
        match (self.done.get_mut(i), self.masks.get_mut(i)) {
            (Some(d), Some(slot)) => {
                *d = true;
                *slot = m;
            }
            _ => {
                self.other.insert(stack, m);
            }
        }
        m
    }

    fn compute(&mut self, snap: &Snapshot, sites: &mut SiteCache, stack: StackId) -> u64 {
        // Frames: the union over the stack of each frame's hits.
        let mut frames_hit = 0u64;
        if !self.frame_terms.is_empty() {
            for &id in snap.stack(stack) {
                frames_hit |= match self.frame_masks.get(&id) {
                    Some(&m) => m,
                    None => {
                        let text = snap.frame(id).map(|f| frame_text(snap, f));
                        let m = text.map_or(0, |t| {
                            self.frame_terms
                                .iter()
                                .filter(|(_, q)| q.is_match(&t))
                                .fold(0u64, |m, (b, _)| m | 1u64 << b)
                        });
                        self.frame_masks.insert(id, m);
                        m
                    }
                };
            }
        }
        let site = sites.site(snap, stack);
        let has_frame = !matches!(site.kind, SiteKind::Autograd | SiteKind::None);
        let site_hit = |q: &Query| q.is_match(&site.label) || q.is_match(&site.path());
        let mut m = 0u64;
        for &(bit, pred) in &self.terms {
            let hit = match pred {
                Pred::Site(q) => site_hit(q),
                Pred::Text(q) => frames_hit & (1u64 << bit) != 0 || site_hit(q),
                Pred::Frame(_) => frames_hit & (1u64 << bit) != 0,
                Pred::File(fm) => has_frame && file_matches(fm, &site.file),
                Pred::Line(op, n) => has_frame && op.holds(site.line, *n),
                _ => false,
            };
            if hit {
                m |= 1u64 << bit;
            }
        }
        m
    }
}

/// The whole name, or a suffix of it that starts a path component; or the regex.
fn file_matches(fm: &FileMatch, file: &str) -> bool {
    match fm {
        FileMatch::Pattern(q) => q.is_match(file),
        FileMatch::Suffix(s) => {
            file == s
                || file
                    .strip_suffix(s.as_str())
                    .is_some_and(|head| head.ends_with('/') || head.ends_with('\\'))
        }
    }
}

/// What the row-wise terms need of the device, computed once.
struct Context {
    /// Ordinal per raw stream; built only for a `stream` term (it reads every trace's stream
    /// column).
    streams: crate::versions::StreamOrdinals,
    /// Absolute time of the first timed event.
    first_time: Option<i64>,
    /// Running maximum of the event times (forward-filled), for `at:TIME`.
    times: Vec<i64>,
    /// Per `phase` term (by term index): merged `[start, end]` µs intervals, sorted.
    phases: FxHashMap<usize, Vec<(i64, i64)>>,
}

impl Context {
    fn new(snap: &Snapshot, allocs: &Allocations, f: &Filter, warnings: &mut Vec<String>) -> Self {
        let device = allocs.device;
        let tr = snap.trace(device);
        let needs_times = f.terms.iter().any(|t| {
            matches!(
                t.pred,
                Pred::AtTime(_) | Pred::LifetimeUs(..) | Pred::Phase(_)
            )
        });
        let mut times = Vec::new();
        let mut first_time = None;
        if needs_times && allocs.timed {
            if let Some(tr) = tr {
                let mut last = i64::MIN;
                for t in tr.times() {
                    if t != NO_TIME {
                        first_time.get_or_insert(t);
                        last = last.max(t);
                    }
                    times.push(last);
                }
            }
        }
        let mut phases = FxHashMap::default();
        let mut spans = None;
        for (k, t) in f.terms.iter().enumerate() {
            if let Pred::Phase(q) = &t.pred {
                let spans = spans.get_or_insert_with(|| {
                    crate::annotations::phase_spans(snap, device, &crate::steps::Steps::default())
                });
                let mut iv: Vec<(i64, i64)> = spans
                    .iter()
                    .filter(|p| phase_name_matches(q, p.name(snap)))
                    .map(|p| (p.start_us.unwrap_or(i64::MIN), p.end_us.unwrap_or(i64::MAX)))
                    .collect();
                iv.sort_unstable();
                let mut merged: Vec<(i64, i64)> = Vec::with_capacity(iv.len());
                for (a, b) in iv {
                    match merged.last_mut() {
                        Some(last) if a <= last.1 => last.1 = last.1.max(b),
                        _ => merged.push((a, b)),
                    }
                }
                if spans.is_empty() {
                    warnings.push(format!(
                        "device {device} has no annotation phases: {} matches nothing",
                        t.text
                    ));
                }
                phases.insert(k, merged);
            }
        }
        if !allocs.timed {
            for t in &f.terms {
                if matches!(t.pred, Pred::AtTime(_) | Pred::LifetimeUs(..)) {
                    warnings.push(format!(
                        "device {device} has no event times: {} matches nothing",
                        t.text
                    ));
                }
            }
        }
        Context {
            streams: if f.terms.iter().any(|t| matches!(t.pred, Pred::Stream(..))) {
                crate::versions::stream_ordinals(snap)
            } else {
                crate::versions::StreamOrdinals::default()
            },
            first_time,
            times,
            phases,
        }
    }

    /// The last event at or before `us` after the first timed event (−1: before every event).
    fn event_at(&self, us: i64) -> Option<i64> {
        let t = self.first_time?.saturating_add(us);
        Some(self.times.partition_point(|&x| x <= t) as i64 - 1)
    }
}

fn phase_name_matches(q: &Query, name: &str) -> bool {
    match q {
        Query::Substring(exact) => name == exact,
        Query::Regex(_) => q.is_match(name),
    }
}

fn alive_after(a: &Allocation, event: i64) -> bool {
    a.alloc_event.is_none_or(|e| i64::from(e) <= event)
        && a.free_event.is_none_or(|e| i64::from(e) > event)
}

/// One row-wise term (not about the stack).
fn row_term(k: usize, t: &Term, a: &Allocation, device: i64, cx: &Context) -> bool {
    match &t.pred {
        Pred::Size(op, n) => op.holds(a.size, *n),
        Pred::Stream(op, n) => {
            let ord = cx.streams.get(a.stream).map(u64::from);
            op.holds(a.stream, *n) || ord.is_some_and(|o| op.holds(o, *n))
        }
        Pred::Action(sel) => match sel {
            ActionSel::Alloc => a.alloc_event.is_some(),
            ActionSel::Free => a.free_event.is_some(),
            ActionSel::Start => a.alloc_event.is_none(),
            ActionSel::Nothing => false,
        },
        Pred::LifetimeEvents(op, n) => op.holds(a.lifetime_events, *n),
        Pred::LifetimeUs(op, n) => a.lifetime_us.is_some_and(|v| op.holds(v, *n)),
        Pred::AtPeak => a.alive_at_peak,
        Pred::AtEvent(e) => alive_after(a, *e),
        Pred::AtTime(us) => cx.event_at(*us).is_some_and(|e| alive_after(a, e)),
        Pred::Device(op, n) => op.holds(device, *n),
        Pred::Phase(_) => match (a.alloc_us, cx.phases.get(&k)) {
            (Some(t), Some(iv)) => {
                let i = iv.partition_point(|p| p.0 <= t);
                i.checked_sub(1)
                    .and_then(|i| iv.get(i))
                    .is_some_and(|p| t <= p.1)
            }
            _ => false,
        },
        // Stack terms are read from the mask.
        _ => false,
    }
}

/// The rows of `allocs` (from [`crate::allocations::allocations`] of the same device and
/// timeline) that `f` keeps; `sites` is the file's [`SiteCache`] under the user code in force.
pub fn filter(
    snap: &Snapshot,
    allocs: &Allocations,
    sites: &mut SiteCache,
    f: &Filter,
) -> FilterMatches {
    let mut warnings = Vec::new();
    let cx = Context::new(snap, allocs, f, &mut warnings);
    let mut masks = StackMasks::new(snap, f);
    // Each stack term: (bit, negate); each row term: (index, term).
    let mut stack_bits: Vec<(u32, bool)> = Vec::new();
    let mut row_terms: Vec<(usize, &Term)> = Vec::new();
    for (k, t) in f.terms.iter().enumerate() {
        if t.pred.is_stack_term() {
            stack_bits.push((stack_bits.len() as u32, t.negate));
        } else {
            row_terms.push((k, t));
        }
    }
    // The stack terms hold when mask & want == expect.
    let (mut want, mut expect) = (0u64, 0u64);
    for &(bit, negate) in &stack_bits {
        want |= 1u64 << bit;
        if !negate {
            expect |= 1u64 << bit;
        }
    }
    let device = allocs.device;
    let mut out = FilterMatches {
        warnings,
        ..FilterMatches::default()
    };
    for a in &allocs.rows {
        let ok = row_terms
            .iter()
            .all(|&(k, t)| row_term(k, t, a, device, &cx) != t.negate)
            && (want == 0 || masks.mask(snap, sites, a.stack) & want == expect);
        if ok {
            out.elements.push(a.element);
            out.bytes = out.bytes.saturating_add(a.size);
        }
    }
    out.count = out.elements.len();
    out
}
