//! memviz-viewer's top-level modules form a DAG (issue 30): this test reads `src/`, builds the
//! graph of references between top-level modules and fails naming the cycle if there is one.
//!
//! # The rule
//! - A node is a top-level module: `src/NAME.rs` or `src/NAME/mod.rs`. A submodule
//!   (`src/app/panels/lines.rs`, an inline `mod tests { … }`) counts as its top-level module.
//!   `lib.rs` is the crate root, not a node: its `pub use` lines only name things for other
//!   crates.
//! - An edge `A -> B` is any path in A's code that reaches B from the crate root: `crate::B…`,
//!   `crate::{B…, …}`, or `super::…` climbing out of A to the root and then naming B. A name the
//!   root re-exports counts as the module it comes from (`crate::App` is `app`). `use`, `pub
//!   use` and paths in expressions, types and patterns all count.
//! - A `pub use` re-export is an edge like any other `use`: the re-exporting module cannot
//!   compile without its target. Re-exports that keep an old public path working are fine when
//!   they point down the graph (`app` re-exports `answer::AxisTicks`, `view` re-exports
//!   `kinds::ViewKind`); one pointing up closes a cycle and fails here.
//! - Not counted: comments (doc comments and their intra-doc links included), string and char
//!   literals, and the item after a `#[cfg(doc)]` attribute (an import made only for doc
//!   links). Test code (`#[cfg(test)]`) counts: it is compiled into the same crate.
//!
//! With `--nocapture` the test prints the modules in layer order (layer 0 depends on no other
//! module of the crate; each module depends only on lower layers).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Punct(char),
}

/// A token and the 1-based line it is on.
type Spanned = (Tok, usize);

/// The tokens of Rust source, without comments and literals (enough of Rust's lexer for paths:
/// nested block comments, raw strings, byte strings, char literals versus lifetimes).
fn tokens(src: &str) -> Vec<Spanned> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if let Some(len) = raw_string_start(&c, i) {
            // r"…", r#"…"#, br#"…"#: ends at a quote followed by as many hashes.
            let hashes = len - 1 - usize::from(c[i] == 'b') - 1;
            i += len;
            while i < c.len() {
                if c[i] == '"' && (1..=hashes).all(|h| at(i + h) == '#') {
                    i += 1 + hashes;
                    break;
                }
                line += usize::from(c[i] == '\n');
                i += 1;
            }
        } else if ch == '"' || (ch == 'b' && at(i + 1) == '"') {
            i += if ch == 'b' { 2 } else { 1 };
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                line += usize::from(at(i) == '\n');
                i += 1;
            }
            i += 1;
        } else if ch == '\'' || (ch == 'b' && at(i + 1) == '\'') {
            let q = if ch == 'b' { i + 1 } else { i };
            if at(q + 1) == '\\' {
                // '\n', '\u{…}': to the closing quote.
                i = q + 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(q + 2) == '\'' {
                i = q + 3;
            } else {
                // A lifetime or a label: its name is not a path.
                i = q + 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(c[start..i].iter().collect()), line));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '.') {
                if c[i] == '.' && !at(i + 1).is_ascii_digit() {
                    break;
                }
                i += 1;
            }
        } else if ch == ':' && at(i + 1) == ':' {
            out.push((Tok::Sep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// The length of the opening of a raw (byte) string at `i` (`r"`, `r#"`, `br##"`), if one is.
fn raw_string_start(c: &[char], i: usize) -> Option<usize> {
    let mut k = i;
    if c.get(k) == Some(&'b') {
        k += 1;
    }
    if c.get(k) != Some(&'r') {
        return None;
    }
    // Not the end of an identifier (`for"`): the previous char must not continue one.
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    k += 1;
    while c.get(k) == Some(&'#') {
        k += 1;
    }
    (c.get(k) == Some(&'"')).then_some(k + 1 - i)
}

fn is_ident(t: Option<&Spanned>, name: &str) -> bool {
    matches!(t, Some((Tok::Ident(s), _)) if s == name)
}

fn is_punct(t: Option<&Spanned>, p: char) -> bool {
    matches!(t, Some((Tok::Punct(q), _)) if *q == p)
}

/// The first segments named by the path tree starting at `toks[i]` (after `crate::`): one for
/// `b::c`, each item's for `{b, c::d, e as f}`; `*` for a glob.
fn tree_heads(toks: &[Spanned], i: usize) -> Vec<String> {
    match toks.get(i) {
        Some((Tok::Ident(s), _)) => vec![s.clone()],
        Some((Tok::Punct('*'), _)) => vec!["*".to_owned()],
        Some((Tok::Punct('{'), _)) => {
            let mut heads = Vec::new();
            let (mut depth, mut k, mut item_start) = (0usize, i + 1, true);
            while let Some((t, _)) = toks.get(k) {
                match t {
                    Tok::Punct('{') => depth += 1,
                    Tok::Punct('}') if depth == 0 => break,
                    Tok::Punct('}') => depth -= 1,
                    Tok::Punct(',') if depth == 0 => item_start = true,
                    _ if item_start && depth == 0 => {
                        heads.extend(tree_heads(toks, k));
                        item_start = false;
                    }
                    _ => {}
                }
                k += 1;
            }
            heads
        }
        _ => Vec::new(),
    }
}

/// The names the root re-exports (`pub use app::{App, VIEWER_LAYOUT}`), each with its module.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let toks = tokens(lib);
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i < toks.len() {
        if is_ident(toks.get(i), "use") {
            let mut k = i + 1;
            while is_ident(toks.get(k), "crate") || is_ident(toks.get(k), "self") {
                k += 2;
            }
            let Some((Tok::Ident(module), _)) = toks.get(k) else {
                i += 1;
                continue;
            };
            // The leaves up to the `;`: an identifier not followed by `::` (or the name after `as`).
            let mut j = k + 1;
            while j < toks.len() && !is_punct(toks.get(j), ';') {
                if let (Tok::Ident(name), _) = &toks[j] {
                    let leaf = !matches!(toks.get(j + 1), Some((Tok::Sep, _)))
                        && !is_ident(toks.get(j + 1), "as")
                        && name != "self";
                    if leaf {
                        out.insert(name.clone(), module.clone());
                    }
                }
                j += 1;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Where an edge was seen first: file and line.
type Edges = BTreeMap<(String, String), String>;

/// The edges out of one file of top-level module `from`, whose module path below the root is
/// `depth` deep (`src/app/mod.rs`: 1, `src/app/files.rs`: 2).
fn file_edges(
    from: &str,
    file: &str,
    depth: usize,
    src: &str,
    modules: &BTreeSet<String>,
    reexports: &BTreeMap<String, String>,
    edges: &mut Edges,
) -> Result<(), String> {
    let toks = tokens(src);
    let mut brace = 0usize;
    // Brace depths at which inline modules opened: each adds one to the module depth.
    let mut inline_mods: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        // `#[cfg(doc)]`: skip the item it guards (to its `;`, or its `{ … }`).
        if is_punct(toks.get(i), '#')
            && is_punct(toks.get(i + 1), '[')
            && is_ident(toks.get(i + 2), "cfg")
            && is_punct(toks.get(i + 3), '(')
            && is_ident(toks.get(i + 4), "doc")
            && is_punct(toks.get(i + 5), ')')
            && is_punct(toks.get(i + 6), ']')
        {
            let mut k = i + 7;
            let mut d = 0usize;
            while let Some((t, _)) = toks.get(k) {
                match t {
                    Tok::Punct('{') => d += 1,
                    Tok::Punct('}') => {
                        d = d.saturating_sub(1);
                        if d == 0 {
                            break;
                        }
                    }
                    Tok::Punct(';') if d == 0 => break,
                    _ => {}
                }
                k += 1;
            }
            i = k + 1;
            continue;
        }
        match &toks[i].0 {
            Tok::Punct('{') => brace += 1,
            Tok::Punct('}') => {
                brace = brace.saturating_sub(1);
                if inline_mods.last().is_some_and(|&b| brace < b) {
                    inline_mods.pop();
                }
            }
            Tok::Ident(m)
                if m == "mod"
                    && matches!(toks.get(i + 1), Some((Tok::Ident(_), _)))
                    && is_punct(toks.get(i + 2), '{') =>
            {
                inline_mods.push(brace + 1);
            }
            _ => {}
        }
        // Where a path reaching the root continues, if one starts here.
        let after_root = if is_ident(toks.get(i), "crate")
            && matches!(toks.get(i + 1), Some((Tok::Sep, _)))
            && !is_punct(i.checked_sub(1).and_then(|p| toks.get(p)), '$')
        {
            Some(i + 2)
        } else if is_ident(toks.get(i), "super")
            && !matches!(
                i.checked_sub(1).and_then(|p| toks.get(p)),
                Some((Tok::Sep, _))
            )
        {
            let mut k = i;
            let mut supers = 0;
            while is_ident(toks.get(k), "super") && matches!(toks.get(k + 1), Some((Tok::Sep, _))) {
                supers += 1;
                k += 2;
            }
            (supers >= depth + inline_mods.len()).then_some(k)
        } else {
            None
        };
        if let Some(k) = after_root {
            let line = toks[i].1;
            for head in tree_heads(&toks, k) {
                if head == "*" {
                    return Err(format!(
                        "{file}:{line}: a glob of the crate root hides which modules it uses"
                    ));
                }
                let to = if modules.contains(&head) {
                    Some(head)
                } else {
                    reexports.get(&head).cloned()
                };
                if let Some(to) = to.filter(|t| t != from) {
                    edges
                        .entry((from.to_owned(), to))
                        .or_insert_with(|| format!("{file}:{line}"));
                }
            }
        }
        i += 1;
    }
    Ok(())
}

/// The module graph of a crate's sources: `(path under src/, text)` pairs, `lib.rs` included.
fn module_graph(files: &[(String, String)]) -> Result<(BTreeSet<String>, Edges), String> {
    let top = |path: &str| -> Option<(String, usize)> {
        let parts: Vec<&str> = path.split('/').collect();
        let first = parts.first()?.trim_end_matches(".rs").to_owned();
        if parts.len() == 1 && (first == "lib" || first == "main") {
            return None;
        }
        let depth = parts.len() - usize::from(parts.last() == Some(&"mod.rs"));
        Some((first, depth))
    };
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|(p, _)| top(p))
        .map(|t| t.0)
        .collect();
    let lib = files
        .iter()
        .find(|(p, _)| p == "lib.rs")
        .map_or("", |(_, s)| s.as_str());
    let reexports = root_reexports(lib);
    let mut edges = Edges::new();
    for (path, src) in files {
        if let Some((from, depth)) = top(path) {
            file_edges(&from, path, depth, src, &modules, &reexports, &mut edges)?;
        }
    }
    Ok((modules, edges))
}

/// A cycle of the graph, as its modules in order (the first repeated at the end), if any.
fn find_cycle(modules: &BTreeSet<String>, edges: &Edges) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        edges: &Edges,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(m.to_owned(), 1);
        stack.push(m.to_owned());
        for (_, to) in edges.keys().filter(|(f, _)| f == m) {
            match state.get(to).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == to).unwrap_or(0);
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(to.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(to, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(m.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in modules {
        if !state.contains_key(m) {
            if let Some(c) = visit(m, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The modules by layer: layer 0 uses no other module, layer n only layers below n.
fn layers(modules: &BTreeSet<String>, edges: &Edges) -> Vec<Vec<String>> {
    let mut layer: BTreeMap<&str, usize> = BTreeMap::new();
    // Longest path down; the graph is acyclic here, so |modules| rounds settle it.
    for _ in 0..=modules.len() {
        for m in modules {
            let l = edges
                .keys()
                .filter(|(f, _)| f == m)
                .map(|(_, t)| layer.get(t.as_str()).map_or(1, |l| l + 1))
                .max()
                .unwrap_or(0);
            layer.insert(m, l);
        }
    }
    let mut out: Vec<Vec<String>> = Vec::new();
    for (m, l) in layer {
        if out.len() <= l {
            out.resize(l + 1, Vec::new());
        }
        out[l].push(m.to_owned());
    }
    out
}

/// The failure message for a cycle: its modules and where each of its edges is.
fn describe(cycle: &[String], edges: &Edges) -> String {
    let mut msg = format!(
        "import cycle between top-level modules: {}",
        cycle.join(" -> ")
    );
    for w in cycle.windows(2) {
        let at = edges
            .get(&(w[0].clone(), w[1].clone()))
            .map_or("?", String::as_str);
        msg.push_str(&format!("\n  {} -> {} at {at}", w[0], w[1]));
    }
    msg.push_str("\nmove the shared item down (to a module that depends on neither) instead");
    msg
}

fn read_src(dir: &Path, prefix: &str, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src dir")
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if path.is_dir() {
            read_src(&path, &format!("{prefix}{name}/"), out);
        } else if name.ends_with(".rs") {
            let text = std::fs::read_to_string(&path).expect("read source");
            out.push((format!("{prefix}{name}"), text));
        }
    }
}

#[test]
fn top_level_modules_form_a_dag() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_src(&src, "", &mut files);
    let (modules, edges) = module_graph(&files).unwrap_or_else(|e| panic!("{e}"));
    // The reader works: edges it must see (a `use` group, and a path in code).
    for (from, to) in [("app", "answer"), ("app", "flame_view"), ("scene", "xaxis")] {
        assert!(
            edges.contains_key(&(from.to_owned(), to.to_owned())),
            "the reader missed {from} -> {to}: {edges:?}"
        );
    }
    if let Some(cycle) = find_cycle(&modules, &edges) {
        panic!("{}", describe(&cycle, &edges));
    }
    for (i, l) in layers(&modules, &edges).iter().enumerate() {
        println!("layer {i}: {}", l.join(", "));
    }
}

fn fake(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(p, s)| ((*p).to_owned(), (*s).to_owned()))
        .collect()
}

#[test]
fn a_cycle_is_named_and_docs_do_not_count() {
    let lib = "pub mod a; pub mod b; pub mod c; pub use a::{Top, Other as Renamed};";
    // a -> b through a `use` group, b -> c through a path in code, c -> a through a root
    // re-export (`crate::Top` is a's).
    let files = fake(&[
        ("lib.rs", lib),
        ("a.rs", "use crate::{b::X, kinds};\npub struct Top;"),
        ("b/mod.rs", "mod inner;"),
        ("b/inner.rs", "fn f() { let _ = crate::c::g(); }"),
        ("c.rs", "fn g() -> crate::Top { todo!() }"),
        ("kinds.rs", ""),
    ]);
    let (modules, edges) = module_graph(&files).expect("graph");
    let cycle = find_cycle(&modules, &edges).expect("a cycle");
    let msg = describe(&cycle, &edges);
    assert!(msg.contains("a -> b -> c -> a"), "{msg}");
    assert!(msg.contains("c -> a at c.rs:1"), "{msg}");
    assert!(msg.contains("b -> c at b/inner.rs:1"), "{msg}");

    // Doc links, comments, strings, `#[cfg(doc)]` imports, paths within a module and an
    // inline test module's `super::*` are not edges.
    let files = fake(&[
        ("lib.rs", lib),
        ("a.rs", "use crate::b::X;\nmod tests { use super::*; }"),
        (
            "b/mod.rs",
            "//! [`crate::a::Top`]\n/// see [crate::a]\n#[cfg(doc)]\nuse crate::a::Top;\n\
             #[cfg(doc)]\nmod docs { use crate::c; }\nmod inner;\n\
             fn f() -> &'static str { /* crate::a */ \"crate::a\" }\n\
             fn g() -> char { '\"' }\nfn h() -> &'static str { r#\"crate::a\"# }",
        ),
        ("b/inner.rs", "use super::f; use super::super::c::g;"),
        ("c.rs", ""),
        ("kinds.rs", ""),
    ]);
    let (modules, edges) = module_graph(&files).expect("graph");
    assert_eq!(find_cycle(&modules, &edges), None, "{edges:?}");
    let got: Vec<_> = edges.keys().cloned().collect();
    assert_eq!(
        got,
        [
            ("a".to_owned(), "b".to_owned()),
            ("b".to_owned(), "c".to_owned())
        ]
    );
    assert_eq!(
        layers(&modules, &edges),
        [vec!["c", "kinds"], vec!["b"], vec!["a"]]
    );

    // A glob of the root is refused: it would hide the graph.
    let files = fake(&[("lib.rs", lib), ("a.rs", "use crate::*;")]);
    assert!(module_graph(&files).is_err());
}
