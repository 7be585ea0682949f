//! Raw `u64` rows as 32-bit differences from a base per chunk ([`WideRows`]), and the rows
//! kept out of line ([`Exceptions`]), shared with [`super::TimeColumn`].

use std::collections::TryReserveError;

/// Rows per chunk of a [`WideRows`] (each chunk has its own base).
const WIDE_CHUNK_SHIFT: u32 = 12;
/// The difference of a row that is not `base + difference`: an exception.
const WIDE_ESCAPE: i32 = i32::MIN;

/// A raw `u64` column in 4 bytes a row: per chunk of 4 096 rows a base (the chunk's first
/// value) and per row a signed 32-bit difference from it in units of 2^`shift`. A row off the
/// unit or more than 2^31 units away is an exception. Addresses of one device in units of 512
/// bytes are ±1 TiB from any other, so on a GPU none is (the 2 GB training-loop tile's 25 M
/// addresses: 101 MB instead of 203).
#[derive(Debug, Clone, Default)]
pub struct WideRows {
    shift: u32,
    bases: Vec<u64>,
    deltas: Vec<i32>,
    exceptions: Exceptions<u64>,
}

impl WideRows {
    pub(crate) fn new(shift: u32) -> Self {
        WideRows {
            shift,
            ..WideRows::default()
        }
    }

    pub fn len(&self) -> usize {
        self.deltas.len()
    }

    pub fn is_empty(&self) -> bool {
        self.deltas.is_empty()
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<u64> {
        let d = *self.deltas.get(i)?;
        if d == WIDE_ESCAPE {
            return self.exceptions.get(i as u32);
        }
        let base = *self.bases.get(i >> WIDE_CHUNK_SHIFT)?;
        Some(base.wrapping_add_signed(i64::from(d) << self.shift))
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.deltas.capacity() * 4 + self.bases.capacity() * 8 + self.exceptions.heap_bytes()
    }

    pub(crate) fn reserve(&mut self, n: usize) -> Result<(), TryReserveError> {
        self.deltas.try_reserve_exact(n)
    }

    /// Row `i`'s difference from its chunk's base (set from `x` when the chunk has none yet).
    fn delta_for(&mut self, i: usize, x: u64) -> i32 {
        let c = i >> WIDE_CHUNK_SHIFT;
        if self.bases.len() <= c {
            // A chunk's first row is its base.
            self.bases.resize(c + 1, x);
        }
        let Some(&base) = self.bases.get(c) else {
            return WIDE_ESCAPE;
        };
        let d = x.wrapping_sub(base) as i64;
        let unit = d >> self.shift;
        if unit << self.shift != d {
            return WIDE_ESCAPE;
        }
        match i32::try_from(unit) {
            Ok(u) if u != WIDE_ESCAPE => u,
            _ => WIDE_ESCAPE,
        }
    }

    pub(crate) fn push(&mut self, x: u64) {
        let i = self.deltas.len();
        let d = self.delta_for(i, x);
        self.deltas.push(d);
        if d == WIDE_ESCAPE {
            self.exceptions.set(i as u32, x);
        }
    }

    pub(crate) fn set(&mut self, i: usize, x: u64) {
        if i >= self.len() {
            return;
        }
        let d = self.delta_for(i, x);
        if let Some(s) = self.deltas.get_mut(i) {
            *s = d;
        }
        if d == WIDE_ESCAPE {
            self.exceptions.set(i as u32, x);
        }
    }

    pub(crate) fn seal(&mut self) {
        self.deltas.shrink_to_fit();
        self.bases.shrink_to_fit();
        self.exceptions.seal();
    }
}

/// The rows of a column kept out of line, sorted by row. A row set for an earlier row while
/// parsing (an entry whose items come in two batches) waits in `late` until the column is
/// sealed: inserting it in place moved the rows after it, quadratic time for a file that does
/// it for every entry.
#[derive(Debug, Clone, Default)]
pub(crate) struct Exceptions<T> {
    sorted: Vec<(u32, T)>,
    late: rustc_hash::FxHashMap<u32, T>,
}

impl<T: Copy> Exceptions<T> {
    pub(crate) fn get(&self, row: u32) -> Option<T> {
        if let Some(&t) = self.late.get(&row) {
            return Some(t);
        }
        let j = self.sorted.binary_search_by_key(&row, |e| e.0).ok()?;
        self.sorted.get(j).map(|e| e.1)
    }

    pub(crate) fn set(&mut self, row: u32, t: T) {
        match self.sorted.last_mut() {
            Some(last) if last.0 == row => last.1 = t,
            Some(last) if last.0 > row => match self.sorted.binary_search_by_key(&row, |e| e.0) {
                Ok(j) => {
                    if let Some(e) = self.sorted.get_mut(j) {
                        e.1 = t;
                    }
                }
                Err(_) => {
                    self.late.insert(row, t);
                }
            },
            _ => self.sorted.push((row, t)),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        (self.sorted.capacity() + self.late.capacity()) * (4 + std::mem::size_of::<T>())
    }

    pub(crate) fn seal(&mut self) {
        if !self.late.is_empty() {
            self.sorted.extend(self.late.drain());
            self.sorted.sort_unstable_by_key(|e| e.0);
            self.late = Default::default();
        }
        self.sorted.shrink_to_fit();
    }

    #[cfg(test)]
    pub(crate) fn late_is_empty(&self) -> bool {
        self.late.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use crate::columns::{Codes, U64Column};

    /// A raw address column: 4 bytes a row, exceptions for rows off the 512-byte unit or
    /// too far from their chunk's base, and rows set later.
    #[test]
    fn wide_rows_round_trip_addresses() {
        let mut c = U64Column::with_unit_shift(9);
        let mut v: Vec<u64> = Vec::new();
        for i in 0..300_000u64 {
            // Distinct addresses over 80 GB, a few off the unit, and the extremes.
            let x = (0x7f00_0000_0000 + i.wrapping_mul(0x9E37_79B9_7F4A) % (80 << 30)) & !511;
            let a = match i % 10_007 {
                1 => x + 8,
                2 => u64::MAX,
                3 => 0,
                _ => x,
            };
            v.push(a);
            c.push(a);
        }
        assert!(matches!(c.codes, Codes::Raw(_)));
        for (i, &a) in v.iter().enumerate() {
            assert_eq!(c.get(i), Some(a), "row {i}");
            assert_eq!(c.key(i), Some(a));
        }
        // Rows set later, backwards, on and off the unit.
        for i in (0..v.len()).rev().step_by(997) {
            let a = if i % 2 == 0 { (i as u64) << 20 } else { 3 };
            c.set(i, a);
            if let Some(s) = v.get_mut(i) {
                *s = a;
            }
        }
        c.seal();
        assert!(c.iter().eq(v.iter().copied()));
        assert_eq!(c.get(v.len()), None);
        let (rows, _) = c.heap_bytes();
        assert!(rows < v.len() * 9 / 2, "{rows} bytes for {} rows", v.len());
    }
}
