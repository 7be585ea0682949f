//! The zip records [`super::ZipStream`] reads, as PKWARE's APPNOTE.TXT (version 6.3.10) lays
//! them out: signatures (§4.3), the local file header (§4.3.7), the data descriptor (§4.3.9),
//! the zip64 extended information extra field (§4.5.3); every integer is little-endian (§4.4.1).

use crate::load::{LoadError, LoadErrorKind};

/// Local file header signature 0x04034b50 (§4.3.7).
pub(super) const SIG_LOCAL: [u8; 4] = *b"PK\x03\x04";
/// Data descriptor signature 0x08074b50: optional before a descriptor (§4.3.9.3).
pub(super) const SIG_DESCRIPTOR: [u8; 4] = *b"PK\x07\x08";
/// Records that end the local entries: central directory file header 0x02014b50 (§4.3.12),
/// end of central directory 0x06054b50 (§4.3.16), zip64 end of central directory record
/// 0x06064b50 (§4.3.14) and its locator 0x07064b50 (§4.3.15), archive extra data record
/// 0x08064b50 (§4.3.11, before an encrypted central directory), digital signature 0x05054b50
/// (§4.3.13).
const SIG_AFTER_ENTRIES: [[u8; 4]; 6] = [
    *b"PK\x01\x02",
    *b"PK\x05\x06",
    *b"PK\x06\x06",
    *b"PK\x06\x07",
    *b"PK\x06\x08",
    *b"PK\x05\x05",
];

/// The fixed part of a local file header (§4.3.7): signature 4, version needed 2, flags 2,
/// method 2, time 2, date 2, crc-32 4, compressed size 4, uncompressed size 4, name length 2,
/// extra field length 2; then the name and the extra field.
pub(super) const LOCAL_FIXED: usize = 30;

/// General purpose flag bits (§4.4.4): 0 encrypted, 3 sizes and crc in a data descriptor after
/// the data (zero in the local header), 6 strong encryption, 13 central directory encrypted
/// (local header values masked).
pub(super) const FLAG_ENCRYPTED: u16 = 1;
pub(super) const FLAG_DESCRIPTOR: u16 = 1 << 3;
const FLAG_STRONG_ENCRYPTION: u16 = 1 << 6;
const FLAG_MASKED_HEADERS: u16 = 1 << 13;

/// Compression methods (§4.4.5) this reader decodes: stored and deflated.
pub(super) const STORED: u16 = 0;
pub(super) const DEFLATED: u16 = 8;

/// Zip64 extended information extra field header id (§4.5.2, §4.5.3).
const EXTRA_ZIP64: u16 = 0x0001;

/// Characters of an entry name kept for messages (names are data; a name may be 65 535 bytes).
const NAME_KEEP: usize = 120;

/// What starts at a place where a local header may be.
pub(super) enum Record {
    /// More bytes are needed: this many in all.
    Need(usize),
    /// A whole local header (its fixed part, name and extra field).
    Local,
    /// The central directory or another record after the entries.
    AfterEntries,
    /// Something else (the four bytes read).
    Other([u8; 4]),
}

/// What `head` (the bytes from where a record starts) holds so far.
pub(super) fn record(head: &[u8]) -> Record {
    let Some(sig) = head.get(..4).and_then(|s| <[u8; 4]>::try_from(s).ok()) else {
        return Record::Need(4);
    };
    if sig == SIG_LOCAL {
        if head.len() < LOCAL_FIXED {
            return Record::Need(LOCAL_FIXED);
        }
        let whole = LOCAL_FIXED + usize::from(le16(head, 26)) + usize::from(le16(head, 28));
        if head.len() < whole {
            Record::Need(whole)
        } else {
            Record::Local
        }
    } else if is_after_entries(&sig) {
        Record::AfterEntries
    } else {
        Record::Other(sig)
    }
}

/// True for a signature that may follow an entry's data (and descriptor): another local
/// header, or a record after the entries.
pub(super) fn is_next_record(sig: &[u8]) -> bool {
    sig == SIG_LOCAL || is_after_entries(sig)
}

/// Whether `bytes` (at most 3 of them, where the input ended) can be the start of a next
/// record's signature.
pub(super) fn may_start_next_record(bytes: &[u8]) -> bool {
    std::iter::once(&SIG_LOCAL)
        .chain(SIG_AFTER_ENTRIES.iter())
        .any(|s| s.starts_with(bytes))
}

fn is_after_entries(sig: &[u8]) -> bool {
    SIG_AFTER_ENTRIES.iter().any(|s| s == sig)
}

/// A parsed local file header.
#[derive(Debug, Clone)]
pub(super) struct Local {
    /// Offset of the header in the archive.
    pub at: u64,
    pub flags: u16,
    pub method: u16,
    pub crc: u32,
    /// Compressed and uncompressed sizes (from the zip64 extra field when the header says
    /// 0xFFFFFFFF).
    pub csize: u64,
    pub usize: u64,
    /// A zip64 extra field is present: a data descriptor then has 8-byte sizes (§4.3.9.2).
    pub zip64: bool,
    /// The name for messages (lossy UTF-8, control characters replaced, cut to [`NAME_KEEP`]).
    pub name: String,
    /// The name is `data.pkl` or ends with `/data.pkl` (torch.save's layout).
    pub is_snapshot: bool,
}

impl Local {
    /// Parses a whole local header (`head` as [`record`] found it: [`Record::Local`]).
    pub(super) fn parse(head: &[u8], at: u64) -> Result<Local, LoadError> {
        let name_len = usize::from(le16(head, 26));
        let extra_len = usize::from(le16(head, 28));
        let raw_name = head.get(LOCAL_FIXED..LOCAL_FIXED + name_len).unwrap_or(&[]);
        let extra = head
            .get(LOCAL_FIXED + name_len..LOCAL_FIXED + name_len + extra_len)
            .unwrap_or(&[]);
        let mut local = Local {
            at,
            flags: le16(head, 6),
            method: le16(head, 8),
            crc: le32(head, 14),
            csize: u64::from(le32(head, 18)),
            usize: u64::from(le32(head, 22)),
            zip64: false,
            name: display_name(raw_name),
            is_snapshot: raw_name == b"data.pkl"
                || raw_name.ends_with(b"/data.pkl")
                || raw_name.ends_with(b"\\data.pkl"),
        };
        let zip64 = extra_records(extra).find(|(id, _)| *id == EXTRA_ZIP64);
        local.zip64 = zip64.is_some();
        let (c_max, u_max) = (local.csize == 0xFFFF_FFFF, local.usize == 0xFFFF_FFFF);
        if c_max || u_max {
            let Some((_, data)) = zip64 else {
                return Err(local.error(
                    LoadErrorKind::Malformed,
                    at + 18,
                    "has the size 0xFFFFFFFF in its local header but no zip64 extra field \
                     holding its size: the zip archive is damaged; copy or save it again",
                ));
            };
            // §4.5.3: the fields are in a fixed order (uncompressed, then compressed) and
            // appear only when the header's field is 0xFFFFFFFF, but a local header "MUST
            // include BOTH" sizes: when 16 bytes are there, both are.
            let both = data.len() >= 16;
            let u_at = 0;
            let c_at = if both || u_max { 8 } else { 0 };
            let name = local.name.clone();
            let short = |what: &str| {
                zip_error(
                    LoadErrorKind::Malformed,
                    at,
                    format!(
                        "entry '{name}' of the zip archive has a zip64 extra field of {} bytes, \
                         too short for its {what} size: the zip archive is damaged; copy or save \
                         it again",
                        data.len()
                    ),
                )
            };
            if u_max {
                local.usize = le64_at(data, u_at).ok_or_else(|| short("uncompressed"))?;
            }
            if c_max {
                local.csize = le64_at(data, c_at).ok_or_else(|| short("compressed"))?;
            }
        }
        Ok(local)
    }

    /// Encrypted data or a masked header: nothing this reader can decode.
    pub(super) fn encrypted(&self) -> bool {
        self.flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION | FLAG_MASKED_HEADERS) != 0
    }

    /// The data's end is known from the local header (flag bit 3 clear, or set by a writer
    /// that put the sizes there anyway).
    pub(super) fn size_known(&self) -> bool {
        self.flags & FLAG_DESCRIPTOR == 0 || self.csize != 0
    }

    /// A data descriptor follows the data (§4.3.9.1).
    pub(super) fn has_descriptor(&self) -> bool {
        self.flags & FLAG_DESCRIPTOR != 0
    }

    /// An error about this entry at `at` (a byte of the archive).
    pub(super) fn error(&self, kind: LoadErrorKind, at: u64, what: &str) -> LoadError {
        zip_error(
            kind,
            at,
            format!("entry '{}' of the zip archive {what}", self.name),
        )
    }
}

/// A [`LoadError`] at a byte of the archive.
pub(super) fn zip_error(kind: LoadErrorKind, at: u64, message: String) -> LoadError {
    LoadError {
        kind,
        offset: Some(at),
        message: format!("{message} (offset in the zip archive)"),
    }
}

/// The extra field's records (§4.5.1: header id 2, data size 2, data); a record that runs
/// past the field ends the list.
fn extra_records(mut extra: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let id = le16_at(extra, 0)?;
        let len = usize::from(le16_at(extra, 2)?);
        let data = extra.get(4..4 + len)?;
        extra = extra.get(4 + len..).unwrap_or(&[]);
        Some((id, data))
    })
}

/// An entry name as text for messages: lossy UTF-8 (names are CP437 or, with flag bit 11,
/// UTF-8; torch writes ASCII), control characters as '?', at most [`NAME_KEEP`] characters.
pub(super) fn display_name(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let mut out: String = text
        .chars()
        .take(NAME_KEEP)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if text.chars().nth(NAME_KEEP).is_some() {
        out.push('…');
    }
    out
}

/// The name of a compression method (§4.4.5), for messages.
pub(super) fn method_name(method: u16) -> &'static str {
    match method {
        1 => "shrink",
        2..=5 => "reduce",
        6 => "implode",
        9 => "deflate64",
        10 => "PKWARE imploding",
        12 => "bzip2",
        14 => "LZMA",
        18 => "IBM TERSE",
        19 => "IBM LZ77",
        20 | 93 => "zstd",
        95 => "xz",
        96 => "JPEG",
        97 => "WavPack",
        98 => "PPMd",
        99 => "AES encryption",
        _ => "an unknown method",
    }
}

/// The lengths a data descriptor may have (§4.3.9): crc-32 4 and two sizes of 4 bytes, or of
/// 8 with zip64, after an optional 4-byte signature; the zip64 ones first when the local
/// header had a zip64 extra field.
pub(super) fn descriptor_lengths(signed: bool, zip64: bool) -> [usize; 2] {
    let base = if signed { 4 + 4 } else { 4 };
    let (short, long) = (base + 8, base + 16);
    if zip64 {
        [long, short]
    } else {
        [short, long]
    }
}

/// The crc-32 of a data descriptor (`d`, from its first byte).
pub(super) fn descriptor_crc(d: &[u8]) -> Option<u32> {
    let at = if d.starts_with(&SIG_DESCRIPTOR) { 4 } else { 0 };
    le32_at(d, at)
}

/// A stored entry's data descriptor ending right before `buf[q..]` (where a next record
/// starts), the entry's data having begun `abs_q` bytes before `q`'s byte: its length and
/// crc-32 when the sizes it holds are both the data's length (`abs_q` minus the descriptor).
/// The zip64 forms first when the local header had a zip64 extra field.
pub(super) fn stored_descriptor_before(
    buf: &[u8],
    q: usize,
    abs_q: u64,
    zip64: bool,
) -> Option<(usize, u32)> {
    let forms: [(bool, bool); 4] = if zip64 {
        [(true, true), (false, true), (true, false), (false, false)]
    } else {
        [(true, false), (false, false), (true, true), (false, true)]
    };
    forms.into_iter().find_map(|(signed, wide)| {
        let size_len = if wide { 8 } else { 4 };
        let len = if signed { 4 } else { 0 } + 4 + 2 * size_len;
        let start = q.checked_sub(len)?;
        let d = buf.get(start..q)?;
        if signed != d.starts_with(&SIG_DESCRIPTOR) {
            return None;
        }
        let sizes_at = len - 2 * size_len;
        let read = |at: usize| {
            if wide {
                le64_at(d, at)
            } else {
                le32_at(d, at).map(u64::from)
            }
        };
        let data_len = abs_q.checked_sub(len as u64)?;
        let (c, u) = (read(sizes_at)?, read(sizes_at + size_len)?);
        (c == data_len && u == data_len).then_some((len, descriptor_crc(d)?))
    })
}

fn le16(b: &[u8], at: usize) -> u16 {
    le16_at(b, at).unwrap_or(0)
}

fn le32(b: &[u8], at: usize) -> u32 {
    le32_at(b, at).unwrap_or(0)
}

fn le16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn le32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_and_cleaned() {
        assert_eq!(display_name(b"a/data.pkl"), "a/data.pkl");
        assert_eq!(display_name(b"a\nb\x00"), "a?b?");
        let long = display_name(&[b'x'; 500]);
        assert_eq!(long.chars().count(), NAME_KEEP + 1);
        assert!(long.ends_with('…'));
        assert_eq!(display_name(&[0xff, b'a']), "\u{fffd}a");
    }

    #[test]
    fn descriptors_are_found_by_their_sizes() {
        // 5 bytes of data, a signed 16-byte descriptor, then a central directory header.
        let mut b = b"hello".to_vec();
        b.extend(SIG_DESCRIPTOR);
        b.extend(0xdead_beef_u32.to_le_bytes());
        b.extend(5u32.to_le_bytes());
        b.extend(5u32.to_le_bytes());
        let q = b.len();
        b.extend(b"PK\x01\x02");
        assert_eq!(
            stored_descriptor_before(&b, q, q as u64, false),
            Some((16, 0xdead_beef))
        );
        // The sizes must be the data's length.
        assert_eq!(stored_descriptor_before(&b, q, q as u64 + 1, false), None);
        assert_eq!(stored_descriptor_before(&b, 3, 3, false), None);
        assert_eq!(descriptor_lengths(true, false), [16, 24]);
        assert_eq!(descriptor_lengths(false, true), [20, 12]);
    }
}
