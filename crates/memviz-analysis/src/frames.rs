//! Stack frames as memory_viz prints them (SEMANTICS.md §7 "Frames"): the name/filename drop
//! lists, `filename:line:name` lines with FX annotations, repeat elision, and the explanation
//! shown for an empty stack. Also which stack belongs to a timeline element; the site of a stack
//! (legend labels) is [`crate::site`]'s, which [`site_label`] and [`innermost_user_frame`] ask.

use crate::timeline::{Element, Origin};
use memviz_snapshot::{Frame, FrameId, Snapshot, StackId, NO_STR};

/// Frames whose *name* contains one of these are dropped.
pub const OMIT_NAMES: [&str; 8] = [
    "unwind::unwind",
    "CapturedTraceback::gather",
    "gather_with_cpp",
    "_start",
    "__libc_start_main",
    "PyEval_",
    "PyObject_",
    "PyFunction_",
];

/// Frames whose *filename* contains one of these are dropped.
pub const OMIT_FILENAMES: [&str; 10] = [
    "core/boxing",
    "/Register",
    "/Redispatch",
    "pythonrun.c",
    "Modules/main.c",
    "Objects/call.c",
    "Objects/methodobject.c",
    "pycore_ceval.h",
    "ceval.c",
    "cpython/abstract.h",
];

/// What memory_viz (2026) prints for a block or event with no frames, one line each.
pub const NO_FRAMES_EXPLANATION: [&str; 6] = [
    "This block has no frames. Potential causes:",
    "1) This block was allocated before _record_memory_history was enabled.",
    "2) The context or stacks passed to _record_memory_history does not include this block. Consider changing context to 'state', 'alloc', or 'all', or changing stacks to 'all'.",
    "3) This event occurred during backward, which has no python frames, and memory history did not include C++ frames. Use stacks='all' to record both C++ and python frames.",
    "4) This block was reconstructed from the allocator's segment snapshot (not from a trace event). The snapshot records which blocks exist at the moment _snapshot() is called, but does not carry stack frames. This typically happens for blocks that were allocated before tracing started and never freed, or for inactive blocks in private memory pools.",
    "5) The original alloc event was evicted from the trace ring buffer (older entries are overwritten when the buffer is full). Increase the max_entries argument to _record_memory_history to retain more events.",
];

/// memory_viz's `frameFilter`: false for interpreter and dispatcher noise.
pub fn keep_frame(snap: &Snapshot, f: &Frame) -> bool {
    let name = snap.str(f.name);
    let file = snap.str(f.filename);
    !OMIT_NAMES.iter().any(|o| name.contains(o)) && !OMIT_FILENAMES.iter().any(|o| file.contains(o))
}

fn non_empty(snap: &Snapshot, id: memviz_snapshot::StrId) -> Option<&str> {
    (id != NO_STR)
        .then(|| snap.str(id))
        .filter(|s| !s.is_empty())
}

/// One frame as memory_viz prints it: `filename:line:name`, then when present an indented
/// `>> FX: node=…, op=…, target=…` line and the `>> Original Model Code:` block. Lines are
/// separated by `\n`.
pub fn frame_text(snap: &Snapshot, f: &Frame) -> String {
    let mut s = format!("{}:{}:{}", snap.str(f.filename), f.line, snap.str(f.name));
    let node = non_empty(snap, f.fx_node_name);
    let op = non_empty(snap, f.fx_node_op);
    let target = non_empty(snap, f.fx_node_target);
    if node.is_some() || op.is_some() || target.is_some() {
        let parts: Vec<String> = [("node", node), ("op", op), ("target", target)]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
            .collect();
        s.push_str("\n    >> FX: ");
        s.push_str(&parts.join(", "));
    }
    if let Some(orig) = non_empty(snap, f.fx_original_trace) {
        s.push_str("\n    >> Original Model Code:");
        for line in orig.trim().split('\n') {
            s.push_str("\n       ");
            s.push_str(line);
        }
    }
    s
}

/// memory_viz's `elideRepeats`: a run of k > 2 equal entries becomes the entry and
/// `<repeats k−1 times>`; runs of 1 or 2 stay.
pub fn elide_repeats(items: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(items.len());
    let mut it = items.into_iter().peekable();
    while let Some(f) = it.next() {
        let mut run = 1usize;
        while it.peek() == Some(&f) {
            it.next();
            run += 1;
        }
        match run {
            1 => out.push(f),
            2 => {
                out.push(f.clone());
                out.push(f);
            }
            _ => {
                out.push(f);
                out.push(format!("<repeats {} times>", run - 1));
            }
        }
    }
    out
}

/// The display lines of a stack, innermost frame first: frames dropped by the §7 lists when
/// `filter` is set (memory_viz always filters), formatted by [`frame_text`], repeats elided
/// (always), then split into lines (a frame with FX annotations spans several). An empty stack
/// gives [`NO_FRAMES_EXPLANATION`]; a stack whose frames are all filtered out gives no lines, as
/// in memory_viz.
pub fn format_stack(snap: &Snapshot, stack: StackId, filter: bool) -> Vec<String> {
    let ids = snap.stack(stack);
    if ids.is_empty() {
        return NO_FRAMES_EXPLANATION
            .iter()
            .map(|s| s.to_string())
            .collect();
    }
    let texts: Vec<String> = ids
        .iter()
        .filter_map(|&id| snap.frame(id))
        .filter(|f| !filter || keep_frame(snap, f))
        .map(|f| frame_text(snap, f))
        .collect();
    elide_repeats(texts)
        .into_iter()
        .flat_map(|t| t.split('\n').map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// The stack shown for a timeline element: the alloc's (or `segment_alloc` / `segment_map`'s),
/// the free's for an unmatched free (or unmatched `segment_free` / `segment_unmap`), the block's
/// for a ghost, the segment's (`frames` of the final segment) for a pre-existing segment, and
/// [`StackId::EMPTY`] for a private pool's envelope and when the index is out of range.
pub fn element_stack(snap: &Snapshot, device: i64, element: &Element) -> StackId {
    match element.origin {
        Origin::Alloc { event }
        | Origin::UnmatchedFree { event }
        | Origin::SegmentAlloc { event }
        | Origin::UnmatchedSegmentFree { event } => snap
            .trace(device)
            .and_then(|t| t.stack(event as usize))
            .unwrap_or(StackId::EMPTY),
        Origin::Ghost { block } => snap
            .blocks
            .get(block as usize)
            .map(|b| b.stack)
            .unwrap_or(StackId::EMPTY),
        Origin::Segment { segment } => snap
            .segments
            .get(segment as usize)
            .map(|s| s.stack)
            .unwrap_or(StackId::EMPTY),
        Origin::PoolInitial { .. } | Origin::PoolGrowth { .. } => StackId::EMPTY,
    }
}

/// Whether each stack text line is a Python frame (the details pane lists those first and
/// folds the rest, the C++ frames, into one row). A line that is not a `file:line:name` frame
/// (the rest of a name with a newline, `<repeats k times>`, an fx line) goes with the frame
/// before it.
#[must_use]
pub fn python_flags(lines: &[String]) -> Vec<bool> {
    let mut out: Vec<bool> = Vec::with_capacity(lines.len());
    for l in lines {
        let flag = if is_python_line(l) {
            true
        } else if has_line_number(l) {
            false
        } else {
            out.last().copied().unwrap_or(false)
        };
        out.push(flag);
    }
    out
}

/// Whether a line has a `:<digits>:` part, as every printed frame does.
fn has_line_number(line: &str) -> bool {
    line.match_indices(':').any(|(i, _)| {
        let r = line.get(i + 1..).unwrap_or("");
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && r.as_bytes().get(digits) == Some(&b':')
    })
}

/// Whether a stack text line is a Python frame: `<file>:<digits>:…` where `<file>` is Python
/// source by the classifier ([`crate::site::is_python_file`]: `.py`, `.pyw`, `<…>`).
fn is_python_line(line: &str) -> bool {
    line.match_indices(':').any(|(i, _)| {
        let r = line.get(i + 1..).unwrap_or("");
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0
            && r.as_bytes().get(digits) == Some(&b':')
            && line.get(..i).is_some_and(crate::site::is_python_file)
    })
}

/// The lines of a stack worth showing first, innermost first: its Python frame lines when it
/// has any (the C++ allocator frames below them are the same for every stack), else all of them.
pub fn shown_frames(stack: &[String]) -> Vec<&str> {
    let py: Vec<&str> = stack
        .iter()
        .map(String::as_str)
        .filter(|l| is_python_line(l))
        .collect();
    if py.is_empty() {
        stack.iter().map(String::as_str).collect()
    } else {
        py
    }
}

/// The last path component of a Linux or Windows path.
pub fn basename(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// The innermost user frame of a stack, as the site classifier names it with the default
/// user code ([`crate::site`]): its frame for a user, library or native site; the frame running
/// the node for an autograd one; `None` for an empty stack.
pub fn innermost_user_frame(snap: &Snapshot, stack: StackId) -> Option<FrameId> {
    crate::site::site_of(snap, stack, &crate::site::UserCode::default()).frame
}

/// A short label for a stack: its site's ([`crate::site::Site::label`], default user code):
/// `basename:line:name`, `backward of mm`, or `<no frames>`.
pub fn site_label(snap: &Snapshot, stack: StackId) -> String {
    crate::site::site_of(snap, stack, &crate::site::UserCode::default()).label
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_flags_keep_continuations_with_their_frame() {
        let lines = v(&[
            "/a/m.py:3:semi;colon",
            "next line",
            "Operators.cpp:0:at::op",
            "<repeats 3 times>",
            "x.py:9:g",
        ]);
        assert_eq!(python_flags(&lines), [true, true, false, false, true]);
    }

    #[test]
    fn shown_frames_python_first() {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mixed = v(&[
            "??:0:c10::Allocator::malloc",
            "/a/m.py:3:f",
            "x.pyw:7:g",
            "/a/m.py:x:h",
        ]);
        assert_eq!(shown_frames(&mixed), ["/a/m.py:3:f", "x.pyw:7:g"]);
        let cpp = v(&["??:0:at::empty", "??:0:main"]);
        assert_eq!(shown_frames(&cpp), ["??:0:at::empty", "??:0:main"]);
        assert!(shown_frames(&[]).is_empty());
        // Not a `.py:<line>:` frame: a `.py` file name without a line, `.pyc`.
        assert_eq!(
            shown_frames(&v(&["a.py:b", "c.pyc:3:d"])),
            ["a.py:b", "c.pyc:3:d"]
        );
    }

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn elision_matches_memory_viz() {
        assert_eq!(elide_repeats(v(&[])), v(&[]));
        assert_eq!(elide_repeats(v(&["a", "b"])), v(&["a", "b"]));
        assert_eq!(elide_repeats(v(&["a", "a", "b"])), v(&["a", "a", "b"]));
        assert_eq!(
            elide_repeats(v(&["a", "a", "a", "b", "c", "c", "c", "c"])),
            v(&["a", "<repeats 2 times>", "b", "c", "<repeats 3 times>"])
        );
    }

    #[test]
    fn basenames() {
        assert_eq!(basename("/a/b/c.py"), "c.py");
        assert_eq!(basename("C:\\x\\y.py"), "y.py");
        assert_eq!(basename("plain"), "plain");
        assert_eq!(basename(""), "");
    }
}
