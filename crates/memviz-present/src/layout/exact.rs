//! Pass 2 of [`PointMode::Exact`]: every point of every element, written by a second replay
//! with a sorted stack (module documentation). It replays from the step model, not from the
//! timeline's steps (which [`Layout::build_dropping_steps`] has already given back): the pushes
//! are the push orders at their start steps, the frees the freed elements sorted by end step.
//! Every action has its own timestep, so that order is the steps' order (the initially present
//! elements, pushed at 0, come before a free by the first action).

use super::*;
use memviz_analysis::steps::sets::OrderCounts;
use memviz_analysis::timeline::Element;

/// `end` of an element live at the end.
const NO_END: u32 = u32::MAX;

/// The flat polylines ([`Layout::point_offsets`], [`Layout::point_steps`],
/// [`Layout::point_bottoms`]).
pub(super) struct PointColumns {
    pub(super) offsets: Vec<u32>,
    pub(super) steps: Vec<u32>,
    pub(super) bottoms: Vec<u64>,
}

struct PointSink {
    steps: Vec<u32>,
    bottoms: Vec<u64>,
    cursor: Vec<u32>,
}

impl PointSink {
    fn write(&mut self, e: u32, step: u32, bottom: u64) {
        let Some(c) = self.cursor.get_mut(e as usize) else {
            return;
        };
        if let (Some(s), Some(b)) = (
            self.steps.get_mut(*c as usize),
            self.bottoms.get_mut(*c as usize),
        ) {
            *s = step;
            *b = bottom;
            *c += 1;
        }
    }
}

/// Every element's points; `counts` are the elements' slides below them during their lives
/// (the step model's replay keeps them when exact mode is possible; else they are counted
/// here).
pub(super) fn points(
    model: &Steps,
    elements: &[Element],
    counts: Option<Vec<u32>>,
) -> PointColumns {
    let slides = &model.slides[..];
    let last_step = model.step_count();
    let n = model.element_count();
    // Push order and end step per element (end NO_END for one live at the end, 0 for one never
    // drawn), element and start step and bottom per push order.
    let order: Vec<u32> = (0..n as u32)
        .map(|e| model.order(e).unwrap_or(NO_ORDER))
        .collect();
    let end: Vec<u32> = (0..n as u32)
        .map(|e| match (model.order(e), model.free_step(e)) {
            (None, _) => 0,
            (Some(_), Some(f)) => f.saturating_add(1),
            (Some(_), None) => NO_END,
        })
        .collect();
    let by_order: Vec<u32> = model.drawn_elements().collect();
    let start: Vec<u32> = by_order.iter().map(|&e| model.start_of(e)).collect();
    let (order, end) = (&order[..], &end[..]);
    let drawn = by_order.len();
    // Heights by push order, 8 bytes apart (a free's height read from the 24-byte elements
    // was a tenth of this pass).
    let heights: Vec<u64> = by_order
        .iter()
        .map(|&e| elements.get(e as usize).map_or(0, |x| x.size_bytes))
        .collect();
    // The frees in time order: the push order freed at each end step (every action has its
    // own timestep, so no two frees share one).
    let mut by_end: Vec<u32> = vec![NO_ORDER; last_step as usize + 1];
    for (&o, &t) in order.iter().zip(end) {
        if o != NO_ORDER && t != NO_END {
            if let Some(slot) = by_end.get_mut(t as usize) {
                *slot = o;
            }
        }
    }
    let frees = || {
        by_end
            .iter()
            .enumerate()
            .filter(|&(_, &o)| o != NO_ORDER)
            .map(|(t, &o)| (t as u32, o))
    };

    // Points per element: 2, and 2 per slide below it during its life.
    let mut offsets = vec![0u32; n + 1];
    let counts = counts.unwrap_or_else(|| slides_below(&by_order, &start, order, end, slides));
    for (&o, (slot, &k)) in order.iter().zip(offsets.iter_mut().skip(1).zip(&counts)) {
        if o != NO_ORDER {
            *slot = k.saturating_mul(2).saturating_add(2);
        }
    }
    drop(counts);
    let mut acc: u32 = 0;
    for slot in offsets.iter_mut() {
        acc = acc.saturating_add(*slot);
        *slot = acc;
    }
    let total = acc as usize;

    let mut out = PointSink {
        steps: vec![0u32; total],
        bottoms: vec![0u64; total],
        cursor: offsets.get(..n).unwrap_or(&[]).to_vec(),
    };
    let mut last_bottom: Vec<u64> = by_order
        .iter()
        .map(|&e| model.base_bytes(e).unwrap_or(0))
        .collect();
    // Live push orders, sorted (pushes come in increasing order).
    let mut stack: Vec<u32> = Vec::new();
    let mut next = 0usize;
    let push = |o: usize, stack: &mut Vec<u32>, out: &mut PointSink, last_bottom: &[u64]| {
        let (Some(&e), Some(&s), Some(&b)) = (by_order.get(o), start.get(o), last_bottom.get(o))
        else {
            return;
        };
        stack.push(o as u32);
        out.write(e, s, b);
    };
    for (t, o) in frees() {
        while next < drawn && start.get(next).is_some_and(|&s| s < t) {
            push(next, &mut stack, &mut out, &last_bottom);
            next += 1;
        }
        let (Some(&e), Some(&lb)) = (by_order.get(o as usize), last_bottom.get(o as usize)) else {
            continue;
        };
        out.write(e, t, lb);
        let Ok(pos) = stack.binary_search(&o) else {
            continue;
        };
        let size = heights.get(o as usize).copied().unwrap_or(0);
        for &above in stack.get(pos + 1..).unwrap_or(&[]) {
            let (Some(&x), Some(b)) = (
                by_order.get(above as usize),
                last_bottom.get_mut(above as usize),
            ) else {
                continue;
            };
            let nb = b.saturating_sub(size);
            out.write(x, t, *b);
            out.write(x, t.saturating_add(SLIDE_STEPS), nb);
            *b = nb;
        }
        stack.remove(pos);
    }
    while next < drawn {
        push(next, &mut stack, &mut out, &last_bottom);
        next += 1;
    }
    for &o in &stack {
        if let (Some(&x), Some(&b)) = (by_order.get(o as usize), last_bottom.get(o as usize)) {
            out.write(x, last_step, b);
        }
    }
    PointColumns {
        offsets,
        steps: out.steps,
        bottoms: out.bottoms,
    }
}

/// Per element, its slides below it during its life: the slides below its order before its end
/// minus the slides before its push (all below it), by a sweep over the frees in time order
/// with the slides' orders so far.
fn slides_below(
    by_order: &[u32],
    start: &[u32],
    order: &[u32],
    end: &[u32],
    slides: &[Slide],
) -> Vec<u32> {
    let mut counts = vec![0u32; order.len()];
    // The slides before each push first (start steps grow with the push order).
    let mut before = 0usize;
    for (&e, &s) in by_order.iter().zip(start) {
        while slides.get(before).is_some_and(|x| x.step <= s) {
            before += 1;
        }
        if let Some(slot) = counts.get_mut(e as usize) {
            *slot = before as u32;
        }
    }
    let mut frees: Vec<(u32, u32)> = order
        .iter()
        .zip(end)
        .filter(|&(&o, &t)| o != NO_ORDER && t != NO_END)
        .map(|(&o, &t)| (t, o))
        .collect();
    frees.sort_unstable();
    let mut slid = OrderCounts::new(by_order.len());
    let mut done = 0usize;
    let count = |o: u32, slid: &OrderCounts, counts: &mut [u32]| {
        let Some(&e) = by_order.get(o as usize) else {
            return;
        };
        if let Some(slot) = counts.get_mut(e as usize) {
            *slot = slid.below(o).saturating_sub(*slot);
        }
    };
    for &(t, o) in &frees {
        while let Some(s) = slides.get(done).filter(|s| s.step < t) {
            slid.add(s.order);
            done += 1;
        }
        count(o, &slid, &mut counts);
    }
    for s in slides.get(done..).unwrap_or(&[]) {
        slid.add(s.order);
    }
    for (o, &e) in by_order.iter().enumerate() {
        if end.get(e as usize) == Some(&NO_END) {
            count(o as u32, &slid, &mut counts);
        }
    }
    counts
}
