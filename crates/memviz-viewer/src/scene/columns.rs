//! The column level of detail of windowed scenes ([`build_columns`]), in two passes: the
//! stack's rows sampled per column ([`ColumnRuns`], which do not depend on the colours), then
//! painted (rows of one colour merged, across columns too). A highlight repaints the runs kept
//! with the scene ([`super::PlotScene::recolor`]) instead of sampling the stack again.

use memviz_present::layout::Layout;

use super::{color_u32, now_ms, PlotScene, Source, TileGrid, EDGE_MIN_ROWS, ELEMENT_FLAGS, TILES};
use crate::column_stack::ColumnStack;
use crate::xaxis::{Steps, XMap};

/// What a column level of detail samples, before colours: per column, the rows the stack
/// reaches as runs of one element (`[first row, rows, element]`, rows ascending).
#[derive(Clone, Debug, Default)]
pub(crate) struct ColumnRuns {
    window: [f64; 4],
    cols: u32,
    col_w: f64,
    px: f64,
    x_time: bool,
    /// Column `c`'s runs are `runs[starts[c]..starts[c + 1]]`.
    starts: Vec<u32>,
    runs: Vec<[u32; 3]>,
}

impl ColumnRuns {
    /// Bytes held (kept with the scene).
    pub(crate) fn bytes(&self) -> usize {
        self.starts.len() * 4 + self.runs.len() * 12
    }
}

/// Zoomed-out level of detail for windowed scenes: one sample per device-pixel column (at the
/// column's highest timestep, so peaks survive), the stack at that step cut into pixel rows
/// (`px_bytes` tall) each taking the colour of the largest element it touches, runs of rows of
/// one colour merged, and identical runs in neighbouring columns merged into one rectangle.
/// Draws at most a few instances per pixel row, whatever the number of elements. Hover stays
/// exact (`Layout::hit`).
///
/// Cost: one sweep over the window's timesteps. The live set at the first sample comes from the
/// hit index; every element pushed or popped between two samples is an update of a Fenwick tree
/// of heights (bytes below a push order, and the element at a height, in O(log)) and a max tree
/// (the largest element between two push orders); each column then costs O(rows × log), and an
/// element many rows tall is crossed in one step. Written here rather than taken from a crate:
/// it is the first frame's cost on big files (2.5 s per 1.9 M events before, by walking every
/// live element of every column). The sampled rows are kept with the scene, so that new
/// colours (a highlight) cost only the painting.
#[must_use]
pub fn build_columns(
    layout: &Layout,
    colors: &[u8],
    window: [f64; 4],
    columns: u32,
    px_bytes: f64,
) -> PlotScene {
    build_columns_on(layout, colors, window, columns, px_bytes, &Steps)
}

/// [`build_columns`] on the x axis `xmap`: `window`'s x and the columns in the axis's unit;
/// each column samples the timesteps whose span meets it (on the time axis, a burst of events
/// at one time falls in one column, whose sample is the burst's highest step).
#[must_use]
pub fn build_columns_on<M: XMap + ?Sized>(
    layout: &Layout,
    colors: &[u8],
    window: [f64; 4],
    columns: u32,
    px_bytes: f64,
    xmap: &M,
) -> PlotScene {
    let start = now_ms();
    let runs = sample_columns(layout, window, columns, px_bytes, xmap);
    paint(runs, colors, start)
}

/// The stack's rows per column (the first pass of [`build_columns_on`]).
fn sample_columns<M: XMap + ?Sized>(
    layout: &Layout,
    window: [f64; 4],
    columns: u32,
    px_bytes: f64,
    xmap: &M,
) -> ColumnRuns {
    let [wx0, wx1, wy0, wy1] = window;
    let cols = columns.clamp(1, 65536);
    let col_w = ((wx1 - wx0) / f64::from(cols)).max(1e-9);
    let px = if px_bytes.is_finite() && px_bytes > 0.0 {
        px_bytes
    } else {
        1.0
    };
    let live = layout.live_at_step();
    let n = live.len();
    // The sampled timestep of each column: its highest, the earliest of equals.
    let mut samples: Vec<(u32, u32)> = Vec::new();
    for c in 0..cols {
        let ax = wx0 + f64::from(c) * col_w;
        let (xa, xb) = (xmap.step_of_axis(ax), xmap.step_of_axis(ax + col_w));
        let s0 = xa.max(0.0).floor() as usize;
        let s1 = (xb.max(0.0).ceil() as usize).min(n).max(s0 + 1);
        let best = (s0..s1.min(n))
            .zip(live.range(s0, s1))
            .max_by_key(|&(s, v)| (v, std::cmp::Reverse(s)))
            .map(|(s, _)| s);
        if let Some(step) = best {
            samples.push((c, step as u32));
        }
    }
    let mut stack = ColumnStack::new(layout, &samples);
    crate::phase::phase("column_stack");
    let mut out = ColumnRuns {
        window,
        cols,
        col_w,
        px,
        x_time: xmap.is_time(),
        starts: Vec::with_capacity(cols as usize + 1),
        runs: Vec::new(),
    };
    let mut sample = samples.iter().enumerate().peekable();
    for c in 0..cols {
        let first = out.runs.len();
        out.starts.push(first as u32);
        if let Some((k, &(_, step))) = sample.next_if(|(_, &(sc, _))| sc == c) {
            stack.advance_to(k, layout);
            let runs = &mut out.runs;
            stack.rows(layout, step, wy0, wy1, px, |row, e| {
                let row = row.clamp(0, i64::from(u32::MAX)) as u32;
                let this_column = runs.len() > first;
                match runs.last_mut() {
                    // Rows of one element in a row of rows: one run.
                    Some([r0, len, el])
                        if this_column && *el == e && r0.checked_add(*len) == Some(row) =>
                    {
                        *len += 1;
                    }
                    _ => runs.push([row, 1, e]),
                }
            });
        }
    }
    out.starts.push(out.runs.len() as u32);
    out
}

/// Paints sampled columns with `colors` (the second pass of [`build_columns_on`]): rows of one
/// colour merge, except across the top of an element tall enough to show its edge; identical
/// runs in neighbouring columns merge into one rectangle.
pub(super) fn paint(runs: ColumnRuns, colors: &[u8], start: f64) -> PlotScene {
    let [wx0, wx1, wy0, wy1] = runs.window;
    let (cols, col_w, px) = (runs.cols, runs.col_w, runs.px);
    let tile_w = ((wx1 - wx0) / f64::from(TILES)).max(1e-6);
    let mut grid = TileGrid::new(wx0, tile_w, TILES, wy0.max(0.0), (wy1 - wy0).max(1.0), 1);
    grid.elements = None;
    // Open rectangles, rows ascending (disjoint): (row0, row1, colour, flags) and the x where
    // they started. A column's runs are ascending too, so carrying them over is a merge.
    type Key = (i64, i64, u32, u32);
    let mut open: Vec<(Key, f64)> = Vec::new();
    let mut next: Vec<(Key, f64)> = Vec::new();
    // This column's runs: key, the element of the top row and its rows in the run.
    let mut merged: Vec<(Key, u32, u32)> = Vec::new();
    let emit = |grid: &mut TileGrid, key: Key, x0: f64, x1: f64| {
        let y0 = wy0 + key.0 as f64 * px;
        let y1 = wy0 + key.1 as f64 * px;
        grid.push(x0, x1, y0, y0, y1 - y0, key.2, key.3, 0);
    };
    for c in 0..cols {
        let xa = wx0 + f64::from(c) * col_w;
        merged.clear();
        let at = |i: u32| runs.starts.get(i as usize).map_or(0, |&s| s as usize);
        let column = runs.runs.get(at(c)..at(c + 1)).unwrap_or(&[]);
        for &[row0, len, e] in column {
            let row = i64::from(row0);
            let more = u32::from(len > 1) * (len - 1);
            let color = color_u32(colors.get(e as usize).copied().unwrap_or(u8::MAX));
            // The run's first row, then its others (all of element `e`: they merge).
            match merged.last_mut() {
                Some((key, top, n))
                    if key.1 == row && key.2 == color && (*top == e || *n < EDGE_MIN_ROWS) =>
                {
                    key.1 = row + 1;
                    if *top == e {
                        *n += 1;
                    } else {
                        (*top, *n) = (e, 1);
                    }
                }
                _ => merged.push(((row, row + 1, color, 0), e, 1)),
            }
            if let Some((key, _, n)) = merged.last_mut() {
                key.1 += i64::from(more);
                *n += more;
            }
        }
        for (key, _, n) in &mut merged {
            if *n >= EDGE_MIN_ROWS {
                key.3 = ELEMENT_FLAGS;
            }
        }
        let mut was = open.drain(..).peekable();
        for &(key, _, _) in &merged {
            let mut x_start = xa;
            // Rectangles starting below this run end here; one starting at its row goes on
            // when it is the same run.
            while let Some((old, x0)) = was.next_if(|(old, _)| old.0 <= key.0) {
                if old == key {
                    x_start = x0;
                } else {
                    emit(&mut grid, old, x0, xa);
                }
            }
            next.push((key, x_start));
        }
        for (old, x0) in was {
            emit(&mut grid, old, x0, xa);
        }
        std::mem::swap(&mut open, &mut next);
    }
    let x_end = wx0 + f64::from(cols) * col_w;
    for (key, x_start) in open {
        emit(&mut grid, key, x_start, x_end);
    }
    let (window, x_time) = (runs.window, runs.x_time);
    let mut scene = grid.finish(Some(window), x_time, start);
    scene.source = Source::Columns(runs);
    scene
}
