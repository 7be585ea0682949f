//! [`SiteCache`]: the sites of one snapshot's stacks, each frame and each stack classified
//! once (stacks are shared by many events; distinct sites are far fewer than stacks).

use super::{frame_kind, site_with, FrameKind, Site, UserCode};
use memviz_snapshot::{FrameId, Snapshot, StackId};
use rustc_hash::FxHashMap;

/// A distinct site of a [`SiteCache`] (an index into it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SiteId(pub u32);

const UNSEEN: u32 = u32::MAX;
const NO_KIND: u8 = u8::MAX;

/// The sites of one snapshot under one [`UserCode`]: 1 byte per frame and 4 per stack, filled
/// on first use, plus each distinct [`Site`] once. Build one per (snapshot, user code) and
/// keep it as long as the snapshot (a view, a command).
pub struct SiteCache {
    user: UserCode,
    kinds: Vec<u8>,
    per_stack: Vec<u32>,
    sites: Vec<Site>,
    index: FxHashMap<Site, u32>,
    /// Snapshot identity checks: the cache answers for the snapshot it was made for.
    frames: usize,
    stacks: usize,
}

fn kind_code(k: FrameKind) -> u8 {
    match k {
        FrameKind::User => 0,
        FrameKind::Library => 1,
        FrameKind::Interpreter => 2,
        FrameKind::Native => 3,
    }
}

fn code_kind(c: u8) -> Option<FrameKind> {
    Some(match c {
        0 => FrameKind::User,
        1 => FrameKind::Library,
        2 => FrameKind::Interpreter,
        3 => FrameKind::Native,
        _ => return None,
    })
}

impl SiteCache {
    /// An empty cache for `snap` (nothing is classified until asked).
    #[must_use]
    pub fn new(snap: &Snapshot, user: UserCode) -> SiteCache {
        SiteCache {
            user,
            kinds: vec![NO_KIND; snap.frames.len()],
            per_stack: vec![UNSEEN; snap.stacks.len()],
            sites: Vec::new(),
            index: FxHashMap::default(),
            frames: snap.frames.len(),
            stacks: snap.stacks.len(),
        }
    }

    /// [`SiteCache::new`] with the default [`UserCode`].
    #[must_use]
    pub fn default_for(snap: &Snapshot) -> SiteCache {
        SiteCache::new(snap, UserCode::default())
    }

    /// The user code it classifies with.
    #[must_use]
    pub fn user_code(&self) -> &UserCode {
        &self.user
    }

    /// Whether it was made for a snapshot of `snap`'s shape (same frame and stack counts).
    #[must_use]
    pub fn fits(&self, snap: &Snapshot) -> bool {
        self.frames == snap.frames.len() && self.stacks == snap.stacks.len()
    }

    /// The kind of frame `id` of `snap`.
    pub fn frame_kind(&mut self, snap: &Snapshot, id: FrameId) -> FrameKind {
        let Some(f) = snap.frame(id) else {
            return FrameKind::Native;
        };
        if let Some(k) = self.kinds.get(id.0 as usize).copied().and_then(code_kind) {
            return k;
        }
        let k = frame_kind(snap.str(f.filename), snap.str(f.name), &self.user);
        if let Some(slot) = self.kinds.get_mut(id.0 as usize) {
            *slot = kind_code(k);
        }
        k
    }

    /// The site of `stack` of `snap`, as an id ([`SiteCache::get`]).
    pub fn id(&mut self, snap: &Snapshot, stack: StackId) -> SiteId {
        if let Some(&s) = self.per_stack.get(stack.0 as usize) {
            if s != UNSEEN {
                return SiteId(s);
            }
        }
        let (kinds, user) = (&mut self.kinds, &self.user);
        let site = site_with(snap, stack, |id, f| {
            if let Some(k) = kinds.get(id.0 as usize).copied().and_then(code_kind) {
                return k;
            }
            let k = frame_kind(snap.str(f.filename), snap.str(f.name), user);
            if let Some(slot) = kinds.get_mut(id.0 as usize) {
                *slot = kind_code(k);
            }
            k
        });
        let next = self.sites.len() as u32;
        let id = match self.index.get(&site) {
            Some(&i) => i,
            None => {
                self.sites.push(site.clone());
                self.index.insert(site, next);
                next
            }
        };
        if let Some(slot) = self.per_stack.get_mut(stack.0 as usize) {
            *slot = id;
        }
        SiteId(id)
    }

    /// The site of `stack` of `snap`.
    pub fn site(&mut self, snap: &Snapshot, stack: StackId) -> &Site {
        let id = self.id(snap, stack);
        // `id` was just made, so it is in range; the fallback is never taken.
        self.sites
            .get(id.0 as usize)
            .unwrap_or_else(|| NONE_SITE.get_or_init(Site::none))
    }

    /// A site by id.
    #[must_use]
    pub fn get(&self, id: SiteId) -> Option<&Site> {
        self.sites.get(id.0 as usize)
    }

    /// Every distinct site classified so far, by id.
    #[must_use]
    pub fn sites(&self) -> &[Site] {
        &self.sites
    }

    /// Classifies every stack of `snap` (benchmarks; a view classifies what it shows).
    pub fn classify_all(&mut self, snap: &Snapshot) {
        for i in 0..snap.stacks.len() {
            self.id(snap, StackId(i as u32));
        }
    }

    /// Heap bytes held (the per-frame and per-stack tables and the sites' text).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        let text = |s: &Site| {
            s.file.len()
                + s.name.len()
                + s.label.len()
                + s.detail
                    .as_ref()
                    .map_or(0, |d| d.file.len() + d.name.len() + d.label.len())
        };
        self.kinds.capacity()
            + self.per_stack.capacity() * 4
            + self
                .sites
                .iter()
                .map(|s| 2 * (text(s) + std::mem::size_of::<Site>()))
                .sum::<usize>()
    }
}

static NONE_SITE: std::sync::OnceLock<Site> = std::sync::OnceLock::new();
