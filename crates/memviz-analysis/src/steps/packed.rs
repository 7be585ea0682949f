//! A read-only column of integers in frame-of-reference blocks: per block of [`BLOCK`] values
//! the minimum, and each value's offset from it in 0, 1, 2, 4 or 8 bytes (the fewest that
//! hold the block's range). Random access is O(1) (two table reads and one unaligned read).
//!
//! Why: a layout's per-element and per-action columns are mostly near their neighbours (push
//! steps and orders grow with the element id, live bytes and events change a little per action),
//! so most blocks need 1–4 bytes per value where a `Vec` spends 4 or 8.

/// Values per block.
const BLOCK: usize = 64;

/// Integers that a [`Packed`] column stores (as `u64`).
pub trait PackedValue: Copy {
    fn to_u64(self) -> u64;
    /// The value back (lossless for a value that came from `to_u64`).
    fn from_u64(v: u64) -> Self;
}

impl PackedValue for u64 {
    fn to_u64(self) -> u64 {
        self
    }
    fn from_u64(v: u64) -> Self {
        v
    }
}

impl PackedValue for u32 {
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
    fn from_u64(v: u64) -> Self {
        v as u32
    }
}

/// Offsets from `min` of `values`, `W` bytes each (little endian), into `out`.
fn write<T: PackedValue, const W: usize>(out: &mut [u8], values: &[T], min: u64) {
    for (dst, v) in out.chunks_exact_mut(W).zip(values) {
        let off = v.to_u64().wrapping_sub(min).to_le_bytes();
        if let (Ok(d), Some(src)) = (<&mut [u8; W]>::try_from(dst), off.first_chunk::<W>()) {
            *d = *src;
        }
    }
}

/// See the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Packed {
    len: usize,
    /// Per block: its minimum, and the byte offset of its first value in `bytes` << 4 | bytes
    /// per value (together: one cache line read per access).
    blocks: Vec<(u64, u64)>,
    bytes: Vec<u8>,
}

/// Bytes per value of a block whose values span `min..=max`.
fn width_of(min: u64, max: u64) -> usize {
    match max.saturating_sub(min) {
        0 => 0,
        1..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xffff_ffff => 4,
        _ => 8,
    }
}

/// The block's offsets from `min`, `width` bytes each, into `out` (`width * values.len()` long).
fn write_block(out: &mut [u8], values: &[u64], min: u64, width: usize) {
    // A constant width per loop: a copy of a run-time length was a memmove call per value (most
    // of the packing time).
    match width {
        1 => write::<u64, 1>(out, values, min),
        2 => write::<u64, 2>(out, values, min),
        4 => write::<u64, 4>(out, values, min),
        8 => write::<u64, 8>(out, values, min),
        _ => {}
    }
}

/// `(min, max)` of a block.
fn range_of(values: &[u64]) -> (u64, u64) {
    values
        .iter()
        .fold((u64::MAX, 0u64), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

/// Room for `more` more items in `v`, which is at `done` of about `total` steps of its filling:
/// enough for the next 1/16 of the steps at the rate so far (doubling during the first 1/64),
/// so a vector filled along a replay is never more than about 1/16 of its size ahead of its
/// length (doubling would be up to twice it) and is not reserved in full while the input it
/// replaces is still held.
pub(crate) fn reserve_extrapolated<T>(v: &mut Vec<T>, more: usize, done: usize, total: usize) {
    if v.capacity() - v.len() >= more {
        return;
    }
    let need = v.len().saturating_add(more);
    let want = if done > 0 && done >= total / 64 {
        let ahead = done
            .saturating_add(total / 16)
            .max(done.saturating_add(done / 16));
        (v.len() as u128 * ahead as u128 / done as u128).min(usize::MAX as u128) as usize
    } else {
        need.saturating_mul(2)
    };
    v.reserve_exact(want.max(need).max(64) - v.len());
}

impl Packed {
    pub fn from_slice<T: PackedValue>(values: &[T]) -> Packed {
        Packed::from_fn(values.len(), |i| values.get(i).map_or(0, |v| v.to_u64()))
    }

    /// The column of `f(0), f(1), …, f(len - 1)` ([`Packed::from_values`]).
    pub fn from_fn(len: usize, f: impl Fn(usize) -> u64) -> Packed {
        Packed::from_values(len, || (0..len).map(&f))
    }

    /// The column of the values `values()` yields, about `len` of them. Two passes (`values` is
    /// called twice and must yield the same values): the blocks' minimum and width, then the
    /// offsets into a buffer of the exact size (pushing byte by byte into a growing vector took
    /// 3x longer), so no vector of the values is needed.
    pub fn from_values<I: Iterator<Item = u64>>(len: usize, values: impl Fn() -> I) -> Packed {
        let mut meta: Vec<(u64, u64)> = Vec::with_capacity(len.div_ceil(BLOCK));
        let mut buf = [0u64; BLOCK];
        // The next block into `buf`: its length (0 at the end).
        let fill = |it: &mut I, buf: &mut [u64; BLOCK]| -> usize {
            let mut k = 0;
            for slot in buf.iter_mut() {
                let Some(v) = it.next() else {
                    break;
                };
                *slot = v;
                k += 1;
            }
            k
        };
        let mut total = 0usize;
        let mut count = 0usize;
        let mut it = values();
        loop {
            let k = fill(&mut it, &mut buf);
            if k == 0 {
                break;
            }
            let (min, max) = range_of(buf.get(..k).unwrap_or(&[]));
            let width = width_of(min, max);
            meta.push((min, ((total as u64) << 4) | width as u64));
            total += width * k;
            count += k;
            if k < BLOCK {
                break;
            }
        }
        // 8 bytes of padding: a read is always 8 bytes, masked to the width.
        let mut bytes = vec![0u8; total + 8];
        let mut it = values();
        for &(min, m) in &meta {
            let k = fill(&mut it, &mut buf);
            let width = (m & 0xf) as usize;
            let start = (m >> 4) as usize;
            if let (Some(out), Some(values)) =
                (bytes.get_mut(start..start + width * k), buf.get(..k))
            {
                write_block(out, values, min, width);
            }
        }
        meta.shrink_to_fit();
        Packed {
            len: count,
            blocks: meta,
            bytes,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Value `i` as a `u64`.
    #[inline]
    pub fn get_u64(&self, i: usize) -> Option<u64> {
        if i >= self.len {
            return None;
        }
        let b = i / BLOCK;
        let (base, meta) = *self.blocks.get(b)?;
        let width = (meta & 0xf) as u32;
        let at = (meta >> 4) as usize + (i % BLOCK) * width as usize;
        let word = u64::from_le_bytes(self.bytes.get(at..at + 8)?.try_into().ok()?);
        // Width 0 shifts by 64: no bits.
        let off = word & u64::MAX.checked_shr(64 - 8 * width).unwrap_or(0);
        Some(base.wrapping_add(off))
    }

    /// Value `i`.
    #[inline]
    pub fn get<T: PackedValue>(&self, i: usize) -> Option<T> {
        self.get_u64(i).map(T::from_u64)
    }

    /// The values in order (a block's width and minimum read once per block).
    pub fn iter<T: PackedValue>(&self) -> impl Iterator<Item = T> + '_ {
        self.blocks
            .iter()
            .enumerate()
            .flat_map(move |(b, &(base, meta))| {
                let width = (meta & 0xf) as usize;
                let start = (meta >> 4) as usize;
                let mask = u64::MAX.checked_shr(64 - 8 * width as u32).unwrap_or(0);
                let k = BLOCK.min(self.len.saturating_sub(b * BLOCK));
                (0..k).map(move |j| {
                    let at = start + j * width;
                    let word = self
                        .bytes
                        .get(at..at + 8)
                        .and_then(|w| w.try_into().ok())
                        .map_or(0, u64::from_le_bytes);
                    T::from_u64(base.wrapping_add(word & mask))
                })
            })
    }

    pub fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * 16 + self.bytes.capacity()
    }

    /// Bytes of the values' offsets (padding included).
    pub fn value_bytes(&self) -> usize {
        self.bytes.len()
    }
}

/// A [`Packed`] column filled value by value: each block is packed as soon as its
/// 64 values are in, so the values are never all held unpacked. The blocks are reserved for the
/// `expected` length; the bytes grow as `reserve_extrapolated` says.
#[derive(Clone, Debug)]
pub struct PackedBuilder {
    pending: [u64; BLOCK],
    len: usize,
    expected: usize,
    blocks: Vec<(u64, u64)>,
    bytes: Vec<u8>,
}

impl PackedBuilder {
    pub fn new(expected: usize) -> Self {
        PackedBuilder::with_bytes(expected, 0)
    }

    /// A builder of `expected` values whose offsets are expected to take about `bytes` (when a
    /// column of the same values in another order says so): reserved at once.
    pub fn with_bytes(expected: usize, bytes: usize) -> Self {
        PackedBuilder {
            pending: [0; BLOCK],
            len: 0,
            expected,
            blocks: Vec::with_capacity(expected.div_ceil(BLOCK)),
            bytes: Vec::with_capacity(bytes),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn push<T: PackedValue>(&mut self, v: T) {
        if let Some(slot) = self.pending.get_mut(self.len % BLOCK) {
            *slot = v.to_u64();
        }
        self.len += 1;
        if self.len.is_multiple_of(BLOCK) {
            self.flush();
        }
    }

    /// Packs the pending values (a full block, or the last one).
    fn flush(&mut self) {
        let k = self.len - self.blocks.len() * BLOCK;
        let Some(values) = self.pending.get(..k) else {
            return;
        };
        if k == 0 {
            return;
        }
        let (min, max) = range_of(values);
        let width = width_of(min, max);
        let start = self.bytes.len();
        // 8 more for the padding [`PackedBuilder::finish`] adds.
        reserve_extrapolated(&mut self.bytes, width * k + 8, self.len, self.expected);
        self.bytes.resize(start + width * k, 0);
        if let Some(out) = self.bytes.get_mut(start..) {
            write_block(out, values, min, width);
        }
        if self.blocks.len() == self.blocks.capacity() {
            reserve_extrapolated(&mut self.blocks, 1, self.len, self.expected);
        }
        self.blocks
            .push((min, ((start as u64) << 4) | width as u64));
    }

    /// The column, its vectors trimmed to their length.
    pub fn finish(mut self) -> Packed {
        self.flush();
        // 8 bytes of padding: a read is always 8 bytes, masked to the width.
        self.bytes.extend_from_slice(&[0; 8]);
        self.bytes.shrink_to_fit();
        self.blocks.shrink_to_fit();
        Packed {
            len: self.len,
            blocks: self.blocks,
            bytes: self.bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_width() {
        let mut v: Vec<u64> = (0..1000u64).map(|i| i * 3).collect();
        v.extend([7; 64]);
        v.extend((0..64).map(|i| if i % 2 == 0 { 0 } else { u64::MAX }));
        v.extend((0..100).map(|i| (1 << 40) | (i * 70_000)));
        v.extend((0..70).map(|i| 5_000_000_000 + i * 1000));
        let p = Packed::from_slice(&v);
        assert_eq!(p.len(), v.len());
        assert!(p.iter::<u64>().eq(v.iter().copied()));
        assert_eq!(p.get_u64(v.len()), None);
        let u: Vec<u32> = vec![u32::MAX, 0, 5, 1 << 20];
        let p = Packed::from_slice(&u);
        assert!(p.iter::<u32>().eq(u.iter().copied()));
        assert!(Packed::from_slice::<u32>(&[]).is_empty());
        // Built value by value: the same column, whatever the expected length.
        for expected in [0, 10, v.len(), 10 * v.len()] {
            let mut b = PackedBuilder::new(expected);
            for &x in &v {
                b.push(x);
            }
            assert_eq!(b.len(), v.len());
            assert_eq!(b.finish(), Packed::from_slice(&v));
        }
        assert!(PackedBuilder::new(5).finish().is_empty());
        assert_eq!(PackedBuilder::new(5).finish().get_u64(0), None);
    }
}
