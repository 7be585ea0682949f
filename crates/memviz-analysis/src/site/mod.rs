//! The one frame classifier and the *site* of a stack: which line of the user's code an
//! allocation belongs to. Every analysis that names a site (the legend, source lines, the live
//! table, leak suspects, the diff, the OOM report) asks [`SiteCache`]; docs/sites.md has the
//! rules with examples.
//!
//! # Frames ([`FrameKind`], [`frame_kind`])
//! * **Python** frames: a `.py` / `.pyw` file or a `<…>` pseudo-file. They are **library**
//!   code when the file is under `site-packages/` or `dist-packages/`, under the standard
//!   library (`…/lib/python3.X/…`, Windows' `…\Lib\…`), inside the torch package (`/torch/`),
//!   or generated / frozen (`<frozen …>`, `<eval_with_key>.N`, `<string>` and every other
//!   `<…>` but `<stdin>`, `<ipython-input-…>`, `<console>`, `<input>`); else **user** code
//!   (a notebook cell `/tmp/ipykernel_*/….py` too). [`UserCode`] adds files that count as the
//!   user's even in a library location.
//! * **Interpreter** frames: CPython's C frames (`_PyEval_EvalFrameDefault`, `PyObject_Call`,
//!   `slot_tp_call`, `method_vectorcall…`, `ceval.c`, `Objects/*.c`, …).
//! * **Native**: the rest (C++ / CUDA).
//!
//! # The site of a stack ([`Site`], [`site_of`]), by the first rule that applies
//! 1. **User**: the innermost user frame. Its *detail* is the library line the user's line
//!    called into: the innermost Python frame inside it that is third-party library code
//!    (not torch, not the standard library, not generated), else the innermost library
//!    Python frame inside it (`train.py:88:main` → `transformers/…/modeling_llama.py:216:forward`).
//! 2. **Library**: no user frame: the innermost library Python frame.
//! 3. **Autograd**: no Python frame at all (autograd's backward thread): the innermost C++
//!    frame that runs an autograd node ([`autograd_node`]: `MmBackward0` from
//!    `torch::autograd::generated::MmBackward0::apply(…)`), shown as `backward of mm`.
//! 4. **Native**: the innermost native frame that is not plumbing ([`is_native_plumbing`]: the
//!    allocator, the tensor factories, the dispatcher, the stack capture); else (a stack of
//!    plumbing only) the innermost frame that §7's filter keeps and that is not the capture.
//! 5. **None**: an empty stack, or one whose every frame §7's filter drops (`_start` only):
//!    `<no frames>`.

mod cache;
mod frame;
mod peak;
mod unique;
mod user;

#[cfg(test)]
mod tests;

pub use cache::{SiteCache, SiteId};
pub use frame::{
    autograd_label, autograd_node, frame_kind, is_interpreter_frame, is_library_file,
    is_native_plumbing, is_python_file, is_torch_file, library_root_end, native_label, short_path,
    FrameKind,
};
pub use peak::{
    fnv1a, is_pool_envelope, peak_sites, sites_at_peak_by_scan, stack_hash, PeakSite,
    POOL_LEGEND_HASH, POOL_LEGEND_LABEL,
};
pub use unique::{callers, unique_labels};
pub use user::UserCode;

use memviz_snapshot::{Frame, FrameId, Snapshot, StackId};
use serde::Serialize;

/// The label of the site of an empty stack.
pub const NO_FRAMES: &str = "<no frames>";

/// The `file` of an autograd site's row ([`Site::file`]); its `name` is the node.
pub const AUTOGRAD_FILE: &str = "<autograd>";

/// Which rule named a site.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum SiteKind {
    User,
    Library,
    Autograd,
    Native,
    None,
}

impl SiteKind {
    /// `user`, `library`, `autograd`, `native` or `none`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SiteKind::User => "user",
            SiteKind::Library => "library",
            SiteKind::Autograd => "autograd",
            SiteKind::Native => "native",
            SiteKind::None => "none",
        }
    }
}

/// One frame of a site (the site's own, or its detail).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, ts_rs::TS)]
pub struct SiteFrame {
    /// The frame in the snapshot it was classified in.
    #[serde(skip)]
    #[ts(skip)]
    pub frame: Option<FrameId>,
    /// Full filename as recorded.
    pub file: String,
    pub line: i64,
    /// Function (or C++ symbol) name.
    pub name: String,
    /// Short form: `short_path:line:name` ([`short_path`]: from the library root for library
    /// files, the basename for the user's).
    pub label: String,
}

impl SiteFrame {
    fn of(snap: &Snapshot, id: FrameId, f: &Frame) -> SiteFrame {
        let file = snap.str(f.filename);
        let name = snap.str(f.name);
        SiteFrame {
            frame: Some(id),
            file: file.to_string(),
            line: f.line,
            name: name.to_string(),
            label: format!("{}:{}:{}", short_path(file), f.line, name),
        }
    }

    /// `file:line:name`.
    #[must_use]
    pub fn path(&self) -> String {
        format!("{}:{}:{}", self.file, self.line, self.name)
    }
}

/// The site of a stack (module documentation).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, ts_rs::TS)]
pub struct Site {
    pub kind: SiteKind,
    /// The frame the site is named after (an autograd site: the frame running the node);
    /// `None` for [`SiteKind::None`].
    #[serde(skip)]
    #[ts(skip)]
    pub frame: Option<FrameId>,
    /// The row key: full filename ([`AUTOGRAD_FILE`] for an autograd site, [`NO_FRAMES`] for
    /// none), line (0 for those) and name (the node for an autograd site, empty for none).
    pub file: String,
    pub line: i64,
    pub name: String,
    /// Short label: `basename:line:name` (as the legend has always printed it),
    /// `backward of mm`, or [`NO_FRAMES`].
    pub label: String,
    /// The library line below a user site (rule 1), when there is one.
    pub detail: Option<SiteFrame>,
}

impl Site {
    /// The site of an empty stack.
    #[must_use]
    pub fn none() -> Site {
        Site {
            kind: SiteKind::None,
            frame: None,
            file: NO_FRAMES.to_string(),
            line: 0,
            name: String::new(),
            label: NO_FRAMES.to_string(),
            detail: None,
        }
    }

    fn of_frame(snap: &Snapshot, kind: SiteKind, id: FrameId, f: &Frame) -> Site {
        let SiteFrame {
            frame,
            file,
            line,
            name,
            ..
        } = SiteFrame::of(snap, id, f);
        let label = if kind == SiteKind::Native {
            frame::native_label(&name)
        } else {
            format!("{}:{}:{}", crate::frames::basename(&file), line, name)
        };
        Site {
            kind,
            frame,
            file,
            line,
            name,
            label,
            detail: None,
        }
    }

    /// The full form: `file:line:name` (the node for an autograd site, [`NO_FRAMES`]).
    #[must_use]
    pub fn path(&self) -> String {
        match self.kind {
            SiteKind::None => NO_FRAMES.to_string(),
            SiteKind::Autograd => self.name.clone(),
            _ => format!("{}:{}:{}", self.file, self.line, self.name),
        }
    }

    /// The label and, when there is one, the detail: `train.py:88:main →
    /// transformers/models/llama/modeling_llama.py:216:forward`.
    #[must_use]
    pub fn display(&self) -> String {
        match &self.detail {
            Some(d) => format!("{} → {}", self.label, d.label),
            None => self.label.clone(),
        }
    }
}

/// The site of `stack` under `user`, classifying its frames with `kind_of` (so a cache can
/// classify each frame once). Module documentation for the rules.
pub fn site_with(
    snap: &Snapshot,
    stack: StackId,
    mut kind_of: impl FnMut(FrameId, &Frame) -> FrameKind,
) -> Site {
    let frames: Vec<(FrameId, &Frame, FrameKind)> = snap
        .stack(stack)
        .iter()
        .filter_map(|&id| snap.frame(id).map(|f| (id, f)))
        .map(|(id, f)| (id, f, kind_of(id, f)))
        .collect();
    if frames.is_empty() {
        return Site::none();
    }
    // 1. The innermost user frame, with the library line inside it.
    if let Some(u) = frames.iter().position(|x| x.2 == FrameKind::User) {
        let Some(&(id, f, _)) = frames.get(u) else {
            return Site::none();
        };
        let mut site = Site::of_frame(snap, SiteKind::User, id, f);
        let inner = frames.get(..u).unwrap_or(&[]);
        let lib = |x: &&(FrameId, &Frame, FrameKind)| x.2 == FrameKind::Library;
        let third_party = |x: &&(FrameId, &Frame, FrameKind)| {
            let file = snap.str(x.1.filename);
            !is_torch_file(file) && !file.starts_with('<') && is_third_party(file)
        };
        site.detail = inner
            .iter()
            .filter(lib)
            .find(third_party)
            .or_else(|| inner.iter().find(lib))
            .map(|&(id, f, _)| SiteFrame::of(snap, id, f));
        return site;
    }
    // 2. The innermost library Python frame.
    if let Some(&(id, f, _)) = frames.iter().find(|x| x.2 == FrameKind::Library) {
        return Site::of_frame(snap, SiteKind::Library, id, f);
    }
    // 3. The autograd node the C++ frames run.
    if let Some((id, node)) = frames
        .iter()
        .find_map(|&(id, f, _)| autograd_node(snap.str(f.name)).map(|n| (id, n)))
    {
        return Site {
            kind: SiteKind::Autograd,
            frame: Some(id),
            file: AUTOGRAD_FILE.to_string(),
            line: 0,
            name: node.to_string(),
            label: autograd_label(node),
            detail: None,
        };
    }
    // 4. The innermost native frame that is not plumbing; else anything but the capture.
    let plumbing = |f: &Frame| is_native_plumbing(snap.str(f.filename), snap.str(f.name));
    let capture = |f: &Frame| {
        let n = snap.str(f.name);
        n.contains("unwind::unwind")
            || n.contains("CapturedTraceback")
            || n.contains("gather_with_cpp")
    };
    frames
        .iter()
        .find(|x| x.2 == FrameKind::Native && !plumbing(x.1))
        .or_else(|| {
            frames
                .iter()
                .find(|x| !capture(x.1) && crate::frames::keep_frame(snap, x.1))
        })
        .map_or_else(Site::none, |&(id, f, _)| {
            Site::of_frame(snap, SiteKind::Native, id, f)
        })
}

/// Installed third-party packages: under `site-packages/` or `dist-packages/`.
fn is_third_party(file: &str) -> bool {
    file.contains("site-packages") || file.contains("dist-packages")
}

/// The site of `stack` under `user` (no cache: [`SiteCache`] classifies each frame and stack
/// once).
#[must_use]
pub fn site_of(snap: &Snapshot, stack: StackId, user: &UserCode) -> Site {
    site_with(snap, stack, |_, f| {
        frame_kind(snap.str(f.filename), snap.str(f.name), user)
    })
}
