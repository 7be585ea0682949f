//! What the shell may ask the viewer: one [`Request`] enum (JSON `{"method": "…", …fields}`),
//! and the answer each request gets ([`Reply`], whose variants are the answer structs of
//! [`crate::answer`]). Both are written once, in the [`requests!`] table below, one row per
//! request: `method: Variant { fields } => Answer;`. The table makes
//! - the enum and the reply enum;
//! - the traits that answer them, one method per row, named in the table (`macro_rules`
//!   cannot make identifiers; a test checks each name is the request's `method`), taking the
//!   request's fields and returning its answer: [`Handler`], the app's requests
//!   ([`crate::App`] implements it in `app/dispatch.rs`), and [`Host`], the rows marked
//!   `@host`, answered where the files and the canvas are (memviz-web's `ViewerCore` and
//!   `WebViewer`), which also leads to the app for the others;
//! - [`dispatch`], the one match from a request to its reply: a method returning the wrong
//!   answer does not compile, and no hand-written arm exists;
//! - the TypeScript map from each method to its answer (`Answers`, for `www/js/generated/`).
//!
//! Coordinates are canvas CSS px; `addr` fields are decimal text (addresses pass 2^53).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::answer::{
    Avail, AxisTicks, DiffAnswer, FileRow, FilterAnswer, FlameAt, FlameInfo, FlamePhase,
    FlameState, LeaksAnswer, LineAnswer, LiveAnswer, MapItemKind, Panel, SearchAnswer, StateRow,
    StateSelection, Tooltip, UserCodeAnswer, ViewKind, ViewerState, WhatIfInfo, WhatIfProgress,
    WhatIfResult,
};

/// Exports every named type it visits (with its own dependencies).
struct Exporter<'a> {
    cfg: &'a ts_rs::Config,
    error: Option<ts_rs::ExportError>,
}

impl ts_rs::TypeVisitor for Exporter<'_> {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        if self.error.is_none() && T::output_path().is_some() {
            self.error = T::export_all(self.cfg).err();
        }
        // `Option<Tooltip>`, `Avail<Vec<LineAnswer>>`: the named types inside too.
        T::visit_generics(self);
    }
}

/// Collects the TypeScript names of the named types it visits (and of their type arguments).
struct Names<'a> {
    cfg: &'a ts_rs::Config,
    names: std::collections::BTreeSet<String>,
}

impl ts_rs::TypeVisitor for Names<'_> {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        if T::output_path().is_some() {
            self.names.insert(T::ident(self.cfg));
        }
        T::visit_generics(self);
    }
}

/// Snake case of a variant name (`SetXWindow` → `set_x_window`), as serde's `rename_all`.
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

macro_rules! requests {
    ($(
        $(#[doc = $doc:literal])*
        $(@$layer:ident)? $method:ident : $variant:ident $({ $($field:ident : $fty:ty),* $(,)? })? => $answer:ty;
    )*) => {
        /// A request of the shell (see the module docs).
        #[derive(Clone, Debug, PartialEq, Deserialize, TS)]
        #[serde(tag = "method", rename_all = "snake_case")]
        pub enum Request {
            $( $(#[doc = $doc])* $variant $({ $($field: $fty),* })?, )*
        }

        /// The answer to a [`Request`]: the variant of the same name, serialized as its value
        /// alone (`()` is `null`).
        // One reply lives at a time, from the dispatch to its serialization: its size does not
        // matter, and boxing the big answers would only add allocations.
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone, Debug, PartialEq, Serialize)]
        #[serde(untagged)]
        pub enum Reply {
            $( $variant($answer), )*
        }

        /// The app's side of the requests: one method per request of the table not marked
        /// `@host`, named in the table, taking the request's fields and returning its answer.
        /// Implemented by [`crate::App`]; the input clean-ups (finite numbers, addresses as
        /// text) are the methods' own.
        #[allow(clippy::unused_unit)]
        pub trait Handler {
            $( requests!(@handler [$($layer)?] $(#[doc = $doc])* $method ($($($field: $fty),*)?) -> $answer); )*
        }

        /// The embedder's side (`@host` in the table): the requests answered where the files
        /// and the canvas are (memviz-web's `ViewerCore` and `WebViewer`; [`crate::App`]
        /// answers them alone as before the first file, and resizes itself), and the way to
        /// the app for every other request.
        #[allow(clippy::unused_unit)]
        pub trait Host {
            /// The handler of the app's requests.
            type App: Handler;
            /// Answers one of the app's requests with `answer` (before the first file: with an
            /// app that has none, `App::new_empty`).
            fn with_app(&mut self, answer: impl FnOnce(&mut Self::App) -> Reply) -> Reply;
            $( requests!(@host [$($layer)?] $(#[doc = $doc])* $method ($($($field: $fty),*)?) -> $answer); )*
        }

        /// Answers `request`: the [`Reply`] variant of the same name, holding what the
        /// request's [`Handler`] or [`Host`] method returned (so it cannot be the wrong
        /// answer), the one dispatch of the shell's requests.
        // A request that answers nothing replies `()`: `Reply::Fit(app.fit())`.
        #[allow(clippy::unit_arg)]
        pub fn dispatch<H: Host>(host: &mut H, request: Request) -> Reply {
            match request {
                $( Request::$variant $({ $($field),* })? => requests!(@arm [$($layer)?] host $variant $method ($($($field),*)?)), )*
            }
        }

        /// Each method's name and its request's `method` (the variant's name in snake case):
        /// a test checks they are the same.
        #[cfg(test)]
        const METHOD_NAMES: &[(&str, &str)] = &[$( (stringify!($method), stringify!($variant)), )*];

        /// Writes the TypeScript declarations of [`Request`], of every answer type and the
        /// `Answers` map (`Answers.ts`) into `cfg`'s out dir, one file per type.
        pub fn export_ts(cfg: &ts_rs::Config) -> Result<(), ts_rs::ExportError> {
            Request::export_all(cfg)?;
            let mut v = Exporter { cfg, error: None };
            $( ts_rs::TypeVisitor::visit::<$answer>(&mut v); )*
            if let Some(e) = v.error {
                return Err(e);
            }
            std::fs::write(cfg.out_dir().join("Answers.ts"), answers_ts(cfg))?;
            Ok(())
        }

        /// The TypeScript map from each method to its answer's type:
        /// `export type Answers = { wheel: null, … }`, with the imports it needs.
        #[must_use]
        pub fn answers_ts(cfg: &ts_rs::Config) -> String {
            let mut v = Names { cfg, names: Default::default() };
            $( ts_rs::TypeVisitor::visit::<$answer>(&mut v); )*
            let names = v.names;
            let mut out = String::from("// Generated by memviz-viewer's request table (crates/memviz-viewer/src/request.rs).\n// Do not edit: `cargo xtask gen-types` writes it.\n\n");
            for n in &names {
                out.push_str(&format!("import type {{ {n} }} from \"./{n}\";\n"));
            }
            out.push_str("\n/** The answer of each request (`Request`'s `method`). */\nexport type Answers = {\n");
            $( out.push_str(&format!("  {}: {},\n", snake(stringify!($variant)), <$answer as TS>::name(cfg))); )*
            out.push_str("};\n");
            out
        }
    };
    // A method of the app's trait (a row without a layer), none for an `@host` row.
    (@handler [] $(#[doc = $doc:literal])* $method:ident ($($field:ident : $fty:ty),*) -> $answer:ty) => {
        $(#[doc = $doc])*
        fn $method(&mut self, $($field: $fty),*) -> $answer;
    };
    (@handler [host] $($rest:tt)*) => {};
    // A method of the embedder's trait (an `@host` row), none for the app's rows.
    (@host [host] $(#[doc = $doc:literal])* $method:ident ($($field:ident : $fty:ty),*) -> $answer:ty) => {
        $(#[doc = $doc])*
        fn $method(&mut self, $($field: $fty),*) -> $answer;
    };
    (@host [] $($rest:tt)*) => {};
    // The dispatch of one request: through the app, or the embedder's own method.
    (@arm [] $host:ident $variant:ident $method:ident ($($arg:ident),*)) => {
        $host.with_app(|app| Reply::$variant(Handler::$method(app, $($arg),*)))
    };
    (@arm [host] $host:ident $variant:ident $method:ident ($($arg:ident),*)) => {
        Reply::$variant(Host::$method($host, $($arg),*))
    };
}

requests! {
    /// Wheel at a canvas point; `delta_y` in pixels (negative zooms in).
    wheel: Wheel { x: f64, y: f64, delta_y: f64 } => ();
    /// Zooms both axes by `factor` around a canvas point.
    zoom_at: ZoomAt { x: f64, y: f64, factor: f64 } => ();
    /// Pans by CSS px.
    pan_by: PanBy { dx: f64, dy: f64 } => ();
    /// Shows the whole trace.
    fit: Fit => ();
    /// A key press (`KeyboardEvent.key`): true when it was used.
    key: Key { key: String } => bool;
    /// Pointer pressed.
    pointer_down: PointerDown { x: f64, y: f64 } => ();
    /// Pointer moved: the tooltip to show.
    pointer_move: PointerMove { x: f64, y: f64 } => Option<Tooltip>;
    /// Pointer released (a click pins / unpins): the tooltip to show.
    pointer_up: PointerUp { x: f64, y: f64 } => Option<Tooltip>;
    /// The pointer left the canvas: the pinned tooltip, if any.
    pointer_leave: PointerLeave => Option<Tooltip>;
    /// Double click: fit.
    double_click: DoubleClick => ();
    /// The overview brush: shows timesteps `[x0, x1)`, y fitted to them.
    set_x_window: SetXWindow { x0: f64, x1: f64 } => ();
    /// Sets the timeline's visible window (timesteps x0..x1, bytes y0..y1).
    set_window: SetWindow { x0: f64, x1: f64, y0: f64, y1: f64 } => ();
    /// Makes opened file `index` current (false when there is none).
    select_file: SelectFile { index: u32 } => bool;
    /// Switches the device of the current file.
    set_device: SetDevice { device: i64 } => ();
    /// x axis: wall-clock time (when the trace has times) or timesteps.
    set_time_axis: SetTimeAxis { on: bool } => ();
    /// The canvas's non-data colours (background, axes, grid, overview, the State History
    /// map): dark or light. Data colours stay.
    set_theme: SetTheme { dark: bool } => ();
    /// Shows a view.
    set_view: SetView { view: ViewKind } => bool;
    /// The canvas's CSS size and device pixel ratio changed.
    @host resize: Resize { css_w: f64, css_h: f64, dpr: f64 } => ();
    /// Everything around the plot, with the `legend_entries` largest sites.
    @host panel: Panel { legend_entries: u32 } => Panel;
    /// The axis ticks for the current camera.
    ticks: Ticks => Option<AxisTicks>;
    /// The viewer's state (`null` before the first file).
    state: State => Option<ViewerState>;
    /// The current file's summary as a text table.
    @host summary_table: SummaryTable => String;
    /// Selects event `k` of the State History (-1: the last).
    state_select: StateSelect { k: i64 } => Option<StateSelection>;
    /// Rows `[start, start + count)` of the State History's event list (at most 1000).
    state_rows: StateRows { start: u32, count: u32 } => Vec<StateRow>;
    /// The indices of the `oom` events of the State History.
    state_ooms: StateOoms => Vec<usize>;
    /// The next (`forward`) or previous event from `from` whose row contains `query`
    /// (case-insensitive, wrapping), or -1.
    state_search: StateSearch { query: String, from: i64, forward: bool } => i64;
    /// Pins and centres the block (or segment) at `addr` in the map: its tooltip.
    state_focus: StateFocus { addr: String } => Option<Tooltip>;
    /// Canvas CSS px of a map item's centre.
    state_item_center: StateItemCenter { kind: MapItemKind, addr: String } => Option<[f64; 2]>;
    /// Searches the current timeline (substring or `/regex/`) and highlights the matches
    /// (`only`: hides the rest); empty clears.
    search: Search { query: String, only: bool } => Option<SearchAnswer>;
    /// Filters the Active Memory Timeline's allocations (`size>=1MiB site:/attn/ at:peak`, the
    /// grammar of `memviz query`) and highlights the matches as the search does (`only`: hides
    /// the rest; with a search set, what matches both); empty clears the filter. A filter that
    /// does not parse changes nothing: `error` says where.
    filter: Filter { query: String, only: bool } => Option<FilterAnswer>;
    /// The CSV of the allocations the filter matches (null: no file, or it does not parse).
    filter_csv: FilterCsv { query: String } => Option<String>;
    /// The per-source-line table of the current timeline.
    lines: Lines { all_frames: bool } => Avail<Vec<LineAnswer>>;
    /// Highlights one row of the source-line table: how many allocations.
    highlight_line: HighlightLine { file: String, line: i64, name: String, all_frames: bool } => Avail<usize>;
    /// Clears a search or row highlight.
    clear_highlight: ClearHighlight => ();
    /// Leak suspects of the current device.
    leaks: Leaks => Option<Avail<LeaksAnswer>>;
    /// Every allocation alive at timestep `step` (`-1`: the last clicked one, or the peak
    /// before any click; below -1: the peak).
    live: Live { step: i64 } => Option<Avail<LiveAnswer>>;
    /// Compares the live allocations of opened files `a` and `b`.
    diff: Diff { a: u32, b: u32 } => Option<Avail<DiffAnswer>>;
    /// Every opened file's peak, final and reserved bytes (its default device).
    @host files: Files => Vec<FileRow>;
    /// Rebuilds the flamegraph at a moment or over a range; `lifetime`: bytes × lifetime over
    /// the trace; `frames`: which frames (null or absent: my code when the file has frames of
    /// the user's code, else Python; [`FlameState::frames`] says which).
    flame_set: FlameSet { at: FlameAt, lifetime: bool, frames: Option<memviz_analysis::flame::FrameMode> } => Option<Avail<FlameState>>;
    /// Shows the comparison flamegraph of opened files `a` and `b` (`frames` as for FlameSet).
    flame_diff: FlameDiff { a: u32, b: u32, frames: Option<memviz_analysis::flame::FrameMode> } => Option<Avail<FlameState>>;
    /// The flamegraph's breadcrumb, labels and state.
    flame_info: FlameInfo => Option<FlameInfo>;
    /// Zooms the flamegraph to a node (from the breadcrumb).
    flame_zoom_to: FlameZoomTo { node: u32 } => bool;
    /// Canvas CSS px of a flamegraph node's centre.
    flame_node_center: FlameNodeCenter { node: u32 } => Option<[f64; 2]>;
    /// The annotation phases usable as flamegraph time ranges.
    flame_phases: FlamePhases => Vec<FlamePhase>;
    /// Pins the tooltip of a timeline element (negative: unpin).
    pin: Pin { element: i64 } => Option<Tooltip>;
    /// Sets which Python files count as the user's code (docs/sites.md: comma-separated path
    /// prefixes or package paths, and at most one `/regex/`; empty: the default rule) and
    /// renames every site with it; `Err`: a one-line message (a bad regex).
    set_user_code: SetUserCode { pattern: String } => Result<UserCodeAnswer, String>;
    /// The "What if" tab (docs/whatif.md): the current device's recorded allocator settings
    /// for the form, whether a job runs, and the result kept for this file and device.
    whatif_info: WhatifInfo => Option<WhatIfInfo>;
    /// Starts a replay of `conf` (a `PYTORCH_CUDA_ALLOC_CONF` over PyTorch's defaults) and its
    /// smallest capacity, or with `sweep` the standard alternatives over the recorded settings,
    /// on `capacity_gib` GiB (null: the recorded device). Nothing runs until `whatif_step`.
    whatif_run: WhatifRun { conf: String, capacity_gib: Option<f64>, sweep: bool } => WhatIfProgress;
    /// Does one slice of the job (the start state, or one replay, a fraction of a second) and
    /// says how far it is; ask again while `running` (a Cancel is read between two).
    whatif_step: WhatifStep => WhatIfProgress;
    /// Stops the job: true when one was running.
    whatif_cancel: WhatifCancel => bool;
    /// Drops the result and its curve over the timelines.
    whatif_clear: WhatifClear => ();
    /// Draws row `row`'s simulated reserved curve over the timelines (negative: none).
    whatif_show: WhatifShow { row: i64 } => Option<WhatIfResult>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_the_shells_json() {
        let r: Request =
            serde_json::from_str(r#"{"method":"set_x_window","x0":1,"x1":2.5}"#).expect("parse");
        assert_eq!(r, Request::SetXWindow { x0: 1.0, x1: 2.5 });
        let r: Request = serde_json::from_str(r#"{"method":"fit"}"#).expect("parse");
        assert_eq!(r, Request::Fit);
        let r: Request = serde_json::from_str(
            r#"{"method":"flame_set","at":{"at":"phase","index":3},"lifetime":false,"frames":"my_code"}"#,
        )
        .expect("parse");
        assert_eq!(
            r,
            Request::FlameSet {
                at: FlameAt::Phase { index: 3 },
                lifetime: false,
                frames: Some(memviz_analysis::flame::FrameMode::MyCode)
            }
        );
        // Without `frames` (an older shell): the default rule.
        let r: Request =
            serde_json::from_str(r#"{"method":"flame_diff","a":0,"b":1}"#).expect("parse");
        assert_eq!(
            r,
            Request::FlameDiff {
                a: 0,
                b: 1,
                frames: None
            }
        );
        let r: Request =
            serde_json::from_str(r#"{"method":"set_view","view":"state"}"#).expect("parse");
        assert_eq!(
            r,
            Request::SetView {
                view: ViewKind::State
            }
        );
        for bad in [
            r#"{"method":"no_such"}"#,
            r#"{"method":"wheel","x":1}"#,
            r#"{"method":"set_view","view":"nope"}"#,
            r#"{"x":1}"#,
            "[]",
        ] {
            assert!(serde_json::from_str::<Request>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn handler_methods_are_named_as_their_requests() {
        assert_eq!(METHOD_NAMES.len(), 52);
        for (method, variant) in METHOD_NAMES {
            assert_eq!(
                *method,
                snake(variant),
                "the table names {variant}'s method {method}"
            );
        }
    }

    #[test]
    fn replies_are_their_values() {
        assert_eq!(
            serde_json::to_string(&Reply::Fit(())).expect("json"),
            "null"
        );
        assert_eq!(
            serde_json::to_string(&Reply::Key(true)).expect("json"),
            "true"
        );
        assert_eq!(
            serde_json::to_string(&Reply::StateOoms(vec![1, 2])).expect("json"),
            "[1,2]"
        );
    }
}
