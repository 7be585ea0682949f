//! The data window on screen ([`View`]) and the transform it implies ([`ClipFromData`]).
//!
//! # How it works
//! Coordinate spaces, read right to left in transform names:
//! - **data**: whatever the caller lays out in (timesteps × bytes, addresses × rows, …), `f64`.
//! - **rel**: data minus a batch's `origin`, stored as `f32` in [`Trapezoid`](crate::Trapezoid)s.
//! - **clip**: wgpu clip space, `[-1, 1]` on both axes, y up.
//! - **device px**: pixels of the render target, `View::viewport_px`.
//!
//! [`View::clip_from_data`] maps the data window onto the whole viewport, in `f64`.
//! [`ClipFromData::view_uniform`] folds a batch origin into it (still `f64`) and rounds the
//! resulting `clip = rel * scale + offset` to `f32` once; that is all the GPU sees.
//!
//! # Precision and the zoom cap
//! A coordinate reaches the GPU as an `f32` relative to its batch origin, so it is only known to
//! about `|rel| × 2⁻²⁴` data units, and the shader's `rel * scale + offset` cancels about as much
//! again when a far-away origin is zoomed into. Both errors grow with the **batch extent** `E`
//! (the largest `|data - origin|` in the batch) over the **visible span** `S` (the width of the
//! data window on that axis), in device pixels:
//!
//! ```text
//! error_px ≲ 2 × (E / S) × viewport_px × 2⁻²⁴
//! ```
//!
//! To keep it at or below half a pixel, the visible span must stay at or above
//! `E × viewport_px × 2⁻²²` ([`min_span`]). For a 4096 px wide canvas that allows zooming
//! 1024× into a batch's extent; for 1024 px, 4096×. Callers that need deeper zoom split their
//! layout into several batches (tiles), each with its own origin near its own contents, so the
//! relevant `E` is a tile's and not the whole layout's; a viewer clamps its zoom with
//! [`min_span`] for the remaining case. Data coordinates themselves are `f64` (exact integers to
//! 2⁵³), so the CPU side never limits the zoom first.

use crate::gpu_data::ViewUniform;

/// `2⁻²⁴`: half the spacing of `f32` values in `[1, 2)`, i.e. its relative rounding error.
pub const F32_REL_ERROR: f64 = 1.0 / 16_777_216.0;

/// A data window shown on the whole render target. y grows upwards.
///
/// A range with `lo > hi` flips that axis. A degenerate range (`lo == hi`, or not finite) is
/// drawn as a window of width 1 centred on `lo` (or on 0 when `lo` is not finite), never a panic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    /// Data x at the left edge and at the right edge of the viewport.
    pub x_range: (f64, f64),
    /// Data y at the bottom edge and at the top edge of the viewport.
    pub y_range: (f64, f64),
    /// Render target size in device pixels (width, height). It only sets the 1 px minimum size;
    /// it should equal the size of the texture drawn into.
    pub viewport_px: (u32, u32),
}

impl View {
    /// The `f64` affine map from data space to clip space for this window.
    #[must_use]
    pub fn clip_from_data(&self) -> ClipFromData {
        let (sx, ox) = axis_clip_from_data(self.x_range);
        let (sy, oy) = axis_clip_from_data(self.y_range);
        ClipFromData {
            scale: [sx, sy],
            offset: [ox, oy],
        }
    }

    /// The worst-case position error, in device pixels per axis, of a batch whose coordinates
    /// reach `batch_extent` (max `|data - origin|`, per axis) away from its origin, in this view.
    /// See the module docs; keep it below about 0.5.
    #[must_use]
    pub fn position_error_px(&self, batch_extent: [f64; 2]) -> [f64; 2] {
        let err = |extent: f64, range: (f64, f64), px: u32| {
            let (lo, hi) = sanitized_range(range);
            let span = hi - lo;
            2.0 * (extent.abs() / span.abs()) * f64::from(px) * F32_REL_ERROR
        };
        [
            err(batch_extent[0], self.x_range, self.viewport_px.0),
            err(batch_extent[1], self.y_range, self.viewport_px.1),
        ]
    }
}

/// The smallest visible span (data units) that keeps a batch of extent `batch_extent` within
/// 0.5 device pixels of its true position on a `viewport_px` wide axis: `E × px × 2⁻²²`.
/// A viewer clamps its zoom with this (see the module docs).
#[must_use]
pub fn min_span(batch_extent: f64, viewport_px: u32) -> f64 {
    batch_extent.abs() * f64::from(viewport_px) * 4.0 * F32_REL_ERROR
}

/// `clip = data * scale + offset`, per axis (x, y), in `f64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClipFromData {
    /// Clip units per data unit.
    pub scale: [f64; 2],
    /// Clip position of data (0, 0).
    pub offset: [f64; 2],
}

impl ClipFromData {
    /// Maps a point from data space to clip space.
    #[must_use]
    pub fn apply(&self, pos_in_data: [f64; 2]) -> [f64; 2] {
        [
            pos_in_data[0] * self.scale[0] + self.offset[0],
            pos_in_data[1] * self.scale[1] + self.offset[1],
        ]
    }

    /// The GPU uniform for a batch whose instances are relative to `origin`: composed in `f64`
    /// (`offset + origin * scale`), rounded to `f32` once.
    #[must_use]
    pub fn view_uniform(
        &self,
        origin: [f64; 2],
        viewport_px: (u32, u32),
        flags: u32,
    ) -> ViewUniform {
        let origin_in_clip = self.apply(origin);
        ViewUniform {
            clip_from_rel_scale: [self.scale[0] as f32, self.scale[1] as f32],
            clip_from_rel_offset: [origin_in_clip[0] as f32, origin_in_clip[1] as f32],
            viewport_px: [viewport_px.0 as f32, viewport_px.1 as f32],
            flags,
            _pad: 0,
        }
    }
}

/// A usable `(lo, hi)`: finite, `lo != hi`, and a finite `2 / (hi - lo)` (see [`View`]).
fn sanitized_range((lo, hi): (f64, f64)) -> (f64, f64) {
    let usable = |lo: f64, hi: f64| {
        let width = hi - lo;
        lo.is_finite()
            && hi.is_finite()
            && width != 0.0
            && width.is_finite()
            && (2.0 / width).is_finite()
    };
    if usable(lo, hi) {
        return (lo, hi);
    }
    let c = if lo.is_finite() && lo.abs() <= 1e300 {
        lo
    } else {
        0.0
    };
    let half = (c.abs() * F32_REL_ERROR).max(0.5);
    (c - half, c + half)
}

/// `(scale, offset)` mapping `[lo, hi]` to `[-1, 1]`.
fn axis_clip_from_data(range: (f64, f64)) -> (f64, f64) {
    let (lo, hi) = sanitized_range(range);
    let scale = 2.0 / (hi - lo);
    (scale, -1.0 - lo * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corners_map_to_clip_corners() {
        let view = View {
            x_range: (10.0, 20.0),
            y_range: (-4.0, 4.0),
            viewport_px: (100, 50),
        };
        let c = view.clip_from_data();
        assert_eq!(c.apply([10.0, -4.0]), [-1.0, -1.0]);
        assert_eq!(c.apply([20.0, 4.0]), [1.0, 1.0]);
        assert_eq!(c.apply([15.0, 0.0]), [0.0, 0.0]);
    }

    #[test]
    fn degenerate_ranges_do_not_blow_up() {
        for range in [
            (3.0, 3.0),
            (f64::NAN, 1.0),
            (f64::NEG_INFINITY, f64::INFINITY),
            (-f64::MAX, f64::MAX),
            (1e300, 1e300),
            (0.0, 1e-320),
        ] {
            let view = View {
                x_range: range,
                y_range: range,
                viewport_px: (0, 0),
            };
            let u = view
                .clip_from_data()
                .view_uniform([0.0, 0.0], view.viewport_px, 0);
            assert!(
                u.clip_from_rel_scale
                    .iter()
                    .chain(&u.clip_from_rel_offset)
                    .all(|v| v.is_finite()),
                "{range:?}: {u:?}"
            );
        }
    }

    /// Emulates the shader's f32 arithmetic at the zoom cap and checks the error bound: the
    /// visible span is `min_span(E)` and sits at the far end of a batch of extent E.
    #[test]
    fn zoom_cap_keeps_error_below_half_a_pixel() {
        let viewport_px = 4096_u32;
        for &(origin, extent) in &[(0.0_f64, 1.0e5_f64), (1.0e12, 3.0e9), (-7.5e6, 123_456.789)] {
            let span = min_span(extent, viewport_px);
            let lo = origin + extent - span;
            let view = View {
                x_range: (lo, lo + span),
                y_range: (0.0, 1.0),
                viewport_px: (viewport_px, 1),
            };
            let u = view
                .clip_from_data()
                .view_uniform([origin, 0.0], view.viewport_px, 0);
            let mut worst = 0.0_f64;
            for i in 0..=1000 {
                let data = lo + span * f64::from(i) / 1000.0;
                let rel = (data - origin) as f32;
                let clip = rel * u.clip_from_rel_scale[0] + u.clip_from_rel_offset[0];
                let truth = (data - lo) / span * 2.0 - 1.0;
                let err_px = (f64::from(clip) - truth).abs() * f64::from(viewport_px) / 2.0;
                worst = worst.max(err_px);
            }
            let bound = view.position_error_px([extent, 0.0])[0];
            assert!(worst <= 0.5, "origin {origin}, extent {extent}: {worst} px");
            assert!(bound <= 0.5 + 1e-9, "bound {bound}");
            eprintln!(
                "origin {origin}, extent {extent}: measured {worst:.4} px, bound {bound:.4} px"
            );
            assert!(worst <= bound, "estimate {bound} below measured {worst}");
        }
    }
}
