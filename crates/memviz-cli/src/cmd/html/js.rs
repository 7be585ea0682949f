//! A JavaScript lexer, just enough to find the import specifiers of the viewer's modules
//! (`memviz html` inlines them).

#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Kind {
    Ident,
    /// A '…' or "…" literal; start..end is inside the quotes.
    Str,
    Template,
    Num,
    Regex,
    Punct(u8),
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Tok {
    kind: Kind,
    start: usize,
    end: usize,
}

/// Words after which a `/` starts a regular expression, not a division.
pub(super) const BEFORE_REGEX: &[&str] = &[
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
];

pub(super) fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 || c == b'\\'
}

/// Tokens of `src`: comments and whitespace dropped; strings, templates, regex literals whole.
pub(super) fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let b = src.as_bytes();
    let mut toks: Vec<Tok> = Vec::new();
    // For each open `{`: whether it is a template's `${`.
    let mut braces: Vec<bool> = Vec::new();
    let mut i = if src.starts_with("#!") {
        src.find('\n').unwrap_or(b.len())
    } else {
        0
    };
    let line_of = |at: usize| src[..at.min(src.len())].matches('\n').count() + 1;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let kind = match c {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => {
                i += 1;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = src[i..].find('\n').map_or(b.len(), |e| i + e);
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = src[i + 2..]
                    .find("*/")
                    .map(|e| i + 2 + e + 2)
                    .ok_or_else(|| format!("line {}: unterminated comment", line_of(start)))?;
                continue;
            }
            b'\'' | b'"' => {
                i += 1;
                loop {
                    match b.get(i) {
                        None | Some(b'\n') => {
                            return Err(format!("line {}: unterminated string", line_of(start)))
                        }
                        Some(b'\\') => i += 2,
                        Some(&q) if q == c => break,
                        Some(_) => i += 1,
                    }
                }
                i += 1;
                toks.push(Tok {
                    kind: Kind::Str,
                    start: start + 1,
                    end: i - 1,
                });
                continue;
            }
            b'`' => {
                i = template(b, i + 1, &mut braces)
                    .ok_or_else(|| format!("line {}: unterminated template", line_of(start)))?;
                Kind::Template
            }
            b'}' if braces.last() == Some(&true) => {
                braces.pop();
                i = template(b, i + 1, &mut braces)
                    .ok_or_else(|| format!("line {}: unterminated template", line_of(start)))?;
                Kind::Template
            }
            b'/' if regex_allowed(src, toks.last()) => {
                let mut class = false;
                i += 1;
                loop {
                    match b.get(i) {
                        None | Some(b'\n') => {
                            return Err(format!("line {}: unterminated regex", line_of(start)))
                        }
                        Some(b'\\') => i += 2,
                        Some(b'[') => {
                            class = true;
                            i += 1;
                        }
                        Some(b']') => {
                            class = false;
                            i += 1;
                        }
                        Some(b'/') if !class => break,
                        Some(_) => i += 1,
                    }
                }
                i += 1;
                while i < b.len() && is_ident_byte(b[i]) {
                    i += 1;
                }
                Kind::Regex
            }
            b'0'..=b'9' => {
                while i < b.len() && (is_ident_byte(b[i]) || b[i] == b'.') {
                    i += 1;
                }
                Kind::Num
            }
            c if is_ident_byte(c) || c == b'#' => {
                i += 1;
                while i < b.len() && is_ident_byte(b[i]) {
                    i += 1;
                }
                Kind::Ident
            }
            c => {
                if c == b'{' {
                    braces.push(false);
                } else if c == b'}' {
                    braces.pop();
                }
                i += 1;
                Kind::Punct(c)
            }
        };
        toks.push(Tok {
            kind,
            start,
            end: i.min(b.len()),
        });
    }
    Ok(toks)
}

/// Scans template characters from `i` to the closing backtick (returns the index after it) or
/// to a `${` (pushes a template brace, returns the index after it).
pub(super) fn template(b: &[u8], mut i: usize, braces: &mut Vec<bool>) -> Option<usize> {
    loop {
        match b.get(i)? {
            b'\\' => i += 2,
            b'`' => return Some(i + 1),
            b'$' if b.get(i + 1) == Some(&b'{') => {
                braces.push(true);
                return Some(i + 2);
            }
            _ => i += 1,
        }
    }
}

pub(super) fn regex_allowed(src: &str, prev: Option<&Tok>) -> bool {
    match prev {
        None => true,
        Some(t) => match t.kind {
            Kind::Punct(c) => !matches!(c, b')' | b']' | b'}'),
            Kind::Ident => BEFORE_REGEX.contains(&&src[t.start..t.end]),
            _ => false,
        },
    }
}

/// The specifiers (byte ranges inside their quotes) of `src`'s static imports, re-exports and
/// literal dynamic imports. Errors on forms a report cannot rewrite.
pub(super) fn imports(src: &str) -> Result<Vec<(usize, usize)>, String> {
    let toks = lex(src)?;
    let word = |k: usize| -> Option<&str> {
        toks.get(k)
            .filter(|t| t.kind == Kind::Ident)
            .map(|t| &src[t.start..t.end])
    };
    let kind = |k: usize| toks.get(k).map(|t| t.kind);
    let line = |k: usize| src[..toks[k].start].matches('\n').count() + 1;
    let mut out = Vec::new();
    // `from 'x'` at k: the specifier, unless import attributes follow.
    let from_at = |k: usize, out: &mut Vec<(usize, usize)>| -> Result<(), String> {
        let s = toks[k + 1];
        if src[s.start..s.end].contains('\\') {
            return Err(format!("line {}: an escaped import specifier", line(k)));
        }
        if matches!(word(k + 2), Some("with" | "assert")) {
            return Err(format!(
                "line {}: import attributes (`with {{…}}`) are not supported by memviz html",
                line(k)
            ));
        }
        out.push((s.start, s.end));
        Ok(())
    };
    for k in 0..toks.len() {
        let w = word(k);
        if !matches!(w, Some("import" | "export"))
            || kind(k.wrapping_sub(1)) == Some(Kind::Punct(b'.'))
        {
            continue;
        }
        let statement_end = |j: usize| {
            matches!(kind(j), Some(Kind::Punct(b';')) | None)
                || matches!(word(j), Some("import" | "export"))
        };
        if w == Some("import") {
            match kind(k + 1) {
                Some(Kind::Punct(b'.')) | Some(Kind::Punct(b':')) => {} // import.meta, {import: …}
                Some(Kind::Punct(b'(')) => match kind(k + 2) {
                    Some(Kind::Str) => from_at(k + 1, &mut out)?,
                    Some(Kind::Template) => {
                        return Err(format!(
                            "line {}: import(`…`) of a template literal cannot be rewritten by memviz html",
                            line(k)
                        ))
                    }
                    _ => {} // import(expression): a URL made at run time (e.g. the worker's glue)
                },
                Some(Kind::Str) => from_at(k, &mut out)?,
                _ => {
                    let mut j = k + 1;
                    loop {
                        if word(j) == Some("from") && kind(j + 1) == Some(Kind::Str) {
                            from_at(j, &mut out)?;
                            break;
                        }
                        if statement_end(j) {
                            return Err(format!(
                                "line {}: an import statement memviz html cannot read",
                                line(k)
                            ));
                        }
                        j += 1;
                    }
                }
            }
        } else if matches!(kind(k + 1), Some(Kind::Punct(b'*' | b'{'))) {
            // `export * [as x] from 'y'`, `export {a, b} [from 'y']`.
            let mut j = k + 2;
            if kind(k + 1) == Some(Kind::Punct(b'{')) {
                while !matches!(kind(j), Some(Kind::Punct(b'}')) | None) {
                    j += 1;
                }
                j += 1;
            }
            while !statement_end(j) && word(j) != Some("from") && kind(j) != Some(Kind::Punct(b'}'))
            {
                j += 1;
            }
            if word(j) == Some("from") {
                if kind(j + 1) != Some(Kind::Str) {
                    return Err(format!(
                        "line {}: an export statement memviz html cannot read",
                        line(k)
                    ));
                }
                from_at(j, &mut out)?;
            }
        }
    }
    Ok(out)
}
