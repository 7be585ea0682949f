//! Snapshots saved as JSON (issue 28): the push-based JSON reader on random values written by
//! serde_json and as Python writes them (any chunking), a JSON snapshot against the same
//! snapshot as a pickle (one model), frames shared as the pickle memo shares them, errors with
//! their offsets and kinds, limits, cut files, gzip. The JSON twins of the real corpus are compared in memviz-cli's
//! `tests/json_twins.rs`.

use memviz_pickle::tree::{Obj, TreeBuilder};
use memviz_pickle::{Atoms, Limits, Value};
use memviz_snapshot::json::JsonReader;
use memviz_snapshot::{load_slice, LoadError, LoadErrorKind, Loader, Snapshot, TRUNCATED_WARNING};
use serde_json::{json, Value as J};
use std::io::Write;

// ---- helpers ----

/// Parse `text` into a generic tree, pushed in chunks of `chunk` bytes.
fn tree(
    text: &[u8],
    chunk: usize,
) -> Result<(Value, Atoms, TreeBuilder), memviz_snapshot::json::JsonError> {
    let mut r = JsonReader::new(TreeBuilder::default(), Atoms::new(), Limits::default());
    for c in text.chunks(chunk.max(1)) {
        r.push(c)?;
    }
    r.finish()
}

/// A tree value as serde_json (big integers as u64 when they fit, floats as they are).
fn to_json(v: Value, atoms: &Atoms, t: &TreeBuilder) -> J {
    match v {
        Value::None => J::Null,
        Value::Bool(b) => J::Bool(b),
        Value::Int(i) => json!(i),
        Value::BigInt(b) => match atoms.big_int_i128(b).and_then(|i| u64::try_from(i).ok()) {
            Some(u) => json!(u),
            None => J::String(format!("big {:?}", atoms.big_int_i128(b))),
        },
        Value::Float(f) => {
            serde_json::Number::from_f64(f).map_or(J::String(format!("{f}")), J::Number)
        }
        Value::Str(s) => J::String(atoms.str(s).to_string()),
        Value::Bytes(_) => J::Null,
        Value::Obj(_) => match t.get(v) {
            Some(Obj::List(items) | Obj::Tuple(items)) => {
                J::Array(items.iter().map(|x| to_json(*x, atoms, t)).collect())
            }
            Some(Obj::Dict(pairs)) => J::Object(
                pairs
                    .iter()
                    .map(|(k, x)| {
                        (
                            to_json(*k, atoms, t).as_str().unwrap_or("?").to_string(),
                            to_json(*x, atoms, t),
                        )
                    })
                    .collect(),
            ),
            None => J::Null,
        },
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const CHARS: &[char] = &[
    'a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\t', '\u{1}', '\u{1f}', 'é', '€', '😀', '\u{ffff}',
];

fn random_string(r: &mut Rng) -> String {
    let n = match r.below(10) {
        0 => 0,
        1 => 100 + r.below(5000) as usize,
        _ => r.below(12) as usize,
    };
    (0..n)
        .map(|_| CHARS[r.below(CHARS.len() as u64) as usize])
        .collect()
}

fn random_value(r: &mut Rng, depth: u32) -> J {
    let leaf = depth > 5 || r.below(3) == 0;
    match if leaf { r.below(6) } else { 6 + r.below(2) } {
        0 => J::Null,
        1 => J::Bool(r.below(2) == 0),
        2 => json!((r.next() as i64) >> r.below(64)),
        3 => json!(r.next() >> r.below(64)),
        4 => json!((r.next() >> 12) as f64 / 1024.0 * if r.below(2) == 0 { -1.0 } else { 1e-9 }),
        5 if r.below(4) == 0 => frame_lists()[r.below(4) as usize].clone(),
        5 => J::String(random_string(r)),
        // Now and then a container past a batch of 1 000 (of leaves: the sizes stay small).
        6 => {
            let (n, d) = if r.below(8) == 0 {
                (900 + r.below(1300), 9)
            } else {
                (r.below(6), depth + 1)
            };
            J::Array((0..n).map(|_| random_value(r, d)).collect())
        }
        _ => {
            let (n, d) = if r.below(10) == 0 {
                (900 + r.below(1300), 9)
            } else {
                (r.below(6), depth + 1)
            };
            J::Object(
                (0..n)
                    .map(|i| (format!("{}{i}", random_string(r)), random_value(r, d)))
                    .collect(),
            )
        }
    }
}

/// Frame lists, repeated (found by their text), with brackets and escapes in their strings.
fn frame_lists() -> [J; 4] {
    let f = |name: &str, line: i64| json!({"name": name, "filename": "/x/a.py", "line": line});
    [
        json!([f("a", 1), f("b", 2)]),
        json!([f("a", 1), f("b", 2), f("c]", 3)]),
        json!([f("operator[](\"é\")", 0), f("b", 2)]),
        json!([f("a", 1), {"name": "a", "line": 1, "other": []}]),
    ]
}

/// JSON text as Python's `json.dump` writes it: `", "` and `": "`, non-ASCII as `\u` escapes
/// (surrogate pairs beyond the BMP).
fn python_text(v: &J, out: &mut String) {
    match v {
        J::String(s) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                        let mut buf = [0u16; 2];
                        for u in c.encode_utf16(&mut buf) {
                            out.push_str(&format!("\\u{u:04x}"));
                        }
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        J::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                out.push_str(if i > 0 { ", " } else { "" });
                python_text(x, out);
            }
            out.push(']');
        }
        J::Object(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                out.push_str(if i > 0 { ", " } else { "" });
                python_text(&J::String(k.clone()), out);
                out.push_str(": ");
                python_text(x, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Where two values differ first (a path and both sides, short; made only for a difference).
fn first_diff(a: &J, b: &J) -> Option<String> {
    match (a, b) {
        (J::Array(x), J::Array(y)) if x.len() == y.len() => (x.iter().zip(y).enumerate())
            .find_map(|(i, (p, q))| Some(format!("[{i}]{}", first_diff(p, q)?))),
        (J::Object(x), J::Object(y)) if x.keys().eq(y.keys()) => (x.iter().zip(y.values()))
            .find_map(|((k, p), q)| Some(format!(".{k:.40?}{}", first_diff(p, q)?))),
        _ if a == b => None,
        _ => Some(format!(": {:.80} vs {:.80}", a.to_string(), b.to_string())),
    }
}

// ---- the reader on random text ----

#[test]
fn random_json_reads_back_as_written_at_any_chunking() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..30 {
        let v = J::Array((0..3).map(|_| random_value(&mut r, 0)).collect());
        let mut py = String::new();
        python_text(&v, &mut py);
        let texts = [
            serde_json::to_string(&v).unwrap_or_default(),
            serde_json::to_string_pretty(&v).unwrap_or_default(),
            py,
        ];
        for text in &texts {
            // The value itself (serde_json's own parse may round a float 1 ulp off).
            let want = &v;
            let chunks: &[usize] = if round < 4 {
                &[1, 7, 4096, usize::MAX]
            } else {
                &[7, 4096, usize::MAX]
            };
            for &chunk in chunks {
                let (root, atoms, t) = tree(text.as_bytes(), chunk)
                    .unwrap_or_else(|e| panic!("round {round} chunk {chunk}: {e}"));
                let got = to_json(root, &atoms, &t);
                if let Some(d) = first_diff(&got, want) {
                    panic!("round {round} chunk {chunk}: {d}");
                }
            }
        }
    }
}

#[test]
fn python_extras_big_integers_and_a_byte_order_mark() {
    let text = b"\xEF\xBB\xBF [NaN, Infinity, -Infinity, 18446744073709551615, -9223372036854775809, 1e400, -0, 1E2]\n\r\t ";
    for chunk in [1, 2, 7, usize::MAX] {
        let (root, atoms, t) = tree(text, chunk).unwrap_or_else(|e| panic!("{e}"));
        let Some(Obj::List(items)) = t.get(root) else {
            panic!("not a list")
        };
        assert!(matches!(items[0], Value::Float(f) if f.is_nan()));
        assert_eq!(items[1], Value::Float(f64::INFINITY));
        assert_eq!(items[2], Value::Float(f64::NEG_INFINITY));
        let big = |v: Value| match v {
            Value::BigInt(b) => atoms.big_int_i128(b),
            _ => None,
        };
        assert_eq!(big(items[3]), Some(u64::MAX as i128));
        assert_eq!(big(items[4]), Some(i64::MIN as i128 - 1));
        assert_eq!(items[5], Value::Float(f64::INFINITY));
        assert_eq!(items[6], Value::Int(0));
        assert_eq!(items[7], Value::Float(100.0));
    }
}

// ---- errors ----

/// Bad JSON: the text, the error's kind and offset, and what its message says.
#[rustfmt::skip]
const BAD: &[(&[u8], LoadErrorKind, u64, &str)] = {
    use LoadErrorKind::{Malformed as M, Truncated as T};
    &[
        (b"{\"segments\" []}", M, 12, "expected ':' after an object key, found '['"),
        (b"{\"segments\": [] \"x\": 1}", M, 16, "expected ',' or '}' after an object member, found '\"'"),
        (b"[{}, {} {}]", M, 8, "expected ',' or ']' after an array item, found '{'"),
        (b"[1, 2,]", M, 6, "expected a value"),
        (b"{\"a\": 1,}", M, 8, "expected a key (a string in double quotes) after ','"),
        (b"{'a': 1}", M, 1, "expected a key (a string in double quotes) or '}' after '{'"),
        (b"[\"a\x01b\"]", M, 3, "control character 0x01 inside a string"),
        (b"[\"a\\qb\"]", M, 3, "invalid escape \\q inside a string"),
        (b"[\"\\u12x4\"]", M, 2, "invalid \\u escape"),
        (b"[\"ab\xff\"]", M, 4, "invalid UTF-8 inside a string"),
        (b"[012]", M, 1, "a leading zero"),
        (b"[1.]", M, 3, "expected a digit after '.'"),
        (b"[-]", M, 2, "expected a digit after '-'"),
        (b"[tru]", M, 1, "found `tru]`"),
        (b"[frex, 1]", M, 1, "found `fr`"),
        (b"{\"segments\": []} x", M, 17, "expected only whitespace after the end"),
        (b"[] []", M, 3, "expected only whitespace after the end"),
        (b"{\"segments\": [], \"device_traces\": [[]]", T, 38, "the file ends before the end of the JSON text (1 bracket still open)"),
        (b"[\"abc", T, 1, "in the middle of a string"),
        (b"{\"segments\": [1", T, 14, "in the middle of a number"),
    ]
};

#[test]
fn bad_json_is_refused_with_its_offset_and_what_is_wrong() {
    for &(text, kind, offset, needle) in BAD {
        for chunk in [1, 3, usize::MAX] {
            let mut l = Loader::new();
            let r = text
                .chunks(chunk)
                .try_for_each(|c| l.push(c))
                .and_then(|()| l.finish());
            let e = r
                .err()
                .unwrap_or_else(|| panic!("{:?} opened", String::from_utf8_lossy(text)));
            assert_eq!(
                (e.kind, e.offset),
                (kind, Some(offset)),
                "{:?} (chunk {chunk}): {e}",
                String::from_utf8_lossy(text)
            );
            assert!(e.message.contains(needle), "{e}");
        }
    }
}

#[test]
fn valid_json_that_is_no_snapshot_is_named() {
    let e = load_slice(br#"{"traceEvents": [], "displayTimeUnit": "ms"}"#).err();
    let e = e.unwrap_or_else(|| panic!("opened"));
    assert_eq!(e.kind, LoadErrorKind::NotSnapshot);
    assert!(
        e.message
            .starts_with("valid JSON, but not a memory snapshot"),
        "{e}"
    );
    assert!(e.message.contains("'traceEvents'"), "{e}");
    let e = load_slice(b"[1, 2, 3]")
        .err()
        .unwrap_or_else(|| panic!("opened"));
    assert_eq!(e.kind, LoadErrorKind::NotSnapshot, "{e}");
}

#[test]
fn limits_are_refused_as_too_big() {
    let deep = format!("{}{}", "[".repeat(2000), "]".repeat(2000));
    let e = load_slice(deep.as_bytes())
        .err()
        .unwrap_or_else(|| panic!("opened"));
    assert_eq!(
        (e.kind, e.offset),
        (LoadErrorKind::TooBig, Some(1024)),
        "{e}"
    );
    assert!(e.message.contains("nests deeper than 1024 levels"), "{e}");
    let limits = Limits {
        max_string_bytes: 100,
        ..Limits::default()
    };
    let long = format!("{{\"segments\": [], \"x\": \"{}\"}}", "a".repeat(500));
    for chunk in [7, 64, usize::MAX] {
        let mut l = Loader::with_limits(limits);
        let r = long
            .as_bytes()
            .chunks(chunk)
            .try_for_each(|c| l.push(c))
            .and_then(|()| l.finish());
        let e = r.err().unwrap_or_else(|| panic!("opened"));
        assert_eq!(e.kind, LoadErrorKind::TooBig, "{e}");
        assert!(e.message.contains("a string longer than 100 bytes"), "{e}");
    }
    let e = load_slice(format!("[{}]", "1".repeat(5000)).as_bytes()).err();
    assert_eq!(e.map(|e| e.kind), Some(LoadErrorKind::TooBig));
}

// ---- snapshots ----

fn frame(name: &str, line: i64) -> J {
    json!({"filename": format!("/src/{name}.py"), "line": line, "name": name})
}

/// A snapshot as Python's dict: two segments, `events` trace entries on device 0 sharing three
/// stacks, a lone `oom` on device 1, settings and annotations.
fn snapshot(events: usize) -> J {
    let stacks = [
        vec![frame("a", 1), frame("b", 2)],
        vec![frame("a", 1), frame("c", 3)],
        vec![],
    ];
    let mut trace = Vec::new();
    for i in 0..events {
        let addr = 0x7f00_0000_0000u64 + (i as u64 % 50) * 512;
        let action = ["alloc", "free_requested", "free_completed"][i % 3];
        trace.push(
            json!({"action": action, "addr": addr, "size": 512 + i % 7, "stream": 0,
            "time_us": 1_708_000_000_000_000u64 + i as u64, "frames": stacks[i % 3].clone()}),
        );
    }
    let block = |state: &str, size: u64| json!({"address": 0, "size": size, "requested_size": size, "state": state, "frames": stacks[0].clone()});
    json!({
        "segments": [
            {"device": 0, "address": 0x7f00_0000_0000u64, "total_size": 2097152, "allocated_size": 1048576,
             "active_size": 1048576, "requested_size": 1048576, "stream": 0, "segment_type": "small",
             "segment_pool_id": [0, 0], "is_expandable": false, "frames": stacks[1].clone(),
             "blocks": [block("active_allocated", 1048576), block("inactive", 1048576)]},
            {"device": 1, "address": 0x7f10_0000_0000u64, "total_size": 20971520, "allocated_size": 0,
             "active_size": 0, "requested_size": 0, "stream": 7, "segment_type": "large",
             "segment_pool_id": [0, 1], "is_expandable": true, "frames": [],
             "blocks": [block("inactive", 20971520)]}
        ],
        "device_traces": [trace, [{"action": "oom", "size": 1u64 << 40, "device_free": 123, "stream": 0, "frames": []}]],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "max_split_size": -1,
            "garbage_collection_threshold": 0.0, "expandable_segments": true,
            "roundup_power2_divisions": {"1": 0, "2": 0}},
        "external_annotations": [{"name": "step", "stage": "START", "device": 0, "time_us": 1_708_000_000_000_000u64}]
    })
}

/// A protocol-4 pickle of `v` (no memo), with `segment_pool_id` as a tuple, as torch writes it.
fn pickle(v: &J) -> Vec<u8> {
    fn w(v: &J, key: Option<&str>, p: &mut Vec<u8>) {
        match v {
            J::Null => p.push(b'N'),
            J::Bool(b) => p.push(if *b { 0x88 } else { 0x89 }),
            J::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) if i32::try_from(i).is_ok() => {
                    p.push(b'J');
                    p.extend((i as i32).to_le_bytes());
                }
                (Some(i), _, _) => {
                    p.extend([0x8a, 8]);
                    p.extend(i.to_le_bytes());
                }
                (None, Some(u), _) => {
                    p.extend([0x8a, 9]);
                    p.extend(u.to_le_bytes());
                    p.push(0);
                }
                (_, _, f) => {
                    p.push(b'G');
                    p.extend(f.unwrap_or(0.0).to_be_bytes());
                }
            },
            J::String(s) => {
                p.push(b'X');
                p.extend((s.len() as u32).to_le_bytes());
                p.extend(s.as_bytes());
            }
            J::Array(a) if key == Some("segment_pool_id") && a.len() == 2 => {
                a.iter().for_each(|x| w(x, None, p));
                p.push(0x86);
            }
            J::Array(a) => {
                p.push(b']');
                for batch in a.chunks(1000) {
                    p.push(b'(');
                    batch.iter().for_each(|x| w(x, None, p));
                    p.push(b'e');
                }
            }
            J::Object(o) => {
                p.push(b'}');
                let pairs: Vec<_> = o.iter().collect();
                for batch in pairs.chunks(1000) {
                    p.push(b'(');
                    for (k, x) in batch {
                        w(&J::String(k.to_string()), None, p);
                        w(x, Some(k), p);
                    }
                    p.push(b'u');
                }
            }
        }
    }
    let mut p = vec![0x80, 4];
    w(v, None, &mut p);
    p.push(b'.');
    p
}

/// The model's dump without its first line (which names the format).
fn dump(s: &Snapshot) -> String {
    s.dump()
        .split_once('\n')
        .map(|x| x.1.to_string())
        .unwrap_or_default()
}

fn load_chunked(bytes: &[u8], chunk: usize) -> Result<Snapshot, LoadError> {
    let mut l = Loader::new().with_size_hint(bytes.len() as u64);
    for c in bytes.chunks(chunk.max(1)) {
        l.push(c)?;
    }
    l.finish()
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let _ = e.write_all(b);
    e.finish().unwrap_or_default()
}

#[test]
fn a_json_snapshot_is_the_same_model_as_its_pickle() {
    let v = snapshot(2500);
    let from_pickle = load_slice(&pickle(&v)).unwrap_or_else(|e| panic!("pickle: {e}"));
    assert_eq!(from_pickle.protocol, 4);
    let want = dump(&from_pickle);
    assert!(
        want.contains("trace 0: 2500 events") && want.contains("pool (0, 1)"),
        "{want}"
    );
    let mut py = String::new();
    python_text(&v, &mut py);
    let compact = serde_json::to_string(&v).unwrap_or_default();
    for text in [py.as_bytes(), compact.as_bytes()] {
        for chunk in [1, 7, 4096, usize::MAX] {
            let s = load_chunked(text, chunk).unwrap_or_else(|e| panic!("chunk {chunk}: {e}"));
            assert_eq!(s.protocol, 0);
            assert_eq!(dump(&s), want, "chunk {chunk}");
        }
        let s = load_chunked(&gzip(text), 1000).unwrap_or_else(|e| panic!("gzip: {e}"));
        assert_eq!(dump(&s), want, "gzip");
    }
    // A bare list of segments (torch.cuda.memory_snapshot()).
    let bare = serde_json::to_string(&v["segments"]).unwrap_or_default();
    let s = load_slice(bare.as_bytes()).unwrap_or_else(|e| panic!("bare: {e}"));
    assert_eq!((s.segments.len(), s.blocks.len()), (2, 3));
}

#[test]
fn repeated_frames_and_stacks_are_one_container_as_in_the_pickle() {
    let text = serde_json::to_string(&snapshot(3000)).unwrap_or_default();
    let (root, atoms, t) = tree(text.as_bytes(), usize::MAX).unwrap_or_else(|e| panic!("{e}"));
    // 3 distinct frames, 2 distinct non-empty stacks; 3003 entries, 1000 empty `frames` lists,
    // 2 segments, 3 blocks and their 2 lists, the rest: a few dozen containers.
    let made = t.objs.len();
    assert!(
        (3003 + 1000 + 5..3003 + 1000 + 40).contains(&made),
        "{made}"
    );
    let j = to_json(root, &atoms, &t);
    assert_eq!(j, snapshot(3000));
    // A list of distinct frames stays distinct; a dict with another key is never shared.
    let text = br#"[{"name": "a", "line": 1}, {"name": "a", "line": 2}, {"name": "a", "line": 1},
        {"name": "a", "line": 1, "size": 1}, {"name": "a", "line": 1, "size": 1}]"#;
    let (root, _, t) = tree(text, usize::MAX).unwrap_or_else(|e| panic!("{e}"));
    let Some(Obj::List(items)) = t.get(root) else {
        panic!("list")
    };
    assert_eq!(items[0], items[2]);
    assert_ne!(items[0], items[1]);
    assert_ne!(items[3], items[4]);
}

#[test]
fn a_cut_json_snapshot_opens_what_was_read_before_the_cut() {
    let text = serde_json::to_string(&snapshot(300)).unwrap_or_default();
    let text = text.as_bytes();
    let whole = load_slice(text).unwrap_or_else(|e| panic!("{e}"));
    let whole_events: Vec<String> = dump(&whole)
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("  block"))
        .map(str::to_string)
        .collect();
    let (mut opened, mut refused) = (0, 0);
    for cut in (1..text.len()).step_by(7) {
        let part = &text[..cut];
        match load_slice(part) {
            Ok(s) => {
                opened += 1;
                let w = s
                    .truncation_warning()
                    .unwrap_or_else(|| panic!("cut {cut}: no warning"));
                assert!(
                    w.starts_with(TRUNCATED_WARNING) && w.contains("the JSON text ends after"),
                    "{w}"
                );
                // Whole records only: the events are a prefix of the whole file's.
                let ev: Vec<String> = dump(&s)
                    .lines()
                    .filter(|l| l.starts_with("  ") && !l.starts_with("  block"))
                    .map(str::to_string)
                    .collect();
                assert!(
                    ev.len() <= whole_events.len() && ev[..] == whole_events[..ev.len()],
                    "cut {cut}"
                );
                assert!(s.segments.len() <= 2);
                let chunked =
                    load_chunked(part, 7).unwrap_or_else(|e| panic!("cut {cut} chunked: {e}"));
                assert_eq!(chunked.dump(), s.dump(), "cut {cut}");
            }
            Err(e) => {
                refused += 1;
                assert_eq!(e.kind, LoadErrorKind::Truncated, "cut {cut}: {e}");
                assert!(e.message.contains("so there is nothing to show"), "{e}");
            }
        }
    }
    assert!(opened > 100 && refused > 10, "{opened} {refused}");
    // A cut inside device 0's trace names it.
    let cut = text.len() / 2;
    let s = load_slice(&text[..cut]).unwrap_or_else(|e| panic!("{e}"));
    let w = s.truncation_warning().unwrap_or_default();
    assert!(w.contains("device 0's trace stops there"), "{w}");
    assert_eq!(s.segments.len(), 2);
    // The same cut inside a whole gzip stream.
    let g = load_slice(&gzip(&text[..cut])).unwrap_or_else(|e| panic!("{e}"));
    let body = |s: &Snapshot| dump(s).replace("the decompressed JSON text", "the JSON text");
    assert_eq!(body(&g), body(&s));
    let w = g.truncation_warning().unwrap_or_default();
    assert!(w.contains("the decompressed JSON text ends after"), "{w}");
    // Cut before anything whole: an error with the offset in the decompressed data.
    let e = load_slice(&gzip(&text[..40])).err();
    let e = e.unwrap_or_else(|| panic!("opened"));
    assert_eq!(e.kind, LoadErrorKind::Truncated);
    assert!(
        e.message.contains("(offset in the decompressed data)"),
        "{e}"
    );
}
