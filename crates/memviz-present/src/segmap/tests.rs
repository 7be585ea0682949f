use super::*;
use memviz_analysis::state::{Blk, Src};

fn seg(size: u64) -> Seg {
    Seg {
        size,
        stream: 0,
        pool: (0, 0),
        src: Src::UNKNOWN,
    }
}

fn blk(size: u64, requested: u64, pending: bool) -> Blk {
    Blk {
        size,
        requested,
        pending,
        src: Src::UNKNOWN,
    }
}

/// A snapshot with no segments and no trace (item texts then have `_undefined` versions
/// and the no-frames explanation).
fn empty_snapshot() -> Snapshot {
    memviz_snapshot::load_slice(br#"{"segments": [], "device_traces": []}"#)
        .expect("a minimal snapshot")
}

const A: u64 = 0x1000_0000;

/// SEMANTICS §6.4 after idx 2: one 100-byte segment with A (10/10), A+10 (20/20) and A+30
/// (size 30, requested 25).
fn vector_after_2() -> State {
    let mut s = State::default();
    s.insert_segment(A, seg(100));
    s.insert_block(A, blk(10, 10, false));
    s.insert_block(A + 10, blk(20, 20, false));
    s.insert_block(A + 30, blk(30, 25, false));
    s
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// The topmost rect at a point by brute force: waste, then block, then segment; the later
/// drawn among equals.
fn brute_hit(m: &SegMap, x: f64, y: f64) -> Option<Item> {
    let rank = |i: &Item| match i {
        Item::Waste(_) => 2,
        Item::Block(_) => 1,
        Item::Segment(_) => 0,
    };
    m.rects()
        .enumerate()
        .filter(|(_, r)| r.contains(x, y))
        .max_by_key(|(i, r)| (rank(&r.item), *i))
        .map(|(_, r)| r.item)
}

#[test]
fn vector_rects() {
    let s = vector_after_2();
    let m = SegMap::build(&s);
    assert_eq!((m.rows, m.max_segment_bytes), (1, 100));
    // 2 units per byte.
    let want = [
        (Item::Segment(A), 0.0, 200.0),
        (Item::Block(A), 0.0, 20.0),
        (Item::Block(A + 10), 20.0, 60.0),
        (Item::Block(A + 30), 60.0, 110.0),
        (Item::Waste(A + 30), 110.0, 120.0),
    ];
    assert_eq!(m.rect_count(), want.len());
    for (r, (item, x0, x1)) in m.rects().zip(want) {
        assert_eq!(r.item, item);
        assert!(close(r.x0, x0) && close(r.x1, x1), "{r:?}");
        assert_eq!((r.y0, r.y1), (0.0, 0.8));
    }
    assert_eq!(m.rect(0).map(|r| r.color), Some(WHITE));
    assert_eq!(m.rect(4).map(|r| r.color), Some(RED));
    assert!(m.orphans.is_empty());
    for (i, r) in m.rects().enumerate() {
        assert_eq!(m.rect_of(r.item), m.rect(i));
    }
    assert_eq!(m.rect_of(Item::Waste(A)), None);
    assert_eq!(m.rect_of(Item::Block(A + 1)), None);
}

/// Java-style hashes of decimal addresses, by hand:
/// * `"10"`: h = 31·'1' + '0' = 31·49 + 48 = 1567; 1567 % 10 = 7 → #ff9da7;
/// * `"1000"`: ((49·31 + 48)·31 + 48)·31 + 48 = (1567·31 + 48)·31 + 48 = 48625·31 + 48 =
///   1507423; % 10 = 3 → #76b7b2;
/// * `"268435456"` (A = 0x10000000), chars 50,54,56,52,51,53,52,53,54, each step
///   `h = 31·h + c` read as i32: 50, 1604, 49780, 1543232, 47840243, 1483047586, then
///   1483047586·31 + 52 = 45974475218 ≡ −1270165038, −720410461, −857887757; |h| % 10 = 7
///   → #ff9da7. A + 10 (`"268435466"`) ends …, −720410460, −857887726 → 6 → #af7aa1.
///
/// The test also recomputes every hash independently with i64 arithmetic.
#[test]
fn colors_by_java_hash() {
    assert_eq!(java_hash_decimal(10), 1567);
    assert_eq!(block_color(10), [0xff, 0x9d, 0xa7, 0xff]);
    assert_eq!(java_hash_decimal(1000), 1_507_423);
    assert_eq!(block_color(1000), [0x76, 0xb7, 0xb2, 0xff]);
    // Independent: i64 arithmetic reduced mod 2^32 at every step, then read as i32.
    for addr in [A, A + 10, A + 30, 139_637_976_727_552, u64::MAX] {
        let mut h: i64 = 0;
        for c in addr.to_string().bytes() {
            h = (h * 31 + i64::from(c)).rem_euclid(1 << 32);
        }
        let h32 = if h >= 1 << 31 { h - (1 << 32) } else { h };
        assert_eq!(i64::from(java_hash_decimal(addr)), h32, "{addr}");
        assert_eq!(
            block_color(addr),
            TABLEAU10[(h32.unsigned_abs() % 10) as usize]
        );
    }
    assert_eq!(java_hash_decimal(A), -857_887_757);
    assert_eq!(java_hash_decimal(A + 10), -857_887_726);
    let s = vector_after_2();
    let m = SegMap::build(&s);
    let color = |a| m.rect_of(Item::Block(a)).map(|r| r.color);
    assert_eq!(color(A), Some([0xff, 0x9d, 0xa7, 0xff]));
    assert_eq!(color(A + 10), Some([0xaf, 0x7a, 0xa1, 0xff]));
    let mut s = s;
    s.insert_block(A + 10, blk(20, 20, true));
    let m = SegMap::build(&s);
    assert_eq!(m.rect_of(Item::Block(A + 10)).map(|r| r.color), Some(RED));
}

/// §6.5 packing: sizes ascending then addresses; pad = max / 200 bytes (1 unit); a segment
/// starts a new row when `x + size > max`.
#[test]
fn packing_rows() {
    let mut s = State::default();
    // max = 2000: pad 10 bytes = 1 unit; 0.1 unit per byte.
    for (addr, size) in [
        (9000, 2000),
        (1000, 500),
        (5000, 500),
        (3000, 800),
        (7000, 1000),
        (8000, 300),
    ] {
        s.insert_segment(addr, seg(size));
    }
    let m = SegMap::build(&s);
    // Order: 300@8000, 500@1000, 500@5000, 800@3000, 1000@7000, 2000@9000.
    // Row 0: 8000 at 0 (x = 310), 1000 at 310 (x = 820), 5000 at 820 (x = 1330);
    //        800 does not fit (1330 + 800 > 2000): row 1.
    // Row 1: 3000 at 0 (x = 810), 7000: 810 + 1000 ≤ 2000 at 810 (x = 1820).
    // Row 2: 9000 at 0 (2000 > 2000 − 1820).
    let want = [
        (8000, 0, 0.0, 30.0),
        (1000, 0, 31.0, 81.0),
        (5000, 0, 82.0, 132.0),
        (3000, 1, 0.0, 80.0),
        (7000, 1, 81.0, 181.0),
        (9000, 2, 0.0, 200.0),
    ];
    assert_eq!(m.rows, 3);
    assert_eq!(m.max_segment_bytes, 2000);
    for (r, (addr, row, x0, x1)) in m.rects().zip(want) {
        assert_eq!(r.item, Item::Segment(addr));
        assert_eq!(r.y0, f64::from(row), "{r:?}");
        assert!(close(r.x0, x0) && close(r.x1, x1), "{r:?} want {x0}..{x1}");
    }
    // A block at 7000 + 100 of 200 bytes: x = 81 + 10 units, 20 units wide, row 1.
    s.insert_block(7100, blk(256, 200, false));
    let m = SegMap::build(&s);
    let b = m.rect_of(Item::Block(7100)).expect("block");
    assert!(
        close(b.x0, 91.0) && close(b.x1, 111.0) && b.y0 == 1.0,
        "{b:?}"
    );
    let w = m.rect_of(Item::Waste(7100)).expect("waste");
    assert!(close(w.x0, 111.0) && close(w.x1, 116.6), "{w:?}");
    // Equal sizes order by address; an empty state has one row and nothing drawn.
    let m = SegMap::build(&State::default());
    assert_eq!((m.rows, m.rect_count(), m.max_segment_bytes), (1, 0, 0));
    assert_eq!(m.hit(1.0, 0.1), None);
}

#[test]
fn hit_is_topmost() {
    let s = vector_after_2();
    let m = SegMap::build(&s);
    for r in m.rects() {
        let (x, y) = ((r.x0 + r.x1) / 2.0, (r.y0 + r.y1) / 2.0);
        let want = if let Item::Segment(_) = r.item {
            // The segment's centre (100 units) lies in the block A+30 ([60, 110]).
            Item::Block(A + 30)
        } else {
            r.item
        };
        assert_eq!(m.hit(x, y), Some(want), "{r:?}");
    }
    // Overlapping blocks (an inconsistent state) and a grid of points: the index agrees
    // with a brute-force topmost search everywhere.
    let mut bad = s.clone();
    bad.insert_block(A + 5, blk(40, 30, false));
    bad.insert_block(A + 70, blk(10, 10, true));
    bad.insert_segment(A + 1000, seg(60));
    bad.insert_block(A + 1000, blk(60, 1, false));
    let bad_map = SegMap::build(&bad);
    assert_eq!(bad_map.rows, 2);
    for i in 0..=400 {
        for j in 0..=50 {
            let (x, y) = (f64::from(i) * 0.5 - 0.25, f64::from(j) * 0.05);
            assert_eq!(bad_map.hit(x, y), brute_hit(&bad_map, x, y), "({x}, {y})");
        }
    }
    // Free space of the segment (after the waste at 120 units).
    assert_eq!(m.hit(150.0, 0.4), Some(Item::Segment(A)));
    // Below the rect (the row gap), left, right, above, NaN.
    assert_eq!(m.hit(150.0, 0.9), None);
    assert_eq!(m.hit(-1.0, 0.4), None);
    assert_eq!(m.hit(200.5, 0.4), None);
    assert_eq!(m.hit(10.0, -0.1), None);
    assert_eq!(m.hit(f64::NAN, 0.4), None);
    assert_eq!(m.hit(10.0, 1.2), None);
    // The padding between two segments of a row.
    let mut s = State::default();
    s.insert_segment(0, seg(100));
    s.insert_segment(1000, seg(100));
    s.insert_segment(5000, seg(400));
    let m = SegMap::build(&s);
    // 0.5 units per byte, pad 1 unit: [0, 50], [51, 101]; the gap is (50, 51).
    assert_eq!(m.hit(50.5, 0.5), None);
    assert_eq!(m.hit(49.9, 0.5), Some(Item::Segment(0)));
    assert_eq!(m.hit(51.1, 0.5), Some(Item::Segment(1000)));
    assert_eq!(m.hit(100.0, 1.5), Some(Item::Segment(5000)));
    for r in m.rects() {
        assert_eq!(
            m.hit((r.x0 + r.x1) / 2.0, (r.y0 + r.y1) / 2.0),
            Some(r.item)
        );
    }
}

#[test]
fn orphans_and_overflow_do_not_panic() {
    let mut s = vector_after_2();
    // Outside every segment, and one reaching past the segment's end.
    s.insert_block(5, blk(10, 10, false));
    s.insert_block(A + 90, blk(512, 400, false));
    s.insert_block(u64::MAX - 1, blk(u64::MAX, 1, true));
    let m = SegMap::build(&s);
    assert_eq!(m.orphans, [5, u64::MAX - 1]);
    let outer = m.rect_of(Item::Segment(A)).expect("segment");
    for item in [Item::Block(A + 90), Item::Waste(A + 90)] {
        let r = m.rect_of(item).expect("drawn");
        assert!(r.x0 >= outer.x0 && r.x1 <= outer.x1, "{r:?}");
    }
    let snap = empty_snapshot();
    let ctx = RowContext::new(&snap, 0);
    assert_eq!(
        m.item_text(&snap, &ctx, &s, Item::Block(5))
            .as_deref()
            .and_then(|t| t.lines().next()),
        Some("b5_undefined 10.0B (10 bytes) allocation (outside every segment)")
    );
    assert!(m.item_text(&snap, &ctx, &s, Item::Segment(5)).is_none());
    // Zero-sized segments and a huge one.
    let mut s = State::default();
    s.insert_segment(0, seg(0));
    s.insert_segment(10, seg(0));
    s.insert_segment(u64::MAX - 10, seg(u64::MAX));
    s.insert_block(u64::MAX - 5, blk(u64::MAX, 0, false));
    let m = SegMap::build(&s);
    assert!(m.rects().all(|r| r.x0.is_finite() && r.x1.is_finite()));
    let _ = m.hit(0.0, 0.0);
    for r in m.rects() {
        assert!(m.item_text(&snap, &ctx, &s, r.item).is_some());
    }
}

#[test]
fn texts() {
    let snap = empty_snapshot();
    let ctx = RowContext::new(&snap, 0);
    let explanation = memviz_analysis::frames::NO_FRAMES_EXPLANATION.join("\n");
    let mut s = vector_after_2();
    let m = SegMap::build(&s);
    let text = |m: &SegMap, s: &State, item| m.item_text(&snap, &ctx, s, item).expect("text");
    // occupied 55, internal 5, free 45: 5 / 45 · 100 unrounded.
    assert_eq!(
        text(&m, &s, Item::Segment(A)),
        format!(
            "s10000000_undefined: segment 100.0B (100 bytes) allocated, 45.0B (45 bytes) free (11.11111111111111% internal) (stream 0)\n{explanation}"
        )
    );
    assert_eq!(
        text(&m, &s, Item::Block(A + 30)),
        format!("b1000001e_undefined 25.0B (25 bytes) allocation (stream 0)\n{explanation}")
    );
    assert_eq!(
        text(&m, &s, Item::Waste(A + 30)),
        format!("Free space lost due to rounding 5.0B (5 bytes) (stream 0)\n{explanation}")
    );
    assert!(m.item_text(&snap, &ctx, &s, Item::Waste(A)).is_none());
    assert!(m.item_text(&snap, &ctx, &s, Item::Block(A + 1)).is_none());
    // Pending, and a private pool on the segment; no waste: no percentage.
    s.insert_block(A + 30, blk(25, 25, true));
    if let Some(g) = s.segments.get_mut(&A) {
        g.pool = (1, 2);
    }
    let m = SegMap::build(&s);
    assert!(text(&m, &s, Item::Block(A + 30)).starts_with(
        "b1000001e_undefined 25.0B (25 bytes) allocation (block freed but waiting due to record_stream) (stream 0, pool_id (1, 2))\n"
    ));
    assert!(text(&m, &s, Item::Segment(A)).starts_with(
        "s10000000_undefined: segment 100.0B (100 bytes) allocated, 45.0B (45 bytes) free (stream 0, pool_id (1, 2))\n"
    ));
}

#[test]
fn js_numbers() {
    assert_eq!(js_number(5.0 / 45.0 * 100.0), "11.11111111111111");
    assert_eq!(js_number(50.0), "50");
    assert_eq!(js_number(0.5), "0.5");
    assert_eq!(js_number(6e-7), "6e-7");
    assert_eq!(js_number(1.5e-7), "1.5e-7");
    assert_eq!(js_number(1e21), "1e+21");
    assert_eq!(js_number(1e20), "100000000000000000000");
    assert_eq!(js_number(f64::INFINITY), "Infinity");
    assert_eq!(js_number(0.000001), "0.000001");
}
