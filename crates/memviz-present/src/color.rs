//! Stable colours per allocation site, and the legend of the largest sites at the peak.
//!
//! memory_viz colours a band by its element index (`Tableau10[i % 10]`), so colours change with
//! the file and say nothing. Here the colour is a deterministic hash of the stack's *content*
//! (the filenames, names and lines of the frames kept by the §7 filter; all frames when the
//! filter keeps none) into a fixed 20-colour palette: the same call site gets the same colour
//! across reloads and across files. Stacks with no frames get a neutral grey; private pool
//! envelopes ([`memviz_analysis::timeline::build_pools`]) get memory_viz's pool grey ([`POOL_COLOR`]).
//!
//! Twenty colours cannot keep every site apart, but the legend's must be: the
//! [`LEGEND_DISTINCT`] sites holding the most bytes at the peak get palette colours of their
//! own, each its hashed colour unless that one is taken or within [`MIN_LEGEND_DISTANCE`] of
//! one already given, else the free colour farthest from those ([`legend_colors`]). The peak
//! is fixed per (file, device, view), so a site keeps its colour across zooms;
//! [`element_colors_with_legend`] colours the elements the same way.

use crate::layout::Layout;
use memviz_analysis::frames::element_stack;
use memviz_analysis::site::{is_pool_envelope, peak_sites, sites_at_peak_by_scan, PeakSite};
use memviz_analysis::steps::Steps;
use memviz_analysis::timeline::Timeline;
use memviz_snapshot::{Snapshot, StackId};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// The palette: Tableau 20 without its two greys, plus two darker hues (category20b).
pub const PALETTE: [[u8; 3]; 20] = [
    [0x1f, 0x77, 0xb4],
    [0xff, 0x7f, 0x0e],
    [0x2c, 0xa0, 0x2c],
    [0xd6, 0x27, 0x28],
    [0x94, 0x67, 0xbd],
    [0x8c, 0x56, 0x4b],
    [0xe3, 0x77, 0xc2],
    [0xbc, 0xbd, 0x22],
    [0x17, 0xbe, 0xcf],
    [0xae, 0xc7, 0xe8],
    [0xff, 0xbb, 0x78],
    [0x98, 0xdf, 0x8a],
    [0xff, 0x98, 0x96],
    [0xc5, 0xb0, 0xd5],
    [0xc4, 0x9c, 0x94],
    [0xf7, 0xb6, 0xd2],
    [0xdb, 0xdb, 0x8d],
    [0x9e, 0xda, 0xe5],
    [0x39, 0x3b, 0x79],
    [0x63, 0x79, 0x39],
];
/// Colour index of stacks without frames (Tableau's grey `#7f7f7f`: far enough from the pool
/// grey and from every palette colour to tell apart in a legend).
pub const NO_FRAMES_COLOR: u8 = PALETTE.len() as u8;
const NO_FRAMES_RGB: [u8; 3] = [0x7f, 0x7f, 0x7f];
/// Colour index of private pool envelopes: memory_viz's colour 9 (Tableau10 grey `#bab0ab`).
pub const POOL_COLOR: u8 = NO_FRAMES_COLOR + 1;
const POOL_RGB: [u8; 3] = [0xba, 0xb0, 0xab];
/// [`LegendEntry::hash`] and [`LegendEntry::label`] of the private pools' entry (content
/// hashes of stacks are odd or 0), and the content hash of a stack.
pub use memviz_analysis::site::{stack_hash, POOL_LEGEND_HASH, POOL_LEGEND_LABEL};

/// Elements that do not match a search or a selected row: a faint grey.
pub const DIM_COLOR: u8 = POOL_COLOR + 1;
const DIM_RGBA: [u8; 4] = [0xd8, 0xd8, 0xdc, 255];
/// Elements hidden by "show only matches": fully transparent.
pub const HIDDEN_COLOR: u8 = POOL_COLOR + 2;

/// RGBA8 of a colour index (opaque except [`HIDDEN_COLOR`]; grey for [`NO_FRAMES_COLOR`] and anything out of range, (grey for [`NO_FRAMES_COLOR`] and anything out of range,
/// the pool grey for [`POOL_COLOR`]).
pub fn rgba(color: u8) -> [u8; 4] {
    if color == DIM_COLOR {
        return DIM_RGBA;
    }
    if color == HIDDEN_COLOR {
        return [255, 255, 255, 0];
    }
    let [r, g, b] = if color == POOL_COLOR {
        POOL_RGB
    } else {
        PALETTE
            .get(color as usize)
            .copied()
            .unwrap_or(NO_FRAMES_RGB)
    };
    [r, g, b, 255]
}

/// Palette index for a content hash: from its high bits (content hashes are odd, so the low
/// bit would leave every even palette colour unused).
pub fn color_of_hash(hash: u64) -> u8 {
    if hash == 0 {
        NO_FRAMES_COLOR
    } else {
        ((hash >> 32) % PALETTE.len() as u64) as u8
    }
}

/// How many legend sites get distinct colours (the legend the page shows).
pub const LEGEND_DISTINCT: usize = 12;
/// A legend site keeps its hashed colour only when it is at least this far (Euclidean, sRGB
/// 0–255) from every colour given to a larger site.
pub const MIN_LEGEND_DISTANCE: f64 = 80.0;

fn rgb_distance(a: [u8; 4], b: [u8; 4]) -> f64 {
    let d = |i: usize| f64::from(a[i]) - f64::from(b[i]);
    (d(0) * d(0) + d(1) * d(1) + d(2) * d(2)).sqrt()
}

/// Colours of `sites` (content hashes, largest first; [`POOL_LEGEND_HASH`] and 0 keep their
/// greys), distinct for the first [`LEGEND_DISTINCT`]: each takes its hashed colour when no
/// larger site took it and it is at least [`MIN_LEGEND_DISTANCE`] from theirs, else the free
/// palette colour farthest from theirs (ties: the first after its hashed colour). Sites past
/// [`LEGEND_DISTINCT`] keep their hashed colour.
#[must_use]
pub fn legend_colors(sites: &[u64]) -> Vec<u8> {
    let fixed = |h: u64| match h {
        POOL_LEGEND_HASH => Some(POOL_COLOR),
        0 => Some(NO_FRAMES_COLOR),
        _ => None,
    };
    let top = &sites[..sites.len().min(LEGEND_DISTINCT)];
    // Colours of the fixed sites first: the others keep away from them too.
    let mut given: Vec<u8> = top.iter().filter_map(|&h| fixed(h)).collect();
    let n = PALETTE.len();
    let mut out = Vec::with_capacity(sites.len());
    for &h in top {
        if let Some(c) = fixed(h) {
            out.push(c);
            continue;
        }
        let hashed = color_of_hash(h);
        let nearest = |c: u8| {
            given
                .iter()
                .map(|&g| rgb_distance(rgba(c), rgba(g)))
                .fold(f64::INFINITY, f64::min)
        };
        let c = if !given.contains(&hashed) && nearest(hashed) >= MIN_LEGEND_DISTANCE {
            hashed
        } else {
            (0..n)
                .map(|k| ((usize::from(hashed) + k) % n) as u8)
                .filter(|c| !given.contains(c))
                .fold(None, |best: Option<(u8, f64)>, c| {
                    let d = nearest(c);
                    match best {
                        Some((_, bd)) if bd >= d => best,
                        _ => Some((c, d)),
                    }
                })
                .map_or(hashed, |(c, _)| c)
        };
        given.push(c);
        out.push(c);
    }
    out.extend(
        sites
            .iter()
            .skip(top.len())
            .map(|&h| fixed(h).unwrap_or_else(|| color_of_hash(h))),
    );
    out
}

pub fn stack_color(snap: &Snapshot, stack: StackId) -> u8 {
    color_of_hash(stack_hash(snap, stack))
}

/// Colour index of every interned stack (index = `StackId`).
pub fn stack_colors(snap: &Snapshot) -> Vec<u8> {
    (0..snap.stacks.len() as u32)
        .map(|i| stack_color(snap, StackId(i)))
        .collect()
}

/// Colour index of every element of a device's timeline (each stack hashed once; private pool
/// envelopes [`POOL_COLOR`]).
pub fn element_colors(snap: &Snapshot, device: i64, timeline: &Timeline) -> Vec<u8> {
    colors_by_stack(snap, device, timeline, |s| stack_color(snap, s))
}

/// The colour of every element: [`POOL_COLOR`] for a pool envelope, else `color_of(stack)`,
/// called once per distinct stack.
fn colors_by_stack(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    color_of: impl Fn(StackId) -> u8,
) -> Vec<u8> {
    let mut cache: FxHashMap<StackId, u8> = FxHashMap::default();
    timeline
        .elements
        .iter()
        .map(|e| {
            if is_pool_envelope(e) {
                return POOL_COLOR;
            }
            let s = element_stack(snap, device, e);
            *cache.entry(s).or_insert_with(|| color_of(s))
        })
        .collect()
}

/// [`element_colors`] with the legend's colours: the [`LEGEND_DISTINCT`] largest sites at
/// the layout's peak get the colours [`legend`] shows (see [`legend_colors`]), the others their
/// hashed colour. What the viewer draws.
pub fn element_colors_with_legend(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    steps: &Steps,
) -> Vec<u8> {
    let legend: FxHashMap<u64, u8> = legend_by_scan(snap, device, timeline, steps, LEGEND_DISTINCT)
        .into_iter()
        .map(|e| (e.hash, e.color))
        .collect();
    colors_by_stack(snap, device, timeline, |s| {
        let h = stack_hash(snap, s);
        legend.get(&h).copied().unwrap_or_else(|| color_of_hash(h))
    })
}

/// One allocation site of the legend.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct LegendEntry {
    pub color: u8,
    pub rgba: [u8; 4],
    /// The site's label ([`memviz_analysis::site::Site::label`]: `basename:line:name`, `backward of mm`,
    /// `<no frames>`), made unique among the entries ([`memviz_analysis::site::unique_labels`]).
    pub label: String,
    /// Bytes of this site's elements live at the peak.
    pub bytes: u64,
    pub elements: u32,
    /// A representative stack (the lowest element's at the peak).
    pub stack: u32,
    pub hash: u64,
}

/// The `n` allocation sites (stacks with the same content hash) holding the most bytes at the
/// layout's peak step, largest first (ties: label, then hash), coloured by [`legend_colors`]
/// (the first [`LEGEND_DISTINCT`] pairwise distinct, whatever `n`). Private pool envelopes are
/// one site of their own ([`POOL_LEGEND_LABEL`], [`POOL_COLOR`], [`POOL_LEGEND_HASH`]).
pub fn legend(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    layout: &Layout,
    n: usize,
) -> Vec<LegendEntry> {
    if layout.step_count() == 0 || n == 0 {
        return Vec::new();
    }
    let live = layout
        .elements_at(layout.peak_step)
        .into_iter()
        .map(|(_, e)| e);
    colored(
        peak_sites(snap, device, timeline, live, n.max(LEGEND_DISTINCT)),
        n,
    )
}

/// [`legend`] without the layout's hit index (which it builds on first use): the elements
/// live at the peak are found by one pass over the push orders
/// ([`memviz_analysis::site::sites_at_peak_by_scan`]). Same answer, O(elements) instead of
/// O(live · log).
pub fn legend_by_scan(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    steps: &Steps,
    n: usize,
) -> Vec<LegendEntry> {
    if n == 0 {
        return Vec::new();
    }
    colored(
        sites_at_peak_by_scan(snap, device, timeline, steps, n.max(LEGEND_DISTINCT)),
        n,
    )
}

/// The legend of `sites` (largest first): their [`legend_colors`], cut to `n`.
fn colored(sites: Vec<PeakSite>, n: usize) -> Vec<LegendEntry> {
    let colors = legend_colors(&sites.iter().map(|r| r.hash).collect::<Vec<_>>());
    let mut out: Vec<LegendEntry> = sites
        .into_iter()
        .zip(colors)
        .map(|(site, color)| LegendEntry {
            color,
            rgba: rgba(color),
            label: site.label,
            bytes: site.bytes,
            elements: site.elements,
            stack: site.stack.0,
            hash: site.hash,
        })
        .collect();
    out.truncate(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palette_is_distinct_and_rgba_is_total() {
        for (i, a) in PALETTE.iter().enumerate() {
            assert_ne!(*a, NO_FRAMES_RGB);
            for b in &PALETTE[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(rgba(0), [0x1f, 0x77, 0xb4, 255]);
        assert_eq!(rgba(NO_FRAMES_COLOR), [0x7f, 0x7f, 0x7f, 255]);
        assert_eq!(rgba(255), [0x7f, 0x7f, 0x7f, 255]);
        assert_eq!(rgba(POOL_COLOR), [0xba, 0xb0, 0xab, 255]);
        assert!(!PALETTE.contains(&POOL_RGB) && POOL_RGB != NO_FRAMES_RGB);
        assert_eq!(POOL_LEGEND_HASH & 1, 0);
        assert_eq!(color_of_hash(0), NO_FRAMES_COLOR);
        assert!((0..1000u64).all(|h| color_of_hash(h * 7919 + 1) < NO_FRAMES_COLOR));
    }
}
