//! Axis ticks: positions and labels, computed in Rust and drawn as text by the shell.
//!
//! - bytes: binary units, steps `{1, 2, 5, 10, 20, 50, 100, 200, 500} × 1024^k` bytes, the
//!   unit of the step labelling every tick (`512 MiB`, `1 GiB`, `1.5 GiB`);
//! - timesteps: `{1, 2, 5} × 10^k`;
//! - time: `{1, 2, 5} × 10^k` µs relative to the first event, labelled `µs` / `ms` / `s`.

/// One tick: where (CSS px along the axis, x for the x axis, y for the y axis) and its text.
#[derive(Clone, Debug, PartialEq, serde::Serialize, ts_rs::TS)]
pub struct Tick {
    pub pos_css_px: f64,
    pub value: f64,
    pub label: String,
}

const MAX_TICKS: usize = 200;

/// Values `k × step` inside `[lo, hi]`, ascending (at most [`MAX_TICKS`]).
fn multiples(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    if step.is_nan() || step <= 0.0 || !lo.is_finite() || !hi.is_finite() || hi < lo {
        return Vec::new();
    }
    let first = (lo / step).ceil();
    let mut out = Vec::new();
    let mut k = first;
    while out.len() < MAX_TICKS {
        let v = k * step;
        if v > hi {
            break;
        }
        out.push(v);
        k += 1.0;
    }
    out
}

/// The smallest 1-2-5 × 10^k step ≥ `raw`.
#[must_use]
pub fn nice_decimal_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw * (1.0 - 1e-12) {
            return m * p;
        }
    }
    10.0 * p
}

/// The smallest binary-unit step ≥ `raw` bytes, and its unit exponent (1024^k).
#[must_use]
pub fn nice_byte_step(raw: f64) -> (f64, u32) {
    if raw.is_nan() || raw <= 0.0 || !raw.is_finite() {
        return (1.0, 0);
    }
    let mut unit = 0u32;
    while unit < 6 && raw >= 1024f64.powi(unit as i32 + 1) {
        unit += 1;
    }
    let base = 1024f64.powi(unit as i32);
    for m in [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1024.0] {
        if m * base >= raw {
            return if m >= 1024.0 && unit < 6 {
                (base * 1024.0, unit + 1)
            } else {
                (m * base, unit)
            };
        }
    }
    (1024.0 * base, unit + 1)
}

fn trim(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `1.5 GiB`-style label of `bytes` in unit 1024^`unit`.
#[must_use]
pub fn byte_label(bytes: f64, unit: u32) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes == 0.0 {
        return "0".to_string();
    }
    let u = (unit as usize).min(UNITS.len() - 1);
    let v = bytes / 1024f64.powi(u as i32);
    format!("{} {}", trim(v, 3), UNITS.get(u).copied().unwrap_or("B"))
}

/// Ticks of a byte axis showing `[lo, hi]` over `len_css` px (`pos` maps a value to CSS px).
pub fn byte_ticks(lo: f64, hi: f64, len_css: f64, pos: impl Fn(f64) -> f64) -> Vec<Tick> {
    let want = (len_css / 48.0).clamp(2.0, 40.0);
    let (step, unit) = nice_byte_step((hi - lo) / want);
    multiples(lo.max(0.0), hi, step)
        .into_iter()
        .map(|v| Tick {
            pos_css_px: pos(v),
            value: v,
            label: byte_label(v, unit),
        })
        .collect()
}

/// Ticks of a timestep axis.
pub fn step_ticks(lo: f64, hi: f64, len_css: f64, pos: impl Fn(f64) -> f64) -> Vec<Tick> {
    let want = (len_css / 90.0).clamp(2.0, 40.0);
    let step = nice_decimal_step((hi - lo) / want).max(1.0);
    multiples(lo.max(0.0), hi, step)
        .into_iter()
        .map(|v| Tick {
            pos_css_px: pos(v),
            value: v,
            label: trim(v, 0),
        })
        .collect()
}

/// `1.5 ms`-style label of a relative time in µs, with as many decimals as `step_us` needs.
#[must_use]
pub fn time_label(t_us: f64, step_us: f64) -> String {
    let (div, unit) = if step_us >= 1e6 {
        (1e6, "s")
    } else if step_us >= 1e3 {
        (1e3, "ms")
    } else {
        (1.0, "µs")
    };
    format!("{} {unit}", trim(t_us / div, 3))
}

/// The smallest distance between two time ticks, CSS px (room for a label like `12.5 ms`).
pub const MIN_TIME_TICK_GAP_CSS: f64 = 64.0;

/// The (non-decreasing) relative time, µs, at each timestep of a time axis.
pub trait StepTimes {
    /// Number of timesteps.
    fn len(&self) -> usize;
    /// The time of timestep `i`.
    fn at(&self, i: usize) -> Option<f64>;
    /// The first timestep whose time is at least `t` (`len()` if none).
    fn first_reaching(&self, t: f64) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl StepTimes for [f64] {
    fn len(&self) -> usize {
        <[f64]>::len(self)
    }
    fn at(&self, i: usize) -> Option<f64> {
        self.get(i).copied()
    }
    fn first_reaching(&self, t: f64) -> usize {
        self.partition_point(|&s| s < t)
    }
}

/// Ticks of a time axis: `step_time_us` is the (non-decreasing) relative time at each
/// timestep; ticks are nice times mapped back to (fractional) timesteps, at least
/// [`MIN_TIME_TICK_GAP_CSS`] apart.
pub fn time_ticks<T: StepTimes + ?Sized>(
    x_lo: f64,
    x_hi: f64,
    len_css: f64,
    step_time_us: &T,
    pos: impl Fn(f64) -> f64,
) -> Vec<Tick> {
    let n = step_time_us.len();
    if n == 0 {
        return Vec::new();
    }
    let t_at = |x: f64| -> f64 {
        let i = x.floor().clamp(0.0, (n - 1) as f64) as usize;
        let a = step_time_us.at(i).unwrap_or(0.0);
        let b = step_time_us.at(i + 1).unwrap_or(a);
        let f = (x - i as f64).clamp(0.0, 1.0);
        a + (b - a) * f
    };
    let (t_lo, t_hi) = (t_at(x_lo), t_at(x_hi));
    if t_hi.is_nan() || t_lo.is_nan() || t_hi <= t_lo {
        return Vec::new();
    }
    let want = (len_css / 100.0).clamp(2.0, 30.0);
    let step = nice_decimal_step((t_hi - t_lo) / want);
    let mut out: Vec<Tick> = Vec::new();
    for t in multiples(t_lo, t_hi, step) {
        // First timestep whose time reaches t, interpolated within the step before it.
        let i = step_time_us.first_reaching(t);
        let x = if i == 0 {
            0.0
        } else {
            let a = step_time_us.at(i - 1).unwrap_or(t);
            let b = step_time_us.at(i).unwrap_or(a);
            let f = if b > a { (t - a) / (b - a) } else { 1.0 };
            (i - 1) as f64 + f.clamp(0.0, 1.0)
        };
        let p = pos(x);
        // Time is not spread evenly over timesteps: where it jumps, several ticks land on a
        // few pixels. Keep a tick only when its label has room after the previous one.
        if out
            .last()
            .is_some_and(|l: &Tick| p < l.pos_css_px + MIN_TIME_TICK_GAP_CSS)
        {
            continue;
        }
        out.push(Tick {
            pos_css_px: p,
            value: t,
            label: time_label(t, step),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_steps_and_labels() {
        assert_eq!(nice_byte_step(1000.0), (1024.0, 1));
        assert_eq!(nice_byte_step(3.0 * 1024.0 * 1024.0), (5.0 * 1048576.0, 2));
        assert_eq!(byte_label(1.5 * 1073741824.0, 3), "1.5 GiB");
        assert_eq!(byte_label(0.0, 3), "0");
        assert_eq!(time_label(1500.0, 500.0), "1500 µs");
        assert_eq!(time_label(1500.0, 1000.0), "1.5 ms");
        assert_eq!(nice_decimal_step(3.0), 5.0);
        assert_eq!(nice_decimal_step(0.0), 1.0);
    }

    #[test]
    fn time_ticks_increase() {
        let times: Vec<f64> = (0..1000).map(|i| f64::from(i) * 37.0).collect();
        let t = time_ticks(0.0, 999.0, 800.0, times.as_slice(), |x| x);
        assert!(t.len() >= 2);
        assert!(t.windows(2).all(|w| w[0].pos_css_px < w[1].pos_css_px));
    }

    #[test]
    fn time_ticks_keep_room_where_time_jumps() {
        // 1 µs per step, except a 2000 µs jump between steps 50 and 51.
        let times: Vec<f64> = (0..100)
            .map(|i| f64::from(i) + if i > 50 { 2000.0 } else { 0.0 })
            .collect();
        let t = time_ticks(0.0, 99.0, 800.0, times.as_slice(), |x| x * 8.0);
        assert!(t.len() >= 2, "{t:?}");
        assert!(
            t.windows(2)
                .all(|w| w[1].pos_css_px - w[0].pos_css_px >= MIN_TIME_TICK_GAP_CSS),
            "{t:?}"
        );
    }
}
