//! [`ViewerCore`]: the plain-Rust half of the browser viewer. It streams files into the parser
//! one at a time, keeps every file that opened in one [`App`], and answers the shell's
//! [`Request`]s ([`ViewerCore::request`]: the one dispatch of the page's requests). No GPU and
//! no JS here, so it is tested natively; the wasm [`WebViewer`](crate::WebViewer) adds the
//! canvas (and the `resize` request) and turns the [`Reply`] into JSON.

use memviz_snapshot::{LoadErrorKind, Loader};

use crate::memory::Memory;
use memviz_analysis::summary::Summary;
use memviz_viewer::answer::{FileRow, Panel};
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

    /// Answers one request of the shell: the one dispatch of the page's requests (the
    /// `resize` request also resizes the canvas, which [`crate::WebViewer`] does first).
    pub fn request(&mut self, req: Request) -> Reply {
        use Request as Q;
        match req {
            Q::Panel { legend_entries } => {
                return Reply::Panel(self.panel(legend_entries as usize))
            }
            Q::SummaryTable => return Reply::SummaryTable(self.summary_table()),
            Q::Files => return Reply::Files(self.files()),
            _ => {}
        }
        match self.app.as_mut() {
            Some(app) => app.request(req),
            None => match req {
                Q::Ticks => Reply::Ticks(None),
                Q::State => Reply::State(None),
                // Answers as an app without files does.
                req => App::new_empty().request(req),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Memory, ViewerCore};

    /// The demo snapshot, generated once per test binary by the project's own generator (the
    /// tests run in parallel: one writer, then every test reads the finished bytes).
    fn demo_bytes() -> Vec<u8> {
        static DEMO: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        DEMO.get_or_init(|| {
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            let dir = root.join("target/test-fixtures/memviz-web");
            std::fs::create_dir_all(&dir).expect("mkdir");
            let path = dir.join(format!("demo-{}.pickle", std::process::id()));
            let status = std::process::Command::new("python3")
                .arg(root.join("tests/fixtures/generate.py"))
                .arg("demo")
                .arg(&path)
                .status()
                .expect("python3 runs");
            assert!(status.success(), "generate.py demo failed");
            std::fs::read(&path).expect("demo written")
        })
        .clone()
    }

    #[test]
    fn a_bad_file_keeps_the_good_one() {
        let mut core = ViewerCore::new();
        assert_eq!(
            core.push(b"x").map_err(|e| e.kind),
            Err(super::OpenErrorKind::NoFile),
            "push before begin"
        );
        let good = demo_bytes();
        core.begin("good.pickle", good.len() as u64);
        for chunk in good.chunks(1000) {
            core.push(chunk).expect("good chunk");
        }
        core.finish().expect("good file");
        let summary = core.summary_json();
        assert!(summary.contains("\"devices\""));
        assert_eq!(core.bytes_read(), good.len() as u64);
        assert!(!core.summary_table().is_empty());

        core.begin("bad.pickle", 0);
        let err = core
            .push(b"definitely not a pickle")
            .and_then(|()| core.finish().map(|_| ()))
            .expect_err("garbage");
        assert!(!err.message.is_empty());
        assert_eq!(err.kind.name(), "not_pickle", "{err}");
        let panel = core.panel(5);
        assert_eq!(panel.files, ["good.pickle"]);
        assert!(panel.ticks.is_some_and(|t| !t.y.is_empty()));

        core.begin("good.pickle", 0);
        core.push(&good).expect("second copy");
        core.finish().expect("second copy opens");
        let panel = core.panel(5);
        assert_eq!(panel.file, Some(1));
        assert_eq!(panel.files, ["good.pickle", "good.pickle (2)"]);
        assert_eq!(core.summary_json(), summary);
        assert!(core.app().is_some_and(|a| a.select_file(0)));
        assert_eq!(core.summary_json(), summary);
    }

    /// `bytes` gzip-compressed (by python3, as the fixtures are made).
    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut child = std::process::Command::new("python3")
            .args([
                "-c",
                "import gzip, sys; sys.stdout.buffer.write(gzip.compress(sys.stdin.buffer.read(), 9))",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut stdin = child.stdin.take().expect("stdin");
        let input = bytes.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&input).expect("write"));
        let out = child.wait_with_output().expect("gzip output");
        writer.join().expect("writer");
        assert!(out.status.success());
        out.stdout
    }

    /// A memory probe for tests: the bytes set in `FAKE_USED` (per thread).
    fn fake_used() -> u64 {
        FAKE_USED.with(std::cell::Cell::get)
    }
    thread_local! {
        static FAKE_USED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    #[test]
    fn files_are_refused_by_projected_memory_not_by_size() {
        use crate::memory::OPEN_BYTES_PER_ENTRY;
        let demo = demo_bytes();
        let entries = memviz_snapshot::load_slice(&demo)
            .expect("demo")
            .traces
            .iter()
            .map(|t| t.len() as u64)
            .sum::<u64>();
        let mut core = ViewerCore::with_memory(Memory {
            used: fake_used,
            budget: 1 << 30,
        });
        // A file announced as 3 GiB: too little of it read to tell, nothing refused.
        FAKE_USED.with(|u| u.set(100 << 20));
        core.begin("huge.pickle", 3 << 30);
        for c in demo.chunks(1 << 16) {
            core.push(c).expect("too little read to tell");
        }
        assert!(!core.refused_memory());
        // Read whole, its entries need more than is left: refused with the estimate and the
        // CLI.
        let need = (100 << 20) + entries * OPEN_BYTES_PER_ENTRY;
        core.set_memory_budget(need - 1);
        core.begin("big.pickle", demo.len() as u64);
        let err = core.push(&demo).expect_err("projected over the budget");
        assert!(core.refused_memory());
        assert_eq!(err.kind.name(), "too_big");
        assert!(
            err.message.contains("needs about") && err.message.contains("memviz summary FILE"),
            "{err}"
        );
        assert!(core.app_ref().is_none(), "nothing opened");
        // With a byte more it opens.
        core.set_memory_budget(need);
        core.begin("big.pickle", demo.len() as u64);
        core.push(&demo).expect("fits exactly");
        core.finish().expect("opens");
        assert!(!core.refused_memory());
        // A budget override only lowers the budget; 0 restores it.
        core.set_memory_budget(u64::MAX);
        assert_eq!(core.memory().budget, crate::memory::PAGE_BUDGET);
        core.set_memory_budget(0);
        assert_eq!(core.memory().budget, crate::memory::PAGE_BUDGET);
        // Of unknown size: what is read so far.
        FAKE_USED.with(|u| u.set(0));
        core.set_memory_budget(1 << 20);
        core.begin("demo.pickle", 0);
        let err = core.push(&demo).expect_err("over 1 MiB");
        assert!(err.message.contains("needs about"), "{err}");
        // Within the budget, a file of any size opens, gzip-compressed too.
        core.set_memory_budget(0);
        core.begin("demo.pickle", 0);
        core.push(&demo).expect("demo fits");
        core.finish().expect("opens");
        let gz = gzip(&demo);
        core.begin("demo.pickle.gz", gz.len() as u64);
        core.push(&gz).expect("the gzip fits");
        core.finish().expect("opens");
        assert!(!core.refused_memory());
        assert_eq!(core.notice(), "");
    }

    #[test]
    fn a_cut_file_opens_with_a_notice() {
        let demo = demo_bytes();
        let mut core = ViewerCore::new();
        core.begin("cut.pickle", 0);
        core.push(&demo[..demo.len() * 3 / 5]).expect("prefix");
        core.finish().expect("a partial snapshot opens");
        let notice = core.notice();
        assert!(
            notice.starts_with("this file is incomplete (truncated): the pickle ends after")
                && notice.contains("trace events read before the cut"),
            "{notice}"
        );
        assert_eq!(core.panel(3).notice, notice);
        // A whole file after it: its own notice is empty; back on the cut file, it returns.
        core.begin("whole.pickle", 0);
        core.push(&demo).expect("whole");
        core.finish().expect("whole opens");
        assert_eq!(core.notice(), "");
        assert!(core.app().is_some_and(|a| a.select_file(0)));
        assert_eq!(core.notice(), notice);
    }

    /// The shell's requests, as JSON text, through the one dispatch: each gets its typed answer,
    /// and before the first file the answers say there is nothing.
    #[test]
    fn requests_are_answered_in_one_place() {
        use memviz_viewer::{Reply, Request};
        let ask = |core: &mut ViewerCore, json: &str| {
            let req: Request = serde_json::from_str(json).expect("a request");
            serde_json::to_value(core.request(req)).expect("an answer")
        };
        let mut core = ViewerCore::new();
        assert_eq!(
            ask(&mut core, r#"{"method":"state"}"#),
            serde_json::Value::Null
        );
        assert_eq!(
            ask(&mut core, r#"{"method":"state_ooms"}"#),
            serde_json::json!([])
        );
        assert_eq!(
            ask(
                &mut core,
                r#"{"method":"state_search","query":"x","from":0,"forward":true}"#
            ),
            -1
        );
        core.begin("demo.pickle", 0);
        core.push(&demo_bytes()).expect("demo");
        core.finish().expect("demo opens");
        let Reply::State(Some(state)) = core.request(Request::State) else {
            panic!("a state after the first file");
        };
        assert_eq!(state.files, ["demo.pickle"]);
        assert!(state.timeline.elements > 0);
        let Reply::Files(files) = core.request(Request::Files) else {
            panic!("files");
        };
        assert_eq!(files.len(), 1);
        assert!(files[0].peak_live_bytes > 0 && files[0].current);
        let Reply::Panel(panel) = core.request(Request::Panel { legend_entries: 4 }) else {
            panic!("panel");
        };
        assert!(!panel.legend.is_empty() && panel.legend.len() <= 4);
        assert_eq!(
            ask(&mut core, r#"{"method":"set_view","view":"state"}"#),
            serde_json::json!(true)
        );
        let Reply::StateSelect(Some(sel)) = core.request(Request::StateSelect { k: -1 }) else {
            panic!("a selection in the State History");
        };
        assert!(sel.count > 0 && sel.event == Some(sel.count - 1), "{sel:?}");
    }

    #[test]
    fn cancel_drops_only_the_pending_file() {
        let mut core = ViewerCore::new();
        core.begin("x", 0);
        core.push(&demo_bytes()[..10]).expect("prefix");
        core.cancel();
        assert!(core.finish().is_err());
        assert!(core.app_ref().is_none());
        assert_eq!(core.panel(3), memviz_viewer::answer::Panel::default());
    }
}
