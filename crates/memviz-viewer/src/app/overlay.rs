//! The timeline's overlay (grid, peak marker, hover outline, annotation phases, gutter masks,
//! axes, the overview strip and its brush) and its axis ticks, in CSS px for the shell's labels.
//! Also [`App::set_theme`]: the light or dark colours they are drawn in.

use memviz_render::Trapezoid;
use memviz_snapshot::Snapshot;

use super::device::{DeviceData, PHASE_COLORS, PHASE_EDGE, PHASE_ROW_CSS};
use super::timeline::{axis_map, TimelineUi, TimelineView};
use crate::answer::{AxisTicks, OomMark, PhaseLabel};
use crate::camera::{PlotGeometry, RectCss};
use crate::scene::Batch;
use crate::ticks::{self, Tick};
use crate::xaxis::{map_polyline, AxisMap, XMap};

/// Ticks of both axes for the timeline's camera, inside the plot, increasing.
pub(super) fn axis_ticks(
    ui: &TimelineUi,
    geom: &PlotGeometry,
    data: Option<&DeviceData>,
    snap: Option<&Snapshot>,
    device: i64,
) -> AxisTicks {
    let cam = &ui.camera;
    let p = geom.plot;
    let xpos = |x: f64| cam.css_px_from_data(geom, [x, 0.0])[0];
    let ypos = |y: f64| cam.css_px_from_data(geom, [0.0, y])[1];
    let y = ticks::byte_ticks(cam.y_range.0, cam.y_range.1, p.height(), ypos);
    let map = snap.map_or(AxisMap::Steps, |s| {
        axis_map(ui.camera_time, s, device, data)
    });
    // The camera's x is the axis's unit: both kinds of ticks are linear in it.
    let (x, x_unit) = if map.is_time() {
        (
            ticks::time_ticks(cam.x_range.0, cam.x_range.1, p.width(), xpos),
            "time",
        )
    } else {
        (
            ticks::step_ticks(cam.x_range.0, cam.x_range.1, p.width(), xpos),
            "timesteps",
        )
    };
    let inside_x = |t: &Tick| t.pos_css_px >= p.left - 0.5 && t.pos_css_px <= p.right + 0.5;
    let inside_y = |t: &Tick| t.pos_css_px >= p.top - 0.5 && t.pos_css_px <= p.bottom + 0.5;
    let mut phases = Vec::new();
    if let Some(d) = data {
        for (ph, row) in &d.phases {
            let x0 = xpos(map.axis_of_step(f64::from(ph.start_step))).max(p.left);
            let x1 = xpos(map.axis_of_step(f64::from(ph.end_step))).min(p.right);
            if x1 - x0 >= 40.0 && phases.len() < 200 {
                phases.push(PhaseLabel {
                    left: x0,
                    right: x1,
                    top: p.top + f64::from(*row) * PHASE_ROW_CSS,
                    name: ph.name.clone(),
                    short: ticks::elide_phase_name(&ph.name, x1 - x0),
                });
            }
        }
    }
    let ooms = data.map_or_else(Vec::new, |d| {
        d.oom_steps
            .iter()
            .enumerate()
            .map(|(i, &step)| OomMark {
                x: xpos(map.axis_of_step(step)),
                index: i as u32,
            })
            .filter(|m| m.x >= p.left - 0.5 && m.x <= p.right + 0.5)
            .take(64)
            .collect()
    });
    AxisTicks {
        x: x.into_iter().filter(inside_x).collect(),
        y: y.into_iter().filter(inside_y).collect(),
        x_unit,
        phases,
        ooms,
        whatif: None,
    }
}

impl TimelineView {
    /// The per-frame overlay in the canvas view's data space: peak marker, grid, gutter masks,
    /// axes and tick marks, overview strip and brush, hover outline. Drawn after the plot.
    pub(super) fn draw_overlay(&mut self) -> Batch {
        let cols = self.overview_columns();
        let theme = self.frame.theme;
        let geom = self.geom;
        let cam = self.ui.camera;
        let origin = cam.data_from_css_px(&geom, [0.0, geom.css_h]);
        let mut out: Vec<Trapezoid> = Vec::new();
        let to_data = |p: [f64; 2]| cam.data_from_css_px(&geom, p);
        let rect = |out: &mut Vec<Trapezoid>, r: RectCss, color: u32| {
            let a = to_data([r.left, r.bottom]);
            let b = to_data([r.right, r.top]);
            out.push(Trapezoid::rect(
                (a[0] - origin[0]) as f32,
                (b[0] - origin[0]) as f32,
                (a[1] - origin[1]) as f32,
                (b[1] - origin[1]) as f32,
                color,
            ));
        };
        let line = |out: &mut Vec<Trapezoid>, left: f64, right: f64, top: f64, bottom: f64| {
            rect(
                out,
                RectCss {
                    left,
                    right,
                    top,
                    bottom,
                },
                theme.axis,
            );
        };
        let p = geom.plot;
        let ticks = axis_ticks(&self.ui, &geom, self.data(), Some(&self.snap), self.device);
        let map = self.xmap();
        // Grid lines over the plot (faint), under the masks.
        for t in &ticks.y {
            rect(
                &mut out,
                RectCss {
                    left: p.left,
                    right: p.right,
                    top: t.pos_css_px,
                    bottom: t.pos_css_px,
                },
                theme.grid,
            );
        }
        if let Some(d) = self.data() {
            // Peak marker: a faint horizontal line at the peak, a triangle above the peak step.
            let peak = d.layout.peak_bytes as f64;
            let peak_x = map.axis_of_step(f64::from(d.layout.peak_step));
            let px = cam.css_px_from_data(&geom, [peak_x, peak]);
            rect(
                &mut out,
                RectCss {
                    left: p.left,
                    right: p.right,
                    top: px[1],
                    bottom: px[1],
                },
                theme.peak_line,
            );
            if p.contains(px)
                || (px[0] >= p.left
                    && px[0] <= p.right
                    && px[1] >= p.top - 12.0
                    && px[1] <= p.bottom)
            {
                let (x, y) = (px[0], px[1]);
                let a = to_data([x - 6.0, y - 10.0]);
                let m = to_data([x, y]);
                let b = to_data([x + 6.0, y - 10.0]);
                let (ox, oy) = (origin[0], origin[1]);
                // The triangle's two halves: left edge up to the tip, tip down to the right.
                for (l, r, bottom, top) in [
                    (a, m, [a[1], a[1]], [m[1], a[1]]),
                    (m, b, [m[1], b[1]], [b[1], b[1]]),
                ] {
                    out.push(Trapezoid::new(
                        (l[0] - ox) as f32,
                        (r[0] - ox) as f32,
                        [(bottom[0] - oy) as f32, (bottom[1] - oy) as f32],
                        [(top[0] - oy) as f32, (top[1] - oy) as f32],
                        theme.peak,
                    ));
                }
            }
            // Hover / pinned element outline: its pieces inside the window, as hairlines.
            if let Some(e) = self.ui.pinned.or(self.ui.hover) {
                let h = d.layout.height_bytes(e) as f64;
                let (s0, s1) = (
                    map.step_of_axis(cam.x_range.0),
                    map.step_of_axis(cam.x_range.1),
                );
                let pts = map_polyline(&d.layout.clipped_points(e, s0, s1), &map);
                for w in pts.windows(2).take(4096) {
                    let (Some(&(xa, ba)), Some(&(xb, bb))) = (w.first(), w.get(1)) else {
                        continue;
                    };
                    for off in [0.0, h] {
                        out.push(Trapezoid::new(
                            (xa - origin[0]) as f32,
                            (xb - origin[0]) as f32,
                            [(ba + off - origin[1]) as f32; 2],
                            [(bb + off - origin[1]) as f32; 2],
                            theme.hover_edge,
                        ));
                    }
                }
            }
            // Annotation phases: bands at the top of the plot, a faint line where each starts.
            let mut drawn = 0;
            for (i, (ph, row)) in d.phases.iter().enumerate() {
                let x0 = map.axis_of_step(f64::from(ph.start_step));
                let x1 = map.axis_of_step(f64::from(ph.end_step));
                let x0 = cam.css_px_from_data(&geom, [x0, 0.0])[0];
                let x1 = cam.css_px_from_data(&geom, [x1, 0.0])[0];
                if x1 < p.left || x0 > p.right || drawn > 4000 {
                    continue;
                }
                drawn += 1;
                let top = p.top + f64::from(*row) * PHASE_ROW_CSS;
                let (l, r) = (x0.max(p.left), x1.min(p.right));
                rect(
                    &mut out,
                    RectCss {
                        left: l,
                        right: r.max(l),
                        top,
                        bottom: top + PHASE_ROW_CSS - 1.0,
                    },
                    PHASE_COLORS[i % 2],
                );
                if x1 - x0 >= 8.0 && x0 >= p.left {
                    rect(
                        &mut out,
                        RectCss {
                            left: x0,
                            right: x0,
                            top,
                            bottom: p.bottom,
                        },
                        PHASE_EDGE,
                    );
                }
            }
        }
        // The what-if tab's simulated reserved curve, under the masks.
        self.draw_sim(&mut out, origin);
        // Masks over the gutters (the plot's instances extend past the window).
        let (w, hgt) = (geom.css_w, geom.css_h);
        for (left, right, top, bottom) in [
            (0.0, p.left, 0.0, hgt),
            (p.right, w, 0.0, hgt),
            (0.0, w, 0.0, p.top),
            (0.0, w, p.bottom, hgt),
        ] {
            rect(
                &mut out,
                RectCss {
                    left,
                    right,
                    top,
                    bottom,
                },
                theme.bg,
            );
        }
        // Axes and tick marks.
        line(&mut out, p.left, p.left, p.top, p.bottom);
        line(&mut out, p.left, p.right, p.bottom, p.bottom);
        for t in &ticks.y {
            line(&mut out, p.left - 5.0, p.left, t.pos_css_px, t.pos_css_px);
        }
        for t in &ticks.x {
            line(
                &mut out,
                t.pos_css_px,
                t.pos_css_px,
                p.bottom,
                p.bottom + 5.0,
            );
        }
        // Overview strip: total memory per column (max), then the brush.
        let o = geom.overview;
        rect(&mut out, o, theme.overview_bg);
        let full_top = cam.full_y.1.max(1.0);
        let n = cols.len().max(1) as f64;
        for (i, &v) in cols.iter().enumerate() {
            let frac = (v as f64 / full_top).clamp(0.0, 1.0);
            if frac <= 0.0 {
                continue;
            }
            let l = o.left + o.width() * (i as f64 / n);
            let r = o.left + o.width() * ((i + 1) as f64 / n);
            rect(
                &mut out,
                RectCss {
                    left: l,
                    right: r,
                    top: o.bottom - frac * o.height(),
                    bottom: o.bottom,
                },
                theme.overview_fill,
            );
        }
        let fx = |x: f64| {
            let f = (x - cam.full_x.0) / (cam.full_x.1 - cam.full_x.0);
            o.left + f.clamp(0.0, 1.0) * o.width()
        };
        let (b0, b1) = (fx(cam.x_range.0), fx(cam.x_range.1));
        for (left, right, color) in [
            (b0, b1, theme.brush),
            (b0, b0, theme.brush_edge),
            (b1, b1, theme.brush_edge),
        ] {
            rect(
                &mut out,
                RectCss {
                    left,
                    right,
                    top: o.top,
                    bottom: o.bottom,
                },
                color,
            );
        }
        Batch::unbounded(origin, out)
    }
}
