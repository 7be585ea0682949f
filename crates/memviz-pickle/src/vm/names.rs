//! Printable excerpts of the input, for messages (opcode names are in [`super::op`]).

/// At most 100 characters of `b` for a message, with control characters escaped.
pub(super) fn printable(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let mut out: String = s.chars().take(100).flat_map(|c| c.escape_debug()).collect();
    if s.chars().count() > 100 {
        out.push('…');
    }
    out
}
