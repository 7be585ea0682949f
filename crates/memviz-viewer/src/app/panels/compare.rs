//! Leak suspects and the comparison of two files, each named by its site
//! (`memviz_analysis::site`, the app's user code).

use memviz_analysis::diff::DiffBuilder;
use memviz_analysis::format::size_short;
use memviz_analysis::timeline;
use memviz_present::layout::Layout;

use super::stack_frames;
use crate::answer::{
    line_kinds, Avail, DiffAnswer, DiffGroup, LeaksAnswer, SiteText, SuspectAnswer, Unavailable,
};
use crate::app::current::Current;
use crate::app::files::LoadedFile;
use crate::app::ViewKind;
use crate::memory::{panel_bytes, panel_largest_allocation, Panel, PanelCounts, PANEL_LAYOUT};

/// The frames a panel shows of `stack` ([`memviz_analysis::frames::shown_frames`]), owned.
fn shown_frames(stack: &[String]) -> Vec<String> {
    memviz_analysis::frames::shown_frames(stack)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

impl Current<'_> {
    /// Leak suspects of the current device's Active Memory Timeline
    /// (`memviz_analysis::leaks::LeakReport`, with each suspect's size as text and its shown
    /// frames). Without the Active Memory Timeline built, a timeline and compact layout are
    /// built for the answer and dropped. `None` before the first file.
    pub fn leaks(&mut self) -> Option<Avail<LeaksAnswer>> {
        let active_built = self.files.get(self.sel.file).is_some()
            && self.views.is_built(self.sel.key(ViewKind::Active));
        if self.views.memory().is_some() {
            let c = self.panel_counts(ViewKind::Active);
            let (mut need, mut largest) = if active_built {
                (
                    panel_bytes(Panel::Leaks, &c),
                    panel_largest_allocation(Panel::Leaks, &c),
                )
            } else {
                // Its own timeline and compact layout, with at most as many elements as events.
                let own = PanelCounts {
                    elements: c.events,
                    ..c
                };
                (
                    c.events
                        .saturating_mul(crate::memory::LEAKS_OWN_TIMELINE_BYTES_PER_EVENT)
                        .saturating_add(panel_bytes(Panel::Leaks, &own)),
                    c.events.saturating_mul(16),
                )
            };
            need = need.max(1);
            largest = largest.max(1);
            if let Err(why) = self.panel_fits(Panel::Leaks, need, largest) {
                return Some(Avail::from_result(Err(why)));
            }
        }
        let device = self.sel.device;
        let active = self.sel.key(ViewKind::Active);
        let LoadedFile { snap, sites, .. } = self.files.get_mut(self.sel.file)?;
        let own;
        let (timeline, layout) = match crate::app::timeline_data(self.views, active) {
            Some(d) => (&*d.timeline, &*d.layout),
            None => {
                let mut t = timeline::build(snap, device);
                let l = Layout::build_dropping_steps(&mut t, PANEL_LAYOUT);
                own = (t, l);
                (&own.0, &own.1)
            }
        };
        let report = memviz_analysis::leaks::leaks_with(snap, device, timeline, layout, sites);
        let user = &self.user_code;
        Some(Avail::Ready(LeaksAnswer {
            settled_step: report.settled_step,
            settled_rule: report.settled_rule,
            suspects: report
                .suspects
                .into_iter()
                .map(|suspect| {
                    let shown = shown_frames(&suspect.stack);
                    SuspectAnswer {
                        size: size_short(suspect.bytes),
                        kinds: line_kinds(&shown, user),
                        shown,
                        site: SiteText::of(&suspect.site),
                        suspect,
                    }
                })
                .collect(),
        }))
    }

    /// The counts of files `a` and `b` together, for the comparisons.
    pub(in crate::app) fn pair_counts(&self, a: usize, b: usize) -> PanelCounts {
        let mut c = PanelCounts::default();
        for i in [a, b] {
            if let Some(f) = self.files.get(i) {
                c.stack_frames = c.stack_frames.saturating_add(stack_frames(&f.snap));
                c.segments = c.segments.saturating_add(f.snap.segments.len() as u64);
                c.blocks = c.blocks.saturating_add(f.snap.blocks.len() as u64);
            }
        }
        c
    }

    /// `Ok` when the comparison `panel` of files `a` and `b` fits in memory.
    pub(in crate::app) fn check_pair(
        &mut self,
        panel: Panel,
        a: usize,
        b: usize,
    ) -> Result<(), Unavailable> {
        if self.views.memory().is_none() {
            return Ok(());
        }
        let c = self.pair_counts(a, b);
        self.panel_fits(
            panel,
            panel_bytes(panel, &c),
            panel_largest_allocation(panel, &c),
        )
    }

    /// Compares the live allocations of files `a` and `b` (all devices): the
    /// `memviz_analysis::diff::Diff` (groups sorted by growth; at most 500 groups) with sizes as
    /// text, the group and segment counts, and the file names. `None` for an unknown file.
    pub fn diff(&mut self, a: usize, b: usize) -> Option<Avail<DiffAnswer>> {
        let (_, _) = (self.files.get(a)?, self.files.get(b)?);
        if let Err(why) = self.check_pair(Panel::Compare, a, b) {
            return Some(Avail::from_result(Err(why)));
        }
        let (fa, fb) = (self.files.get(a)?, self.files.get(b)?);
        let mut builder = DiffBuilder::with_user_code(None, self.user_code.clone());
        builder.add(0, &fa.snap);
        builder.add(1, &fb.snap);
        let d = builder.finish();
        let user = &self.user_code;
        let signed = |x: u64, y: u64| {
            if y >= x {
                format!("+{}", size_short(y - x))
            } else {
                format!("-{}", size_short(x - y))
            }
        };
        let seg_bytes = |v: &[memviz_analysis::diff::SegmentKey]| {
            size_short(v.iter().fold(0u64, |s, k| s.saturating_add(k.total_size)))
        };
        Some(Avail::Ready(DiffAnswer {
            a: fa.name.clone(),
            b: fb.name.clone(),
            group_count: d.groups.len(),
            groups: d
                .groups
                .iter()
                .take(500)
                .map(|g| DiffGroup {
                    stack: g.stack.clone(),
                    shown: shown_frames(&g.stack),
                    kinds: line_kinds(&shown_frames(&g.stack), user),
                    site: SiteText::of(&g.site),
                    bytes_a: g.bytes_a,
                    bytes_b: g.bytes_b,
                    count_a: g.count_a,
                    count_b: g.count_b,
                    a: size_short(g.bytes_a),
                    b: size_short(g.bytes_b),
                    delta: signed(g.bytes_a, g.bytes_b),
                })
                .collect(),
            segments_only_a: d.segments_only_a.len(),
            segments_only_b: d.segments_only_b.len(),
            segments_only_a_bytes: seg_bytes(&d.segments_only_a),
            segments_only_b_bytes: seg_bytes(&d.segments_only_b),
        }))
    }
}
