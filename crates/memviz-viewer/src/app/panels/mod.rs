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
//! what is alive at a moment; `compare.rs`: leak suspects and the comparison of two files.
//! Each names an allocation's site through the file's [`memviz_analysis::site::SiteCache`].

mod compare;
mod lines;

use memviz_analysis::color;
use memviz_analysis::format::size_long;
use memviz_analysis::layout::Layout;

use crate::answer::{SearchAnswer, Unavailable};

use super::{App, ViewKind};
use crate::memory::{
    contiguous_room, panel_bytes, panel_fragmented_message, panel_largest_allocation,
    panel_unavailable_message, Memory, Panel, PanelCounts,
};

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
    ) -> Result<(), Unavailable> {
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
            return Err(Unavailable::from(panel_unavailable_message(
                panel,
                need,
                free,
                events,
                self.device,
            )));
        }
        if !contiguous_room(largest) {
            // The total fits, a single piece of it does not: the heap is fragmented.
            return Err(Unavailable::from(panel_fragmented_message(
                panel,
                largest,
                free,
                events,
                self.device,
            )));
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
    ) -> Result<(), Unavailable> {
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
    pub(super) fn ensure_hit_index(&mut self) -> Result<(), Unavailable> {
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
    pub(super) fn ensure_tooltips(&mut self) -> Result<(), Unavailable> {
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
    fn apply_highlight(
        &mut self,
        elements: Option<Vec<u32>>,
        only: bool,
    ) -> Result<(), Unavailable> {
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
                    return Err(Unavailable::from(format!(
                        "{} needs {} contiguous bytes of memory, which this page no longer has",
                        Panel::Highlight.title(),
                        n
                    )));
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
    /// query clears. `unavailable` says so when the search cannot fit in memory.
    pub fn search(&mut self, query: &str, only: bool) -> Option<SearchAnswer> {
        if query.trim().is_empty() {
            self.set_highlight(None, false);
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
        if let Err(why) = self.check_panel(panel, self.timeline_kind(), false) {
            return Some(SearchAnswer {
                unavailable: Some(why.unavailable),
                ..blank
            });
        }
        let (snap, d) = self.parts()?;
        let r = memviz_analysis::search::search(snap, self.device, &d.timeline, &q);
        let unavailable = self
            .apply_highlight(Some(r.elements), only)
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
