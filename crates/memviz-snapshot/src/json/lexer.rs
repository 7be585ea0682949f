//! The tokens of JSON text, scanned in place in a byte slice: where a string ends (eight bytes
//! at a time), its text with the escapes decoded, numbers, literals. No allocation per token:
//! a string without escapes is its own bytes, one with escapes is decoded into a reused buffer.
//!
//! Every function works on `buf` from a position and says `None` when the token runs to the end
//! of `buf` (it may go on in the next chunk), so the caller can keep the token's bytes and try
//! again with more.

/// A token that is not valid JSON: where (an index into the slice scanned) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LexError {
    pub at: usize,
    pub message: String,
    /// Past a limit (valid JSON, refused for its size), not a syntax error.
    pub limit: bool,
}

impl LexError {
    fn new(at: usize, message: impl Into<String>) -> Self {
        LexError {
            at,
            message: message.into(),
            limit: false,
        }
    }

    /// A number longer than [`MAX_NUMBER_LEN`] at `at`.
    fn too_long(at: usize) -> Self {
        LexError {
            at,
            message: format!(
                "a number longer than {MAX_NUMBER_LEN} characters exceeds the limit (memory snapshots have no such numbers)"
            ),
            limit: true,
        }
    }
}

/// Whitespace between tokens (JSON's four characters).
#[inline]
pub(super) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// A byte for a message: the character when printable ASCII, else its hex value.
pub(super) fn shown(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// Where a string scan stopped without finding the closing quote: the index to go on from (never
/// inside an escape), and whether an escape was seen before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Resume {
    pub from: usize,
    pub escaped: bool,
}

/// A string's closing quote was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct StrEnd {
    /// Index of the closing quote.
    pub quote: usize,
    /// The string holds a backslash escape.
    pub escaped: bool,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `x` that is below `n` (n <= 128); the lowest flagged byte is
/// exact (bytes above it may be flagged falsely by the borrow).
#[inline]
fn below(x: u64, n: u8) -> u64 {
    x.wrapping_sub(ONES * n as u64) & !x & HIGHS
}

/// High bit set in each byte of `x` equal to `b` (lowest flagged byte exact).
#[inline]
fn equal(x: u64, b: u8) -> u64 {
    below(x ^ (ONES * b as u64), 1)
}

/// Find the closing quote of the string whose opening quote is at `open`, scanning from
/// `resume` (a previous scan of the same string that ran out of bytes) or just after the quote.
/// `Err(Resume)` when the bytes end first. Control characters (below 0x20) must be escaped in
/// JSON: an error.
pub(super) fn string_end(
    buf: &[u8],
    open: usize,
    resume: Option<Resume>,
) -> Result<Result<StrEnd, Resume>, LexError> {
    let (mut i, mut escaped) = match resume {
        Some(r) => (r.from, r.escaped),
        None => (open + 1, false),
    };
    loop {
        // Eight bytes at a time up to the first quote, backslash or control character.
        while let Some(w) = buf.get(i..i + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            let x = u64::from_le_bytes(word);
            let hit = equal(x, b'"') | equal(x, b'\\') | below(x, 0x20);
            if hit != 0 {
                i += (hit.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        let Some(&b) = buf.get(i) else {
            return Ok(Err(Resume { from: i, escaped }));
        };
        match b {
            b'"' => return Ok(Ok(StrEnd { quote: i, escaped })),
            b'\\' => {
                // The escaped byte is never the closing quote; `\u` digits are checked when
                // the string is decoded.
                if i + 1 >= buf.len() {
                    return Ok(Err(Resume { from: i, escaped }));
                }
                escaped = true;
                i += 2;
            }
            b if b < 0x20 => {
                return Err(LexError::new(
                    i,
                    format!(
                        "control character 0x{b:02x} inside a string: JSON strings must escape it (\\n, \\t, \\u00XX)"
                    ),
                ))
            }
            _ => i += 1,
        }
    }
}

/// `raw` as UTF-8 text (`base`: its index in the scanned slice, for the error).
fn utf8(raw: &[u8], base: usize) -> Result<&str, LexError> {
    std::str::from_utf8(raw).map_err(|e| {
        LexError::new(
            base + e.valid_up_to(),
            "invalid UTF-8 inside a string (JSON text must be UTF-8): the file is damaged or in another encoding",
        )
    })
}

/// The value of 4 hex digits.
fn hex4(d: &[u8]) -> Option<u32> {
    if d.len() != 4 {
        return None;
    }
    d.iter().try_fold(0u32, |acc, &c| {
        let v = (c as char).to_digit(16)?;
        Some(acc * 16 + v)
    })
}

/// The text of a string's contents `raw` (between the quotes; `base` is its index in the
/// scanned slice, for errors). Without escapes that is `raw` itself, checked as UTF-8; with
/// escapes it is decoded into `scratch`. A `\u` escape of a lone surrogate (which Python writes
/// for text it read with `surrogateescape`) becomes U+FFFD, as the pickle reader replaces
/// invalid UTF-8.
pub(super) fn decode<'a>(
    raw: &'a [u8],
    base: usize,
    escaped: bool,
    scratch: &'a mut String,
) -> Result<&'a str, LexError> {
    if !escaped {
        return utf8(raw, base);
    }
    scratch.clear();
    let mut i = 0;
    while i < raw.len() {
        let run = raw
            .get(i..)
            .and_then(|r| r.iter().position(|&b| b == b'\\'))
            .map_or(raw.len(), |p| i + p);
        if run > i {
            scratch.push_str(utf8(raw.get(i..run).unwrap_or(&[]), base + i)?);
        }
        if run >= raw.len() {
            break;
        }
        let esc = raw.get(run + 1).copied().unwrap_or(0);
        let ch = match esc {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let bad = || {
                    LexError::new(
                        base + run,
                        "invalid \\u escape inside a string: expected 4 hex digits",
                    )
                };
                let hi = hex4(raw.get(run + 2..run + 6).unwrap_or(&[])).ok_or_else(bad)?;
                i = run + 6;
                let c = if (0xD800..0xDC00).contains(&hi) {
                    // A high surrogate: a pair with the low one that follows, if it does.
                    let lo = match (raw.get(i..i + 2), raw.get(i + 2..i + 6)) {
                        (Some(b"\\u"), Some(d)) => hex4(d).filter(|lo| (0xDC00..0xE000).contains(lo)),
                        _ => None,
                    };
                    match lo {
                        Some(lo) => {
                            i += 6;
                            char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                        }
                        None => None,
                    }
                } else {
                    char::from_u32(hi)
                };
                scratch.push(c.unwrap_or('\u{FFFD}'));
                continue;
            }
            other => {
                return Err(LexError::new(
                    base + run,
                    format!(
                        "invalid escape \\{} inside a string: JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX",
                        if other.is_ascii_graphic() {
                            (other as char).to_string()
                        } else {
                            format!("(byte 0x{other:02x})")
                        }
                    ),
                ))
            }
        };
        scratch.push(ch);
        i = run + 2;
    }
    Ok(scratch.as_str())
}

/// A number token.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Num {
    /// An integer that fits `i64`.
    Int(i64),
    /// An integer outside `i64`: its text is `buf[start..end]`.
    BigInt,
    Float(f64),
}

/// The longest number token read (a snapshot's numbers have at most 20 digits).
pub(super) const MAX_NUMBER_LEN: usize = 4096;

/// The number starting at `start` (a `-` or a digit): its value and end, or None when it runs to
/// the end of `buf` (more digits may follow in the next chunk). Strict JSON grammar:
/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
pub(super) fn number(buf: &[u8], start: usize) -> Result<Option<(Num, usize)>, LexError> {
    let mut i = start;
    let neg = buf.get(i) == Some(&b'-');
    if neg {
        i += 1;
    }
    let digits_from = i;
    // Up to 18 digits always fit i64.
    let mut acc: i64 = 0;
    while let Some(&d) = buf.get(i) {
        if !d.is_ascii_digit() {
            break;
        }
        if i - digits_from < 18 {
            acc = acc * 10 + (d - b'0') as i64;
        }
        i += 1;
    }
    let n_digits = i - digits_from;
    if i - start > MAX_NUMBER_LEN {
        return Err(LexError::too_long(start));
    }
    let Some(&next) = buf.get(i) else {
        return Ok(None);
    };
    if n_digits == 0 {
        return Err(LexError::new(
            i,
            format!(
                "invalid number: expected a digit after '-', found {}",
                shown(next)
            ),
        ));
    }
    if n_digits > 1 && buf.get(digits_from) == Some(&b'0') {
        return Err(LexError::new(
            start,
            "invalid number: a leading zero (JSON writes 0, or 0.5, never 012)",
        ));
    }
    let mut float = false;
    if next == b'.' {
        float = true;
        match digits(buf, i + 1, "after '.'")? {
            Some(end) => i = end,
            None => return Ok(None),
        }
    }
    if matches!(buf.get(i), Some(b'e' | b'E')) {
        float = true;
        i += 1;
        if matches!(buf.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        match digits(buf, i, "in the exponent")? {
            Some(end) => i = end,
            None => return Ok(None),
        }
    }
    if i - start > MAX_NUMBER_LEN {
        return Err(LexError::too_long(start));
    }
    let num = if float {
        let text = std::str::from_utf8(buf.get(start..i).unwrap_or(&[])).unwrap_or("");
        Num::Float(
            text.parse::<f64>()
                .map_err(|_| LexError::new(start, "invalid number"))?,
        )
    } else if n_digits <= 18 {
        Num::Int(if neg { -acc } else { acc })
    } else {
        match i128_of(buf.get(start..i).unwrap_or(&[])).and_then(|v| i64::try_from(v).ok()) {
            Some(v) => Num::Int(v),
            None => Num::BigInt,
        }
    };
    Ok(Some((num, i)))
}

/// A decimal integer's value, if it fits `i128`.
fn i128_of(text: &[u8]) -> Option<i128> {
    let (neg, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let mut v: i128 = 0;
    for &d in digits {
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub((d - b'0') as i128)?
        } else {
            v.checked_add((d - b'0') as i128)?
        };
    }
    Some(v)
}

/// A decimal integer (`-?[0-9]+`) as little-endian two's complement of minimal length, the way
/// pickle's LONG1 stores integers.
pub(super) fn big_int_bytes(text: &[u8]) -> Vec<u8> {
    let (neg, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    // The magnitude in base 2^32 limbs, little-endian.
    let mut limbs: Vec<u32> = Vec::new();
    for &d in digits {
        let mut carry = (d - b'0') as u64;
        for l in limbs.iter_mut() {
            let x = *l as u64 * 10 + carry;
            *l = x as u32;
            carry = x >> 32;
        }
        if carry != 0 {
            limbs.push(carry as u32);
        }
    }
    let mut bytes: Vec<u8> = limbs.iter().flat_map(|l| l.to_le_bytes()).collect();
    // Room for the sign bit.
    bytes.push(0);
    if neg {
        let mut carry = true;
        for b in bytes.iter_mut() {
            let (v, c) = (!*b).overflowing_add(carry as u8);
            *b = v;
            carry = c;
        }
    }
    // Drop redundant sign-extension bytes.
    while bytes.len() > 1 {
        let n = bytes.len();
        let (last, prev) = (bytes[n - 1], bytes[n - 2]);
        let redundant = (last == 0 && prev & 0x80 == 0) || (last == 0xff && prev & 0x80 != 0);
        if !redundant {
            break;
        }
        bytes.pop();
    }
    bytes
}

/// The literal `lit` at `at`: its end, None when `buf` ends inside it, or an error naming
/// `what` was expected.
pub(super) fn literal(buf: &[u8], at: usize, lit: &[u8]) -> Result<Option<usize>, LexError> {
    let have = buf.get(at..).unwrap_or(&[]);
    if have.starts_with(lit) {
        return Ok(Some(at + lit.len()));
    }
    if lit.starts_with(have) {
        return Ok(None);
    }
    // Up to the first byte that differs (the same whatever the chunking).
    let k = have.iter().zip(lit).take_while(|(a, b)| a == b).count();
    let text = String::from_utf8_lossy(have.get(..=k).unwrap_or(have)).into_owned();
    Err(LexError::new(
        at,
        format!(
            "expected a value (an object, array, string, number, true, false or null), found `{}`",
            text.escape_debug()
        ),
    ))
}

/// The end of the digits from `from` (at least one, `where` they were expected in the error),
/// or `None` when the buffer ends before a byte that is no digit (the number may go on in the
/// next chunk).
fn digits(buf: &[u8], from: usize, place: &str) -> Result<Option<usize>, LexError> {
    let mut i = from;
    while buf.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let Some(&b) = buf.get(i) else {
        return Ok(None);
    };
    if i == from {
        return Err(LexError::new(
            i,
            format!(
                "invalid number: expected a digit {place}, found {}",
                shown(b)
            ),
        ));
    }
    Ok(Some(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_ends_are_found_at_any_alignment() {
        for pad in 0..20 {
            let mut s = vec![b'"'];
            s.extend(std::iter::repeat_n(b'a', pad));
            s.extend_from_slice(br#"\"x"tail"#);
            let end = string_end(&s, 0, None);
            assert_eq!(
                end,
                Ok(Ok(StrEnd {
                    quote: pad + 4,
                    escaped: true
                }))
            );
            // Cut at every length: a resume point, never inside the escape.
            for cut in 1..pad + 4 {
                let r = string_end(&s[..cut], 0, None);
                let Ok(Err(r)) = r else { panic!("{r:?}") };
                assert!(r.from <= cut);
                assert_eq!(string_end(&s, 0, Some(r)), end, "cut {cut}");
            }
        }
        let e = string_end(b"\"ab\ncd\"", 0, None);
        assert_eq!(e.map_err(|e| e.at), Err(3));
    }

    #[test]
    fn escapes_decode() {
        let mut scratch = String::new();
        let raw = br#"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\ud800x"#;
        let s = decode(raw, 0, true, &mut scratch).map(str::to_owned);
        assert_eq!(
            s.as_deref(),
            Ok("a\"b\\c/d\u{8}\u{c}\n\r\t\u{e9}\u{1F600}\u{FFFD}x")
        );
        assert!(decode(br"\x", 0, true, &mut scratch).is_err());
        assert!(decode(br"\u12", 0, true, &mut scratch).is_err());
        assert!(decode(br"\u12G4", 0, true, &mut scratch).is_err());
        let e = decode(b"ok\xff", 10, false, &mut scratch);
        assert_eq!(e.map_err(|e| e.at), Err(12));
    }

    #[test]
    fn numbers() {
        let n = |s: &str| number(s.as_bytes(), 0).map(|r| r.map(|(n, _)| n));
        assert_eq!(n("0,"), Ok(Some(Num::Int(0))));
        assert_eq!(n("-0,"), Ok(Some(Num::Int(0))));
        assert_eq!(
            n("123456789012345678]"),
            Ok(Some(Num::Int(123456789012345678)))
        );
        assert_eq!(n("9223372036854775807 "), Ok(Some(Num::Int(i64::MAX))));
        assert_eq!(n("-9223372036854775808 "), Ok(Some(Num::Int(i64::MIN))));
        assert_eq!(n("9223372036854775808 "), Ok(Some(Num::BigInt)));
        assert_eq!(n("1.5e3}"), Ok(Some(Num::Float(1500.0))));
        assert_eq!(n("-2E-2}"), Ok(Some(Num::Float(-0.02))));
        assert_eq!(n("12"), Ok(None));
        assert_eq!(n("1.5"), Ok(None));
        assert!(n("01,").is_err());
        assert!(n("-,").is_err());
        assert!(n("1.,").is_err());
        assert!(n("1e,").is_err());
    }

    #[test]
    fn big_ints_are_minimal_twos_complement() {
        assert_eq!(big_int_bytes(b"9223372036854775808"), {
            let mut v = vec![0u8; 7];
            v.extend([0x80, 0]);
            v
        });
        assert_eq!(
            big_int_bytes(b"-9223372036854775809"),
            vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff]
        );
        assert_eq!(big_int_bytes(b"18446744073709551616"), {
            let mut v = vec![0u8; 8];
            v.push(1);
            v
        });
        assert_eq!(big_int_bytes(b"-1"), vec![0xff]);
        assert_eq!(big_int_bytes(b"255"), vec![0xff, 0]);
        assert_eq!(big_int_bytes(b"0"), vec![0]);
    }

    #[test]
    fn literals() {
        assert_eq!(literal(b"true,", 0, b"true"), Ok(Some(4)));
        assert_eq!(literal(b"tr", 0, b"true"), Ok(None));
        assert!(literal(b"trap", 0, b"true").is_err());
    }
}
