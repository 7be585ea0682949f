//! One search over a timeline's elements (SEMANTICS.md §7 "Search", extended): a
//! case-insensitive substring or a `/regex/`, matched against each element's
//! * frames: every frame of its stack, unfiltered, as [`frame_text`] prints it
//!   (`filename:line:name`, with the FX lines when present), one frame at a time;
//! * address label: `b<hex>_<v>` as in the tooltip (`s…` for segment elements, `a,b,s<n>` for a
//!   pool envelope);
//! * size: the decimal byte count (`12582912`) and the short text (`12.0MiB`), separately;
//! * user metadata and compile context (the trace event's), the forward-pass frames
//!   (`forward_frames`), line by line, and the text of `annotate` events on the allocation
//!   ([`crate::annotations::AnnotationIndex`]).
//!
//! A query never spans two of these texts. Matching is cached: once per frame, per stack
//! ([`StackId`]), per distinct size and per distinct string, so a search costs
//! O(elements + distinct texts), not O(elements × frames).
//!
//! # Query syntax ([`parse_query`])
//! * `text`: case-insensitive substring (Unicode lowercase on both sides). The empty query
//!   matches every element.
//! * `/pattern/` or `/pattern/i` (`i`: case-insensitive): a regular expression, found anywhere
//!   in the text (unanchored). A `/…` query whose tail after the last `/` is not a flag set is a
//!   substring (`/home/u/model.py` searches that path). The syntax is the `regex-lite` crate's
//!   (the Rust `regex` syntax without Unicode classes): literals, `.`, `^` `$`, classes,
//!   `\d \w \s` and their negations, `\b`, groups, alternation, the usual quantifiers (lazy
//!   ones too). Evaluation takes time linear in the text for a given pattern (no input can make
//!   it slow); patterns are limited to [`MAX_PATTERN_BYTES`] compiled and [`MAX_NESTING`] nested
//!   groups. Changes from the hand-written engine it replaced (issue 15): `\w`, `\d`, `\s` and
//!   the `i` flag are ASCII-only (`\w` no longer matches `é`; a literal `é` still does), `\b`
//!   is a word boundary instead of an error, and a `{` that starts no repetition (`x{`) is an
//!   error instead of a literal (write `x\{`).
//!
//! A `/…/` query skips address labels (and the address versions they need) when it has a
//! literal character that no label contains (`/forward/`, `/lin[e]ar\.py/`): a scan of the
//! pattern's required literals ([`required_literals_outside`]); any other pattern is tried on the
//! labels too.

use crate::format::size_short;
use crate::frames::{element_stack, frame_text};
use crate::lines::{element_addr_stream, write_element_label};
use crate::timeline::{Origin, Timeline};
use crate::versions;
use memviz_snapshot::{Snapshot, StackId, StrId, NO_STR};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Largest compiled pattern, in bytes of `regex-lite`'s program (e.g. after expanding
/// `{n,m}`).
pub const MAX_PATTERN_BYTES: usize = 1 << 20;
/// Deepest group nesting.
pub const MAX_NESTING: u32 = 100;

/// Why a search box's text is no query: a `/…/` pattern that does not compile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// `regex-lite`'s error, whose message names the problem and where it is.
    #[error(transparent)]
    Regex(#[from] regex_lite::Error),
}

/// The message, as a JSON string (what the page shows).
impl Serialize for SearchError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A parsed search.
#[derive(Clone, Debug)]
pub enum Query {
    /// Case-insensitive substring; holds the lowercased needle.
    Substring(String),
    Regex(Regex),
}

impl Query {
    /// Whether the query could match an element's address label: only then does [`search`]
    /// format labels, with the address versions they need.
    #[must_use]
    pub fn may_match_labels(&self) -> bool {
        match self {
            Query::Substring(n) => label_may_contain(n),
            Query::Regex(re) => !required_literals_outside(&re.source, re.ci, LABEL_ALPHABET),
        }
    }
}

impl Query {
    /// Does `text` match?
    pub fn is_match(&self, text: &str) -> bool {
        match self {
            Query::Substring(needle) => contains_ci(text, needle),
            Query::Regex(re) => re.is_match(text),
        }
    }
}

/// `haystack` contains `needle_lower` (already lowercased), ignoring case.
fn contains_ci(haystack: &str, needle_lower: &str) -> bool {
    if needle_lower.is_empty() {
        return true;
    }
    if haystack.is_ascii() && needle_lower.is_ascii() {
        let (h, n) = (haystack.as_bytes(), needle_lower.as_bytes());
        return h.len() >= n.len() && h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n));
    }
    haystack.to_lowercase().contains(needle_lower)
}

/// Parses a search box's text (module documentation). Errors name the problem in a bad regex.
pub fn parse_query(s: &str) -> Result<Query, SearchError> {
    if let Some(rest) = s.strip_prefix('/') {
        if let Some(end) = rest.rfind('/') {
            let (pattern, flags) = (&rest[..end], &rest[end + 1..]);
            if flags.chars().all(|c| c == 'i') && flags.len() <= 1 {
                return Regex::new(pattern, flags == "i").map(Query::Regex);
            }
        }
    }
    Ok(Query::Substring(s.to_lowercase()))
}

/// The elements a query matched.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SearchResult {
    /// Matching element ids, ascending.
    pub elements: Vec<u32>,
    /// Σ sizes of the matching elements (saturating).
    pub bytes: u64,
    /// `elements.len()`.
    pub count: usize,
}

/// Every character an address label can hold: hex digits, `b`/`s`, `_`, a version or
/// `undefined`; for pool envelopes `a,b,s<n>` with signed ids.
const LABEL_ALPHABET: &str = "0123456789abcdefsundi_,-";

/// Could an address label contain this lowercased substring?
fn label_may_contain(needle_lower: &str) -> bool {
    needle_lower.chars().all(|c| LABEL_ALPHABET.contains(c))
}

/// Three-state cache entry.
const UNKNOWN: u8 = 0;
const NO: u8 = 1;
const YES: u8 = 2;

struct Matcher<'a> {
    snap: &'a Snapshot,
    q: &'a Query,
    frames: Vec<u8>,
    stacks: Vec<u8>,
    other_stacks: FxHashMap<StackId, bool>,
    strs: FxHashMap<StrId, bool>,
    sizes: FxHashMap<u64, bool>,
}

impl Matcher<'_> {
    fn frame(&mut self, id: memviz_snapshot::FrameId) -> bool {
        let i = id.0 as usize;
        match self.frames.get(i).copied() {
            Some(YES) => return true,
            Some(NO) => return false,
            _ => {}
        }
        let hit = self
            .snap
            .frame(id)
            .is_some_and(|f| self.q.is_match(&frame_text(self.snap, f)));
        if let Some(slot) = self.frames.get_mut(i) {
            *slot = if hit { YES } else { NO };
        }
        hit
    }

    fn stack(&mut self, stack: StackId) -> bool {
        let i = stack.0 as usize;
        match self.stacks.get(i).copied() {
            Some(YES) => return true,
            Some(NO) => return false,
            Some(_) => {}
            None => {
                if let Some(&h) = self.other_stacks.get(&stack) {
                    return h;
                }
            }
        }
        let snap = self.snap;
        let hit = snap.stack(stack).iter().any(|&f| self.frame(f));
        match self.stacks.get_mut(i) {
            Some(slot) => *slot = if hit { YES } else { NO },
            None => {
                self.other_stacks.insert(stack, hit);
            }
        }
        hit
    }

    fn string(&mut self, id: StrId) -> bool {
        if id == NO_STR {
            return false;
        }
        if let Some(&h) = self.strs.get(&id) {
            return h;
        }
        let h = self.q.is_match(self.snap.str(id));
        self.strs.insert(id, h);
        h
    }

    fn size(&mut self, bytes: u64) -> bool {
        if let Some(&h) = self.sizes.get(&bytes) {
            return h;
        }
        let h = self.q.is_match(&bytes.to_string()) || self.q.is_match(&size_short(bytes));
        self.sizes.insert(bytes, h);
        h
    }
}

/// The elements of `timeline` (built for `device`) matching `q` (module documentation).
pub fn search(snap: &Snapshot, device: i64, timeline: &Timeline, q: &Query) -> SearchResult {
    let mut m = Matcher {
        snap,
        q,
        frames: vec![UNKNOWN; snap.frames.len()],
        stacks: vec![UNKNOWN; snap.stacks.len()],
        other_stacks: FxHashMap::default(),
        strs: FxHashMap::default(),
        sizes: FxHashMap::default(),
    };
    // Labels are formatted per element, so skip them when no label can match.
    let labels = q.may_match_labels();
    let versions = labels.then(|| versions::versions(snap, device));
    let streams = (labels && !timeline.pools.is_empty()).then(|| versions::stream_ordinals(snap));
    let tr = snap.trace(device);
    let notes = crate::annotations::AnnotationIndex::new(snap, device);
    let mut label = String::new();
    let mut out = SearchResult::default();
    for (i, el) in timeline.elements.iter().enumerate() {
        let hit = m.stack(element_stack(snap, device, el))
            || m.size(el.size_bytes)
            || {
                let (event, forward) = match el.origin {
                    Origin::Alloc { event }
                    | Origin::UnmatchedFree { event }
                    | Origin::SegmentAlloc { event }
                    | Origin::UnmatchedSegmentFree { event } => (
                        Some(event),
                        tr.and_then(|t| sparse_get(&t.forward_frames, event)),
                    ),
                    Origin::Ghost { block } => {
                        (None, sparse_get(&snap.block_forward_frames, block))
                    }
                    _ => (None, None),
                };
                let strings = event.is_some_and(|e| {
                    let e = e as usize;
                    let um = tr.and_then(|t| t.user_metadata.get(e)).unwrap_or(NO_STR);
                    let cc = tr.and_then(|t| t.compile_context.get(e)).unwrap_or(NO_STR);
                    m.string(um) || m.string(cc)
                });
                strings
                    || forward.is_some_and(|lines| lines.iter().any(|&s| m.string(s)))
                    || notes
                        .of_element(snap, device, el)
                        .iter()
                        .any(|&(_, s)| m.string(s))
            }
            || versions.as_ref().is_some_and(|v| {
                let (addr, _, _) = element_addr_stream(snap, device, timeline, el);
                label.clear();
                write_element_label(&mut label, v, streams.as_ref(), timeline, el, addr);
                q.is_match(&label)
            });
        if hit {
            out.elements.push(i as u32);
            out.bytes = out.bytes.saturating_add(el.size_bytes);
        }
    }
    out.count = out.elements.len();
    out
}

fn sparse_get<T>(v: &[(u32, T)], key: u32) -> Option<&T> {
    v.binary_search_by_key(&key, |e| e.0)
        .ok()
        .and_then(|i| v.get(i))
        .map(|e| &e.1)
}

/// A compiled `/…/` pattern (module documentation for the syntax): `regex-lite`, with the
/// pattern and flag kept for the label prefilter and for display.
#[derive(Clone, Debug)]
pub struct Regex {
    re: regex_lite::Regex,
    source: String,
    ci: bool,
}

impl Regex {
    /// Compiles `pattern`; `case_insensitive` is the `i` flag. The error is `regex-lite`'s
    /// message, which names the problem and where it is.
    pub fn new(pattern: &str, case_insensitive: bool) -> Result<Regex, SearchError> {
        let re = regex_lite::RegexBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .nest_limit(MAX_NESTING)
            .size_limit(MAX_PATTERN_BYTES)
            .build()?;
        Ok(Regex {
            re,
            source: pattern.to_string(),
            ci: case_insensitive,
        })
    }

    /// The pattern as written (without slashes and flags).
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Does the pattern match somewhere in `text`?
    pub fn is_match(&self, text: &str) -> bool {
        self.re.is_match(text)
    }
}

/// True when `pattern` has a literal character that every match must contain and that is not
/// in `alphabet` (both cases tried when `ci`): then no text over `alphabet` can match.
///
/// A scan, not a parse: a pattern with `|` anywhere has no required literal (either side may
/// match); a literal or escaped punctuation is required unless a `?`, `*` or `{0` follows it;
/// classes, `.`, `\d`-style escapes, anchors and groups (with what is inside them) require
/// nothing. It never says "required" wrongly, so the prefilter only skips labels that cannot
/// match.
fn required_literals_outside(pattern: &str, ci: bool, alphabet: &str) -> bool {
    if pattern.contains('|') {
        return false;
    }
    let outside = |c: char| {
        let inside = |c: char| alphabet.contains(c);
        !(inside(c) || (ci && (inside(c.to_ascii_lowercase()) || inside(c.to_ascii_uppercase()))))
    };
    let mut chars = pattern.chars().peekable();
    let mut depth = 0usize;
    while let Some(c) = chars.next() {
        let literal = match c {
            '\\' => match chars.next() {
                Some(e) if e.is_ascii_punctuation() => Some(e),
                _ => None,
            },
            '[' => {
                // Skip the class: a `]` first (or after `^`) is a member; escapes skip a char.
                if chars.peek() == Some(&'^') {
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    chars.next();
                }
                while let Some(k) = chars.next() {
                    match k {
                        '\\' => {
                            chars.next();
                        }
                        ']' => break,
                        _ => {}
                    }
                }
                None
            }
            '(' => {
                depth += 1;
                None
            }
            ')' => {
                depth = depth.saturating_sub(1);
                None
            }
            '.' | '^' | '$' | '*' | '+' | '?' | '{' | '}' => None,
            c => Some(c),
        };
        let optional = match chars.peek() {
            Some('?' | '*') => true,
            Some('{') => {
                let mut ahead = chars.clone();
                ahead.next();
                ahead.next() == Some('0')
            }
            _ => false,
        };
        if let Some(l) = literal {
            if depth == 0 && !optional && outside(l) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(p: &str) -> Regex {
        Regex::new(p, false).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    #[test]
    fn regex_basics() {
        assert!(re("abc").is_match("xxabcxx"));
        assert!(!re("abd").is_match("xxabcxx"));
        assert!(re("^abc").is_match("abcx"));
        assert!(!re("^abc").is_match("xabc"));
        assert!(re("abc$").is_match("xabc"));
        assert!(!re("abc$").is_match("abcx"));
        assert!(re("^$").is_match(""));
        assert!(re("").is_match("anything"));
        assert!(re("a.c").is_match("abc"));
        assert!(!re("a.c").is_match("a\nc"));
        assert!(re("ab*c").is_match("ac"));
        assert!(re("ab*c").is_match("abbbc"));
        assert!(!re("ab+c").is_match("ac"));
        assert!(re("ab?c").is_match("abc"));
        assert!(re("colou?r").is_match("color"));
        assert!(re("(foo|bar)baz").is_match("xbarbaz"));
        assert!(!re("^(foo|bar)$").is_match("foobar"));
        assert!(re("(?:ab)+$").is_match("zababab"));
        assert!(re("[a-c]x").is_match("bx"));
        assert!(!re("[^a-c]x").is_match("bx"));
        assert!(re("[^a-c]x").is_match("dx"));
        assert!(re(r"\d+\.py").is_match("f12.py"));
        assert!(re(r"\w+:\d+").is_match("model.py:10"));
        assert!(re("a{2,3}b").is_match("aab"));
        assert!(!re("^a{2,3}b").is_match("ab"));
        assert!(!re("^a{2,3}b").is_match("aaaab"));
        assert!(re("^a{2,}b").is_match("aaaaab"));
        assert!(re("^a{2}$").is_match("aa"));
        assert!(re(r"x\{").is_match("x{"));
        assert!(re("[-a]").is_match("-"));
        assert!(re("[a-]").is_match("-"));
        assert!(re(r"[\d_]+").is_match("_"));
        assert!(re("(a*)*b").is_match("aaaab"));
        assert!(!re("^(a*)*b$").is_match("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac"));
        assert!(re(".*?x").is_match("aax"));
        assert!(re("é+").is_match("café"));
        // ASCII classes and case folding (regex-lite): `\w` is [0-9A-Za-z_].
        assert!(!re(r"^\w$").is_match("é"));
        assert!(re(r"\bfoo\b").is_match("a foo b"));
        let ci = Regex::new("FORWARD", true).expect("ok");
        assert!(ci.is_match("model.forward"));
        assert!(Regex::new("[A-Z]+", true).expect("ok").is_match("abc"));
    }

    #[test]
    fn alphabet_prefilter() {
        let ab = LABEL_ALPHABET;
        let may = |p: &str, ci: bool| !required_literals_outside(p, ci, ab);
        assert!(may("b7f", false));
        assert!(may("^b[0-9a-f]+_1$", false));
        assert!(may("", false));
        assert!(may("x|b", false));
        assert!(!may("forward", false));
        assert!(!may(r"lin[e]ar\.py", false));
        // Only literals count: a class that no label char is in is not seen through.
        assert!(may("[^0-9a-fsundi_,-]", false));
        assert!(may("B7F", true));
        assert!(!may("B7F", false));
        // Optional literals and what groups hold require nothing.
        assert!(may("x?b7", false));
        assert!(may("x*b7", false));
        assert!(may("x{0,2}b7", false));
        assert!(!may("x{1,2}b7", false));
        assert!(may("(x)b7", false));
        assert!(may(r"[\]x]b", false));
        assert!(!may(r"[\]x]bz", false));
        // Through a query.
        assert!(!parse_query("/forward/").expect("ok").may_match_labels());
        assert!(parse_query(r"/b7f_\d/").expect("ok").may_match_labels());
    }

    #[test]
    fn regex_errors() {
        for bad in [
            "(", "a)", "[a", "*a", "\\", "(?=a)", "(a)\\1", "a{3,2}", "[z-a]", "x{",
        ] {
            assert!(Regex::new(bad, false).is_err(), "{bad}");
        }
        let deep = "(".repeat(1000) + &")".repeat(1000);
        assert!(Regex::new(&deep, false).is_err());
        assert!(Regex::new("(a{1000}){1000}", false).is_err());
        assert!(Regex::new("((((){1000}){1000}){1000}){1000}", false).is_err());
    }

    #[test]
    fn query_parsing() {
        assert!(matches!(parse_query("Foo"), Ok(Query::Substring(s)) if s == "foo"));
        assert!(matches!(parse_query("/a.b/"), Ok(Query::Regex(_))));
        assert!(matches!(parse_query("/a.b/i"), Ok(Query::Regex(_))));
        assert!(
            matches!(parse_query("/home/u/model.py"), Ok(Query::Substring(s)) if s == "/home/u/model.py")
        );
        assert!(matches!(parse_query("/"), Ok(Query::Substring(_))));
        let e = parse_query("/(/").expect_err("unclosed group");
        // The page gets the message as the JSON string of the error.
        assert_eq!(
            serde_json::to_value(&e).expect("json"),
            serde_json::Value::String(e.to_string())
        );
        assert!(
            e.to_string().contains("open group without closing ')'"),
            "{e}"
        );
        let q = parse_query("MiB").expect("ok");
        assert!(q.is_match("12.0mib"));
        assert!(parse_query("").expect("ok").is_match("x"));
        assert!(parse_query("ÉTÉ").expect("ok").is_match("l'été"));
    }
}
