//! [`UserCode`]: which Python files count as the user's own besides the default (every Python
//! file outside the library locations).

/// Python files that count as user code even inside a library location (e.g. to count
/// `transformers` as one's own). Parsed from the text `--user-code` takes ([`UserCode::parse`]).
#[derive(Clone, Debug, Default)]
pub struct UserCode {
    /// Path prefixes or package path fragments (`/home/me/proj`, `transformers`,
    /// `my_pkg/sub`).
    paths: Vec<String>,
    /// A regular expression searched in the whole filename.
    regex: Option<regex_lite::Regex>,
    /// The text it was parsed from (`""` for the default).
    text: String,
}

impl PartialEq for UserCode {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for UserCode {}

impl UserCode {
    /// The default: no file added.
    pub const EMPTY: UserCode = UserCode {
        paths: Vec::new(),
        regex: None,
        text: String::new(),
    };

    /// Parses a comma-separated list of items: `/…/` is a regular expression (`regex-lite`
    /// syntax) searched in the whole filename; any other item is a path prefix or a package
    /// path fragment: it matches a filename that starts with it, or contains it right after a
    /// `/` or `\` and followed by `/`, `\`, `.` or the end (`transformers` matches
    /// `…/site-packages/transformers/models/llama/modeling_llama.py`, not `…/transformers_x/…`).
    /// Empty items are ignored; the empty text is the default. At most one regex.
    ///
    /// # Errors
    /// A regex that does not compile, or a second regex: one line saying which.
    pub fn parse(text: &str) -> Result<UserCode, String> {
        let mut out = UserCode {
            text: text.to_string(),
            ..UserCode::default()
        };
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            if let Some(re) = item
                .strip_prefix('/')
                .and_then(|r| r.strip_suffix('/'))
                .filter(|r| !r.is_empty())
            {
                if out.regex.is_some() {
                    return Err(format!(
                        "--user-code: one regex at most (got a second one, /{re}/): join them with |"
                    ));
                }
                let r = regex_lite::Regex::new(re)
                    .map_err(|e| format!("--user-code: /{re}/ is not a valid regex: {e}"))?;
                out.regex = Some(r);
            } else {
                out.paths.push(item.to_string());
            }
        }
        Ok(out)
    }

    /// Whether nothing was added to the default.
    #[must_use]
    pub fn is_default(&self) -> bool {
        self.paths.is_empty() && self.regex.is_none()
    }

    /// The text it was parsed from.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether `file` is user code by one of the added items.
    #[must_use]
    pub fn matches(&self, file: &str) -> bool {
        self.paths.iter().any(|p| path_matches(file, p))
            || self.regex.as_ref().is_some_and(|r| r.is_match(file))
    }
}

fn path_matches(file: &str, item: &str) -> bool {
    if file.starts_with(item) {
        return true;
    }
    file.match_indices(item).any(|(i, _)| {
        let before = i
            .checked_sub(1)
            .and_then(|j| file.as_bytes().get(j))
            .copied();
        let after = file.as_bytes().get(i + item.len()).copied();
        matches!(before, Some(b'/' | b'\\')) && matches!(after, None | Some(b'/' | b'\\' | b'.'))
    })
}
