//! Every [`LoadErrorKind`] from small inputs made here: each refusal has the kind its message
//! describes, whether the file comes whole or in chunks (and, where it makes sense, gzip'd).

use memviz_pickle::Limits;
use memviz_snapshot::{load_slice, LoadError, LoadErrorKind, Loader};
use std::io::Write;
use LoadErrorKind::*;

/// Loads `bytes` whole and in chunks of 7 bytes: both refuse it the same way.
fn refusal(bytes: &[u8]) -> LoadError {
    let whole = load_slice(bytes).expect_err("refused");
    let mut l = Loader::new();
    let chunked = bytes
        .chunks(7)
        .try_for_each(|c| l.push(c))
        .and_then(|()| l.finish())
        .expect_err("refused in chunks");
    assert_eq!(whole, chunked, "the refusal depends on chunking");
    whole
}

/// The refusal of `bytes`: of kind `kind`, its message containing `needle`.
fn refused_as(bytes: &[u8], kind: LoadErrorKind, needle: &str) -> LoadError {
    let e = refusal(bytes);
    assert_eq!(e.kind, kind, "{e}");
    assert!(e.to_string().contains(needle), "{needle:?} in: {e}");
    e
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).expect("gzip");
    e.finish().expect("gzip")
}

/// A protocol-4 pickle made of `ops`, with SHORT_BINUNICODE for each `Str`.
enum Op<'a> {
    Raw(&'a [u8]),
    Str(&'a str),
}

fn pickle(ops: &[Op]) -> Vec<u8> {
    let mut b = vec![0x80, 4];
    for op in ops {
        match op {
            Op::Raw(r) => b.extend_from_slice(r),
            Op::Str(s) => {
                b.extend([0x8c, s.len() as u8]);
                b.extend_from_slice(s.as_bytes());
            }
        }
    }
    b
}

/// `{'segments': [], 'device_traces': []}`: an empty snapshot.
fn empty_snapshot() -> Vec<u8> {
    use Op::*;
    pickle(&[
        Raw(b"}("),
        Str("segments"),
        Raw(b"]"),
        Str("device_traces"),
        Raw(b"]u."),
    ])
}

#[test]
fn empty() {
    let e = refused_as(b"", Empty, "the file is empty (0 bytes)");
    assert_eq!(e.offset, None);
    assert!(e.to_string().contains("was the dump interrupted"), "{e}");
    let mut l = Loader::new();
    l.push(&[]).expect("nothing yet");
    assert_eq!(l.finish().expect_err("empty").kind, Empty);
}

#[test]
fn truncated() {
    // A raw pickle cut before anything that can be shown was read.
    let e = refused_as(
        &[0x80, 2, b'}'],
        Truncated,
        "the file ends before the pickle's STOP opcode",
    );
    assert_eq!(e.offset, Some(3));
    assert!(e.to_string().contains("so there is nothing to show"), "{e}");
    refused_as(
        &[0x80, 2, 0x8c, 5, b'a'],
        Truncated,
        "in the middle of a SHORT_BINUNICODE opcode",
    );
    // A gzip stream cut short (its pickle would open whole).
    let whole = empty_snapshot();
    load_slice(&gzip(&whole)).expect("the whole file opens");
    let gz = gzip(&whole);
    refused_as(
        &gz[..gz.len() - 12],
        Truncated,
        "the gzip file is truncated",
    );
    // The pickle inside a whole gzip stream ends early.
    refused_as(
        &gzip(&whole[..6]),
        Truncated,
        "(offset in the decompressed data)",
    );
}

#[test]
fn not_pickle() {
    let cases: [(&[u8], &str); 5] = [
        (
            b"memory notes: 40 GB at step 12\n",
            "a text file, not a pickle",
        ),
        (b"<!DOCTYPE html><html></html>", "HTML or XML text"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "a PNG image"),
        (b"BZh91AY&SY", "bzip2-compressed data"),
        (b"\x00\x01\x02\x03\xfe", "not a pickle: unknown binary data"),
    ];
    for (bytes, needle) in cases {
        let e = refused_as(bytes, NotPickle, needle);
        assert_eq!(e.offset, None);
    }
    // A zip archive's first header alone: a torch.save archive cut short.
    refused_as(b"PK\x03\x04\x14\x00\x00\x00", Truncated, "zip archive");
    refused_as(
        &gzip(&gzip(&empty_snapshot())),
        NotPickle,
        "gzip-compressed data inside gzip",
    );
}

#[test]
fn checkpoint() {
    let mut global = vec![0x80, 2, b'c'];
    global.extend_from_slice(b"torch._utils\n_rebuild_tensor_v2\n(tR.");
    let e = refused_as(
        &global,
        Checkpoint,
        "This is a model checkpoint (torch.save)",
    );
    assert_eq!(e.offset, Some(2));
    assert!(
        e.to_string().contains("`torch._utils._rebuild_tensor_v2`"),
        "{e}"
    );
    use Op::*;
    let ordered = pickle(&[Str("collections"), Str("OrderedDict"), Raw(&[0x93])]);
    refused_as(&ordered, Checkpoint, "This is a model checkpoint");
    refused_as(
        &gzip(&ordered),
        Checkpoint,
        "(offset in the decompressed data)",
    );
}

#[test]
fn not_snapshot() {
    use Op::*;
    // Classes that are no checkpoint's.
    let mut global = vec![0x80, 2, b'c'];
    global.extend_from_slice(b"builtins\nset\n)R.");
    refused_as(
        &global,
        NotSnapshot,
        "another pickled Python object, not a memory snapshot",
    );
    // An opcode memory snapshots never use (a set).
    refused_as(
        &pickle(&[Raw(&[0x8f, b'.'])]),
        NotSnapshot,
        "EMPTY_SET opcode",
    );
    // Pickles of other data.
    let not = "a valid pickle, but not a memory snapshot";
    refused_as(&pickle(&[Raw(b"K\x01.")]), NotSnapshot, not);
    refused_as(&pickle(&[Raw(b"](K\x01K\x02e.")]), NotSnapshot, not);
    refused_as(
        &pickle(&[Raw(b"}"), Str("weights"), Raw(b"K\x01s.")]),
        NotSnapshot,
        "found the keys 'weights'",
    );
    refused_as(&gzip(&pickle(&[Raw(b"](K\x01K\x02e.")])), NotSnapshot, not);
    // The text protocol: a pickle, which memviz does not read.
    refused_as(
        b"(dp0\nVsegments\np1\n(lp2\ns.",
        NotSnapshot,
        "a pickle of protocol 0 (the text protocol",
    );
}

#[test]
fn malformed() {
    use Op::*;
    let e = refused_as(
        &pickle(&[Raw(&[0xff])]),
        Malformed,
        "byte 0xff is not a pickle opcode",
    );
    assert_eq!(e.offset, Some(2));
    refused_as(
        &[0x80, 9, b'N', b'.'],
        Malformed,
        "unsupported pickle protocol 9",
    );
    refused_as(&pickle(&[Raw(b"0")]), Malformed, "POP needs more values");
    refused_as(&pickle(&[Raw(b"h\x07")]), Malformed, "memo get of slot 7");
    // APPENDS onto a dict: the builder's refusal of a corrupt pickle.
    refused_as(
        &pickle(&[Raw(b"}(K\x01e.")]),
        Malformed,
        "APPENDS onto something that is not a list",
    );
    // Deflate data with a reserved block type.
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff];
    gz.extend([0u8; 80]);
    refused_as(&gz, Malformed, "the gzip data is corrupt");
}

#[test]
fn too_big() {
    // A limit of the reader.
    let limits = Limits {
        max_marks: 2,
        ..Limits::default()
    };
    let mut l = Loader::with_limits(limits);
    let e = l
        .push(&pickle(&[Op::Raw(b"(((N.")]))
        .and_then(|()| l.finish())
        .expect_err("past the nesting limit");
    assert_eq!(e.kind, TooBig, "{e}");
    assert!(e.to_string().contains("exceeds the limit of 2"), "{e}");
    // The budget: 200 000 references to one empty list in `device_traces` would each become a
    // device trace (hundreds of bytes) from 2 bytes of the file.
    use Op::*;
    let mut b = pickle(&[
        Raw(b"}("),
        Str("segments"),
        Raw(b"]"),
        Str("device_traces"),
        Raw(b"](]"),
        Raw(&[0x94]),
    ]);
    for _ in 0..200_000 {
        b.extend([b'h', 0]);
    }
    b.extend(b"eu.");
    let e = refused_as(&b, TooBig, "this file expands to more than");
    assert!(
        e.to_string().contains("becomes a device trace of its own"),
        "{e}"
    );
    assert_eq!(e.offset, None);
}

#[test]
fn kinds_serialize_in_snake_case() {
    let names: Vec<String> = [
        Empty,
        Truncated,
        NotPickle,
        Checkpoint,
        NotSnapshot,
        Malformed,
        TooBig,
    ]
    .iter()
    .map(|k| serde_json::to_string(k).expect("json"))
    .collect();
    assert_eq!(
        names,
        [
            "\"empty\"",
            "\"truncated\"",
            "\"not_pickle\"",
            "\"checkpoint\"",
            "\"not_snapshot\"",
            "\"malformed\"",
            "\"too_big\"",
        ]
    );
}
