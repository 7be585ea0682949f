//! Per-timestep columns of the [`Steps`](super::Steps), stored once per *action*.
//!
//! Every alloc/free step of the replay costs one timestep; a free with something above it costs
//! [`SLIDE_STEPS`] more (its slide), and those repeat the free's values (its live bytes, its
//! trace event). So a column keeps one value per action, and timestep `x` maps to its action
//! through the slides list: with `j` slides finished before `x`, `x` is inside slide `j`'s
//! window (`[step, step + 3)`, the free itself at `step − 1`) or is action `x − 3j`. A lookup is
//! a binary search over the slides; [`StepValues::range`] walks in O(1) per timestep.

use super::packed::{Packed, PackedValue};
use super::{Slide, SLIDE_STEPS};

/// Index of the first slide whose window ends after timestep `x`.
fn slides_done_before(slides: &[Slide], x: u32) -> usize {
    slides.partition_point(|s| u64::from(s.step) + u64::from(SLIDE_STEPS) <= u64::from(x))
}

/// The action behind timestep `x`, given `j = slides_done_before(slides, x)`.
fn action_at(slides: &[Slide], x: u32, j: usize) -> usize {
    let done = (j as u64).saturating_mul(u64::from(SLIDE_STEPS));
    match slides.get(j) {
        // Inside slide j's window: the free at `step − 1`.
        Some(s) if s.step <= x => u64::from(s.step).saturating_sub(1).saturating_sub(done) as usize,
        _ => u64::from(x).saturating_sub(done) as usize,
    }
}

/// One column of per-timestep values (see the module documentation), borrowed from a layout.
#[derive(Clone, Copy, Debug)]
pub struct StepValues<'a, T> {
    per_action: &'a Packed,
    slides: &'a [Slide],
    len: u32,
    value: std::marker::PhantomData<T>,
}

impl<'a, T: PackedValue> StepValues<'a, T> {
    pub(crate) fn new(per_action: &'a Packed, slides: &'a [Slide], len: u32) -> Self {
        StepValues {
            per_action,
            slides,
            len,
            value: std::marker::PhantomData,
        }
    }

    /// Number of timesteps.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value during timestep `step`. O(log slides).
    pub fn get(&self, step: usize) -> Option<T> {
        if step >= self.len() {
            return None;
        }
        let x = step as u32;
        let j = slides_done_before(self.slides, x);
        self.per_action.get(action_at(self.slides, x, j))
    }

    /// The value of the last timestep.
    pub fn last(&self) -> Option<T> {
        self.get(self.len().checked_sub(1)?)
    }

    /// The values of timesteps `[from, to)` (clamped to the column), in order.
    pub fn range(&self, from: usize, to: usize) -> StepIter<'a, T> {
        let to = to.min(self.len()) as u32;
        let from = (from.min(to as usize)) as u32;
        let j = slides_done_before(self.slides, from);
        StepIter {
            per_action: self.per_action,
            slides: self.slides,
            x: from,
            end: to,
            action: action_at(self.slides, from, j),
            j,
            value: std::marker::PhantomData,
        }
    }

    /// Every timestep's value, in order.
    pub fn iter(&self) -> StepIter<'a, T> {
        self.range(0, self.len())
    }

    /// The values as a vector (allocates one value per timestep: for tests and small layouts).
    pub fn to_vec(&self) -> Vec<T> {
        self.iter().collect()
    }

    /// The first timestep whose value fails `pred`, for a column partitioned by `pred` (as
    /// [`slice::partition_point`]). O(log² ).
    pub fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        let (mut lo, mut hi) = (0usize, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.get(mid).is_some_and(|v| pred(&v)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl<T: PackedValue + PartialEq> PartialEq<[T]> for StepValues<'_, T> {
    fn eq(&self, other: &[T]) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter().copied())
    }
}

impl<T: PackedValue + PartialEq, const N: usize> PartialEq<[T; N]> for StepValues<'_, T> {
    fn eq(&self, other: &[T; N]) -> bool {
        *self == other[..]
    }
}

impl<T: PackedValue + PartialEq> PartialEq<Vec<T>> for StepValues<'_, T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        *self == other[..]
    }
}

/// Iterator over a range of a [`StepValues`].
#[derive(Clone, Debug)]
pub struct StepIter<'a, T> {
    per_action: &'a Packed,
    slides: &'a [Slide],
    x: u32,
    end: u32,
    action: usize,
    /// First slide whose window ends after `x`.
    j: usize,
    value: std::marker::PhantomData<T>,
}

impl<T: PackedValue> Iterator for StepIter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        if self.x >= self.end {
            return None;
        }
        let v = self.per_action.get(self.action);
        self.x += 1;
        while self
            .slides
            .get(self.j)
            .is_some_and(|s| u64::from(s.step) + u64::from(SLIDE_STEPS) <= u64::from(self.x))
        {
            self.j += 1;
        }
        // Inside a slide window the action stays (the free's values repeat).
        if self.slides.get(self.j).is_none_or(|s| s.step > self.x) {
            self.action += 1;
        }
        v
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.end - self.x) as usize;
        (n, Some(n))
    }
}

impl<T: PackedValue> ExactSizeIterator for StepIter<'_, T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slides_repeat_the_free() {
        // Actions 0..6; action 3 (timestep 3) slides during 4..7.
        let slides = [Slide { step: 4, order: 0 }];
        let acts = Packed::from_slice(&[10u32, 11, 12, 13, 14, 15]);
        let v = StepValues::<u32>::new(&acts, &slides, 9);
        assert_eq!(v.to_vec(), [10, 11, 12, 13, 13, 13, 13, 14, 15]);
        for a in 0..=9 {
            for b in a..=10 {
                let want: Vec<u32> = (a..b.min(9)).filter_map(|s| v.get(s)).collect();
                assert_eq!(v.range(a, b).collect::<Vec<_>>(), want, "{a}..{b}");
            }
        }
        assert_eq!(v.partition_point(|&e| e <= 13), 7);
        assert_eq!(v.last(), Some(15));
        // Two slides back to back.
        let slides = [Slide { step: 1, order: 0 }, Slide { step: 5, order: 0 }];
        let acts = Packed::from_slice(&[1u32, 2, 3]);
        let v = StepValues::<u32>::new(&acts, &slides, 9);
        assert_eq!(v.to_vec(), [1, 1, 1, 1, 2, 2, 2, 2, 3]);
        assert_eq!(v.get(9), None);
    }
}
