//! Aggregated warnings: the same kind of problem is reported once, with a count.
//!
//! Warnings name what the file holds (unknown keys, actions, states). Those names are data:
//! each is cut to [`MAX_NAME_CHARS`] characters with control and other special characters
//! escaped ([`quoted`]), and a file gets at most [`MAX_KINDS`] kinds of warning (the rest are
//! counted in one last line), so the warnings stay small whatever the file holds.

use rustc_hash::FxHashMap;

/// Kinds of warning kept; past them, one line counts the rest.
pub const MAX_KINDS: usize = 200;

/// Characters of a name from the file kept in a warning.
pub const MAX_NAME_CHARS: usize = 80;

/// Characters that change how the text around them shows (bidirectional controls, zero-width
/// ones, the byte order mark).
fn invisible(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// `name` for a message: at most [`MAX_NAME_CHARS`] characters, control and invisible
/// characters escaped (`\n`, `\u{202e}`), `…` when cut.
pub fn short(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().take(MAX_NAME_CHARS) {
        if c.is_control() || invisible(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    if name.chars().nth(MAX_NAME_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// [`short`] between backticks.
pub fn quoted(name: &str) -> String {
    format!("`{}`", short(name))
}

#[derive(Default, Debug)]
pub struct Warnings {
    index: FxHashMap<String, usize>,
    list: Vec<(String, u64)>,
    /// Warnings of kinds past [`MAX_KINDS`].
    dropped: u64,
}

impl Warnings {
    /// Record a warning of kind `key`; `msg` is only built the first time that kind is seen.
    pub fn warn(&mut self, key: &str, msg: impl FnOnce() -> String) {
        if let Some(&i) = self.index.get(key) {
            if let Some(w) = self.list.get_mut(i) {
                w.1 += 1;
            }
            return;
        }
        if self.list.len() >= MAX_KINDS {
            self.dropped += 1;
            return;
        }
        self.index.insert(key.to_string(), self.list.len());
        self.list.push((msg(), 1));
    }

    /// Like [`Self::warn`], but kept past the `MAX_KINDS` kinds: for the few warnings that say the
    /// model was cut.
    pub fn warn_always(&mut self, key: &str, msg: impl FnOnce() -> String) {
        if self.list.len() >= MAX_KINDS && !self.index.contains_key(key) {
            self.index.insert(key.to_string(), self.list.len());
            self.list.push((msg(), 1));
            return;
        }
        self.warn(key, msg);
    }

    pub fn into_strings(self) -> Vec<String> {
        let dropped = self.dropped;
        let mut out: Vec<String> = self
            .list
            .into_iter()
            .map(|(m, n)| if n > 1 { format!("{m} ({n} times)") } else { m })
            .collect();
        if dropped > 0 {
            out.push(format!(
                "{dropped} more warnings of other kinds (only the first {MAX_KINDS} kinds are listed)"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_and_escaped() {
        assert_eq!(quoted("frames"), "`frames`");
        assert_eq!(short("a\nb\u{202e}c"), "a\\nb\\u{202e}c");
        let long = "x".repeat(1000);
        assert_eq!(short(&long).chars().count(), MAX_NAME_CHARS + 1);
    }

    #[test]
    fn kinds_are_capped() {
        let mut w = Warnings::default();
        for i in 0..MAX_KINDS + 50 {
            w.warn(&format!("k{i}"), || format!("warning {i}"));
        }
        w.warn("k0", || "again".into());
        let s = w.into_strings();
        assert_eq!(s.len(), MAX_KINDS + 1);
        assert_eq!(s[0], "warning 0 (2 times)");
        assert!(
            s[MAX_KINDS].starts_with("50 more warnings"),
            "{}",
            s[MAX_KINDS]
        );
    }
}
