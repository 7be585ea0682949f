//! Plot instances in data space (x = timesteps, y = bytes): every element drawn.
//!
//! - **Static scene** (at most [`STATIC_MAX_POINTS`] polyline points): every `Layout::pieces(e)`
//!   once, split at tile boundaries of a 16 × 16 grid over the trace and grouped per tile, each
//!   tile a batch whose `f64` origin is its lower-left corner. Built and uploaded once per
//!   device; a frame only changes the view uniform. Tiling bounds each batch's extent, which is
//!   what the zoom cap is computed from (memviz-render's precision rule).
//! - **Windowed scene** (larger traces, compact layouts): built around the camera window
//!   widened by half a window on each side (clamped to the data), in 16 x tiles, when the
//!   camera settles; frames in between draw the previous batches. Zoomed in, it is
//!   [`build_windowed`] (every element's `Layout::clipped_points`, one column per device pixel,
//!   bottoms simplified to half a pixel, culled in y); with [`COLUMN_LOD_STEPS_PER_PX`] or more
//!   timesteps per pixel, [`build_columns`] (one stack sample per CSS-pixel column, runs at
//!   least a pixel tall, merged across columns), whose size depends on the canvas only.
//!
//! Every batch carries its data bounding box; the GPU side skips batches outside the view.
//! Measured on llvmpipe (2 busy cores), a frame costs about 0.3–0.5 µs per drawn instance, which is
//! what sets [`STATIC_MAX_POINTS`] low: beyond it the pixel-resolution windowed scene is both
//! smaller and cheaper to draw.

use memviz_present::layout::Layout;

use crate::xaxis::{for_each_mapped, map_polyline, Steps, XMap};
use memviz_render::Trapezoid;

mod columns;
pub use columns::{build_columns, build_columns_on};

/// Above this many exact polyline points the viewer uses the windowed scene.
pub const STATIC_MAX_POINTS: u64 = 200_000;
/// Windowed scenes use [`build_columns`] when a device-pixel column spans at least this many
/// timesteps.
pub const COLUMN_LOD_STEPS_PER_PX: f64 = 2.0;
/// Above this many instances a column level of detail is rebuilt with half the columns (one
/// sample per two CSS px): about 40 ms of llvmpipe time.
pub const COLUMN_LOD_BUDGET: usize = 100_000;
/// Tiles per axis of the static scene.
pub const TILES: u32 = 16;

/// Instances relative to an `f64` origin (one `InstanceBatch` once uploaded), with the data
/// bounding box `[x0, x1, y0, y1]` of its contents (for culling).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Batch {
    pub origin: [f64; 2],
    pub instances: Vec<Trapezoid>,
    pub bbox: [f64; 4],
}

impl Batch {
    /// A batch drawn whatever the view (an infinite bounding box), e.g. an overlay.
    #[must_use]
    pub fn unbounded(origin: [f64; 2], instances: Vec<Trapezoid>) -> Self {
        Batch {
            origin,
            instances,
            bbox: [
                f64::NEG_INFINITY,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::INFINITY,
            ],
        }
    }

    /// True when the bounding box meets the data window `x_range × y_range`.
    #[must_use]
    pub fn visible_in(&self, x_range: (f64, f64), y_range: (f64, f64)) -> bool {
        let [x0, x1, y0, y1] = self.bbox;
        let (xl, xh) = (x_range.0.min(x_range.1), x_range.0.max(x_range.1));
        let (yl, yh) = (y_range.0.min(y_range.1), y_range.0.max(y_range.1));
        !self.instances.is_empty() && x1 >= xl && x0 <= xh && y1 >= yl && y0 <= yh
    }
}

/// The plot's batches plus the largest `|data − origin|` per axis over them.
#[derive(Clone, Debug, Default)]
pub struct PlotScene {
    pub batches: Vec<Batch>,
    pub extent: [f64; 2],
    /// The data window a windowed scene covers (`None` for a static scene).
    pub window: Option<[f64; 4]>,
    /// True when x is time (µs, `crate::xaxis`), false for timesteps.
    pub x_time: bool,
    /// Time spent building, ms.
    pub build_ms: f64,
    /// What new colours are painted from ([`PlotScene::recolor`]).
    pub(crate) source: Source,
}

/// What a scene keeps to be recoloured without being built again.
#[derive(Clone, Debug, Default)]
pub(crate) enum Source {
    /// Nothing: rebuild.
    #[default]
    None,
    /// The element of each instance, per batch (static and exact windowed scenes: an
    /// instance's colour is its element's).
    Elements(Vec<Vec<u32>>),
    /// The column level of detail's sampled rows (their colours decide what merges).
    Columns(columns::ColumnRuns),
}

impl PlotScene {
    #[must_use]
    pub fn instance_count(&self) -> usize {
        self.batches.iter().map(|b| b.instances.len()).sum()
    }

    /// True for a column level of detail ([`build_columns`]).
    #[must_use]
    pub fn is_columns(&self) -> bool {
        matches!(self.source, Source::Columns(_))
    }

    /// Bytes kept to recolour the scene (beside its instances).
    #[must_use]
    pub fn recolor_bytes(&self) -> usize {
        match &self.source {
            Source::None => 0,
            Source::Elements(els) => els.iter().map(|e| e.len() * 4).sum(),
            Source::Columns(runs) => runs.bytes(),
        }
    }

    /// Gives the scene the element colours `colors` without building it again: exactly what
    /// a build with `colors` over the same window would give (instances of a column level of
    /// detail may come in another order within a batch). False when the scene keeps nothing
    /// to recolour from (rebuild it).
    pub fn recolor(&mut self, colors: &[u8]) -> bool {
        let start = now_ms();
        match std::mem::take(&mut self.source) {
            Source::None => false,
            Source::Elements(els) => {
                for (b, els) in self.batches.iter_mut().zip(&els) {
                    for (t, &e) in b.instances.iter_mut().zip(els) {
                        t.color = element_color(colors, e);
                    }
                }
                self.source = Source::Elements(els);
                self.build_ms = now_ms() - start;
                true
            }
            Source::Columns(runs) => {
                *self = columns::paint(runs, colors, start);
                true
            }
        }
    }
}

/// Flags of every element piece: a darker top edge, so that adjacent elements of one colour
/// (a stack of same-site allocations, neighbouring segments) stay apart. The renderer fades
/// it out on elements under a few pixels tall.
pub const ELEMENT_FLAGS: u32 = Trapezoid::FLAG_EDGE_TOP;

/// Column runs of one colour are split where an element at least this many rows tall ends, and
/// such a run gets [`ELEMENT_FLAGS`] (a thinner element has no visible edge anyway).
pub const EDGE_MIN_ROWS: u32 = 3;

/// How far odd elements are lightened toward white (0–255): neighbouring elements of one colour
/// (consecutive allocations of one site, the segments of one allocation site or without
/// frames) alternate in lightness, which still shows where the edges fade out (under 4 px).
pub const ALTERNATE_LIGHTEN: u16 = 40;

/// The colour element `e` is drawn in: its colour index's, lightened on odd elements.
#[must_use]
pub fn element_color(colors: &[u8], e: u32) -> u32 {
    let index = colors.get(e as usize).copied().unwrap_or(u8::MAX);
    let [r, g, b, a] = memviz_present::color::rgba(index);
    if e.is_multiple_of(2) {
        return memviz_render::rgba(r, g, b, a);
    }
    let up = |c: u8| (u16::from(c) + (255 - u16::from(c)) * ALTERNATE_LIGHTEN / 255) as u8;
    memviz_render::rgba(up(r), up(g), up(b), a)
}

/// `memviz_present::color` index → render colour.
#[must_use]
pub fn color_u32(index: u8) -> u32 {
    let [r, g, b, a] = memviz_present::color::rgba(index);
    memviz_render::rgba(r, g, b, a)
}

/// A grid of batches over `[x0, x0 + nx·tile_w] × [y0, y0 + ny·tile_h]`; pieces are split at
/// the x tile boundaries (exactly: the bottom is linear) and go to the tile of their lower
/// left corner, relative to the tile's corner.
struct TileGrid {
    x0: f64,
    tile_w: f64,
    nx: u32,
    y0: f64,
    tile_h: f64,
    ny: u32,
    tiles: Vec<Batch>,
    /// The element of each instance per tile, when kept ([`Source::Elements`]).
    elements: Option<Vec<Vec<u32>>>,
    extent: [f64; 2],
}

impl TileGrid {
    fn new(x0: f64, tile_w: f64, nx: u32, y0: f64, tile_h: f64, ny: u32) -> Self {
        let tiles: Vec<Batch> = (0..nx * ny)
            .map(|i| Batch {
                origin: [
                    x0 + f64::from(i % nx) * tile_w,
                    y0 + f64::from(i / nx) * tile_h,
                ],
                instances: Vec::new(),
                bbox: [
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                ],
            })
            .collect();
        TileGrid {
            x0,
            tile_w,
            nx,
            y0,
            tile_h,
            ny,
            elements: Some(vec![Vec::new(); tiles.len()]),
            tiles,
            extent: [0.0; 2],
        }
    }

    /// A piece of `element` from `(xa, ba)` to `(xb, bb)`, `h` high, with `Trapezoid::FLAG_*`
    /// `flags`.
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        xa: f64,
        xb: f64,
        ba: f64,
        bb: f64,
        h: f64,
        color: u32,
        flags: u32,
        element: u32,
    ) {
        if xa.is_nan() || xb.is_nan() || xb <= xa || h.is_nan() {
            return;
        }
        let bottom_at = |x: f64| ba + (bb - ba) * ((x - xa) / (xb - xa));
        let last_x = f64::from(self.nx.saturating_sub(1));
        let last_y = f64::from(self.ny.saturating_sub(1));
        // Walk the tiles by index (not by re-flooring `a`, which rounding can leave in the
        // tile just finished and so drop the rest of a long piece).
        let mut tx = ((xa - self.x0) / self.tile_w).floor().clamp(0.0, last_x);
        let mut a = xa;
        loop {
            let tile_end = if tx >= last_x {
                xb
            } else {
                self.x0 + (tx + 1.0) * self.tile_w
            };
            let b = xb.min(tile_end);
            if b > a {
                let (pa, pb) = (bottom_at(a), bottom_at(b));
                self.push_in_tile(tx, [a, b, pa, pb, h], (color, flags, element), last_y);
            }
            if b >= xb || tx >= last_x {
                break;
            }
            a = a.max(b);
            tx += 1.0;
        }
    }

    /// `[a, b, pa, pb, h]`: from `(a, pa)` to `(b, pb)`, `h` high.
    fn push_in_tile(
        &mut self,
        tx: f64,
        [a, b, pa, pb, h]: [f64; 5],
        (color, flags, element): (u32, u32, u32),
        last_y: f64,
    ) {
        let ty = ((pa.min(pb) - self.y0) / self.tile_h)
            .floor()
            .clamp(0.0, last_y);
        let idx = (ty as usize) * self.nx as usize + tx as usize;
        if let Some(tile) = self.tiles.get_mut(idx) {
            let [ox, oy] = tile.origin;
            let t = Trapezoid::new(
                (a - ox) as f32,
                (b - ox) as f32,
                [(pa - oy) as f32, (pa + h - oy) as f32],
                [(pb - oy) as f32, (pb + h - oy) as f32],
                color,
            )
            .with_flags(flags);
            self.extent[0] = self.extent[0].max((a - ox).abs()).max((b - ox).abs());
            self.extent[1] = self.extent[1]
                .max((pa.min(pb) - oy).abs())
                .max((pa.max(pb) + h - oy).abs());
            let bx = &mut tile.bbox;
            bx[0] = bx[0].min(a);
            bx[1] = bx[1].max(b);
            bx[2] = bx[2].min(pa.min(pb));
            bx[3] = bx[3].max(pa.max(pb) + h);
            tile.instances.push(t);
            if let Some(els) = self.elements.as_mut().and_then(|e| e.get_mut(idx)) {
                els.push(element);
            }
        }
    }

    fn finish(mut self, window: Option<[f64; 4]>, x_time: bool, start: f64) -> PlotScene {
        let source = match self.elements {
            Some(els) => Source::Elements(
                els.into_iter()
                    .zip(&self.tiles)
                    .filter(|(_, t)| !t.instances.is_empty())
                    .map(|(e, _)| e)
                    .collect(),
            ),
            None => Source::None,
        };
        self.tiles.retain(|t| !t.instances.is_empty());
        PlotScene {
            batches: self.tiles,
            extent: self.extent,
            window,
            x_time,
            build_ms: now_ms() - start,
            source,
        }
    }
}

/// Every piece of every element, tiled (see the module docs).
#[must_use]
pub fn build_static(layout: &Layout, colors: &[u8]) -> PlotScene {
    build_static_on(layout, colors, &Steps)
}

/// [`build_static`] on the x axis `xmap` (pieces' ends mapped; a piece mapped to zero width,
/// between events of one time, is not drawn).
#[must_use]
pub fn build_static_on<M: XMap + ?Sized>(layout: &Layout, colors: &[u8], xmap: &M) -> PlotScene {
    let start = now_ms();
    let steps = f64::from(layout.step_count().max(1));
    let x0 = xmap.axis_of_step(0.0);
    let width = xmap.axis_of_step(steps) - x0;
    let peak = (layout.peak_bytes.max(1)) as f64;
    let tile_w = (width / f64::from(TILES)).ceil().max(1.0);
    let tile_h = (peak / f64::from(TILES)).max(1.0);
    let mut grid = TileGrid::new(x0, tile_w, TILES, 0.0, tile_h, TILES);
    for e in 0..layout.element_count() as u32 {
        let color = element_color(colors, e);
        for p in layout.pieces(e) {
            let h = p.height_bytes as f64;
            for_each_mapped(
                (f64::from(p.x0_step), p.bottom0_bytes as f64),
                (f64::from(p.x1_step), p.bottom1_bytes as f64),
                xmap,
                |xa, xb, ba, bb| grid.push(xa, xb, ba, bb, h, color, ELEMENT_FLAGS, e),
            );
        }
    }
    grid.finish(None, xmap.is_time(), start)
}

/// The pieces inside `window = [x0, x1, y0, y1]` at `columns` columns over its width, bottoms
/// simplified to `y_tol` bytes (half a device pixel; see the module docs), in [`TILES`] x tiles. Elements entirely above or below the window are skipped.
#[must_use]
pub fn build_windowed(
    layout: &Layout,
    colors: &[u8],
    window: [f64; 4],
    columns: u32,
    y_tol: f64,
) -> PlotScene {
    build_windowed_on(layout, colors, window, columns, y_tol, &Steps)
}

/// [`build_windowed`] on the x axis `xmap`: `window`'s x in the axis's unit, every point mapped
/// before it is simplified.
#[must_use]
pub fn build_windowed_on<M: XMap + ?Sized>(
    layout: &Layout,
    colors: &[u8],
    window: [f64; 4],
    columns: u32,
    y_tol: f64,
    xmap: &M,
) -> PlotScene {
    let start = now_ms();
    let [wx0, wx1, wy0, wy1] = window;
    let (sx0, sx1) = (xmap.step_of_axis(wx0), xmap.step_of_axis(wx1));
    let col_w = ((wx1 - wx0) / f64::from(columns.max(1))).max(1e-9);
    let col = |x: f64| ((x - wx0) / col_w).floor();
    let tile_w = ((wx1 - wx0) / f64::from(TILES)).max(1e-6);
    let mut grid = TileGrid::new(wx0, tile_w, TILES, wy0.max(0.0), (wy1 - wy0).max(1.0), 1);
    let mut kept: Vec<(f64, f64)> = Vec::new();
    for e in 0..layout.element_count() as u32 {
        let Some((s, t)) = layout.span(e) else {
            continue;
        };
        if f64::from(t) <= sx0 || f64::from(s) >= sx1 {
            continue;
        }
        let h = layout.height_bytes(e) as f64;
        let pts = map_polyline(&layout.clipped_points(e, sx0, sx1), xmap);
        // y culling on the polyline's bottoms.
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for &(_, b) in &pts {
            lo = lo.min(b);
            hi = hi.max(b);
        }
        if pts.is_empty() || lo > wy1 || hi + h < wy0 {
            continue;
        }
        simplify_into(&pts, col, y_tol, &mut kept);
        let color = element_color(colors, e);
        for w in kept.windows(2) {
            let (Some(&(xa, ba)), Some(&(xb, bb))) = (w.first(), w.get(1)) else {
                continue;
            };
            if ba.min(bb) > wy1 || ba.max(bb) + h < wy0 {
                continue;
            }
            grid.push(xa, xb, ba, bb, h, color, ELEMENT_FLAGS, e);
        }
    }
    grid.finish(Some(window), xmap.is_time(), start)
}

/// The points of a polyline (x ascending, in the axis's unit) a windowed scene draws, into
/// `kept`. A point is kept when it starts a new column (`col`) *and* its bottom moved by at least
/// `y_tol` since the last kept point; the point before such a move is kept too (when it is in
/// another column), so flat runs stay flat and steps stay sharp. On the time axis a slide takes
/// no time (its points share an x): its first point is kept even so, else the line would run
/// from the last kept point straight to the slide's end, across whatever idle time came before.
fn simplify_into(
    pts: &[(f64, f64)],
    col: impl Fn(f64) -> f64,
    y_tol: f64,
    kept: &mut Vec<(f64, f64)>,
) {
    kept.clear();
    let last = pts.len().saturating_sub(1);
    let mut pending: Option<(f64, f64)> = None;
    for (i, &p) in pts.iter().enumerate() {
        let Some(&(kx, ky)) = kept.last() else {
            kept.push(p);
            continue;
        };
        if i != last && (col(p.0) == col(kx) || (p.1 - ky).abs() < y_tol) {
            pending = Some(p);
            continue;
        }
        if let Some(q) = pending.take() {
            if col(q.0) != col(kx) && q.0 <= p.0 {
                kept.push(q);
            }
        }
        kept.push(p);
    }
}

/// A clock for platforms without `std::time` (wasm32): the embedder installs one with
/// [`set_clock`] (the browser's `performance.now`).
static CLOCK: std::sync::OnceLock<fn() -> f64> = std::sync::OnceLock::new();

/// Installs the millisecond clock [`now_ms`] uses on wasm32 (first call wins).
pub fn set_clock(clock: fn() -> f64) {
    let _ = CLOCK.set(clock);
}

/// Milliseconds from an arbitrary origin: `std::time` natively; on wasm32 the clock installed
/// with [`set_clock`], else 0.
#[must_use]
pub fn now_ms() -> f64 {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use std::sync::OnceLock;
        use std::time::Instant;
        static T0: OnceLock<Instant> = OnceLock::new();
        T0.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
    }
    #[cfg(target_arch = "wasm32")]
    {
        CLOCK.get().map_or(0.0, |clock| clock())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The drawn line of a polyline kept by [`simplify_into`], at `x` (linear between points).
    fn line_at(kept: &[(f64, f64)], x: f64) -> f64 {
        let i = kept.partition_point(|p| p.0 <= x).clamp(1, kept.len() - 1);
        let ((xa, ya), (xb, yb)) = (kept[i - 1], kept[i]);
        if xb <= xa {
            return yb;
        }
        ya + (yb - ya) * (x - xa) / (xb - xa)
    }

    /// On the time axis a slide after a long idle stretch stays a step at its time: the line
    /// does not run across the idle time (it did when the slide's first point, which shares
    /// the slide's x, was dropped).
    #[test]
    fn a_slide_after_idle_time_stays_a_step() {
        // Flat at 100 from x 0, idle until x 500, where it drops to 40 at once; flat after.
        let pts = [
            (0.0, 100.0),
            (3.0, 100.0),
            (500.0, 100.0),
            (500.0, 40.0),
            (900.0, 40.0),
        ];
        let mut kept = Vec::new();
        simplify_into(&pts, |x| (x / 10.0).floor(), 0.5, &mut kept);
        for x in [1.0, 250.0, 499.0] {
            assert_eq!(line_at(&kept, x), 100.0, "x {x}: {kept:?}");
        }
        assert_eq!(line_at(&kept, 700.0), 40.0, "{kept:?}");
        // In event order a slide spans steps: the same rule keeps its start.
        let pts = [(0.0, 100.0), (500.0, 100.0), (503.0, 40.0), (900.0, 40.0)];
        simplify_into(&pts, |x| (x / 10.0).floor(), 0.5, &mut kept);
        assert_eq!(line_at(&kept, 499.0), 100.0, "{kept:?}");
        assert_eq!(line_at(&kept, 600.0), 40.0, "{kept:?}");
    }

    /// A long piece split over every tile covers its whole width (rounding at tile edges once
    /// dropped everything after the first split).
    #[test]
    fn long_pieces_cover_every_tile() {
        let x0 = 1_714.522_853_957_635_6;
        let tile_w = 20_302.666_666_666_668 / 16.0;
        let mut grid = TileGrid::new(x0, tile_w, TILES, 4.2e9, 1.6e10, 1);
        let xb = x0 + 16.0 * tile_w;
        grid.push(x0, xb, 5e9, 5e9, 1e9, 1, 0, 0);
        grid.push(x0 + 0.3, xb - 0.7, 6e9, 7e9, 1e9, 2, 0, 1);
        let scene = grid.finish(None, false, 0.0);
        assert_eq!(scene.batches.len(), 16);
        for color in [1u32, 2] {
            let width: f64 = scene
                .batches
                .iter()
                .flat_map(|b| b.instances.iter())
                .filter(|t| t.color == color)
                .map(|t| f64::from(t.x1) - f64::from(t.x0))
                .sum();
            let want = if color == 1 { xb - x0 } else { xb - x0 - 1.0 };
            assert!((width - want).abs() < 1e-2, "{color}: {width} vs {want}");
        }
    }
}
