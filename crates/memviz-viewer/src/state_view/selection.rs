//! The selection's answer (with the `oom` explanation), the event list's rows, and search.

use memviz_present::segmap::{self, Item};
use memviz_analysis::site::{SiteCache, SiteKind};
use memviz_analysis::state::{explain_oom, Kind};
use memviz_snapshot::{Action, Snapshot, StackId};

use super::StateView;
use crate::answer::{
    line_kinds, BlockLabel, OomAnswer, RowKind, SiteText, StateRow, StateSelection,
};

impl StateView {
    /// The selected event: its row, the state's header and counts, and when the event is an
    /// `oom`, its explanation ([`OomAnswer`]: a label per biggest block, named by the site
    /// of the stack that allocated it, sizes as text).
    pub fn selection(&mut self, snap: &Snapshot, sites: &mut SiteCache) -> StateSelection {
        use memviz_analysis::format::size_long;
        let k = self.selected;
        let text = k.and_then(|k| self.history.row_text(snap, &self.ctx, k));
        let event = k.and_then(|k| self.history.event(snap, k));
        let tr = snap.trace(self.history.device);
        let is_oom = event
            .and_then(|e| tr.and_then(|t| t.action(e.row as usize)))
            .is_some_and(|a| a == Action::Oom);
        let oom = match (k, event) {
            (Some(k), Some(e)) if is_oom => {
                let device_free = tr.and_then(|t| t.device_free_of(e.row));
                let mut r = explain_oom(&self.state, k, e.size, device_free, e.stream, e.pool);
                // `OomReport::fill_stacks` with the view's `AllocRows` (built once per view).
                r.biggest_live_stacks = r
                    .biggest_live
                    .iter()
                    .map(|&(addr, _)| self.block_stack(snap, addr).unwrap_or(StackId::EMPTY))
                    .collect();
                Some(OomAnswer {
                    biggest_live_text: r
                        .biggest_live
                        .iter()
                        .zip(&r.biggest_live_stacks)
                        .map(|(&(addr, size), &stack)| {
                            let site = sites.site(snap, stack);
                            BlockLabel {
                                addr: addr.to_string(),
                                size: size_long(size),
                                text: self.item_title(snap, Item::Block(addr)),
                                line: if site.kind == SiteKind::None {
                                    "(no stack recorded)".to_string()
                                } else {
                                    site.display()
                                },
                                site: SiteText::of(site),
                            }
                        })
                        .collect(),
                    requested: size_long(r.requested_bytes),
                    device_free: r.device_free_bytes.map(size_long),
                    reserved_free: size_long(r.reserved_free_bytes),
                    largest_free: size_long(r.largest_free_block_bytes),
                    report: r,
                })
            }
            _ => None,
        };
        let frames = event.map_or_else(Vec::new, |e| {
            memviz_analysis::frames::format_stack(snap, e.stack, true)
        });
        StateSelection {
            event: k,
            python: memviz_analysis::frames::python_flags(&frames),
            kinds: line_kinds(&frames, sites.user_code()),
            explanation_lines: crate::answer::explanation_lines(&frames),
            frames,
            count: self.history.len(),
            header: segmap::header_text(&self.state),
            text,
            action: event.map(|e| e.action_name(snap, self.history.device).to_string()),
            reserved_bytes: self.state.reserved_bytes,
            allocated_bytes: self.state.allocated_bytes,
            segments: self.state.segments.len(),
            blocks: self.state.blocks.len(),
            rows: self.map.rows,
            oom,
            select_ms: self.select_ms,
            open_ms: self.open_ms,
            checkpoint_bytes: self.history.checkpoint_bytes(),
            interval: self.history.interval,
        }
    }

    /// Rows `[start, start + count)` of the event list (at most 1000).
    #[must_use]
    pub fn rows(&self, snap: &Snapshot, start: usize, count: usize) -> Vec<StateRow> {
        let n = self.history.len();
        let end = start.saturating_add(count.min(1000)).min(n);
        let tr = snap.trace(self.history.device);
        (start.min(end)..end)
            .filter_map(|k| {
                let e = self.history.event(snap, k)?;
                // One line a row: `(stream n)` follows the size instead of a line of its own,
                // and the default stream's `(stream 0)` is left out.
                let text = self.history.row_text(snap, &self.ctx, k)?;
                let text = match text.split_once('\n') {
                    Some((head, "(stream 0)")) => head.to_string(),
                    Some((head, rest)) => format!("{head}  {rest}"),
                    None => text,
                };
                let action = tr.and_then(|t| t.action(e.row as usize));
                let kind = match (action, e.kind) {
                    (Some(Action::Oom), _) => RowKind::Oom,
                    (Some(Action::Snapshot), _) => RowKind::Snapshot,
                    (
                        _,
                        Kind::SegmentAlloc
                        | Kind::SegmentFree
                        | Kind::SegmentMap
                        | Kind::SegmentUnmap,
                    ) => RowKind::Segment,
                    _ => RowKind::Block,
                };
                Some(StateRow { k, text, kind })
            })
            .collect()
    }

    /// The indices of the `oom` events.
    #[must_use]
    pub fn oom_events(&self, snap: &Snapshot) -> Vec<usize> {
        let tr = snap.trace(self.history.device);
        self.history
            .events(snap)
            .enumerate()
            .filter(|(_, e)| {
                tr.and_then(|t| t.action(e.row as usize))
                    .is_some_and(|a| a == Action::Oom)
            })
            .map(|(k, _)| k)
            .collect()
    }

    /// The next event after `from` (before it when `!forward`), wrapping around, whose row text
    /// contains `query` (case-insensitive); -1 when none does or the query is empty.
    #[must_use]
    pub fn search(&self, snap: &Snapshot, query: &str, from: i64, forward: bool) -> i64 {
        let n = self.history.len();
        let q = query.trim().to_lowercase();
        if n == 0 || q.is_empty() {
            return -1;
        }
        let start = if from < 0 {
            if forward {
                n - 1
            } else {
                0
            }
        } else {
            (from as usize).min(n - 1)
        };
        for i in 1..=n {
            let k = if forward {
                (start + i) % n
            } else {
                (start + n - (i % n)) % n
            };
            if let Some(t) = self.history.row_text(snap, &self.ctx, k) {
                if t.to_lowercase().contains(&q) {
                    return k as i64;
                }
            }
        }
        -1
    }

    fn item_title(&self, snap: &Snapshot, item: Item) -> String {
        self.map
            .item_text(snap, &self.ctx, &self.state, item)
            .and_then(|t| t.lines().next().map(str::to_string))
            .unwrap_or_default()
    }
}
