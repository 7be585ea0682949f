//! Compact per-event columns of a [`crate::DeviceTrace`], written row by row while the pickle
//! streams in (so there is no second copy at the end).
//!
//! Budgets, in bytes per trace entry (measured by [`crate::Snapshot::heap_bytes_by_part`]):
//! * action: 1 (a code, [`Action::code`]);
//! * address and size: 2 each while a trace has at most 65 536 distinct values, else 3, plus a
//!   table of the distinct values ([`U64Column`]: a caching allocator reuses both heavily). A
//!   column whose distinct values keep growing with the trace falls back to 4 ([`WideRows`]: a
//!   difference from a base per chunk of rows; 8, the raw values, before);
//! * time: 4 ([`TimeColumn`]: an offset from a base per chunk of 4 096 rows);
//! * stack: 4.

use crate::model::Action;
use std::collections::TryReserveError;

mod runs;
mod time;
mod wide;

pub use runs::Column;
pub use time::TimeColumn;
pub use wide::WideRows;

/// Distinct values a dictionary column keeps at most; past it the column stores raw values.
const MAX_DISTINCT: usize = 1 << 20;
/// Distinct values below which a column always stays a dictionary column.
const SMALL_DISTINCT: usize = 1 << 16;

#[derive(Debug, Clone)]
enum Codes {
    /// Indices into `values` (at most 65 536 distinct values).
    U16(Vec<u16>),
    /// Indices of 24 bits (at most [`MAX_DISTINCT`] distinct values): the low 16 bits, kept
    /// from the `U16` codes when the column widens (so widening adds one byte per row instead
    /// of copying every code into 4 bytes: 6 bytes per row reserved, briefly, were the peak of
    /// a parse), and the high 8.
    U24 { lo: Vec<u16>, hi: Vec<u8> },
    /// Too many distinct values: the values themselves, as differences from a base.
    Raw(WideRows),
}

impl Default for Codes {
    fn default() -> Self {
        Codes::U16(Vec::new())
    }
}

/// Value → code of a [`U64Column`] while it is written: open addressing over the column's
/// table of distinct values, a slot holding a code + 1 (0: empty), at most 3/4 full. 4 bytes a
/// slot where a `HashMap<u64, u32>` took 17 (4.5 MB for the 160 k distinct addresses of a
/// 150 MB file, 1 MB this way).
#[derive(Debug, Clone, Default)]
struct CodeIndex {
    slots: Vec<u32>,
    len: usize,
}

impl CodeIndex {
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn heap_bytes(&self) -> usize {
        self.slots.capacity() * 4
    }

    #[inline]
    fn home(&self, x: u64) -> usize {
        // Fibonacci hashing: addresses differ in their middle bits.
        let bits = self.slots.len().trailing_zeros();
        (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    /// The code of `x`, if it has one.
    fn get(&self, x: u64, values: &[u64]) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(x);
        loop {
            let s = *self.slots.get(at)?;
            if s == 0 {
                return None;
            }
            if values.get((s - 1) as usize) == Some(&x) {
                return Some(s - 1);
            }
            at = (at + 1) & mask;
        }
    }

    /// Add `code`, the index of a value of `values` not in the index yet.
    fn insert(&mut self, code: u32, values: &[u64]) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            let want = (self.slots.len() * 2).max(1024);
            self.slots = vec![0; want];
            self.len = 0;
            for c in 0..code.min(values.len() as u32) {
                self.place(c, values);
            }
        }
        self.place(code, values);
    }

    fn place(&mut self, code: u32, values: &[u64]) {
        let Some(&x) = values.get(code as usize) else {
            return;
        };
        let mask = self.slots.len() - 1;
        let mut at = self.home(x);
        while let Some(s) = self.slots.get_mut(at) {
            if *s == 0 {
                *s = code + 1;
                self.len += 1;
                return;
            }
            at = (at + 1) & mask;
        }
    }

    /// Index every value of `values` (codes in order).
    fn rebuild(&mut self, values: &[u64]) {
        *self = CodeIndex::default();
        for c in 0..values.len() as u32 {
            self.insert(c, values);
        }
    }
}

/// A `u64` per row, stored as an index into a table of the column's distinct values.
#[derive(Debug, Clone, Default)]
pub struct U64Column {
    codes: Codes,
    values: Vec<u64>,
    /// Value → index in `values`; only while the column is being written.
    index: CodeIndex,
    /// (value, code) of recently written values, direct-mapped, in front of `index`: a caching
    /// allocator writes the same few addresses and sizes again and again, and this stays in
    /// cache where the hash map, with 10^5 distinct addresses, misses it (U64Column::push
    /// went from 11.8 % to 8.0 % of the native parse of a 150 MB tiled file, perf). With 4 096
    /// entries (64 kB) it misses 3.8 % and 4.3 % of the pushes of the two 150 MB tiles (7.2 %
    /// and 5.6 % with 1 024), about the new values alone; a hit is handled inline.
    recent: Vec<(u64, u32)>,
    /// The unit of a raw column's differences: 2^unit_shift ([`U64Column::with_unit_shift`]).
    unit_shift: u32,
}

const RECENT_BITS: u32 = 12;
const RECENT: usize = 1 << RECENT_BITS;

#[inline]
fn recent_slot(x: u64) -> usize {
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - RECENT_BITS)) as usize
}

impl U64Column {
    /// A column whose values, once it is raw, are kept as differences in units of
    /// 2^`unit_shift` (addresses: 9, as the caching allocator places every block at a multiple
    /// of 512 bytes; a value off the unit is an exception).
    pub(crate) fn with_unit_shift(unit_shift: u32) -> Self {
        U64Column {
            unit_shift: unit_shift.min(32),
            ..U64Column::default()
        }
    }

    pub fn len(&self) -> usize {
        match &self.codes {
            Codes::U16(v) => v.len(),
            Codes::U24 { lo, .. } => lo.len(),
            Codes::Raw(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<u64> {
        let code = match &self.codes {
            Codes::U16(v) => *v.get(i)? as usize,
            Codes::U24 { lo, hi } => *lo.get(i)? as usize | (*hi.get(i)? as usize) << 16,
            Codes::Raw(v) => return v.get(i),
        };
        self.values.get(code).copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.len()).map(move |i| self.get(i).unwrap_or(0))
    }

    /// The row's key: its code into the table of distinct values, or the value itself in a raw
    /// column. Equal keys mean equal values, so a pass that only matches rows by value (pairing
    /// frees with allocations by address) can index a dense table by code instead of hashing.
    #[inline]
    pub fn key(&self, i: usize) -> Option<u64> {
        match &self.codes {
            Codes::U16(v) => v.get(i).map(|&c| c as u64),
            Codes::U24 { lo, hi } => Some(*lo.get(i)? as u64 | (*hi.get(i)? as u64) << 16),
            Codes::Raw(v) => v.get(i),
        }
    }

    /// How many distinct keys [`Self::key`] can return (codes `0..n`), or None for a raw column
    /// (keys are the values).
    pub fn key_space(&self) -> Option<usize> {
        match self.codes {
            Codes::Raw(_) => None,
            _ => Some(self.values.len()),
        }
    }

    /// The value of a key from [`Self::key`].
    pub fn value_of_key(&self, key: u64) -> u64 {
        match self.codes {
            Codes::Raw(_) => key,
            _ => self.values.get(key as usize).copied().unwrap_or(0),
        }
    }

    /// Number of distinct values kept in the table (0 for a raw column).
    pub fn distinct(&self) -> usize {
        match self.codes {
            Codes::Raw(_) => 0,
            _ => self.values.len(),
        }
    }

    /// (bytes of the per-row codes, bytes of the table of distinct values).
    pub fn heap_bytes(&self) -> (usize, usize) {
        let rows = match &self.codes {
            Codes::U16(v) => v.capacity() * 2,
            Codes::U24 { lo, hi } => lo.capacity() * 2 + hi.capacity(),
            Codes::Raw(v) => v.heap_bytes(),
        };
        let table =
            self.values.capacity() * 8 + self.index.heap_bytes() + self.recent.capacity() * 16;
        (rows, table)
    }

    /// Room for exactly `n` more rows (no growth slack: the loader sizes columns from the file);
    /// an error when the memory is not there.
    pub(crate) fn reserve(&mut self, n: usize) -> Result<(), TryReserveError> {
        match &mut self.codes {
            Codes::U16(v) => v.try_reserve_exact(n),
            Codes::U24 { lo, hi } => {
                lo.try_reserve_exact(n)?;
                hi.try_reserve_exact(n)
            }
            Codes::Raw(v) => v.reserve(n),
        }
    }

    /// The code of `x`, adding it to the table; None when the column must become raw.
    #[inline]
    fn code(&mut self, x: u64) -> Option<u32> {
        if self.recent.is_empty() {
            self.recent = vec![(0, u32::MAX); RECENT];
        }
        let slot = recent_slot(x);
        if let Some(&(v, c)) = self.recent.get(slot) {
            if v == x && c != u32::MAX {
                return Some(c);
            }
        }
        if self.index.is_empty() && !self.values.is_empty() {
            // Written again after `release_index`: rebuild it.
            self.index.rebuild(&self.values);
        }
        if let Some(c) = self.index.get(x, &self.values) {
            if let Some(r) = self.recent.get_mut(slot) {
                *r = (x, c);
            }
            return Some(c);
        }
        let n = self.values.len();
        if n >= MAX_DISTINCT || (n >= SMALL_DISTINCT && n > self.len() / 4) {
            return None;
        }
        self.values.push(x);
        self.index.insert(n as u32, &self.values);
        if let Some(r) = self.recent.get_mut(slot) {
            *r = (x, n as u32);
        }
        Some(n as u32)
    }

    /// Room for `code` in the codes: 24 bits once a code passes 16 bits (the caller made a
    /// column with more than [`MAX_DISTINCT`] values raw).
    fn widen(&mut self, code: u32) {
        if code > u16::MAX as u32 {
            if let Codes::U16(lo) = &mut self.codes {
                let lo = std::mem::take(lo);
                let mut hi = Vec::new();
                let _ = hi.try_reserve_exact(lo.capacity());
                hi.resize(lo.len(), 0u8);
                self.codes = Codes::U24 { lo, hi };
            }
        }
    }

    fn make_raw(&mut self) {
        let mut raw = WideRows::new(self.unit_shift);
        let _ = raw.reserve(self.len().max(match &self.codes {
            Codes::U16(v) => v.capacity(),
            Codes::U24 { lo, .. } => lo.capacity(),
            Codes::Raw(v) => v.len(),
        }));
        for x in self.iter() {
            raw.push(x);
        }
        self.codes = Codes::Raw(raw);
        self.values = Vec::new();
        self.index = CodeIndex::default();
        self.recent = Vec::new();
    }

    #[inline]
    pub(crate) fn push(&mut self, x: u64) {
        // The common case inline: a value written recently (a hit in `recent`).
        if let Some(&(v, c)) = self.recent.get(recent_slot(x)) {
            if v == x && c != u32::MAX {
                match &mut self.codes {
                    Codes::U16(codes) if c <= u16::MAX as u32 => return codes.push(c as u16),
                    Codes::U24 { lo, hi } => {
                        lo.push(c as u16);
                        return hi.push((c >> 16) as u8);
                    }
                    _ => {}
                }
            }
        }
        self.push_slow(x);
    }

    #[inline(never)]
    fn push_slow(&mut self, x: u64) {
        if let Codes::Raw(v) = &mut self.codes {
            v.push(x);
            return;
        }
        match self.code(x) {
            Some(c) => {
                if c > u16::MAX as u32 {
                    self.widen(c);
                }
                match &mut self.codes {
                    Codes::U16(v) => v.push(c as u16),
                    Codes::U24 { lo, hi } => {
                        lo.push(c as u16);
                        hi.push((c >> 16) as u8);
                    }
                    Codes::Raw(v) => v.push(x),
                }
            }
            None => {
                self.make_raw();
                if let Codes::Raw(v) = &mut self.codes {
                    v.push(x);
                }
            }
        }
    }

    pub(crate) fn set(&mut self, i: usize, x: u64) {
        if i >= self.len() || self.get(i) == Some(x) {
            return;
        }
        if !matches!(self.codes, Codes::Raw(_)) {
            match self.code(x) {
                Some(c) => self.widen(c),
                None => self.make_raw(),
            }
        }
        let code = self.index.get(x, &self.values).unwrap_or(0);
        match &mut self.codes {
            Codes::U16(v) => {
                if let Some(s) = v.get_mut(i) {
                    *s = code as u16;
                }
            }
            Codes::U24 { lo, hi } => {
                if let (Some(l), Some(h)) = (lo.get_mut(i), hi.get_mut(i)) {
                    *l = code as u16;
                    *h = (code >> 16) as u8;
                }
            }
            Codes::Raw(v) => v.set(i, x),
        }
    }

    /// Drop the value → code index while the column is probably done (it is rebuilt if more
    /// rows come): at the end of a parse it is freed before the traces are sealed.
    pub(crate) fn release_index(&mut self) {
        self.index = CodeIndex::default();
        self.recent = Vec::new();
    }

    /// Done writing: drop the index and spare capacity.
    pub(crate) fn seal(&mut self) {
        self.index = CodeIndex::default();
        self.recent = Vec::new();
        self.values.shrink_to_fit();
        match &mut self.codes {
            Codes::U16(v) => v.shrink_to_fit(),
            Codes::U24 { lo, hi } => {
                lo.shrink_to_fit();
                hi.shrink_to_fit();
            }
            Codes::Raw(v) => v.seal(),
        }
    }

    pub fn from_values(values: impl IntoIterator<Item = u64>) -> Self {
        let mut c = U64Column::default();
        for x in values {
            c.push(x);
        }
        c.seal();
        c
    }
}

/// Actions as one byte each ([`Action::code`]).
#[derive(Debug, Clone, Default)]
pub struct ActionColumn(pub(crate) Vec<u8>);

impl ActionColumn {
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    #[inline]
    pub fn get(&self, i: usize) -> Option<Action> {
        self.0.get(i).map(|&c| Action::from_code(c))
    }
    pub fn iter(&self) -> impl Iterator<Item = Action> + '_ {
        self.0.iter().map(|&c| Action::from_code(c))
    }
    pub fn heap_bytes(&self) -> usize {
        self.0.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_column_widens_and_falls_back() {
        let mut c = U64Column::default();
        for i in 0..300_000u64 {
            c.push(i % 1000);
        }
        for i in 0..70_000u64 {
            c.push(i % 66_000);
        }
        assert_eq!(c.get(300_000 + 65_999), Some(65_999));
        assert_eq!(c.get(300_000 + 66_001), Some(1));
        assert_eq!(c.get(1001), Some(1));
        assert!(matches!(c.codes, Codes::U24 { .. }));
        assert!((0..370_000).all(|i| c
            .key(i)
            .is_some_and(|k| c.value_of_key(k) == c.get(i).unwrap_or(1))));
        c.set(3, 7);
        assert_eq!(c.get(3), Some(7));
        let mut r = U64Column::default();
        for i in 0..200_000u64 {
            r.push(i * 3);
        }
        assert!(matches!(r.codes, Codes::Raw(_)));
        assert!((0..200_000).all(|i| r.get(i) == Some(i as u64 * 3)));
        assert_eq!(r.get(200_000), None);
    }
}
