//! The flamegraph's frame modes ([`FrameMode`]): which frames of a stack become nodes, each
//! frame classified by the one classifier, [`crate::site`] (docs/sites.md).
//!
//! * [`FrameMode::MyCode`]: the user's frames only. Each run of other frames between two user
//!   frames, and the run below the innermost user frame, becomes ONE node labelled by the
//!   library line it reached ([`collapsed_label`]): `train.py:40:main` →
//!   `model.py:12:forward` → `[torch] nn/functional.py:1701:relu`. The run above the outermost
//!   user frame (interpreter start-up, `runpy`, `threading`) is left out: it calls the user's
//!   code and holds no bytes of its own. A stack without a user frame is shown as in the
//!   Python mode, so nothing vanishes.
//! * [`FrameMode::Python`]: the Python frames (user and library), no interpreter or native
//!   frame. A stack without a Python frame (autograd's backward thread) is one node naming
//!   its site (`backward of mm`, a C++ function): its bytes are never dropped.
//! * [`FrameMode::All`]: every frame as recorded.
//!
//! Every frame of a stack is in exactly one mode's node or left out of a path that still ends
//! at a node, and each stack keeps its value: the totals of the three modes are equal.
//!
//! The collapsed frames are not listed by the node (its name is the one line that merges
//! across stacks; which frames it stands for differs per stack): the All mode shows them.

use memviz_snapshot::{Frame, FrameId, Snapshot, StackId};

use super::{ALL_FILTERED, NO_FRAMES};
use crate::site::{
    frame_kind, is_native_plumbing, is_torch_file, short_path, FrameKind, SiteCache, SiteKind,
    UserCode,
};

/// Which frames of a stack the flamegraph shows (module documentation).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum FrameMode {
    /// The user's frames, library calls between them collapsed into one node.
    MyCode,
    /// Python frames only (the default when there is no file to look at: see
    /// [`FrameMode::default_for`]).
    #[default]
    Python,
    /// Every frame.
    All,
}

impl FrameMode {
    /// `my_code`, `python` or `all` (the wire and JSON names).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FrameMode::MyCode => "my_code",
            FrameMode::Python => "python",
            FrameMode::All => "all",
        }
    }

    /// `my-code` / `my_code`, `python`, `all` (the CLI's and the wire's spellings).
    #[must_use]
    pub fn parse(text: &str) -> Option<FrameMode> {
        match text.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "my_code" | "mycode" => Some(FrameMode::MyCode),
            "python" => Some(FrameMode::Python),
            "all" => Some(FrameMode::All),
            _ => None,
        }
    }

    /// The default for a file: [`FrameMode::MyCode`] when it has a user frame under `user`
    /// ([`has_user_frames`]), else [`FrameMode::Python`].
    #[must_use]
    pub fn default_for(snap: &Snapshot, user: &UserCode) -> FrameMode {
        if has_user_frames(snap, user) {
            FrameMode::MyCode
        } else {
            FrameMode::Python
        }
    }
}

/// Whether any frame of the file is the user's under `user` (stops at the first).
#[must_use]
pub fn has_user_frames(snap: &Snapshot, user: &UserCode) -> bool {
    snap.frames
        .iter()
        .any(|f| frame_kind(snap.str(f.filename), snap.str(f.name), user) == FrameKind::User)
}

/// One node of a printed stack: a frame of the snapshot (printed `filename:line:name`), or a
/// text of its own (a collapsed run, a site, [`NO_FRAMES`], [`ALL_FILTERED`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    Frame(FrameId),
    Text(String),
}

/// A frame as folded stacks print it: `filename:line:name`.
pub(crate) fn frame_text(snap: &Snapshot, f: &Frame) -> String {
    format!("{}:{}:{}", snap.str(f.filename), f.line, snap.str(f.name))
}

/// The nodes of `stack` in `mode`, root first; `sites` classifies (its [`UserCode`]).
pub(crate) fn stack_pieces(
    snap: &Snapshot,
    stack: StackId,
    mode: FrameMode,
    sites: &mut SiteCache,
) -> Vec<Piece> {
    let ids = snap.stack(stack);
    if ids.is_empty() {
        return vec![Piece::Text(NO_FRAMES.to_string())];
    }
    // Innermost first, as recorded; frames missing from the table are skipped.
    let frames: Vec<(FrameId, &Frame, FrameKind)> = ids
        .iter()
        .filter_map(|&id| snap.frame(id).map(|f| (id, f)))
        .map(|(id, f)| (id, f, sites.frame_kind(snap, id)))
        .collect();
    let out = match mode {
        FrameMode::All => frames.iter().rev().map(|x| Piece::Frame(x.0)).collect(),
        FrameMode::Python => python_pieces(&frames),
        FrameMode::MyCode => {
            let mine = my_code_pieces(snap, &frames);
            if mine.is_empty() {
                python_pieces(&frames)
            } else {
                mine
            }
        }
    };
    if !out.is_empty() {
        return out;
    }
    if mode == FrameMode::All {
        return vec![Piece::Text(ALL_FILTERED.to_string())];
    }
    // No Python frame: the site names the stack (an autograd node, a C++ function).
    let site = sites.site(snap, stack);
    let text = if site.kind == SiteKind::None {
        ALL_FILTERED.to_string()
    } else {
        site.label.clone()
    };
    vec![Piece::Text(text)]
}

fn python_pieces(frames: &[(FrameId, &Frame, FrameKind)]) -> Vec<Piece> {
    frames
        .iter()
        .rev()
        .filter(|x| x.2.is_python())
        .map(|x| Piece::Frame(x.0))
        .collect()
}

/// The user frames, root first, each followed by the collapsed run below it; empty when the
/// stack has no user frame.
fn my_code_pieces(snap: &Snapshot, frames: &[(FrameId, &Frame, FrameKind)]) -> Vec<Piece> {
    let users: Vec<usize> = frames
        .iter()
        .enumerate()
        .filter(|(_, x)| x.2 == FrameKind::User)
        .map(|(i, _)| i)
        .collect();
    let mut out = Vec::with_capacity(users.len() * 2);
    // From the outermost user frame inwards; the run below user frame `u` is the frames
    // between it and the next user frame inside it (or the innermost frame).
    for (k, &u) in users.iter().enumerate().rev() {
        let Some(x) = frames.get(u) else {
            continue;
        };
        out.push(Piece::Frame(x.0));
        let inner = users.get(k.wrapping_sub(1)).map_or(0, |p| p + 1);
        if let Some(label) = frames
            .get(inner..u)
            .and_then(|run| collapsed_label(snap, run))
        {
            out.push(Piece::Text(label));
        }
    }
    out
}

/// The one node a run of non-user frames (innermost first) collapses into, or `None` when it
/// holds only interpreter frames (Python calling Python: nothing to name).
///
/// * With library Python frames: `[package] path:line:name` of the innermost third-party
///   frame (site-packages / dist-packages, not torch), else of the innermost library frame:
///   the same line the site's detail names (docs/sites.md §2), so the node reads as the
///   legend's and Source lines' detail. The label is the library line the user's line
///   reached, not the run's frames, so the many stacks through one call (different
///   dispatcher and interpreter frames, different callers inside the library) merge into
///   one node: `[torch] nn/functional.py:1701:relu`, `[torch] nn/modules/module.py:1747:_call_impl`.
///   The package is the first directory under site-packages (`transformers`), `torch`, or
///   `python` for the standard library and frozen or generated code.
/// * Else, with native frames: `[native] symbol` of the innermost native frame that is not
///   plumbing (the allocator, factories, dispatcher: [`is_native_plumbing`]), without its
///   parameter list; `[native]` when there is none.
pub(crate) fn collapsed_label(
    snap: &Snapshot,
    run: &[(FrameId, &Frame, FrameKind)],
) -> Option<String> {
    let lib = |x: &&(FrameId, &Frame, FrameKind)| x.2 == FrameKind::Library;
    let third_party = |x: &&(FrameId, &Frame, FrameKind)| {
        let file = snap.str(x.1.filename);
        !is_torch_file(file) && (file.contains("site-packages") || file.contains("dist-packages"))
    };
    if let Some(x) = run
        .iter()
        .filter(lib)
        .find(third_party)
        .or_else(|| run.iter().find(lib))
    {
        let file = snap.str(x.1.filename);
        let (pkg, rest) = package_of(file);
        return Some(format!(
            "[{pkg}] {rest}:{}:{}",
            x.1.line,
            snap.str(x.1.name)
        ));
    }
    let mut natives = run.iter().filter(|x| x.2 == FrameKind::Native).peekable();
    natives.peek()?;
    Some(
        natives
            .find(|x| !is_native_plumbing(snap.str(x.1.filename), snap.str(x.1.name)))
            .map_or_else(
                || "[native]".to_string(),
                |x| format!("[native] {}", crate::site::native_label(snap.str(x.1.name))),
            ),
    )
}

/// A library file's package and its path inside it: (`torch`, `nn/functional.py`),
/// (`transformers`, `models/llama/modeling_llama.py`), (`python`, `threading.py`).
fn package_of(file: &str) -> (&str, &str) {
    let short = short_path(file);
    if is_torch_file(file) {
        let rest = short
            .strip_prefix("torch/")
            .or_else(|| short.strip_prefix("torch\\"))
            .unwrap_or(short);
        return ("torch", rest);
    }
    if file.contains("site-packages") || file.contains("dist-packages") {
        if let Some((pkg, rest)) = short.split_once(['/', '\\']) {
            return (pkg, rest);
        }
        let pkg = short.strip_suffix(".py").unwrap_or(short);
        return (pkg, short);
    }
    ("python", short)
}

/// The frames of a stack in `mode`, root first, as [`super::folded`] prints them.
pub fn stack_frames(
    snap: &Snapshot,
    stack: StackId,
    mode: FrameMode,
    sites: &mut SiteCache,
) -> Vec<String> {
    stack_pieces(snap, stack, mode, sites)
        .into_iter()
        .map(|p| match p {
            Piece::Frame(id) => snap
                .frame(id)
                .map_or_else(String::new, |f| frame_text(snap, f)),
            Piece::Text(t) => t,
        })
        .collect()
}

/// Whether a node's name is a collapsed run of the [`FrameMode::MyCode`] mode
/// (`[torch] nn/functional.py:1701:relu`, `[native] at::native::mm`).
#[must_use]
pub fn is_collapsed(name: &str) -> bool {
    name.strip_prefix('[')
        .and_then(|r| r.split_once(']'))
        .is_some_and(|(pkg, rest)| {
            !pkg.is_empty()
                && !pkg.contains(['/', '\\'])
                && (rest.is_empty() || rest.starts_with(' '))
        })
}

#[cfg(test)]
#[path = "modes_tests.rs"]
mod tests;
