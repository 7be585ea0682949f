//! The app's side of the flamegraph: built on first use for the current (file, device) from
//! the Active Memory Timeline, its moments and ranges, the reserved memory at the end (the final
//! segments), the diff of two files.

use memviz_analysis::flame::FrameMode;
use memviz_analysis::site::UserCode;
use memviz_snapshot::Snapshot;

use std::rc::Rc;

use super::current::Current;
use super::ViewKind;
use crate::answer::{Avail, FlameAt, FlameInfo, FlamePhase, FlameState};
use crate::flame_view::FlameView;
use crate::memory::Panel;

/// The Active Memory Timeline's timeline, layout and highlight, what the flamegraph reads.
type ActiveParts = (
    Rc<memviz_analysis::timeline::Timeline>,
    Rc<memviz_present::layout::Layout>,
    Option<(Vec<u32>, bool)>,
);

impl Current<'_> {
    /// What counts as the user's code in the flamegraph (its "my code" mode and default).
    fn flame_user_code(&self) -> UserCode {
        // user-code: the one place the flamegraph reads the App's UserCode (`set_user_code`);
        // `flame_set` hands it to the view, which notices a change.
        self.user_code.clone()
    }

    /// The Active Memory Timeline's timeline and layout (shared) and highlight, of the
    /// current file and device, when built.
    fn active_parts(&self) -> Option<ActiveParts> {
        let d = super::timeline_data(self.views, self.sel.key(ViewKind::Active))?;
        Some((
            Rc::clone(&d.timeline),
            Rc::clone(&d.layout),
            d.highlight.clone(),
        ))
    }

    /// Gives the flamegraph the Active Memory Timeline's highlight (search matches, a source
    /// line's allocations) of the current (file, device).
    pub(super) fn sync_flame_matches(&mut self) {
        let Some((timeline, layout, highlight)) = self.active_parts() else {
            return;
        };
        let (device, key) = (self.sel.device, self.sel.key(ViewKind::Flame));
        let (Some(f), Some(fv)) = (
            self.files.get(self.sel.file),
            self.views.get_as_mut::<FlameView>(key),
        ) else {
            return;
        };
        fv.set_matches(&f.snap, device, &timeline, &layout, highlight);
        *self.needs_redraw = true;
    }

    /// Shows the diff flamegraph of files `a` and `b` (live allocations of the final state, all
    /// devices; `frames`: which frames, `None`: my code when either file has frames of the
    /// user's code, else Python) in the flamegraph view. Returns its state (`None` for an
    /// unknown file).
    pub fn flame_diff(
        &mut self,
        a: usize,
        b: usize,
        frames: Option<FrameMode>,
    ) -> Option<Avail<FlameState>> {
        use memviz_analysis::diff::live_folded;
        use memviz_analysis::flame::{FlameTree, ValueUnit};
        let (_, _) = (self.files.get(a)?, self.files.get(b)?);
        if let Err(why) = self.check_pair(Panel::FlameDiff, a, b) {
            return Some(Avail::from_result(Err(why)));
        }
        let user = self.flame_user_code();
        let (tree, mode) = {
            let (fa, fb) = (self.files.get(a)?, self.files.get(b)?);
            let mode = frames.unwrap_or_else(|| {
                let mine = memviz_analysis::flame::has_user_frames;
                if mine(&fa.snap, &user) || mine(&fb.snap, &user) {
                    FrameMode::MyCode
                } else {
                    FrameMode::Python
                }
            });
            let tree = FlameTree::build_diff(
                &live_folded(&fa.snap, None, mode, &user),
                &live_folded(&fb.snap, None, mode, &user),
                ValueUnit::Bytes,
            );
            ((tree, fa.name.clone(), fb.name.clone()), mode)
        };
        self.show(ViewKind::Flame);
        let fv = self
            .views
            .get_as_mut::<FlameView>(self.sel.key(ViewKind::Flame))?;
        Some(Avail::Ready(fv.show_diff(tree.0, &tree.1, &tree.2, mode)))
    }

    /// The flamegraph shown, when the flamegraph view is on.
    fn fv(&mut self) -> Option<(&Snapshot, &mut FlameView)> {
        if self.sel.shown != ViewKind::Flame {
            return None;
        }
        let key = self.sel.key(ViewKind::Flame);
        let f = self.files.get(self.sel.file)?;
        Some((&f.snap, self.views.get_as_mut::<FlameView>(key)?))
    }

    /// Rebuilds the flamegraph at a moment or over a range ([`FlameAt`]); `lifetime`: bytes ×
    /// lifetime over the trace (a range always gives bytes × lifetime within it);
    /// [`FlameAt::Reserved`]: the reserved memory at the end, by segment, state and stack (the
    /// final segments, not the timeline; `lifetime` and `frames` do not apply); `frames`: which
    /// frames, `None`: the file's default (my code when it has frames of the user's code, else
    /// Python). Returns the flamegraph's state (`None` before the first file).
    pub fn flame_set(
        &mut self,
        at: FlameAt,
        lifetime: bool,
        frames: Option<FrameMode>,
    ) -> Option<Avail<FlameState>> {
        use memviz_analysis::flame::{At, FlameOptions};
        let built = self.ensure(ViewKind::Flame);
        if built {
            if let Err(why) = self.check_panel(Panel::FlameMoment, ViewKind::Active) {
                return Some(Avail::from_result(Err(why)));
            }
        }
        let device = self.sel.device;
        let user = self.flame_user_code();
        let range = match at {
            FlameAt::Phase { index } => {
                super::timeline_data(self.views, self.sel.key(ViewKind::Active))
                    .and_then(|d| d.phases.get(index).map(|(p, _)| (p.start_step, p.end_step)))
            }
            FlameAt::Range { from, to } if from <= to => Some((from, to)),
            _ => None,
        };
        let moment = match at {
            FlameAt::Click => self.last_click_step().map_or(At::Peak, At::Step),
            FlameAt::Step { step } => At::Step(step),
            _ => At::Peak,
        };
        let parts = self.active_parts();
        let key = self.sel.key(ViewKind::Flame);
        let f = self.files.get(self.sel.file)?;
        let fv = self.views.get_as_mut::<FlameView>(key)?;
        *self.needs_redraw = true;
        if at == FlameAt::Reserved {
            use memviz_analysis::flame::{FlameTree, ValueUnit};
            use memviz_analysis::memory_viz::{reserved_entries, ReservedBy};
            // The same lines as `memviz segments FILE --device D`.
            let entries = reserved_entries(&f.snap, Some(device), ReservedBy::Segment);
            let tree = FlameTree::build(&entries, ValueUnit::Bytes);
            drop(entries);
            return Some(Avail::Ready(fv.show_reserved(tree)));
        }
        let (timeline, layout, _) = parts?;
        fv.set_user_code(&f.snap, &user);
        let frames = frames.unwrap_or_else(|| fv.default_frames());
        let opts = FlameOptions {
            frames,
            user,
            lifetime: lifetime || range.is_some(),
            step_range: range,
        };
        Some(Avail::Ready(fv.set_options(
            &f.snap, device, &timeline, &layout, moment, opts,
        )))
    }

    /// The flamegraph's breadcrumb, labels and state.
    pub fn flame_info(&mut self) -> Option<FlameInfo> {
        self.ensure(ViewKind::Flame);
        let fv = self
            .views
            .get_as::<FlameView>(self.sel.key(ViewKind::Flame))?;
        Some(FlameInfo {
            breadcrumb: fv.breadcrumb(),
            labels: fv.labels(),
            state: fv.state(),
        })
    }

    /// Zooms the flamegraph to a node of the full tree (from the breadcrumb).
    pub fn flame_zoom_to(&mut self, node: u32) -> bool {
        *self.needs_redraw = true;
        self.fv().is_some_and(|(_, fv)| fv.zoom_to(node))
    }

    /// Canvas CSS px of a flamegraph node's centre (in the current zoom).
    pub fn flame_node_center(&mut self, node: u32) -> Option<[f64; 2]> {
        let (_, fv) = self.fv()?;
        fv.node_center_css(node)
    }
}

/// The `external_annotations` phases of the Active Memory Timeline `d` (time ranges for
/// [`crate::App::flame_set`]), at most 1000, in start order.
pub(super) fn phases(d: Option<&super::device::DeviceData>) -> Vec<FlamePhase> {
    let Some(d) = d else {
        return Vec::new();
    };
    d.phases
        .iter()
        .enumerate()
        .take(1000)
        .map(|(index, (p, _))| FlamePhase {
            index,
            name: p.name.clone(),
            start_step: p.start_step,
            end_step: p.end_step,
        })
        .collect()
}
