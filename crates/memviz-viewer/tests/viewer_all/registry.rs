//! A new view is one type and one registration: a trivial view registered in place of a kind
//! is built on first show, drawn through `App::frame`, reached by input and resizes, and held
//! to the memory budget like the views memviz ships, with no other code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::cell::Cell;

use common::*;
use memviz_render::{Trapezoid, View as CanvasView};
use memviz_snapshot::Snapshot;
use memviz_viewer::answer::Tooltip;
use memviz_viewer::memory::Memory;
use memviz_viewer::registry::{Scope, View, ViewClass, Views};
use memviz_viewer::{App, Batch, Camera, DrawableView, PlotGeometry, ViewKind};

thread_local! {
    static BUILT: Cell<u32> = const { Cell::new(0) };
    static RESIZED: Cell<u32> = const { Cell::new(0) };
    static USED: Cell<u64> = const { Cell::new(0) };
}

fn used() -> u64 {
    USED.with(Cell::get)
}

/// One bar as tall as the device's event count; `x` makes it twice as tall.
struct Bar {
    geom: PlotGeometry,
    events: f64,
    batches: Vec<Batch>,
    generation: u64,
    redraw: bool,
}

impl Bar {
    fn build(s: &Scope<'_>, _: &Views) -> Option<Box<dyn View>> {
        BUILT.with(|b| b.set(b.get() + 1));
        let mut bar = Bar {
            geom: *s.geom,
            events: s.events() as f64,
            batches: Vec::new(),
            generation: 0,
            redraw: true,
        };
        bar.draw(1.0);
        Some(Box::new(bar))
    }

    fn draw(&mut self, scale: f64) {
        let top = (self.events * scale) as f32;
        let bar = Trapezoid::rect(0.0, 1.0, 0.0, top, 0x3366_ccff);
        self.batches = vec![Batch::unbounded([0.0, 0.0], vec![bar])];
        self.generation = memviz_viewer::view::next_generation();
        self.redraw = true;
    }
}

impl DrawableView for Bar {
    fn resize(&mut self, w: f64, h: f64, dpr: f64) {
        RESIZED.with(|r| r.set(r.get() + 1));
        self.geom = PlotGeometry::new(w, h, dpr);
    }
    fn fit(&mut self) {}
    fn zoom_at(&mut self, _: f64, _: f64, _: f64) {}
    fn pan_by(&mut self, _: f64, _: f64) {}
    fn key(&mut self, key: &str) -> bool {
        if key != "x" {
            return false;
        }
        self.draw(2.0);
        true
    }
    fn pointer_down(&mut self, _: f64, _: f64) {}
    fn pointer_move(&mut self, _: &Snapshot, _: f64, _: f64) -> Option<Tooltip> {
        None
    }
    fn pointer_up(&mut self, _: &Snapshot, _: f64, _: f64) -> Option<Tooltip> {
        None
    }
    fn hover(&mut self, _: &Snapshot, _: f64, _: f64) -> Option<Tooltip> {
        None
    }
    fn pointer_leave(&mut self) {}
    fn click(&mut self, _: &Snapshot, _: f64, _: f64) -> Option<Tooltip> {
        None
    }
    fn overlay(&mut self) -> Batch {
        Batch::unbounded([0.0, 0.0], Vec::new())
    }
    fn batches(&self) -> (u64, &[Batch]) {
        (self.generation, &self.batches)
    }
    fn canvas_view(&self) -> CanvasView {
        Camera::new(1, self.events as u64).canvas_view(&self.geom)
    }
    fn needs_redraw(&self) -> bool {
        self.redraw
    }
    fn take_needs_redraw(&mut self) -> bool {
        std::mem::replace(&mut self.redraw, false)
    }
}

impl View for Bar {}

/// The bar, registered in place of the Cached Segment Timeline.
const BAR: ViewClass = ViewClass {
    kind: ViewKind::Segments,
    needs: &[],
    estimate: |s, _| s.events() * 1000,
    what: "The bar",
    instead: "`memviz summary FILE` counts the events",
    build: Bar::build,
};

fn snapshot() -> Snapshot {
    let bytes = std::fs::read(fixture("pools.pickle")).unwrap();
    memviz_snapshot::load_slice(&bytes).unwrap()
}

#[test]
fn a_registered_view_is_built_drawn_and_reached_by_input() {
    let mut app = App::new("pools.pickle", snapshot());
    app.register_view(BAR);
    assert_eq!(BUILT.with(Cell::get), 0, "built on first show, not before");
    app.set_view(ViewKind::Segments);
    assert_eq!(BUILT.with(Cell::get), 1);
    let events = app.snapshot().unwrap().trace(app.device()).unwrap().len() as f32;

    let frame = app.frame();
    assert_eq!(frame.source.kind, ViewKind::Segments);
    assert_eq!(frame.batches.len(), 1);
    let first = frame.generation;
    assert!(!app.needs_redraw(), "the frame took the redraw flag");

    // Input reaches it, and what it draws next is a new upload.
    assert!(app.key("x"));
    assert!(!app.key("q"), "a key it does not use");
    assert!(app.needs_redraw());
    let frame = app.frame();
    assert_ne!(frame.generation, first);
    assert_eq!(frame.batches[0].instances[0].top0, 2.0 * events);

    // Resizes reach every built view; shown again it is not built again.
    app.resize(800.0, 400.0, 2.0);
    assert_eq!(RESIZED.with(Cell::get), 1);
    app.set_view(ViewKind::Active);
    assert_eq!(app.frame().source.kind, ViewKind::Active);
    app.set_view(ViewKind::Segments);
    assert_eq!(BUILT.with(Cell::get), 1);
    assert_eq!(app.frame().source.kind, ViewKind::Segments);
}

#[test]
fn a_registered_view_that_cannot_fit_says_so_in_its_own_words() {
    let snap = snapshot();
    let events = snap.trace(snap.default_device()).unwrap().len() as u64;
    // Room for the Active Memory Timeline, not for the bar's 1000 bytes per event.
    let budget = events * 100;
    let mut app = App::with_memory("pools.pickle", snap, Memory { used, budget });
    app.register_view(BAR);
    app.set_view(ViewKind::Segments);
    let why = app.unavailable().expect("the bar cannot fit").to_owned();
    assert!(
        why.starts_with("The bar of this trace (") && why.ends_with("counts the events"),
        "{why}"
    );
    // Nothing is drawn in its place; the other views still work.
    assert!(app.frame().batches.is_empty());
    app.set_view(ViewKind::Active);
    assert_eq!(app.unavailable(), None);
    let frame = app.frame();
    assert_eq!(frame.source.kind, ViewKind::Active);
    assert!(!frame.batches.is_empty());
}
