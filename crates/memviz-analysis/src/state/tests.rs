//! Unit tests of the state module.
use super::*;

fn state(segs: &[(u64, u64, u64)], blocks: &[(u64, u64)]) -> State {
    let mut s = State::default();
    for &(a, size, stream) in segs {
        s.insert_segment(
            a,
            Seg {
                size,
                stream,
                pool: (0, 0),
                src: Src::UNKNOWN,
            },
        );
    }
    for &(a, size) in blocks {
        s.insert_block(
            a,
            Blk {
                size,
                requested: size,
                pending: false,
                src: Src::UNKNOWN,
            },
        );
    }
    s
}

fn ev(row: u32, kind: Kind, addr: u64, size: u64) -> Event {
    Event {
        row,
        kind,
        addr,
        size,
        stream: 0,
        stack: StackId(0),
        pool: (0, 0),
    }
}

/// Expandable segments: which label (source) each range keeps.
#[test]
fn expandable_labels() {
    let mut s = State::default();
    let final_seg = |size| Seg {
        size,
        stream: 0,
        pool: (0, 0),
        src: Src::final_index(0),
    };
    s.insert_segment(1000, final_seg(100));
    // Undoing an unmap of [1100, 1150) that touches [1000, 1100) and [1150, 1200): one
    // segment with the lower one's label.
    s.insert_segment(
        1150,
        Seg {
            src: Src::final_index(1),
            ..final_seg(50)
        },
    );
    s.undo(&ev(7, Kind::SegmentUnmap, 1100, 50));
    assert_eq!(s.segments.len(), 1);
    assert_eq!(
        s.segments.get(&1000).map(|g| (g.size, g.src)),
        Some((200, Src::final_index(0)))
    );
    assert_eq!(s.reserved_bytes, 200);
    // Only the next one touches: the restored (lower) range's own label.
    s.undo(&ev(8, Kind::SegmentUnmap, 900, 100));
    assert_eq!(s.segments.len(), 1);
    assert_eq!(
        s.segments.get(&900).map(|g| (g.size, g.src)),
        Some((300, Src::row(8)))
    );
    // Undoing a map: from the front keeps the label; a split's upper part takes the event's.
    s.undo(&ev(10, Kind::SegmentMap, 900, 50));
    assert_eq!(
        s.segments.get(&950).map(|g| (g.size, g.src)),
        Some((250, Src::row(8)))
    );
    s.undo(&ev(11, Kind::SegmentMap, 1000, 50));
    assert_eq!(
        s.segments.get(&950).map(|g| (g.size, g.src)),
        Some((50, Src::row(8)))
    );
    assert_eq!(
        s.segments.get(&1050).map(|g| (g.size, g.src)),
        Some((150, Src::row(11)))
    );
    // From the back: the segment keeps its label.
    s.undo(&ev(12, Kind::SegmentMap, 1150, 50));
    assert_eq!(
        s.segments.get(&1050).map(|g| (g.size, g.src)),
        Some((100, Src::row(11)))
    );
    assert_eq!(s.segments.len(), 2);
    assert_eq!(s.reserved_bytes, 150);
    assert_eq!(s.inconsistencies, 0);
}

#[test]
fn src_packing() {
    assert_eq!(Src::row(5).get(), Source::Row(5));
    assert_eq!(Src::final_index(5).get(), Source::Final(5));
    assert_eq!(Src::row(u32::MAX).get(), Source::Unknown);
    assert_eq!(Src::row((1 << 31) - 1).get(), Source::Row((1 << 31) - 1));
    assert_eq!(Src::final_index(usize::MAX).get(), Source::Unknown);
    assert_eq!(Src::final_index((1 << 31) - 1).get(), Source::Unknown);
    assert_eq!(
        Src::final_index((1 << 31) - 2).get(),
        Source::Final((1 << 31) - 2)
    );
    assert_eq!(std::mem::size_of::<Blk>(), 24);
    assert_eq!(std::mem::size_of::<Seg>(), 40);
}

#[test]
fn free_ranges_are_the_gaps() {
    let s = state(&[(1000, 100, 0)], &[(1010, 20), (1050, 10)]);
    assert_eq!(s.free_ranges(1000), [(1000, 10), (1030, 20), (1060, 40)]);
    assert_eq!(s.free_ranges(5), []);
}

#[test]
fn oom_verdicts() {
    // Two segments of 100 on stream 0, each with 60 free in gaps of 30: 120 free in all.
    let s = state(
        &[(0, 100, 0), (1000, 100, 0), (5000, 500, 7)],
        &[(0, 20), (50, 20), (1000, 20), (1050, 20), (5000, 500)],
    );
    let r = explain_oom(&s, 3, 100, Some(0), 0, (0, 0));
    assert_eq!(
        (r.reserved_free_bytes, r.largest_free_block_bytes),
        (120, 30)
    );
    assert_eq!(r.kind, "fragmentation");
    assert!(r.verdict.starts_with("Fragmentation"), "{}", r.verdict);
    assert_eq!(r.biggest_live.first(), Some(&(5000, 500)));
    let r = explain_oom(&s, 3, 200, Some(100), 0, (0, 0));
    assert!(
        r.verdict.starts_with("Memory held in the cache"),
        "{}",
        r.verdict
    );
    let r = explain_oom(&s, 3, 1000, Some(100), 0, (0, 0));
    assert_eq!(r.kind, "out_of_memory");
    let r = explain_oom(&s, 3, 25, None, 0, (0, 0));
    assert!(r.verdict.starts_with("A free block"), "{}", r.verdict);
    // Another stream's free space is not the request's largest block.
    let r = explain_oom(&s, 3, 25, None, 7, (0, 0));
    assert_eq!(r.largest_free_block_bytes, 0);
}

#[test]
fn packed_versions() {
    use crate::tooltip::NO_VERSION;
    for (max, width) in [
        (254u32, 1usize),
        (255, 2),
        (65_534, 2),
        (65_535, 4),
        (70_000, 4),
    ] {
        let v = vec![0, max, NO_VERSION, 3];
        let p = Packed::new(v.clone());
        let w = match &p {
            Packed::U8(_) => 1,
            Packed::U16(_) => 2,
            Packed::U32(_) => 4,
        };
        assert_eq!(w, width, "max {max}");
        let back: Vec<Option<u32>> = (0..5).map(|i| p.get(i)).collect();
        assert_eq!(back, [Some(0), Some(max), Some(NO_VERSION), Some(3), None]);
    }
}
