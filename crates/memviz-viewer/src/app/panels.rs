//! The panels beside the timeline (search, highlights, the source-line table, what is alive at
//! a moment, leak suspects, the comparison of two files) and the structures built on first use
//! (the layout's hit index, the tooltips' context), each checked against the [`Memory`] before
//! it is built, as views are ([`crate::memory::panel_bytes`]): when it does not fit, the views
//! it does not need are released, and when it still does not fit it is not built and the entry
//! point answers `{"unavailable": "<sentence>"}` (the sentence names what it needs, what is
//! free and the command line that gives the same answer). Without a [`Memory`] everything is
//! built.

use memviz_analysis::layout::Layout;
use memviz_analysis::{color, timeline};
use serde_json::json;

use super::{App, ViewKind};
use crate::memory::{
    contiguous_room, panel_bytes, panel_fragmented_message, panel_largest_allocation,
    panel_unavailable_message, Memory, Panel, PanelCounts, PANEL_LAYOUT,
};

/// The answer of a panel that cannot fit: `{"unavailable": sentence}`.
#[must_use]
pub fn unavailable_json(sentence: &str) -> String {
    json!({ "unavailable": sentence }).to_string()
}

/// True when the layout's hit index is built (it is built on first use).
fn hit_built(layout: &Layout) -> bool {
    layout.heap_bytes() != layout.heap_bytes_without_hit()
}

/// Σ frame references of every interned stack of `snap`.
fn stack_frames(snap: &memviz_snapshot::Snapshot) -> u64 {
    (0..snap.stacks.len())
        .map(|i| snap.stack(memviz_snapshot::StackId(i as u32)).len() as u64)
        .sum()
}

impl App {
    /// The counts of the current file and device that panel estimates are made from, with the
    /// elements and timesteps of the built timeline of `kind` (0 when not built).
    pub(super) fn panel_counts(&self, kind: ViewKind) -> PanelCounts {
        let Some(f) = self.files.get(self.current) else {
            return PanelCounts::default();
        };
        let snap = &f.snap;
        let layout = f.devices.get(&(self.device, kind)).map(|d| &*d.layout);
        PanelCounts {
            events: snap.trace(self.device).map_or(0, |t| t.len()) as u64,
            elements: layout.map_or(0, |l| l.element_count() as u64),
            steps: layout.map_or(0, |l| u64::from(l.step_count())),
            stack_frames: stack_frames(snap),
            segments: snap.segments.len() as u64,
            blocks: snap.blocks.len() as u64,
        }
    }

    /// `Ok` when `need` more bytes (the largest single allocation `largest`) fit for `panel`:
    /// when they do not, the views but the one shown and the timeline the panels read are
    /// released first; when they still do not, the sentence to answer with.
    pub(super) fn panel_fits(
        &mut self,
        panel: Panel,
        need: u64,
        largest: u64,
    ) -> Result<(), String> {
        let Some(mem) = self.memory else {
            return Ok(());
        };
        if need <= mem.free() && contiguous_room(largest) {
            return Ok(());
        }
        // The flamegraph stays for the panels that rebuild it.
        let flame = matches!(panel, Panel::FlameMoment | Panel::FlameDiff);
        let also = if flame { ViewKind::Flame } else { self.view() };
        self.release_views_but(&[self.view(), self.timeline_kind(), also]);
        let free = mem.free();
        let events = self.panel_counts(self.timeline.kind).events;
        if need > free {
            return Err(panel_unavailable_message(
                panel,
                need,
                free,
                events,
                self.device,
            ));
        }
        if !contiguous_room(largest) {
            // The total fits, a single piece of it does not: the heap is fragmented.
            return Err(panel_fragmented_message(
                panel,
                largest,
                free,
                events,
                self.device,
            ));
        }
        Ok(())
    }

    /// Checks `panel` over the timeline of `kind`, adding the hit index when `with_hit` and it is
    /// not built yet.
    pub(super) fn check_panel(
        &mut self,
        panel: Panel,
        kind: ViewKind,
        with_hit: bool,
    ) -> Result<(), String> {
        if self.memory.is_none() {
            return Ok(());
        }
        let c = self.panel_counts(kind);
        let mut need = panel_bytes(panel, &c);
        let mut largest = panel_largest_allocation(panel, &c);
        if with_hit && !self.hit_ready_for(kind) {
            need = need.saturating_add(panel_bytes(Panel::HitIndex, &c));
            largest = largest.max(panel_largest_allocation(Panel::HitIndex, &c));
        }
        let highlights = matches!(
            panel,
            Panel::Highlight | Panel::Search | Panel::LineHighlight
        );
        if highlights {
            // A static scene (small traces) is rebuilt whole: its trapezoids (28 bytes each,
            // split over tiles, in growing vectors), at most one per point.
            let points = self
                .files
                .get(self.current)
                .and_then(|f| f.devices.get(&(self.device, kind)))
                .filter(|d| !d.windowed)
                .map_or(0, |d| {
                    d.layout
                        .exact_point_count()
                        .min(crate::scene::STATIC_MAX_POINTS)
                });
            need = need.saturating_add(points.saturating_mul(STATIC_SCENE_BYTES_PER_POINT));
        }
        if highlights && self.active == super::ActiveView::Flame {
            // The flamegraph shows the matches too: it is rebuilt with them.
            let fc = self.panel_counts(ViewKind::Active);
            need = need.saturating_add(panel_bytes(Panel::FlameMoment, &fc));
        }
        self.panel_fits(panel, need, largest)
    }

    /// True when the hit index of the timeline of `kind` is built, or no [`Memory`] is set.
    fn hit_ready_for(&self, kind: ViewKind) -> bool {
        self.memory.is_none()
            || self
                .files
                .get(self.current)
                .and_then(|f| f.devices.get(&(self.device, kind)))
                .is_none_or(|d| hit_built(&d.layout))
    }

    /// True when the hit index of the timeline shown is built or fits in the memory left now
    /// (nothing released): [`App::element_at`] answers only then.
    pub(super) fn hit_index_fits_now(&self) -> bool {
        if self.hit_ready_for(self.timeline.kind) {
            return true;
        }
        let c = self.panel_counts(self.timeline.kind);
        self.memory
            .is_none_or(|m: Memory| panel_bytes(Panel::HitIndex, &c) <= m.free())
    }

    /// Makes sure the hit index of the timeline shown can be built (views released if needed);
    /// the sentence when it cannot.
    pub(super) fn ensure_hit_index(&mut self) -> Result<(), String> {
        if self.hit_ready_for(self.timeline.kind) {
            return Ok(());
        }
        self.check_panel(Panel::HitIndex, self.timeline.kind, false)
    }

    /// The legend of the timeline the panels read: from the hit index when it is built (or no
    /// [`Memory`] is set), else by a pass over the elements that builds nothing.
    pub(super) fn legend_entries(&self, n: usize) -> Vec<color::LegendEntry> {
        let Some((snap, d)) = self.parts() else {
            return Vec::new();
        };
        if self.memory.is_none() || hit_built(&d.layout) {
            color::legend(snap, self.device, &d.timeline, &d.layout, n)
        } else {
            color::legend_by_scan(snap, self.device, &d.timeline, &d.layout, n)
        }
    }

    /// Makes sure the tooltips' context of the timeline shown can be built.
    pub(super) fn ensure_tooltips(&mut self) -> Result<(), String> {
        let built = self
            .files
            .get(self.current)
            .and_then(|f| f.devices.get(&(self.device, self.timeline.kind)))
            .is_none_or(|d| d.tips.is_some());
        if built {
            return Ok(());
        }
        self.check_panel(Panel::Tooltips, self.timeline.kind, false)
    }

    // ----- search, highlight, source lines ------------------------------------------------------

    /// Highlights `elements` of the current timeline (the others faint grey, or hidden when
    /// `only`); `None` clears. The scene is rebuilt with the new colours. A highlight that
    /// cannot fit in memory leaves the current one as it is.
    pub fn set_highlight(&mut self, elements: Option<Vec<u32>>, only: bool) {
        if elements.is_some()
            && self
                .check_panel(Panel::Highlight, self.timeline_kind(), false)
                .is_err()
        {
            return;
        }
        let _ = self.apply_highlight(elements, only);
    }

    /// [`App::set_highlight`] once checked; `Err` when its colours could not be allocated.
    fn apply_highlight(&mut self, elements: Option<Vec<u32>>, only: bool) -> Result<(), String> {
        let key = (self.device, self.timeline_kind());
        let Some(d) = self
            .files
            .get_mut(self.current)
            .and_then(|f| f.devices.get_mut(&key))
        else {
            return Ok(());
        };
        match elements {
            None if d.highlight.is_none() => return Ok(()),
            None => {
                d.highlight = None;
                d.colors.clone_from(&d.base_colors);
            }
            Some(mut els) => {
                els.sort_unstable();
                els.dedup();
                let other = if only {
                    color::HIDDEN_COLOR
                } else {
                    color::DIM_COLOR
                };
                let n = d.base_colors.len();
                let mut colors: Vec<u8> = Vec::new();
                if colors.try_reserve_exact(n).is_err() {
                    return Err(format!(
                        "{} needs {} contiguous bytes of memory, which this page no longer has",
                        Panel::Highlight.title(),
                        n
                    ));
                }
                colors.resize(n, other);
                for &e in &els {
                    if let (Some(c), Some(&b)) =
                        (colors.get_mut(e as usize), d.base_colors.get(e as usize))
                    {
                        *c = b;
                    }
                }
                d.colors = colors;
                d.highlight = Some((els, only));
            }
        }
        d.scene = super::device::initial_scene(&d.layout, &d.colors, d.windowed);
        self.frame.generation += 1;
        self.frame.needs_redraw = true;
        if self.is_windowed() {
            self.timeline.settle = super::timeline::Settle::Moved;
        }
        if self.active == super::ActiveView::Flame {
            self.sync_flame_matches();
        }
        Ok(())
    }

    /// The timeline that search, the line table and highlights work on: the Active Memory
    /// Timeline while the flamegraph (built from it) is shown, else the timeline kind shown.
    pub(super) fn timeline_kind(&self) -> ViewKind {
        if self.active == super::ActiveView::Flame {
            ViewKind::Active
        } else {
            self.timeline.kind
        }
    }

    /// Searches the current timeline (substring, or `/regex/`; see
    /// `memviz_analysis::search`) and highlights the matches (`only`: hide the rest); an empty
    /// query clears. JSON `{query, count, bytes, size, error}`, plus `unavailable` (the
    /// sentence) when the search cannot fit in memory.
    pub fn search(&mut self, query: &str, only: bool) -> String {
        if query.trim().is_empty() {
            self.set_highlight(None, false);
            return json!({"query": "", "count": 0, "bytes": 0, "size": "", "error": null})
                .to_string();
        }
        let q = match memviz_analysis::search::parse_query(query) {
            Ok(q) => q,
            Err(e) => {
                return json!({"query": query, "count": 0, "bytes": 0, "size": "", "error": e})
                    .to_string()
            }
        };
        // A query no address label can match needs no address versions: only its matches
        // and their highlight.
        let panel = if q.may_match_labels() {
            Panel::Search
        } else {
            Panel::Highlight
        };
        if let Err(why) = self.check_panel(panel, self.timeline_kind(), false) {
            return json!({"query": query, "count": 0, "bytes": 0, "size": "", "error": null,
                "unavailable": why})
            .to_string();
        }
        let Some((snap, d)) = self.parts() else {
            return "null".into();
        };
        let r = memviz_analysis::search::search(snap, self.device, &d.timeline, &q);
        let mut out = json!({
            "query": query,
            "count": r.count,
            "bytes": r.bytes,
            "size": memviz_analysis::format::size_long(r.bytes),
            "error": null,
        });
        if let Err(why) = self.apply_highlight(Some(r.elements), only) {
            out["unavailable"] = json!(why);
        }
        out.to_string()
    }

    /// The per-source-line table of the current timeline, JSON `[{file, line, name,
    /// live_at_peak_bytes, total_bytes, count, largest_bytes, live, total, largest}]` (the last
    /// three formatted); `all_frames`: attribute to the innermost frame of any kind.
    /// `{"unavailable": sentence}` when it cannot fit in memory.
    pub fn lines_json(&mut self, all_frames: bool) -> String {
        use memviz_analysis::format::size_short;
        use memviz_analysis::lines::{line_table, LineOptions};
        if let Err(why) = self.check_panel(Panel::Lines, self.timeline_kind(), true) {
            return unavailable_json(&why);
        }
        let Some((snap, d)) = self.parts() else {
            return "[]".into();
        };
        let opts = if all_frames {
            LineOptions::ALL_FRAMES
        } else {
            LineOptions::default()
        };
        let rows: Vec<serde_json::Value> =
            line_table(snap, self.device, &d.timeline, &d.layout, opts)
                .into_iter()
                .map(|r| {
                    let mut v = serde_json::to_value(&r).unwrap_or_default();
                    if let Some(o) = v.as_object_mut() {
                        o.insert("live".into(), json!(size_short(r.live_at_peak_bytes)));
                        o.insert("total".into(), json!(size_short(r.total_bytes)));
                        o.insert("largest".into(), json!(size_short(r.largest_bytes)));
                    }
                    v
                })
                .collect();
        json!(rows).to_string()
    }

    /// Highlights the elements of one row of [`App::lines_json`] (`file`, `line`, `name`);
    /// returns how many, or the sentence when it cannot fit in memory.
    pub fn highlight_line(
        &mut self,
        file: &str,
        line: i64,
        name: &str,
        all_frames: bool,
    ) -> Result<usize, String> {
        use memviz_analysis::lines::{row_elements, LineOptions, LineRow};
        self.check_panel(Panel::LineHighlight, self.timeline_kind(), false)?;
        let opts = if all_frames {
            LineOptions::ALL_FRAMES
        } else {
            LineOptions::default()
        };
        let els = {
            let Some((snap, d)) = self.parts() else {
                return Ok(0);
            };
            let row = LineRow {
                file: file.to_owned(),
                line,
                name: name.to_owned(),
                live_at_peak_bytes: 0,
                total_bytes: 0,
                count: 0,
                largest_bytes: 0,
            };
            row_elements(snap, self.device, &d.timeline, opts, &row)
        };
        let n = els.len();
        self.apply_highlight(Some(els), false)?;
        Ok(n)
    }

    /// Leak suspects of the current device's Active Memory Timeline, JSON
    /// (`memviz_analysis::leaks::LeakReport` plus `size` and `shown` per suspect). Without the
    /// Active Memory Timeline built, a timeline and compact layout are built for the answer and
    /// dropped. `{"unavailable": sentence}` when it cannot fit in memory.
    pub fn leaks_json(&mut self) -> String {
        let active_built = self
            .files
            .get(self.current)
            .is_some_and(|f| f.devices.contains_key(&(self.device, ViewKind::Active)));
        if self.memory.is_some() {
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
                return unavailable_json(&why);
            }
        }
        let Some(f) = self.files.get(self.current) else {
            return "null".into();
        };
        let own;
        let (timeline, layout) = match f.devices.get(&(self.device, ViewKind::Active)) {
            Some(d) => (&*d.timeline, &*d.layout),
            None => {
                let mut t = timeline::build(&f.snap, self.device);
                let l = Layout::build_dropping_steps(&mut t, PANEL_LAYOUT);
                own = (t, l);
                (&own.0, &own.1)
            }
        };
        let report = memviz_analysis::leaks::leaks(&f.snap, self.device, timeline, layout);
        let mut v = serde_json::to_value(&report).unwrap_or_default();
        if let Some(list) = v.get_mut("suspects").and_then(|x| x.as_array_mut()) {
            for (sv, s) in list.iter_mut().zip(&report.suspects) {
                if let Some(o) = sv.as_object_mut() {
                    o.insert(
                        "size".into(),
                        json!(memviz_analysis::format::size_short(s.bytes)),
                    );
                    o.insert(
                        "shown".into(),
                        json!(memviz_analysis::frames::shown_frames(&s.stack)),
                    );
                }
            }
        }
        v.to_string()
    }

    /// Every allocation alive at timestep `step` (the peak when negative) of the current
    /// timeline, largest first, JSON `{step, count, total, rows: [LiveRow + size_text]}` (at
    /// most [`LIVE_ROWS`] rows), or `{"unavailable": sentence}` when it cannot fit in memory.
    pub fn live_json(&mut self, step: i64) -> String {
        if let Err(why) = self.check_panel(Panel::Live, self.timeline_kind(), true) {
            return unavailable_json(&why);
        }
        let Some((snap, d)) = self.parts() else {
            return "null".into();
        };
        let step = if step < 0 {
            d.layout.peak_step
        } else {
            u32::try_from(step)
                .unwrap_or(u32::MAX)
                .min(d.layout.step_count().saturating_sub(1))
        };
        let live = memviz_analysis::lines::live_rows(
            snap,
            self.device,
            &d.timeline,
            &d.layout,
            step,
            LIVE_ROWS,
        );
        let list: Vec<serde_json::Value> = live
            .rows
            .iter()
            .map(|r| {
                let mut v = serde_json::to_value(r).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    o.insert(
                        "size_text".into(),
                        json!(memviz_analysis::format::size_short(r.size)),
                    );
                }
                v
            })
            .collect();
        json!({
            "step": step,
            "count": live.count,
            "total": memviz_analysis::format::size_long(live.total_bytes),
            "rows": list,
        })
        .to_string()
    }

    /// The counts of files `a` and `b` together, for the comparisons.
    fn pair_counts(&self, a: usize, b: usize) -> PanelCounts {
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
    pub(super) fn check_pair(&mut self, panel: Panel, a: usize, b: usize) -> Result<(), String> {
        if self.memory.is_none() {
            return Ok(());
        }
        let c = self.pair_counts(a, b);
        self.panel_fits(
            panel,
            panel_bytes(panel, &c),
            panel_largest_allocation(panel, &c),
        )
    }

    /// Compares the live allocations of files `a` and `b` (all devices), JSON: the
    /// `memviz_analysis::diff::Diff` (groups sorted by growth; at most 500 groups) plus
    /// formatted sizes, the group and segment counts, and the file names;
    /// `{"unavailable": sentence}` when it cannot fit in memory.
    pub fn diff_json(&mut self, a: usize, b: usize) -> String {
        use memviz_analysis::format::size_short;
        if self.files.get(a).is_none() || self.files.get(b).is_none() {
            return "null".into();
        }
        if let Err(why) = self.check_pair(Panel::Compare, a, b) {
            return unavailable_json(&why);
        }
        let (Some(fa), Some(fb)) = (self.files.get(a), self.files.get(b)) else {
            return "null".into();
        };
        let d = memviz_analysis::diff::diff(&fa.snap, &fb.snap, None);
        let signed = |x: u64, y: u64| {
            if y >= x {
                format!("+{}", size_short(y - x))
            } else {
                format!("-{}", size_short(x - y))
            }
        };
        let groups: Vec<serde_json::Value> = d
            .groups
            .iter()
            .take(500)
            .map(|g| {
                json!({
                    "stack": g.stack,
                    "shown": memviz_analysis::frames::shown_frames(&g.stack),
                    "bytes_a": g.bytes_a,
                    "bytes_b": g.bytes_b,
                    "count_a": g.count_a,
                    "count_b": g.count_b,
                    "a": size_short(g.bytes_a),
                    "b": size_short(g.bytes_b),
                    "delta": signed(g.bytes_a, g.bytes_b),
                })
            })
            .collect();
        let seg_bytes = |v: &[memviz_analysis::diff::SegmentKey]| {
            size_short(v.iter().fold(0u64, |s, k| s.saturating_add(k.total_size)))
        };
        json!({
            "a": fa.name,
            "b": fb.name,
            "group_count": d.groups.len(),
            "groups": groups,
            "segments_only_a": d.segments_only_a.len(),
            "segments_only_b": d.segments_only_b.len(),
            "segments_only_a_bytes": seg_bytes(&d.segments_only_a),
            "segments_only_b_bytes": seg_bytes(&d.segments_only_b),
        })
        .to_string()
    }
}

/// Bytes per polyline point of a static scene rebuilt for a highlight (a 28-byte trapezoid,
/// pieces split over tiles, vectors growing by doubling).
const STATIC_SCENE_BYTES_PER_POINT: u64 = 64;

/// Rows [`App::live_json`] lists (the largest); its count and total cover every live one.
pub const LIVE_ROWS: usize = 2000;
