//! Evidence that allocations alive at the end were made in repeated steps (the `alive_at_end`
//! rule of [`super`]): without iteration phases, the steps are inferred from the live bytes of
//! the *other* stacks, which rise and come back down once per step of a loop.

use crate::steps::{Steps, SLIDE_STEPS};

/// The live bytes per timestep with a range-maximum tree over them.
pub(crate) struct LiveMax {
    live: Vec<u64>,
    /// `tree[n + i] = live[i]`, `tree[i] = max(tree[2i], tree[2i + 1])`.
    tree: Vec<u64>,
}

impl LiveMax {
    pub(crate) fn new(layout: &Steps) -> Self {
        let live: Vec<u64> = layout
            .live_at_step()
            .range(0, layout.step_count() as usize)
            .collect();
        let n = live.len();
        let mut tree = vec![0u64; 2 * n];
        if let Some(leaves) = tree.get_mut(n..) {
            leaves.copy_from_slice(&live);
        }
        for i in (1..n).rev() {
            let m = tree
                .get(2 * i)
                .copied()
                .unwrap_or(0)
                .max(tree.get(2 * i + 1).copied().unwrap_or(0));
            if let Some(t) = tree.get_mut(i) {
                *t = m;
            }
        }
        LiveMax { live, tree }
    }

    fn at(&self, s: u32) -> u64 {
        self.live.get(s as usize).copied().unwrap_or(0)
    }

    /// The largest live bytes in timesteps `[l, r)` (0 for an empty range).
    fn max(&self, l: u32, r: u32) -> u64 {
        let n = self.live.len();
        let (mut l, mut r) = ((l as usize).min(n) + n, (r as usize).min(n) + n);
        let mut m = 0;
        while l < r {
            if l & 1 == 1 {
                m = m.max(self.tree.get(l).copied().unwrap_or(0));
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                m = m.max(self.tree.get(r).copied().unwrap_or(0));
            }
            l /= 2;
            r /= 2;
        }
        m
    }
}

/// One stack's live bytes over time: `(timestep, bytes live from that timestep on)`, ascending.
pub(crate) struct StackLive(Vec<(u32, i128)>);

impl StackLive {
    /// From the stack's elements: `(element, slid)` pairs; an element counts over its span
    /// and, when its free slides, the [`SLIDE_STEPS`] after it (as the live bytes do).
    pub(crate) fn new(layout: &Steps, elements: &[(u32, bool)]) -> Self {
        let mut ev: Vec<(u32, i128)> = Vec::with_capacity(elements.len() * 2);
        for &(e, slid) in elements {
            let Some((a, b)) = layout.span(e) else {
                continue;
            };
            let b = if slid {
                b.saturating_add(SLIDE_STEPS)
            } else {
                b
            };
            let h = i128::from(layout.height_bytes(e));
            ev.push((a, h));
            ev.push((b, -h));
        }
        ev.sort_unstable_by_key(|x| x.0);
        let mut out: Vec<(u32, i128)> = Vec::with_capacity(ev.len());
        let mut cum = 0i128;
        for (s, d) in ev {
            cum += d;
            match out.last_mut() {
                Some(last) if last.0 == s => last.1 = cum,
                _ => out.push((s, cum)),
            }
        }
        StackLive(out)
    }

    /// The stack's live bytes at timestep `s`.
    fn at(&self, s: u32) -> i128 {
        let i = self.0.partition_point(|x| x.0 <= s);
        i.checked_sub(1)
            .and_then(|i| self.0.get(i))
            .map_or(0, |x| x.1)
    }

    /// The first timestep after `s` where the stack's live bytes change.
    fn next_change(&self, s: u32) -> Option<u32> {
        let i = self.0.partition_point(|x| x.0 <= s);
        self.0.get(i).map(|x| x.0)
    }
}

/// The other stacks' live bytes at `s`.
fn others_at(live: &LiveMax, stack: &StackLive, s: u32) -> i128 {
    i128::from(live.at(s)) - stack.at(s)
}

/// The most the other stacks' live bytes reach in `[l, r)`.
fn others_max(live: &LiveMax, stack: &StackLive, l: u32, r: u32) -> i128 {
    let mut m = i128::MIN;
    let mut x = l;
    while x < r {
        let end = stack.next_change(x).map_or(r, |c| c.min(r));
        m = m.max(i128::from(live.max(x, end)) - stack.at(x));
        x = end;
    }
    m
}

/// How much the other stacks' live bytes must rise between two pushes, in percent of the
/// trace's peak, for the gap to be a step of a loop: a training or inference step allocates
/// and frees its activations, a large part of the peak, where a loop over layers or
/// parameters within one step frees only small temporaries.
pub const STEP_SWING_PERCENT: u64 = 10;

/// Of the gaps between consecutive `pushes` (distinct timesteps, ascending, each ≥ 1), how many
/// are a whole step of a loop: the other stacks' live bytes rose above their level at the
/// earlier push by at least [`STEP_SWING_PERCENT`] of the peak, and were back down to within
/// 10 % of that rise at the later one (a step releases what it made; one pass through a
/// loop of layers keeps a good part of each layer's memory for the backward pass). Returns `(rounds, gaps)`.
pub(crate) fn inferred_rounds(live: &LiveMax, stack: &StackLive, pushes: &[u32]) -> (usize, usize) {
    let mut rounds = 0;
    let swing = i128::from(live.max(0, u32::MAX)) * i128::from(STEP_SWING_PERCENT) / 100;
    for w in pushes.windows(2) {
        let (Some(&a), Some(&b)) = (w.first(), w.get(1)) else {
            continue;
        };
        if b <= a + 1 {
            continue;
        }
        // At a push's own timestep only that push happened (one action per timestep), and a
        // free's timestep still counts what it frees: so the levels are read at the pushes.
        let level = others_at(live, stack, a);
        let peak = others_max(live, stack, a + 1, b);
        let before_next = others_at(live, stack, b);
        if peak > level && peak - level >= swing && (before_next - level) * 10 <= peak - level {
            rounds += 1;
        }
    }
    (rounds, pushes.len().saturating_sub(1))
}
