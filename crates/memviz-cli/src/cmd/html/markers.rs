//! What `memviz html` takes from `dist/index.html`: the text between fixed marker comments. The
//! repository's index.html (trunk's entry) carries them and trunk copies comments as they are,
//! so nothing here parses HTML: each marker is found as a fixed string, exactly once.
//! (`tests.rs` checks that index.html has each marker once and nothing to embed outside them.)

/// `<link data-trunk rel="css">`, which trunk turns into `<link rel="stylesheet" href=…>`.
pub(super) const CSS: [&str; 2] = ["<!-- memviz:css -->", "<!-- /memviz:css -->"];
/// The entry module, `<script type="module" src=…>`.
pub(super) const ENTRY: [&str; 2] = ["<!-- memviz:entry -->", "<!-- /memviz:entry -->"];
/// The last thing in the head: trunk appends its `<link rel="modulepreload">` (the wasm-bindgen
/// glue) and `<link rel="preload">` (the wasm) to the head, so they come between this marker and
/// `</head>`.
pub(super) const PRELOAD: [&str; 2] = ["<!-- memviz:preload -->", "</head>"];
/// The body's markup, right after `<body …>` and right before `</body>`.
pub(super) const BODY: [&str; 2] = ["<!-- memviz:body -->", "<!-- /memviz:body -->"];

/// The marked parts of an index.html.
pub(super) struct Marked<'a> {
    pub(super) css: &'a str,
    pub(super) entry: &'a str,
    pub(super) preload: &'a str,
    /// The `<body …>` start tag before the body marker, verbatim (its attributes, e.g.
    /// `data-memviz-state`).
    pub(super) body_tag: &'a str,
    pub(super) body: &'a str,
}

/// What is wrong with an index.html's markers.
#[derive(Debug, PartialEq, thiserror::Error)]
pub(super) enum MarkerError {
    #[error("has no `{0}` marker")]
    Missing(&'static str),
    #[error("has the `{0}` marker {1} times")]
    Repeated(&'static str, usize),
    #[error("has no `{1}` after `{0}`")]
    Unclosed(&'static str, &'static str),
    #[error("has no `<body …>` start tag right before `{}`", BODY[0])]
    BodyTag,
}

/// The text between `open` (which must be there exactly once) and the first `close` after it.
fn region<'a>(html: &'a str, [open, close]: [&'static str; 2]) -> Result<&'a str, MarkerError> {
    match html.matches(open).count() {
        0 => return Err(MarkerError::Missing(open)),
        1 => {}
        n => return Err(MarkerError::Repeated(open, n)),
    }
    let start = html.find(open).map_or(0, |at| at + open.len());
    if close != PRELOAD[1] && html.matches(close).count() > 1 {
        return Err(MarkerError::Repeated(close, html.matches(close).count()));
    }
    let end = html[start..]
        .find(close)
        .ok_or(MarkerError::Unclosed(open, close))?;
    Ok(&html[start..start + end])
}

/// The marked parts of `html` (the text of an index.html).
pub(super) fn marked(html: &str) -> Result<Marked<'_>, MarkerError> {
    let body = region(html, BODY)?;
    let before_body = html.find(BODY[0]).map_or("", |at| &html[..at]);
    let body_tag = before_body
        .rfind("<body")
        .map(|at| before_body[at..].trim_end())
        .filter(|t| t.ends_with('>') && t.matches('>').count() == 1)
        .ok_or(MarkerError::BodyTag)?;
    Ok(Marked {
        css: region(html, CSS)?,
        entry: region(html, ENTRY)?,
        preload: region(html, PRELOAD)?,
        body_tag,
        body,
    })
}

/// The values of the `name="…"` attributes in `region`, in order (trunk and index.html write
/// attribute values in double quotes).
pub(super) fn attr_values<'a>(region: &'a str, name: &str) -> Vec<&'a str> {
    let key = format!(" {name}=\"");
    region
        .match_indices(&key)
        .filter_map(|(at, _)| {
            let value = &region[at + key.len()..];
            value.find('"').map(|end| &value[..end])
        })
        .collect()
}
