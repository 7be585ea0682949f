//! Opcode-level tests of the streaming reader, with hand-written pickles.
#![allow(clippy::unwrap_used)]

use memviz_pickle::tree::{parse_tree, render, TreeBuilder};
use memviz_pickle::{ErrorKind, Unpickler};

fn text(bytes: &[u8]) -> String {
    let (v, atoms, tree) = parse_tree(bytes).unwrap_or_else(|e| panic!("{e}"));
    let mut s = String::new();
    render(v, &atoms, &tree, &mut s);
    s
}

fn chunked(bytes: &[u8], n: usize) -> String {
    let mut u = Unpickler::new(TreeBuilder::default());
    for c in bytes.chunks(n) {
        u.push(c).unwrap();
    }
    let (v, atoms, tree) = u.finish().unwrap();
    let mut s = String::new();
    render(v, &atoms, &tree, &mut s);
    s
}

// pickle.dumps({'a': [1, 2], 'b': 'x'}, protocol=4)
const P4: &[u8] = b"\x80\x04\x95\x17\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94(K\x01K\x02e\x8c\x01b\x94\x8c\x01x\x94u.";

#[test]
fn protocol4_dict() {
    assert_eq!(text(P4), r#"{"a": [1, 2], "b": "x"}"#);
}

#[test]
fn any_chunking_gives_same_result() {
    let whole = text(P4);
    for n in 1..P4.len() {
        assert_eq!(chunked(P4, n), whole, "chunk size {n}");
    }
}

#[test]
fn memo_is_alias_not_copy() {
    // l = []; d = {'x': l, 'y': l}; l is memoized while empty, filled after the first reference.
    // } MEMOIZE ( 'x' ] MEMOIZE 'y' h1 u  then: h1 K7 a  STOP-> returns d with l == [7] twice
    let p = b"\x80\x04}\x94(\x8c\x01x]\x94\x8c\x01yh\x01uh\x01K\x07a0.";
    assert_eq!(text(p), r#"{"x": [7], "y": [7]}"#);
}

#[test]
fn long1_big_and_negative() {
    // [2**63, -1, 2**64+5, 0]
    let p = b"\x80\x02](\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00\x8a\x01\xff\x8a\x09\x05\x00\x00\x00\x00\x00\x00\x00\x01\x8a\x00e.";
    assert_eq!(
        text(p),
        "[9223372036854775808, -1, 18446744073709551621, 0]"
    );
}

#[test]
fn ints_floats_bools_tuples() {
    // (255, 65535, -2, 1.5, True, False, None, (1,), ())  with TUPLE of mark
    let p = b"\x80\x05(K\xffM\xff\xffJ\xfe\xff\xff\xffG?\xf8\x00\x00\x00\x00\x00\x00\x88\x89NK\x01\x85)t.";
    assert_eq!(
        text(p),
        "(255, 65535, -2, 1.5, True, False, None, (1,), ())"
    );
}

#[test]
fn protocol2_binput_style() {
    // C++ pickler style: } q0 ( X'k' q1 ] q2 ( K1 K2 K3 e u .
    let p = b"\x80\x02}q\x00(X\x01\x00\x00\x00kq\x01]q\x02(K\x01K\x02K\x03eu.";
    assert_eq!(text(p), r#"{"k": [1, 2, 3]}"#);
}

#[test]
fn trailing_bytes_after_stop_are_ignored() {
    let mut p = P4.to_vec();
    p.extend_from_slice(b"\x00\x00");
    assert_eq!(text(&p), r#"{"a": [1, 2], "b": "x"}"#);
}

fn err(bytes: &[u8]) -> memviz_pickle::PickleError {
    let mut u = Unpickler::new(TreeBuilder::default());
    match u.push(bytes) {
        Err(e) => e,
        Ok(()) => match u.finish() {
            Err(e) => e,
            Ok(_) => panic!("expected an error"),
        },
    }
}

#[test]
fn refuses_globals_with_target() {
    let e = err(b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nq\x00.");
    assert_eq!(e.offset, 2);
    assert!(matches!(
        e.kind,
        ErrorKind::Refused {
            opcode: "GLOBAL",
            ..
        }
    ));
    assert!(
        e.to_string().contains("torch._utils._rebuild_tensor_v2"),
        "{e}"
    );
    let e = err(b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93.");
    assert!(e.to_string().contains("builtins.eval"), "{e}");
    for op in [b'R', b'b', 0x81, b'i', b'o', b'P', b'Q', 0x92] {
        let e = err(&[0x80, 2, b'N', b'N', op]);
        assert!(matches!(e.kind, ErrorKind::Refused { .. }), "{op:x}: {e}");
        assert_eq!(e.offset, 4);
    }
}

#[test]
fn truncation_and_garbage() {
    for n in 0..P4.len() {
        let e = err(&P4[..n]);
        assert!(
            matches!(e.kind, ErrorKind::Truncated { .. }),
            "prefix {n}: {e}"
        );
    }
    let e = err(b"{\"a\": 1}");
    assert!(matches!(e.kind, ErrorKind::NotAPickle { first_byte: b'{' }));
    let e = err(b"\x80\x01N.");
    assert!(matches!(e.kind, ErrorKind::UnsupportedProtocol(1)));
    let e = err(b"\x80\x04h\x05.");
    assert!(matches!(e.kind, ErrorKind::BadMemo { index: 5, .. }));
    let e = err(b"\x80\x04e.");
    assert!(matches!(e.kind, ErrorKind::NoMark { .. }));
    let e = err(b"\x80\x04\xff");
    assert!(matches!(e.kind, ErrorKind::UnknownOpcode(0xff)));
    let e = err(b"\x80\x04K\x01e.");
    assert!(matches!(e.kind, ErrorKind::NoMark { .. }), "{e}");
    let e = err(b"\x80\x04](K\x01u.");
    assert!(e.to_string().contains("expected"), "{e}");
}

#[test]
fn limits_bound_hostile_input() {
    let mut deep = vec![0x80, 4];
    deep.extend(std::iter::repeat_n(b'(', 5000));
    let e = err(&deep);
    assert!(matches!(e.kind, ErrorKind::Limit { .. }), "{e}");
    // A BINPUT far beyond the memo is refused rather than allocating gigabytes.
    let e = err(b"\x80\x02Nr\xff\xff\xff\x7f.");
    assert!(matches!(e.kind, ErrorKind::Limit { .. }), "{e}");
    // A huge declared string length is refused before reading.
    let e = err(b"\x80\x04X\xff\xff\xff\xff");
    assert!(matches!(e.kind, ErrorKind::Limit { .. }), "{e}");
}

/// Found by `cargo fuzz` (target `unpickle`, crash-56c25839): a GLOBAL's message quoted whatever
/// bytes had arrived (possibly hundreds of raw bytes), so it depended on chunking.
#[test]
fn fuzz_56c25839_global_message_independent_of_chunking() {
    let mut cases: Vec<Vec<u8>> = Vec::new();
    let mut long = b"\x80\x04c".to_vec();
    long.extend(std::iter::repeat_n(b'x', 400));
    long.extend(b"\nname\n.");
    cases.push(long);
    cases.push(b"\x80\x04cmod\nname\n.".to_vec());
    cases.push(b"\x80\x04cmod\x00\x01\nna\tme\nK\x01.".to_vec());
    for bytes in cases {
        let messages: Vec<String> = [1, 2, 7, 300, bytes.len()]
            .iter()
            .map(|&n| {
                let mut u = Unpickler::new(TreeBuilder::default());
                let mut r = Ok(());
                for c in bytes.chunks(n) {
                    r = u.push(c);
                    if r.is_err() {
                        break;
                    }
                }
                match r {
                    Err(e) => e.to_string(),
                    Ok(()) => u.finish().err().map(|e| e.to_string()).unwrap_or_default(),
                }
            })
            .collect();
        assert!(messages.windows(2).all(|w| w[0] == w[1]), "{messages:?}");
        assert!(messages[0].len() < 400, "{}", messages[0]);
    }
}
