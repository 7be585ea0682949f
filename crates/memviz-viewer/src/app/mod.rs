//! [`App`]: the loaded files, the current device, which view is shown ([`ActiveView`]) and
//! everything the shell asks for (ticks, tooltips, legend, JSON state).
//!
//! - `mod.rs`: the [`App`] struct and its construction;
//! - `views.rs`: devices and view switching, and the built data of the timeline kind;
//! - `budget.rs`: whether a view fits in memory, and what is released to make room;
//! - `shown.rs`: the dispatch of input and frames to the view shown through [`DrawableView`];
//! - `navigate.rs`, `pointer.rs`: geometry and camera; pointer input, hover and pin;
//! - `frames.rs`: ticks, settling, the redraw flag and what the GPU side draws;
//! - `files.rs`: the loaded files, their device lists, and which one is current;
//! - `device.rs`: what is built per (file, device, timeline kind);
//! - `timeline.rs` (and `timeline/`): the timelines as a [`DrawableView`]; `overlay.rs`: their
//!   overlay and axis ticks;
//! - `state.rs`, `flame.rs`: the app's side of the State History and the flamegraph;
//! - `panels/`: the panels beside the plot and the memory checks of what they build.

use memviz_analysis::site::UserCode;
use memviz_snapshot::Snapshot;

mod budget;
mod device;
mod dispatch;
mod files;
mod flame;
mod frames;
mod navigate;
mod overlay;
mod panels;
mod pointer;
mod shown;
mod sites;
mod state;
mod text;
mod timeline;
mod views;

pub use crate::answer::FlameAt;
pub use crate::answer::{AxisTicks, FileAccelerator, PhaseLabel};
pub use device::{FIRST_SCENE_COLUMNS, PHASE_ROWS, PHASE_ROW_CSS, VIEWER_LAYOUT};
pub use files::LoadedFile;
pub use panels::LIVE_ROWS;
pub use timeline::SETTLE_MS;

use crate::camera::PlotGeometry;
use crate::flame_view::FlameView;
use crate::memory::Memory;
use crate::state_view::StateView;
use crate::theme::Theme;
pub use crate::view::{ActiveView, DrawableView, ViewKind, CLICK_SLOP_CSS};
use timeline::{Frame, TimelineUi};

/// Background colour of the light theme (sRGB RGBA, 0..1); the app's is
/// `App::theme().clear()`.
pub const CLEAR: [f64; 4] = [1.0, 1.0, 1.0, 1.0];

/// The viewer's state (no GPU, no platform).
pub struct App {
    files: Vec<LoadedFile>,
    current: usize,
    device: i64,
    geom: PlotGeometry,
    frame: Frame,
    /// Which view the canvas shows.
    active: ActiveView,
    /// The timelines' camera, hover, pin and kind (kept while another view is shown).
    timeline: TimelineUi,
    /// The state history of (file, device), built on first use.
    state_view: Option<((usize, i64), StateView)>,
    /// The flamegraph of (file, device), built on first use.
    flame_view: Option<((usize, i64), FlameView)>,
    /// The memory probe and budget views are checked against (none: every view is built).
    memory: Option<Memory>,
    /// A view that could not be built for lack of memory, and why.
    unavailable: Option<(ViewKind, String)>,
    /// Which Python files count as the user's code (`App::set_user_code`); each file's
    /// `LoadedFile::sites` classifies with it.
    user_code: UserCode,
}

impl App {
    /// An app showing `snap` (named `name`) on its default device in a 1024 × 576 canvas.
    #[must_use]
    pub fn new(name: &str, snap: Snapshot) -> Self {
        let mut app = App::new_empty();
        app.add_file(name, snap);
        app
    }

    /// An app like [`App::new`] whose views are checked against `memory` before they are built
    /// (see [`crate::memory`]): the page's worker passes its heap probe and budget.
    #[must_use]
    pub fn with_memory(name: &str, snap: Snapshot, memory: Memory) -> Self {
        let mut app = App::new_empty();
        app.memory = Some(memory);
        app.add_file(name, snap);
        app
    }

    /// An app with no file yet: every request answers as before the first file.
    #[must_use]
    pub fn new_empty() -> Self {
        App {
            files: Vec::new(),
            current: 0,
            device: 0,
            geom: PlotGeometry::new(1024.0, 576.0, 1.0),
            frame: Frame {
                generation: 0,
                needs_redraw: true,
                theme: Theme::LIGHT,
            },
            active: ActiveView::Timeline,
            timeline: TimelineUi::new(),
            state_view: None,
            flame_view: None,
            memory: None,
            unavailable: None,
            user_code: UserCode::default(),
        }
    }
}
