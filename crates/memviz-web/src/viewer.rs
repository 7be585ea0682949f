//! [`ViewerCore`]: the plain-Rust half of the browser viewer. It streams files into the parser
//! one at a time, keeps every file that opened in one [`App`], and answers the shell's
//! [`Request`]s ([`ViewerCore::request`]: the one dispatch of the page's requests). No GPU and
//! no JS here, so it is tested natively; the wasm [`WebViewer`](crate::WebViewer) adds the
//! canvas (and the `resize` request) and turns the [`Reply`] into JSON.

use memviz_snapshot::{LoadErrorKind, Loader};

use crate::memory::Memory;
use memviz_analysis::summary::Summary;
use memviz_viewer::answer::{FileRow, Panel};
use memviz_viewer::request::{dispatch, Host};
use memviz_viewer::{App, Reply, Request};

/// A file being streamed in.
struct Pending {
    name: String,
    loader: Loader,
}

/// What kind of failure ended an open: the page branches on it (never on the message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenErrorKind {
    /// The loader's kinds (`memviz_snapshot::LoadErrorKind`).
    Load(LoadErrorKind),
    /// A call out of order: `push` / `finish` without a file begun, or after it ended.
    NoFile,
}

impl OpenErrorKind {
    /// The page's name of the kind: the loader's (`empty`, `truncated`, `not_pickle`,
    /// `checkpoint`, `not_snapshot`, `malformed`, `too_big`) or `no_file`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            OpenErrorKind::Load(k) => match k {
                LoadErrorKind::Empty => "empty",
                LoadErrorKind::Truncated => "truncated",
                LoadErrorKind::NotPickle => "not_pickle",
                LoadErrorKind::Checkpoint => "checkpoint",
                LoadErrorKind::NotSnapshot => "not_snapshot",
                LoadErrorKind::Malformed => "malformed",
                LoadErrorKind::TooBig => "too_big",
            },
            OpenErrorKind::NoFile => "no_file",
        }
    }
}

/// Why a file could not be opened: its kind and the sentence the page shows.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct OpenError {
    pub kind: OpenErrorKind,
    pub message: String,
}

impl OpenError {
    fn no_file() -> Self {
        Self::out_of_order("no file is being opened (begin was not called)")
    }

    /// A call out of order (no file begun, or it already ended): [`OpenErrorKind::NoFile`].
    #[must_use]
    pub fn out_of_order(message: &str) -> Self {
        OpenError {
            kind: OpenErrorKind::NoFile,
            message: message.to_owned(),
        }
    }
}

impl From<memviz_snapshot::LoadError> for OpenError {
    fn from(e: memviz_snapshot::LoadError) -> Self {
        OpenError {
            kind: OpenErrorKind::Load(e.kind),
            message: e.to_string(),
        }
    }
}

/// A file's summary, its JSON and its text table.
struct Summarized {
    summary: Summary,
    json: String,
    table: String,
}

/// Files, the file being loaded and the timeline app.
#[derive(Default)]
pub struct ViewerCore {
    app: Option<App>,
    pending: Option<Pending>,
    /// A file parsed by [`ViewerCore::finish_parse`], not yet added to the app.
    parsed: Option<(String, memviz_snapshot::Snapshot)>,
    /// The summary (with its JSON and text table) of each opened file, by file index, made on
    /// first use: the first frame does not wait for it.
    summaries: Vec<Option<Summarized>>,
    bytes_read: u64,
    /// How much memory is in use and how much the page may use (crate::memory).
    memory: Memory,
    /// Memory in use when the current file began (the other files, the viewer).
    used_before: u64,
    /// The current file's size in bytes (0: unknown).
    total_bytes: u64,
    /// The last file was refused because it cannot fit in memory.
    refused_memory: bool,
}

impl ViewerCore {
    /// A viewer deciding what fits with the page's memory (crate::memory::page_memory).
    #[must_use]
    pub fn new() -> Self {
        ViewerCore {
            memory: crate::memory::page_memory(),
            ..Self::default()
        }
    }

    /// A viewer deciding what fits with `memory` (tests install their own probe).
    #[must_use]
    pub fn with_memory(memory: Memory) -> Self {
        ViewerCore {
            memory,
            ..Self::default()
        }
    }

    /// The probe and budget this viewer decides with.
    #[must_use]
    pub fn memory(&self) -> Memory {
        self.memory
    }

    /// Lowers the memory budget to `bytes` (tests: `?mem_limit_mb=`); never above
    /// [`crate::memory::PAGE_BUDGET`]; 0 restores it.
    pub fn set_memory_budget(&mut self, bytes: u64) {
        self.memory.budget = if bytes == 0 {
            crate::memory::PAGE_BUDGET
        } else {
            bytes.min(crate::memory::PAGE_BUDGET)
        };
    }

    /// True when the last file was refused because it cannot fit in memory.
    #[must_use]
    pub fn refused_memory(&self) -> bool {
        self.refused_memory
    }

    /// Starts a new file (dropping one still loading). `total_bytes` (0 when unknown) sizes the
    /// parser's tables once.
    pub fn begin(&mut self, name: &str, total_bytes: u64) {
        let loader = if total_bytes > 0 {
            Loader::new().with_size_hint(total_bytes)
        } else {
            Loader::new()
        };
        self.pending = Some(Pending {
            name: name.to_owned(),
            loader,
        });
        self.parsed = None;
        self.bytes_read = 0;
        self.total_bytes = total_bytes;
        self.used_before = self.memory.used();
        self.refused_memory = false;
    }

    /// Feeds the next chunk of the file started by [`ViewerCore::begin`].
    ///
    /// # Errors
    /// The parser's message (with the byte offset), or, when the memory the file is projected
    /// to need once open passes the budget ([`Memory::projected_open_bytes`]), why it cannot
    /// fit; the file is then dropped.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), OpenError> {
        let Some(p) = self.pending.as_mut() else {
            return Err(OpenError::no_file());
        };
        crate::memory::grow_ahead(chunk.len() as u64 * 4);
        let result = p.loader.push(chunk);
        self.bytes_read = p.loader.bytes_read();
        if let Err(err) = result {
            self.pending = None;
            return Err(err.into());
        }
        let projected = crate::memory::projected_open_bytes(
            &self.memory,
            self.used_before,
            p.loader.trace_entries(),
            self.bytes_read,
            self.total_bytes,
        );
        if let Some(needed) = projected.filter(|&n| n > self.memory.budget) {
            self.pending = None;
            self.refused_memory = true;
            return Err(OpenError {
                kind: OpenErrorKind::Load(LoadErrorKind::TooBig),
                message: crate::memory::too_big_message(
                    needed,
                    self.bytes_read,
                    self.memory.budget,
                    self.used_before,
                ),
            });
        }
        Ok(())
    }

    /// Bytes of the current file accepted so far.
    #[must_use]
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Drops the file being loaded (the files already open stay).
    pub fn cancel(&mut self) {
        self.pending = None;
        self.parsed = None;
    }

    /// Ends the file's parse: the rest of the bytes and the model's last tables. The file is
    /// added to the app by [`ViewerCore::finish`] (a separate step, so the page can show
    /// progress between the two).
    ///
    /// # Errors
    /// The parser's message; the files already open stay as they were.
    pub fn finish_parse(&mut self) -> Result<(), OpenError> {
        let Some(p) = self.pending.take() else {
            return Err(OpenError::no_file());
        };
        self.bytes_read = p.loader.bytes_read();
        let snap = p.loader.finish()?;
        self.parsed = Some((p.name, snap));
        Ok(())
    }

    /// Ends the file: parses the rest (unless [`ViewerCore::finish_parse`] did), adds it to the
    /// app (it becomes the current file, on its default device). Its summary is made later, on
    /// first use.
    ///
    /// # Errors
    /// The parser's message; the files already open stay as they were.
    pub fn finish(&mut self) -> Result<(), OpenError> {
        if self.pending.is_some() {
            self.finish_parse()?;
        }
        let Some((name, snap)) = self.parsed.take() else {
            return Err(OpenError::no_file());
        };
        self.summaries.push(None);
        let name = self.unique_name(&name);
        match self.app.as_mut() {
            Some(app) => app.add_file(&name, snap),
            None => self.app = Some(App::with_memory(&name, snap, self.memory)),
        }
        Ok(())
    }

    /// `name`, or `name (2)`, `name (3)` … when a file of that name is already open.
    fn unique_name(&self, name: &str) -> String {
        let taken = |n: &str| {
            self.app
                .as_ref()
                .is_some_and(|a| a.file_names().contains(&n))
        };
        if !taken(name) {
            return name.to_owned();
        }
        (2..)
            .map(|i| format!("{name} ({i})"))
            .find(|n| !taken(n))
            .unwrap_or_else(|| name.to_owned())
    }

    /// The app, once a file opened.
    pub fn app(&mut self) -> Option<&mut App> {
        self.app.as_mut()
    }

    /// The app, read-only.
    #[must_use]
    pub fn app_ref(&self) -> Option<&App> {
        self.app.as_ref()
    }

    /// The index of the current file (0 before the first).
    fn current(&self) -> usize {
        self.app.as_ref().map_or(0, App::current_file)
    }

    /// The summary of the current file, made once.
    fn summary(&mut self) -> Option<&Summarized> {
        self.summary_of(self.current())
    }

    /// The summary of file `i`, made once.
    fn summary_of(&mut self, i: usize) -> Option<&Summarized> {
        let snap = self.app.as_ref()?.file_snapshot(i)?;
        let slot = self.summaries.get_mut(i)?;
        if slot.is_none() {
            let summary = memviz_analysis::summary::summarize(snap);
            *slot = Some(Summarized {
                json: summary.to_json(),
                table: summary.to_table(),
                summary,
            });
        }
        slot.as_ref()
    }

    /// Every opened file side by side (e.g. the ranks of one job): its default device's
    /// (the longest trace) peak, final and reserved bytes.
    pub fn files(&mut self) -> Vec<FileRow> {
        use memviz_analysis::format::size_short;
        let n = self.app.as_ref().map_or(0, |a| a.file_names().len());
        let current = self.current();
        let mut out = Vec::new();
        for i in 0..n {
            let Some((name, device)) = self.app.as_ref().and_then(|a| {
                let snap = a.file_snapshot(i)?;
                Some((a.file_names().get(i)?.to_string(), snap.default_device()))
            }) else {
                continue;
            };
            let dev = self
                .summary_of(i)
                .and_then(|s| s.summary.devices.iter().find(|d| d.device == device));
            let (peak, fin, reserved) = dev.map_or((0, 0, 0), |d| {
                (d.peak_live_bytes, d.final_live_bytes, d.reserved_bytes)
            });
            out.push(FileRow {
                file: i,
                name,
                device,
                peak_live_bytes: peak,
                final_live_bytes: fin,
                reserved_bytes: reserved,
                peak: size_short(peak),
                final_: size_short(fin),
                reserved: size_short(reserved),
                current: i == current,
            });
        }
        out
    }

    /// The summary table of the current file (empty before the first file).
    pub fn summary_table(&mut self) -> String {
        self.summary().map(|s| s.table.clone()).unwrap_or_default()
    }

    /// The summary JSON of the current file (empty before the first file).
    pub fn summary_json(&mut self) -> String {
        self.summary().map(|s| s.json.clone()).unwrap_or_default()
    }

    /// Everything the shell shows around the canvas (empty before the first file).
    #[must_use]
    pub fn panel(&self, legend_entries: usize) -> Panel {
        let Some(app) = self.app.as_ref() else {
            return Panel::default();
        };
        Panel {
            notice: self.notice(),
            ..app.panel(legend_entries)
        }
    }

    /// The notice the page shows above the current file (not an error): when the file ended
    /// before its STOP and what was read before the cut is shown, the truncation warning;
    /// otherwise empty.
    #[must_use]
    pub fn notice(&self) -> String {
        let truncated = self.truncation_notice();
        match self.app.as_ref().and_then(App::unavailable) {
            Some(why) if truncated.is_empty() => format!("{why}."),
            Some(why) => format!("{truncated} {why}."),
            None => truncated,
        }
    }

    /// Why the current file is incomplete, when it was cut before its end; else empty.
    fn truncation_notice(&self) -> String {
        self.app
            .as_ref()
            .and_then(|a| a.file_snapshot(a.current_file()))
            .and_then(|s| s.truncation_warning())
            .map(|w| {
                let w = w
                    .strip_prefix(memviz_snapshot::TRUNCATED_WARNING)
                    .unwrap_or(w)
                    .trim();
                format!(
                    "this file is incomplete (truncated): {}.",
                    w.trim_end_matches('.')
                )
            })
            .unwrap_or_default()
    }

    /// Answers one request of the shell through the request table's one dispatch
    /// ([`memviz_viewer::request::dispatch`]; [`crate::WebViewer`] dispatches through itself
    /// to resize the canvas too).
    pub fn request(&mut self, req: Request) -> Reply {
        dispatch(self, req)
    }
}

/// The requests answered here, where the files are (`@host` in the request table); the others
/// go to the app, or before the first file to an app without files (`null` ticks and state,
/// empty lists).
impl Host for ViewerCore {
    type App = App;

    fn with_app(&mut self, answer: impl FnOnce(&mut App) -> Reply) -> Reply {
        match self.app.as_mut() {
            Some(app) => Host::with_app(app, answer),
            None => Host::with_app(&mut App::new_empty(), answer),
        }
    }

    fn resize(&mut self, css_w: f64, css_h: f64, dpr: f64) {
        if let Some(app) = self.app.as_mut() {
            Host::resize(app, css_w, css_h, dpr);
        }
    }

    fn panel(&mut self, legend_entries: u32) -> Panel {
        ViewerCore::panel(self, legend_entries as usize)
    }

    fn summary_table(&mut self) -> String {
        ViewerCore::summary_table(self)
    }

    fn files(&mut self) -> Vec<FileRow> {
        ViewerCore::files(self)
    }
}

#[cfg(test)]
mod tests;
