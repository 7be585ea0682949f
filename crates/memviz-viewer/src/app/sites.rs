//! The app's side of the site classifier (`memviz_analysis::site`, docs/sites.md): the user
//! code every view names sites with (`set_user_code`), each file's [`SiteCache`], and the
//! sites and frame kinds added to the tooltips the views answer.

use memviz_analysis::frames::element_stack;
use memviz_analysis::site::{FrameKind, Site, SiteCache, UserCode};
use memviz_present::tooltip::TooltipOrigin;
use memviz_snapshot::{FrameId, StackId};

use super::current::Current;
use super::files::LoadedFile;
use crate::answer::{line_kinds, MapItemKind, SiteText, Tooltip, UserCodeAnswer};

/// A user-code pattern ([`UserCode::parse`]), or the one-line reason it does not parse.
fn parse_user_code(pattern: &str) -> Result<UserCode, String> {
    UserCode::parse(pattern.trim()).map_err(|e| {
        let e = e.replace(['\n', '\r'], " ");
        match e.strip_prefix("--user-code: ") {
            Some(rest) => format!("user code: {rest}"),
            None => e,
        }
    })
}

impl Current<'_> {
    /// Sets which Python files count as the user's code (`UserCode::parse`: comma-separated
    /// path prefixes or package paths and at most one `/regex/`; empty: the default rule).
    /// Every file's sites are classified anew, so the legend, the tables and the tooltips
    /// name them with it; the plot is redrawn.
    ///
    /// # Errors
    /// A pattern that does not parse (a bad regex, two regexes): one line saying why.
    pub fn set_user_code(&mut self, pattern: &str) -> Result<UserCodeAnswer, String> {
        let user = parse_user_code(pattern)?;
        if user != *self.user_code {
            *self.user_code = user;
            for f in self.files.iter_mut() {
                f.sites = SiteCache::new(&f.snap, self.user_code.clone());
            }
            *self.needs_redraw = true;
        }
        Ok(UserCodeAnswer {
            pattern: self.user_code.text().to_string(),
            user_frames: self.user_frames(),
        })
    }

    /// How many distinct frames of the current file are user code.
    pub fn user_frames(&mut self) -> u64 {
        let Some(LoadedFile { snap, sites, .. }) = self.files.get_mut(self.sel.file) else {
            return 0;
        };
        (0..snap.frames.len())
            .filter(|&i| sites.frame_kind(snap, FrameId(i as u32)) == FrameKind::User)
            .count() as u64
    }

    /// The site of `stack` of the current file.
    pub fn site_of_stack(&mut self, stack: StackId) -> Option<Site> {
        let LoadedFile { snap, sites, .. } = self.files.get_mut(self.sel.file)?;
        Some(sites.site(snap, stack).clone())
    }

    /// A tooltip answered by a view, with what the views leave to the app: the kind of each
    /// frame line and the site (an element's stack's, a block's allocating stack's).
    pub fn finish_tip(&mut self, tip: Option<Tooltip>) -> Option<Tooltip> {
        let mut tip = tip?;
        let user = &self.user_code;
        match &mut tip {
            Tooltip::Element(t) => {
                t.kinds = line_kinds(&t.info.frames, user);
                if t.info.origin != TooltipOrigin::PoolEnvelope {
                    let key = self.sel.key(self.sel.timeline);
                    if let Some(LoadedFile { snap, sites, .. }) = self.files.get_mut(self.sel.file)
                    {
                        t.site = super::timeline_data(self.views, key)
                            .and_then(|d| d.timeline.elements.get(t.info.element as usize))
                            .map(|el| {
                                SiteText::of(
                                    sites.site(snap, element_stack(snap, self.sel.device, el)),
                                )
                            });
                    }
                }
            }
            Tooltip::Item(t) => {
                t.lines.kinds = line_kinds(&t.lines.frames, user);
                if t.item.kind == MapItemKind::Block {
                    let key = self.sel.key(crate::kinds::ViewKind::State);
                    let sv = self.views.get_as_mut::<crate::state_view::StateView>(key);
                    if let (Ok(addr), Some(sv)) = (t.item.addr.parse::<u64>(), sv) {
                        if let Some(LoadedFile { snap, sites, .. }) = self.files.get_mut(key.file) {
                            t.site = sv
                                .block_stack(snap, addr)
                                .map(|s| SiteText::of(sites.site(snap, s)));
                        }
                    }
                }
            }
            Tooltip::Node(t) => {
                if t.lines.kinds.len() != t.lines.frames.len() {
                    t.lines.kinds = line_kinds(&t.lines.frames, user);
                }
            }
            Tooltip::Unavailable(_) => {}
        }
        Some(tip)
    }
}
