//! The panels beside the timeline (search, highlights, the source-line table, what is alive at
//! a moment, leak suspects, the comparison of two files) and the structures built on first use
//! (the layout's hit index, the tooltips' context), each checked against the [`Memory`] before
//! it is built, as views are ([`crate::memory::panel_bytes`]): when it does not fit, the views
//! it does not need are released, and when it still does not fit it is not built and the entry
//! point answers [`Avail::Unavailable`] (the sentence names what it needs, what is free and
//! the command line that gives the same answer). Without a [`Memory`] everything is
//! built.
//!
//! `mod.rs`: the memory checks, search and highlights; `lines.rs`: the source-line table and
//! what is alive at a moment; `compare.rs`: leak suspects and the comparison of two files;
//! `filter.rs`: the structured filter (intersected with the search).
//! Each names an allocation's site through the file's [`memviz_analysis::site::SiteCache`].

mod compare;
pub(super) mod filter;
mod lines;

use memviz_analysis::format::size_long;
use memviz_present::color;
use memviz_present::layout::Layout;

use crate::answer::{SearchAnswer, Unavailable};

use memviz_snapshot::Snapshot;

use super::current::Current;
use super::timeline::Gate;
use super::ViewKind;
use crate::cache::Shortfall;
use crate::memory::{
    panel_bytes, panel_fragmented_message, panel_largest_allocation, panel_unavailable_message,
    Memory, Panel, PanelCounts,
};
use crate::registry::{ViewKey, Views};

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

/// The counts of `key`'s file and device that panel estimates are made from, with the elements
/// and timesteps of its timeline (0 when not built).
pub(super) fn panel_counts(snap: Option<&Snapshot>, views: &Views, key: ViewKey) -> PanelCounts {
    let Some(snap) = snap else {
        return PanelCounts::default();
    };
    let layout = crate::app::timeline_data(views, key).map(|d| &*d.layout);
    PanelCounts {
        events: snap.trace(key.device).map_or(0, |t| t.len()) as u64,
        elements: layout.map_or(0, |l| l.element_count() as u64),
        steps: layout.map_or(0, |l| u64::from(l.step_count())),
        stack_frames: stack_frames(snap),
        segments: snap.segments.len() as u64,
        blocks: snap.blocks.len() as u64,
    }
}

/// True when the hit index of the timeline of `key` is built, or no [`Memory`] is set.
fn hit_ready(views: &Views, key: ViewKey) -> bool {
    views.memory().is_none()
        || crate::app::timeline_data(views, key).is_none_or(|d| hit_built(&d.layout))
}

/// True when the hit index of the timeline of `key` is built or fits in the memory left now
/// (nothing released): [`crate::App::element_at`] answers only then.
pub(super) fn hit_index_fits_now(snap: Option<&Snapshot>, views: &Views, key: ViewKey) -> bool {
    if hit_ready(views, key) {
        return true;
    }
    let c = panel_counts(snap, views, key);
    views
        .memory()
        .is_none_or(|m: Memory| panel_bytes(Panel::HitIndex, &c) <= m.free())
}

/// The element of the timeline of `key` under a canvas point, when its hit index is built or
/// fits in the memory left now.
pub(super) fn element_at(views: &Views, key: ViewKey, [css_x, css_y]: [f64; 2]) -> Option<u32> {
    let v = views.get_as::<super::timeline::TimelineView>(key)?;
    hit_index_fits_now(Some(&v.snap), views, key).then(|| v.hit_at(css_x, css_y))?
}

/// The legend of the timeline of `key`: from the hit index when it is built (or no [`Memory`]
/// is set), else by a pass over the elements that builds nothing.
pub(super) fn legend_entries(
    snap: &Snapshot,
    views: &Views,
    key: ViewKey,
    n: usize,
) -> Vec<color::LegendEntry> {
    let Some(d) = crate::app::timeline_data(views, key) else {
        return Vec::new();
    };
    if views.memory().is_none() || hit_built(&d.layout) {
        color::legend(snap, key.device, &d.timeline, &d.layout, n)
    } else {
        color::legend_by_scan(snap, key.device, &d.timeline, &d.layout, n)
    }
}

impl Current<'_> {
    /// The counts of the current file and device that panel estimates are made from, with the
    /// elements and timesteps of the built timeline of `kind` (0 when not built).
    pub(super) fn panel_counts(&self, kind: ViewKind) -> PanelCounts {
        panel_counts(self.snapshot(), self.views, self.sel.key(kind))
    }

    /// `Ok` when `need` more bytes (the largest single allocation `largest`) fit for `panel`:
    /// when they do not, the least recently used views are released, but not the one shown,
    /// the timeline the panels read or the current Active Memory Timeline (and the flamegraph
    /// for the panels that rebuild it); when they still do not, the sentence to answer with.
    pub(super) fn panel_fits(
        &mut self,
        panel: Panel,
        need: u64,
        largest: u64,
    ) -> Result<(), Unavailable> {
        let flame = matches!(panel, Panel::FlameMoment | Panel::FlameDiff);
        let mut keep = vec![self.sel.shown, self.sel.panel_kind(), ViewKind::Active];
        if flame {
            keep.push(ViewKind::Flame);
        }
        let (file, device) = (self.sel.file, self.sel.device);
        let held = |k: &crate::registry::ViewKey| {
            k.file == file && k.device == device && keep.contains(&k.kind)
        };
        let Err(Shortfall {
            need,
            free,
            fragmented,
        }) = self.views.make_room(need, largest, held)
        else {
            return Ok(());
        };
        let events = self.panel_counts(self.sel.timeline).events;
        Err(Unavailable::from(if fragmented {
            // The total fits, a single piece of it does not: the heap is fragmented.
            panel_fragmented_message(panel, largest, free, events, self.sel.device)
        } else {
            panel_unavailable_message(panel, need, free, events, self.sel.device)
        }))
    }

    /// Checks `panel` over the timeline of `kind`.
    pub(super) fn check_panel(&mut self, panel: Panel, kind: ViewKind) -> Result<(), Unavailable> {
        if self.views.memory().is_none() {
            return Ok(());
        }
        let c = self.panel_counts(kind);
        let mut need = panel_bytes(panel, &c);
        let largest = panel_largest_allocation(panel, &c);
        let highlights = matches!(
            panel,
            Panel::Highlight | Panel::Search | Panel::LineHighlight
        );
        if highlights {
            // A static scene (small traces) is rebuilt whole: its trapezoids (28 bytes each,
            // split over tiles, in growing vectors), at most one per point.
            let points = self
                .timeline_of(kind)
                .and_then(|v| v.data())
                .filter(|d| !d.windowed)
                .map_or(0, |d| {
                    d.layout
                        .exact_point_count()
                        .min(crate::scene::STATIC_MAX_POINTS)
                });
            need = need.saturating_add(points.saturating_mul(STATIC_SCENE_BYTES_PER_POINT));
        }
        if highlights && self.sel.shown == ViewKind::Flame {
            // The flamegraph shows the matches too: it is rebuilt with them.
            let fc = self.panel_counts(ViewKind::Active);
            need = need.saturating_add(panel_bytes(Panel::FlameMoment, &fc));
        }
        self.panel_fits(panel, need, largest)
    }

    fn hit_ready_for(&self, kind: ViewKind) -> bool {
        hit_ready(self.views, self.sel.key(kind))
    }

    /// Makes sure the hit index of the timeline shown can be built (views released if needed);
    /// the sentence when it cannot.
    pub(super) fn ensure_hit_index(&mut self) -> Result<(), Unavailable> {
        if self.hit_ready_for(self.sel.timeline) {
            return Ok(());
        }
        self.check_panel(Panel::HitIndex, self.sel.timeline)
    }

    /// Makes sure the tooltips' context of the timeline shown can be built.
    pub(super) fn ensure_tooltips(&mut self) -> Result<(), Unavailable> {
        let built = self
            .timeline_of(self.sel.timeline)
            .and_then(|v| v.data())
            .is_none_or(|d| d.tips.is_some());
        if built {
            return Ok(());
        }
        self.check_panel(Panel::Tooltips, self.sel.timeline)
    }

    /// What a timeline's pointer event at a canvas point needs checked first: the hit index
    /// when the point is in the plot (always for a click, else when nothing is pinned) and the
    /// tooltips when one will be shown. `Err`: the sentence to answer with.
    pub fn gate(&mut self, css_x: f64, css_y: f64, click: bool) -> Result<Gate, Unavailable> {
        if !self.sel.shown_kind(self.views).is_timeline() {
            return Ok(Gate::closed());
        }
        let pinned = self
            .timeline_of(self.sel.timeline)
            .and_then(|v| v.ui.pinned);
        if self.geom.plot.contains([css_x, css_y]) && (click || pinned.is_none()) {
            self.ensure_hit_index()?;
        }
        let key = self.sel.key(self.sel.timeline);
        let hit = hit_index_fits_now(self.snapshot(), self.views, key);
        let under = || element_at(self.views, key, [css_x, css_y]);
        let target = pinned.or_else(|| hit.then(under).flatten());
        let tips = match target {
            Some(_) => self.ensure_tooltips(),
            None => Ok(()),
        };
        Ok(Gate { hit, tips })
    }

    // ----- search, highlight, source lines ------------------------------------------------------

    /// Highlights `elements` of the current timeline (the others faint grey, or hidden when
    /// `only`); `None` clears. The scene is repainted with the new colours (its geometry kept). A highlight that
    /// cannot fit in memory leaves the current one as it is.
    pub fn set_highlight(&mut self, elements: Option<Vec<u32>>, only: bool) {
        if elements.is_some()
            && self
                .check_panel(Panel::Highlight, self.sel.panel_kind())
                .is_err()
        {
            return;
        }
        let _ = self.apply_highlight(elements, only);
    }

    /// [`App::set_highlight`] once checked (the search's and the filter's matches forgotten);
    /// `Err` when its colours could not be allocated.
    fn apply_highlight(
        &mut self,
        elements: Option<Vec<u32>>,
        only: bool,
    ) -> Result<(), Unavailable> {
        self.forget_queries();
        self.show_highlight(elements, only)
    }

    /// Highlights `elements` on the panels' timeline; `Err` when its colours could not be
    /// allocated.
    fn show_highlight(
        &mut self,
        elements: Option<Vec<u32>>,
        only: bool,
    ) -> Result<(), Unavailable> {
        let kind = self.sel.panel_kind();
        let Some(v) = self.timeline_mut(kind) else {
            return Ok(());
        };
        if v.set_highlight(elements, only)? && kind == ViewKind::Active {
            // A flamegraph built from it marks the same allocations.
            self.sync_flame_matches();
        }
        Ok(())
    }

    /// Searches the current timeline (substring, or `/regex/`; see
    /// `memviz_analysis::search`) and highlights the matches (`only`: hide the rest; with a
    /// filter set, what matches both); an empty query clears the search. `unavailable` says so when the search cannot fit in memory.
    pub fn search(&mut self, query: &str, only: bool) -> Option<SearchAnswer> {
        if query.trim().is_empty() {
            let _ = self.set_query_highlight(filter::Query::Search, None, only);
            return Some(SearchAnswer::default());
        }
        let blank = SearchAnswer {
            query: query.to_owned(),
            ..SearchAnswer::default()
        };
        let q = match memviz_analysis::search::parse_query(query) {
            Ok(q) => q,
            Err(e) => {
                return Some(SearchAnswer {
                    error: Some(e.to_string()),
                    ..blank
                })
            }
        };
        // A query no address label can match needs no address versions: only its matches
        // and their highlight.
        let panel = if q.may_match_labels() {
            Panel::Search
        } else {
            Panel::Highlight
        };
        if let Err(why) = self.check_panel(panel, self.sel.panel_kind()) {
            return Some(SearchAnswer {
                unavailable: Some(why.unavailable),
                ..blank
            });
        }
        let (snap, d) = self.parts()?;
        let r = memviz_analysis::search::search(snap, self.sel.device, &d.timeline, &q);
        let unavailable = self
            .set_query_highlight(filter::Query::Search, Some(r.elements), only)
            .err()
            .map(|u| u.unavailable);
        Some(SearchAnswer {
            count: r.count,
            bytes: r.bytes,
            size: size_long(r.bytes),
            unavailable,
            ..blank
        })
    }
}

/// Bytes per polyline point of a static scene rebuilt for a highlight (a 28-byte trapezoid,
/// pieces split over tiles, vectors growing by doubling).
const STATIC_SCENE_BYTES_PER_POINT: u64 = 64;

/// Rows [`App::live`] lists (the largest); its count and total cover every live one.
pub const LIVE_ROWS: usize = 2000;
