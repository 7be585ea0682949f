//! The "What if" tab's viewer side (issue 31): the resumable job (one slice per
//! `whatif_step`, equal to memviz-alloc's `sweep`), Cancel between slices, the simulated
//! reserved curve in the timelines' overlay (present, then cleared) and the simulated OOM's
//! mark at the timestep of its event.
#![allow(clippy::unwrap_used)]

use crate::common;
use memviz_render::rgba;
use memviz_viewer::answer::{WhatIfInfo, WhatIfProgress, WhatIfResult};
use memviz_viewer::request::{Reply, Request};
use memviz_viewer::{App, ViewKind};

const SIM: u32 = rgba(214, 0, 170, 255);

fn info(app: &mut App) -> Option<WhatIfInfo> {
    match app.request(Request::WhatifInfo) {
        Reply::WhatifInfo(i) => i,
        r => panic!("{r:?}"),
    }
}

fn run(app: &mut App, conf: &str, capacity_gib: Option<f64>, sweep: bool) -> WhatIfProgress {
    match app.request(Request::WhatifRun {
        conf: conf.to_string(),
        capacity_gib,
        sweep,
    }) {
        Reply::WhatifRun(p) => p,
        r => panic!("{r:?}"),
    }
}

fn step(app: &mut App) -> WhatIfProgress {
    match app.request(Request::WhatifStep) {
        Reply::WhatifStep(p) => p,
        r => panic!("{r:?}"),
    }
}

/// Steps until done: the result and the number of slices.
fn finish(app: &mut App) -> (WhatIfResult, usize) {
    let mut slices = 0;
    let mut last = 0.0;
    loop {
        let p = step(app);
        slices += 1;
        assert!(p.fraction >= last - 1e-9, "progress goes back: {p:?}");
        last = p.fraction;
        if !p.running {
            return (p.result.expect("a result"), slices);
        }
        assert!(slices < 10_000, "the job never ends");
    }
}

/// Overlay instances in the curve's colour.
fn sim_instances(app: &mut App) -> usize {
    let _ = app.tick(0.0);
    app.frame()
        .overlay
        .instances
        .iter()
        .filter(|t| t.color == SIM)
        .count()
}

fn app() -> App {
    let mut app = common::load_app(&common::fixture("proto5.pickle"));
    app.resize(1000.0, 600.0, 1.0);
    app
}

#[test]
fn the_form_shows_the_recorded_settings() {
    let mut app = common::load_app(&common::fixture("expandable.pickle"));
    let i = info(&mut app).expect("a file");
    assert_eq!(i.recorded, "expandable_segments:True");
    let e = &i.keys[0];
    assert_eq!(e.key, "expandable_segments");
    assert!(e.checked);
    assert_eq!(e.recorded, "recorded: expandable_segments:True");
    assert_eq!(i.keys.len(), 5);
    assert!(i.has_trace && !i.running && i.result.is_none());
    // Before any file: nothing.
    assert!(info(&mut App::new_empty()).is_none());
}

#[test]
fn a_job_is_one_replay_per_slice_and_equals_the_sweep() {
    let bytes = std::fs::read(common::fixture("proto5.pickle")).unwrap();
    let snap = memviz_snapshot::load_slice(&bytes).unwrap();
    let prep = memviz_alloc::Prepared::new(&snap, 0);
    let whole = memviz_alloc::sweep(&prep, None, &mut |_, _| true).unwrap();
    let mut job = memviz_alloc::Job::sweep(&prep.recorded, None);
    // Kept between slices without the snapshot's borrow, as the app does.
    let mut det = Some(prep.detach());
    let mut slices = 0;
    loop {
        let prep = det.take().unwrap().attach(&snap);
        let before = job.replays();
        let done = job.step(&prep, &mut |_, _| true).unwrap();
        assert_eq!(job.replays(), before + 1, "one replay per slice");
        det = Some(prep.detach());
        slices += 1;
        if done {
            break;
        }
    }
    assert_eq!(job.rows().len(), 8);
    assert_eq!(job.rows(), whole.as_slice());
    assert!(slices >= 16, "{slices} slices");
    let prep = det.unwrap().attach(&snap);
    let one = memviz_alloc::min_capacity(&prep, &prep.recorded, &mut |_, _| true).unwrap();
    assert_eq!(whole[0].outcome.min_capacity, one);
    // A cancelled slice leaves the job as it was.
    let mut job = memviz_alloc::Job::run("run", prep.recorded.clone(), None);
    assert!(job.step(&prep, &mut |_, _| false).is_err());
    assert_eq!(job.replays(), 0);
    assert!(!job.step(&prep, &mut |_, _| true).unwrap());
}

#[test]
fn run_draws_the_curve_and_clear_removes_it() {
    let mut app = app();
    assert_eq!(sim_instances(&mut app), 0);
    let p = run(&mut app, "expandable_segments:True", None, false);
    assert!(p.running);
    let (r, slices) = finish(&mut app);
    assert!(slices >= 3, "prepare, replay, bisection: {slices}");
    assert!(!r.sweep);
    assert_eq!(r.rows.len(), 1);
    let row = &r.rows[0];
    assert_eq!(row.settings, "expandable_segments:True");
    assert!(row.peak_reserved_bytes > 0);
    assert!(row
        .min_capacity_bytes
        .is_some_and(|c| c <= row.peak_reserved_bytes.div_ceil(2 << 20) * (2 << 20)));
    assert!(row.first_oom.is_none());
    assert_eq!(r.shown, Some(0));
    // Drawn over the Active Memory Timeline with its legend, and the Cached Segment Timeline.
    assert!(sim_instances(&mut app) > 2);
    let t = app.axis_ticks();
    let mark = t.whatif.expect("a mark");
    assert!(
        mark.label.contains("expandable_segments:True"),
        "{}",
        mark.label
    );
    assert!(mark.oom_x.is_none());
    app.set_view(ViewKind::Segments);
    assert!(sim_instances(&mut app) > 2);
    assert!(app.axis_ticks().whatif.is_some());
    // The camera fits the curve's peak.
    assert!(app.camera().full_y.1 >= row.peak_reserved_bytes as f64);
    // Kept for the tab.
    assert_eq!(info(&mut app).unwrap().result.unwrap().rows.len(), 1);
    // Cleared: no curve, no mark.
    let _ = app.request(Request::WhatifClear);
    assert_eq!(sim_instances(&mut app), 0);
    assert!(app.axis_ticks().whatif.is_none());
    app.set_view(ViewKind::Active);
    assert_eq!(sim_instances(&mut app), 0);
    assert!(info(&mut app).unwrap().result.is_none());
}

#[test]
fn the_simulated_oom_is_marked_at_its_event() {
    let mut app = app();
    // 4 MiB: proto5 reserves 80 MiB at its peak.
    run(&mut app, "", Some(4.0 / 1024.0), false);
    let (r, _) = finish(&mut app);
    let oom = r.rows[0].first_oom.clone().expect("an OOM at 4 MiB");
    assert!(!oom.site.is_empty());
    let mark = app.axis_ticks().whatif.expect("a mark");
    assert!(mark.oom_text.contains(&oom.site));
    let x = mark.oom_x.expect("inside the plot");
    // The State History's numbering counts a free_requested + free_completed pair once.
    assert!(oom.event <= oom.trace_row, "{oom:?}");
    // The first timestep whose event is at or after the OOM's trace row, in canvas px.
    let layout = app.layout().unwrap();
    let step = layout
        .step_event()
        .iter()
        .position(|ev| ev != memviz_present::layout::NO_EVENT && u64::from(ev) >= oom.trace_row)
        .unwrap();
    let want = app
        .camera()
        .css_px_from_data(app.geometry(), [step as f64, 0.0])[0];
    assert!((x - want).abs() < 0.5, "mark at {x}, step {step} at {want}");
    // The vertical line is drawn there.
    let _ = app.tick(0.0);
    let out = app.frame();
    let origin = out.overlay.origin;
    let cam = *app.camera();
    let geom = *app.geometry();
    let hit = {
        let _ = app.tick(0.0);
        let o = app.frame().overlay;
        o.instances.iter().filter(|t| t.color == SIM).any(|t| {
            let l = cam.css_px_from_data(&geom, [origin[0] + f64::from(t.x0), 0.0])[0];
            let r = cam.css_px_from_data(&geom, [origin[0] + f64::from(t.x1), 0.0])[0];
            (l - want).abs() <= 1.5 && (r - want).abs() <= 1.5
        })
    };
    assert!(hit, "no vertical line at the OOM");
}

#[test]
fn cancel_stops_a_sweep_between_slices() {
    let mut app = app();
    run(&mut app, "", Some(16.0), true);
    for _ in 0..4 {
        assert!(step(&mut app).running);
    }
    assert!(matches!(
        app.request(Request::WhatifCancel),
        Reply::WhatifCancel(true)
    ));
    let p = step(&mut app);
    assert!(!p.running && p.result.is_none(), "{p:?}");
    assert!(!info(&mut app).unwrap().running);
    assert_eq!(sim_instances(&mut app), 0);
    // The app goes on: a sweep to the end gives 8 rows, the best marked and drawn.
    run(&mut app, "", Some(16.0), true);
    let (r, _) = finish(&mut app);
    assert_eq!(r.rows.len(), 8);
    assert!(r.best.is_some());
    assert_eq!(r.shown, r.best);
    assert!(sim_instances(&mut app) > 2);
    // Another row's curve.
    let Reply::WhatifShow(Some(r2)) = app.request(Request::WhatifShow { row: 1 }) else {
        panic!("a result");
    };
    assert_eq!(r2.shown, Some(1));
    let Reply::WhatifShow(Some(r3)) = app.request(Request::WhatifShow { row: -1 }) else {
        panic!("a result");
    };
    assert_eq!(r3.shown, None);
    assert_eq!(sim_instances(&mut app), 0);
}

/// The tab names the OOM's site as every other view does: through the file's sites under the
/// page's user code, renamed when the pattern changes (the curve's OOM text too).
#[test]
fn the_oom_site_follows_the_user_code() {
    use memviz_analysis::site::{SiteCache, UserCode};
    let mut app = app();
    run(&mut app, "", Some(4.0 / 1024.0), false);
    let (r, _) = finish(&mut app);
    let before = r.rows[0].first_oom.clone().expect("an OOM at 4 MiB");
    // The OOM's stack, from memviz-alloc's own replay of the same run.
    let bytes = std::fs::read(common::fixture("proto5.pickle")).unwrap();
    let snap = memviz_snapshot::load_slice(&bytes).unwrap();
    let capacity = (4u64 << 30) / 1024;
    let out = memviz_alloc::replay(
        &snap,
        0,
        &memviz_alloc::Settings::default(),
        Some(capacity),
        &mut |_, _| true,
    )
    .unwrap();
    let stack = out.first_oom.expect("the same OOM").stack;
    let site_in_app = |app: &mut App| app.site_of_stack(stack).expect("a site").label;
    assert_eq!(before.site, site_in_app(&mut app));
    // torch's own files count as the user's: another frame names the site, in every view.
    let pattern = "/torch/";
    // As the page sets it (the request renames the shown curve's OOM too).
    assert!(matches!(
        app.request(Request::SetUserCode {
            pattern: pattern.to_string(),
        }),
        Reply::SetUserCode(Ok(_))
    ));
    let after = info(&mut app).unwrap().result.unwrap().rows[0]
        .first_oom
        .clone()
        .unwrap();
    let mut torch = SiteCache::new(&snap, UserCode::parse(pattern).unwrap());
    assert_eq!(after.site, torch.site(&snap, stack).label);
    assert_eq!(after.site, site_in_app(&mut app));
    assert_ne!(after.site, before.site, "the pattern names another frame");
    let mark = app.axis_ticks().whatif.expect("a mark");
    assert!(mark.oom_text.contains(&after.site), "{}", mark.oom_text);
    // The Source lines view names the same line for the allocation that ran out.
    let lines = app.lines(false).ready().expect("lines");
    assert!(
        lines.iter().any(|l| l.site == after.site),
        "{} not among the Source lines",
        after.site
    );
}
