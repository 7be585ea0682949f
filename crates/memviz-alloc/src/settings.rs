//! `PYTORCH_CUDA_ALLOC_CONF` and a snapshot's `allocator_settings` (ALLOCATOR.md §1, §3, §7).

use crate::consts::{LARGE_BUFFER, MIB};
use memviz_snapshot::Snapshot;
use serde::Serialize;
use std::fmt;

/// Number of `roundup_power2_divisions` intervals (ALLOCATOR.md §1: index 0 = every size below
/// 2 MiB, index k = [2^(20+k), 2^(21+k)), index 15 = 32 GiB and above).
pub const DIVISION_INTERVALS: usize = 16;

/// The caching allocator's settings that change what it does with memory. Defaults are
/// PyTorch's ([`Settings::default`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Settings {
    /// `expandable_segments:True` (torch ≥ 2.1).
    pub expandable_segments: bool,
    /// `max_split_size_mb` in bytes; `None` = unlimited (the default).
    pub max_split_size: Option<u64>,
    /// `max_non_split_rounding_mb` in bytes (torch ≥ 2.6; 20 MiB before and by default).
    pub max_non_split_rounding: u64,
    /// `roundup_power2_divisions` per interval (0 = no power-2 rounding there).
    pub roundup_power2_divisions: [u64; DIVISION_INTERVALS],
    /// `garbage_collection_threshold` in (0, 1); `None` = off. Acts only with a capacity.
    pub garbage_collection_threshold: Option<f64>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            expandable_segments: false,
            max_split_size: None,
            max_non_split_rounding: LARGE_BUFFER,
            roundup_power2_divisions: [0; DIVISION_INTERVALS],
            garbage_collection_threshold: None,
        }
    }
}

/// Keys PyTorch accepts that change nothing this model follows (pinned host memory, locking).
const NO_EFFECT: &[&str] = &[
    "release_lock_on_cudamalloc",
    "pinned_use_cuda_host_register",
    "pinned_num_register_threads",
    "pinned_use_background_threads",
    "pinned_reserve_segment_size_mb",
    "graph_capture_record_stream_reuse",
    "per_process_memory_fraction",
];

/// Splits `a:b,c:[d:e,f:g]` at the commas outside brackets.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "True" | "true" | "1" => Some(true),
        "False" | "false" | "0" => Some(false),
        _ => None,
    }
}

/// floor(log2(x)) for x > 0.
fn log2_floor(x: u64) -> u32 {
    63 - x.leading_zeros()
}

impl Settings {
    /// Parses a `PYTORCH_CUDA_ALLOC_CONF` string over the defaults. Unknown keys and bad values
    /// become warnings (the value is then left at its default); never panics.
    #[must_use]
    pub fn parse(conf: &str) -> (Settings, Vec<String>) {
        let mut s = Settings::default();
        let mut warnings = Vec::new();
        s.apply_conf(conf, &mut warnings);
        (s, warnings)
    }

    /// Applies a conf string on top of `self`.
    pub fn apply_conf(&mut self, conf: &str, warnings: &mut Vec<String>) {
        for item in split_top(conf) {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let Some((key, value)) = item.split_once(':') else {
                warnings.push(format!(
                    "allocator setting `{item}` has no `:value`; ignored"
                ));
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            let bad = |w: &mut Vec<String>, why: &str| {
                w.push(format!("allocator setting `{key}:{value}`: {why}; ignored"));
            };
            match key {
                "expandable_segments" => match parse_bool(value) {
                    Some(b) => self.expandable_segments = b,
                    None => bad(warnings, "expected True or False"),
                },
                "max_split_size_mb" => match value.parse::<u64>() {
                    // PyTorch refuses ≤ 20 (CUDAAllocatorConfig) or < 20 (AcceleratorAllocatorConfig).
                    Ok(mb) if mb >= LARGE_BUFFER / MIB => {
                        self.max_split_size = Some(mb.saturating_mul(MIB));
                    }
                    _ => bad(warnings, "expected an integer of at least 20 (MB)"),
                },
                "max_non_split_rounding_mb" => match value.parse::<u64>() {
                    Ok(mb) => self.max_non_split_rounding = mb.saturating_mul(MIB),
                    _ => bad(warnings, "expected an integer (MB)"),
                },
                "garbage_collection_threshold" => match value.parse::<f64>() {
                    Ok(t) if t > 0.0 && t < 1.0 => self.garbage_collection_threshold = Some(t),
                    _ => bad(warnings, "expected a number in (0, 1)"),
                },
                "roundup_power2_divisions" => {
                    if let Err(why) = self.parse_divisions(value) {
                        bad(warnings, &why);
                    }
                }
                "backend" => {
                    if value != "native" {
                        warnings.push(format!(
                            "backend:{value}: the model follows the native caching allocator only"
                        ));
                    }
                }
                "large_segment_size_mb" | "roundup_bypass_threshold_mb" => warnings.push(format!(
                    "allocator setting `{key}` is not modelled (PyTorch's default is used)"
                )),
                k if NO_EFFECT.contains(&k) => {}
                _ => warnings.push(format!("unknown allocator setting `{key}`; ignored")),
            }
        }
    }

    /// `N` (every interval) or `[K:V,…,>:V]` (ALLOCATOR.md §1; `>` starts at the last explicit
    /// index, as every `CUDAAllocatorConfig` from 2.1 does). All or nothing.
    fn parse_divisions(&mut self, value: &str) -> Result<(), String> {
        let check = |v: u64| {
            if v == 0 || v.is_power_of_two() {
                Ok(v)
            } else {
                Err(format!("division {v} is not a power of 2"))
            }
        };
        let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) else {
            let v = value
                .parse::<u64>()
                .map_err(|_| "expected N or [K:V,…]".to_string())?;
            self.roundup_power2_divisions = [check(v)?; DIVISION_INTERVALS];
            return Ok(());
        };
        let mut d = self.roundup_power2_divisions;
        let mut first = true;
        let mut last = 0usize;
        for pair in inner.split(',') {
            let Some((k, v)) = pair.split_once(':') else {
                return Err(format!("`{pair}` is not K:V"));
            };
            let v = check(
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("`{v}` is not a number"))?,
            )?;
            let k = k.trim();
            if k == ">" {
                for x in d.iter_mut().skip(last) {
                    *x = v;
                }
                continue;
            }
            let kv = k
                .parse::<u64>()
                .ok()
                .filter(|k| k.is_power_of_two())
                .ok_or_else(|| format!("interval `{k}` is not a power of 2"))?;
            let idx = (log2_floor(kv) as usize).min(DIVISION_INTERVALS - 1);
            if first {
                for x in d.iter_mut().take(idx) {
                    *x = v;
                }
                first = false;
            }
            if let Some(x) = d.get_mut(idx) {
                *x = v;
            }
            last = idx;
        }
        self.roundup_power2_divisions = d;
        Ok(())
    }

    /// The settings a snapshot was recorded under: its `allocator_settings` (torch ≥ 2.3; the conf
    /// string first, for what the structured fields do not record, then the structured fields),
    /// else PyTorch's defaults (with a warning saying so).
    #[must_use]
    pub fn from_snapshot(snap: &Snapshot) -> (Settings, Vec<String>) {
        let mut s = Settings::default();
        let mut w = Vec::new();
        let Some(obj) = snap.allocator_settings.as_ref().and_then(|v| v.as_object()) else {
            w.push("no allocator_settings in the file: PyTorch's defaults assumed".to_string());
            return (s, w);
        };
        // The conf string (also the NPU's / the 2.10 generic name).
        for (k, v) in obj {
            if k.ends_with("ALLOC_CONF") {
                if let Some(conf) = v.as_str() {
                    s.apply_conf(conf, &mut w);
                }
            }
        }
        if let Some(v) = obj.get("expandable_segments").and_then(|v| v.as_bool()) {
            s.expandable_segments = v;
        }
        if let Some(v) = obj.get("max_split_size").and_then(|v| v.as_i64()) {
            s.max_split_size = u64::try_from(v).ok().filter(|&b| b > 0 && b < u64::MAX / 2);
        }
        if let Some(t) = obj
            .get("garbage_collection_threshold")
            .and_then(|v| v.as_f64())
        {
            s.garbage_collection_threshold = (t > 0.0 && t < 1.0).then_some(t);
        }
        if let Some(map) = obj
            .get("roundup_power2_divisions")
            .and_then(|v| v.as_object())
        {
            for (k, v) in map {
                let (Ok(kv), Some(v)) = (k.parse::<u64>(), v.as_u64()) else {
                    w.push(format!(
                        "allocator_settings.roundup_power2_divisions[{k}] unreadable"
                    ));
                    continue;
                };
                if kv.is_power_of_two() && (v == 0 || v.is_power_of_two()) {
                    let idx = (log2_floor(kv) as usize).min(DIVISION_INTERVALS - 1);
                    if let Some(x) = s.roundup_power2_divisions.get_mut(idx) {
                        *x = v;
                    }
                }
            }
        }
        (s, w)
    }

    /// The divisions for a request of `size` bytes (ALLOCATOR.md §1).
    #[must_use]
    pub fn divisions(&self, size: u64) -> u64 {
        let idx = (log2_floor(size.max(1)) as i64 - 20).clamp(0, DIVISION_INTERVALS as i64 - 1);
        self.roundup_power2_divisions
            .get(idx as usize)
            .copied()
            .unwrap_or(0)
    }

    /// The settings with every conf key of `conf` applied (for the sweep's alternatives).
    #[must_use]
    pub fn with(&self, conf: &str) -> Settings {
        let mut s = self.clone();
        let mut w = Vec::new();
        s.apply_conf(conf, &mut w);
        s
    }
}

/// The canonical conf string: the keys that differ from PyTorch's defaults, in a fixed order
/// (`""` for the defaults). [`Settings::parse`] reads it back to the same settings.
impl fmt::Display for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = Settings::default();
        let mut parts: Vec<String> = Vec::new();
        if self.expandable_segments {
            parts.push("expandable_segments:True".into());
        }
        if let Some(m) = self.max_split_size {
            parts.push(format!("max_split_size_mb:{}", m / MIB));
        }
        if self.max_non_split_rounding != d.max_non_split_rounding {
            parts.push(format!(
                "max_non_split_rounding_mb:{}",
                self.max_non_split_rounding / MIB
            ));
        }
        let r = &self.roundup_power2_divisions;
        if r != &d.roundup_power2_divisions {
            let v0 = r.first().copied().unwrap_or(0);
            if r.iter().all(|&x| x == v0) {
                parts.push(format!("roundup_power2_divisions:{v0}"));
            } else {
                // The trailing run r[k..] of equal values goes into `>` (which starts at the last
                // explicit index, k).
                let last = r.last().copied().unwrap_or(0);
                let k = (0..DIVISION_INTERVALS)
                    .rev()
                    .take_while(|&i| r.get(i) == Some(&last))
                    .last()
                    .unwrap_or(DIVISION_INTERVALS - 1);
                let mut pairs = vec![format!("1:{v0}")];
                for i in 1..=k {
                    let v = r.get(i).copied().unwrap_or(0);
                    if v != 0 || i == k {
                        pairs.push(format!("{}:{v}", 1u64 << i));
                    }
                }
                if k < DIVISION_INTERVALS - 1 {
                    pairs.push(format!(">:{last}"));
                }
                parts.push(format!("roundup_power2_divisions:[{}]", pairs.join(",")));
            }
        }
        if let Some(t) = self.garbage_collection_threshold {
            parts.push(format!("garbage_collection_threshold:{t}"));
        }
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_issue_example() {
        let (s, w) = Settings::parse(
            "expandable_segments:True,max_split_size_mb:512,roundup_power2_divisions:[256:1,512:2,>:4],garbage_collection_threshold:0.6,max_non_split_rounding_mb:64,bogus:1",
        );
        assert!(s.expandable_segments);
        assert_eq!(s.max_split_size, Some(512 * MIB));
        assert_eq!(s.max_non_split_rounding, 64 * MIB);
        assert_eq!(s.garbage_collection_threshold, Some(0.6));
        // 256 → index 8 (and every lower one), `>` from the last explicit index (9) on.
        let r = s.roundup_power2_divisions;
        assert_eq!(&r[..9], &[1; 9]);
        assert_eq!(&r[9..], &[4; 7]);
        assert_eq!(w.len(), 1, "{w:?}");
        let (back, w2) = Settings::parse(&s.to_string());
        assert!(w2.is_empty());
        assert_eq!(back, s);
    }

    #[test]
    fn bad_values_are_warnings() {
        let (s, w) = Settings::parse(
            "max_split_size_mb:10,roundup_power2_divisions:3,garbage_collection_threshold:2,x,expandable_segments:maybe",
        );
        assert_eq!(s, Settings::default());
        assert_eq!(w.len(), 5, "{w:?}");
        assert_eq!(Settings::default().to_string(), "");
    }

    #[test]
    fn rounding_table_round_trips() {
        for conf in [
            "roundup_power2_divisions:4",
            "roundup_power2_divisions:[1:0,4:8,>:2]",
            "roundup_power2_divisions:[64:8,32768:1]",
        ] {
            let (s, w) = Settings::parse(conf);
            assert!(w.is_empty(), "{w:?}");
            let (back, _) = Settings::parse(&s.to_string());
            assert_eq!(back, s, "{conf} → {s}");
        }
    }
}
