//! Building [`Steps`]: the replay of the module documentation.
//!
//! *Memory.* Nothing of the size of the output is held twice: the replay reads the timeline's
//! steps in place (or takes them, [`Steps::build_dropping_steps`], giving their memory back as
//! it goes), packs the per-action columns and the per-push ones (by push order) a block of 64
//! at a time as they are produced, and keeps per element only its push order and end step
//! (8 bytes) plus two bitset structures ([`sets`](super::sets), about 0.3 byte). The per-element
//! columns are then packed by element from those, one vector freed at a time. On the 150 MB
//! tiles (`mem_budget`: 646 k / 897 k elements, 1.25 M / 1.49 M actions) the layout is 11.4 /
//! 12.5 bytes per trace entry (per element 15.5 bytes packed, per action 5.5, per slide 8), and
//! taking the steps the build peaks about 1 MB above the heap it leaves; copying the steps, a
//! lazy stack, a `u32` Fenwick tree and the columns unpacked until the end took 0.4× the file
//! more.

use super::packed::{reserve_extrapolated, PackedBuilder};
use super::sets::{OrderCounts, TopSet};
use super::*;
use crate::timeline::{Element, Step};

/// A timeline's steps taken from it in order as they are replayed: reversed once in place, then
/// popped, the vector trimmed every 1/32 of them so its memory goes back while the layout grows.
struct TakenSteps<'a> {
    steps: &'a mut Vec<Step>,
    trim_at: usize,
    chunk: usize,
}

impl<'a> TakenSteps<'a> {
    fn new(steps: &'a mut Vec<Step>) -> Self {
        steps.reverse();
        let chunk = (steps.len() / 32).max(1 << 12);
        TakenSteps {
            trim_at: steps.len().saturating_sub(chunk),
            steps,
            chunk,
        }
    }
}

impl Iterator for TakenSteps<'_> {
    type Item = (u32, u32);
    #[inline]
    fn next(&mut self) -> Option<(u32, u32)> {
        let s = self.steps.pop()?;
        if self.steps.len() <= self.trim_at {
            self.steps.shrink_to_fit();
            self.trim_at = self.steps.len().saturating_sub(self.chunk);
        }
        Some((s.element, s.event))
    }
}

impl Steps {
    pub fn build(timeline: &Timeline) -> Steps {
        Steps::build_counting(timeline, None).0
    }

    /// [`Steps::build`] taking the timeline's steps as they are replayed (they are empty
    /// afterwards, as after [`Timeline::drop_steps`]): their memory goes back while the model
    /// grows, so building it costs about the model's size more than the timeline held, not
    /// the model plus the steps.
    pub fn build_dropping_steps(timeline: &mut Timeline) -> Steps {
        Steps::build_dropping_steps_counting(timeline, None).0
    }

    /// [`Steps::build`], also giving each element's slides below it during its life (what a
    /// layout of every polyline point needs for its offsets) when there are at most
    /// `count_up_to` actions and [`Steps::slides_below_total`] is at most `count_up_to` too:
    /// 4 bytes per element more, counted by the replay itself.
    pub fn build_counting(
        timeline: &Timeline,
        count_up_to: Option<u64>,
    ) -> (Steps, Option<Vec<u32>>) {
        let steps = &timeline.steps;
        replay(
            &timeline.elements,
            &timeline.initially_present,
            steps.len(),
            steps.iter().map(|s| (s.element, s.event)),
            count_up_to,
        )
    }

    /// [`Steps::build_counting`] taking the timeline's steps ([`Steps::build_dropping_steps`]).
    pub fn build_dropping_steps_counting(
        timeline: &mut Timeline,
        count_up_to: Option<u64>,
    ) -> (Steps, Option<Vec<u32>>) {
        let Timeline {
            elements,
            initially_present,
            steps,
            ..
        } = timeline;
        let count = steps.len();
        let built = replay(
            elements,
            initially_present,
            count,
            TakenSteps::new(steps),
            count_up_to,
        );
        *steps = Vec::new();
        built
    }
}

/// Pass 1 of the module documentation in progress.
struct Replay<'a> {
    elements: &'a [Element],
    /// Push order per element ([`NO_ORDER`] until pushed).
    order: Vec<u32>,
    /// End step per element: 0 while not freed (a free's end step is at least 1).
    end: Vec<u32>,
    live: TopSet,
    /// The largest live push order.
    top: Option<u32>,
    /// Push orders of the slides so far.
    slid: OrderCounts,
    by_order: PackedBuilder,
    /// Start step and base bytes by push order.
    start: PackedBuilder,
    base: PackedBuilder,
    action_live: PackedBuilder,
    action_event: PackedBuilder,
    slides: Vec<Slide>,
    actions: usize,
    drawn_count: u32,
    drawn: u64,
    t: u32,
    peak_bytes: u64,
    peak_step: u32,
    /// Σ over ended elements of the slides below their push order at their end, and Σ over
    /// pushed elements of the slides before their push: an element's slides below it during
    /// its life are the difference (every slide before its push is below it).
    slides_below_at_end: u64,
    slides_before_push: u64,
    /// Per element, when exact mode is possible: the slides before its push, then (once it
    /// ends) its slides below it during its life, which exact mode's offsets need.
    counts: Option<Vec<u32>>,
}

impl Replay<'_> {
    fn height(&self, e: usize) -> u64 {
        self.elements.get(e).map_or(0, |x| x.size_bytes)
    }

    fn push(&mut self, e: usize) {
        let o = self.drawn_count;
        if let Some(slot) = self.order.get_mut(e) {
            *slot = o;
        }
        self.drawn_count += 1;
        self.by_order.push(e as u32);
        self.start.push(self.t);
        self.base.push(self.drawn);
        self.drawn = self.drawn.saturating_add(self.height(e));
        self.live.insert(o);
        self.top = Some(o);
        self.slides_before_push += self.slides.len() as u64;
        if let Some(c) = self.counts.as_mut().and_then(|c| c.get_mut(e)) {
            *c = self.slides.len() as u32;
        }
    }

    /// Element `e` (push order `o`) ends: the slides below it so far.
    fn ended(&mut self, e: usize, o: u32) {
        let below = self.slid.below(o);
        self.slides_below_at_end += u64::from(below);
        if let Some(c) = self.counts.as_mut().and_then(|c| c.get_mut(e)) {
            *c = below.saturating_sub(*c);
        }
    }

    /// One action's timestep: its live bytes and event, and the peak so far.
    fn action(&mut self, event: u32) {
        if self.drawn > self.peak_bytes || self.action_live.is_empty() {
            self.peak_bytes = self.drawn;
            self.peak_step = self.t;
        }
        self.action_live.push(self.drawn);
        self.action_event.push(event);
        self.t = self.t.saturating_add(1);
    }

    fn step(&mut self, e: usize, event: u32) {
        let Some(&o) = self.order.get(e) else {
            return;
        };
        if o == NO_ORDER {
            self.push(e);
            self.action(event);
            return;
        }
        self.action(event);
        match self.end.get_mut(e) {
            // Cannot come from timeline::build (an element is pushed and freed once).
            Some(end) if *end != 0 => return,
            Some(end) => *end = self.t,
            None => return,
        }
        self.ended(e, o);
        self.live.remove(o);
        if self.top == Some(o) {
            self.top = self.live.max_below(o);
        } else {
            if self.slides.len() == self.slides.capacity() {
                reserve_extrapolated(&mut self.slides, 1, self.action_live.len(), self.actions);
            }
            self.slides.push(Slide {
                step: self.t,
                order: o,
            });
            self.slid.add(o);
            self.t = self.t.saturating_add(SLIDE_STEPS);
        }
        self.drawn = self.drawn.saturating_sub(self.height(e));
    }
}

/// The replay over `initially_present` and `count` actions.
fn replay(
    elements: &[Element],
    initially_present: &[u32],
    count: usize,
    actions: impl Iterator<Item = (u32, u32)>,
    count_up_to: Option<u64>,
) -> (Steps, Option<Vec<u32>>) {
    let n = elements.len();
    // The flat-graph quirk: without steps, the last initially present element is the action.
    let (initial, quirk) = match initially_present.split_last() {
        Some((&last, rest)) if count == 0 => (rest, Some((last, NO_EVENT))),
        _ => (initially_present, None),
    };
    let count = count + usize::from(quirk.is_some());
    // Every action pushes or frees a drawn element (apart from repeated frees, only in a
    // hand-made timeline), and every drawn element has two points: with more actions than the
    // limit allows points, the counts are not kept (should a hand-made timeline prove that
    // wrong, the caller counts them itself).
    let counts = count_up_to
        .filter(|&limit| count as u64 <= limit)
        .map(|_| vec![0u32; n]);
    let mut r = Replay {
        elements,
        order: vec![NO_ORDER; n],
        end: vec![0; n],
        live: TopSet::new(n),
        top: None,
        slid: OrderCounts::new(n),
        by_order: PackedBuilder::new(n),
        start: PackedBuilder::new(n),
        base: PackedBuilder::new(n),
        action_live: PackedBuilder::new(count),
        action_event: PackedBuilder::new(count),
        slides: Vec::new(),
        actions: count,
        drawn_count: 0,
        drawn: 0,
        t: 0,
        peak_bytes: 0,
        peak_step: 0,
        slides_below_at_end: 0,
        slides_before_push: 0,
        counts,
    };
    for &e in initial {
        if r.order.get(e as usize) == Some(&NO_ORDER) {
            r.push(e as usize);
        }
    }
    for (e, event) in quirk.into_iter().chain(actions) {
        r.step(e as usize, event);
    }
    // Still live at the end.
    for e in 0..n {
        if let (Some(&o), Some(&0)) = (r.order.get(e), r.end.get(e)) {
            if o != NO_ORDER {
                if let Some(end) = r.end.get_mut(e) {
                    *end = NO_END;
                }
                r.ended(e, o);
            }
        }
    }
    let slides_below_total = r.slides_below_at_end.saturating_sub(r.slides_before_push);
    let points = 2 * u64::from(r.drawn_count) + 2 * slides_below_total;
    if count_up_to.is_none_or(|limit| points > limit) {
        r.counts = None;
    }
    let Replay {
        order,
        end,
        by_order,
        start,
        base,
        action_live,
        action_event,
        mut slides,
        t,
        peak_bytes,
        peak_step,
        counts,
        ..
    } = r;
    slides.shrink_to_fit();
    let by_order = by_order.finish();
    let start = start.finish();
    let base = base.finish();
    let mut model = Steps {
        steps: t,
        action_live: action_live.finish(),
        action_event: action_event.finish(),
        peak_bytes,
        peak_step,
        slides_below_total,
        ..Steps::default()
    };
    // The per-element columns, each vector freed once packed (the order first: the start
    // steps and bases by element read it packed, so that its vector is not held beside them).
    model.order = Packed::from_fn(n, |e| order.get(e).map_or(0, |&o| u64::from(o)));
    drop(order);
    model.end_step = Packed::from_fn(n, |e| end.get(e).map_or(0, |&x| u64::from(x)));
    drop(end);
    // By element from by push order, in one pass: the same values in about the same order
    // (only the initially present elements move), so about the same bytes.
    let by_element = |by_push: &Packed, undrawn: u64| {
        let hint = by_push.value_bytes();
        let mut b = PackedBuilder::with_bytes(n, hint.saturating_add(hint / 16));
        for o in model.order.iter::<u32>() {
            b.push(match o {
                NO_ORDER => undrawn,
                o => by_push.get_u64(o as usize).unwrap_or(0),
            });
        }
        b.finish()
    };
    // A never-drawn element (only in a hand-made timeline) starts at NO_START: `span` then
    // needs no read of `order`.
    let start_step = by_element(&start, u64::from(NO_START));
    drop(start);
    let base_bytes = by_element(&base, 0);
    drop(base);
    model.start_step = start_step;
    model.base_bytes = base_bytes;
    model.height_bytes = Packed::from_fn(n, |e| elements.get(e).map_or(0, |x| x.size_bytes));
    model.by_order = by_order;
    model.slides = slides;
    (model, counts)
}
