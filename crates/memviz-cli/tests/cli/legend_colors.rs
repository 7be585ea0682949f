//! The legend's colours on every real snapshot: the top [`color::LEGEND_DISTINCT`] sites at the
//! peak have pairwise distinct colours that are far apart, the shorter legends are prefixes of
//! it, and the elements are drawn in their legend entry's colour.

use crate::common;
use common::*;
use memviz_present::color::{self, LegendEntry};
use memviz_analysis::frames::element_stack;
use memviz_present::layout::{Layout, LayoutOptions, PointMode};
use memviz_analysis::timeline;

/// Every pair of the top 12 is at least this far apart (Euclidean, sRGB 0–255).
const MIN_DISTANCE: f64 = 60.0;

fn distance(a: [u8; 4], b: [u8; 4]) -> f64 {
    let d = |i: usize| f64::from(a[i]) - f64::from(b[i]);
    (d(0) * d(0) + d(1) * d(1) + d(2) * d(2)).sqrt()
}

fn check(name: &str, lg: &[LegendEntry]) -> f64 {
    let mut closest = f64::INFINITY;
    for (i, a) in lg.iter().enumerate() {
        for b in &lg[i + 1..] {
            assert_ne!(a.color, b.color, "{name}: {} and {}", a.label, b.label);
            let d = distance(a.rgba, b.rgba);
            assert!(
                d >= MIN_DISTANCE,
                "{name}: {} {:?} and {} {:?} only {d:.0} apart",
                a.label,
                a.rgba,
                b.label,
                b.rgba
            );
            closest = closest.min(d);
        }
    }
    closest
}

#[test]
fn top_legend_colours_are_distinct_on_every_corpus_file() {
    let mut checked = 0;
    let mut closest = f64::INFINITY;
    for path in corpus_files() {
        let s = load_path(&path);
        let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        for d in s.devices() {
            for (kind, t) in [
                ("active", timeline::build(&s, d)),
                ("segments", timeline::build_segments(&s, d)),
                ("pools", timeline::build_pools(&s, d)),
            ] {
                let l = Layout::build(
                    &t,
                    LayoutOptions {
                        mode: PointMode::Compact,
                        ..LayoutOptions::default()
                    },
                );
                let name = format!("{file} device {d} {kind}");
                let lg = color::legend(&s, d, &t, &l, color::LEGEND_DISTINCT);
                closest = closest.min(check(&name, &lg));
                // A shorter legend shows the same colours; a longer one adds hashed colours.
                let short = color::legend(&s, d, &t, &l, 5);
                assert_eq!(short[..], lg[..short.len()], "{name}");
                let long = color::legend(&s, d, &t, &l, 20);
                assert_eq!(long[..lg.len()], lg[..], "{name}");
                assert_eq!(
                    color::legend_by_scan(&s, d, &t, &l, color::LEGEND_DISTINCT),
                    lg,
                    "{name}"
                );
                // Elements are drawn in their site's legend colour.
                let colors = color::element_colors_with_legend(&s, d, &t, &l);
                assert_eq!(colors.len(), t.elements.len());
                for (e, el) in t.elements.iter().enumerate() {
                    let h = match el.origin {
                        timeline::Origin::PoolInitial { .. }
                        | timeline::Origin::PoolGrowth { .. } => color::POOL_LEGEND_HASH,
                        _ => color::stack_hash(&s, element_stack(&s, d, el)),
                    };
                    if let Some(entry) = lg.iter().find(|x| x.hash == h) {
                        assert_eq!(colors[e], entry.color, "{name}: element {e}");
                    }
                }
                checked += 1;
            }
        }
    }
    eprintln!("{checked} timelines checked; closest legend pair {closest:.0} apart");
}

/// Hashed colours reach every palette entry (content hashes are odd: the low bit once left
/// the even entries unused, so only 10 colours were ever drawn).
#[test]
fn hashed_colours_use_the_whole_palette() {
    let mut seen = [false; color::PALETTE.len()];
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..2000 {
        h = h.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        seen[color::color_of_hash(h | 1) as usize] = true;
    }
    assert!(seen.iter().all(|&s| s), "{seen:?}");
}
