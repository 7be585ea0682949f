//! [`App`]: the loaded files, the current device, which view is shown, and the registry of
//! built views ([`Views`]) it dispatches every request, input and frame to. It holds no view
//! and computes no answer of its own:
//!
//! - `classes.rs`: the views it registers (timelines, State History, flamegraph);
//! - `current.rs`: `current::Current`, the files, registry and selection borrowed for one
//!   request: the panels (`panels/`), the State History's (`state.rs`) and the flamegraph's
//!   (`flame.rs`) requests, and the sites added to tooltips (`sites.rs`) are its methods;
//! - `now.rs`: `now::Now`, the same read for one answer: axis ticks, legend, devices,
//!   settings, the viewer's state and the panel;
//! - `files.rs`: a loaded file (snapshot, site cache, device list, accelerator);
//! - `device.rs`: what is built per (file, device, timeline kind);
//! - `timeline.rs` (and `timeline/`): the timelines as a [`DrawableView`]; `overlay.rs`: their
//!   overlay and axis ticks;
//! - `dispatch.rs`: the app's side of the requests table ([`crate::request::Handler`]).

#[macro_use]
mod forward;
mod classes;
mod current;
mod device;
mod dispatch;
mod files;
mod flame;
mod hub;
mod now;
mod overlay;
mod panels;
mod selection;
mod sites;
mod state;
mod timeline;
mod whatif;

pub use crate::answer::FlameAt;
pub use crate::answer::{AxisTicks, FileAccelerator, PhaseLabel};
pub use crate::view::{ActiveView, DrawableView, ViewKind, CLICK_SLOP_CSS};
pub use device::{FIRST_SCENE_COLUMNS, PHASE_ROWS, PHASE_ROW_CSS, VIEWER_LAYOUT};
pub use files::LoadedFile;
pub use panels::LIVE_ROWS;
pub use timeline::SETTLE_MS;

use crate::camera::PlotGeometry;
use crate::registry::EmptyView;
use crate::registry::{ViewKey, Views};
use crate::theme::Theme;
use device::DeviceData;
use memviz_analysis::site::UserCode;
use selection::Selection;
use timeline::TimelineView;

/// Background colour of the light theme (sRGB RGBA, 0..1); the app's is
/// `App::theme().clear()`.
pub const CLEAR: [f64; 4] = [1.0, 1.0, 1.0, 1.0];

/// The viewer's state (no GPU, no platform): the files, the device and view shown, and the
/// registry of built views ([`Views`]), which it dispatches to.
pub struct App {
    files: Vec<LoadedFile>,
    /// Which file, device and views are shown.
    sel: Selection,
    geom: PlotGeometry,
    /// The registered view classes and every built view.
    views: Views,
    /// The canvas's non-data colours.
    theme: Theme,
    /// True when wall-clock time was chosen for the timelines' x axis.
    time_axis: bool,
    /// A change of the app's own (a view switch, the theme) to draw.
    needs_redraw: bool,
    /// Which Python files count as the user's code ([`App::set_user_code`]).
    user_code: UserCode,
    /// Shown while the view asked for is not built.
    empty: EmptyView,
    /// The "What if" tab's job and result (`whatif/`).
    whatif: whatif::WhatIf,
}

/// The built data of the timeline of `key`, when built.
fn timeline_data(views: &Views, key: ViewKey) -> Option<&DeviceData> {
    views.get_as::<TimelineView>(key)?.data()
}
