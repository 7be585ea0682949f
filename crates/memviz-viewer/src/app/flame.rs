//! The app's side of the flamegraph: built on first use for the current (file, device) from
//! the Active Memory Timeline, its moments and ranges, the reserved memory at the end (the final
//! segments), the diff of two files.

use memviz_analysis::flame::FrameMode;
use memviz_analysis::site::UserCode;
use memviz_snapshot::Snapshot;

use super::device::build_device;
use super::{ActiveView, App, ViewKind};
use crate::answer::{Avail, FlameAt, FlameInfo, FlamePhase, FlameState};
use crate::flame_view::FlameView;
use crate::memory::Panel;

impl App {
    /// What counts as the user's code in the flamegraph (its "my code" mode and default).
    fn flame_user_code(&self) -> UserCode {
        // user-code: the one place the flamegraph reads the App's UserCode (`set_user_code`);
        // `flame_set` hands it to the view, which notices a change.
        self.user_code.clone()
    }

    pub(super) fn ensure_flame_view(&mut self) {
        let key = (self.current, self.device);
        if self.flame_view.as_ref().is_some_and(|(k, _)| *k == key) {
            return;
        }
        if !self.fits(ViewKind::Flame) {
            self.flame_view = None;
            return;
        }
        let geom = self.geom;
        let device = self.device;
        let user = self.flame_user_code();
        let Some(f) = self.files.get_mut(self.current) else {
            self.flame_view = None;
            return;
        };
        if !f.devices.contains_key(&(device, ViewKind::Active)) {
            let data = build_device(&f.snap, device, ViewKind::Active, &f.devices);
            f.devices.insert((device, ViewKind::Active), data);
        }
        let Some(data) = f.devices.get(&(device, ViewKind::Active)) else {
            self.flame_view = None;
            return;
        };
        let mut fv =
            FlameView::with_user_code(&f.snap, device, &data.timeline, &data.layout, &geom, user);
        if data.highlight.is_some() {
            fv.set_matches(
                &f.snap,
                device,
                &data.timeline,
                &data.layout,
                data.highlight.clone(),
            );
        }
        self.flame_view = Some((key, fv));
    }

    /// Gives the flamegraph the Active Memory Timeline's highlight (search matches, a source
    /// line's allocations) of the current (file, device).
    pub(super) fn sync_flame_matches(&mut self) {
        let device = self.device;
        let Some(((cur, dev), fv)) = self.flame_view.as_mut() else {
            return;
        };
        if (*cur, *dev) != (self.current, device) {
            return;
        }
        let Some(f) = self.files.get(*cur) else {
            return;
        };
        if let Some(d) = f.devices.get(&(device, ViewKind::Active)) {
            fv.set_matches(&f.snap, device, &d.timeline, &d.layout, d.highlight.clone());
            self.frame.needs_redraw = true;
        }
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
        self.set_view(ViewKind::Flame);
        self.frame.needs_redraw = true;
        let (_, fv) = self.flame_view.as_mut()?;
        Some(Avail::Ready(fv.show_diff(tree.0, &tree.1, &tree.2, mode)))
    }

    /// The flamegraph shown, when the flamegraph view is on.
    fn fv(&mut self) -> Option<(&Snapshot, &mut FlameView)> {
        if self.active != ActiveView::Flame {
            return None;
        }
        let (key, fv) = self.flame_view.as_mut()?;
        if *key != (self.current, self.device) {
            return None;
        }
        let snap = &self.files.get(key.0)?.snap;
        Some((snap, fv))
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
        self.ensure_flame_view();
        if self.flame_view.is_some() {
            if let Err(why) = self.check_panel(Panel::FlameMoment, ViewKind::Active, false) {
                return Some(Avail::from_result(Err(why)));
            }
        }
        let device = self.device;
        let user = self.flame_user_code();
        let f = self.files.get(self.current)?;
        if at == FlameAt::Reserved {
            use memviz_analysis::flame::{FlameTree, ValueUnit};
            use memviz_analysis::memory_viz::{reserved_entries, ReservedBy};
            // The same lines as `memviz segments FILE --device D`.
            let entries = reserved_entries(&f.snap, Some(device), ReservedBy::Segment);
            let tree = FlameTree::build(&entries, ValueUnit::Bytes);
            drop(entries);
            let (_, fv) = self.flame_view.as_mut()?;
            self.frame.needs_redraw = true;
            return Some(Avail::Ready(fv.show_reserved(tree)));
        }
        let d = f.devices.get(&(device, ViewKind::Active))?;
        let (_, fv) = self.flame_view.as_mut()?;
        let range = match at {
            FlameAt::Phase { index } => {
                d.phases.get(index).map(|(p, _)| (p.start_step, p.end_step))
            }
            FlameAt::Range { from, to } if from <= to => Some((from, to)),
            _ => None,
        };
        let moment = match at {
            FlameAt::Click => self.timeline.last_click_step.map_or(At::Peak, At::Step),
            FlameAt::Step { step } => At::Step(step),
            _ => At::Peak,
        };
        self.frame.needs_redraw = true;
        fv.set_user_code(&f.snap, &user);
        let frames = frames.unwrap_or_else(|| fv.default_frames());
        let opts = FlameOptions {
            frames,
            user,
            lifetime: lifetime || range.is_some(),
            step_range: range,
        };
        Some(Avail::Ready(fv.set_options(
            &f.snap,
            device,
            &d.timeline,
            &d.layout,
            moment,
            opts,
        )))
    }

    /// The `external_annotations` phases of the current device's Active Memory Timeline (time
    /// ranges for [`App::flame_set`]), at most 1000, in start order.
    #[must_use]
    pub fn flame_phases(&self) -> Vec<FlamePhase> {
        let Some(d) = self
            .files
            .get(self.current)
            .and_then(|f| f.devices.get(&(self.device, ViewKind::Active)))
        else {
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

    /// The flamegraph's breadcrumb, labels and state.
    pub fn flame_info(&mut self) -> Option<FlameInfo> {
        self.ensure_flame_view();
        let (_, fv) = self.flame_view.as_ref()?;
        Some(FlameInfo {
            breadcrumb: fv.breadcrumb(),
            labels: fv.labels(),
            state: fv.state(),
        })
    }

    /// Zooms the flamegraph to a node of the full tree (from the breadcrumb).
    pub fn flame_zoom_to(&mut self, node: u32) -> bool {
        self.frame.needs_redraw = true;
        self.fv().is_some_and(|(_, fv)| fv.zoom_to(node))
    }

    /// Canvas CSS px of a flamegraph node's centre (in the current zoom).
    pub fn flame_node_center(&mut self, node: u32) -> Option<[f64; 2]> {
        let (_, fv) = self.fv()?;
        fv.node_center_css(node)
    }
}
