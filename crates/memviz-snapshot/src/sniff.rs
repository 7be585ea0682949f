//! Naming what a file is from its first bytes, when it is not a pickle of protocol 2 or later
//! or JSON (the loader's sniffing: [`crate::Loader`]).

use crate::load::{LoadError, LoadErrorKind};

/// How many leading bytes decide the format (a fixed window, so messages never depend on chunking).
pub(crate) const SNIFF_LEN: usize = 64;

/// True when `head` starts a JSON text of an object or an array (after an optional UTF-8 byte
/// order mark and whitespace): a snapshot saved as JSON, which the loader reads.
pub(crate) fn is_json(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let first = head
        .iter()
        .find(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'));
    matches!(first, Some(b'{' | b'['))
}

/// Names what a file that is neither a pickle nor JSON looks like, from its first bytes.
pub(crate) fn sniff_other(head: &[u8]) -> LoadError {
    let head = &head[..head.len().min(SNIFF_LEN)];
    let (kind, what) = what_it_is(head);
    LoadError::new(
        kind,
        format!("this file is {what} (first bytes: {})", hex(head)),
    )
}

/// The first 8 bytes in hex, for messages.
pub(crate) fn hex(head: &[u8]) -> String {
    let hex: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
    hex.join(" ")
}

/// What data that is not a pickle of protocol 2 or later looks like, from its first bytes: a
/// pickle of a text protocol is [`LoadErrorKind::NotSnapshot`] (a pickle, which memviz does not
/// read), anything else [`LoadErrorKind::NotPickle`].
pub(crate) fn what_it_is(head: &[u8]) -> (LoadErrorKind, &'static str) {
    use LoadErrorKind::{NotPickle, NotSnapshot};
    let head = &head[..head.len().min(SNIFF_LEN)];
    let starts = |m: &[u8]| head.starts_with(m);
    let trimmed: &[u8] = {
        let n = head.iter().take_while(|b| b.is_ascii_whitespace()).count();
        head.get(n..).unwrap_or(&[])
    };
    if starts(b"PK\x03\x04") {
        (NotPickle, "a zip archive inside another container (memviz opens a torch.save zip archive only as the file itself, not inside gzip or inside another archive): unpack it and open the .pt file")
    } else if starts(b"\x89PNG") {
        (NotPickle, "a PNG image, not a memory snapshot")
    } else if starts(b"\xff\xd8\xff") {
        (NotPickle, "a JPEG image, not a memory snapshot")
    } else if starts(b"GIF8") {
        (NotPickle, "a GIF image, not a memory snapshot")
    } else if starts(b"%PDF") {
        (NotPickle, "a PDF document, not a memory snapshot")
    } else if starts(&[0x1f, 0x8b]) {
        (NotPickle, "gzip-compressed data inside gzip; decompress it (`gzip -dc FILE > FILE.pickle`) and open the result")
    } else if starts(b"BZh") {
        (NotPickle, "bzip2-compressed data; decompress it first (memviz opens raw and gzip-compressed pickles)")
    } else if starts(b"\xfd7zXZ") {
        (NotPickle, "xz-compressed data; decompress it first (memviz opens raw and gzip-compressed pickles)")
    } else if starts(b"\x28\xb5\x2f\xfd") {
        (NotPickle, "zstd-compressed data; decompress it first (memviz opens raw and gzip-compressed pickles)")
    } else if protocol0(head) {
        (
            NotSnapshot,
            "a pickle of protocol 0 (the text protocol of pickle.dump(obj, f, protocol=0)), which \
             torch never writes for memory snapshots and memviz does not read: load it in Python and \
             dump it again with a binary protocol (pickle.dump(obj, f), protocol 2 to 5)",
        )
    } else if trimmed.starts_with(b"<") {
        (NotPickle, "HTML or XML text, not a pickle; if it is a memory_viz HTML page, open the pickle it was made from")
    } else if !head.is_empty()
        && head
            .iter()
            .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace())
    {
        (NotPickle, "a text file, not a pickle")
    } else if matches!(head.first(), Some(b'(' | b'}' | b']' | b'c' | b'I' | b'S')) {
        (
            NotSnapshot,
            "a pickle of protocol 0 or 1 (text), which memory snapshots never use",
        )
    } else {
        (NotPickle, "not a pickle: unknown binary data")
    }
}

/// True when `head` reads as the start of a protocol-0 pickle: text opcodes only, each whole
/// (the last one may be cut by the end of `head`), the first a MARK, a container, a scalar or a
/// class name. Plain text fails at its first letter that is no such opcode (or a line that is
/// no such operand).
fn protocol0(head: &[u8]) -> bool {
    /// The argument line of a text opcode: all of it up to `\n`, and whether it is valid.
    fn line(rest: &[u8], ok: impl Fn(&[u8]) -> bool) -> Option<(usize, bool)> {
        match rest.iter().position(|&b| b == b'\n') {
            Some(n) => Some((n + 1, ok(&rest[..n]))),
            // Cut by the end of the window: valid so far.
            None => Some((rest.len(), true)),
        }
    }
    let digits = |l: &[u8]| !l.is_empty() && l.iter().all(u8::is_ascii_digit);
    let int = |l: &[u8]| {
        let l = l.strip_prefix(b"-").unwrap_or(l);
        let l = l.strip_suffix(b"L").unwrap_or(l);
        digits(l) || l == b"00" || l == b"01"
    };
    let float = |l: &[u8]| {
        !l.is_empty()
            && l.iter()
                .all(|b| b.is_ascii_digit() || b"+-.eEinfa".contains(b))
    };
    let quoted =
        |l: &[u8]| l.len() >= 2 && matches!(l.first(), Some(b'\'' | b'"')) && l.first() == l.last();
    let ident = |l: &[u8]| {
        !l.is_empty()
            && l.iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.'))
    };
    let mut pos = 0;
    let mut ops = 0;
    while pos < head.len() {
        let op = head[pos];
        let rest = &head[pos + 1..];
        let arg = match op {
            b'(' | b')' | b'N' | b'd' | b'l' | b't' | b'a' | b's' | b'u' | b'e' | b'0' | b'1'
            | b'2' | b'R' | b'b' => Some((0, true)),
            b'.' => return ops > 0,
            b'p' | b'g' => line(rest, digits),
            b'I' => line(rest, int),
            b'L' => line(rest, int),
            b'F' => line(rest, float),
            b'S' => line(rest, quoted),
            // Raw-unicode-escaped text: any line.
            b'V' => line(rest, |_| true),
            // GLOBAL / INST: module line then name line.
            b'c' | b'i' => line(rest, ident).and_then(|(n, ok)| {
                let more = line(&rest[n..], ident)?;
                Some((n + more.0, ok && more.1))
            }),
            _ => None,
        };
        match arg {
            Some((n, true)) => pos += 1 + n,
            _ => return false,
        }
        ops += 1;
        if ops == 1
            && !matches!(
                op,
                b'(' | b'N' | b'I' | b'L' | b'F' | b'S' | b'V' | b'c' | b'i'
            )
        {
            return false;
        }
    }
    ops >= 2
}
