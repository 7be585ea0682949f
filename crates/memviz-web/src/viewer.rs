//! [`ViewerCore`]: the plain-Rust half of the browser viewer. It streams files into the parser
//! one at a time, keeps every file that opened in one [`App`], and turns the app's answers
//! into the JSON strings the page shows. No GPU and no JS here, so it is tested natively; the
//! wasm [`WebViewer`](crate::WebViewer) adds the canvas and forwards calls.

use memviz_snapshot::Loader;
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
    /// The summary (JSON, text table) of each opened file, by file index, made on first use:
    /// the first frame does not wait for it.
    summaries: Vec<Option<(String, String)>>,
    bytes_read: u64,
    /// A smaller size limit than [`crate::MAX_FILE_BYTES`] (tests: `?max_mb=`).
    max_file_bytes: Option<u64>,
    /// The last file was refused for its size.
    refused_size: bool,
}

impl ViewerCore {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The largest file (and decompressed pickle) the viewer opens.
    #[must_use]
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
            .map_or(crate::MAX_FILE_BYTES, |b| b.min(crate::MAX_FILE_BYTES))
    }

    /// Lowers the size limit to `bytes` (never above [`crate::MAX_FILE_BYTES`]); 0 restores it.
    pub fn set_max_file_bytes(&mut self, bytes: u64) {
        self.max_file_bytes = (bytes > 0).then_some(bytes);
    }

    /// Why a file of `total_bytes` is refused before reading it (its size is over the limit),
    /// or None. Call before [`ViewerCore::begin`].
    #[must_use]
    pub fn size_refusal(&mut self, total_bytes: u64) -> Option<String> {
        let limit = self.max_file_bytes();
        self.refused_size = total_bytes > limit;
        self.refused_size
            .then(|| crate::too_large_message(total_bytes, limit, false))
    }

    /// True when the last file was refused for its size (before or while reading it).
    #[must_use]
    pub fn refused_size(&self) -> bool {
        self.refused_size
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
        self.bytes_read = 0;
        self.refused_size = false;
    }

    /// Feeds the next chunk of the file started by [`ViewerCore::begin`].
    ///
    /// # Errors
    /// The parser's message (with the byte offset), or the size limit when the file (of unknown
    /// size, or gzip-compressed) turns out bigger than [`ViewerCore::max_file_bytes`]; the file
    /// is then dropped.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), String> {
        let limit = self.max_file_bytes();
        let Some(p) = self.pending.as_mut() else {
            return Err("no file is being opened (begin was not called)".to_owned());
        };
        let result = p.loader.push(chunk);
        self.bytes_read = p.loader.bytes_read();
        let pickle = p.loader.pickle_bytes();
        if let Err(err) = result {
            self.pending = None;
            return Err(err.to_string());
        }
        if self.bytes_read > limit || pickle > limit {
            self.pending = None;
            self.refused_size = true;
            return Err(if pickle > self.bytes_read {
                crate::too_large_message(limit, limit, true)
            } else {
                crate::too_large_message(self.bytes_read, limit, false)
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
    }

    /// Ends the file: parses the rest, adds it to the app (it becomes the current file, on its
    /// default device). Its summary is made later, on first use.
    ///
    /// # Errors
    /// The parser's message; the files already open stay as they were.
    pub fn finish(&mut self) -> Result<(), String> {
        let Some(p) = self.pending.take() else {
            return Err("no file is being opened (begin was not called)".to_owned());
        };
        self.bytes_read = p.loader.bytes_read();
        let snap = p.loader.finish().map_err(|e| e.to_string())?;
        self.summaries.push(None);
        let name = self.unique_name(&p.name);
        match self.app.as_mut() {
            Some(app) => app.add_file(&name, snap),
            None => self.app = Some(App::new(&name, snap)),
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
    use super::ViewerCore;

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

    #[test]
    fn files_over_the_size_limit_are_refused_before_and_while_reading() {
        let mut core = ViewerCore::new();
        assert_eq!(core.max_file_bytes(), crate::MAX_FILE_BYTES);
        let big = crate::MAX_FILE_BYTES + 1;
        let msg = core.size_refusal(big).expect("over the limit");
        assert!(core.refused_size());
        assert!(
            msg.contains("1.0GiB") && msg.contains("memviz summary FILE") && msg.contains("4 GiB"),
            "{msg}"
        );
        assert_eq!(core.size_refusal(crate::MAX_FILE_BYTES), None);
        assert!(!core.refused_size());
        // A test override only lowers the limit.
        core.set_max_file_bytes(u64::MAX);
        assert_eq!(core.max_file_bytes(), crate::MAX_FILE_BYTES);
        core.set_max_file_bytes(1 << 20);
        assert_eq!(core.max_file_bytes(), 1 << 20);
        let demo = demo_bytes();
        let msg = core.size_refusal(demo.len() as u64).expect("demo > 1 MiB");
        assert!(msg.contains("1.0MiB"), "{msg}");
        // Of unknown size (a download without Content-Length), or gzip: refused while reading.
        core.begin("demo.pickle", 0);
        let err = demo
            .chunks(1 << 16)
            .try_for_each(|c| core.push(c))
            .expect_err("over 1 MiB");
        assert!(err.contains("more than the 1.0MiB"), "{err}");
        assert!(core.refused_size());
        let gz = gzip(&demo);
        assert!(
            gz.len() < 1 << 20,
            "the gzip is under the limit: {}",
            gz.len()
        );
        assert_eq!(core.size_refusal(gz.len() as u64), None);
        core.begin("demo.pickle.gz", gz.len() as u64);
        let err = gz
            .chunks(1 << 16)
            .try_for_each(|c| core.push(c))
            .expect_err("decompresses to over 1 MiB");
        assert!(err.contains("decompresses to more than"), "{err}");
        assert!(core.app_ref().is_none(), "nothing opened");
        core.set_max_file_bytes(0);
        assert_eq!(core.max_file_bytes(), crate::MAX_FILE_BYTES);
        core.begin("demo.pickle", 0);
        core.push(&demo).expect("demo under the default limit");
        core.finish().expect("opens");
        assert!(!core.refused_size());
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
