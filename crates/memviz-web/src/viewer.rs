//! [`ViewerCore`]: the plain-Rust half of the browser viewer. It streams files into the parser
//! one at a time, keeps every file that opened in one [`App`], and turns the app's answers
//! into the JSON strings the page shows. No GPU and no JS here, so it is tested natively; the
//! wasm [`WebViewer`](crate::WebViewer) adds the canvas and forwards calls.

use memviz_snapshot::Loader;

use crate::memory::Memory;
use memviz_viewer::App;

/// A file being streamed in.
struct Pending {
    name: String,
    loader: Loader,
}

/// Files, the file being loaded and the timeline app.
#[derive(Default)]
pub struct ViewerCore {
    app: Option<App>,
    pending: Option<Pending>,
    /// A file parsed by [`ViewerCore::finish_parse`], not yet added to the app.
    parsed: Option<(String, memviz_snapshot::Snapshot)>,
    /// The summary (JSON, text table) of each opened file, by file index, made on first use:
    /// the first frame does not wait for it.
    summaries: Vec<Option<(String, String)>>,
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
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), String> {
        let Some(p) = self.pending.as_mut() else {
            return Err("no file is being opened (begin was not called)".to_owned());
        };
        crate::memory::grow_ahead(chunk.len() as u64 * 4);
        let result = p.loader.push(chunk);
        self.bytes_read = p.loader.bytes_read();
        if let Err(err) = result {
            self.pending = None;
            return Err(err.to_string());
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
            return Err(crate::memory::too_big_message(
                needed,
                self.bytes_read,
                self.memory.budget,
                self.used_before,
            ));
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
    pub fn finish_parse(&mut self) -> Result<(), String> {
        let Some(p) = self.pending.take() else {
            return Err("no file is being opened (begin was not called)".to_owned());
        };
        self.bytes_read = p.loader.bytes_read();
        let snap = p.loader.finish().map_err(|e| e.to_string())?;
        self.parsed = Some((p.name, snap));
        Ok(())
    }

    /// Ends the file: parses the rest (unless [`ViewerCore::finish_parse`] did), adds it to the
    /// app (it becomes the current file, on its default device). Its summary is made later, on
    /// first use.
    ///
    /// # Errors
    /// The parser's message; the files already open stay as they were.
    pub fn finish(&mut self) -> Result<(), String> {
        if self.pending.is_some() {
            self.finish_parse()?;
        }
        let Some((name, snap)) = self.parsed.take() else {
            return Err("no file is being opened (begin was not called)".to_owned());
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

    /// The summary of the current file as (JSON, text table), made once.
    fn summary(&mut self) -> Option<&(String, String)> {
        self.summary_of(self.current())
    }

    /// The summary of file `i` as (JSON, text table), made once.
    fn summary_of(&mut self, i: usize) -> Option<&(String, String)> {
        let snap = self.app.as_ref()?.file_snapshot(i)?;
        let slot = self.summaries.get_mut(i)?;
        if slot.is_none() {
            let summary = memviz_analysis::summary::summarize(snap);
            *slot = Some((summary.to_json(), summary.to_table()));
        }
        slot.as_ref()
    }

    /// Every opened file side by side (e.g. the ranks of one job), JSON `[{file, name, device,
    /// peak_live_bytes, final_live_bytes, reserved_bytes, peak, final, reserved, current}]`
    /// for each file's default device (the longest trace).
    pub fn files_json(&mut self) -> String {
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
            let summary: serde_json::Value = self
                .summary_of(i)
                .and_then(|(j, _)| serde_json::from_str(j).ok())
                .unwrap_or(serde_json::Value::Null);
            let dev = summary
                .get("devices")
                .and_then(|d| d.as_array())
                .and_then(|d| {
                    d.iter().find(|x| {
                        x.get("device").and_then(serde_json::Value::as_i64) == Some(device)
                    })
                });
            let num = |k: &str| {
                dev.and_then(|d| d.get(k))
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0)
            };
            out.push(serde_json::json!({
                "file": i,
                "name": name,
                "device": device,
                "peak_live_bytes": num("peak_live_bytes"),
                "final_live_bytes": num("final_live_bytes"),
                "reserved_bytes": num("reserved_bytes"),
                "peak": size_short(num("peak_live_bytes")),
                "final": size_short(num("final_live_bytes")),
                "reserved": size_short(num("reserved_bytes")),
                "current": i == current,
            }));
        }
        serde_json::Value::from(out).to_string()
    }

    /// The summary table of the current file (empty before the first file).
    pub fn summary_table(&mut self) -> String {
        self.summary().map(|s| s.1.clone()).unwrap_or_default()
    }

    /// The summary JSON of the current file (empty before the first file).
    pub fn summary_json(&mut self) -> String {
        self.summary().map(|s| s.0.clone()).unwrap_or_default()
    }

    /// Everything the shell shows around the canvas, JSON:
    /// `{"files":[…], "file":i, "devices":[…], "legend":[…], "ticks":{…}, "state":{…}}`
    /// (`null` fields before the first file).
    #[must_use]
    pub fn panel_json(&self, legend_entries: usize) -> String {
        let Some(app) = self.app.as_ref() else {
            return r#"{"files":[],"file":null,"devices":[],"legend":[],"ticks":null,"state":null}"#
                .to_owned();
        };
        let state: serde_json::Value =
            serde_json::from_str(&app.state_json()).unwrap_or(serde_json::Value::Null);
        let devices: serde_json::Value =
            serde_json::from_str(&app.devices()).unwrap_or(serde_json::Value::Null);
        let mut legend: serde_json::Value =
            serde_json::from_str(&app.legend(legend_entries)).unwrap_or(serde_json::Value::Null);
        // Sizes are formatted here so that the shell only places text.
        if let Some(entries) = legend.as_array_mut() {
            for e in entries {
                let bytes = e
                    .get("bytes")
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0);
                if let Some(obj) = e.as_object_mut() {
                    obj.insert(
                        "size".into(),
                        memviz_analysis::format::size_short(bytes).into(),
                    );
                }
            }
        }
        serde_json::json!({
            "files": app.file_names(),
            "file": state.get("file"),
            "devices": devices,
            "legend": legend,
            "ticks": app.axis_ticks(),
            "peak": memviz_analysis::format::size_short(
                state.get("peak_bytes").and_then(serde_json::Value::as_u64).unwrap_or(0)
            ),
            "state": state,
            "view": app.view().name(),
            "settings": serde_json::from_str::<serde_json::Value>(&app.allocator_settings())
                .unwrap_or(serde_json::Value::Null),
            "notice": self.notice(),
        })
        .to_string()
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

    /// The axis ticks for the current camera, JSON (`null` before the first file).
    #[must_use]
    pub fn ticks_json(&self) -> String {
        match self.app.as_ref() {
            Some(app) => serde_json::to_string(&app.axis_ticks()).unwrap_or_else(|_| "null".into()),
            None => "null".to_owned(),
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
        assert!(core.push(b"x").is_err(), "push before begin");
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
        assert!(!err.is_empty());
        let panel: serde_json::Value =
            serde_json::from_str(&core.panel_json(5)).expect("panel JSON");
        assert_eq!(panel["files"], serde_json::json!(["good.pickle"]));
        assert!(panel["ticks"]["y"]
            .as_array()
            .is_some_and(|t| !t.is_empty()));

        core.begin("good.pickle", 0);
        core.push(&good).expect("second copy");
        core.finish().expect("second copy opens");
        let panel: serde_json::Value =
            serde_json::from_str(&core.panel_json(5)).expect("panel JSON");
        assert_eq!(panel["file"], 1);
        assert_eq!(
            panel["files"],
            serde_json::json!(["good.pickle", "good.pickle (2)"])
        );
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
        assert!(
            err.contains("needs about") && err.contains("memviz summary FILE"),
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
        assert!(err.contains("needs about"), "{err}");
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
        let panel: serde_json::Value =
            serde_json::from_str(&core.panel_json(3)).expect("panel JSON");
        assert_eq!(panel["notice"], serde_json::json!(notice));
        // A whole file after it: its own notice is empty; back on the cut file, it returns.
        core.begin("whole.pickle", 0);
        core.push(&demo).expect("whole");
        core.finish().expect("whole opens");
        assert_eq!(core.notice(), "");
        assert!(core.app().is_some_and(|a| a.select_file(0)));
        assert_eq!(core.notice(), notice);
    }

    #[test]
    fn cancel_drops_only_the_pending_file() {
        let mut core = ViewerCore::new();
        core.begin("x", 0);
        core.push(&demo_bytes()[..10]).expect("prefix");
        core.cancel();
        assert!(core.finish().is_err());
        assert!(core.app_ref().is_none());
        assert!(core.panel_json(3).contains("\"files\":[]"));
    }
}
