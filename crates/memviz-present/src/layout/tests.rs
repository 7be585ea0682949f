use super::*;
use memviz_analysis::timeline::{Element, Origin, Step, Timeline};

fn el(size: u64, origin: Origin) -> Element {
    Element {
        size_bytes: size,
        origin,
        free_event: None,
    }
}

/// The §3.6 vector as a timeline.
fn vector() -> Timeline {
    Timeline {
        elements: vec![
            el(5, Origin::UnmatchedFree { event: 0 }),
            el(20, Origin::Alloc { event: 1 }),
            el(25, Origin::Alloc { event: 2 }),
            el(3, Origin::Alloc { event: 4 }),
            el(10, Origin::Ghost { block: 0 }),
        ],
        initially_present: vec![4, 0],
        steps: [
            (0, 0, false),
            (1, 1, true),
            (2, 2, true),
            (1, 3, false),
            (3, 4, true),
            (3, 5, false),
        ]
        .iter()
        .map(|&(element, event, is_alloc)| Step {
            element,
            event,
            is_alloc,
        })
        .collect(),
        ..Timeline::default()
    }
}

/// A deterministic random timeline: `n` operations on a live set, some initial elements.
fn random_timeline(seed: u64, ops: usize, initial: usize) -> Timeline {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut rnd = move |m: u64| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s % m.max(1)
    };
    let mut t = Timeline::default();
    let mut live: Vec<u32> = Vec::new();
    for _ in 0..initial {
        let id = t.elements.len() as u32;
        t.elements
            .push(el(1 + rnd(1000), Origin::Ghost { block: id }));
        t.initially_present.push(id);
        live.push(id);
    }
    for ev in 0..ops as u32 {
        if live.is_empty() || rnd(100) < 55 {
            let id = t.elements.len() as u32;
            t.elements.push(el(rnd(1000), Origin::Alloc { event: ev }));
            t.steps.push(Step {
                element: id,
                event: ev,
                is_alloc: true,
            });
            live.push(id);
        } else {
            let k = rnd(live.len() as u64) as usize;
            let id = live.remove(k);
            t.steps.push(Step {
                element: id,
                event: ev,
                is_alloc: false,
            });
        }
    }
    t
}

fn check_against_reference(t: &Timeline) {
    check_sampled(t, 4);
}

fn check_sampled(t: &Timeline, samples_per_step: u32) {
    let (series, max_at_time) = reference_series(t);
    for mode in [PointMode::Exact, PointMode::Compact] {
        let l = Layout::build(
            t,
            LayoutOptions {
                mode,
                ..LayoutOptions::default()
            },
        );
        assert_eq!(l.mode(), mode);
        assert_eq!(l.live_at_step(), max_at_time, "{mode:?}");
        assert_eq!(l.step_event().len(), max_at_time.len());
        let total: usize = series.iter().map(|s| s.len()).sum();
        assert_eq!(l.exact_point_count() as usize, total);
        for (e, s) in series.iter().enumerate() {
            let got: Vec<(u32, u64)> = l.points(e as u32).collect();
            assert_eq!(&got, s, "{mode:?} element {e}");
        }
        assert_eq!(l.peak_bytes, max_at_time.iter().copied().max().unwrap_or(0));
        // Hit test and bottoms agree with the polylines.
        for k in 0..(l.step_count() * samples_per_step) {
            let x = (k as f64 + 0.5) / samples_per_step as f64;
            let at = l.elements_at(x as u32);
            for (e, _) in series.iter().enumerate() {
                let e = e as u32;
                let Some((a, b)) = l.span(e) else { continue };
                if !((a as f64) <= x && x < b as f64) {
                    continue;
                }
                let bottom = l.bottom_at(e, x).expect("in span");
                let via_index = l.hit_index().bytes_below(&l, l.order(e).expect("drawn"), x);
                assert!((bottom - via_index).abs() < 1e-6, "{mode:?} e{e} x{x}");
                let h = l.height_bytes(e) as f64;
                if h > 0.0 {
                    assert_eq!(l.hit(x, bottom + h / 2.0), Some(e), "x {x} e {e}");
                }
                let step = x as u32;
                if (a..b).contains(&step) {
                    assert!(at.iter().any(|p| p.1 == e), "elements_at {step} misses {e}");
                }
            }
            assert_eq!(l.hit(x, l.live_bytes_at(x) + 1.0), None);
        }
        // Clipping to a window gives the same geometry as the full polyline.
        let steps = l.step_count() as f64;
        for (e, s) in series.iter().enumerate() {
            for (x0, x1) in [
                (0.0, steps),
                (1.5, steps / 2.0 + 0.25),
                (steps / 3.0, steps - 1.0),
            ] {
                let clipped = l.clipped_points(e as u32, x0, x1);
                let full: Vec<(f64, f64)> = s.iter().map(|&(a, b)| (a as f64, b as f64)).collect();
                for w in clipped.windows(2) {
                    assert!(w[0].0 <= w[1].0, "{mode:?} e{e} {clipped:?}");
                }
                for &(x, y) in &clipped {
                    let want = interpolate(&full, x);
                    assert!(
                        (want - y).abs() < 1e-6,
                        "{mode:?} e{e} ({x0},{x1}) at {x}: {y} vs {want}; {clipped:?} {full:?}"
                    );
                }
                // Every full point inside the window is kept.
                for &(x, _) in full.iter().filter(|p| p.0 > x0 && p.0 < x1) {
                    assert!(clipped.iter().any(|p| p.0 == x), "{mode:?} e{e} lost {x}");
                }
            }
        }
    }
}

/// The bottom of a polyline at `x` (the right-most segment on vertical jumps).
fn interpolate(p: &[(f64, f64)], x: f64) -> f64 {
    let i = p.partition_point(|q| q.0 <= x);
    if i == 0 {
        return p[0].1;
    }
    if i == p.len() {
        return p[i - 1].1;
    }
    let (a, b) = (p[i - 1], p[i]);
    a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0)
}

#[test]
fn semantics_vector() {
    let t = vector();
    let l = build(&t);
    assert_eq!(l.live_at_step(), [15, 30, 55, 55, 55, 55, 55, 38, 38]);
    assert_eq!(l.peak_bytes, 55);
    assert_eq!(l.peak_step, 2);
    let pts = |e| l.points(e).collect::<Vec<_>>();
    assert_eq!(pts(4), [(0, 0), (9, 0)]);
    assert_eq!(pts(0), [(0, 10), (1, 10)]);
    assert_eq!(pts(1), [(1, 10), (4, 10)]);
    assert_eq!(pts(2), [(2, 30), (4, 30), (7, 10), (9, 10)]);
    assert_eq!(pts(3), [(7, 35), (9, 35)]);
    assert_eq!(l.step_event(), [0, 1, 2, 3, 3, 3, 3, 4, 5]);
    assert_eq!(l.slides, [Slide { step: 4, order: 2 }]);
    assert_eq!(l.slide_size(&l.slides[0]), 20);
    let pieces: Vec<Piece> = l.pieces(2).collect();
    assert_eq!(pieces.len(), 3);
    assert_eq!(
        pieces[1],
        Piece {
            x0_step: 4,
            x1_step: 7,
            bottom0_bytes: 30,
            bottom1_bytes: 10,
            height_bytes: 25
        }
    );
    assert_eq!(l.hit(4.5, 29.0), Some(2));
    assert_eq!(l.hit(4.5, 25.0), None, "the gap the freed element leaves");
    assert_eq!(l.hit(4.5, 5.0), Some(4));
    assert_eq!(l.hit(8.5, 36.0), Some(3));
    assert_eq!(l.hit(9.0, 1.0), None);
    assert_eq!(l.hit(-0.5, 1.0), None);
    assert_eq!(l.hit(f64::NAN, 1.0), None);
    assert_eq!(l.elements_at(0), [(0.0, 4), (10.0, 0)]);
    assert_eq!(l.elements_at(7), [(0.0, 4), (10.0, 2), (35.0, 3)]);
    check_against_reference(&t);
}

#[test]
fn random_timelines_match_the_reference() {
    for seed in 0..40 {
        let t = random_timeline(seed, 10 + seed as usize * 7, (seed % 5) as usize);
        check_against_reference(&t);
    }
    // Long enough to span several hit buckets and tree levels.
    check_sampled(&random_timeline(99, 900, 30), 1);
}

#[test]
fn flat_graph_quirk_and_empty() {
    let empty = build(&Timeline::default());
    assert_eq!(empty.step_count(), 0);
    assert_eq!(empty.peak_bytes, 0);
    assert_eq!(empty.hit(0.0, 0.0), None);
    assert!(empty.elements_at(0).is_empty());
    let t = Timeline {
        elements: vec![
            el(7, Origin::Ghost { block: 0 }),
            el(9, Origin::Ghost { block: 1 }),
        ],
        initially_present: vec![1, 0],
        ..Timeline::default()
    };
    let l = build(&t);
    assert_eq!(l.live_at_step(), [16]);
    assert_eq!(l.step_event(), [NO_EVENT]);
    assert_eq!(l.points(1).collect::<Vec<_>>(), [(0, 0), (1, 0)]);
    assert_eq!(l.points(0).collect::<Vec<_>>(), [(0, 9), (1, 9)]);
    check_against_reference(&t);
}

#[test]
fn exact_falls_back_to_compact_over_the_limit() {
    let t = random_timeline(7, 300, 10);
    let l = Layout::build(
        &t,
        LayoutOptions {
            mode: PointMode::Exact,
            max_exact_points: 10,
        },
    );
    assert_eq!(l.mode(), PointMode::Compact);
    assert!(l.fell_back_to_compact());
    assert_eq!(l.stored_point_count(), 0);
    let exact = build(&t);
    for e in 0..t.elements.len() as u32 {
        assert!(l.points(e).eq(exact.points(e)));
    }
}

#[test]
fn garbage_timelines_do_not_panic() {
    let t = Timeline {
        elements: vec![
            el(u64::MAX, Origin::Alloc { event: 0 }),
            el(3, Origin::Ghost { block: 0 }),
        ],
        initially_present: vec![1, 1, 7],
        steps: vec![
            Step {
                element: 0,
                event: 0,
                is_alloc: true,
            },
            Step {
                element: 9,
                event: 1,
                is_alloc: true,
            },
            Step {
                element: 1,
                event: 2,
                is_alloc: false,
            },
            Step {
                element: 1,
                event: 3,
                is_alloc: false,
            },
            Step {
                element: 0,
                event: 4,
                is_alloc: false,
            },
            Step {
                element: 0,
                event: 5,
                is_alloc: true,
            },
        ],
        ..Timeline::default()
    };
    for mode in [PointMode::Exact, PointMode::Compact] {
        let l = Layout::build(
            &t,
            LayoutOptions {
                mode,
                ..LayoutOptions::default()
            },
        );
        for e in 0..3 {
            let _ = l.pieces(e).count();
            let _ = l.bottom_at(e, 1.0);
        }
        for x in 0..10 {
            let _ = l.hit(x as f64, 1.0);
            let _ = l.elements_at(x);
        }
    }
}

#[test]
fn exact_with_more_actions_than_points() {
    // Repeated frees (only in a hand-made timeline): more actions than the points the limit
    // allows, yet few points, so the build counts the slides in pass 2.
    let mut t = Timeline {
        elements: vec![
            el(4, Origin::Alloc { event: 0 }),
            el(6, Origin::Alloc { event: 1 }),
            el(5, Origin::Alloc { event: 2 }),
        ],
        ..Timeline::default()
    };
    for (element, event) in [(0, 0), (1, 1), (2, 2), (0, 3), (1, 4)] {
        t.steps.push(Step {
            element,
            event,
            is_alloc: event < 3,
        });
    }
    for event in 5..40 {
        t.steps.push(Step {
            element: 0,
            event,
            is_alloc: false,
        });
    }
    let limit = LayoutOptions {
        mode: PointMode::Exact,
        max_exact_points: 12,
    };
    let l = Layout::build(&t, limit);
    assert_eq!(l.mode(), PointMode::Exact);
    assert!(l.exact_point_count() <= 12 && (t.steps.len() as u64) > 12);
    // The same points as with the counts kept by pass 1 (the reference replays a repeated free
    // as a push: no oracle here).
    let kept = build(&t);
    assert_eq!(kept.exact_point_count(), l.exact_point_count());
    assert_eq!(kept.point_offsets(), l.point_offsets());
    assert_eq!(kept.point_steps(), l.point_steps());
    assert_eq!(kept.point_bottoms(), l.point_bottoms());
    assert_eq!(
        l.points(2).collect::<Vec<_>>(),
        [(2, 10), (4, 10), (7, 6), (8, 6), (11, 0), (46, 0)]
    );
}

#[test]
fn dropping_steps_builds_the_same_layout() {
    for seed in 0..20 {
        let t = random_timeline(seed, 50 + seed as usize * 13, (seed % 4) as usize);
        for mode in [PointMode::Exact, PointMode::Compact] {
            let options = LayoutOptions {
                mode,
                ..LayoutOptions::default()
            };
            let kept = Layout::build(&t, options);
            let mut taken = t.clone();
            let l = Layout::build_dropping_steps(&mut taken, options);
            assert!(taken.steps.is_empty());
            assert_eq!(taken.elements, t.elements);
            let all = |v: memviz_analysis::steps::StepValues<'_, u64>| {
                v.range(0, usize::MAX).collect::<Vec<_>>()
            };
            assert_eq!(all(l.live_at_step()), all(kept.live_at_step()));
            let all = |v: memviz_analysis::steps::StepValues<'_, u32>| {
                v.range(0, usize::MAX).collect::<Vec<_>>()
            };
            assert_eq!(all(l.step_event()), all(kept.step_event()));
            assert_eq!(l.slides, kept.slides);
            assert_eq!(l.mode(), kept.mode());
            for e in 0..t.elements.len() as u32 {
                assert!(l.points(e).eq(kept.points(e)), "{mode:?} element {e}");
                assert_eq!(l.span(e), kept.span(e));
                assert_eq!(l.free_step(e), kept.free_step(e));
            }
        }
    }
}
