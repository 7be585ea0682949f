//! How the report finds the imports of the viewer's modules: a line rule, no JavaScript lexer.
//!
//! A module imports others only at its top, before any other code, one import per line, in one
//! of two forms, exactly:
//!
//! ```text
//! import { A, B } from './x.js';
//! import * as n from './x.js';
//! ```
//!
//! (no leading space, one space where shown, names `A`, `B`, `n` plain identifiers, a
//! single-quoted specifier; trailing whitespace is ignored). Blank lines and comments may come
//! between them. [`imports`] returns the specifier of each such line; `memviz html` replaces it
//! with the imported module's URL. Anything else that would load a module is refused with its
//! line: another import form at the top, and below it any `import` but `import.meta` and
//! `import(expression)` (a URL made at run time: the worker's `import(msg.glue)`), and any
//! `from '…'` (a re-export). Comment lines are skipped: a line starting with `//`, `/*` or `*`
//! (JSDoc's `@typedef {import('./types').X}`), up to a `*/` on it. The rule is line-based, so it
//! also refuses a string or template line that merely looks like an import: conservative.
//! `tests.rs` runs it on every module of www/js.

/// One import line: where its specifier (inside the quotes) is in the module's text.
#[derive(Debug, PartialEq)]
pub(super) struct Import {
    pub(super) line: usize,
    pub(super) start: usize,
    pub(super) end: usize,
}

/// A line the report cannot rewrite (1-based line number, the line's text).
#[derive(Debug, PartialEq, thiserror::Error)]
pub(super) enum ImportError {
    #[error("line {0}: `{1}` is not of the form `import {{ A, B }} from './x.js';` or `import * as n from './x.js';`, the only imports memviz html rewrites")]
    Form(usize, String),
    #[error("line {0}: `{1}` loads a module below the imports at the top of the file, which memviz html cannot rewrite (a module imports others only at its top, one `import {{ A, B }} from './x.js';` or `import * as n from './x.js';` per line)")]
    Elsewhere(usize, String),
}

/// The import lines of `src`, and every line that breaks the rule.
pub(super) fn imports(src: &str) -> (Vec<Import>, Vec<ImportError>) {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    let mut at_top = true;
    let mut offset = 0;
    for (n, raw) in src.split_inclusive('\n').enumerate() {
        let line_start = offset;
        offset += raw.len();
        let line = raw.trim_end();
        let code = code_of(line);
        if code.is_empty() {
            continue;
        }
        let shown = || line.trim().to_string();
        if at_top && starts_import_statement(code) {
            match specifier(line) {
                Some((start, end)) => found.push(Import {
                    line: n + 1,
                    start: line_start + start,
                    end: line_start + end,
                }),
                None => errors.push(ImportError::Form(n + 1, shown())),
            }
            continue;
        }
        at_top = false;
        if loads_a_module(code) {
            errors.push(ImportError::Elsewhere(n + 1, shown()));
        }
    }
    (found, errors)
}

/// The code of a line: empty for a comment line (`//`, `/*`, or `*` inside a block comment),
/// else the line from its first character, or from after the `*/` that ends a comment on it.
fn code_of(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with("//") {
        return "";
    }
    let from = if t.starts_with("/*") {
        2
    } else if t.starts_with('*') {
        0
    } else {
        return t;
    };
    t[from..]
        .find("*/")
        .map_or("", |e| code_of(&t[from + e + 2..]))
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || !c.is_ascii()
}

fn is_ident(s: &str) -> bool {
    s.starts_with(|c: char| !c.is_ascii_digit()) && s.chars().all(is_ident_char)
}

/// Whether `code` starts an import statement: the word `import`, not `import.meta` or
/// `import(…)`.
fn starts_import_statement(code: &str) -> bool {
    code.strip_prefix("import").is_some_and(|rest| {
        !rest.starts_with(is_ident_char) && !rest.trim_start().starts_with(['.', '('])
    })
}

/// Where the specifier of `line` (inside its quotes) is, when the line is exactly one of the two
/// forms.
fn specifier(line: &str) -> Option<(usize, usize)> {
    let rest = line.strip_prefix("import ")?;
    let rest = if let Some(r) = rest.strip_prefix("* as ") {
        let (name, r) = r.split_once(' ')?;
        is_ident(name).then_some(r)?
    } else {
        let (names, r) = rest.strip_prefix("{ ")?.split_once(" } ")?;
        names.split(", ").all(is_ident).then_some(r)?
    };
    let spec = rest.strip_prefix("from '")?.strip_suffix("';")?;
    if spec.is_empty() || spec.contains(['\'', '"', '`', '\\']) {
        return None;
    }
    let end = line.len() - "';".len();
    Some((end - spec.len(), end))
}

/// Whether a code line below the top holds an import other than `import.meta` and
/// `import(expression)`, or a `from '…'`.
fn loads_a_module(code: &str) -> bool {
    let words = |word: &'static str| {
        code.match_indices(word).filter_map(move |(at, _)| {
            let before = code[..at].chars().next_back();
            let after = &code[at + word.len()..];
            let whole = !before.is_some_and(|c| is_ident_char(c) || c == '.')
                && !after.starts_with(is_ident_char);
            whole.then(|| after.trim_start())
        })
    };
    let quote = |s: &str| s.starts_with(['\'', '"', '`']);
    let import = words("import").any(|after| match after.strip_prefix('(') {
        Some(arg) => {
            let arg = arg.trim_start();
            arg.is_empty() || quote(arg)
        }
        None => !after.starts_with('.'),
    });
    import || words("from").any(quote)
}
