//! The structured filter beside the search box (`size>=1MiB site:/attn/ at:peak`, the grammar
//! of `memviz_analysis::query`, the same as `memviz query`): it is evaluated over the Active
//! Memory Timeline's allocations of the current file and device
//! (`memviz_analysis::allocations`, built on first use and kept in that timeline's
//! [`DeviceData`], so it goes when the timeline is released), the sites named through the file's
//! `SiteCache` under the user code in force, and its matches are highlighted as the search's are.
//!
//! Search and filter together: the highlight is their intersection (an allocation keeps its
//! colour when it matches both); each box's count is its own, and the filter's answer says how
//! many match both ([`FilterAnswer::with_search`]). A highlight set by anything else (a row of
//! the source-line table, a clear) forgets both.
//!
//! A bad filter changes nothing: the answer carries the error and its column, and the highlight
//! shown stays.

use std::rc::Rc;

use memviz_analysis::allocations::Allocations;
use memviz_analysis::format::size_short;
use memviz_analysis::query;

use super::super::current::Current;
use super::super::files::LoadedFile;
use super::super::timeline::TimelineView;
use super::ViewKind;
use crate::answer::{FilterAnswer, FilterErrorAnswer, Unavailable};
use crate::memory::Panel;
use crate::App;

/// What the search and the filter highlight on one Active Memory Timeline, and the allocation
/// rows the filter reads (kept in the timeline's `DeviceData`).
#[derive(Default)]
pub(in crate::app) struct QueryState {
    /// The timeline's allocations, built on the first filter.
    allocations: Option<Rc<Allocations>>,
    /// The search's matches (sorted), when a search is set.
    search: Option<Vec<u32>>,
    /// The filter's matches (sorted), when a filter is set.
    filter: Option<Vec<u32>>,
}

/// Which of the two boxes sets its matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Query {
    Search,
    Filter,
}

/// The elements in both sorted lists.
fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while let (Some(&x), Some(&y)) = (a.get(i), b.get(j)) {
        match x.cmp(&y) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(x);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// Sorted and without repeats.
fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v.dedup();
    v
}

/// The sentence of a filter asked on a view that does not draw the Active Memory Timeline.
const ACTIVE_ONLY: &str = "The filter applies to the Active Memory Timeline's allocations: \
                           switch to it to see them highlighted.";

impl QueryState {
    /// The highlight of both boxes: their intersection, one alone, or none.
    fn combined(&self) -> Option<Vec<u32>> {
        match (&self.search, &self.filter) {
            (Some(s), Some(f)) => Some(intersect(s, f)),
            (Some(one), None) | (None, Some(one)) => Some(one.clone()),
            (None, None) => None,
        }
    }
}

impl App {
    /// Filters the Active Memory Timeline's allocations with `query` and highlights the
    /// matches (`only`: hides the rest); see [`Current::filter`].
    pub fn filter(&mut self, query: &str, only: bool) -> Option<FilterAnswer> {
        self.cur().filter(query, only)
    }

    /// The CSV of the allocations `query` matches; see [`Current::filter_csv`].
    pub fn filter_csv(&mut self, query: &str) -> Option<String> {
        self.cur().filter_csv(query)
    }
}

impl Current<'_> {
    /// The query state of the current file and device's Active Memory Timeline, when built.
    fn query_state(&mut self) -> Option<&mut QueryState> {
        let key = self.sel.key(ViewKind::Active);
        let v = self.views.get_as_mut::<TimelineView>(key)?;
        Some(&mut v.data.as_mut()?.query)
    }

    /// Forgets the search's and the filter's matches: a highlight of another kind replaces them.
    pub(super) fn forget_queries(&mut self) {
        if let Some(q) = self.query_state() {
            q.search = None;
            q.filter = None;
        }
    }

    /// Sets the matches of `which` (`None`: that box is cleared) and highlights what both boxes
    /// match. `Err` when the highlight cannot fit (the previous one stays).
    pub(super) fn set_query_highlight(
        &mut self,
        which: Query,
        elements: Option<Vec<u32>>,
        only: bool,
    ) -> Result<(), Unavailable> {
        let kind = self.sel.panel_kind();
        if kind != ViewKind::Active {
            // Segments or private pools: their elements are not the allocations' rows.
            return match which {
                Query::Search => self.apply_highlight(elements, only),
                Query::Filter => Ok(()),
            };
        }
        let Some(q) = self.query_state() else {
            return Ok(());
        };
        let before = (q.search.clone(), q.filter.clone());
        let slot = match which {
            Query::Search => &mut q.search,
            Query::Filter => &mut q.filter,
        };
        *slot = elements.map(sorted);
        let combined = q.combined();
        if combined.is_some() {
            if let Err(why) = self.check_panel(Panel::Highlight, kind) {
                self.restore(before);
                return Err(why);
            }
        }
        let r = self.show_highlight(combined, only);
        if r.is_err() {
            self.restore(before);
        }
        r
    }

    fn restore(&mut self, (search, filter): (Option<Vec<u32>>, Option<Vec<u32>>)) {
        if let Some(q) = self.query_state() {
            q.search = search;
            q.filter = filter;
        }
    }

    /// The Active Memory Timeline's allocations of the current file and device, built on first
    /// use when they fit in memory (other views released if needed; else the sentence why).
    /// `None` when there is no file or the timeline cannot be built.
    fn allocations(&mut self) -> Option<Result<Rc<Allocations>, Unavailable>> {
        if !self.ensure(ViewKind::Active) {
            return None;
        }
        if let Some(a) = self.query_state()?.allocations.clone() {
            return Some(Ok(a));
        }
        if self.views.memory().is_some() {
            let elements = self.panel_counts(ViewKind::Active).elements;
            let rows = elements.saturating_mul(std::mem::size_of::<
                memviz_analysis::allocations::Allocation,
            >() as u64);
            // The rows, and the matches' list beside them.
            let need = rows.saturating_add(elements.saturating_mul(4)) + (1 << 20);
            if let Err(why) = self.panel_fits(Panel::Highlight, need, rows) {
                return Some(Err(why));
            }
        }
        let key = self.sel.key(ViewKind::Active);
        let device = self.sel.device;
        let snap = Rc::clone(&self.files.get(self.sel.file)?.snap);
        let v = self.views.get_as_mut::<TimelineView>(key)?;
        let d = v.data.as_mut()?;
        // The viewer's timeline has its steps dropped (they are in the layout's step model).
        let a = Rc::new(memviz_analysis::allocations::allocations_with_steps(
            &snap,
            device,
            &d.timeline,
            &d.layout,
        ));
        d.query.allocations = Some(Rc::clone(&a));
        Some(Ok(a))
    }

    /// Parses and evaluates `text` over the current Active Memory Timeline: the matches, or
    /// the answer to give instead (a parse error, not enough memory).
    fn evaluate(&mut self, text: &str) -> Option<Result<query::FilterMatches, FilterAnswer>> {
        let blank = FilterAnswer {
            query: text.to_owned(),
            ..FilterAnswer::default()
        };
        let f = match query::parse_filter(text) {
            Ok(f) => f,
            Err(e) => {
                return Some(Err(FilterAnswer {
                    error: Some(FilterErrorAnswer {
                        column: e.column,
                        message: e.message.clone(),
                        text: e.to_string(),
                    }),
                    ..blank
                }))
            }
        };
        let allocs = match self.allocations()? {
            Ok(a) => a,
            Err(why) => {
                return Some(Err(FilterAnswer {
                    unavailable: Some(why.unavailable),
                    ..blank
                }))
            }
        };
        let LoadedFile { snap, sites, .. } = self.files.get_mut(self.sel.file)?;
        Some(Ok(query::filter(snap, &allocs, sites, &f)))
    }

    /// Filters the Active Memory Timeline's allocations of the current file and device with
    /// `text` (the grammar of `memviz query`) and highlights the matches as the search does
    /// (`only`: hides the rest; with a search set, what matches both). Empty text clears the
    /// filter. A filter that does not parse changes nothing: the answer says where and why.
    /// On a view that does not draw the Active Memory Timeline the count is given and
    /// [`FilterAnswer::note`] says where it applies.
    pub fn filter(&mut self, text: &str, only: bool) -> Option<FilterAnswer> {
        self.snapshot()?;
        if text.trim().is_empty() {
            let _ = self.set_query_highlight(Query::Filter, None, only);
            return Some(FilterAnswer::default());
        }
        let m = match self.evaluate(text)? {
            Ok(m) => m,
            Err(answer) => return Some(answer),
        };
        let shown = self.sel.panel_kind() == ViewKind::Active;
        let mut answer = FilterAnswer {
            query: text.to_owned(),
            count: m.count,
            bytes: m.bytes,
            size: size_short(m.bytes),
            warnings: m.warnings,
            note: (!shown).then(|| ACTIVE_ONLY.to_owned()),
            ..FilterAnswer::default()
        };
        if shown {
            if let Err(why) = self.set_query_highlight(Query::Filter, Some(m.elements), only) {
                answer.unavailable = Some(why.unavailable);
            } else if let Some(q) = self.query_state() {
                if q.search.is_some() {
                    answer.with_search = q.combined().map(|c| c.len());
                }
            }
        }
        Some(answer)
    }

    /// The CSV (`memviz_analysis::query::csv`: a header, one row per allocation) of the
    /// allocations `text` matches; `None` when there is no file, the filter does not parse or
    /// the rows cannot fit in memory. Nothing shown changes.
    pub fn filter_csv(&mut self, text: &str) -> Option<String> {
        let m = self.evaluate(text)?.ok()?;
        let allocs = self.query_state()?.allocations.clone()?;
        let LoadedFile { snap, sites, .. } = self.files.get_mut(self.sel.file)?;
        Some(query::csv(snap, &allocs, sites, &m.elements))
    }
}

#[cfg(test)]
mod tests {
    use super::intersect;

    #[test]
    fn intersection_of_sorted_lists() {
        assert_eq!(intersect(&[1, 3, 5, 7], &[2, 3, 4, 7, 9]), [3, 7]);
        assert_eq!(intersect(&[], &[1]), Vec::<u32>::new());
        assert_eq!(intersect(&[4], &[4]), [4]);
    }
}
