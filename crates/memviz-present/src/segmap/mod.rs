//! The Allocator State History's segment map (SEMANTICS.md §6.5): the packing of a [`State`]'s
//! segments into rows, the drawn rectangles (segments, blocks, rounding waste), a hit test and
//! the hover texts.
//!
//! # Units
//! x is in memory_viz's units: bytes scaled by `200 / max segment size`, so the widest segment
//! spans [0, 200] and the padding after every segment is 1 unit (`max / 200` bytes). y is in
//! rows: row `r` occupies [r, r + 0.8] and y grows **down** (row 0 at the top); memory_viz maps
//! [0, rows] to [0, 100] of its SVG. The segments' black 1 px border and the hover stroke are the
//! viewer's business; a [`MapRect`] only has its fill.
//!
//! # Colours
//! Segments are white, blocks `TABLEAU10[|h| % 10]` where `h` is the Java-style 32-bit string hash
//! (`h = 31·h + c`, wrapping) of the block's **decimal** address, pending blocks
//! (`active_pending_free`) and rounding waste red. [`TABLEAU10`] is the ten-colour list that
//! MemoryViz.js defines itself (`schemeTableau10`, the classic Tableau 10 also used by d3).
//!
//! # Where memviz differs from memory_viz (on purpose)
//! * A block outside every segment makes memory_viz throw (nothing is drawn). memviz does not
//!   draw it either, but draws everything else and lists the address in [`SegMap::orphans`];
//!   [`SegMap::item_text`] still describes it (`… (outside every segment)`).
//! * A block (or its waste) reaching past its segment's end is clipped to the segment's rect, so
//!   it never covers the next segment of the row. This only happens in inconsistent states.
//! * Texts show the forward-pass stack (`forward_frames`) of a block's event or final block, as
//!   the timeline tooltip does; memory_viz reads the field but never fills it for this view.
//! * A restored segment keeps the pool id of its event (memory_viz drops it), so a private pool
//!   is shown for it too. Multi-line user metadata is indented line by line, as in
//!   [`crate::tooltip`].
//! * Sizes never go negative (saturating): a segment whose blocks' requested sizes exceed it
//!   shows 0 free, and then an internal share of `Infinity`%, as JavaScript would print it.

mod hit;
mod text;

use hit::Index;
use memviz_analysis::state::{RowContext, Seg, State};
use memviz_snapshot::Snapshot;
// tests.rs checks it through `use super::*`.
#[cfg(test)]
use text::js_number;

/// The §6.4 header `(<allocated> allocated / <reserved> reserved)`, also reachable from here.
pub use memviz_analysis::state::header_text;

/// MemoryViz.js's `schemeTableau10`: #4e79a7 #f28e2c #e15759 #76b7b2 #59a14f #edc949 #af7aa1
/// #ff9da7 #9c755f #bab0ab.
pub const TABLEAU10: [[u8; 4]; 10] = [
    [0x4e, 0x79, 0xa7, 0xff],
    [0xf2, 0x8e, 0x2c, 0xff],
    [0xe1, 0x57, 0x59, 0xff],
    [0x76, 0xb7, 0xb2, 0xff],
    [0x59, 0xa1, 0x4f, 0xff],
    [0xed, 0xc9, 0x49, 0xff],
    [0xaf, 0x7a, 0xa1, 0xff],
    [0xff, 0x9d, 0xa7, 0xff],
    [0x9c, 0x75, 0x5f, 0xff],
    [0xba, 0xb0, 0xab, 0xff],
];
/// Segment fill.
pub const WHITE: [u8; 4] = [255, 255, 255, 255];
/// CSS `red`: pending blocks and rounding waste.
pub const RED: [u8; 4] = [255, 0, 0, 255];
/// Height of a rect in rows (memory_viz: 4/5 of a row).
pub const RECT_HEIGHT: f64 = 0.8;
/// Width of the map in x units.
pub const WIDTH_UNITS: f64 = 200.0;
/// What a pending block's text adds after `allocation` (memory_viz's wording).
pub const PENDING_NOTE: &str = " (block freed but waiting due to record_stream)";
/// What an orphan block's text shows instead of the stream.
pub const ORPHAN_NOTE: &str = " (outside every segment)";

/// One drawn thing of the map, by address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Item {
    /// The segment (or mapped range) at this address.
    Segment(u64),
    /// The live block at this address.
    Block(u64),
    /// The rounding waste of the block at this address (`requested` to `size`).
    Waste(u64),
}

/// A drawn rectangle in map units (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MapRect {
    pub x0: f64,
    pub x1: f64,
    pub y0: f64,
    pub y1: f64,
    pub color: [u8; 4],
    pub item: Item,
}

impl MapRect {
    /// Whether `(x, y)` is inside (left and top edges included, right and bottom excluded).
    #[must_use]
    pub fn contains(&self, x: f64, y: f64) -> bool {
        self.x0 <= x && x < self.x1 && self.y0 <= y && y < self.y1
    }
}

/// A rect as the map keeps it: 32 bytes, where a [`MapRect`] takes 56 (y is the row, the
/// colour a code, the item a kind and an address). The map of a 150 MB tiled real file has
/// 315 k rects: 17.7 MB as `MapRect`s, 10.1 MB as these.
#[derive(Clone, Copy, Debug)]
struct Stored {
    x0: f64,
    x1: f64,
    addr: u64,
    row: u32,
    /// 0 segment, 1 block, 2 waste.
    kind: u8,
    /// `TABLEAU10` index, or [`WHITE_CODE`] / [`RED_CODE`].
    color: u8,
}

const WHITE_CODE: u8 = 10;
const RED_CODE: u8 = 11;

impl Stored {
    fn new(x0: f64, x1: f64, row: u32, color: u8, item: Item) -> Stored {
        let (kind, addr) = match item {
            Item::Segment(a) => (0, a),
            Item::Block(a) => (1, a),
            Item::Waste(a) => (2, a),
        };
        Stored {
            x0,
            x1,
            addr,
            row,
            kind,
            color,
        }
    }

    fn item(&self) -> Item {
        match self.kind {
            0 => Item::Segment(self.addr),
            1 => Item::Block(self.addr),
            _ => Item::Waste(self.addr),
        }
    }

    fn rect(&self) -> MapRect {
        let y0 = f64::from(self.row);
        MapRect {
            x0: self.x0,
            x1: self.x1,
            y0,
            y1: y0 + RECT_HEIGHT,
            color: match self.color {
                WHITE_CODE => WHITE,
                RED_CODE => RED,
                i => TABLEAU10.get(usize::from(i)).copied().unwrap_or(RED),
            },
            item: self.item(),
        }
    }
}

/// A packed [`State`]: rows, rects in draw order and the indexes behind [`SegMap::hit`] and
/// [`SegMap::rect_of`].
#[derive(Clone, Debug, Default)]
pub struct SegMap {
    /// Number of rows (at least 1, as memory_viz's y domain).
    pub rows: u32,
    /// The largest segment's size (the bytes that map to 200 units); 0 without segments.
    pub max_segment_bytes: u64,
    /// In draw order: every segment (in packing order), then every block (address order), then
    /// every rounding-waste rect (address order).
    rects: Vec<Stored>,
    /// Blocks outside every segment (not drawn), address order.
    pub orphans: Vec<u64>,
    /// Segments by address: `(address, rect index)`.
    seg_by_addr: Vec<(u64, u32)>,
    /// Rect index ranges of the blocks and of the waste rects (both address-sorted).
    blocks: (u32, u32),
    wastes: (u32, u32),
    /// Per row: waste, block and segment layers (topmost first).
    index: Index,
}

/// The Java-style 32-bit string hash (`h = 31·h + c`, wrapping) of `addr`'s decimal string, as
/// memory_viz's `hashCode`.
#[must_use]
pub fn java_hash_decimal(addr: u64) -> i32 {
    addr.to_string()
        .bytes()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// `|h| % 10` of the block at `addr` (its index in `TABLEAU10`).
fn block_color_index(addr: u64) -> u8 {
    (i64::from(java_hash_decimal(addr)).unsigned_abs() % 10) as u8
}

/// The fill of a non-pending block at `addr`: `TABLEAU10[|h| % 10]`.
#[must_use]
pub fn block_color(addr: u64) -> [u8; 4] {
    let i = block_color_index(addr);
    TABLEAU10
        .get(usize::from(i))
        .copied()
        .unwrap_or(TABLEAU10[0])
}

/// Where a segment was packed.
#[derive(Clone, Copy, Debug)]
struct Placed {
    addr: u64,
    end: u64,
    /// Bytes from the row start (memory_viz's `offset`, fractional because of the padding).
    offset: f64,
    row: u32,
}

impl SegMap {
    /// §6.5 packing of `state`: x in [0, 200] units (bytes scaled by 200 / max segment size), y
    /// in [0, rows] with row r occupying [r, r + 0.8] (y grows down: row 0 at the top); rects in
    /// draw order: all segments (white), then blocks (Tableau10 by the Java-style hash of the
    /// decimal address; red for pending), then rounding-waste rects (red) from requested to size.
    #[must_use]
    pub fn build(state: &State) -> SegMap {
        let mut segs: Vec<(u64, u64)> = state.segments.iter().map(|(&a, s)| (a, s.size)).collect();
        segs.sort_unstable_by_key(|&(a, size)| (size, a));
        let max = segs.last().map_or(0, |s| s.1);
        let maxf = max as f64;
        // d3's scaleLinear([0, max] → [0, 200]) and its invert(1), in the same float steps.
        let scale = |bytes: f64| {
            if max == 0 {
                0.0
            } else {
                WIDTH_UNITS * (bytes / maxf)
            }
        };
        let pad = maxf * (1.0 / WIDTH_UNITS);

        let mut map = SegMap {
            max_segment_bytes: max,
            ..SegMap::default()
        };
        let wasted = state
            .blocks
            .values()
            .filter(|b| b.size > b.requested)
            .count();
        let mut rects = Vec::with_capacity(segs.len() + state.blocks.len() + wasted);
        let mut placed: Vec<Placed> = Vec::with_capacity(segs.len());
        let mut row = 0u32;
        let mut x = 0.0f64;
        for &(addr, size) in &segs {
            let sizef = size as f64;
            if x + sizef > maxf {
                row = row.saturating_add(1);
                x = 0.0;
            }
            placed.push(Placed {
                addr,
                end: addr.saturating_add(size),
                offset: x,
                row,
            });
            let x0 = scale(x);
            rects.push(Stored::new(
                x0,
                x0 + scale(sizef),
                row,
                WHITE_CODE,
                Item::Segment(addr),
            ));
            x += sizef + pad;
        }
        map.rows = if segs.is_empty() {
            1
        } else {
            row.saturating_add(1)
        };
        map.seg_by_addr = placed
            .iter()
            .enumerate()
            .map(|(i, p)| (p.addr, i as u32))
            .collect();
        map.seg_by_addr.sort_unstable();
        let by_addr: Vec<Placed> = map
            .seg_by_addr
            .iter()
            .filter_map(|&(_, i)| placed.get(i as usize).copied())
            .collect();
        let find = |addr: u64| -> Option<Placed> {
            let i = by_addr.partition_point(|p| p.addr <= addr);
            let p = *by_addr.get(i.checked_sub(1)?)?;
            (addr < p.end).then_some(p)
        };

        // Blocks, then waste; both clipped to their segment's right edge.
        let mut waste: Vec<Stored> = Vec::with_capacity(wasted);
        let block_start = rects.len() as u32;
        for (&addr, b) in &state.blocks {
            let Some(p) = find(addr) else {
                map.orphans.push(addr);
                continue;
            };
            let seg_x1 = scale(p.offset + (p.end - p.addr) as f64);
            let start = p.offset + (addr - p.addr) as f64;
            let x0 = scale(start);
            rects.push(Stored::new(
                x0,
                (x0 + scale(b.requested as f64)).min(seg_x1),
                p.row,
                if b.pending {
                    RED_CODE
                } else {
                    block_color_index(addr)
                },
                Item::Block(addr),
            ));
            if b.size > b.requested {
                let w0 = scale(start + b.requested as f64);
                waste.push(Stored::new(
                    w0.min(seg_x1),
                    (w0 + scale((b.size - b.requested) as f64)).min(seg_x1),
                    p.row,
                    RED_CODE,
                    Item::Waste(addr),
                ));
            }
        }
        map.blocks = (block_start, rects.len() as u32);
        rects.extend(waste);
        map.wastes = (map.blocks.1, rects.len() as u32);
        map.rects = rects;
        map.build_index();
        map
    }

    /// The item's rect (for tests and for the viewer's highlight); `None` when not drawn.
    #[must_use]
    pub fn rect_of(&self, item: Item) -> Option<MapRect> {
        let in_range = |(a, b): (u32, u32), addr: u64| {
            let slice = self.rects.get(a as usize..b as usize)?;
            let i = slice.binary_search_by_key(&addr, |r| r.addr).ok()?;
            slice.get(i).map(Stored::rect)
        };
        match item {
            Item::Segment(addr) => {
                let i = self.seg_by_addr.binary_search_by_key(&addr, |s| s.0).ok()?;
                let (_, r) = *self.seg_by_addr.get(i)?;
                self.rects.get(r as usize).map(Stored::rect)
            }
            Item::Block(addr) => in_range(self.blocks, addr),
            Item::Waste(addr) => in_range(self.wastes, addr),
        }
    }

    /// The rects in draw order: every segment (in packing order), then every block (address
    /// order), then every rounding-waste rect (address order).
    pub fn rects(&self) -> impl DoubleEndedIterator<Item = MapRect> + ExactSizeIterator + '_ {
        self.rects.iter().map(Stored::rect)
    }

    /// Rect `i` of [`SegMap::rects`].
    #[must_use]
    pub fn rect(&self, i: usize) -> Option<MapRect> {
        self.rects.get(i).map(Stored::rect)
    }

    /// Number of rects.
    #[must_use]
    pub fn rect_count(&self) -> usize {
        self.rects.len()
    }

    /// Every drawn item, in draw order.
    pub fn items(&self) -> impl Iterator<Item = Item> + '_ {
        self.rects.iter().map(Stored::item)
    }
}

#[cfg(test)]
mod tests;
