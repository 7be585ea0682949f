//! [`App::request`]: the app's half of the shell's one request entry point (the rest, the
//! panel around the plot, the summaries and the canvas size, is `memviz-web`'s). Each
//! [`Request`] gets the [`Reply`] variant of the same name, which the compiler checks.

use super::App;
use crate::answer::Avail;
use crate::request::{Reply, Request};

/// A finite number, else `default` (JSON has no NaN, but a hand-made request may send
/// `1e999`).
fn finite(v: f64, default: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        default
    }
}

impl App {
    /// Answers one request of the shell (`Panel`, `SummaryTable`, `Files` and `Resize` are
    /// answered one layer up, where the files and the canvas are: here they answer as before
    /// the first file).
    // A request that answers nothing replies `()`: `Reply::Fit(self.fit())` keeps each request
    // one line with its reply variant, which the compiler checks against the table.
    #[allow(clippy::unit_arg)]
    pub fn request(&mut self, req: Request) -> Reply {
        // A scene rebuilt elsewhere (a highlight) is in timesteps: back on the chosen axis.
        self.sync_axis();
        let reply = self.answer(req);
        self.sync_axis();
        reply
    }

    #[allow(clippy::unit_arg)]
    fn answer(&mut self, req: Request) -> Reply {
        use Request as Q;
        match req {
            Q::Wheel { x, y, delta_y } => Reply::Wheel(self.wheel(x, y, delta_y)),
            Q::ZoomAt { x, y, factor } => Reply::ZoomAt(if factor.is_finite() && factor > 0.0 {
                self.zoom_at(x, y, factor);
            }),
            Q::PanBy { dx, dy } => Reply::PanBy(self.pan_by(finite(dx, 0.0), finite(dy, 0.0))),
            Q::Fit => Reply::Fit(self.fit()),
            Q::Key { key } => Reply::Key(self.key(&key)),
            Q::PointerDown { x, y } => Reply::PointerDown(self.pointer_down(x, y)),
            Q::PointerMove { x, y } => Reply::PointerMove(self.pointer_move(x, y)),
            Q::PointerUp { x, y } => Reply::PointerUp(self.pointer_up(x, y)),
            Q::PointerLeave => Reply::PointerLeave(self.hover(-1.0e9, -1.0e9)),
            Q::DoubleClick => Reply::DoubleClick(self.double_click()),
            Q::SetXWindow { x0, x1 } => Reply::SetXWindow(self.set_x_window(x0, x1)),
            Q::SetWindow { x0, x1, y0, y1 } => Reply::SetWindow(self.set_window(x0, x1, y0, y1)),
            Q::SelectFile { index } => Reply::SelectFile(self.select_file(index as usize)),
            Q::SetDevice { device } => Reply::SetDevice(self.set_device(device)),
            Q::SetTimeAxis { on } => Reply::SetTimeAxis(self.set_time_axis(on)),
            Q::SetTheme { dark } => Reply::SetTheme(self.set_theme(dark)),
            Q::SetView { view } => Reply::SetView({
                self.set_view(view);
                true
            }),
            Q::Resize { css_w, css_h, dpr } => Reply::Resize(self.resize(css_w, css_h, dpr)),
            Q::Panel { legend_entries } => Reply::Panel(self.panel(legend_entries as usize)),
            Q::Ticks => Reply::Ticks(Some(self.axis_ticks())),
            Q::State => Reply::State(Some(self.state())),
            Q::SummaryTable => Reply::SummaryTable(String::new()),
            Q::StateSelect { k } => Reply::StateSelect(self.state_select(k)),
            Q::StateRows { start, count } => {
                Reply::StateRows(self.state_rows(start as usize, count as usize))
            }
            Q::StateOoms => Reply::StateOoms(self.state_ooms()),
            Q::StateSearch {
                query,
                from,
                forward,
            } => Reply::StateSearch(self.state_search(&query, from, forward)),
            Q::StateFocus { addr } => {
                Reply::StateFocus(addr.parse::<u64>().ok().and_then(|a| self.state_focus(a)))
            }
            Q::StateItemCenter { kind, addr } => Reply::StateItemCenter(
                addr.parse::<u64>()
                    .ok()
                    .and_then(|a| self.state_item_center(kind, a)),
            ),
            Q::Search { query, only } => Reply::Search(self.search(&query, only)),
            Q::Lines { all_frames } => Reply::Lines(self.lines(all_frames)),
            Q::HighlightLine {
                file,
                line,
                name,
                all_frames,
            } => Reply::HighlightLine(Avail::from_result(
                self.highlight_line(&file, line, &name, all_frames),
            )),
            Q::ClearHighlight => Reply::ClearHighlight(self.set_highlight(None, false)),
            Q::Leaks => Reply::Leaks(self.leaks()),
            Q::Live { step } => {
                let step = match step {
                    -1 => self.last_click_step().map_or(-1, i64::from),
                    s if s < 0 => -1,
                    s => s,
                };
                Reply::Live(self.live(step))
            }
            Q::Diff { a, b } => Reply::Diff(self.diff(a as usize, b as usize)),
            Q::Files => Reply::Files(Vec::new()),
            Q::FlameSet {
                at,
                lifetime,
                frames,
            } => Reply::FlameSet(self.flame_set(at, lifetime, frames)),
            Q::FlameDiff { a, b, frames } => {
                Reply::FlameDiff(self.flame_diff(a as usize, b as usize, frames))
            }
            Q::FlameInfo => Reply::FlameInfo(self.flame_info()),
            Q::FlameZoomTo { node } => Reply::FlameZoomTo(self.flame_zoom_to(node)),
            Q::FlameNodeCenter { node } => Reply::FlameNodeCenter(self.flame_node_center(node)),
            Q::FlamePhases => Reply::FlamePhases(self.flame_phases()),
            Q::Pin { element } => Reply::Pin(self.pin(element)),
            Q::SetUserCode { pattern } => Reply::SetUserCode(self.set_user_code(&pattern)),
        }
    }
}
