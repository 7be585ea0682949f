//! The JSON reader of snapshots saved as JSON (`memviz_snapshot::json`) on arbitrary text:
//! must never panic, and must not depend on chunking; what serde_json reads, it reads.
//!
//! Input: one control byte (chunk size 1–97), then the text. Three checks:
//! * `JsonReader` with the generic `TreeBuilder` (the reader alone, before the snapshot builder
//!   can refuse anything), in chunks and whole: the same value tree (rendered as text) or the
//!   same error;
//! * an object or array that serde_json parses is read (an error may only be a limit: nesting,
//!   number length, values held, memory), never a syntax or truncation error;
//! * when the input is a JSON text as the loader sniffs it (raw or gzip'd), the loader in chunks
//!   and whole: the same model or the same error (the `snapshot` target's check).
#![no_main]
use libfuzzer_sys::fuzz_target;
use memviz_pickle::tree::{render, TreeBuilder};
use memviz_pickle::{Atoms, Limits};
use memviz_snapshot::json::{JsonErrorKind, JsonReader};

#[path = "../common/mod.rs"]
mod common;

/// The text read into a generic tree, rendered (or the error as text).
fn tree(text: &[u8], chunk: usize) -> Result<String, (JsonErrorKind, String)> {
    let mut r = JsonReader::new(TreeBuilder::default(), Atoms::new(), Limits::default());
    for c in text.chunks(chunk.max(1)) {
        r.push(c).map_err(|e| (e.kind.clone(), e.to_string()))?;
    }
    let (v, atoms, t) = r.finish().map_err(|e| (e.kind.clone(), e.to_string()))?;
    let mut s = String::new();
    // Rendering is recursive: nesting is at most the reader's depth limit (1 024).
    if text.len() < 4096 {
        render(v, &atoms, &t, &mut s);
    }
    Ok(s)
}

/// What the loader sniffs as JSON: `{` or `[` first, after an optional byte order mark and
/// whitespace (`sniff::is_json`).
fn sniffs_as_json(b: &[u8]) -> bool {
    let b = b.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(b);
    matches!(
        b.iter().find(|c| !matches!(c, b' ' | b'\n' | b'\r' | b'\t')),
        Some(b'{' | b'[')
    )
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let chunk = 1 + first as usize % 97;
    let whole = tree(rest, rest.len().max(1));
    let chunked = tree(rest, chunk);
    assert_eq!(chunked, whole, "JSON reader result depends on chunking");
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(rest) {
        if v.is_object() || v.is_array() {
            if let Err((kind, msg)) = &whole {
                assert!(
                    matches!(kind, JsonErrorKind::Limit | JsonErrorKind::OutOfMemory),
                    "serde_json reads this text, the JSON reader refuses it: {msg}"
                );
            }
        }
    }
    if sniffs_as_json(rest) || rest.starts_with(&[0x1f, 0x8b]) {
        let _ = common::check_chunking(rest, chunk);
    }
});
