//! [`App::request`] and the app's side of the request table: [`Handler`] (every request the
//! app answers) and [`Host`] (the requests the embedder answers where the files and the canvas
//! are: alone, the app answers them as before the first file and resizes itself). The match
//! from a request to its reply is generated ([`crate::request::dispatch`]); what is here is the
//! clean-up of the shell's input before it reaches the app's methods.
//!
//! Each method calls the app's inherent method of the same name as `App::name(self, …)`: a
//! path finds the inherent method before the trait's (method-call syntax would not always: a
//! `&self` inherent method loses to a `&mut self` trait method), and it takes typed values
//! (`usize` indices, `u64` addresses).

use super::App;
use crate::answer::{
    Avail, AxisTicks, DiffAnswer, FlameAt, FlameInfo, FlamePhase, FlameState, LeaksAnswer,
    LineAnswer, LiveAnswer, MapItemKind, Panel, SearchAnswer, StateRow, StateSelection, Tooltip,
    UserCodeAnswer, ViewKind, ViewerState, WhatIfInfo, WhatIfProgress, WhatIfResult,
};
use crate::answer::{FileRow, FilterAnswer};
use crate::request::{Handler, Host, Reply};
use memviz_analysis::flame::FrameMode;

/// A finite number, else `default` (JSON has no NaN, but a hand-made request may send
/// `1e999`).
fn finite(v: f64, default: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        default
    }
}

/// A block or segment address sent as decimal text (addresses pass 2^53); `None` when it is
/// not one.
fn addr(text: &str) -> Option<u64> {
    text.parse::<u64>().ok()
}

/// Runs `f` with the timeline shown on the chosen x axis before and after: a scene rebuilt
/// elsewhere (a highlight) is in timesteps, and goes back on the chosen axis.
fn synced<R>(app: &mut App, f: impl FnOnce(&mut App) -> R) -> R {
    app.sync_axis();
    let out = f(app);
    app.sync_axis();
    out
}

impl Host for App {
    type App = App;

    fn with_app(&mut self, answer: impl FnOnce(&mut App) -> Reply) -> Reply {
        synced(self, answer)
    }

    fn resize(&mut self, css_w: f64, css_h: f64, dpr: f64) {
        synced(self, |a| App::resize(a, css_w, css_h, dpr));
    }

    fn panel(&mut self, legend_entries: u32) -> Panel {
        synced(self, |a| App::panel(a, legend_entries as usize))
    }

    fn summary_table(&mut self) -> String {
        String::new()
    }

    fn files(&mut self) -> Vec<FileRow> {
        Vec::new()
    }
}

impl Handler for App {
    fn wheel(&mut self, x: f64, y: f64, delta_y: f64) {
        App::wheel(self, x, y, delta_y);
    }

    fn zoom_at(&mut self, x: f64, y: f64, factor: f64) {
        if factor.is_finite() && factor > 0.0 {
            App::zoom_at(self, x, y, factor);
        }
    }

    fn pan_by(&mut self, dx: f64, dy: f64) {
        App::pan_by(self, finite(dx, 0.0), finite(dy, 0.0));
    }

    fn fit(&mut self) {
        App::fit(self);
    }

    fn key(&mut self, key: String) -> bool {
        App::key(self, &key)
    }

    fn pointer_down(&mut self, x: f64, y: f64) {
        App::pointer_down(self, x, y);
    }

    fn pointer_move(&mut self, x: f64, y: f64) -> Option<Tooltip> {
        App::pointer_move(self, x, y)
    }

    fn pointer_up(&mut self, x: f64, y: f64) -> Option<Tooltip> {
        App::pointer_up(self, x, y)
    }

    fn pointer_leave(&mut self) -> Option<Tooltip> {
        // Far outside every view: the hover ends and the pinned tooltip, if any, stays.
        App::hover(self, -1.0e9, -1.0e9)
    }

    fn double_click(&mut self) {
        App::double_click(self);
    }

    fn set_x_window(&mut self, x0: f64, x1: f64) {
        App::set_x_window(self, x0, x1);
    }

    fn set_window(&mut self, x0: f64, x1: f64, y0: f64, y1: f64) {
        App::set_window(self, x0, x1, y0, y1);
    }

    fn select_file(&mut self, index: u32) -> bool {
        App::select_file(self, index as usize)
    }

    fn set_device(&mut self, device: i64) {
        App::set_device(self, device);
    }

    fn set_time_axis(&mut self, on: bool) {
        App::set_time_axis(self, on);
    }

    fn set_theme(&mut self, dark: bool) {
        App::set_theme(self, dark);
    }

    fn set_view(&mut self, view: ViewKind) -> bool {
        App::set_view(self, view);
        true
    }

    fn ticks(&mut self) -> Option<AxisTicks> {
        // Before the first file: none (the shell draws no axes).
        (!self.files.is_empty()).then(|| App::axis_ticks(self))
    }

    fn state(&mut self) -> Option<ViewerState> {
        (!self.files.is_empty()).then(|| App::state(self))
    }

    fn state_select(&mut self, k: i64) -> Option<StateSelection> {
        App::state_select(self, k)
    }

    fn state_rows(&mut self, start: u32, count: u32) -> Vec<StateRow> {
        App::state_rows(self, start as usize, count as usize)
    }

    fn state_ooms(&mut self) -> Vec<usize> {
        App::state_ooms(self)
    }

    fn state_search(&mut self, query: String, from: i64, forward: bool) -> i64 {
        App::state_search(self, &query, from, forward)
    }

    fn state_focus(&mut self, addr_text: String) -> Option<Tooltip> {
        addr(&addr_text).and_then(|a| App::state_focus(self, a))
    }

    fn state_item_center(&mut self, kind: MapItemKind, addr_text: String) -> Option<[f64; 2]> {
        addr(&addr_text).and_then(|a| App::state_item_center(self, kind, a))
    }

    fn search(&mut self, query: String, only: bool) -> Option<SearchAnswer> {
        App::search(self, &query, only)
    }

    fn filter(&mut self, query: String, only: bool) -> Option<FilterAnswer> {
        App::filter(self, &query, only)
    }

    fn filter_csv(&mut self, query: String) -> Option<String> {
        App::filter_csv(self, &query)
    }

    fn lines(&mut self, all_frames: bool) -> Avail<Vec<LineAnswer>> {
        App::lines(self, all_frames)
    }

    fn highlight_line(
        &mut self,
        file: String,
        line: i64,
        name: String,
        all_frames: bool,
    ) -> Avail<usize> {
        Avail::from_result(App::highlight_line(self, &file, line, &name, all_frames))
    }

    fn clear_highlight(&mut self) {
        App::set_highlight(self, None, false);
    }

    fn leaks(&mut self) -> Option<Avail<LeaksAnswer>> {
        App::leaks(self)
    }

    fn live(&mut self, step: i64) -> Option<Avail<LiveAnswer>> {
        // -1: the last clicked timestep (the peak before any click); below -1: the peak.
        let step = match step {
            -1 => (self.timeline_of(self.sel.timeline))
                .and_then(|v| v.ui.last_click_step)
                .map_or(-1, i64::from),
            s if s < 0 => -1,
            s => s,
        };
        App::live(self, step)
    }

    fn diff(&mut self, a: u32, b: u32) -> Option<Avail<DiffAnswer>> {
        App::diff(self, a as usize, b as usize)
    }

    fn flame_set(
        &mut self,
        at: FlameAt,
        lifetime: bool,
        frames: Option<FrameMode>,
    ) -> Option<Avail<FlameState>> {
        App::flame_set(self, at, lifetime, frames)
    }

    fn flame_diff(
        &mut self,
        a: u32,
        b: u32,
        frames: Option<FrameMode>,
    ) -> Option<Avail<FlameState>> {
        App::flame_diff(self, a as usize, b as usize, frames)
    }

    fn flame_info(&mut self) -> Option<FlameInfo> {
        App::flame_info(self)
    }

    fn flame_zoom_to(&mut self, node: u32) -> bool {
        App::flame_zoom_to(self, node)
    }

    fn flame_node_center(&mut self, node: u32) -> Option<[f64; 2]> {
        App::flame_node_center(self, node)
    }

    fn flame_phases(&mut self) -> Vec<FlamePhase> {
        App::flame_phases(self)
    }

    fn pin(&mut self, element: i64) -> Option<Tooltip> {
        App::pin(self, element)
    }

    fn set_user_code(&mut self, pattern: String) -> Result<UserCodeAnswer, String> {
        let a = App::set_user_code(self, &pattern)?;
        self.whatif.rename(&mut self.files);
        Ok(a)
    }

    fn whatif_info(&mut self) -> Option<WhatIfInfo> {
        self.whatif.info(&mut self.files, self.sel)
    }

    fn whatif_run(
        &mut self,
        conf: String,
        capacity_gib: Option<f64>,
        sweep: bool,
    ) -> WhatIfProgress {
        self.whatif
            .start(&self.files, self.sel, &conf, capacity_gib, sweep)
    }

    fn whatif_step(&mut self) -> WhatIfProgress {
        let p = self.whatif.step(&mut self.files);
        if p.result.is_some() {
            self.needs_redraw = true;
        }
        p
    }

    fn whatif_cancel(&mut self) -> bool {
        self.whatif.cancel()
    }

    fn whatif_clear(&mut self) {
        self.whatif.clear();
        self.needs_redraw = true;
    }

    fn whatif_show(&mut self, row: i64) -> Option<WhatIfResult> {
        self.needs_redraw = true;
        self.whatif.show(row, &mut self.files)
    }
}
