//! Panels and structures built on first use are checked against the memory left, as views
//! are: one that cannot fit answers with a sentence instead of being built, and the app keeps
//! working (views draw, and the same panel works once there is room).
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)]

use crate::common;

use common::*;
use memviz_viewer::answer::{Avail, Tooltip};
use memviz_viewer::memory::Memory;
use memviz_viewer::FlameAt;
use memviz_viewer::{App, ViewKind};

thread_local! {
    static USED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}
fn used() -> u64 {
    USED.with(std::cell::Cell::get)
}
fn set_free(budget: u64, free: u64) {
    USED.with(|u| u.set(budget - free));
}

/// The sentence of an answer that says it cannot fit in memory.
trait Why: std::fmt::Debug {
    fn why(&self) -> Option<String>;
}

impl<T: std::fmt::Debug> Why for Avail<T> {
    fn why(&self) -> Option<String> {
        self.unavailable().map(str::to_owned)
    }
}

impl<T: std::fmt::Debug> Why for Option<Avail<T>> {
    fn why(&self) -> Option<String> {
        self.as_ref().and_then(Why::why)
    }
}

impl Why for Option<Tooltip> {
    fn why(&self) -> Option<String> {
        match self {
            Some(Tooltip::Unavailable(u)) => Some(u.unavailable.clone()),
            _ => None,
        }
    }
}

/// The sentence of an answer that cannot fit, checked for what it must say.
fn sentence(answer: &impl Why, cli: &str) -> String {
    let s = answer
        .why()
        .unwrap_or_else(|| panic!("not unavailable: {answer:?}"));
    assert!(
        s.contains("of memory") && s.contains("this page has left") && s.contains("not built"),
        "{s}"
    );
    assert!(s.contains(cli), "{cli} in {s}");
    s
}

fn hit_index_built(app: &App) -> bool {
    let l = app.layout().unwrap();
    l.heap_bytes() != l.heap_bytes_without_hit()
}

/// The middle of the plot (where the pools fixture has allocations).
fn plot_point(app: &App) -> (f64, f64) {
    let p = app.geometry().plot;
    ((p.left + p.right) / 2.0, p.bottom - 2.0)
}

#[test]
fn panels_that_cannot_fit_say_so_and_the_app_still_works() {
    let load = |name: &str| {
        let bytes = std::fs::read(fixture(name)).unwrap();
        memviz_snapshot::load_slice(&bytes).unwrap()
    };
    let budget: u64 = 1 << 30;
    let mut app = App::with_memory(
        "pools.pickle",
        load("pools.pickle"),
        Memory { used, budget },
    );
    app.add_file("proto5.pickle", load("proto5.pickle"));
    assert!(app.select_file(0));
    assert!(app.layout().is_some(), "the active timeline fits");
    // The flamegraph is built while there is room (its own rebuilds are checked below).
    app.set_view(ViewKind::Flame);
    assert!(app.unavailable().is_none());
    app.set_view(ViewKind::Active);

    // Room for the small views of this file (bytes per event), none for a panel (each needs
    // at least 1 MiB).
    set_free(budget, 256 << 10);
    let (x, y) = plot_point(&app);

    sentence(&app.leaks(), "`memviz leaks FILE --device 0`");
    sentence(&app.lines(false), "`memviz lines FILE --device 0`");
    sentence(&app.lines(true), "`memviz lines FILE --device 0`");
    sentence(&app.live(-1), "`memviz folded FILE --device 0 --at EVENT`");
    sentence(&app.diff(0, 1), "`memviz diff A B`");
    let why = app.highlight_line("x.py", 1, "f", false).unwrap_err();
    assert!(
        why.unavailable
            .starts_with("Highlighting a source line of this trace ("),
        "{why}"
    );
    let s = app.search("a", false).unwrap();
    assert_eq!(s.count, 0);
    assert!(s
        .unavailable
        .unwrap()
        .starts_with("The search of this trace"));
    assert_eq!(app.highlighted(), None, "nothing highlighted");
    app.set_highlight(Some(vec![0, 1]), true);
    assert_eq!(
        app.highlighted(),
        None,
        "a highlight that cannot fit is not set"
    );

    // Hover and click: the hit index is not built, the answer says why.
    let tip = app.hover(x, y);
    let why = sentence(&tip, "`memviz folded FILE --device 0`");
    assert!(why.contains("hit index"), "{why}");
    sentence(&app.click(x, y), "`memviz folded FILE --device 0`");
    assert_eq!(app.pinned(), None);
    assert_eq!(app.element_at(x, y), None);
    assert!(!hit_index_built(&app), "no hit index built");
    // Tooltips: their context is not built either.
    sentence(&app.pin(0), "`memviz folded FILE --device 0`");
    // The legend is still there, without building the hit index.
    assert!(!app.legend(5).is_empty());
    assert!(!hit_index_built(&app));

    // The flamegraph's rebuilds and the diff flamegraph.
    app.set_view(ViewKind::Flame);
    assert_eq!(app.view(), ViewKind::Flame);
    sentence(
        &app.flame_set(FlameAt::Peak, true, None),
        "`memviz folded FILE --device 0` (with `--at`",
    );
    sentence(&app.flame_diff(0, 1, None), "`memviz diff A B --folded`");

    // The views still work: another view is built and drawn, the Active one draws.
    app.set_view(ViewKind::Segments);
    assert_eq!(app.view(), ViewKind::Segments);
    assert!(app.unavailable().is_none(), "{:?}", app.unavailable());
    assert!(!app.plot_batches().1.is_empty(), "segments drawn");
    let _ = app.overlay();
    app.set_view(ViewKind::Active);
    assert!(!app.plot_batches().1.is_empty(), "active drawn");
    let _ = app.overlay();
    let _ = app.axis_ticks();
    let _ = app.state();

    // With room again, every panel answers.
    set_free(budget, budget);
    let leaks = app.leaks().and_then(Avail::ready);
    assert!(leaks.is_some(), "the leaks answer");
    let rows = app.lines(false).ready().expect("the line table");
    assert!(!rows.is_empty());
    let r = &rows[0].row;
    let n = app.highlight_line(&r.file, r.line, &r.name, false).unwrap();
    assert_eq!(n as u64, r.count);
    assert_eq!(app.highlighted(), Some(n));
    app.set_highlight(None, false);
    let live = app.live(-1).and_then(Avail::ready).expect("the live table");
    assert!(live.count > 0, "{live:?}");
    // The live table walks the step model: it builds no hit index.
    let s = app.search("/./", false).unwrap();
    assert!(s.unavailable.is_none(), "{s:?}");
    assert!(s.count > 0);
    assert!(app.highlighted().is_some());
    app.set_highlight(None, false);
    assert!(app.diff(0, 1).and_then(Avail::ready).is_some());
    assert!(app.pin(0).is_some_and(|t| t.pinned()));
    let _ = app.pin(-1);
    let hovered = app.hover(x, y);
    assert!(hovered.why().is_none(), "a tooltip or nothing");
    app.set_view(ViewKind::Flame);
    let st = app.flame_set(FlameAt::Peak, true, None);
    assert!(st.why().is_none() && st.is_some(), "{st:?}");
    let st = app.flame_diff(0, 1, None);
    assert!(st.why().is_none() && st.is_some(), "{st:?}");
}
