//! Building a [`Layout`]: the two replays of the module documentation.

use super::*;

pub(super) struct Fenwick(Vec<u32>);
impl Fenwick {
    fn new(n: usize) -> Self {
        Fenwick(vec![0; n + 1])
    }
    fn add(&mut self, i: usize) {
        let mut i = i + 1;
        while i < self.0.len() {
            self.0[i] = self.0[i].saturating_add(1);
            i += i & i.wrapping_neg();
        }
    }
    /// Sum over indices `< i`.
    fn prefix(&self, i: usize) -> u32 {
        let mut i = i.min(self.0.len().saturating_sub(1));
        let mut s = 0u32;
        while i > 0 {
            s = s.saturating_add(self.0[i]);
            i &= i - 1;
        }
        s
    }
}

struct PointSink {
    steps: Vec<u32>,
    bottoms: Vec<u64>,
    cursor: Vec<u32>,
}
impl PointSink {
    fn write(&mut self, e: usize, step: u32, bottom: u64) {
        let Some(c) = self.cursor.get_mut(e) else {
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

/// The replay order of §3.2/§3.4: initially present elements (after the flat-graph quirk), then
/// the actions as `(element, event)`.
pub(super) fn replay_lists(timeline: &Timeline) -> (Vec<u32>, Vec<(u32, u32)>) {
    let mut initial = timeline.initially_present.clone();
    let mut actions: Vec<(u32, u32)> = timeline
        .steps
        .iter()
        .map(|s| (s.element, s.event))
        .collect();
    if actions.is_empty() {
        if let Some(last) = initial.pop() {
            actions.push((last, NO_EVENT));
        }
    }
    (initial, actions)
}
/// A [`Layout`] being built: its columns as vectors, packed at the end ([`Draft::finish`]).
#[derive(Default)]
struct Draft {
    mode: PointMode,
    height_bytes: Vec<u64>,
    start_step: Vec<u32>,
    end_step: Vec<u32>,
    base_bytes: Vec<u64>,
    order: Vec<u32>,
    by_order: Vec<u32>,
    steps: u32,
    action_live: Vec<u64>,
    action_event: Vec<u32>,
    peak_bytes: u64,
    peak_step: u32,
    slides: Vec<Slide>,
    exact_point_count: u64,
    fell_back: bool,
    point_offsets: Vec<u32>,
    point_steps: Vec<u32>,
    point_bottoms: Vec<u64>,
}

/// A column packed, its vector freed at once (one column's vector at a time at the peak).
fn pack<T: PackedValue>(v: Vec<T>) -> Packed {
    Packed::from_slice(&v)
}

impl Layout {
    pub fn build(timeline: &Timeline, options: LayoutOptions) -> Layout {
        let n = timeline.elements.len();
        let (initial, actions) = replay_lists(timeline);
        let mut l = Draft {
            height_bytes: timeline.elements.iter().map(|e| e.size_bytes).collect(),
            start_step: vec![0; n],
            end_step: vec![0; n],
            base_bytes: vec![0; n],
            order: vec![NO_ORDER; n],
            by_order: Vec::with_capacity(n),
            ..Draft::default()
        };
        // Slides below each element: (slides so far at push) then (slides below during its life).
        let mut slide_count: Vec<u32> = vec![0; n];
        let mut fenwick = Fenwick::new(n);
        // Lazy stack of push orders: the last entry is always live.
        let mut stack: Vec<u32> = Vec::new();
        let mut ended: Vec<bool> = vec![false; n];
        let mut drawn: u64 = 0;
        let mut t: u32 = 0;
        l.action_live.reserve_exact(actions.len());
        l.action_event.reserve_exact(actions.len());

        let push = |l: &mut Draft,
                    stack: &mut Vec<u32>,
                    slide_count: &mut [u32],
                    drawn: &mut u64,
                    t: u32,
                    e: usize| {
            let o = l.by_order.len() as u32;
            l.order[e] = o;
            l.by_order.push(e as u32);
            l.start_step[e] = t;
            l.base_bytes[e] = *drawn;
            *drawn = drawn.saturating_add(l.height_bytes[e]);
            stack.push(o);
            slide_count[e] = l.slides.len() as u32;
        };
        for &e in &initial {
            let e = e as usize;
            if e < n && l.order[e] == NO_ORDER {
                push(&mut l, &mut stack, &mut slide_count, &mut drawn, t, e);
            }
        }
        for &(e, event) in &actions {
            let e = e as usize;
            if e >= n {
                continue;
            }
            if l.order[e] == NO_ORDER {
                push(&mut l, &mut stack, &mut slide_count, &mut drawn, t, e);
                l.push_action(drawn, event, t);
                t = t.saturating_add(1);
            } else {
                l.push_action(drawn, event, t);
                t = t.saturating_add(1);
                if ended[e] {
                    // Cannot come from timeline::build (an element is pushed and freed once).
                    continue;
                }
                ended[e] = true;
                l.end_step[e] = t;
                let o = l.order[e];
                slide_count[e] = fenwick.prefix(o as usize).saturating_sub(slide_count[e]);
                if stack.last() == Some(&o) {
                    stack.pop();
                    while let Some(&top) = stack.last() {
                        match l.by_order.get(top as usize) {
                            Some(&x) if ended[x as usize] => {
                                stack.pop();
                            }
                            _ => break,
                        }
                    }
                } else {
                    l.slides.push(Slide { step: t, order: o });
                    fenwick.add(o as usize);
                    t = t.saturating_add(SLIDE_STEPS);
                }
                drawn = drawn.saturating_sub(l.height_bytes[e]);
            }
        }
        // Still on the stack at the end.
        let mut points: u64 = 0;
        for &e in &l.by_order {
            let e = e as usize;
            if !ended[e] {
                l.end_step[e] = NO_END;
                slide_count[e] = fenwick
                    .prefix(l.order[e] as usize)
                    .saturating_sub(slide_count[e]);
            }
            points += 2 + 2 * slide_count[e] as u64;
        }
        l.exact_point_count = points;
        l.steps = t;
        l.slides.shrink_to_fit();

        let exact = options.mode == PointMode::Exact
            && points <= options.max_exact_points
            && points < u32::MAX as u64;
        l.fell_back = options.mode == PointMode::Exact && !exact;
        if exact {
            l.mode = PointMode::Exact;
            l.fill_points(&initial, &actions, &slide_count);
        } else {
            l.mode = PointMode::Compact;
        }
        let mut layout = l.finish();
        if !exact {
            layout.build_slide_tree();
        }
        layout
    }

    pub(super) fn build_slide_tree(&mut self) {
        let size = self.slides.len().div_ceil(SLIDE_BLOCK).next_power_of_two();
        let mut tree = vec![NO_ORDER; 2 * size];
        for (i, s) in self.slides.iter().enumerate() {
            let leaf = &mut tree[size + i / SLIDE_BLOCK];
            *leaf = (*leaf).min(s.order);
        }
        for i in (1..size).rev() {
            tree[i] = tree[2 * i].min(tree[2 * i + 1]);
        }
        self.slide_tree = tree;
        self.slide_tree_size = size;
    }
}

impl Draft {
    /// The layout with its columns packed. On the 150 MB real-file tile (897 k elements, 1.49 M
    /// actions) the per-element columns take 15.5 bytes per element instead of 32 (height 4.1,
    /// start 1.6, end 2.9, base 4.3, order 1.3, by order 1.3) and the per-action ones 5.5 per
    /// action instead of 12 (live bytes 4.25, event 1.25): 52.5 -> 28.0 MB for the layout.
    fn finish(self) -> Layout {
        // A never-drawn element (only in a hand-made timeline) starts at NO_START: `span` then
        // needs no read of `order`.
        let mut start_step = self.start_step;
        for (s, &o) in start_step.iter_mut().zip(&self.order) {
            if o == NO_ORDER {
                *s = NO_START;
            }
        }
        Layout {
            mode: self.mode,
            height_bytes: pack(self.height_bytes),
            start_step: pack(start_step),
            end_step: pack(self.end_step),
            base_bytes: pack(self.base_bytes),
            order: pack(self.order),
            by_order: pack(self.by_order),
            steps: self.steps,
            action_live: pack(self.action_live),
            action_event: pack(self.action_event),
            peak_bytes: self.peak_bytes,
            peak_step: self.peak_step,
            slides: self.slides,
            exact_point_count: self.exact_point_count,
            fell_back: self.fell_back,
            point_offsets: self.point_offsets,
            point_steps: self.point_steps,
            point_bottoms: self.point_bottoms,
            slide_tree: Vec::new(),
            slide_tree_size: 0,
            hit: std::sync::OnceLock::new(),
        }
    }

    /// Pass 2 of exact mode: replay with a sorted stack and write every point.
    pub(super) fn fill_points(
        &mut self,
        initial: &[u32],
        actions: &[(u32, u32)],
        slide_count: &[u32],
    ) {
        let n = self.height_bytes.len();
        let mut offsets = Vec::with_capacity(n + 1);
        let mut acc: u32 = 0;
        offsets.push(0);
        for (&o, &c) in self.order.iter().zip(slide_count) {
            if o != NO_ORDER {
                acc = acc.saturating_add(2 + 2 * c);
            }
            offsets.push(acc);
        }
        let total = acc as usize;
        let mut out = PointSink {
            steps: vec![0u32; total],
            bottoms: vec![0u64; total],
            cursor: offsets[..n].to_vec(),
        };
        // The same replay as pass 1, now with real removals.
        let mut stack: Vec<u32> = Vec::new();
        let mut seen = vec![false; n];
        let mut ended = vec![false; n];
        let mut last_bottom: Vec<u64> = self.base_bytes.clone();
        let mut t: u32 = 0;
        for &e in initial {
            let e = e as usize;
            if e < n && self.order[e] != NO_ORDER && !seen[e] {
                seen[e] = true;
                stack.push(self.order[e]);
                out.write(e, t, self.base_bytes[e]);
            }
        }
        for &(e, _) in actions {
            let e = e as usize;
            if e >= n || self.order[e] == NO_ORDER {
                continue;
            }
            if !seen[e] {
                seen[e] = true;
                stack.push(self.order[e]);
                out.write(e, t, self.base_bytes[e]);
                t = t.saturating_add(1);
                continue;
            }
            t = t.saturating_add(1);
            if ended[e] {
                continue;
            }
            ended[e] = true;
            let o = self.order[e];
            out.write(e, t, last_bottom[e]);
            let Ok(pos) = stack.binary_search(&o) else {
                continue;
            };
            let size = self.height_bytes[e];
            if pos + 1 < stack.len() {
                for &above in &stack[pos + 1..] {
                    let Some(&x) = self.by_order.get(above as usize) else {
                        continue;
                    };
                    let x = x as usize;
                    let b = last_bottom[x];
                    let nb = b.saturating_sub(size);
                    out.write(x, t, b);
                    out.write(x, t.saturating_add(SLIDE_STEPS), nb);
                    last_bottom[x] = nb;
                }
                t = t.saturating_add(SLIDE_STEPS);
            }
            stack.remove(pos);
        }
        for &o in &stack {
            if let Some(&x) = self.by_order.get(o as usize) {
                out.write(x as usize, t, last_bottom[x as usize]);
            }
        }
        self.point_offsets = offsets;
        self.point_steps = out.steps;
        self.point_bottoms = out.bottoms;
    }

    /// One action's timestep `t`: its live bytes and event, and the peak so far.
    pub(super) fn push_action(&mut self, drawn: u64, event: u32, t: u32) {
        if drawn > self.peak_bytes || self.action_live.is_empty() {
            self.peak_bytes = drawn;
            self.peak_step = t;
        }
        self.action_live.push(drawn);
        self.action_event.push(event);
    }
}
