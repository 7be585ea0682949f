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
//!   substring (`/home/u/model.py` searches that path). Supported (the usual meaning, a safe
//!   subset of JavaScript / Rust `regex` syntax):
//!   literals; `.` (any character but `\n`); `^` `$` (start / end of the text); classes
//!   `[abc]`, `[a-z]`, `[^…]`; escapes `\d \D \w \W \s \S \t \n \r` and `\` before any
//!   punctuation; groups `( … )` and `(?: … )`; alternation `|`; quantifiers `* + ? {n} {n,}
//!   {n,m}` (a trailing `?`, lazy, is accepted: it does not change whether a text matches).
//!   Not supported (an error, never a silent literal): back-references, look-around, `\b`,
//!   other letter escapes, flags other than `i`. Evaluation is a Pike VM (Thompson NFA
//!   simulation): linear in the text for a given pattern, no backtracking, so no input can make
//!   it slow; patterns are limited to [`MAX_PROGRAM`] instructions and [`MAX_NESTING`] nested
//!   groups.

use crate::format::size_short;
use crate::frames::{element_stack, frame_text};
use crate::lines::{element_addr_stream, write_element_label};
use crate::timeline::{Origin, Timeline};
use crate::tooltip;
use memviz_snapshot::{Snapshot, StackId, StrId, NO_STR};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Largest compiled pattern (instructions), e.g. after expanding `{n,m}`.
pub const MAX_PROGRAM: usize = 20_000;
/// Deepest group nesting.
pub const MAX_NESTING: usize = 100;
/// Largest count in `{n,m}`.
pub const MAX_REPEAT: u32 = 1000;

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
            Query::Regex(re) => re.may_match_over(LABEL_ALPHABET),
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

    /// [`Query::is_match`] with reused scratch memory.
    fn is_match_in(&self, text: &str, vm: &mut Vm) -> bool {
        match self {
            Query::Substring(needle) => contains_ci(text, needle),
            Query::Regex(re) => re.run(text, vm),
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
pub fn parse_query(s: &str) -> Result<Query, String> {
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
    vm: Vm,
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
            .is_some_and(|f| self.q.is_match_in(&frame_text(self.snap, f), &mut self.vm));
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
        let h = self.q.is_match_in(self.snap.str(id), &mut self.vm);
        self.strs.insert(id, h);
        h
    }

    fn size(&mut self, bytes: u64) -> bool {
        if let Some(&h) = self.sizes.get(&bytes) {
            return h;
        }
        let h = self.q.is_match_in(&bytes.to_string(), &mut self.vm)
            || self.q.is_match_in(&size_short(bytes), &mut self.vm);
        self.sizes.insert(bytes, h);
        h
    }
}

/// The elements of `timeline` (built for `device`) matching `q` (module documentation).
pub fn search(snap: &Snapshot, device: i64, timeline: &Timeline, q: &Query) -> SearchResult {
    let mut m = Matcher {
        snap,
        q,
        vm: Vm::new(match q {
            Query::Regex(re) => re.prog.len(),
            Query::Substring(_) => 0,
        }),
        frames: vec![UNKNOWN; snap.frames.len()],
        stacks: vec![UNKNOWN; snap.stacks.len()],
        other_stacks: FxHashMap::default(),
        strs: FxHashMap::default(),
        sizes: FxHashMap::default(),
    };
    // Labels are formatted per element, so skip them when no label can match.
    let labels = q.may_match_labels();
    let versions = labels.then(|| tooltip::versions(snap, device));
    let streams = (labels && !timeline.pools.is_empty()).then(|| tooltip::stream_ordinals(snap));
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
                q.is_match_in(&label, &mut m.vm)
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

// ---------------------------------------------------------------------------------------------
// A small regular-expression engine (Pike VM).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClassItem {
    Range(char, char),
    Digit(bool),
    Word(bool),
    Space(bool),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Class {
    items: Vec<ClassItem>,
    negated: bool,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl ClassItem {
    fn matches(self, c: char) -> bool {
        match self {
            ClassItem::Range(a, b) => a <= c && c <= b,
            ClassItem::Digit(neg) => c.is_ascii_digit() != neg,
            ClassItem::Word(neg) => is_word(c) != neg,
            ClassItem::Space(neg) => c.is_whitespace() != neg,
        }
    }
}

impl Class {
    fn matches(&self, c: char, ci: bool) -> bool {
        let raw = |c: char| self.items.iter().any(|it| it.matches(c));
        let hit = raw(c) || (ci && (raw(lower(c)) || raw(upper(c))));
        hit != self.negated
    }
}

fn lower(c: char) -> char {
    let mut l = c.to_lowercase();
    match (l.next(), l.next()) {
        (Some(x), None) => x,
        _ => c,
    }
}

fn upper(c: char) -> char {
    let mut u = c.to_uppercase();
    match (u.next(), u.next()) {
        (Some(x), None) => x,
        _ => c,
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Empty,
    Char(char),
    Any,
    Class(Class),
    Start,
    End,
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

struct Parser<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    depth: usize,
}

impl Parser<'_> {
    fn alt(&mut self) -> Result<Node, String> {
        let mut branches = vec![self.concat()?];
        while self.chars.peek() == Some(&'|') {
            self.chars.next();
            branches.push(self.concat()?);
        }
        Ok(if branches.len() == 1 {
            branches.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alt(branches)
        })
    }

    fn concat(&mut self) -> Result<Node, String> {
        let mut items = Vec::new();
        while let Some(&c) = self.chars.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            items.push(self.quantifiers(atom)?);
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().unwrap_or(Node::Empty),
            _ => Node::Concat(items),
        })
    }

    fn number(&mut self) -> Option<u32> {
        let mut n: Option<u32> = None;
        while let Some(d) = self.chars.peek().and_then(|c| c.to_digit(10)) {
            self.chars.next();
            n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d));
        }
        n
    }

    /// `{n}`, `{n,}`, `{n,m}` after the `{`; `None` (nothing consumed beyond a clone) when the
    /// braces are not a quantifier, in which case `{` is a literal.
    fn braces(&mut self) -> Result<Option<(u32, Option<u32>)>, String> {
        let saved = self.chars.clone();
        self.chars.next(); // '{'
        let Some(min) = self.number() else {
            self.chars = saved;
            return Ok(None);
        };
        let max = match self.chars.next() {
            Some('}') => Some(min),
            Some(',') => {
                let m = self.number();
                if self.chars.next() != Some('}') {
                    self.chars = saved;
                    return Ok(None);
                }
                m
            }
            _ => {
                self.chars = saved;
                return Ok(None);
            }
        };
        if min > MAX_REPEAT || max.is_some_and(|m| m > MAX_REPEAT) {
            return Err(format!("repetition count above {MAX_REPEAT}"));
        }
        if max.is_some_and(|m| m < min) {
            return Err(format!("bad repetition {{{min},{}}}", max.unwrap_or(0)));
        }
        Ok(Some((min, max)))
    }

    fn quantifiers(&mut self, mut atom: Node) -> Result<Node, String> {
        let mut quantified = false;
        loop {
            let (min, max) = match self.chars.peek() {
                Some('*') => {
                    self.chars.next();
                    (0, None)
                }
                Some('+') => {
                    self.chars.next();
                    (1, None)
                }
                Some('?') => {
                    self.chars.next();
                    (0, Some(1))
                }
                Some('{') => match self.braces()? {
                    Some(q) => q,
                    None => return Ok(atom),
                },
                _ => return Ok(atom),
            };
            if matches!(atom, Node::Start | Node::End | Node::Empty) {
                return Err("nothing to repeat".to_string());
            }
            if quantified {
                // `a**`, `a+*`: rejected by JavaScript; `(a*)*` is fine.
                return Err("nothing to repeat (a quantifier after a quantifier)".to_string());
            }
            quantified = true;
            if self.chars.peek() == Some(&'?') {
                self.chars.next(); // lazy: same match / no-match answer
            }
            atom = Node::Repeat {
                node: Box::new(atom),
                min,
                max,
            };
        }
    }

    fn escape(&mut self, in_class: bool) -> Result<ClassOrChar, String> {
        let Some(c) = self.chars.next() else {
            return Err("pattern ends with \\".to_string());
        };
        Ok(match c {
            'd' => ClassOrChar::Item(ClassItem::Digit(false)),
            'D' => ClassOrChar::Item(ClassItem::Digit(true)),
            'w' => ClassOrChar::Item(ClassItem::Word(false)),
            'W' => ClassOrChar::Item(ClassItem::Word(true)),
            's' => ClassOrChar::Item(ClassItem::Space(false)),
            'S' => ClassOrChar::Item(ClassItem::Space(true)),
            'n' => ClassOrChar::Char('\n'),
            't' => ClassOrChar::Char('\t'),
            'r' => ClassOrChar::Char('\r'),
            'f' => ClassOrChar::Char('\u{c}'),
            'v' => ClassOrChar::Char('\u{b}'),
            '0' if in_class || !self.chars.peek().is_some_and(char::is_ascii_digit) => {
                ClassOrChar::Char('\0')
            }
            c if c.is_alphanumeric() => return Err(format!("unsupported escape \\{c}")),
            c => ClassOrChar::Char(c),
        })
    }

    fn class(&mut self) -> Result<Node, String> {
        // after '['
        let mut negated = false;
        if self.chars.peek() == Some(&'^') {
            self.chars.next();
            negated = true;
        }
        let mut items = Vec::new();
        let mut first = true;
        loop {
            let Some(c) = self.chars.next() else {
                return Err("unclosed [".to_string());
            };
            if c == ']' && !first {
                break;
            }
            first = false;
            let lo = match c {
                '\\' => self.escape(true)?,
                c => ClassOrChar::Char(c),
            };
            let ClassOrChar::Char(lo) = lo else {
                if let ClassOrChar::Item(it) = lo {
                    items.push(it);
                }
                continue;
            };
            // A range `lo-hi` unless `-` is last (`[a-]`).
            let mut ahead = self.chars.clone();
            if ahead.next() == Some('-') && ahead.peek().is_some_and(|&n| n != ']') {
                self.chars.next(); // '-'
                let hi = match self.chars.next() {
                    Some('\\') => self.escape(true)?,
                    Some(h) => ClassOrChar::Char(h),
                    None => return Err("unclosed [".to_string()),
                };
                let ClassOrChar::Char(hi) = hi else {
                    return Err("bad class range".to_string());
                };
                if hi < lo {
                    return Err(format!("bad class range {lo}-{hi}"));
                }
                items.push(ClassItem::Range(lo, hi));
            } else {
                items.push(ClassItem::Range(lo, lo));
            }
        }
        Ok(Node::Class(Class { items, negated }))
    }

    fn atom(&mut self) -> Result<Node, String> {
        let Some(c) = self.chars.next() else {
            return Ok(Node::Empty);
        };
        Ok(match c {
            '(' => {
                self.depth += 1;
                if self.depth > MAX_NESTING {
                    return Err(format!("groups nested deeper than {MAX_NESTING}"));
                }
                if self.chars.peek() == Some(&'?') {
                    self.chars.next();
                    if self.chars.next() != Some(':') {
                        return Err("unsupported group (only ( … ) and (?: … ))".to_string());
                    }
                }
                let inner = self.alt()?;
                if self.chars.next() != Some(')') {
                    return Err("unclosed (".to_string());
                }
                self.depth -= 1;
                inner
            }
            ')' => return Err("unmatched )".to_string()),
            '[' => self.class()?,
            '.' => Node::Any,
            '^' => Node::Start,
            '$' => Node::End,
            '*' | '+' | '?' => return Err("nothing to repeat".to_string()),
            '\\' => match self.escape(false)? {
                ClassOrChar::Char(c) => Node::Char(c),
                ClassOrChar::Item(it) => Node::Class(Class {
                    items: vec![it],
                    negated: false,
                }),
            },
            c => Node::Char(c),
        })
    }
}

enum ClassOrChar {
    Char(char),
    Item(ClassItem),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Inst {
    Char(char),
    Any,
    Class(u32),
    Split(u32, u32),
    Jmp(u32),
    Start,
    End,
    Match,
}

/// A compiled regular expression (module documentation for the syntax).
#[derive(Clone, Debug)]
pub struct Regex {
    source: String,
    ci: bool,
    prog: Vec<Inst>,
    classes: Vec<Class>,
}

struct Compiler {
    prog: Vec<Inst>,
    classes: Vec<Class>,
    /// Nodes visited: bounds the work of repeating empty groups (`((){1000}){1000}`).
    work: usize,
}

impl Compiler {
    fn pc(&self) -> u32 {
        self.prog.len() as u32
    }

    fn emit(&mut self, i: Inst) -> Result<usize, String> {
        if self.prog.len() >= MAX_PROGRAM {
            return Err(format!(
                "pattern too large (more than {MAX_PROGRAM} instructions)"
            ));
        }
        self.prog.push(i);
        Ok(self.prog.len() - 1)
    }

    fn patch(&mut self, at: usize, i: Inst) {
        if let Some(slot) = self.prog.get_mut(at) {
            *slot = i;
        }
    }

    fn node(&mut self, n: &Node) -> Result<(), String> {
        self.work += 1;
        if self.work > 50 * MAX_PROGRAM {
            return Err("pattern too large".to_string());
        }
        match n {
            Node::Empty => {}
            Node::Char(c) => {
                self.emit(Inst::Char(*c))?;
            }
            Node::Any => {
                self.emit(Inst::Any)?;
            }
            Node::Start => {
                self.emit(Inst::Start)?;
            }
            Node::End => {
                self.emit(Inst::End)?;
            }
            Node::Class(c) => {
                let i = self.classes.len() as u32;
                self.classes.push(c.clone());
                self.emit(Inst::Class(i))?;
            }
            Node::Concat(v) => {
                for x in v {
                    self.node(x)?;
                }
            }
            Node::Alt(v) => {
                let mut jumps = Vec::new();
                for (k, x) in v.iter().enumerate() {
                    if k + 1 < v.len() {
                        let split = self.emit(Inst::Split(0, 0))?;
                        self.node(x)?;
                        jumps.push(self.emit(Inst::Jmp(0))?);
                        let next = self.pc();
                        self.patch(split, Inst::Split(split as u32 + 1, next));
                    } else {
                        self.node(x)?;
                    }
                }
                let end = self.pc();
                for j in jumps {
                    self.patch(j, Inst::Jmp(end));
                }
            }
            Node::Repeat { node, min, max } => {
                for _ in 0..*min {
                    self.node(node)?;
                }
                match max {
                    None => {
                        // L: split(L+1, end); node; jmp L; end:
                        let split = self.emit(Inst::Split(0, 0))?;
                        self.node(node)?;
                        self.emit(Inst::Jmp(split as u32))?;
                        let end = self.pc();
                        self.patch(split, Inst::Split(split as u32 + 1, end));
                    }
                    Some(max) => {
                        let mut splits = Vec::new();
                        for _ in *min..*max {
                            splits.push(self.emit(Inst::Split(0, 0))?);
                            self.node(node)?;
                        }
                        let end = self.pc();
                        for s in splits {
                            self.patch(s, Inst::Split(s as u32 + 1, end));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Scratch of the Pike VM: a program counter is added to a step's thread list once, tracked by
/// a generation stamp per instruction.
struct Vm {
    marks: Vec<u32>,
    gen: u32,
    stack: Vec<u32>,
    clist: Vec<u32>,
    nlist: Vec<u32>,
}

impl Vm {
    fn new(n: usize) -> Vm {
        Vm {
            marks: vec![0; n],
            gen: 1,
            stack: Vec::new(),
            clist: Vec::with_capacity(n),
            nlist: Vec::with_capacity(n),
        }
    }

    fn next_gen(&mut self) {
        self.gen = self.gen.wrapping_add(1);
        if self.gen == 0 {
            self.marks.fill(0);
            self.gen = 1;
        }
    }
}

impl Regex {
    /// Compiles `pattern`; `case_insensitive` is the `i` flag.
    pub fn new(pattern: &str, case_insensitive: bool) -> Result<Regex, String> {
        let mut p = Parser {
            chars: pattern.chars().peekable(),
            depth: 0,
        };
        let ast = p.alt()?;
        if p.chars.next().is_some() {
            return Err("unmatched )".to_string());
        }
        let mut c = Compiler {
            prog: Vec::new(),
            classes: Vec::new(),
            work: 0,
        };
        c.node(&ast)?;
        c.emit(Inst::Match)?;
        Ok(Regex {
            source: pattern.to_string(),
            ci: case_insensitive,
            prog: c.prog,
            classes: c.classes,
        })
    }

    /// The pattern as written (without slashes and flags).
    pub fn as_str(&self) -> &str {
        &self.source
    }

    fn consumes(&self, inst: Inst, c: char) -> bool {
        match inst {
            Inst::Char(x) => x == c || (self.ci && lower(x) == lower(c)),
            Inst::Any => c != '\n',
            Inst::Class(i) => self
                .classes
                .get(i as usize)
                .is_some_and(|k| k.matches(c, self.ci)),
            _ => false,
        }
    }

    /// Adds `pc` and everything reachable from it without consuming a character to `list`.
    /// Returns true when `Match` is reachable.
    fn add(&self, list: &mut Vec<u32>, vm: &mut Vm, pc: u32, at_start: bool, at_end: bool) -> bool {
        let gen = vm.gen;
        let stack = &mut vm.stack;
        stack.clear();
        stack.push(pc);
        while let Some(pc) = stack.pop() {
            let Some(mark) = vm.marks.get_mut(pc as usize) else {
                continue;
            };
            if *mark == gen {
                continue;
            }
            *mark = gen;
            match self.prog.get(pc as usize).copied() {
                Some(Inst::Match) => return true,
                Some(Inst::Jmp(x)) => stack.push(x),
                Some(Inst::Split(a, b)) => {
                    stack.push(b);
                    stack.push(a);
                }
                Some(Inst::Start) if at_start => stack.push(pc + 1),
                Some(Inst::End) if at_end => stack.push(pc + 1),
                Some(Inst::Start | Inst::End) | None => {}
                Some(_) => list.push(pc),
            }
        }
        false
    }

    /// False when no text made only of `alphabet`'s characters can match: `Match` is not
    /// reachable when every character-consuming step must take a character of `alphabet`
    /// (anchors are taken as always true, so the answer errs towards true).
    pub(crate) fn may_match_over(&self, alphabet: &str) -> bool {
        let mut seen = vec![false; self.prog.len()];
        let mut stack = vec![0u32];
        while let Some(pc) = stack.pop() {
            let Some(slot) = seen.get_mut(pc as usize) else {
                continue;
            };
            if *slot {
                continue;
            }
            *slot = true;
            match self.prog.get(pc as usize).copied() {
                Some(Inst::Match) => return true,
                Some(Inst::Jmp(x)) => stack.push(x),
                Some(Inst::Split(a, b)) => {
                    stack.push(a);
                    stack.push(b);
                }
                Some(Inst::Start | Inst::End) => stack.push(pc + 1),
                Some(inst) if alphabet.chars().any(|c| self.consumes(inst, c)) => {
                    stack.push(pc + 1);
                }
                Some(_) | None => {}
            }
        }
        false
    }

    /// Is there a match anywhere in `text`? O(len(text) × program) time, O(program) memory.
    pub fn is_match(&self, text: &str) -> bool {
        self.run(text, &mut Vm::new(self.prog.len()))
    }

    fn run(&self, text: &str, vm: &mut Vm) -> bool {
        if vm.marks.len() < self.prog.len() {
            *vm = Vm::new(self.prog.len());
        }
        // `^…`: no thread can start after position 0.
        let anchored = self.prog.first() == Some(&Inst::Start);
        let mut clist = std::mem::take(&mut vm.clist);
        let mut nlist = std::mem::take(&mut vm.nlist);
        clist.clear();
        vm.next_gen();
        let mut it = text.chars().peekable();
        let mut at_start = true;
        let found = loop {
            let at_end = it.peek().is_none();
            // Unanchored: a new thread starts at every position.
            if self.add(&mut clist, vm, 0, at_start, at_end) {
                break true;
            }
            if anchored && !at_start && clist.is_empty() {
                break false;
            }
            let Some(c) = it.next() else {
                break false;
            };
            let next_end = it.peek().is_none();
            vm.next_gen();
            nlist.clear();
            let mut hit = false;
            for &pc in &clist {
                let Some(&inst) = self.prog.get(pc as usize) else {
                    continue;
                };
                if self.consumes(inst, c) && self.add(&mut nlist, vm, pc + 1, false, next_end) {
                    hit = true;
                    break;
                }
            }
            if hit {
                break true;
            }
            std::mem::swap(&mut clist, &mut nlist);
            at_start = false;
        };
        vm.clist = clist;
        vm.nlist = nlist;
        found
    }
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
        assert!(re("x{").is_match("x{"));
        assert!(re("[-a]").is_match("-"));
        assert!(re("[a-]").is_match("-"));
        assert!(re(r"[\d_]+").is_match("_"));
        assert!(re("(a*)*b").is_match("aaaab"));
        assert!(!re("^(a*)*b$").is_match("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac"));
        assert!(re(".*?x").is_match("aax"));
        assert!(re("é+").is_match("café"));
        let ci = Regex::new("FORWARD", true).expect("ok");
        assert!(ci.is_match("model.forward"));
        assert!(Regex::new("[A-Z]+", true).expect("ok").is_match("abc"));
    }

    #[test]
    fn alphabet_prefilter() {
        let ab = LABEL_ALPHABET;
        assert!(re("b7f").may_match_over(ab));
        assert!(re("^b[0-9a-f]+_1$").may_match_over(ab));
        assert!(re("").may_match_over(ab));
        assert!(re("x|b").may_match_over(ab));
        assert!(!re("forward").may_match_over(ab));
        assert!(!re(r"lin[e]ar\.py").may_match_over(ab));
        assert!(!re("[^0-9a-fsundi_,-]").may_match_over(ab));
        assert!(Regex::new("B7F", true).expect("ok").may_match_over(ab));
        assert!(!re("B7F").may_match_over(ab));
    }

    #[test]
    fn regex_errors() {
        for bad in [
            "(", "a)", "[a", "*a", "a**", "\\b", "\\", "(?=a)", "a{3,2}", "a{5000}", "[z-a]",
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
        assert!(parse_query("/(/").is_err());
        let q = parse_query("MiB").expect("ok");
        assert!(q.is_match("12.0mib"));
        assert!(parse_query("").expect("ok").is_match("x"));
        assert!(parse_query("ÉTÉ").expect("ok").is_match("l'été"));
    }
}
