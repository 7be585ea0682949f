//! The simulated reserved curve over a timeline: a replay's outcome as (trace row, reserved
//! bytes) points ([`SimCurve`], built once per result), mapped to the timeline's timesteps once
//! per view ([`SimPlot`]) and drawn in the overlay each frame in the x axis's unit, with the
//! simulated first OOM as a vertical line and a mark the shell shows ([`WhatIfMark`]).

use std::rc::Rc;

use memviz_alloc::{Outcome, SegKind};
use memviz_present::layout::Layout;
use memviz_render::{rgba, Trapezoid};

use crate::answer::WhatIfMark;
use crate::app::device::rows_to_steps;
use crate::app::timeline::TimelineView;
use crate::camera::{RectCss, Y_HEADROOM};
use crate::xaxis::XMap;

/// The curve's colour: a magenta that no site colour of the palette is near.
pub const SIM_RGBA: [u8; 4] = [214, 0, 170, 255];
const SIM_COLOR: u32 = rgba(SIM_RGBA[0], SIM_RGBA[1], SIM_RGBA[2], SIM_RGBA[3]);
/// The line's thickness, CSS px.
const THICK: f64 = 2.0;

/// A replay's reserved bytes along the trace.
#[derive(Debug)]
pub struct SimCurve {
    pub file: usize,
    pub device: i64,
    /// Reserved bytes at the trace's start.
    pub initial: u64,
    /// (trace row, reserved bytes after it), in trace order.
    pub points: Vec<(u32, u64)>,
    /// The row the replay stopped at (an OOM), when it did not reach the end.
    pub end_row: Option<u32>,
    /// The simulated first OOM's row.
    pub oom_row: Option<u32>,
    pub peak: u64,
    /// The legend's text.
    pub label: String,
    /// The simulated OOM's text.
    pub oom_text: String,
}

impl SimCurve {
    /// The curve of `out` (its `seg_events` from `initial_reserved`).
    pub fn new(file: usize, device: i64, out: &Outcome, label: String, oom_text: String) -> Self {
        let mut reserved = out.initial_reserved;
        let mut peak = reserved;
        let points = out
            .seg_events
            .iter()
            .map(|e| {
                reserved = match e.kind {
                    SegKind::Alloc | SegKind::Map => reserved.saturating_add(e.size),
                    SegKind::Free | SegKind::Unmap => reserved.saturating_sub(e.size),
                };
                peak = peak.max(reserved);
                (e.event, reserved)
            })
            .collect();
        let oom_row = out
            .first_oom
            .as_ref()
            .and_then(|o| u32::try_from(o.event).ok());
        let end_row = (!out.completed).then(|| out.events.saturating_sub(1) as u32);
        SimCurve {
            file,
            device,
            initial: out.initial_reserved,
            points,
            end_row,
            oom_row,
            peak,
            label,
            oom_text,
        }
    }
}

/// A curve mapped to one timeline's timesteps.
#[derive(Debug)]
pub struct SimPlot {
    pub curve: Rc<SimCurve>,
    /// The timestep of each point of the curve.
    pub steps: Vec<f64>,
    /// Where the curve ends (the last timestep, or the simulated OOM's).
    pub end_step: f64,
    pub oom_step: Option<f64>,
}

impl SimPlot {
    pub fn new(curve: Rc<SimCurve>, layout: &Layout) -> Self {
        let rows: Vec<u32> = curve.points.iter().map(|p| p.0).collect();
        let steps = rows_to_steps(layout, &rows);
        let one = |row: Option<u32>| row.and_then(|r| rows_to_steps(layout, &[r]).first().copied());
        let end_step = one(curve.end_row).unwrap_or(f64::from(layout.step_count()));
        let oom_step = one(curve.oom_row);
        SimPlot {
            curve,
            steps,
            end_step,
            oom_step,
        }
    }
}

impl TimelineView {
    /// Shows `curve` over this timeline (`None` clears it): maps it to the timesteps once, and
    /// lets the camera's fitted height take the curve's peak.
    pub(in crate::app) fn set_sim(&mut self, curve: Option<Rc<SimCurve>>) {
        let same = match (&self.sim, &curve) {
            (Some(a), Some(b)) => Rc::ptr_eq(&a.curve, b),
            (None, None) => true,
            _ => false,
        };
        let Some(d) = self.data.as_ref() else {
            return;
        };
        let peak = d.layout.peak_bytes;
        if !same {
            self.sim = curve.map(|c| SimPlot::new(c, &d.layout));
            self.frame.needs_redraw = true;
        }
        // Checked on every call: a camera reset (a device or view switch) fits the layout only.
        let sim_peak = self.sim.as_ref().map_or(0, |s| s.curve.peak);
        let top = sim_peak.max(peak).max(1) as f64 * Y_HEADROOM;
        let cam = &mut self.ui.camera;
        if (cam.full_y.1 - top).abs() > 0.5 {
            let fitted = cam.y_range == cam.full_y;
            cam.full_y.1 = top;
            if fitted {
                cam.y_range = cam.full_y;
            }
            cam.clamp();
            self.frame.needs_redraw = true;
        }
    }

    /// The curve's mark for the shell (legend text, the OOM's canvas x inside the plot).
    pub(in crate::app) fn sim_mark(&self) -> Option<WhatIfMark> {
        let s = self.sim.as_ref()?;
        let (geom, cam, map) = (self.geom, self.ui.camera, self.xmap());
        let x_of_step = |step: f64| cam.css_px_from_data(&geom, [map.axis_of_step(step), 0.0])[0];
        let p = geom.plot;
        Some(WhatIfMark {
            label: s.curve.label.clone(),
            rgba: SIM_RGBA,
            oom_x: s
                .oom_step
                .map(&x_of_step)
                .filter(|x| *x >= p.left - 0.5 && *x <= p.right + 0.5),
            oom_text: s.curve.oom_text.clone(),
        })
    }

    /// Draws the curve (a step line, decimated to the pixel columns) and the simulated OOM's
    /// vertical line into the overlay, inside the plot. `origin`: the overlay batch's origin.
    pub(in crate::app) fn draw_sim(&self, out: &mut Vec<Trapezoid>, origin: [f64; 2]) {
        let Some(s) = self.sim.as_ref() else { return };
        let (geom, cam, map) = (self.geom, self.ui.camera, self.xmap());
        let p = geom.plot;
        let px = |step: f64, bytes: u64| {
            cam.css_px_from_data(&geom, [map.axis_of_step(step), bytes as f64])
        };
        let mut rect = |r: RectCss| {
            let a = cam.data_from_css_px(&geom, [r.left, r.bottom]);
            let b = cam.data_from_css_px(&geom, [r.right, r.top]);
            out.push(Trapezoid::rect(
                (a[0] - origin[0]) as f32,
                (b[0] - origin[0]) as f32,
                (a[1] - origin[1]) as f32,
                (b[1] - origin[1]) as f32,
                SIM_COLOR,
            ));
        };
        let h = THICK / 2.0;
        let inside_y = |y: f64| y >= p.top - h && y <= p.bottom + h;
        // A horizontal run at `y` from `x0` to `x1`, clipped to the plot.
        let level = |rect: &mut dyn FnMut(RectCss), x0: f64, x1: f64, y: f64| {
            let (l, r) = (x0.max(p.left), x1.min(p.right));
            if r > l && inside_y(y) {
                rect(RectCss {
                    left: l,
                    right: r,
                    top: y - h,
                    bottom: y + h,
                });
            }
        };
        // A vertical span per pixel column: the rises and falls of the curve there.
        let mut span: Option<(f64, f64, f64)> = None;
        let flush = |rect: &mut dyn FnMut(RectCss), span: &mut Option<(f64, f64, f64)>| {
            if let Some((x, lo, hi)) = span.take() {
                let (top, bottom) = (lo.max(p.top), hi.min(p.bottom));
                if x >= p.left - h && x <= p.right + h && bottom >= top {
                    rect(RectCss {
                        left: x - h,
                        right: x + h,
                        top: top - h,
                        bottom: bottom + h,
                    });
                }
            }
        };
        let start = px(0.0, s.curve.initial);
        let (mut x, mut y) = (start[0], start[1]);
        for (&(_, bytes), &step) in s.curve.points.iter().zip(&s.steps) {
            if step > s.end_step {
                break;
            }
            let q = px(step, bytes);
            if q[0] > p.right + h {
                break;
            }
            if q[0] - x >= 0.5 {
                level(&mut rect, x, q[0], y);
                flush(&mut rect, &mut span);
            }
            let col = q[0].floor();
            span = match span {
                Some((sx, lo, hi)) if sx.floor() == col => Some((sx, lo.min(q[1]), hi.max(q[1]))),
                other => {
                    let mut o = other;
                    flush(&mut rect, &mut o);
                    Some((q[0], y.min(q[1]), y.max(q[1])))
                }
            };
            (x, y) = (q[0], q[1]);
        }
        flush(&mut rect, &mut span);
        let end = px(s.end_step, 0)[0];
        level(&mut rect, x, end, y);
        if let Some(step) = s.oom_step {
            let ox = px(step, 0)[0];
            if ox >= p.left && ox <= p.right {
                rect(RectCss {
                    left: ox - h,
                    right: ox + h,
                    top: p.top,
                    bottom: p.bottom,
                });
            }
        }
    }
}
