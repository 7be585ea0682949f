//! [`Pane`]: the plumbing shared by the secondary views ([`crate::flame_view::FlameView`],
//! [`crate::state_view::StateView`]): a [`PlotGeometry`] that is the whole canvas minus a
//! margin (no gutters, no overview), a [`Camera`], the redraw flag and the drag state that
//! tells a pan from a click (a press and release within [`crate::view::CLICK_SLOP_CSS`] of the
//! press, without travel in between, is a click).

use memviz_render::{Trapezoid, View};

use crate::camera::{Camera, PlotGeometry, RectCss};

/// The geometry of a pane: the whole canvas minus `margin` CSS px, no gutters.
#[must_use]
pub fn margin_geometry(css_w: f64, css_h: f64, dpr: f64, margin: f64) -> PlotGeometry {
    let mut g = PlotGeometry::new(css_w, css_h, dpr);
    g.plot = RectCss {
        left: margin,
        top: margin,
        right: (g.css_w - margin).max(margin + 1.0),
        bottom: (g.css_h - margin).max(margin + 1.0),
    };
    g.overview = RectCss {
        left: 0.0,
        top: g.css_h,
        right: 0.0,
        bottom: g.css_h,
    };
    g
}

/// Pushes the four 1 px edges of the rect `[x0, x1, bottom, top]` (data space relative to the
/// overlay's origin) to `out`: bottom, top, left, right.
pub fn push_outline(out: &mut Vec<Trapezoid>, [x0, x1, b, t]: [f32; 4], color: u32) {
    out.push(Trapezoid::rect(x0, x1, b, b, color));
    out.push(Trapezoid::rect(x0, x1, t, t, color));
    out.push(Trapezoid::rect(x0, x0, b, t, color));
    out.push(Trapezoid::rect(x1, x1, b, t, color));
}

/// A canvas pane: geometry, camera, redraw flag and pan/click drag state.
pub struct Pane {
    pub geom: PlotGeometry,
    pub camera: Camera,
    pub needs_redraw: bool,
    /// The margin masks' colour (the theme's background).
    pub bg: u32,
    margin: f64,
    /// `(last, start, moved)` of the current press.
    drag: Option<([f64; 2], [f64; 2], bool)>,
}

impl Pane {
    /// A `css_w × css_h` pane with a `margin` CSS px margin and a default camera.
    #[must_use]
    pub fn new(css_w: f64, css_h: f64, dpr: f64, margin: f64) -> Self {
        Pane {
            geom: margin_geometry(css_w, css_h, dpr, margin),
            camera: Camera::new(1, 1),
            needs_redraw: true,
            bg: crate::theme::Theme::LIGHT.bg,
            margin,
            drag: None,
        }
    }

    /// Sets the canvas size (the camera is left to the caller).
    pub fn resize(&mut self, css_w: f64, css_h: f64, dpr: f64) {
        self.geom = margin_geometry(css_w, css_h, dpr, self.margin);
        self.needs_redraw = true;
    }

    /// True when the camera shows exactly its fitted window.
    #[must_use]
    pub fn is_fitted(&self) -> bool {
        self.camera.x_range == self.camera.full_x && self.camera.y_range == self.camera.full_y
    }

    pub fn fit(&mut self) {
        self.camera.fit();
        self.needs_redraw = true;
    }

    pub fn zoom_at(&mut self, css_x: f64, css_y: f64, factor: f64) {
        self.camera.zoom_at(&self.geom, [css_x, css_y], factor);
        self.needs_redraw = true;
    }

    pub fn pan_by(&mut self, dx: f64, dy: f64) {
        self.camera.pan_by(&self.geom, dx, dy);
        self.needs_redraw = true;
    }

    /// Keys: `+`/`-` zoom at the plot's centre, `0` fits, WASD / arrows pan. False for any
    /// other key.
    pub fn key(&mut self, key: &str) -> bool {
        let p = self.geom.plot;
        let c = [(p.left + p.right) * 0.5, (p.top + p.bottom) * 0.5];
        let (sx, sy) = (p.width() * 0.15, p.height() * 0.15);
        match key {
            "a" | "A" | "ArrowLeft" => self.pan_by(sx, 0.0),
            "d" | "D" | "ArrowRight" => self.pan_by(-sx, 0.0),
            "w" | "W" | "ArrowUp" => self.pan_by(0.0, sy),
            "s" | "S" | "ArrowDown" => self.pan_by(0.0, -sy),
            "+" | "=" => self.zoom_at(c[0], c[1], 1.5),
            "-" | "_" => self.zoom_at(c[0], c[1], 1.0 / 1.5),
            "0" => self.fit(),
            _ => return false,
        }
        true
    }

    /// A press: starts a drag.
    pub fn pointer_down(&mut self, css_x: f64, css_y: f64) {
        self.drag = Some(([css_x, css_y], [css_x, css_y], false));
    }

    /// A move: pans once the pointer has travelled more than the click slop from the press.
    /// True while a drag is under way (the caller then does not hover).
    pub fn drag_move(&mut self, css_x: f64, css_y: f64) -> bool {
        match self.drag {
            Some((last, start, moved)) => {
                let moved = moved
                    || (css_x - start[0]).hypot(css_y - start[1]) > crate::view::CLICK_SLOP_CSS;
                if moved {
                    self.pan_by(css_x - last[0], css_y - last[1]);
                }
                self.drag = Some((if moved { [css_x, css_y] } else { last }, start, moved));
                true
            }
            None => false,
        }
    }

    /// A release: ends the drag. True when it was a click: a press and release at (about) the
    /// same place, even without moves in between (the page may have shifted the canvas under a
    /// still pointer).
    pub fn release(&mut self, css_x: f64, css_y: f64) -> bool {
        matches!(
            self.drag.take(),
            Some((_, start, false))
                if (css_x - start[0]).hypot(css_y - start[1]) <= crate::view::CLICK_SLOP_CSS
        )
    }

    /// Forgets the current drag (pointer left, content replaced).
    pub fn cancel_drag(&mut self) {
        self.drag = None;
    }

    /// Pushes the opaque masks over the margins (relative to `origin`, data space) to `out`.
    pub fn margin_masks(&self, out: &mut Vec<Trapezoid>, origin: [f64; 2]) {
        let cam = self.camera;
        let geom = self.geom;
        let rel = |x: f64, y: f64| ((x - origin[0]) as f32, (y - origin[1]) as f32);
        let p = geom.plot;
        let (w, h) = (geom.css_w, geom.css_h);
        for r in [
            [0.0, p.left, 0.0, h],
            [p.right, w, 0.0, h],
            [0.0, w, 0.0, p.top],
            [0.0, w, p.bottom, h],
        ] {
            let a = cam.data_from_css_px(&geom, [r[0], r[3]]);
            let b = cam.data_from_css_px(&geom, [r[1], r[2]]);
            let (x0, y0) = rel(a[0], a[1]);
            let (x1, y1) = rel(b[0], b[1]);
            out.push(Trapezoid::rect(x0, x1, y0, y1, self.bg));
        }
    }

    /// The data point under a canvas point, `None` outside the plot.
    #[must_use]
    pub fn data_in_plot(&self, css_x: f64, css_y: f64) -> Option<[f64; 2]> {
        if !self.geom.plot.contains([css_x, css_y]) {
            return None;
        }
        Some(self.camera.data_from_css_px(&self.geom, [css_x, css_y]))
    }

    /// The overlay's origin: the data point at the canvas's bottom left corner.
    #[must_use]
    pub fn overlay_origin(&self) -> [f64; 2] {
        self.camera
            .data_from_css_px(&self.geom, [0.0, self.geom.css_h])
    }

    /// The render view of the whole canvas.
    #[must_use]
    pub fn canvas_view(&self) -> View {
        self.camera.canvas_view(&self.geom)
    }

    /// Returns and clears the redraw flag.
    pub fn take_needs_redraw(&mut self) -> bool {
        std::mem::replace(&mut self.needs_redraw, false)
    }
}

/// The [`crate::view::DrawableView`] methods that a view drawn in a [`Pane`] answers the same
/// way: from its `generation` and `batches` fields and its `pane`.
macro_rules! pane_view_methods {
    () => {
        /// The batches and their generation.
        fn batches(&self) -> (u64, &[Batch]) {
            (self.generation, &self.batches)
        }

        /// The render view of the whole canvas.
        fn canvas_view(&self) -> View {
            self.pane.canvas_view()
        }

        /// True when the next frame would differ from the last one drawn.
        fn needs_redraw(&self) -> bool {
            self.pane.needs_redraw
        }

        /// Returns and clears the redraw flag.
        fn take_needs_redraw(&mut self) -> bool {
            self.pane.take_needs_redraw()
        }
    };
}
pub(crate) use pane_view_methods;
