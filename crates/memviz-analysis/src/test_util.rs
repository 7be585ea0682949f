//! Helpers of the unit tests.

use memviz_snapshot::Snapshot;

/// A snapshot with no segments and no trace, to fill in by hand.
pub(crate) fn empty_snapshot() -> Snapshot {
    // {"segments": [], "device_traces": []}, protocol 2.
    let mut p: Vec<u8> = vec![0x80, 2, b'}', b'('];
    for key in ["segments", "device_traces"] {
        p.push(b'X');
        p.extend_from_slice(&(key.len() as u32).to_le_bytes());
        p.extend_from_slice(key.as_bytes());
        p.push(b']');
    }
    p.extend_from_slice(b"u.");
    memviz_snapshot::load_slice(&p).expect("a minimal snapshot")
}

/// A Python value for [`pickle`]: enough to write small snapshots by hand.
#[derive(Clone, Debug)]
pub(crate) enum Py {
    Int(i128),
    Str(String),
    Bool(bool),
    List(Vec<Py>),
    Dict(Vec<(String, Py)>),
}

/// `Py::Str`.
pub(crate) fn s(v: &str) -> Py {
    Py::Str(v.to_string())
}

/// `Py::Dict` from `(key, value)` pairs.
pub(crate) fn dict(pairs: Vec<(&str, Py)>) -> Py {
    Py::Dict(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// A frame dict `{filename, line, name}`.
pub(crate) fn frame(filename: &str, line: i128, name: &str) -> Py {
    dict(vec![
        ("filename", s(filename)),
        ("line", Py::Int(line)),
        ("name", s(name)),
    ])
}

fn write_py(p: &mut Vec<u8>, v: &Py) {
    match v {
        Py::Int(i) => {
            if let Ok(x) = i32::try_from(*i) {
                p.push(b'J');
                p.extend_from_slice(&x.to_le_bytes());
            } else {
                let bytes = i.to_le_bytes();
                // Shortest two's complement: drop redundant sign bytes.
                let mut n = bytes.len();
                while n > 1 {
                    let (top, next) = (bytes[n - 1], bytes[n - 2]);
                    if (top == 0 && next & 0x80 == 0) || (top == 0xff && next & 0x80 != 0) {
                        n -= 1;
                    } else {
                        break;
                    }
                }
                p.push(0x8a);
                p.push(n as u8);
                p.extend_from_slice(&bytes[..n]);
            }
        }
        Py::Str(t) => {
            p.push(b'X');
            p.extend_from_slice(&(t.len() as u32).to_le_bytes());
            p.extend_from_slice(t.as_bytes());
        }
        Py::Bool(b) => p.push(if *b { 0x88 } else { 0x89 }),
        Py::List(items) => {
            p.push(b']');
            if !items.is_empty() {
                p.push(b'(');
                for x in items {
                    write_py(p, x);
                }
                p.push(b'e');
            }
        }
        Py::Dict(pairs) => {
            p.push(b'}');
            if !pairs.is_empty() {
                p.push(b'(');
                for (k, x) in pairs {
                    write_py(p, &Py::Str(k.clone()));
                    write_py(p, x);
                }
                p.push(b'u');
            }
        }
    }
}

/// A protocol-2 pickle of `v`, loaded as a snapshot.
pub(crate) fn pickle(v: &Py) -> Snapshot {
    let mut p: Vec<u8> = vec![0x80, 2];
    write_py(&mut p, v);
    p.push(b'.');
    memviz_snapshot::load_slice(&p).expect("a hand-built snapshot")
}

/// A snapshot whose device-0 trace has one alloc per stack (frames `(file, line, name)`,
/// innermost first), the i-th of `size(i)` bytes at address `4096 · (i + 1)`.
pub(crate) fn snapshot_of_stacks<F: AsRef<str>>(
    stacks: &[Vec<(F, i128, &str)>],
    size: impl Fn(usize) -> i128,
) -> Snapshot {
    let events: Vec<Py> = stacks
        .iter()
        .enumerate()
        .map(|(i, st)| {
            dict(vec![
                ("action", Py::Str("alloc".into())),
                ("addr", Py::Int(4096 * (i as i128 + 1))),
                ("size", Py::Int(size(i))),
                ("stream", Py::Int(0)),
                (
                    "frames",
                    Py::List(
                        st.iter()
                            .map(|(f, l, n)| frame(f.as_ref(), *l, n))
                            .collect(),
                    ),
                ),
            ])
        })
        .collect();
    pickle(&dict(vec![
        ("segments", Py::List(Vec::new())),
        ("device_traces", Py::List(vec![Py::List(events)])),
    ]))
}
