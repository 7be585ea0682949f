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

impl Packed {
    pub fn from_slice<T: PackedValue>(values: &[T]) -> Packed {
        // Two passes: the blocks' minimum and width, then the offsets into a buffer of the exact
        // size (pushing byte by byte into a growing vector took 3x longer).
        let blocks = values.len().div_ceil(BLOCK);
        let mut base = Vec::with_capacity(blocks);
        let mut meta = Vec::with_capacity(blocks);
        let mut total = 0usize;
        for chunk in values.chunks(BLOCK) {
            let (min, max) = chunk.iter().fold((u64::MAX, 0u64), |(lo, hi), v| {
                (lo.min(v.to_u64()), hi.max(v.to_u64()))
            });
            let width: usize = match max.saturating_sub(min) {
                0 => 0,
                1..=0xff => 1,
                0x100..=0xffff => 2,
                0x1_0000..=0xffff_ffff => 4,
                _ => 8,
            };
            base.push(min);
            meta.push(((total as u64) << 4) | width as u64);
            total += width * chunk.len();
        }
        // 8 bytes of padding: a read is always 8 bytes, masked to the width.
        let mut bytes = vec![0u8; total + 8];
        for ((chunk, &min), &m) in values.chunks(BLOCK).zip(&base).zip(&meta) {
            let width = (m & 0xf) as usize;
            let start = (m >> 4) as usize;
            let Some(out) = bytes.get_mut(start..start + width * chunk.len()) else {
                continue;
            };
            // A constant width per loop: a copy of a run-time length was a memmove call per
            // value (most of the packing time).
            match width {
                1 => write::<T, 1>(out, chunk, min),
                2 => write::<T, 2>(out, chunk, min),
                4 => write::<T, 4>(out, chunk, min),
                8 => write::<T, 8>(out, chunk, min),
                _ => {}
            }
        }
        Packed {
            len: values.len(),
            blocks: base.into_iter().zip(meta).collect(),
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

    /// The values in order.
    pub fn iter<T: PackedValue>(&self) -> impl Iterator<Item = T> + '_ {
        (0..self.len).filter_map(move |i| self.get(i))
    }

    pub fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * 16 + self.bytes.capacity()
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
    }
}
