use super::*;
use crate::test_util::{dict, frame, pickle, s, Py};
use memviz_snapshot::Snapshot;

const MIB: i128 = 1 << 20;
const A: i128 = 0x1000_0000;
const B: i128 = 0x2000_0000;

fn block(size: i128, requested: i128, state: &str, frames: Vec<Py>) -> Py {
    dict(vec![
        ("size", Py::Int(size)),
        ("requested_size", Py::Int(requested)),
        ("state", s(state)),
        ("frames", Py::List(frames)),
    ])
}

fn segment(device: i128, address: i128, stream: i128, allocated: i128, blocks: Vec<Py>) -> Py {
    let total: i128 = blocks
        .iter()
        .map(|b| match b {
            Py::Dict(p) => p
                .iter()
                .find(|(k, _)| k == "size")
                .and_then(|(_, v)| match v {
                    Py::Int(i) => Some(*i),
                    _ => None,
                })
                .unwrap_or(0),
            _ => 0,
        })
        .sum();
    dict(vec![
        ("device", Py::Int(device)),
        ("address", Py::Int(address)),
        ("total_size", Py::Int(total)),
        ("allocated_size", Py::Int(allocated)),
        ("active_size", Py::Int(allocated)),
        ("requested_size", Py::Int(allocated)),
        ("stream", Py::Int(stream)),
        ("segment_type", s("large")),
        ("is_expandable", Py::Bool(false)),
        ("blocks", Py::List(blocks)),
    ])
}

fn event(action: &str, addr: i128, size: i128) -> Py {
    dict(vec![
        ("action", s(action)),
        ("addr", Py::Int(addr)),
        ("size", Py::Int(size)),
        ("stream", Py::Int(0)),
        ("frames", Py::List(vec![])),
    ])
}

/// Segment A (device 0, 48 MiB, stream 0): a 20 MiB active block (512 bytes of rounding,
/// frames inner `torch/nn.py:5:linear`, outer `/home/u/train.py:10:main`), an 8 MiB inactive
/// block with a stale request, a 20 MiB active block with 10 MiB requested and no frames.
/// Segment B (device 0, 2 MiB, stream 7): one pending-free block, a Windows path and a `;` in
/// a name, under a filtered `PyEval_` frame. Segment C (device 1, 1 MiB): one inactive block.
fn snapshot() -> Snapshot {
    let seg_a = segment(
        0,
        A,
        0,
        30 * MIB - 512,
        vec![
            block(
                20 * MIB,
                20 * MIB - 512,
                "active_allocated",
                vec![
                    frame("/usr/lib/torch/nn.py", 5, "linear"),
                    frame("/home/u/train.py", 10, "main"),
                ],
            ),
            block(
                8 * MIB,
                999_999_999,
                "inactive",
                vec![frame("/a/stale.py", 1, "old")],
            ),
            block(20 * MIB, 10 * MIB, "active_allocated", vec![]),
        ],
    );
    let seg_b = segment(
        0,
        B,
        7,
        2 * MIB,
        vec![block(
            2 * MIB,
            2 * MIB,
            "active_pending_free",
            vec![
                frame("C:\\x\\y.py", 3, "f;g"),
                frame("Python/ceval.c", 0, "PyEval_EvalFrame"),
            ],
        )],
    );
    let seg_c = segment(
        1,
        0x3000_0000,
        0,
        0,
        vec![block(MIB, 0, "inactive", vec![])],
    );
    let mut oom = event("oom", 0, 1024);
    if let Py::Dict(p) = &mut oom {
        p.push(("device_free".to_string(), Py::Int(2048)));
    }
    let trace = vec![
        event("segment_alloc", A, 48 * MIB),
        event("alloc", A + 1024, 512),
        event("alloc", B + 16, 64),
        event("alloc", 0x9000, 8),
        event("free_requested", A + 1024, 512),
        event("free_completed", A + 1024, 512),
        event("alloc", A + 1024, 256),
        event("segment_free", A, 48 * MIB),
        oom,
        event("free_completed", 0x7777, 4),
        event("segment_map", 5, 6),
    ];
    pickle(&dict(vec![
        ("segments", Py::List(vec![seg_a, seg_b, seg_c])),
        (
            "device_traces",
            Py::List(vec![Py::List(trace), Py::List(vec![])]),
        ),
    ]))
}

fn text(f: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut v = Vec::new();
    f(&mut v).expect("write to a Vec");
    String::from_utf8(v).expect("utf-8")
}

#[test]
fn segments_lines_have_free_and_gaps_frames_and_add_up_per_segment() {
    let snap = snapshot();
    let got = text(|w| write_reserved(w, &snap, None, ReservedBy::Segment));
    let want = "\
stream_0;seg_268435456;active_allocated;train.py:10:main;nn.py:5:linear 20971008
stream_0;seg_268435456;active_allocated;<gaps> 512
stream_0;seg_268435456;inactive;<free> 8388608
stream_0;seg_268435456;active_allocated;<non-python> 10485760
stream_0;seg_268435456;active_allocated;<gaps> 10485760
stream_7;seg_536870912;active_pending_free;y.py:3:f\u{FF1B}g 2097152
stream_0;seg_805306368;inactive;<free> 1048576
";
    assert_eq!(got, want);
    // Per segment, the counts add up to total_size.
    for (i, seg) in snap.segments.iter().enumerate() {
        let mut sum = 0;
        for_each_reserved(&snap, None, |si, _, _, _, _, v| {
            if si == i {
                sum += v;
            }
        });
        assert_eq!(sum, seg.total_size, "segment {i}");
    }
    let mem = text(|w| write_reserved(w, &snap, Some(0), ReservedBy::Stream));
    assert!(mem.starts_with("stream_0;active_allocated;train.py:10:main;nn.py:5:linear 20971008\n"));
    assert_eq!(mem.lines().count(), 6, "{mem}");
    assert!(!mem.contains("805306368") && !mem.contains("seg_"));
}

#[test]
fn entries_sum_per_stack_and_state() {
    let snap = snapshot();
    let e = reserved_entries(&snap, Some(0), ReservedBy::Stream);
    // The two gaps lines of stream 0 (same state, same marker) are one entry.
    let gaps: Vec<_> = e
        .iter()
        .filter(|x| x.0.last().map(String::as_str) == Some(GAPS))
        .collect();
    assert_eq!(gaps.len(), 1);
    assert_eq!(gaps[0].0, ["stream_0", "active_allocated", "<gaps>"]);
    assert_eq!(gaps[0].1, 512 + 10 * (1 << 20));
    let total: u64 = e.iter().map(|x| x.1).sum();
    assert_eq!(total, 50 << 20);
    assert!(is_marker_frame(FREE) && is_marker_frame(GAPS) && is_marker_frame("inactive"));
    assert!(!is_marker_frame("main") && !is_marker_frame(NON_PYTHON));
}

#[test]
fn stats_follow_segsum() {
    let snap = snapshot();
    let st = stats(&snap, None);
    // Sorted by total size: C (1 MiB), B (2 MiB), A (48 MiB).
    let order: Vec<usize> = st.segments.iter().map(|s| s.index).collect();
    assert_eq!(order, [2, 1, 0]);
    let a = &st.segments[2];
    assert_eq!(a.allocated, 30 * (1 << 20) - 512);
    assert_eq!(a.free_internal, 512 + 10 * (1 << 20));
    assert_eq!(a.free_external, 8 << 20);
    assert_eq!(a.body, "ab ");
    for s in &st.segments {
        assert_eq!(
            s.allocated + s.free_internal + s.free_external,
            s.total_size
        );
    }
    assert_eq!(st.total_reserved, 51 << 20);
    assert_eq!(
        st.total_allocated + st.free_internal + st.free_external,
        st.total_reserved
    );
    let out = text(|w| write_stats(w, &st));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "Summary of segments >= 20.0MiB in size");
    assert_eq!(
        lines[1],
        "[ab ] 48.0MiB allocated, 18.0MiB (55.6% internal) free"
    );
    assert_eq!(lines[2], "segments: 3");
    assert_eq!(lines[3], "total_reserved: 51.0MiB");
    assert_eq!(lines[4], "total_allocated: 30.0MiB");
    assert!(
        lines[5].starts_with("total_free: 21.0MiB ("),
        "{}",
        lines[5]
    );
    assert!(out.ends_with(LEGEND));
    assert_eq!(stats(&snap, Some(1)).segments.len(), 1);
}

#[test]
fn page_characters() {
    let p = PAGE_SIZE;
    assert_eq!(page_body(p, &[(0, p / 2), (p / 2, p / 4)]), "7");
    assert_eq!(page_body(p, &[(0, p / 2), (p / 2, p / 2)]), "*");
    assert_eq!(page_body(3 * p, &[(p, 2 * p)]), " aa");
    assert_eq!(page_body(2 * p, &[(0, p / 10)]), "a ");
    assert_eq!(page_body(0, &[]), "");
    // A huge segment is cut, not allocated.
    let huge = page_body(u64::MAX, &[(u64::MAX - 5, 5)]);
    assert!(huge.ends_with('…') && huge.chars().count() == MAX_PAGES as usize + 1);
    let many: Vec<(u64, u64)> = (0..30).map(|i| (i * p, p)).collect();
    let body = page_body(30 * p, &many);
    assert_eq!(&body[..26], "abcdefghijklmnopqrstuvwxyz");
    assert_eq!(&body[26..], "abcd");
}

#[test]
fn trace_listing() {
    let snap = snapshot();
    let out = text(|w| write_trace(w, &snap, None));
    let want = "\
Device 0 ----------------
11 entries
a = cudaMalloc(268435456, 48.0MiB)
b = a[1024:512.0B]
c = seg_1[16:64.0B]
d = MEM[36864:8.0B]
del b # 512.0B
# free completed for b 512.0B
e = a[1024:256.0B]
cudaFree(a) # 48.0MiB
raise OutOfMemoryError # 1.0KiB requested, 2.0KiB free in CUDA
# free completed for 30583 4.0B
{'action': 'segment_map', 'addr': 5, 'size': 6, 'stream': 0}
TOTAL MEM: 324.0B
";
    assert_eq!(out, want);
    let d1 = text(|w| write_trace(w, &snap, Some(1)));
    assert_eq!(
        d1,
        "Device 1 ----------------\n0 entries\nTOTAL MEM: 0.0B\n"
    );
    assert_eq!(trace_name(0), "a");
    assert_eq!(trace_name(25), "z");
    assert_eq!(trace_name(26), "a1");
    assert_eq!(trace_name(53), "b2");
    assert_eq!(py_bytes(-2048), "-2.0KiB");
}

#[test]
fn legacy_history_blocks() {
    let hist = |size: i128, frames: Option<Vec<Py>>| {
        let mut p = vec![("addr", Py::Int(A)), ("real_size", Py::Int(size))];
        if let Some(f) = frames {
            p.push(("frames", Py::List(f)));
        }
        dict(p)
    };
    let b = dict(vec![
        ("size", Py::Int(512)),
        ("state", s("active_allocated")),
        (
            "history",
            Py::List(vec![
                hist(100, Some(vec![frame("/m/x.py", 1, "h")])),
                hist(50, None),
            ]),
        ),
    ]);
    let seg = dict(vec![
        ("device", Py::Int(0)),
        ("address", Py::Int(A)),
        ("total_size", Py::Int(1024)),
        ("allocated_size", Py::Int(512)),
        ("active_size", Py::Int(512)),
        ("stream", Py::Int(0)),
        ("blocks", Py::List(vec![b])),
    ]);
    let snap = pickle(&dict(vec![
        ("segments", Py::List(vec![seg])),
        ("device_traces", Py::List(vec![])),
    ]));
    let got = text(|w| write_reserved(w, &snap, None, ReservedBy::Stream));
    assert_eq!(
        got,
        "stream_0;active_allocated;x.py:1:h 100\nstream_0;active_allocated;<no-context> 50\n\
         stream_0;active_allocated;<gaps> 362\nstream_0;<unaccounted> 512\n"
    );
}
