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
    use crate::versions::NO_VERSION;
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

#[test]
fn new_segment_verdicts() {
    const MIB: u64 = 1 << 20;
    assert_eq!(segment_size_for(512), 2 * MIB);
    assert_eq!(segment_size_for(MIB), 2 * MIB);
    assert_eq!(segment_size_for(MIB + 1), 20 * MIB);
    assert_eq!(segment_size_for(10 * MIB - 1), 20 * MIB);
    assert_eq!(segment_size_for(10 * MIB), 10 * MIB);
    assert_eq!(segment_size_for(11 * MIB + 1), 12 * MIB);
    assert_eq!(segment_size_for(u64::MAX), u64::MAX);
    // Issue 14's contradiction: nothing free in the cache, 12 MiB free on the device, 6 MiB
    // requested. The request needs a new 20 MiB segment, which does not fit.
    let empty = State::default();
    let r = explain_oom(&empty, 0, 6 * MIB, Some(12 * MIB), 0, (0, 0));
    assert_eq!(r.kind, "out_of_memory");
    assert!(
        r.verdict.contains("needs a new segment of 20.0MiB"),
        "{}",
        r.verdict
    );
    assert!(
        r.verdict.contains("12.0MiB free on the device"),
        "{}",
        r.verdict
    );
    assert!(!r.verdict.contains("neither alone"), "{}", r.verdict);
    // The device has room for the new segment: the segment's allocation failed otherwise.
    let r = explain_oom(&empty, 0, 6 * MIB, Some(30 * MIB), 0, (0, 0));
    assert_eq!(r.kind, "allocation_failed");
    assert!(
        r.verdict.contains("enough for the new 20.0MiB segment"),
        "{}",
        r.verdict
    );
    // Cached free bytes plus the device's would hold the new segment.
    let s = state(&[(0, 5 * MIB, 0)], &[]);
    let r = explain_oom(&s, 0, 6 * MIB, Some(16 * MIB), 0, (0, 0));
    assert_eq!(r.kind, "fragmentation");
    assert!(
        r.verdict.contains("releasing cached segments"),
        "{}",
        r.verdict
    );
    // Neither the device nor the cache alone holds the request: unchanged.
    let r = explain_oom(&s, 0, 6 * MIB, Some(2 * MIB), 0, (0, 0));
    assert!(
        r.verdict.starts_with("Memory held in the cache"),
        "{}",
        r.verdict
    );
}

/// A deterministic pseudo-random sequence (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n.max(1)
    }
}

/// A device-0 snapshot with random final segments and blocks and a random trace of block,
/// segment and oom events over a few addresses (`overlap`: block and segment sizes that
/// overlap their neighbours).
fn random_snapshot(seed: u64, overlap: bool) -> Snapshot {
    use memviz_snapshot::{Action, Block, BlockState, Column, DeviceTrace, Segment, NO_STR};
    let mut rng = Lcg(seed);
    let mut snap = crate::test_util::empty_snapshot();
    const SEG: u64 = 0x1000;
    let streams = [0u64, 7];
    for i in 0..6u64 {
        let address = 0x10_0000 + i * SEG * 2;
        let total = if overlap && rng.next(3) == 0 {
            SEG * 3
        } else {
            SEG
        };
        let first = snap.blocks.len() as u32;
        let mut at = address;
        while at < address + total {
            let size = if overlap {
                64 * (1 + rng.next(12))
            } else {
                256
            };
            let state = match rng.next(4) {
                0 => BlockState::Inactive,
                1 => BlockState::ActivePendingFree,
                _ => BlockState::ActiveAllocated,
            };
            snap.blocks.push(Block {
                address: at,
                size,
                requested_size: size - rng.next(2) * 16,
                state,
                stack: StackId::EMPTY,
                history: (0, 0),
            });
            at += if overlap { 64 * (1 + rng.next(8)) } else { 256 };
        }
        snap.segments.push(Segment {
            device: 0,
            address,
            total_size: total,
            allocated_size: 0,
            active_size: 0,
            requested_size: 0,
            stream: streams[rng.next(2) as usize],
            segment_type: NO_STR,
            pool_id: (0, rng.next(2) as i64),
            is_expandable: false,
            stack: StackId::EMPTY,
            blocks: (first, snap.blocks.len() as u32),
        });
    }
    let n = 400;
    let (mut actions, mut addrs, mut sizes, mut stream) = (vec![], vec![], vec![], vec![]);
    let mut device_free = Vec::new();
    let mut pools = Vec::new();
    let block_addr = |rng: &mut Lcg| 0x10_0000 + rng.next(12) * SEG + rng.next(16) * 256;
    while actions.len() < n {
        let row = actions.len() as u32;
        let s = streams[rng.next(2) as usize];
        let (a, addr, size) = match rng.next(16) {
            0..=4 => (Action::Alloc, block_addr(&mut rng), 64 * (1 + rng.next(8))),
            5..=7 => {
                let addr = block_addr(&mut rng);
                actions.push(Action::FreeRequested);
                addrs.push(addr);
                sizes.push(256);
                stream.push(s);
                (Action::FreeCompleted, addr, 256)
            }
            8 => (Action::FreeCompleted, block_addr(&mut rng), 256),
            9 => (Action::FreeRequested, block_addr(&mut rng), 256),
            10 => (Action::SegmentAlloc, 0x10_0000 + rng.next(12) * SEG, SEG),
            11 => (Action::SegmentFree, 0x10_0000 + rng.next(12) * SEG, SEG),
            12 => (Action::SegmentMap, block_addr(&mut rng), 512),
            13 => (Action::SegmentUnmap, block_addr(&mut rng), 512),
            _ => {
                device_free.push((row, rng.next(4) * 512));
                if rng.next(3) == 0 {
                    pools.push((row, (0, 1)));
                }
                (Action::Oom, 0, 64 * (1 + rng.next(12)))
            }
        };
        actions.push(a);
        addrs.push(addr);
        sizes.push(size);
        stream.push(s);
    }
    let stacks = vec![StackId::EMPTY; actions.len()];
    let mut tr = DeviceTrace::from_columns(&actions, &addrs, &sizes, &[], &stacks);
    tr.stream = Column::Full(stream);
    tr.device_free = device_free;
    tr.pool_id = pools;
    snap.traces = vec![tr];
    snap
}

/// [`OomScan`]'s one backward pass gives exactly the reports of each `oom` event's own state
/// (rebuilt from the checkpoints and explained by [`explain_oom`]), with and without
/// overlapping blocks and segments.
#[test]
fn oom_scan_matches_each_state() {
    let mut reports = 0;
    for seed in 0..60 {
        for overlap in [false, true] {
            let snap = random_snapshot(seed, overlap);
            let h = History::build(&snap, 0, 7);
            let slow = h.oom_reports_each(&snap);
            let fast: Vec<OomReport> = OomScan::new(&snap, 0)
                .expect("within the work limit")
                .into_iter()
                .collect();
            assert_eq!(fast, slow, "seed {seed}, overlap {overlap}");
            reports += fast.len();
        }
    }
    assert!(reports > 1000, "{reports} reports compared");
}

/// [`OomScanError`]'s sentences (the CLI prints them after the file's name).
#[test]
fn oom_scan_errors_read_as_sentences() {
    let e = OomScanError::NoMemory {
        device: 1,
        what: "reports",
        ooms: 3,
    };
    assert_eq!(
        e.to_string(),
        "device 1: not enough memory for the reports of its 3 oom events"
    );
    let e = OomScanError::TooMuchWork {
        device: 0,
        ooms: 10,
    };
    assert!(
        e.to_string().starts_with(
            "device 0: explaining its 10 oom events would take more than 134217728 steps"
        ),
        "{e}"
    );
}
