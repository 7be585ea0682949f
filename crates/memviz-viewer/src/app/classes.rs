//! The views the app registers ([`register`]): the three timelines, the Allocator State
//! History and the flamegraph, each a [`ViewClass`]: its cost, what it is built from and how.

use std::rc::Rc;

use super::device::{build_device, DeviceData};
use super::timeline::TimelineView;
use super::ViewKind;
use crate::flame_view::FlameView;
use crate::memory::view_bytes_per_event;
use crate::registry::{per_event, Scope, View, ViewClass, ViewKey, Views};
use crate::state_view::StateView;

/// Registers every view the canvas shows.
pub(super) fn register(views: &mut Views) {
    let timeline = |kind, what, instead| ViewClass {
        kind,
        needs: &[],
        estimate: timeline_estimate,
        what,
        instead,
        build: build_timeline,
    };
    views.register(timeline(
        ViewKind::Active,
        "The Active Memory Timeline",
        "`memviz summary FILE` and `memviz lines FILE` give its numbers",
    ));
    views.register(timeline(
        ViewKind::Segments,
        "The Active Cached Segment Timeline",
        "`memviz state FILE --event -1 --json` lists the segments at the end",
    ));
    views.register(timeline(
        ViewKind::Pools,
        "The Allocated Memory incl. Private Pools view",
        "`memviz summary FILE` gives the reserved and allocated totals",
    ));
    views.register(ViewClass {
        kind: ViewKind::State,
        needs: &[],
        estimate: |s, _| per_event(s, view_bytes_per_event(ViewKind::State)),
        what: "The Allocator State History",
        instead: "`memviz state FILE --event K --json` gives the state after any event",
        build: |s, _| {
            let mut v = StateView::new(s.snap, s.key.device, s.geom);
            crate::view::DrawableView::set_theme(&mut v, &s.theme);
            Some(Box::new(v))
        },
    });
    views.register(ViewClass {
        kind: ViewKind::Flame,
        needs: &[ViewKind::Active],
        estimate: |s, _| per_event(s, view_bytes_per_event(ViewKind::Flame)),
        what: "The memory flamegraph",
        instead: "`memviz folded FILE` gives its stacks",
        build: build_flame,
    });
}

/// The built data `key`'s timeline may share, when built: the Private Pools view of a device
/// without a private pool shows the Active Memory Timeline (on a 150 MB file that is 38.7
/// bytes per trace entry not spent twice).
fn sharable<'a>(s: &Scope<'_>, views: &'a Views) -> Option<&'a DeviceData> {
    let key = s.key;
    if !matches!(key.kind, ViewKind::Active | ViewKind::Pools)
        || memviz_analysis::timeline::has_private_pool(s.snap, key.device)
    {
        return None;
    }
    [ViewKind::Active, ViewKind::Pools]
        .iter()
        .find_map(|k| views.get_as::<TimelineView>(key.with_kind(*k))?.data())
}

fn timeline_estimate(s: &Scope<'_>, views: &Views) -> u64 {
    if sharable(s, views).is_some() {
        // Its colours and scene only.
        return s.events();
    }
    per_event(s, view_bytes_per_event(s.key.kind))
}

fn build_timeline(s: &Scope<'_>, views: &Views) -> Option<Box<dyn View>> {
    let share = sharable(s, views).map(|d| (Rc::clone(&d.timeline), Rc::clone(&d.layout)));
    let ViewKey { file, device, kind } = s.key;
    let data = build_device(s.snap, device, kind, share);
    let mut v = TimelineView::new(Rc::clone(s.snap), file, device, kind, *s.geom, Some(data));
    crate::view::DrawableView::set_theme(&mut v, &s.theme);
    Some(Box::new(v))
}

fn build_flame(s: &Scope<'_>, views: &Views) -> Option<Box<dyn View>> {
    let device = s.key.device;
    let d = views
        .get_as::<TimelineView>(s.key.with_kind(ViewKind::Active))?
        .data()?;
    let mut fv = FlameView::with_user_code(
        s.snap,
        device,
        &d.timeline,
        &d.layout,
        s.geom,
        s.user_code.clone(),
    );
    if d.highlight.is_some() {
        fv.set_matches(s.snap, device, &d.timeline, &d.layout, d.highlight.clone());
    }
    Some(Box::new(fv))
}

impl View for StateView {
    fn write_state(&self, state: &mut crate::answer::ViewerState) {
        state.state_view = Some(self.view_state());
    }
}

impl View for FlameView {
    fn write_state(&self, state: &mut crate::answer::ViewerState) {
        state.flame_view = Some(self.state());
    }
}
