//! Snapshots without a trace (taken without `_record_memory_history()`, the segment list of
//! `torch.cuda.memory_snapshot()`, a device nobody recorded): the file opens on the Allocator
//! State History, and each timeline says in `Panel::no_trace` why it has only one flat step.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)]

use crate::common;

use common::*;
use memviz_viewer::{App, ViewKind};

fn note(app: &App) -> String {
    app.panel(4).no_trace
}

#[test]
fn a_segment_list_opens_on_the_state_history_and_its_timelines_say_why_they_are_flat() {
    let mut app = load_app(&fixture("bare_list.pickle"));
    assert_eq!(
        app.view(),
        ViewKind::State,
        "segments only: the State History shows them"
    );
    let n = note(&app);
    assert!(
        n.starts_with(
            "This snapshot has no trace: it is the segment list of torch.cuda.memory_snapshot()"
        ) && n.contains("the map shows them, and there are no events to list"),
        "beside the empty event list: {n}"
    );
    for (kind, drawn) in [
        (ViewKind::Active, "the blocks allocated at the end"),
        (ViewKind::Segments, "the segments at the end"),
        (ViewKind::Pools, "the blocks allocated at the end"),
    ] {
        app.set_view(kind);
        let n = note(&app);
        assert!(
            n.starts_with("This snapshot has no trace: it is the segment list of torch.cuda.memory_snapshot()"),
            "{kind:?}: {n}"
        );
        assert!(
            n.contains(drawn) && n.contains("Allocator State History"),
            "{kind:?}: {n}"
        );
        assert!(
            n.ends_with("torch.cuda.memory._dump_snapshot()"),
            "{kind:?}: how to record: {n}"
        );
        assert!(
            app.state().timeline.elements > 0,
            "{kind:?}: the flat step is drawn"
        );
    }
    app.set_view(ViewKind::Flame);
    assert_eq!(note(&app), "", "not a timeline");
}

#[test]
fn a_dict_without_a_trace_names_record_memory_history() {
    let Some(path) = corpus_file("nishi951__triton-unfold__memory.pkl") else {
        return;
    };
    let mut app = load_app(&path);
    assert_eq!(app.view(), ViewKind::State);
    app.set_view(ViewKind::Active);
    let n = note(&app);
    assert!(
        n.starts_with("This snapshot has no trace: it was taken without torch.cuda.memory._record_memory_history()"),
        "{n}"
    );
}

#[test]
fn an_empty_snapshot_stays_on_the_timeline_and_says_it_is_empty() {
    let app = load_app(&fixture("empty.pickle"));
    assert_eq!(
        app.view(),
        ViewKind::Active,
        "nothing for the State History to show either"
    );
    assert!(
        note(&app).starts_with("This snapshot is empty"),
        "{}",
        note(&app)
    );
}

#[test]
fn a_traced_file_has_no_note_and_a_device_without_a_trace_has_one() {
    let mut app = load_app(&fixture("multidevice.pickle"));
    assert_eq!(
        app.view(),
        ViewKind::Active,
        "a trace: the timeline as before"
    );
    assert_eq!(note(&app), "");
    app.set_device(1);
    let n = note(&app);
    assert!(n.starts_with("cuda:1 has no trace in this snapshot"), "{n}");
    app.set_view(ViewKind::State);
    assert!(
        note(&app).contains("there are no events to list"),
        "{}",
        note(&app)
    );
    app.set_view(ViewKind::Active);
    app.set_device(0);
    assert_eq!(note(&app), "");
}

#[test]
fn a_file_without_a_trace_added_to_a_timeline_switches_to_the_state_history() {
    let mut app = load_app(&fixture("vector.pickle"));
    assert_eq!(app.view(), ViewKind::Active);
    let bytes = std::fs::read(fixture("bare_list.pickle")).unwrap();
    app.add_file(
        "bare_list.pickle",
        memviz_snapshot::load_slice(&bytes).unwrap(),
    );
    assert_eq!(app.view(), ViewKind::State);
    // The flamegraph, chosen by the user, stays.
    let mut app = load_app(&fixture("vector.pickle"));
    app.set_view(ViewKind::Flame);
    app.add_file(
        "bare_list.pickle",
        memviz_snapshot::load_slice(&bytes).unwrap(),
    );
    assert_eq!(app.view(), ViewKind::Flame);
}
