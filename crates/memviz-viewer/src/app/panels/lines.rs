//! The source-line table (one row per site, its library lines as sub-rows), the highlight of
//! one of its rows, and what is alive at a moment: each names sites through the current file's
//! [`SiteCache`].

use memviz_analysis::format::{size_long, size_short};
use memviz_analysis::frames::element_stack;
use memviz_analysis::lines::{row_elements, site_table, LineOptions, LineRow, SiteRow};
use memviz_analysis::site::{short_path, SiteCache, SiteKind};
use memviz_analysis::timeline::Timeline;
use memviz_snapshot::Snapshot;

use super::LIVE_ROWS;
use crate::answer::{Avail, LineAnswer, LiveAnswer, LiveAnswerRow, SiteText, Unavailable};
use crate::app::current::Current;
use crate::app::files::LoadedFile;
use crate::memory::Panel;

/// The shown text of the no-frames row.
const NO_STACK: &str = "(no stack recorded)";

/// A row of the table with its sizes as text.
fn answer(row: LineRow, site: String, kind: &str, detail: Vec<LineAnswer>) -> LineAnswer {
    LineAnswer {
        site,
        kind: kind.to_string(),
        live: size_short(row.live_at_peak_bytes),
        total: size_short(row.total_bytes),
        largest: size_short(row.largest_bytes),
        detail,
        row,
    }
}

/// A site row of [`site_table`] as the table shows it.
fn site_answer(r: SiteRow) -> LineAnswer {
    let detail = r
        .detail
        .into_iter()
        .map(|d| {
            let label = format!("{}:{}:{}", short_path(&d.file), d.line, d.name);
            answer(d, label, SiteKind::Library.as_str(), Vec::new())
        })
        .collect();
    let shown = if r.kind == SiteKind::None {
        NO_STACK.to_string()
    } else {
        r.label
    };
    answer(r.row, shown, r.kind.as_str(), detail)
}

/// The elements of `timeline` whose site is `(file, line, name)`; when none is, those whose
/// site's library line (its detail, a sub-row of the table) is. Ascending.
fn site_elements(
    snap: &Snapshot,
    device: i64,
    timeline: &Timeline,
    sites: &mut SiteCache,
    (file, line, name): (&str, i64, &str),
) -> Vec<u32> {
    // Per distinct site: 1 = the row's, 2 = its detail is the row's, 0 = neither.
    let mut by_site: Vec<Option<u8>> = Vec::new();
    let mut tagged: Vec<(u32, u8)> = Vec::new();
    for (i, el) in timeline.elements.iter().enumerate() {
        let id = sites.id(snap, element_stack(snap, device, el));
        let slot = id.0 as usize;
        if by_site.len() <= slot {
            by_site.resize(slot + 1, None);
        }
        let tag = match by_site.get(slot).copied().flatten() {
            Some(t) => t,
            None => {
                let t = sites.get(id).map_or(0, |s| {
                    if s.file == file && s.line == line && s.name == name {
                        1
                    } else if s
                        .detail
                        .as_ref()
                        .is_some_and(|d| d.file == file && d.line == line && d.name == name)
                    {
                        2
                    } else {
                        0
                    }
                });
                if let Some(x) = by_site.get_mut(slot) {
                    *x = Some(t);
                }
                t
            }
        };
        if tag != 0 {
            tagged.push((i as u32, tag));
        }
    }
    let want = if tagged.iter().any(|&(_, t)| t == 1) {
        1
    } else {
        2
    };
    tagged
        .into_iter()
        .filter(|&(_, t)| t == want)
        .map(|(e, _)| e)
        .collect()
}

impl Current<'_> {
    /// The per-site table of the current timeline (`memviz_analysis::lines::site_table`, sizes
    /// also as text): one row per site with its kind and its library lines as sub-rows;
    /// `all_frames`: attribute to the innermost frame of any kind.
    pub fn lines(&mut self, all_frames: bool) -> Avail<Vec<LineAnswer>> {
        if let Err(why) = self.check_panel(Panel::Lines, self.sel.panel_kind()) {
            return Avail::from_result(Err(why));
        }
        let key = self.sel.key(self.sel.panel_kind());
        let Some(LoadedFile { snap, sites, .. }) = self.files.get_mut(self.sel.file) else {
            return Avail::Ready(Vec::new());
        };
        let Some(d) = crate::app::timeline_data(self.views, key) else {
            return Avail::Ready(Vec::new());
        };
        let opts = if all_frames {
            LineOptions::ALL_FRAMES
        } else {
            LineOptions::default()
        };
        Avail::Ready(
            site_table(snap, key.device, &d.timeline, &d.layout, opts, sites)
                .into_iter()
                .map(site_answer)
                .collect(),
        )
    }

    /// Highlights the elements of one row of [`App::lines`] (`file`, `line`, `name`: a site's,
    /// or a sub-row's library line: the elements of the sites that went through it); returns
    /// how many, or the sentence when it cannot fit in memory.
    pub fn highlight_line(
        &mut self,
        file: &str,
        line: i64,
        name: &str,
        all_frames: bool,
    ) -> Result<usize, Unavailable> {
        self.check_panel(Panel::LineHighlight, self.sel.panel_kind())?;
        let key = self.sel.key(self.sel.panel_kind());
        let els = {
            let Some(LoadedFile { snap, sites, .. }) = self.files.get_mut(self.sel.file) else {
                return Ok(0);
            };
            let Some(d) = crate::app::timeline_data(self.views, key) else {
                return Ok(0);
            };
            if all_frames {
                let row = LineRow {
                    file: file.to_owned(),
                    line,
                    name: name.to_owned(),
                    live_at_peak_bytes: 0,
                    total_bytes: 0,
                    count: 0,
                    largest_bytes: 0,
                };
                row_elements(snap, key.device, &d.timeline, LineOptions::ALL_FRAMES, &row)
            } else {
                site_elements(snap, key.device, &d.timeline, sites, (file, line, name))
            }
        };
        let n = els.len();
        self.apply_highlight(Some(els), false)?;
        Ok(n)
    }

    /// Every allocation alive at timestep `step` (the peak when negative) of the current
    /// timeline, largest first (at most [`LIVE_ROWS`] rows; the count and total cover all),
    /// each with its site. `None` before the first file.
    pub fn live(&mut self, step: i64) -> Option<Avail<LiveAnswer>> {
        if let Err(why) = self.check_panel(Panel::Live, self.sel.panel_kind()) {
            return Some(Avail::from_result(Err(why)));
        }
        let (device, key) = (self.sel.device, self.sel.key(self.sel.panel_kind()));
        let LoadedFile { snap, sites, .. } = self.files.get_mut(self.sel.file)?;
        let d = crate::app::timeline_data(self.views, key)?;
        let step = if step < 0 {
            d.layout.peak_step
        } else {
            u32::try_from(step)
                .unwrap_or(u32::MAX)
                .min(d.layout.step_count().saturating_sub(1))
        };
        let live = memviz_analysis::lines::live_rows(
            snap,
            device,
            &d.timeline,
            &d.layout,
            step,
            LIVE_ROWS,
        );
        Some(Avail::Ready(LiveAnswer {
            step,
            count: live.count,
            total: size_long(live.total_bytes),
            rows: live
                .rows
                .into_iter()
                .map(|mut row| {
                    let stack = d
                        .timeline
                        .elements
                        .get(row.element as usize)
                        .map_or(memviz_snapshot::StackId::EMPTY, |el| {
                            element_stack(snap, device, el)
                        });
                    let site = sites.site(snap, stack);
                    // The analysis names it with the default user code: the app's instead.
                    row.top_frame = site.path();
                    LiveAnswerRow {
                        site: SiteText::of(site),
                        size_text: size_short(row.size),
                        age_text: row.age_us.map_or_else(
                            || match row.age_steps {
                                1 => "1 step".to_string(),
                                n => format!("{n} steps"),
                            },
                            |us| {
                                format!(
                                    "{} ({} steps)",
                                    memviz_analysis::format::duration_us(us),
                                    row.age_steps
                                )
                            },
                        ),
                        row,
                    }
                })
                .collect(),
        }))
    }
}
