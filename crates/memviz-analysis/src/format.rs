//! Display helpers shared by the CLI and the viewer.

/// memory_viz's `formatSize` without the byte count: `1.5GiB`-style binary units, one decimal.
pub fn size_short(bytes: u64) -> String {
    const UNITS: [&str; 8] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1}{}B", UNITS[u])
}

/// memory_viz's `formatSize`: `1.5GiB (1610612736 bytes)`.
pub fn size_long(bytes: u64) -> String {
    format!("{} ({bytes} bytes)", size_short(bytes))
}

/// An integer with thousands separators: `19,464`.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration of `us` microseconds: `850 µs` below a millisecond, else `12.5 ms` below a
/// second, else `3.2 s` (one decimal; negative durations keep their sign).
pub fn duration_us(us: i64) -> String {
    let a = us.unsigned_abs() as f64;
    let sign = if us < 0 { "-" } else { "" };
    if a < 1_000.0 {
        format!("{us} µs")
    } else if a < 1e6 {
        format!("{sign}{:.1} ms", a / 1_000.0)
    } else {
        format!("{sign}{:.1} s", a / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration_us(0), "0 µs");
        assert_eq!(duration_us(999), "999 µs");
        assert_eq!(duration_us(1_500), "1.5 ms");
        assert_eq!(duration_us(2_345_678), "2.3 s");
        assert_eq!(duration_us(-1_500), "-1.5 ms");
    }
    #[test]
    fn sizes() {
        assert_eq!(size_short(512), "512.0B");
        assert_eq!(size_short(2 * 1024 * 1024), "2.0MiB");
        assert_eq!(size_long(1536), "1.5KiB (1536 bytes)");
        assert_eq!(count(19464), "19,464");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000_000), "1,000,000");
    }
}
