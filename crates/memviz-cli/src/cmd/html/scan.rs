//! An HTML tag scanner, just enough to read `dist/index.html` (`memviz html`).

/// An HTML start tag: where it is and its attributes (names lower-cased).
pub(super) struct Tag {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) attrs: Vec<(String, Option<String>)>,
}

impl Tag {
    pub(super) fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_deref().unwrap_or(""))
    }
}

/// Whether a start tag named `name` begins at `i`.
pub(super) fn tag_at(b: &[u8], i: usize, name: &str) -> bool {
    b[i] == b'<'
        && b.get(i + 1..i + 1 + name.len())
            .is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()))
        && b.get(i + 1 + name.len())
            .is_some_and(|c| c.is_ascii_whitespace() || *c == b'>' || *c == b'/')
}

/// The start tags named `name` in `html` (comments and the text of scripts and styles skipped).
pub(super) fn tags(html: &str, name: &str) -> Vec<Tag> {
    let b = html.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"<!--") {
            i = find_ci(html, "-->", i).map_or(b.len(), |e| e + 3);
            continue;
        }
        let Some(tag) = [name, "script", "style"]
            .into_iter()
            .find(|t| tag_at(b, i, t))
        else {
            i += 1;
            continue;
        };
        let (attrs, end) = attributes(html, i + 1 + tag.len());
        if tag == name {
            out.push(Tag {
                start: i,
                end,
                attrs,
            });
        }
        i = end;
        if matches!(tag, "script" | "style") {
            i = find_ci(html, &format!("</{tag}"), i).unwrap_or(b.len());
        }
    }
    out
}

/// The attributes from `i` to the tag's `>`; returns them and the index after `>`.
pub(super) fn attributes(html: &str, mut i: usize) -> (Vec<(String, Option<String>)>, usize) {
    let b = html.as_bytes();
    let mut attrs = Vec::new();
    loop {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b'/') {
            i += 1;
        }
        if i >= b.len() {
            return (attrs, b.len());
        }
        if b[i] == b'>' {
            return (attrs, i + 1);
        }
        let s = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && !matches!(b[i], b'=' | b'>' | b'/') {
            i += 1;
        }
        let name = html[s..i].to_ascii_lowercase();
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if b.get(i) != Some(&b'=') {
            attrs.push((name, None));
            continue;
        }
        i += 1;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let value = match b.get(i) {
            Some(&q @ (b'"' | b'\'')) => {
                let e = html[i + 1..].find(q as char).map_or(b.len(), |e| i + 1 + e);
                let v = &html[i + 1..e];
                i = (e + 1).min(b.len());
                v
            }
            _ => {
                let s = i;
                while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'>' {
                    i += 1;
                }
                &html[s..i]
            }
        };
        attrs.push((name, Some(decode_entities(value))));
    }
}

/// The few character references a URL attribute may hold.
pub(super) fn decode_entities(v: &str) -> String {
    v.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Index of the first case-insensitive `needle` in `hay` at or after `from`.
pub(super) fn find_ci(hay: &str, needle: &str, from: usize) -> Option<usize> {
    let h = hay.as_bytes();
    let n = needle.as_bytes();
    (from..=h.len().checked_sub(n.len())?).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}
