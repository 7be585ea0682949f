//! The site of an allocation as text, and what each line of a frame list is.

use serde::Serialize;
use ts_rs::TS;

/// The site of an allocation (docs/sites.md §2): which rule named it (`user`, `library`,
/// `autograd`, `native`, `none`), its label (`model.py:39:forward`, `backward of mm`,
/// `<no frames>`) and, for a user site, the library line it called into
/// (`transformers/models/llama/modeling_llama.py:216:forward`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, TS)]
pub struct SiteText {
    pub kind: String,
    pub label: String,
    pub detail: Option<String>,
}

impl SiteText {
    /// The text of `site`.
    #[must_use]
    pub fn of(site: &memviz_analysis::site::Site) -> SiteText {
        SiteText {
            kind: site.kind.as_str().to_string(),
            label: site.label.clone(),
            detail: site.detail.as_ref().map(|d| d.label.clone()),
        }
    }

    /// `label → detail`, or the label alone.
    #[must_use]
    pub fn display(&self) -> String {
        match &self.detail {
            Some(d) => format!("{} → {d}", self.label),
            None => self.label.clone(),
        }
    }
}

/// What each line of a frame list is: `user`, `library`, `interpreter` or `native` for a
/// `file:line:name` frame (by [`memviz_analysis::site::frame_kind`] under `user`); a line that
/// continues a frame (an FX line, `<repeats k times>`, the rest of a name) is its frame's kind;
/// `note` for the rest (memory_viz's no-stack explanation, notes before the frames).
#[must_use]
pub fn line_kinds(lines: &[String], user: &memviz_analysis::site::UserCode) -> Vec<String> {
    let notes_from = lines.len() - explanation_lines(lines) as usize;
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut prev: Option<&'static str> = None;
    for (i, l) in lines.iter().enumerate() {
        let kind = if i >= notes_from {
            None
        } else if let Some((file, name)) = split_frame_line(l) {
            Some(memviz_analysis::site::frame_kind(file, name, user).as_str())
        } else {
            prev
        };
        prev = kind;
        out.push(kind.unwrap_or("note").to_string());
    }
    out
}

/// `(file, name)` of a `file:line:name` line: split at the first `:<digits>:`.
fn split_frame_line(line: &str) -> Option<(&str, &str)> {
    line.match_indices(':').find_map(|(i, _)| {
        let r = line.get(i + 1..)?;
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || r.as_bytes().get(digits) != Some(&b':') {
            return None;
        }
        Some((line.get(..i)?, r.get(digits + 1..)?))
    })
}

/// How many trailing lines of `frames` are memory_viz's no-frames explanation
/// ([`memviz_analysis::frames::NO_FRAMES_EXPLANATION`], what `format_stack` gives for an empty
/// stack): the shell shows them as text under "No stack recorded", not as frames. 0 otherwise.
#[must_use]
pub fn explanation_lines(frames: &[String]) -> u32 {
    let e = memviz_analysis::frames::NO_FRAMES_EXPLANATION;
    let tail = frames
        .len()
        .checked_sub(e.len())
        .and_then(|start| frames.get(start..));
    match tail {
        Some(t) if t.iter().zip(e.iter()).all(|(a, b)| a == b) => e.len() as u32,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use memviz_analysis::frames::NO_FRAMES_EXPLANATION as E;

    #[test]
    fn the_no_frames_explanation_is_counted_not_taken_for_frames() {
        let lines = |v: &[&str]| v.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        assert_eq!(super::explanation_lines(&lines(&E)), E.len() as u32);
        // After a map item's notes, still found; a recorded stack or part of it is not.
        let mut item = lines(&["note"]);
        item.extend(lines(&E));
        assert_eq!(super::explanation_lines(&item), E.len() as u32);
        assert_eq!(super::explanation_lines(&lines(&["a.py:1:f"])), 0);
        assert_eq!(super::explanation_lines(&lines(&E[1..])), 0);
        assert_eq!(super::explanation_lines(&[]), 0);
    }

    #[test]
    fn frame_lines_are_told_apart() {
        use memviz_analysis::site::UserCode;
        let lines: Vec<String> = [
            "alloc not recorded, stack trace for free:",
            "/home/me/train.py:88:main",
            "    >> FX: node=mm",
            "/usr/lib/python3.10/threading.py:982:run",
            "??:0:_PyEval_EvalFrameDefault",
            "??:0:at::native::mm",
            "<repeats 2 times>",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
        let kinds = super::line_kinds(&lines, &UserCode::default());
        assert_eq!(
            kinds,
            [
                "note",
                "user",
                "user",
                "library",
                "interpreter",
                "native",
                "native"
            ]
        );
        let threading = UserCode::parse("threading").expect("a pattern");
        assert_eq!(
            super::line_kinds(&lines, &threading)
                .get(3)
                .map(String::as_str),
            Some("user")
        );
        let mut none: Vec<String> = E.iter().map(|s| (*s).to_string()).collect();
        assert!(super::line_kinds(&none, &UserCode::default())
            .iter()
            .all(|k| k == "note"));
        none.clear();
        assert!(super::line_kinds(&none, &UserCode::default()).is_empty());
    }
}
