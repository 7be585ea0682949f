//! A device capacity as people write one (`memviz whatif --capacity`, and the Python API's
//! `capacity=`, which passes its value to the same command): plain bytes, or a number with a
//! unit. `KiB`/`MiB`/`GiB`/`TiB` and the bare `K`/`M`/`G`/`T` are powers of 1024 (a "40 GB"
//! A100 has 40 GiB, and `MEMVIZ_MAX_MEMORY` reads `G` the same way); `KB`/`MB`/`GB`/`TB` are
//! powers of 1000. Units are case-insensitive; a decimal number is allowed (`1.5GiB`), rounded
//! down to whole bytes.

/// The largest capacity accepted: 1 PiB (beyond any device; keeps the arithmetic far from
/// overflow).
pub const MAX_CAPACITY: u64 = 1 << 50;

/// The multiplier of a unit (case-insensitive), or `None` for an unknown one.
fn unit(u: &str) -> Option<u64> {
    const K: u64 = 1 << 10;
    Some(match u.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => K,
        "m" | "mib" => K * K,
        "g" | "gib" => K * K * K,
        "t" | "tib" => K * K * K * K,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return None,
    })
}

/// `text` as a capacity in bytes, or a sentence saying what is wrong with it (the caller adds
/// which option it was).
pub fn parse_capacity(text: &str) -> Result<u64, String> {
    let hint = "expected bytes or a size such as 40GiB, 40GB (10^9), 40G or 24576MiB";
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, rest) = s.split_at(split);
    let rest = rest.trim();
    if number.is_empty() {
        return Err(format!("`{text}`: {hint}"));
    }
    let Some(mult) = unit(rest) else {
        return Err(format!("`{text}`: unknown unit `{rest}` ({hint})"));
    };
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(format!("`{text}`: {hint}"));
    }
    // Exact arithmetic in u128: int × mult + frac × mult / 10^len(frac).
    let too_big = || format!("`{text}`: larger than {} bytes (1 PiB)", MAX_CAPACITY);
    let digits = |d: &str| -> Result<u128, String> {
        if d.is_empty() {
            return Ok(0);
        }
        // More than 20 digits is beyond u64 anyway.
        if d.len() > 20 {
            return Err(too_big());
        }
        d.parse::<u128>().map_err(|_| format!("`{text}`: {hint}"))
    };
    let frac = frac.get(..frac.len().min(18)).unwrap_or("");
    let whole = digits(int)?.saturating_mul(u128::from(mult));
    let part = digits(frac)?.saturating_mul(u128::from(mult)) / 10u128.pow(frac.len() as u32);
    let bytes = whole.saturating_add(part);
    if bytes == 0 {
        return Err(format!("`{text}`: a capacity must be more than 0 bytes"));
    }
    if bytes > u128::from(MAX_CAPACITY) {
        return Err(too_big());
    }
    u64::try_from(bytes).map_err(|_| too_big())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_numbers() {
        const GIB: u64 = 1 << 30;
        assert_eq!(parse_capacity("40GiB"), Ok(40 * GIB));
        assert_eq!(parse_capacity("40G"), Ok(40 * GIB));
        assert_eq!(parse_capacity("40gib"), Ok(40 * GIB));
        assert_eq!(parse_capacity("40GB"), Ok(40_000_000_000));
        assert_eq!(parse_capacity("24576MiB"), Ok(24 * GIB));
        assert_eq!(parse_capacity(" 24576 MiB "), Ok(24 * GIB));
        assert_eq!(parse_capacity("1.5GiB"), Ok(3 * GIB / 2));
        assert_eq!(parse_capacity("0.5K"), Ok(512));
        assert_eq!(parse_capacity("8589934592"), Ok(8 * GIB));
        assert_eq!(parse_capacity("8589934592B"), Ok(8 * GIB));
        assert_eq!(parse_capacity("1TiB"), Ok(1 << 40));
    }

    #[test]
    fn nonsense_is_refused_with_a_sentence() {
        for bad in [
            "",
            "GiB",
            "-5",
            "40XB",
            "forty",
            "4.0.1G",
            ".",
            "0",
            "0GiB",
            "0.0000001B",
            "1e9",
            "2048TiB",
            "99999999999999999999999999",
            "40 GiB extra",
        ] {
            let e = parse_capacity(bad).expect_err(bad);
            assert!(e.starts_with(&format!("`{bad}`")), "{bad}: {e}");
        }
        assert!(parse_capacity("40XB")
            .expect_err("an unknown unit")
            .contains("unknown unit `XB`"));
    }
}
