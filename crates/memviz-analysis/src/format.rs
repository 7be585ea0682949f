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

#[cfg(test)]
mod tests {
    use super::*;
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
