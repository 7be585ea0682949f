//! A low-cardinality column: constant, runs of equal rows, 2-byte codes, or every row
//! ([`Column`]).

use rustc_hash::FxHashMap;

/// A column that stores one value when every row has it (streams, compile contexts and user
/// metadata usually are), else runs of equal rows while they are long (a compile context or
/// user metadata changes once per region or step, a stream every few hundred events), else a
/// 2-byte code per row into a table of its distinct values (at most 65 536), else every row.
///
/// Runs: 4 bytes + one value per run, so a column with runs of 3 rows or more costs at most
/// what 2-byte codes do; on the training-loop tiles (`generate.py tile`) the three columns of
/// a 25 M-entry trace went from 152 MB of codes to under 1 MB (runs of 180, 135 and 2 900
/// rows). A row is found by binary search over the run starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Column<T> {
    Const {
        value: T,
        len: usize,
    },
    /// Run `k` holds `values[k]` from row `starts[k]` up to the next start (or `len`).
    Runs {
        starts: Vec<u32>,
        values: Vec<T>,
        len: usize,
    },
    Coded {
        codes: Vec<u16>,
        values: Vec<T>,
    },
    Full(Vec<T>),
}

/// Runs a column keeps before it checks whether codes would be smaller.
const MIN_RUNS: usize = 64;

impl<T: Copy + PartialEq + Eq + std::hash::Hash> Column<T> {
    pub fn constant(value: T, len: usize) -> Self {
        Column::Const { value, len }
    }
    /// Folds to `Const` when all values are equal; `empty` is the value of an empty column.
    pub fn from_vec(mut v: Vec<T>, empty: T) -> Self {
        match v.first().copied() {
            None => Column::Const {
                value: empty,
                len: 0,
            },
            Some(first) if v.iter().all(|x| *x == first) => Column::Const {
                value: first,
                len: v.len(),
            },
            Some(_) => {
                v.shrink_to_fit();
                Column::Full(v)
            }
        }
    }
    #[inline]
    pub fn get(&self, i: usize) -> Option<T> {
        match self {
            Column::Const { value, len } => (i < *len).then_some(*value),
            Column::Runs {
                starts,
                values,
                len,
            } => {
                if i >= *len {
                    return None;
                }
                let k = starts
                    .partition_point(|&s| s as usize <= i)
                    .checked_sub(1)?;
                values.get(k).copied()
            }
            Column::Coded { codes, values } => values.get(*codes.get(i)? as usize).copied(),
            Column::Full(v) => v.get(i).copied(),
        }
    }
    pub fn len(&self) -> usize {
        match self {
            Column::Const { len, .. } | Column::Runs { len, .. } => *len,
            Column::Coded { codes, .. } => codes.len(),
            Column::Full(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// True when every row holds `value` (also for an empty column).
    pub fn all_equal_to(&self, value: T) -> bool {
        match self {
            Column::Const { value: v, len } => *len == 0 || *v == value,
            _ => self.iter().all(|x| x == value),
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        // Runs are walked in order rather than searched per row.
        let mut run = 0usize;
        (0..self.len()).filter_map(move |i| match self {
            Column::Runs { starts, values, .. } => {
                while starts.get(run + 1).is_some_and(|&s| s as usize <= i) {
                    run += 1;
                }
                values.get(run).copied()
            }
            _ => self.get(i),
        })
    }
    pub fn heap_bytes(&self) -> usize {
        match self {
            Column::Const { .. } => 0,
            Column::Runs { starts, values, .. } => {
                starts.capacity() * 4 + values.capacity() * std::mem::size_of::<T>()
            }
            Column::Coded { codes, values } => {
                codes.capacity() * 2 + values.capacity() * std::mem::size_of::<T>()
            }
            Column::Full(v) => v.capacity() * std::mem::size_of::<T>(),
        }
    }
    /// Append a row. A constant column becomes a coded one (reserving `hint` rows) at the first
    /// row that differs, a coded one full past 65 536 distinct values; `index` maps the values of
    /// a coded column to their codes while it is written.
    #[inline]
    pub(crate) fn push(&mut self, x: T, hint: usize, index: &mut FxHashMap<T, u16>) {
        // The common cases inline: the same value as every row, or as the row before.
        match self {
            Column::Const { value, len } if *len > 0 && *value == x => {
                *len += 1;
                return;
            }
            Column::Runs { values, len, .. } if values.last() == Some(&x) => {
                *len += 1;
                return;
            }
            Column::Coded { codes, values } => {
                if let Some(&last) = codes.last() {
                    if values.get(last as usize) == Some(&x) {
                        codes.push(last);
                        return;
                    }
                }
            }
            _ => {}
        }
        self.push_slow(x, hint, index);
    }

    #[inline(never)]
    fn push_slow(&mut self, x: T, hint: usize, index: &mut FxHashMap<T, u16>) {
        match self {
            Column::Const { value, len } => {
                if *len == 0 {
                    *value = x;
                    *len = 1;
                    return;
                }
                if *value == x {
                    *len += 1;
                    return;
                }
                if *len > u32::MAX as usize {
                    *self = Column::Full(std::iter::repeat_n(*value, *len).collect());
                    return self.push_slow(x, hint, index);
                }
                *self = Column::Runs {
                    starts: vec![0, *len as u32],
                    values: vec![*value, x],
                    len: *len + 1,
                };
                return;
            }
            Column::Runs {
                starts,
                values,
                len,
            } => {
                if values.last() == Some(&x) {
                    *len += 1;
                    return;
                }
                let runs_bytes = (starts.len() + 1) * (4 + std::mem::size_of::<T>());
                if *len < u32::MAX as usize && (starts.len() < MIN_RUNS || runs_bytes <= *len * 2) {
                    starts.push(*len as u32);
                    values.push(x);
                    *len += 1;
                    return;
                }
                // Runs too short to pay: 2-byte codes from here on (or every row), then `x`
                // below.
                let reserve = hint.max(*len + 1);
                let coded = Self::coded_from(self.iter(), reserve, index);
                *self = coded;
                if let Column::Full(v) = self {
                    v.push(x);
                    return;
                }
            }
            Column::Full(v) => {
                v.push(x);
                return;
            }
            Column::Coded { .. } => {}
        }
        let full = match self {
            Column::Coded { codes, values } => {
                // Runs of one value are the common case: no hash lookup for them.
                if let Some(&last) = codes.last() {
                    if values.get(last as usize) == Some(&x) {
                        codes.push(last);
                        return;
                    }
                }
                let code = match index.get(&x) {
                    Some(&c) => Some(c),
                    None if values.len() <= u16::MAX as usize => {
                        let c = values.len() as u16;
                        values.push(x);
                        index.insert(x, c);
                        Some(c)
                    }
                    None => None,
                };
                match code {
                    Some(c) => {
                        codes.push(c);
                        None
                    }
                    None => {
                        let mut v = Vec::new();
                        let _ = v.try_reserve(codes.capacity().max(codes.len() + 1));
                        v.extend(
                            codes
                                .iter()
                                .filter_map(|&c| values.get(c as usize).copied()),
                        );
                        v.push(x);
                        Some(v)
                    }
                }
            }
            _ => None,
        };
        if let Some(v) = full {
            index.clear();
            *self = Column::Full(v);
        }
    }
    /// `rows` as 2-byte codes with room for `reserve` rows (`index`: value → code), or every
    /// row when they have more than 65 536 distinct values.
    fn coded_from(
        rows: impl Iterator<Item = T>,
        reserve: usize,
        index: &mut FxHashMap<T, u16>,
    ) -> Self {
        index.clear();
        let mut codes: Vec<u16> = Vec::new();
        let _ = codes.try_reserve_exact(reserve);
        let mut values: Vec<T> = Vec::new();
        let mut rest = rows.peekable();
        while let Some(&r) = rest.peek() {
            let code = match index.get(&r) {
                Some(&c) => c,
                None if values.len() <= u16::MAX as usize => {
                    let c = values.len() as u16;
                    values.push(r);
                    index.insert(r, c);
                    c
                }
                None => break,
            };
            codes.push(code);
            rest.next();
        }
        if rest.peek().is_none() {
            return Column::Coded { codes, values };
        }
        index.clear();
        let mut full: Vec<T> = Vec::new();
        let _ = full.try_reserve_exact(reserve);
        full.extend(
            codes
                .iter()
                .filter_map(|&c| values.get(c as usize).copied()),
        );
        drop(codes);
        full.extend(rest);
        Column::Full(full)
    }

    pub(crate) fn set(&mut self, i: usize, x: T) {
        if i >= self.len() || self.get(i) == Some(x) {
            return;
        }
        if let Column::Const { len, .. } = *self {
            if len == 1 {
                *self = Column::Const { value: x, len };
                return;
            }
        }
        // Rare (a trace entry's items in two batches): go full.
        if !matches!(self, Column::Full(_)) {
            *self = Column::Full(self.iter().collect());
        }
        if let Column::Full(v) = self {
            if let Some(s) = v.get_mut(i) {
                *s = x;
            }
        }
    }
    /// Done writing: spare capacity goes; a column whose rows are all equal folds to `Const`.
    pub(crate) fn sealed(self) -> Self {
        match self {
            Column::Full(v) => {
                let empty = match v.first() {
                    Some(x) => *x,
                    None => return Column::Full(v),
                };
                Column::from_vec(v, empty)
            }
            Column::Coded {
                mut codes,
                mut values,
            } => {
                codes.shrink_to_fit();
                values.shrink_to_fit();
                Column::Coded { codes, values }
            }
            Column::Runs {
                mut starts,
                mut values,
                len,
            } => {
                starts.shrink_to_fit();
                values.shrink_to_fit();
                Column::Runs {
                    starts,
                    values,
                    len,
                }
            }
            c => c,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(rows: &[u64]) -> Column<u64> {
        let mut c = Column::constant(0, 0);
        let mut index = FxHashMap::default();
        for &r in rows {
            c.push(r, rows.len(), &mut index);
        }
        c.sealed()
    }

    fn check(rows: &[u64], c: &Column<u64>) {
        assert_eq!(c.len(), rows.len());
        assert_eq!(c.iter().collect::<Vec<_>>(), rows);
        for (i, &r) in rows.iter().enumerate() {
            assert_eq!(c.get(i), Some(r), "row {i}");
        }
        assert_eq!(c.get(rows.len()), None);
    }

    #[test]
    fn long_runs_stay_runs_and_read_back() {
        // A stream that changes every 100 rows: 1 000 runs of 12 bytes for 100 000 rows.
        let rows: Vec<u64> = (0..100_000u64).map(|i| (i / 100) % 3).collect();
        let c = written(&rows);
        assert!(matches!(c, Column::Runs { .. }), "{:?}", c.heap_bytes());
        assert_eq!(c.heap_bytes(), 1000 * 12);
        check(&rows, &c);
        // One value throughout stays constant.
        assert!(matches!(
            written(&[7; 50]),
            Column::Const { value: 7, len: 50 }
        ));
    }

    #[test]
    fn short_runs_become_codes_then_every_row() {
        // Alternating rows: codes once the runs cost more than 2 bytes a row.
        let rows: Vec<u64> = (0..10_000u64).map(|i| i % 2).collect();
        let c = written(&rows);
        assert!(matches!(c, Column::Coded { .. }));
        check(&rows, &c);
        // Runs first, then short ones with more than 65 536 distinct values: every row.
        let mut rows: Vec<u64> = (0..1000u64).map(|i| i / 500).collect();
        rows.extend(0..70_000u64);
        let c = written(&rows);
        assert!(matches!(c, Column::Full(_)));
        check(&rows, &c);
    }

    #[test]
    fn a_row_set_later_is_kept() {
        let rows: Vec<u64> = (0..1000u64).map(|i| i / 250).collect();
        let mut c = written(&rows);
        c.set(10, 9);
        let mut want = rows.clone();
        want[10] = 9;
        check(&want, &c);
    }
}
