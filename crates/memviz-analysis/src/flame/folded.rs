//! Folded stacks written as they are ordered, never built as text first.
//!
//! [`super::folded_text`] prints every stack into a `String`, keys a map by those strings and
//! then joins all lines into one more: the whole output about three times over, plus 24 bytes per
//! frame of every stack (a 15 MB file of 300 stacks × 10 k frames took 479 MB for 60 MB of
//! output). Here each distinct frame text is made once ([`Texts`]), a stack is the list of its
//! frame texts' ids (4 bytes per frame), the stacks are sorted by comparing those texts in
//! place, and each line is written straight to the output: memory is the model's size
//! (distinct frames, stack ids), whatever the output's.
//!
//! The bytes are exactly those of [`super::folded_text`] over [`super::folded`] (text), of
//! `{"frames": …, "bytes": …}` objects over [`super::folded`] (JSON), and of
//! [`crate::diff::diff_folded_text`] over [`crate::diff::live_folded`] (a diff): the same
//! order, the same merging of stacks that print alike (sums saturate, so merging in one step or
//! two gives the same value).

use std::cmp::Ordering;
use std::io::{self, Write};
use std::rc::Rc;

use memviz_snapshot::{FrameId, Snapshot, StackId};
use rustc_hash::FxHashMap;

use super::escape_frame;
use super::modes::{frame_text, stack_pieces, FrameMode, Piece};
use crate::site::{SiteCache, UserCode};

/// Distinct frame texts, each stored once, shared by the stacks of one or two snapshots.
struct Texts {
    /// `true`: texts as folded lines print them ([`escape_frame`]); `false`: as recorded.
    escaped: bool,
    mode: FrameMode,
    texts: Vec<Rc<str>>,
    index: FxHashMap<Rc<str>, u32>,
}

impl Texts {
    fn new(escaped: bool, mode: FrameMode) -> Self {
        Texts {
            escaped,
            mode,
            texts: Vec::new(),
            index: FxHashMap::default(),
        }
    }

    fn intern(&mut self, text: String) -> u32 {
        let text = if self.escaped {
            escape_frame(&text)
        } else {
            text
        };
        if let Some(&i) = self.index.get(text.as_str()) {
            return i;
        }
        let i = self.texts.len() as u32;
        let rc: Rc<str> = Rc::from(text);
        self.texts.push(Rc::clone(&rc));
        self.index.insert(rc, i);
        i
    }

    fn get(&self, i: u32) -> &str {
        self.texts.get(i as usize).map_or("", |t| t)
    }

    /// The frame texts of `stack`, root first, as [`super::stack_frames`] prints them;
    /// `frames` caches each frame's text id, `sites` classifies the frames.
    fn stack(
        &mut self,
        snap: &Snapshot,
        frames: &mut FxHashMap<FrameId, u32>,
        sites: &mut SiteCache,
        stack: StackId,
    ) -> Vec<u32> {
        let pieces = stack_pieces(snap, stack, self.mode, sites);
        let mut out = Vec::with_capacity(pieces.len());
        for p in pieces {
            let t = match p {
                Piece::Frame(id) => match frames.get(&id) {
                    Some(&t) => t,
                    None => {
                        let text = snap
                            .frame(id)
                            .map_or_else(String::new, |f| frame_text(snap, f));
                        let t = self.intern(text);
                        frames.insert(id, t);
                        t
                    }
                },
                Piece::Text(text) => self.intern(text),
            };
            out.push(t);
        }
        out
    }

    /// Order of two stacks: as their lines (`frame;frame;…`, escaped) compare as strings, or,
    /// unescaped, as lists of frames.
    fn cmp(&self, a: &[u32], b: &[u32]) -> Ordering {
        // Equal ids are equal texts: skip the common prefix without looking at the bytes.
        let i = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let (a, b) = (a.get(i..).unwrap_or(&[]), b.get(i..).unwrap_or(&[]));
        if !self.escaped {
            return a
                .iter()
                .map(|&t| self.get(t))
                .cmp(b.iter().map(|&t| self.get(t)));
        }
        // The rest of both lines, byte by byte: the first difference is within the first
        // differing frame or at the `;` after it.
        self.line_bytes(a).cmp(self.line_bytes(b))
    }

    /// The bytes of a line's stack part: the frames joined by `;`.
    fn line_bytes<'t>(&'t self, stack: &'t [u32]) -> impl Iterator<Item = u8> + 't {
        stack.iter().enumerate().flat_map(move |(j, &t)| {
            (j > 0)
                .then_some(b';')
                .into_iter()
                .chain(self.get(t).bytes())
        })
    }

    /// Writes the frames joined by `;`.
    fn write_line(&self, w: &mut dyn Write, stack: &[u32]) -> io::Result<()> {
        for (j, &t) in stack.iter().enumerate() {
            if j > 0 {
                w.write_all(b";")?;
            }
            w.write_all(self.get(t).as_bytes())?;
        }
        Ok(())
    }
}

/// A printed stack (its frames' text ids, root first) and its value on each side.
type Item = (Vec<u32>, [u64; 2]);

/// Stacks with their values (one per side), sorted, stacks that print alike merged.
fn sorted(texts: &Texts, mut items: Vec<Item>) -> Vec<Item> {
    items.sort_by(|x, y| texts.cmp(&x.0, &y.0));
    let mut out: Vec<Item> = Vec::with_capacity(items.len());
    for (stack, v) in items {
        match out.last_mut() {
            Some(last) if last.0 == stack => {
                last.1 = [
                    last.1[0].saturating_add(v[0]),
                    last.1[1].saturating_add(v[1]),
                ];
            }
            _ => out.push((stack, v)),
        }
    }
    out
}

/// `values` (per interned stack of `snap`, zeros left out) as sorted, merged printed stacks.
fn printed(
    snap: &Snapshot,
    values: &FxHashMap<StackId, u64>,
    escaped: bool,
    mode: FrameMode,
    user: &UserCode,
) -> (Texts, Vec<Item>) {
    let mut texts = Texts::new(escaped, mode);
    let mut frames = FxHashMap::default();
    let mut sites = SiteCache::new(snap, user.clone());
    let items = values
        .iter()
        .filter(|(_, &v)| v != 0)
        .map(|(&st, &v)| (texts.stack(snap, &mut frames, &mut sites, st), [v, 0]))
        .collect();
    let items = sorted(&texts, items);
    (texts, items)
}

/// The folded text of `values` ([`super::stack_values`]): exactly
/// `folded_text(&entries_by_frames(values, mode, user))`, written line by line.
pub fn write_folded_text(
    w: &mut dyn Write,
    snap: &Snapshot,
    values: &FxHashMap<StackId, u64>,
    mode: FrameMode,
    user: &UserCode,
) -> io::Result<()> {
    let (texts, items) = printed(snap, values, true, mode, user);
    for (stack, [v, _]) in &items {
        texts.write_line(w, stack)?;
        writeln!(w, " {v}")?;
    }
    Ok(())
}

/// Σ of `values`, saturating: the total of the folded stacks they print.
#[must_use]
pub fn values_total(values: &FxHashMap<StackId, u64>) -> u64 {
    values.values().fold(0u64, |a, &v| a.saturating_add(v))
}

/// The stacks of `values` as `{"frames":[…],"bytes":N}` objects separated by commas, in
/// [`super::folded`]'s order (frames unescaped, root first): the elements of a JSON array.
pub fn write_folded_json(
    w: &mut dyn Write,
    snap: &Snapshot,
    values: &FxHashMap<StackId, u64>,
    mode: FrameMode,
    user: &UserCode,
) -> io::Result<()> {
    let (texts, items) = printed(snap, values, false, mode, user);
    for (i, (stack, [v, _])) in items.iter().enumerate() {
        w.write_all(if i > 0 {
            b",{\"frames\":["
        } else {
            b"{\"frames\":["
        })?;
        for (j, &t) in stack.iter().enumerate() {
            if j > 0 {
                w.write_all(b",")?;
            }
            serde_json::to_writer(&mut *w, texts.get(t)).map_err(io::Error::from)?;
        }
        write!(w, "],\"bytes\":{v}}}")?;
    }
    Ok(())
}

/// The differential folded text of two snapshots' final live bytes (`memviz diff --folded`):
/// exactly `diff_folded_text(&live_folded(a, …), &live_folded(b, …))`, written line by line.
pub fn write_diff_folded(
    w: &mut dyn Write,
    a: &Snapshot,
    b: &Snapshot,
    device: Option<i64>,
    mode: FrameMode,
    user: &UserCode,
) -> io::Result<()> {
    let mut d = DiffFolded::new(device, mode, user.clone());
    d.add(0, a);
    d.add(1, b);
    d.write(w)
}

/// [`write_diff_folded`] one snapshot at a time (the first can be dropped before the second
/// is loaded): each side's printed stacks and live bytes are kept, not the snapshot.
pub struct DiffFolded {
    device: Option<i64>,
    user: UserCode,
    texts: Texts,
    items: Vec<Item>,
}

impl DiffFolded {
    #[must_use]
    pub fn new(device: Option<i64>, mode: FrameMode, user: UserCode) -> Self {
        DiffFolded {
            device,
            user,
            texts: Texts::new(true, mode),
            items: Vec::new(),
        }
    }

    /// Adds `snap` as side A (`side` 0) or B (1; anything else is ignored).
    pub fn add(&mut self, side: usize, snap: &Snapshot) {
        if side > 1 {
            return;
        }
        let mut frames = FxHashMap::default();
        let mut sites = SiteCache::new(snap, self.user.clone());
        for (&st, &v) in &crate::diff::live_by_stack(snap, self.device) {
            if v == 0 {
                continue;
            }
            let mut pair = [0, 0];
            if let Some(x) = pair.get_mut(side) {
                *x = v;
            }
            let stack = self.texts.stack(snap, &mut frames, &mut sites, st);
            self.items.push((stack, pair));
        }
    }

    /// Writes the lines, sorted, stacks that print alike merged.
    pub fn write(self, w: &mut dyn Write) -> io::Result<()> {
        let items = sorted(&self.texts, self.items);
        for (stack, [x, y]) in &items {
            self.texts.write_line(w, stack)?;
            writeln!(w, " {x} {y}")?;
        }
        Ok(())
    }
}
