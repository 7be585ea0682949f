//! The one registry of views (rerun's view-class registry is the model): every view the
//! canvas can show is a [`ViewClass`] registered once (how it is estimated and built), and every
//! built view is a `Box<dyn View>` under its [`ViewKey`] (file, device, kind) in the build
//! [`Cache`], which releases the least recently used views to make room. [`crate::App`] asks
//! the registry for the view shown and sends it input and frames through [`DrawableView`]; it
//! holds no view of its own.
//!
//! A new view is: its type (implementing [`View`]), one [`ViewClass`] registered
//! (`App::new_empty`, or [`crate::App::register_view`]), a row per question in the requests
//! table, and a row in `kinds.rs`'s `VIEWS`.

use std::any::Any;
use std::rc::Rc;

use memviz_analysis::site::UserCode;
use memviz_render::View as CanvasView;
use memviz_snapshot::Snapshot;

use crate::answer::{Tooltip, ViewerState};
use crate::cache::{Cache, Shortfall};
use crate::camera::PlotGeometry;
use crate::kinds::ViewKind;
use crate::memory::{unavailable_message, Memory};
use crate::scene::Batch;
use crate::theme::Theme;
use crate::view::DrawableView;

/// Which view: of which file (its index in the app), device and kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ViewKey {
    /// The file's index (files are only added, so an index names one file).
    pub file: usize,
    /// The device.
    pub device: i64,
    /// The view kind.
    pub kind: ViewKind,
}

impl ViewKey {
    /// The key of another kind for the same file and device.
    #[must_use]
    pub fn with_kind(self, kind: ViewKind) -> Self {
        ViewKey { kind, ..self }
    }
}

/// A view's `Any`, so the app can reach a view's own methods (the State History's selection,
/// the flamegraph's moments) by downcasting.
pub trait AsAny {
    /// As `&dyn Any`.
    fn as_any(&self) -> &dyn Any;
    /// As `&mut dyn Any`.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A view in the registry: drawn through [`DrawableView`], with a typed state of its own.
pub trait View: DrawableView + AsAny {
    /// Puts its state in the viewer's state (its field of [`ViewerState`]).
    fn write_state(&self, _state: &mut ViewerState) {}
}

/// What a view is built from: its key, the file's snapshot and the app's settings.
pub struct Scope<'a> {
    /// The view's key.
    pub key: ViewKey,
    /// The snapshot of `key.file`.
    pub snap: &'a Rc<Snapshot>,
    /// The canvas geometry.
    pub geom: &'a PlotGeometry,
    /// The canvas theme.
    pub theme: Theme,
    /// What counts as the user's code.
    pub user_code: &'a UserCode,
}

impl Scope<'_> {
    /// The events of the view's device.
    #[must_use]
    pub fn events(&self) -> u64 {
        self.snap.trace(self.key.device).map_or(0, |t| t.len()) as u64
    }
}

/// One kind of view, registered once: what it is built from, its cost and how it is built.
#[derive(Clone, Copy)]
pub struct ViewClass {
    /// Its kind.
    pub kind: ViewKind,
    /// The views of the same file and device it is built from: built first, kept while it is.
    pub needs: &'static [ViewKind],
    /// Its estimated bytes (the views it needs are built by then).
    pub estimate: fn(&Scope<'_>, &Views) -> u64,
    /// Its name in the sentence saying it cannot fit (`The Allocator State History`).
    pub what: &'static str,
    /// What gives its answer on the command line instead (`` `memviz state FILE` … ``).
    pub instead: &'static str,
    /// Builds it (the views it needs are built); `None`: nothing to show.
    pub build: fn(&Scope<'_>, &Views) -> Option<Box<dyn View>>,
}

/// The registered view classes and the built views.
pub struct Views {
    classes: Vec<ViewClass>,
    built: Cache<ViewKey, Box<dyn View>>,
    /// A view that could not be built for lack of memory, and why.
    unavailable: Option<(ViewKey, String)>,
}

impl Views {
    /// No class and no view; built views are checked against `memory` (none: all fit).
    #[must_use]
    pub fn new(memory: Option<Memory>) -> Self {
        Views {
            classes: Vec::new(),
            built: Cache::new(memory),
            unavailable: None,
        }
    }

    /// Registers `class`, replacing the class of its kind (and releasing that kind's views).
    pub fn register(&mut self, class: ViewClass) {
        self.classes.retain(|c| c.kind != class.kind);
        self.built.retain(|k| k.kind != class.kind);
        self.classes.push(class);
    }

    /// The class of `kind`.
    #[must_use]
    pub fn class(&self, kind: ViewKind) -> Option<&ViewClass> {
        self.classes.iter().find(|c| c.kind == kind)
    }

    /// The memory views are checked against.
    #[must_use]
    pub fn memory(&self) -> Option<Memory> {
        self.built.memory()
    }

    /// Checks views against `memory` from now on.
    pub fn set_memory(&mut self, memory: Option<Memory>) {
        self.built.set_memory(memory);
    }

    /// True when the view of `key` is built.
    #[must_use]
    pub fn is_built(&self, key: ViewKey) -> bool {
        self.built.contains(&key)
    }

    /// The view of `key`, when built.
    #[must_use]
    pub fn get(&self, key: ViewKey) -> Option<&dyn View> {
        self.built.peek(&key).map(|v| &**v)
    }

    /// The view of `key`, when built (marked used).
    pub fn get_mut(&mut self, key: ViewKey) -> Option<&mut dyn View> {
        Some(&mut **self.built.get_mut(&key)?)
    }

    /// The view of `key` as its own type `T`.
    #[must_use]
    pub fn get_as<T: 'static>(&self, key: ViewKey) -> Option<&T> {
        self.get(key)?.as_any().downcast_ref()
    }

    /// The view of `key` as its own type `T` (marked used).
    pub fn get_as_mut<T: 'static>(&mut self, key: ViewKey) -> Option<&mut T> {
        self.get_mut(key)?.as_any_mut().downcast_mut()
    }

    /// Every built view (no order).
    pub fn all_mut(&mut self) -> impl Iterator<Item = &mut Box<dyn View>> {
        self.built.values_mut()
    }

    /// Builds the view of `scope.key` (and the views it needs) when it is not built and fits:
    /// to make room, the least recently used views `keep` lets go are released. True when it
    /// is built; else [`Views::unavailable`] says why (or it has no class, or nothing to show).
    pub fn ensure(&mut self, scope: &Scope<'_>, keep: &dyn Fn(&ViewKey) -> bool) -> bool {
        let key = scope.key;
        if self.is_built(key) {
            return true;
        }
        let Some(class) = self.class(key.kind).copied() else {
            return false;
        };
        let same = |k: &ViewKey| k.file == key.file && k.device == key.device;
        // What building it holds on to: what the caller keeps, it and the views it needs.
        let held = |k: &ViewKey| keep(k) || *k == key || (same(k) && class.needs.contains(&k.kind));
        for &need in class.needs {
            let sub = Scope {
                key: key.with_kind(need),
                ..*scope
            };
            if !self.ensure(&sub, &held) {
                return false;
            }
        }
        let estimate = (class.estimate)(scope, self);
        match self.built.make_room(estimate, 0, held) {
            Ok(()) => {
                if self.unavailable.as_ref().is_some_and(|(k, _)| *k == key) {
                    self.unavailable = None;
                }
                match (class.build)(scope, self) {
                    Some(v) => {
                        self.built.insert(key, v);
                        true
                    }
                    None => false,
                }
            }
            Err(Shortfall { need, free, .. }) => {
                let events = scope.events() as usize;
                let why = unavailable_message(class.what, class.instead, need, free, events);
                self.unavailable = Some((key, why));
                false
            }
        }
    }

    /// Why the view of `key` is missing (it could not fit in memory), if it is.
    #[must_use]
    pub fn unavailable(&self, key: ViewKey) -> Option<&str> {
        self.unavailable
            .as_ref()
            .filter(|(k, _)| *k == key)
            .map(|(_, m)| m.as_str())
    }

    /// Makes room for `need` bytes (largest single allocation `largest`) of something built
    /// beside the views (the hit index, the tooltips' context, a panel), releasing the least
    /// recently used views `keep` lets go ([`Cache::make_room`]).
    ///
    /// # Errors
    /// [`Shortfall`] when there is no room even then.
    pub fn make_room(
        &mut self,
        need: u64,
        largest: u64,
        keep: impl Fn(&ViewKey) -> bool,
    ) -> Result<(), Shortfall> {
        self.built.make_room(need, largest, keep)
    }

    /// Releases every view `keep` lets go.
    pub fn retain(&mut self, keep: impl Fn(&ViewKey) -> bool) {
        self.built.retain(keep);
    }

    /// Releases every view of `kind`.
    pub fn release_kind(&mut self, kind: ViewKind) {
        self.built.retain(|k| k.kind != kind);
    }

    /// The built keys (no order).
    pub fn keys(&self) -> impl Iterator<Item = &ViewKey> {
        self.built.keys()
    }
}

/// Bytes of `per_event` for each event of the view's device.
#[must_use]
pub fn per_event(scope: &Scope<'_>, per_event: u64) -> u64 {
    scope.events().saturating_mul(per_event)
}

/// The view shown while the view asked for is not built (no file yet, or it cannot fit): it
/// draws nothing and answers nothing. Also the smallest [`View`].
pub struct EmptyView {
    /// The canvas geometry, for its canvas view.
    pub geom: PlotGeometry,
    /// A camera over nothing.
    pub camera: crate::camera::Camera,
}

impl EmptyView {
    /// An empty view of a canvas.
    #[must_use]
    pub fn new(geom: PlotGeometry) -> Self {
        EmptyView {
            geom,
            camera: crate::camera::Camera::new(0, 0),
        }
    }
}

impl DrawableView for EmptyView {
    fn resize(&mut self, css_w: f64, css_h: f64, dpr: f64) {
        self.geom = PlotGeometry::new(css_w, css_h, dpr);
    }
    fn fit(&mut self) {}
    fn zoom_at(&mut self, _: f64, _: f64, _: f64) {}
    fn pan_by(&mut self, _: f64, _: f64) {}
    fn key(&mut self, _: &str) -> bool {
        false
    }
    fn pointer_down(&mut self, _: f64, _: f64) {}
    fn pointer_move(&mut self, _: &Snapshot, _: f64, _: f64) -> Option<Tooltip> {
        None
    }
    fn pointer_up(&mut self, _: &Snapshot, _: f64, _: f64) -> Option<Tooltip> {
        None
    }
    fn hover(&mut self, _: &Snapshot, _: f64, _: f64) -> Option<Tooltip> {
        None
    }
    fn pointer_leave(&mut self) {}
    fn click(&mut self, _: &Snapshot, _: f64, _: f64) -> Option<Tooltip> {
        None
    }
    fn overlay(&mut self) -> Batch {
        Batch::unbounded([0.0, 0.0], Vec::new())
    }
    fn batches(&self) -> (u64, &[Batch]) {
        (0, &[])
    }
    fn canvas_view(&self) -> CanvasView {
        self.camera.canvas_view(&self.geom)
    }
    fn needs_redraw(&self) -> bool {
        false
    }
    fn take_needs_redraw(&mut self) -> bool {
        false
    }
}

impl View for EmptyView {}
