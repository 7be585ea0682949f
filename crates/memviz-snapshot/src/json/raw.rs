//! Frame lists recognised by their text: a list written exactly as one read before is that
//! list, found without reading its tokens.
//!
//! JSON writes a traceback out in full for every entry that has it: 97 % of the bytes of the
//! corpus's JSON twins are frame lists, 93 to 99 % of them repeats of a list written before.
//! Tokenizing each repeat only to find (through `dedupe.rs`) the list made the first time took
//! most of the time; here a list that starts with `[{` is looked up by its text (up to its `]`,
//! found by skipping strings eight bytes at a time), and a stored frame list with the same text
//! is the same container: a text equal to one the reader read as a whole list of frames reads
//! as that list again.
//!
//! Bounded by the input: a stored text is one the reader read (at most [`MAX_LIST`] bytes, at
//! most [`MAX_STORED`] in all), and lookups that miss stop being tried once the bytes they
//! scanned pass twice the bytes read (plus 1 MiB), so a hostile file cannot make each of its
//! `[` scan far ahead.

use super::dedupe::hash;
use super::lexer::string_end;
use memviz_pickle::ObjId;
use rustc_hash::FxHashMap;

/// The longest list text looked up or stored (a traceback of 300 frames of 200 bytes fits).
const MAX_LIST: usize = 256 << 10;
/// Bytes of list text stored at most.
const MAX_STORED: usize = 64 << 20;

#[derive(Default)]
pub(super) struct RawLists {
    /// (hash, length) → (start in `text`, the list).
    map: FxHashMap<(u64, u32), (u32, ObjId)>,
    text: Vec<u8>,
    /// Bytes scanned by lookups that missed.
    missed: u64,
    off: bool,
}

/// The index of the `]` that ends the array whose `[` is at `at` (at most [`MAX_LIST`] bytes
/// on), when it holds no array: strings are skipped (eight bytes at a time), nothing else is
/// checked (a lookup compares the whole text with one read before). `Err(where it stopped)` at
/// a `[`, at the end of `buf`, or at a string that is not valid JSON (the reader then reads it
/// and says why).
fn list_end(buf: &[u8], at: usize) -> Result<usize, usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let eq = |x: u64, b: u8| {
        let y = x ^ (ONES * b as u64);
        y.wrapping_sub(ONES) & !y & HIGHS
    };
    let limit = buf.len().min(at.saturating_add(MAX_LIST));
    let mut i = at + 1;
    loop {
        // To the next quote or bracket.
        while let Some(w) = buf.get(i..(i + 8).min(limit)).filter(|w| w.len() == 8) {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            let x = u64::from_le_bytes(b);
            let hit = eq(x, b'"') | eq(x, b']') | eq(x, b'[');
            if hit != 0 {
                i += (hit.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        match buf.get(i).filter(|_| i < limit) {
            Some(b'"') => match string_end(buf, i, None) {
                Ok(Ok(end)) => i = end.quote + 1,
                _ => return Err(i),
            },
            Some(b']') => return Ok(i),
            Some(b'[') | None => return Err(i),
            Some(_) => i += 1,
        }
    }
}

impl RawLists {
    /// The list whose text starts at `at` (a `[`) in `buf`, if one was stored with that text:
    /// it and the index after its `]`. `read`: the bytes read so far, which bound the scans of
    /// lookups that miss.
    #[inline]
    pub(super) fn find(&mut self, buf: &[u8], at: usize, read: u64) -> Option<(ObjId, usize)> {
        if self.map.is_empty() || self.off {
            return None;
        }
        let next = buf
            .get(at + 1..)?
            .iter()
            .find(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'));
        if next != Some(&b'{') {
            return None;
        }
        let end = list_end(buf, at);
        let found = end.ok().and_then(|end| {
            let raw = buf.get(at..=end)?;
            let len = raw.len();
            let &(start, id) = self.map.get(&(hash(raw), u32::try_from(len).ok()?))?;
            let stored = self.text.get(start as usize..start as usize + len)?;
            (raw == stored).then_some((id, end + 1))
        });
        if found.is_none() {
            let scanned = end.unwrap_or_else(|stop| stop) - at;
            self.missed += scanned as u64;
            if self.missed > 2 * read + (1 << 20) {
                self.off = true;
            }
        }
        found
    }

    /// Store the text of frame list `id` (from its `[` to its `]`).
    pub(super) fn store(&mut self, raw: &[u8], id: ObjId) {
        let len = raw.len();
        if self.off || len > MAX_LIST || self.text.len() + len > MAX_STORED {
            return;
        }
        let (Ok(start), Ok(len32)) = (u32::try_from(self.text.len()), u32::try_from(len)) else {
            return;
        };
        if self.text.try_reserve(len).is_err() || self.map.try_reserve(1).is_err() {
            return;
        }
        let key = (hash(raw), len32);
        if self.map.contains_key(&key) {
            return;
        }
        self.text.extend_from_slice(raw);
        self.map.insert(key, (start, id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_skips_strings() {
        let t = br#"[{"name": "f[]\"]", "line": 1}, {"a": "]"}] tail"#;
        assert_eq!(list_end(t, 0), Ok(t.len() - 6));
        assert_eq!(list_end(&t[..t.len() - 6], 0), Err(t.len() - 6));
        assert_eq!(list_end(br#"[{"a": [1]}]"#, 0), Err(7));
        assert_eq!(list_end(b"[{\"a\x01\": 1}]", 0), Err(2));
    }

    #[test]
    fn stored_lists_are_found_by_their_text_only() {
        let mut r = RawLists::default();
        let a = br#"[{"name": "f", "line": 1}]"#;
        r.store(a, ObjId(7));
        let mut buf = b"xx".to_vec();
        buf.extend_from_slice(a);
        buf.extend_from_slice(b", 1]");
        assert_eq!(r.find(&buf, 2, 100), Some((ObjId(7), 2 + a.len())));
        let other = br#"[{"name": "g", "line": 1}]"#;
        assert_eq!(r.find(other, 0, 100), None);
        // A `]` inside a string.
        let b = br#"[{"name": "a[]", "line": 1}]"#;
        r.store(b, ObjId(8));
        assert_eq!(r.find(b, 0, 100), Some((ObjId(8), b.len())));
    }
}
