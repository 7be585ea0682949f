//! `time_us` per row ([`TimeColumn`]).

use super::wide::Exceptions;
use crate::model::NO_TIME;
use std::collections::TryReserveError;

/// Rows per chunk of a [`TimeColumn`] (each chunk has its own base time).
const TIME_CHUNK_SHIFT: u32 = 12;
/// Offset of a row whose time is not `base + offset`: an exception, or no time.
const ESCAPE: u32 = u32::MAX;

/// `time_us` per row: a base per chunk of 4 096 rows (its first time) and a `u32` offset from
/// it per row (71 minutes of microseconds). Rows before the base, too far after it, or without
/// a time are exceptions, kept sorted by row (none in a non-decreasing trace of under an hour
/// per chunk; [`Exceptions`]).
#[derive(Debug, Clone, Default)]
pub struct TimeColumn {
    bases: Vec<i64>,
    offsets: Vec<u32>,
    exceptions: Exceptions<i64>,
    /// Some row has a time.
    any: bool,
}

impl TimeColumn {
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The row's time, [`NO_TIME`] when it has none.
    #[inline]
    pub fn get(&self, i: usize) -> Option<i64> {
        let off = *self.offsets.get(i)?;
        if off != ESCAPE {
            let base = *self.bases.get(i >> TIME_CHUNK_SHIFT)?;
            return Some(base.wrapping_add(off as i64));
        }
        Some(self.exception(i))
    }

    /// The time of a row that is an exception (out of line: `get` stays small enough to be
    /// inlined into the loops over a trace).
    #[inline(never)]
    fn exception(&self, i: usize) -> i64 {
        self.exceptions.get(i as u32).unwrap_or(NO_TIME)
    }

    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(move |i| self.get(i).unwrap_or(NO_TIME))
    }

    pub fn heap_bytes(&self) -> usize {
        self.offsets.capacity() * 4 + self.bases.capacity() * 8 + self.exceptions.heap_bytes()
    }

    /// Room for exactly `n` more rows; an error when the memory is not there.
    pub(crate) fn reserve(&mut self, n: usize) -> Result<(), TryReserveError> {
        self.offsets.try_reserve_exact(n)
    }

    fn offset_for(&mut self, i: usize, t: i64) -> u32 {
        if t == NO_TIME {
            return ESCAPE;
        }
        self.any = true;
        let c = i >> TIME_CHUNK_SHIFT;
        if self.bases.len() <= c {
            self.bases.resize(c + 1, NO_TIME);
        }
        let Some(base) = self.bases.get_mut(c) else {
            return ESCAPE;
        };
        if *base == NO_TIME {
            *base = t;
        }
        match t.checked_sub(*base) {
            Some(d) if (0..ESCAPE as i64).contains(&d) => d as u32,
            _ => ESCAPE,
        }
    }

    fn set_exception(&mut self, i: usize, t: i64) {
        self.exceptions.set(i as u32, t);
    }

    #[inline]
    pub(crate) fn push(&mut self, t: i64) {
        let i = self.offsets.len();
        let off = self.offset_for(i, t);
        self.offsets.push(off);
        if off == ESCAPE && t != NO_TIME {
            self.set_exception(i, t);
        }
    }

    pub(crate) fn set(&mut self, i: usize, t: i64) {
        if i >= self.len() || self.get(i) == Some(t) {
            return;
        }
        let off = self.offset_for(i, t);
        if let Some(o) = self.offsets.get_mut(i) {
            *o = off;
        }
        if off == ESCAPE {
            // NO_TIME is an exception holding NO_TIME when the row had another one before.
            self.set_exception(i, t);
        }
    }

    pub(crate) fn seal(&mut self) {
        if !self.any {
            *self = TimeColumn::default();
            return;
        }
        self.offsets.shrink_to_fit();
        self.bases.shrink_to_fit();
        self.exceptions.seal();
    }

    pub fn from_values(values: impl IntoIterator<Item = i64>) -> Self {
        let mut c = TimeColumn::default();
        for t in values {
            c.push(t);
        }
        c.seal();
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_column_round_trips() {
        let vals = [
            5,
            NO_TIME,
            7,
            3,
            i64::MAX,
            i64::MIN + 1,
            1 << 40,
            NO_TIME,
            (1 << 40) + 10,
        ];
        let mut v: Vec<i64> = Vec::new();
        for k in 0..10_000 {
            v.push(
                vals[k % vals.len()]
                    + if vals[k % vals.len()] > 0 && k % 2 == 0 {
                        -1
                    } else {
                        0
                    },
            );
        }
        let mut c = TimeColumn::default();
        for &t in &v {
            c.push(t);
        }
        assert!(c.iter().eq(v.iter().copied()));
        c.set(1, 42);
        c.set(2, NO_TIME);
        c.set(9_000, -5);
        v[1] = 42;
        v[2] = NO_TIME;
        v[9_000] = -5;
        assert!(c.iter().eq(v.iter().copied()));
        let mut e = TimeColumn::default();
        e.push(NO_TIME);
        e.seal();
        assert!(e.is_empty());
    }

    /// Exceptions set for earlier rows, backwards (each would have moved every later one):
    /// read back before and after sealing.
    #[test]
    fn time_exceptions_set_out_of_order() {
        let n = 20_000usize;
        let mut c = TimeColumn::default();
        let mut v: Vec<i64> = (0..n as i64).map(|i| 1_000_000 + i).collect();
        for &t in &v {
            c.push(t);
        }
        c.push(1); // an exception at the end
        v.push(1);
        for i in (0..n).rev().step_by(3) {
            let t = -(i as i64);
            c.set(i, t);
            v[i] = t;
        }
        c.set(6, 7);
        v[6] = 7;
        assert!(c.iter().eq(v.iter().copied()));
        c.seal();
        assert!(c.exceptions.late_is_empty());
        assert!(c.iter().eq(v.iter().copied()));
    }
}
