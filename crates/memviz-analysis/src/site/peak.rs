//! Sites by content: a stack's content hash (the same call site has the same hash in every
//! file) and the sites holding the most bytes at the peak, which `memviz ranks` lists and
//! memviz-present's legend colours.

use crate::frames::{element_stack, keep_frame};
use crate::site::SiteCache;
use crate::steps::Steps;
use crate::timeline::{Element, Origin, Timeline};
use memviz_snapshot::{Frame, Snapshot, StackId};
use rustc_hash::FxHashMap;

/// The site hash of every private pool envelope: one site of their own (even, so never a
/// [`stack_hash`]).
pub const POOL_LEGEND_HASH: u64 = 2;
/// The label of [`POOL_LEGEND_HASH`]'s site.
pub const POOL_LEGEND_LABEL: &str = "<private pools>";

/// Whether an element is a private pool envelope ([`crate::timeline::build_pools`]).
pub fn is_pool_envelope(e: &Element) -> bool {
    matches!(
        e.origin,
        Origin::PoolInitial { .. } | Origin::PoolGrowth { .. }
    )
}

/// FNV-1a 64 of `bytes` (the `fnv` crate): stable across files, versions and platforms, which
/// colours need (the same stack gets the same colour everywhere).
pub fn fnv1a(bytes: &[&[u8]]) -> u64 {
    use std::hash::Hasher as _;
    let mut h = fnv::FnvHasher::default();
    for b in bytes {
        h.write(b);
    }
    h.finish()
}

/// A content hash of a stack (0 for an empty one): FNV-1a over `filename, name, line` of the
/// frames kept by the §7 filter (all frames when it keeps none), finished with a splitmix64
/// mix. Independent of ids, so it is the same in every file.
pub fn stack_hash(snap: &Snapshot, stack: StackId) -> u64 {
    let frames: Vec<&Frame> = snap
        .stack(stack)
        .iter()
        .filter_map(|&id| snap.frame(id))
        .collect();
    if frames.is_empty() {
        return 0;
    }
    let kept: Vec<&Frame> = frames
        .iter()
        .copied()
        .filter(|f| keep_frame(snap, f))
        .collect();
    let use_frames = if kept.is_empty() { &frames } else { &kept };
    let mut parts: Vec<&[u8]> = Vec::with_capacity(use_frames.len() * 6);
    let lines: Vec<[u8; 8]> = use_frames.iter().map(|f| f.line.to_le_bytes()).collect();
    for (f, line) in use_frames.iter().zip(&lines) {
        parts.extend_from_slice(&[
            snap.str(f.filename).as_bytes(),
            &[0xff],
            snap.str(f.name).as_bytes(),
            &[0xff],
            line,
            &[0xfe],
        ]);
    }
    let mut h = fnv1a(&parts);
    // splitmix64 finaliser, so that the low bits used below are well mixed.
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    h | 1
}

/// One allocation site (stacks with the same content hash) live at the peak.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeakSite {
    pub hash: u64,
    /// Bytes of this site's elements live at the peak.
    pub bytes: u64,
    pub elements: u32,
    /// A representative stack (the lowest element's at the peak).
    pub stack: StackId,
    /// The site's label ([`crate::site::Site::label`]: `basename:line:name`, `backward of mm`,
    /// `<no frames>`), made unique among every site live at the peak
    /// ([`crate::site::unique_labels`]), so a longer list extends a shorter one.
    pub label: String,
}

/// The `n` sites of the elements `live` (bottom first) holding the most bytes, largest first
/// (ties: label, then hash). Private pool envelopes are one site of their own
/// ([`POOL_LEGEND_LABEL`], [`POOL_LEGEND_HASH`]).
pub fn peak_sites(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    live: impl Iterator<Item = u32>,
    n: usize,
) -> Vec<PeakSite> {
    let mut hash_of: FxHashMap<StackId, u64> = FxHashMap::default();
    let mut cache = SiteCache::default_for(snap);
    // hash → (bytes, elements, first stack)
    let mut sites: FxHashMap<u64, (u64, u32, StackId)> = FxHashMap::default();
    for e in live {
        let Some(el) = timeline.elements.get(e as usize) else {
            continue;
        };
        let s = element_stack(snap, device, el);
        let h = if is_pool_envelope(el) {
            POOL_LEGEND_HASH
        } else {
            *hash_of.entry(s).or_insert_with(|| stack_hash(snap, s))
        };
        let site = sites.entry(h).or_insert((0, 0, s));
        site.0 = site.0.saturating_add(el.size_bytes);
        site.1 += 1;
    }
    let mut rows: Vec<PeakSite> = sites
        .into_iter()
        .map(|(hash, (bytes, elements, stack))| {
            let label = if hash == POOL_LEGEND_HASH {
                POOL_LEGEND_LABEL.to_string()
            } else {
                cache.site(snap, stack).label.clone()
            };
            PeakSite {
                hash,
                bytes,
                elements,
                stack,
                label,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| a.label.cmp(&b.label))
            .then_with(|| a.hash.cmp(&b.hash))
    });
    // Labels that tell the sites apart (the pool envelope's is its own), made over every site
    // live at the peak so that a longer list extends a shorter one.
    let named: Vec<(StackId, String)> = rows.iter().map(|r| (r.stack, r.label.clone())).collect();
    let unique = crate::site::unique_labels(snap, &named, &mut cache);
    for (r, l) in rows.iter_mut().zip(unique) {
        if r.hash != POOL_LEGEND_HASH {
            r.label = l;
        }
    }
    rows.truncate(n);
    rows
}

/// [`peak_sites`] of the elements live at the step model's peak step, found by one pass over
/// the push orders (nothing allocated per element). Empty without timesteps.
pub fn sites_at_peak_by_scan(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    steps: &Steps,
    n: usize,
) -> Vec<PeakSite> {
    if steps.step_count() == 0 || n == 0 {
        return Vec::new();
    }
    let peak = steps.peak_step;
    let live = steps
        .drawn_elements()
        .filter(|&e| steps.span(e).is_some_and(|(a, b)| a <= peak && peak < b));
    peak_sites(snap, device, timeline, live, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_is_the_reference_fnv() {
        // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c.
        assert_eq!(fnv1a(&[b"a"]), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(&[b"a", b"b"]), fnv1a(&[b"ab"]));
        assert_eq!(POOL_LEGEND_HASH & 1, 0);
    }
}
