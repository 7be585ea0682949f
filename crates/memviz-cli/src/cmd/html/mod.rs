//! `memviz html FILE -o OUT.html [--dist DIR] [--title T]`: one self-contained HTML file holding
//! the viewer (the body of `dist/index.html`, its CSS, the JS modules, the worker, the
//! wasm-bindgen glue and the `.wasm`) and the snapshot, which opens offline from a `file://`
//! URL and shows the snapshot by itself (see docs/report.md).
//!
//! Layout of the report: a Content-Security-Policy meta that allows no network at all; the CSS
//! in a `<style>`; the body markup; three data blocks (`#memviz-report`: a JSON manifest,
//! `#memviz-assets`: base64 of gzip(wasm, glue and module sources), `#memviz-snapshot`: base64
//! of the snapshot, gzip-compressed); and one inline bootstrap script (allowed by its SHA-256 in
//! the CSP) that turns the assets into `blob:` URLs, sets `globalThis.MEMVIZ_ASSETS` (read by
//! www/js/bridge.js), imports the entry module and opens the snapshot with
//! `window.memviz.open(File)`.
//!
//! The JS modules import each other by relative specifiers (`from './bridge.js'`), which mean
//! nothing under a `blob:` URL: each module's specifier literals are found by a small JS lexer
//! (comments, strings, templates and regex literals skipped) and the page fills in the blob URL
//! of the imported module, leaves first. Import forms that cannot be rewritten fail here.

use crate::cli::HtmlArgs;
use crate::load;
use crate::out::Done;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::collections::HashMap;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

mod error;
mod js;
mod scan;
use error::HtmlError;
use js::*;
use scan::*;

const BUILD_HINT: &str =
    "build the viewer first: `trunk --config trunk.toml build --release --offline` (or `cargo xtask serve`), or pass --dist DIR";

/// The worker module, relative to dist/ (bridge.js starts `new URL('./worker.js', …)`).
const WORKER: &str = "js/worker.js";

/// The inline bootstrap, www/report/bootstrap.js (a classic script, linted by `cargo xtask
/// lint-js`): reads the data blocks, makes blob: URLs, starts the viewer, opens the snapshot. The
/// CSP allows it, and no other inline script, by the SHA-256 of these exact bytes.
const BOOTSTRAP: &str = include_str!("../../../../../www/report/bootstrap.js");

/// Runs `memviz html`.
pub fn run(a: &HtmlArgs) -> Done {
    let (file, out) = (a.file.as_str(), a.output.as_str());
    let dist = find_dist(a.dist.as_deref())?;
    // Parse the whole file: a report of a file the viewer cannot open is no use.
    load(file)?;
    let viewer = Viewer::read(&dist)?;
    let raw = crate::read_whole(file)?;
    let raw_len = raw.len();
    // The viewer reads gzip itself: a compressed file goes in as it is.
    let snapshot = if raw.starts_with(&[0x1f, 0x8b]) {
        raw
    } else {
        gzip(&raw, Compression::default())?
    };
    let name = Path::new(file)
        .file_name()
        .map_or_else(|| file.to_string(), |n| n.to_string_lossy().into_owned());
    let title = a.title.clone().unwrap_or_else(|| format!("memviz: {name}"));
    let report = Report {
        viewer: &viewer,
        title: &title,
        file_name: &name,
        file_bytes: raw_len,
        snapshot: &snapshot,
    };
    // Written beside OUT and renamed into place: never a half-written report under its name.
    let out_path = Path::new(out);
    let tmp = out_path.with_file_name(format!(
        ".{}.tmp-{}",
        out_path
            .file_name()
            .map_or_else(|| "report".into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    let total = report
        .write(&tmp)
        .and_then(|n| fs::rename(&tmp, out_path).map(|()| n))
        .map_err(|source| {
            let _ = fs::remove_file(&tmp);
            HtmlError::Write {
                out: out.to_string(),
                source,
            }
        })?;
    let mut stdout = crate::out::stdout();
    writeln!(
        stdout,
        "{out}: {} (viewer from {}: wasm {} + JS {}, {} gzip-compressed; snapshot {}, {} gzip-compressed)",
        size(total),
        viewer.dist.display(),
        size(viewer.wasm_len),
        size(viewer.js_len),
        size(viewer.assets_gz.len()),
        size(raw_len),
        size(snapshot.len()),
    )?;
    stdout.finish()
}

fn size(n: usize) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / MIB)
    } else {
        format!("{:.1} KiB", n as f64 / 1024.0)
    }
}

fn gzip(bytes: &[u8], level: Compression) -> Result<Vec<u8>, HtmlError> {
    let mut buf = Vec::new();
    buf.try_reserve(bytes.len() / 3)
        .map_err(|_| HtmlError::CompressMemory)?;
    let mut enc = GzEncoder::new(buf, level);
    enc.write_all(bytes)
        .and_then(|()| enc.finish())
        .map_err(HtmlError::Compress)
}

// ----- finding dist/ -----------------------------------------------------------------------

fn is_dist(dir: &Path) -> bool {
    dir.join("index.html").is_file()
}

/// `--dist DIR`, else `$MEMVIZ_DIST`, else `dist/` of the repository holding the executable
/// (`target/{release,debug}/memviz` → `../../dist`), else `./dist`.
fn find_dist(given: Option<&str>) -> Result<PathBuf, HtmlError> {
    if let Some(d) = given {
        let p = PathBuf::from(d);
        return if is_dist(&p) {
            Ok(p)
        } else {
            Err(HtmlError::DistArg(d.to_string()))
        };
    }
    if let Some(d) = std::env::var_os("MEMVIZ_DIST").filter(|d| !d.is_empty()) {
        let p = PathBuf::from(&d);
        return if is_dist(&p) {
            Ok(p)
        } else {
            Err(HtmlError::DistEnv(p))
        };
    }
    let mut looked = Vec::new();
    if let Some(repo) = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_path_buf()))
    {
        let p = repo.join("dist");
        if is_dist(&p) {
            return Ok(p);
        }
        looked.push(p);
    }
    let p = PathBuf::from("dist");
    if is_dist(&p) {
        return Ok(p);
    }
    looked.push(p);
    let looked: Vec<String> = looked.iter().map(|p| p.display().to_string()).collect();
    Err(HtmlError::NoDist(looked.join(" and ")))
}

// ----- reading dist/ -----------------------------------------------------------------------

/// A file of dist/ named by a relative URL of index.html (`./x.js`, `js/main.js`): its path
/// relative to dist/, '/'-separated. Absolute and network URLs are errors.
fn dist_path(href: &str, what: &'static str) -> Result<String, HtmlError> {
    let h = href.split(['?', '#']).next().unwrap_or("");
    if h.is_empty() || h.contains(':') || h.starts_with('/') || h.contains('\\') {
        return Err(HtmlError::NotBeside {
            what,
            href: href.to_string(),
        });
    }
    normalize("", h).ok_or_else(|| HtmlError::LeavesDist {
        what,
        href: href.to_string(),
    })
}

/// `rel` resolved against the directory `base` (both '/'-separated, relative to dist/);
/// None when it climbs out of dist/.
fn normalize(base: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for p in rel.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// One JS module of the report: its source and the specifier literals to fill in.
struct Module {
    key: String,
    text: String,
    /// (start, end) of a specifier's characters inside its quotes, and the module it names.
    specs: Vec<(usize, usize, String)>,
}

/// The built viewer, ready to embed.
struct Viewer {
    dist: PathBuf,
    /// `<body …>` start tag, verbatim (its attributes, e.g. `data-memviz-state`).
    body_tag: String,
    /// The markup between `<body>` and `</body>`.
    body: String,
    css: String,
    /// The manifest without the `file` entry (JSON object members, no braces).
    manifest: String,
    /// gzip(wasm, then every module's source).
    assets_gz: Vec<u8>,
    wasm_len: usize,
    js_len: usize,
}

impl Viewer {
    fn read(dist: &Path) -> Result<Viewer, HtmlError> {
        let read_text = |rel: &str| -> Result<String, HtmlError> {
            let path = dist.join(rel);
            fs::read_to_string(&path).map_err(|source| HtmlError::Read { path, source })
        };
        let index = read_text("index.html")?;
        let body_at = tags(&index, "body")
            .into_iter()
            .next()
            .ok_or(HtmlError::NoBody)?;
        let head = &index[..body_at.start];
        let body_end = index
            .to_ascii_lowercase()
            .rfind("</body")
            .filter(|&e| e >= body_at.end)
            .unwrap_or(index.len());
        let body_tag = index[body_at.start..body_at.end].to_string();
        let mut body = index[body_at.end..body_end].to_string();
        check_body(&body)?;
        // The report opens its own snapshot; "Open demo" would fetch assets/demo.pickle.
        if let Some(at) = body.find("id=\"demo-button\"") {
            body.insert_str(at + "id=\"demo-button\"".len(), " hidden");
        }

        let links = tags(head, "link");
        let rel_is = |t: &Tag, r: &str| {
            t.attr("rel").is_some_and(|v| {
                v.split_ascii_whitespace()
                    .any(|x| x.eq_ignore_ascii_case(r))
            })
        };
        let href = |t: &Tag| t.attr("href").unwrap_or("").to_string();
        let mut css = String::new();
        for l in links.iter().filter(|t| rel_is(t, "stylesheet")) {
            let rel = dist_path(&href(l), "stylesheet")?;
            let text = read_text(&rel)?;
            check_css(&rel, &text)?;
            css.push_str(&text);
            css.push('\n');
        }
        let glue_links: Vec<String> = links
            .iter()
            .filter(|t| rel_is(t, "modulepreload") && href(t).ends_with(".js"))
            .map(href)
            .collect();
        let glue = match glue_links.as_slice() {
            [one] => dist_path(one, "wasm-bindgen glue")?,
            [] => String::new(),
            many => match many.iter().find(|h| h.contains("memviz-web")) {
                Some(h) => dist_path(h, "wasm-bindgen glue")?,
                None => return Err(HtmlError::SeveralGlues(many.join(", "))),
            },
        };
        let wasm = links
            .iter()
            .find(|t| rel_is(t, "preload") && href(t).ends_with(".wasm"))
            .map(|t| dist_path(&href(t), "wasm module"))
            .transpose()?;
        let (glue, wasm) = match (glue.is_empty(), wasm) {
            (false, Some(w)) => (glue, w),
            (true, None) => glue_beside_wasm(dist)?,
            (false, None) => (glue.clone(), wasm_beside_glue(dist, &glue)?),
            (true, Some(w)) => (glue_of_wasm(dist, &w)?, w),
        };

        let glue_file = glue.rsplit('/').next().unwrap_or(&glue).to_string();
        let mut entry = None;
        for s in tags(head, "script") {
            match s.attr("src") {
                Some(src) if s.attr("type") == Some("module") && entry.is_none() => {
                    entry = Some(dist_path(src, "module script")?);
                }
                Some(src) => return Err(HtmlError::ClassicScript(src.to_string())),
                None => {
                    // trunk's loader (`import init … from './memviz-web-….js'`) instantiates the
                    // module on the main thread, which the worker makes unnecessary: dropped. Any
                    // other inline script would be lost, so it is an error.
                    let content_end = find_ci(head, "</script", s.end).unwrap_or(head.len());
                    let content = &head[s.end..content_end];
                    let empty = lex(content).is_ok_and(|t| t.is_empty());
                    if !empty && !content.contains(&glue_file) {
                        return Err(HtmlError::InlineScript);
                    }
                }
            }
        }
        if find_ci(&body, "<script", 0).is_some() {
            return Err(HtmlError::BodyScript);
        }
        let entry = entry.ok_or(HtmlError::NoEntry)?;
        if !dist.join(WORKER).is_file() {
            return Err(HtmlError::Missing(dist.join(WORKER)));
        }

        // The module graph from the three roots, leaves first.
        let mut modules: Vec<Module> = Vec::new();
        let mut index_of: HashMap<String, usize> = HashMap::new();
        for root in [&glue, &WORKER.to_string(), &entry] {
            visit(dist, root, &mut Vec::new(), &mut modules, &mut index_of)?;
        }
        let wasm_bytes = {
            let path = dist.join(&wasm);
            fs::read(&path).map_err(|source| HtmlError::Read { path, source })?
        };
        let mut assets = wasm_bytes;
        let wasm_len = assets.len();
        let mut js_len = 0;
        let mut list = Vec::new();
        for m in &modules {
            let base = assets.len();
            assets.extend_from_slice(m.text.as_bytes());
            js_len += m.text.len();
            let mut parts = Vec::new();
            let mut at = 0;
            for (s, e, dep) in &m.specs {
                parts.push(serde_json::json!([base + at, s - at]));
                parts.push(serde_json::json!(index_of[dep]));
                at = *e;
            }
            parts.push(serde_json::json!([base + at, m.text.len() - at]));
            list.push(serde_json::json!({"name": m.key, "parts": parts}));
        }
        let manifest = serde_json::json!({
            "format": 1,
            "wasm": [0, wasm_len],
            "glue": index_of[&glue],
            "worker": index_of[WORKER],
            "entry": index_of[&entry],
            "modules": list,
        });
        let manifest = manifest.to_string();
        let manifest = manifest
            .strip_prefix('{')
            .and_then(|m| m.strip_suffix('}'))
            .unwrap_or(&manifest)
            .to_string();
        Ok(Viewer {
            dist: dist.to_path_buf(),
            body_tag,
            body,
            css,
            manifest,
            assets_gz: gzip(&assets, Compression::best())?,
            wasm_len,
            js_len,
        })
    }
}

/// Without preload links: the one `X_bg.wasm` in dist/ with `X.js` beside it.
fn glue_beside_wasm(dist: &Path) -> Result<(String, String), HtmlError> {
    let rd = fs::read_dir(dist).map_err(|source| HtmlError::List {
        path: dist.to_path_buf(),
        source,
    })?;
    let mut pairs = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix("_bg.wasm") {
            if dist.join(format!("{stem}.js")).is_file() {
                pairs.push((format!("{stem}.js"), name));
            }
        }
    }
    match pairs.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(HtmlError::NoGlueAndWasm),
    }
}

fn wasm_beside_glue(dist: &Path, glue: &str) -> Result<String, HtmlError> {
    let w = format!("{}_bg.wasm", glue.trim_end_matches(".js"));
    if dist.join(&w).is_file() {
        Ok(w)
    } else {
        Err(HtmlError::NoWasm(w))
    }
}

fn glue_of_wasm(dist: &Path, wasm: &str) -> Result<String, HtmlError> {
    let g = format!(
        "{}.js",
        wasm.trim_end_matches(".wasm").trim_end_matches("_bg")
    );
    if dist.join(&g).is_file() {
        Ok(g)
    } else {
        Err(HtmlError::NoGlue(g))
    }
}

/// Markup that would load something from elsewhere cannot be kept.
fn check_body(body: &str) -> Result<(), HtmlError> {
    for name in [
        "img", "iframe", "link", "object", "embed", "video", "audio", "source", "base",
    ] {
        let loads = tags(body, name).iter().any(|t| {
            t.attr("src")
                .or(t.attr("href"))
                .or(t.attr("data"))
                .is_some_and(|v| !v.starts_with("data:"))
        });
        if loads {
            return Err(HtmlError::BodyLoads(name));
        }
    }
    Ok(())
}

/// The stylesheet goes into a `<style>` as is: no way out of it, nothing loaded from elsewhere.
fn check_css(rel: &str, css: &str) -> Result<(), HtmlError> {
    if find_ci(css, "</style", 0).is_some() {
        return Err(HtmlError::CssEndsStyle(rel.to_string()));
    }
    if find_ci(css, "@import", 0).is_some() {
        return Err(HtmlError::CssImport(rel.to_string()));
    }
    let mut from = 0;
    while let Some(i) = find_ci(css, "url(", from) {
        let arg = css[i + 4..].trim_start_matches([' ', '"', '\'']);
        if !arg.starts_with("data:") {
            return Err(HtmlError::CssUrl(rel.to_string()));
        }
        from = i + 4;
    }
    Ok(())
}

/// Depth-first over static imports; pushes `key`'s imports, then `key` (leaves first).
fn visit(
    dist: &Path,
    key: &str,
    path: &mut Vec<String>,
    modules: &mut Vec<Module>,
    index_of: &mut HashMap<String, usize>,
) -> Result<(), HtmlError> {
    if index_of.contains_key(key) {
        return Ok(());
    }
    if let Some(at) = path.iter().position(|p| p == key) {
        let mut cycle = path[at..].to_vec();
        cycle.push(key.to_string());
        return Err(HtmlError::Cycle {
            key: key.to_string(),
            cycle: cycle.join(" → "),
        });
    }
    let file = dist.join(key);
    let text =
        fs::read_to_string(&file).map_err(|source| HtmlError::Read { path: file, source })?;
    let dir = key.rsplit_once('/').map_or("", |(d, _)| d);
    let mut specs = Vec::new();
    let found = imports(&text).map_err(|message| HtmlError::Imports {
        key: key.to_string(),
        message,
    })?;
    for (s, e) in found {
        let spec = &text[s..e];
        let (key, spec) = (key.to_string(), spec.to_string());
        if !(spec.starts_with("./") || spec.starts_with("../")) {
            return Err(HtmlError::NotRelative { key, spec });
        }
        let Some(dep) = normalize(dir, &spec) else {
            return Err(HtmlError::ImportsOutside { key, spec });
        };
        if !dist.join(&dep).is_file() {
            return Err(HtmlError::ImportMissing { key, spec, dep });
        }
        specs.push((s, e, dep));
    }
    path.push(key.to_string());
    for (_, _, dep) in &specs {
        visit(dist, dep, path, modules, index_of)?;
    }
    path.pop();
    index_of.insert(key.to_string(), modules.len());
    modules.push(Module {
        key: key.to_string(),
        text,
        specs,
    });
    Ok(())
}

// ----- writing the report ------------------------------------------------------------------

struct Report<'a> {
    viewer: &'a Viewer,
    title: &'a str,
    file_name: &'a str,
    file_bytes: usize,
    snapshot: &'a [u8],
}

/// Text for HTML (element content or a quoted attribute).
fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON placed in a `<script>` data block: no `<` at all, so neither `</script` nor `<!--`.
fn json_for_script(json: &str) -> String {
    json.replace('<', "\\u003c")
}

impl Report<'_> {
    /// Writes the report; returns its size in bytes.
    fn write(&self, path: &Path) -> std::io::Result<usize> {
        let v = self.viewer;
        let csp = format!(
            "default-src 'none'; script-src 'sha256-{}' blob: data: 'wasm-unsafe-eval'; worker-src data:; connect-src blob: data:; style-src 'unsafe-inline'; img-src data: blob:; base-uri 'none'; form-action 'none'",
            base64(&sha256(BOOTSTRAP.as_bytes()))
        );
        let file = serde_json::json!({"name": self.file_name, "bytes": self.file_bytes});
        let manifest = json_for_script(&format!("{{\"file\":{file},{}}}", v.manifest));
        let mut w = Counter {
            inner: BufWriter::new(fs::File::create(path)?),
            n: 0,
        };
        write!(
            w,
            "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta name=\"generator\" content=\"memviz html\">\n<title>{}</title>\n\
             <link rel=\"icon\" href=\"data:,\">\n<style>\n{}</style>\n</head>\n{}",
            escape_html(self.title),
            v.css,
            v.body_tag
        )?;
        w.write_all(v.body.as_bytes())?;
        writeln!(
            w,
            "<script type=\"application/json\" id=\"memviz-report\">{manifest}</script>"
        )?;
        w.write_all(b"<script type=\"application/octet-stream\" id=\"memviz-assets\">")?;
        write_base64(&mut w, &v.assets_gz)?;
        w.write_all(
            b"</script>\n<script type=\"application/octet-stream\" id=\"memviz-snapshot\">",
        )?;
        write_base64(&mut w, self.snapshot)?;
        write!(
            w,
            "</script>\n<script>{BOOTSTRAP}</script>\n</body>\n</html>\n"
        )?;
        w.inner.flush()?;
        Ok(w.n)
    }
}

/// Counts the bytes written.
struct Counter<W: Write> {
    inner: W,
    n: usize,
}

impl<W: Write> Write for Counter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Standard base64 with padding (the `base64` crate).
fn base64(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Streams `data` into `w` as standard base64 with padding, without a second copy of it.
fn write_base64(w: &mut impl Write, data: &[u8]) -> std::io::Result<()> {
    let mut enc = base64::write::EncoderWriter::new(w, &base64::engine::general_purpose::STANDARD);
    enc.write_all(data)?;
    enc.finish()?;
    Ok(())
}

/// SHA-256, for the CSP hash of the bootstrap script (the `sha2` crate).
fn sha256(data: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(data).into()
}

#[cfg(test)]
mod tests;
