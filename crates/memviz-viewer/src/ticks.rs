//! Axis ticks: positions and labels, computed in Rust and drawn as text by the shell.
//!
//! - bytes: binary units, steps `{1, 2, 5, 10, 20, 50, 100, 200, 500} × 1024^k` bytes, the
//!   unit of the step labelling every tick (`512 MiB`, `1 GiB`, `1.5 GiB`);
//! - timesteps: `{1, 2, 5} × 10^k`;
//! - time (linear in µs relative to the first event): `{1, 2, 5} × 10^k` µs, labelled in one
//!   unit for the visible span (`µs` / `ms` / `s`).

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

/// The unit of a time axis showing `span_us`: the largest of s, ms, µs the span holds at least
/// once, moved up while labels would need five digits or more before the point (`12.00005 s`
/// rather than `12000050 µs` deep into a long trace). Returns (µs per unit, name).
fn time_unit(span_us: f64, max_us: f64) -> (f64, &'static str) {
    const UNITS: [(f64, &str); 3] = [(1.0, "µs"), (1e3, "ms"), (1e6, "s")];
    let mut u = if span_us >= 1e6 {
        2
    } else if span_us >= 1e3 {
        1
    } else {
        0
    };
    while u < 2 && max_us.abs() / UNITS[u].0 >= 1e4 {
        u += 1;
    }
    UNITS[u]
}

/// `1.5 s`-style label of a relative time in µs: the unit suits the visible span `span_us`
/// (see `time_unit`), with as many decimals as the tick step `step_us` needs in it.
#[must_use]
pub fn time_label(t_us: f64, step_us: f64, span_us: f64) -> String {
    time_label_in(t_us, step_us, time_unit(span_us, t_us))
}

fn time_label_in(t_us: f64, step_us: f64, (div, unit): (f64, &str)) -> String {
    let step = step_us / div;
    let decimals = if step > 0.0 && step.is_finite() {
        (-(step.log10() + 1e-9).floor()).clamp(0.0, 9.0) as usize
    } else {
        0
    };
    format!("{} {unit}", trim(t_us / div, decimals))
}

/// The smallest distance between two time ticks, CSS px (room for a label like `12.5 ms`).
pub const MIN_TIME_TICK_GAP_CSS: f64 = 64.0;

/// Ticks of a linear time axis showing `[lo, hi]` µs (relative to the first event) over
/// `len_css` px: 1-2-5 × 10^k µs steps, about one per 100 px, none before 0, labelled in one
/// unit chosen for the span (`250 ms`, `1.5 s`).
pub fn time_ticks(lo: f64, hi: f64, len_css: f64, pos: impl Fn(f64) -> f64) -> Vec<Tick> {
    if !lo.is_finite() || !hi.is_finite() || hi <= lo {
        return Vec::new();
    }
    let want = (len_css / 100.0).clamp(2.0, 30.0);
    let step = nice_decimal_step((hi - lo) / want);
    let unit = time_unit(hi - lo, lo.abs().max(hi.abs()));
    let mut out: Vec<Tick> = Vec::new();
    for t in multiples(lo.max(0.0), hi, step) {
        let p = pos(t);
        if out
            .last()
            .is_some_and(|l: &Tick| p < l.pos_css_px + MIN_TIME_TICK_GAP_CSS)
        {
            continue;
        }
        out.push(Tick {
            pos_css_px: p,
            value: t,
            label: time_label_in(t, step, unit),
        });
    }
    out
}

/// Average width of a character of the shell's 11 px phase labels, CSS px (a little over the
/// system sans-serif's, so an elided label fits without the shell cutting it again).
pub const PHASE_CHAR_CSS: f64 = 6.2;
/// Horizontal padding of a phase label, CSS px (3 px each side, main.css).
pub const PHASE_PAD_CSS: f64 = 6.0;

/// A phase name shortened to fit `width_css` of the 11 px labels: elided in the middle
/// (`Optimizer.st…Adam.step`), keeping a trailing number whole (`ProfilerStep#…12` keeps `12`),
/// since phases that share a prefix differ at their end. Unchanged when it fits; `""` when not
/// even one character and the ellipsis fit.
#[must_use]
pub fn elide_phase_name(name: &str, width_css: f64) -> String {
    let room = ((width_css - PHASE_PAD_CSS) / PHASE_CHAR_CSS).floor();
    let max = if room.is_finite() && room > 0.0 {
        room as usize
    } else {
        0
    };
    elide_middle(name, max)
}

/// `text` in at most `max` characters: the head, `…`, the tail (at least the trailing number,
/// else about half). Unchanged when it fits.
#[must_use]
pub fn elide_middle(text: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return text.to_string();
    }
    if max < 2 {
        return String::new();
    }
    let keep = max - 1;
    let digits = chars
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .count();
    let number = if digits < chars.len() { digits } else { 0 };
    let tail = number.max(keep / 2).min(keep);
    let head = keep - tail;
    let start: String = chars.iter().take(head).collect();
    let end: String = chars.iter().skip(chars.len() - tail).collect();
    format!("{}…{}", start.trim_end(), end.trim_start())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_names_elide_in_the_middle_and_keep_the_step_number() {
        // Fits: unchanged.
        assert_eq!(elide_phase_name("forward", 200.0), "forward");
        // Two phases that share a long prefix stay told apart by their ends.
        let a = elide_phase_name("Optimizer.step#NIPSAdam.step#3", 120.0);
        let b = elide_phase_name("Optimizer.step#NIPSAdam.step#4", 120.0);
        assert_ne!(a, b);
        assert!(
            a.contains('…') && a.ends_with("#3") && a.starts_with("Optim"),
            "{a}"
        );
        assert!(
            a.chars().count() as f64 * PHASE_CHAR_CSS + PHASE_PAD_CSS <= 120.0,
            "{a}"
        );
        // A long step number is kept whole, even when little else fits.
        assert_eq!(elide_middle("ProfilerStep#123456", 8), "P…123456");
        assert_eq!(elide_middle("ProfilerStep#12", 9), "Prof…p#12");
        assert_eq!(elide_middle("abcdefghij", 5), "ab…ij");
        // Only digits: no number to keep apart, plain middle elision.
        assert_eq!(elide_middle("1234567890", 5), "12…90");
        // Too narrow for anything, and non-finite widths.
        assert_eq!(elide_phase_name("forward", 10.0), "");
        assert_eq!(elide_phase_name("forward", f64::NAN), "");
        // Characters, not bytes.
        assert_eq!(elide_middle("ééééééééé", 5), "éé…éé");
    }

    #[test]
    fn byte_steps_and_labels() {
        assert_eq!(nice_byte_step(1000.0), (1024.0, 1));
        assert_eq!(nice_byte_step(3.0 * 1024.0 * 1024.0), (5.0 * 1048576.0, 2));
        assert_eq!(byte_label(1.5 * 1073741824.0, 3), "1.5 GiB");
        assert_eq!(byte_label(0.0, 3), "0");
        assert_eq!(nice_decimal_step(3.0), 5.0);
        assert_eq!(nice_decimal_step(0.0), 1.0);
    }

    #[test]
    fn time_labels_take_the_unit_of_the_span() {
        assert_eq!(time_label(1500.0, 500.0, 900.0), "1500 µs");
        assert_eq!(time_label(1500.0, 500.0, 3000.0), "1.5 ms");
        assert_eq!(time_label(250_000.0, 50_000.0, 400_000.0), "250 ms");
        assert_eq!(time_label(1_500_000.0, 500_000.0, 3e6), "1.5 s");
        assert_eq!(time_label(0.0, 500_000.0, 3e6), "0 s");
        // Deep into a long trace: seconds with the step's decimals, not 8-digit µs.
        assert_eq!(time_label(12_000_050.0, 50.0, 400.0), "12.00005 s");
    }

    /// Ticks are linear in time: evenly spaced values, positions `pos(value)`, round labels.
    #[test]
    fn time_ticks_are_linear_and_round() {
        let (lo, hi, left, width) = (0.0, 2_600_000.0, 72.0, 800.0);
        let pos = |t: f64| left + (t - lo) / (hi - lo) * width;
        let t = time_ticks(lo, hi, width, pos);
        assert!(t.len() >= 4, "{t:?}");
        let step = t[1].value - t[0].value;
        assert_eq!(step, 500_000.0);
        for (k, tick) in t.iter().enumerate() {
            assert_eq!(tick.value, k as f64 * step);
            assert!((tick.pos_css_px - pos(tick.value)).abs() < 1e-9);
        }
        let labels: Vec<&str> = t.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["0 s", "0.5 s", "1 s", "1.5 s", "2 s", "2.5 s"]);
        // Nothing before 0 (the camera may show a margin), no ticks for an empty span.
        let m = time_ticks(-100.0, 900.0, 800.0, |x| x);
        assert!(m.iter().all(|t| t.value >= 0.0));
        assert!(time_ticks(5.0, 5.0, 800.0, |x| x).is_empty());
        assert!(time_ticks(f64::NAN, 5.0, 800.0, |x| x).is_empty());
    }
}
