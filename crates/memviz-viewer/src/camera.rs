//! Plot geometry (where the plot, the gutters and the overview strip sit on the canvas, in CSS
//! px) and the camera (the data window shown in the plot).
//!
//! Coordinate spaces, named `<to>_from_<from>` like memviz-render:
//! - **css px**: the canvas in CSS pixels, origin top left, y down (`pos_in_css_px`).
//! - **data**: x = timesteps (or µs on the time axis, `crate::xaxis`), y = bytes, both `f64`,
//!   y up (`pos_in_data`).
//! - **clip**: what memviz-render computes from a [`View`](memviz_render::View)
//!   ([`Camera::canvas_view`] maps the *whole canvas* so that the plot rectangle shows the camera
//!   window; `clip_from_data` is `canvas_view().clip_from_data()`).

/// Width of the left gutter (y labels), CSS px.
pub const LEFT_GUTTER_CSS: f64 = 72.0;
/// Right margin, CSS px.
pub const RIGHT_MARGIN_CSS: f64 = 12.0;
/// Top margin, CSS px: keeps the top tick label inside the canvas.
pub const TOP_MARGIN_CSS: f64 = 12.0;
/// Height of the x label gutter below the plot, CSS px.
pub const X_LABEL_GUTTER_CSS: f64 = 26.0;
/// Height of the overview strip, CSS px.
pub const OVERVIEW_CSS: f64 = 60.0;
/// Gap below the overview strip, CSS px.
pub const BOTTOM_MARGIN_CSS: f64 = 6.0;
/// Headroom over the peak when fitting y: the top of the plot is never clipped.
pub const Y_HEADROOM: f64 = 1.05;

/// An axis-aligned rectangle in CSS px (`left < right`, `top < bottom`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, ts_rs::TS)]
pub struct RectCss {
    pub left: f64,
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
}

impl RectCss {
    #[must_use]
    pub fn width(&self) -> f64 {
        self.right - self.left
    }
    #[must_use]
    pub fn height(&self) -> f64 {
        self.bottom - self.top
    }
    #[must_use]
    pub fn contains(&self, pos_in_css_px: [f64; 2]) -> bool {
        let [x, y] = pos_in_css_px;
        (self.left..=self.right).contains(&x) && (self.top..=self.bottom).contains(&y)
    }
}

/// The canvas layout in CSS px.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, ts_rs::TS)]
pub struct PlotGeometry {
    pub css_w: f64,
    pub css_h: f64,
    pub device_pixel_ratio: f64,
    /// The timeline plot.
    pub plot: RectCss,
    /// The overview strip (total memory, brush).
    pub overview: RectCss,
}

impl PlotGeometry {
    /// Lays out a `css_w × css_h` canvas. Tiny or non-finite sizes are clamped so that every
    /// rectangle keeps a positive size (never a panic, never a division by zero).
    #[must_use]
    pub fn new(css_w: f64, css_h: f64, device_pixel_ratio: f64) -> Self {
        let fin = |v: f64, d: f64| if v.is_finite() { v } else { d };
        let min_w = LEFT_GUTTER_CSS + RIGHT_MARGIN_CSS + 16.0;
        let min_h = TOP_MARGIN_CSS + X_LABEL_GUTTER_CSS + OVERVIEW_CSS + BOTTOM_MARGIN_CSS + 16.0;
        let css_w = fin(css_w, 1024.0).max(min_w).min(16384.0);
        let css_h = fin(css_h, 576.0).max(min_h).min(16384.0);
        let dpr = fin(device_pixel_ratio, 1.0).clamp(0.25, 8.0);
        let overview = RectCss {
            left: LEFT_GUTTER_CSS,
            right: css_w - RIGHT_MARGIN_CSS,
            bottom: css_h - BOTTOM_MARGIN_CSS,
            top: css_h - BOTTOM_MARGIN_CSS - OVERVIEW_CSS,
        };
        let plot = RectCss {
            left: LEFT_GUTTER_CSS,
            right: css_w - RIGHT_MARGIN_CSS,
            top: TOP_MARGIN_CSS,
            bottom: overview.top - X_LABEL_GUTTER_CSS,
        };
        PlotGeometry {
            css_w,
            css_h,
            device_pixel_ratio: dpr,
            plot,
            overview,
        }
    }

    /// The render target size in device px.
    #[must_use]
    pub fn viewport_px(&self) -> (u32, u32) {
        let px = |css: f64| (css * self.device_pixel_ratio).round().clamp(1.0, 16384.0) as u32;
        (px(self.css_w), px(self.css_h))
    }

    /// The plot's size in device px (for zoom caps and pixel-resolution rebuilds).
    #[must_use]
    pub fn plot_px(&self) -> (u32, u32) {
        let px = |css: f64| (css * self.device_pixel_ratio).round().clamp(1.0, 16384.0) as u32;
        (px(self.plot.width()), px(self.plot.height()))
    }
}

/// The data window shown in the plot, plus the limits it is clamped to.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Camera {
    /// Timesteps at the plot's left and right edges.
    pub x_range: (f64, f64),
    /// Bytes at the plot's bottom and top edges.
    pub y_range: (f64, f64),
    /// The fitted window: x = `[0, steps]`, y = `[0, peak × 1.05]`.
    pub full_x: (f64, f64),
    pub full_y: (f64, f64),
    /// Smallest visible spans (the zoom cap, see [`Camera::set_zoom_cap`]).
    pub min_span: (f64, f64),
}

impl Camera {
    /// A camera fitted to `steps` timesteps and a `peak_bytes` high stack.
    #[must_use]
    pub fn new(steps: u32, peak_bytes: u64) -> Self {
        let full_x = (0.0, f64::from(steps.max(1)));
        let full_y = (0.0, (peak_bytes.max(1) as f64) * Y_HEADROOM);
        Camera {
            x_range: full_x,
            y_range: full_y,
            full_x,
            full_y,
            min_span: (1e-3, 1e-3),
        }
    }

    /// Sets the zoom cap: the smallest spans (data units) the plot may show. The viewer derives
    /// it from `memviz_render::min_span(batch extent, plot px)`, so the `f32`-relative instances
    /// stay within half a device pixel of their true position (no jitter). Never below 1e-3.
    pub fn set_zoom_cap(&mut self, min_x: f64, min_y: f64) {
        let ok = |v: f64| if v.is_finite() { v.max(1e-3) } else { 1e-3 };
        self.min_span = (ok(min_x), ok(min_y));
        self.clamp();
    }

    /// Shows the whole trace, `y ∈ [0, peak × 1.05]`.
    pub fn fit(&mut self) {
        self.x_range = self.full_x;
        self.y_range = self.full_y;
    }

    fn clamp_axis(range: (f64, f64), full: (f64, f64), min_span: f64) -> (f64, f64) {
        let full_span = (full.1 - full.0).max(min_span);
        let max_span = full_span * 1.2;
        let (mut lo, mut hi) = range;
        if !lo.is_finite() || !hi.is_finite() || hi <= lo {
            return full;
        }
        let mut span = (hi - lo).clamp(min_span, max_span);
        if !span.is_finite() {
            span = full_span;
        }
        let centre = ((lo + hi) * 0.5).clamp(full.0, full.1);
        // Keep the window overlapping the data: its centre stays inside the full range, and a
        // window wider than the data is centred on it.
        lo = centre - span * 0.5;
        hi = centre + span * 0.5;
        if span >= full_span {
            let c = (full.0 + full.1) * 0.5;
            return (c - span * 0.5, c + span * 0.5);
        }
        if lo < full.0 - span * 0.1 {
            lo = full.0 - span * 0.1;
            hi = lo + span;
        }
        if hi > full.1 + span * 0.1 {
            hi = full.1 + span * 0.1;
            lo = hi - span;
        }
        (lo, hi)
    }

    /// Re-applies the limits (zoom cap, at most 1.2× the fitted span, the window overlapping the
    /// data).
    pub fn clamp(&mut self) {
        self.x_range = Self::clamp_axis(self.x_range, self.full_x, self.min_span.0);
        self.y_range = Self::clamp_axis(self.y_range, self.full_y, self.min_span.1);
    }

    /// Data point under a CSS pixel of `geom` (extrapolated outside the plot).
    #[must_use]
    pub fn data_from_css_px(&self, geom: &PlotGeometry, pos_in_css_px: [f64; 2]) -> [f64; 2] {
        let p = geom.plot;
        let fx = (pos_in_css_px[0] - p.left) / p.width();
        let fy = (p.bottom - pos_in_css_px[1]) / p.height();
        [
            self.x_range.0 + fx * (self.x_range.1 - self.x_range.0),
            self.y_range.0 + fy * (self.y_range.1 - self.y_range.0),
        ]
    }

    /// CSS pixel of a data point.
    #[must_use]
    pub fn css_px_from_data(&self, geom: &PlotGeometry, pos_in_data: [f64; 2]) -> [f64; 2] {
        let p = geom.plot;
        let fx = (pos_in_data[0] - self.x_range.0) / (self.x_range.1 - self.x_range.0);
        let fy = (pos_in_data[1] - self.y_range.0) / (self.y_range.1 - self.y_range.0);
        [p.left + fx * p.width(), p.bottom - fy * p.height()]
    }

    /// The memory-render view of the whole canvas: the plot rectangle shows exactly the camera
    /// window, the gutters show the data around it (covered by the overlay's masks).
    #[must_use]
    pub fn canvas_view(&self, geom: &PlotGeometry) -> memviz_render::View {
        let top_left = self.data_from_css_px(geom, [0.0, 0.0]);
        let bottom_right = self.data_from_css_px(geom, [geom.css_w, geom.css_h]);
        memviz_render::View {
            x_range: (top_left[0], bottom_right[0]),
            y_range: (bottom_right[1], top_left[1]),
            viewport_px: geom.viewport_px(),
        }
    }

    /// Zooms by `factor` (> 1 zooms in) keeping the data point under `pos_in_css_px` fixed.
    /// Over the plot both axes zoom; over the y gutter only y; over the x gutter or the
    /// overview only x.
    pub fn zoom_at(&mut self, geom: &PlotGeometry, pos_in_css_px: [f64; 2], factor: f64) {
        if !factor.is_finite() || factor <= 0.0 {
            return;
        }
        let anchor = self.data_from_css_px(geom, pos_in_css_px);
        let [cx, cy] = pos_in_css_px;
        let in_y_gutter = cx < geom.plot.left;
        let below_plot = cy > geom.plot.bottom;
        let zoom_x = !in_y_gutter;
        let zoom_y = !below_plot;
        if zoom_x {
            let span = (self.x_range.1 - self.x_range.0) / factor;
            let span = span.clamp(self.min_span.0, (self.full_x.1 - self.full_x.0) * 1.2);
            let f = (cx - geom.plot.left) / geom.plot.width();
            let lo = anchor[0] - f * span;
            self.x_range = (lo, lo + span);
        }
        if zoom_y {
            let span = (self.y_range.1 - self.y_range.0) / factor;
            let span = span.clamp(self.min_span.1, (self.full_y.1 - self.full_y.0) * 1.2);
            let f = (geom.plot.bottom - cy) / geom.plot.height();
            let lo = anchor[1] - f * span;
            self.y_range = (lo, lo + span);
        }
        self.clamp();
    }

    /// Moves the window by a drag of `(dx, dy)` CSS px (the content follows the pointer).
    pub fn pan_by(&mut self, geom: &PlotGeometry, dx_css: f64, dy_css: f64) {
        if !dx_css.is_finite() || !dy_css.is_finite() {
            return;
        }
        let sx = (self.x_range.1 - self.x_range.0) / geom.plot.width();
        let sy = (self.y_range.1 - self.y_range.0) / geom.plot.height();
        self.x_range = (self.x_range.0 - dx_css * sx, self.x_range.1 - dx_css * sx);
        self.y_range = (self.y_range.0 + dy_css * sy, self.y_range.1 + dy_css * sy);
        self.clamp();
    }
}
