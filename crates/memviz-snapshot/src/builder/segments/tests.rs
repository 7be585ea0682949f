//! Segments that share one block list: the model stays bounded.

/// A pickle of `m` segments that all share one list of `n` references to one block dict
/// (a few bytes per segment).
fn shared_blocks(m: usize, n: usize) -> Vec<u8> {
    let mut p = vec![0x80, 2, b'}', b'('];
    let s = |p: &mut Vec<u8>, t: &str| {
        p.push(0x8c);
        p.push(t.len() as u8);
        p.extend_from_slice(t.as_bytes());
    };
    s(&mut p, "segments");
    p.extend([b']', b'(']);
    for k in 0..m {
        p.extend([b'}', b'(']);
        s(&mut p, "address");
        p.extend([b'J', 0, 0, 0, 1]);
        s(&mut p, "total_size");
        p.extend([b'M', 0, 2]);
        s(&mut p, "blocks");
        if k == 0 {
            p.extend([b']', b'q', 2, b'(', b'}', b'q', 1, b'(']);
            s(&mut p, "size");
            p.extend([b'M', 0, 2]);
            s(&mut p, "state");
            s(&mut p, "active_allocated");
            p.push(b'u');
            for _ in 1..n {
                p.extend([b'h', 1]);
            }
            p.push(b'e');
        } else {
            p.extend([b'h', 2]);
        }
        p.push(b'u');
    }
    p.push(b'e');
    s(&mut p, "device_traces");
    p.extend([b']', b'(', b']', b'e', b'u', b'.']);
    p
}

#[test]
fn blocks_shared_by_many_segments_stay_bounded() {
    let few = crate::load_slice(&shared_blocks(3, 5));
    let few = few.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(few.segments.len(), 3);
    assert_eq!(few.blocks.len(), 15);
    assert!(few.segments.iter().all(|s| s.blocks.1 - s.blocks.0 == 5));
    // 20 000 segments x 20 000 blocks from under 1 MB: not 400 M blocks.
    let many = crate::load_slice(&shared_blocks(20_000, 20_000));
    let many = many.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(many.segments.len(), 20_000);
    assert!(many.blocks.len() < 100_000, "{}", many.blocks.len());
    assert!(many.warnings.iter().any(|w| w.contains("share blocks")));
}
