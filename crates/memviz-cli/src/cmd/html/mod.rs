//! `memviz html FILE -o OUT.html [--dist DIR] [--title T]`: one self-contained HTML file holding
//! the viewer (the body of `dist/index.html`, its CSS, the JS modules, the worker, the
//! wasm-bindgen glue and the `.wasm`) and the snapshot, which opens offline from a `file://`
//! URL and shows the snapshot by itself (see docs/report.md).
//!
//! What it takes from `dist/index.html` lies between fixed marker comments of the repository's
//! index.html (markers.rs): the stylesheet links, the entry module, trunk's preload links (the
//! glue and the wasm) and the body markup. Nothing else of the page is read.
//!
//! Layout of the report: a Content-Security-Policy meta that allows no network at all; the CSS
//! in a `<style>`; the body markup; three data blocks (`#memviz-report`: a JSON manifest,
//! `#memviz-assets`: base64 of gzip(the wasm, the glue, the worker bundle and the page bundle),
//! `#memviz-snapshot`: base64 of the snapshot, gzip-compressed); and one inline bootstrap script,
//! www/report/bootstrap.js (allowed by its SHA-256 in the CSP), that turns the assets into
//! `blob:` and `data:` URLs, sets `globalThis.MEMVIZ_ASSETS` (read by www/js/bridge.js), imports
//! the page bundle and opens the snapshot with `window.memviz.open(File)`.
//!
//! The shell is built into two self-contained ES modules by esbuild (www/bundle.sh, trunk's
//! post_build hook): `js/main.js` (the page) and `js/worker.js` (the worker), which import no
//! other module by a static specifier (the worker imports the glue by the URL it is given), so
//! each is inlined as it is. A dist/ whose modules still import others (built before the
//! bundling, or by hand) is refused with the command that builds it.

use crate::cli::HtmlArgs;
use crate::load;
use crate::out::{Done, Fail};
use flate2::write::GzEncoder;
use flate2::Compression;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

pub mod dist;
mod error;
mod markers;
use dist::Dist;
use error::HtmlError;

const BUILD_HINT: &str =
    "build the viewer first: `trunk --config trunk.toml build --release --offline` (or `cargo xtask serve`), or pass --dist DIR";

/// Why the built viewer is missing from a binary: said by `memviz html` and `memviz open`.
pub const NOT_BUILT_IN: &str = "this memviz was built without the viewer (dist/ did not exist when it was compiled: run `trunk --config trunk.toml build --release --offline`, then build memviz again)";

/// The worker bundle, relative to dist/ (bridge.js starts `new URL('./worker.js', …)` beside
/// the page bundle).
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
    // The viewer reads gzip itself: a compressed file goes in as it is. A `torch.save` zip
    // archive goes in as its snapshot entry (the pickle), gzip-compressed: the viewer reads a
    // zip only as the file itself, never inside gzip, and torch.save stores its entries
    // uncompressed (the archive as it is would make a report about 10 times larger).
    let snapshot = if raw.starts_with(&[0x1f, 0x8b]) {
        raw
    } else if raw.starts_with(b"PK\x03\x04") {
        gzip(&zip_snapshot_entry(file, &raw)?, Compression::default())?
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
        viewer.dist,
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

/// The bytes of the snapshot entry (`<name>/data.pkl`) of the `torch.save` zip archive `raw`
/// (already loaded whole by `load`, so an error here is unexpected; it names the file).
fn zip_snapshot_entry(file: &str, raw: &[u8]) -> Result<Vec<u8>, Fail> {
    let mut out: Vec<u8> = Vec::new();
    let mut sink = |b: &[u8]| {
        out.extend_from_slice(b);
        Ok(())
    };
    let mut zip = memviz_snapshot::zip::ZipStream::new();
    zip.push(raw, &mut sink)
        .and_then(|()| zip.finish(&mut sink))
        .map_err(|e| Fail::Msg(format!("{file}: {e}")))?;
    Ok(out)
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

/// `--dist DIR`, else `$MEMVIZ_DIST`, else the viewer built into the binary, else `dist/` of
/// the repository holding the executable (`target/{release,debug}/memviz` → `../../dist`),
/// else `./dist`.
fn find_dist(given: Option<&str>) -> Result<Dist, HtmlError> {
    if let Some(d) = given {
        let p = PathBuf::from(d);
        return if is_dist(&p) {
            Ok(Dist::Dir(p))
        } else {
            Err(HtmlError::DistArg(d.to_string()))
        };
    }
    if let Some(d) = std::env::var_os("MEMVIZ_DIST").filter(|d| !d.is_empty()) {
        let p = PathBuf::from(&d);
        return if is_dist(&p) {
            Ok(Dist::Dir(p))
        } else {
            Err(HtmlError::DistEnv(p))
        };
    }
    if let Some(d) = Dist::embedded() {
        return Ok(d);
    }
    let mut looked = Vec::new();
    if let Some(repo) = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_path_buf()))
    {
        let p = repo.join("dist");
        if is_dist(&p) {
            return Ok(Dist::Dir(p));
        }
        looked.push(p);
    }
    let p = PathBuf::from("dist");
    if is_dist(&p) {
        return Ok(Dist::Dir(p));
    }
    looked.push(p);
    let looked: Vec<String> = looked.iter().map(|p| p.display().to_string()).collect();
    Err(HtmlError::NoDist(looked.join(" and ")))
}

/// [`find_dist`] for `memviz open`: the viewer, or why there is none.
pub fn find_viewer(given: Option<&str>) -> Result<Dist, crate::out::Fail> {
    Ok(find_dist(given)?)
}

// ----- reading dist/ -----------------------------------------------------------------------

/// A file of dist/ named by a relative URL of index.html (`./x.js`, `js/main.js`): its path
/// relative to dist/, '/'-separated. Absolute and network URLs are errors, and so is a `..`
/// (trunk writes none).
fn dist_path(href: &str, what: &'static str) -> Result<String, HtmlError> {
    let h = href.split(['?', '#']).next().unwrap_or("");
    if h.is_empty() || h.contains(':') || h.starts_with('/') || h.contains('\\') {
        return Err(HtmlError::NotBeside {
            what,
            href: href.to_string(),
        });
    }
    let parts: Vec<&str> = h
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        return Err(HtmlError::LeavesDist {
            what,
            href: href.to_string(),
        });
    }
    Ok(parts.join("/"))
}

/// A module read from dist/ (a bundle of www/bundle.sh, or the glue): refused when it imports other modules by a
/// static specifier, which mean nothing under the `blob:`/`data:` URL of a report. esbuild's
/// bundles start no line with an import statement; a module of an unbundled build does (the
/// shell's modules import at their top). `import(…)` and `import.meta` are not statements.
fn bundle(dist: &Dist, rel: &str) -> Result<String, HtmlError> {
    let text = dist.read_text(rel)?;
    let statement = |line: &str| {
        line.strip_prefix("import").is_some_and(|rest| {
            rest.starts_with([' ', '{', '*', '"', '\''])
                && !rest.trim_start().starts_with(['(', '.'])
        }) || (line.starts_with("export ") && line.contains(" from "))
    };
    match text.lines().position(|l| statement(l.trim_start())) {
        Some(n) => Err(HtmlError::NotBundled {
            key: rel.to_string(),
            line: n + 1,
        }),
        None => Ok(text),
    }
}

/// The built viewer, ready to embed.
struct Viewer {
    /// Where it came from (a directory or the binary), for the report line.
    dist: String,
    /// `<body …>` start tag, verbatim (its attributes, e.g. `data-memviz-state`).
    body_tag: String,
    /// The markup between the body markers.
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
    fn read(dist: &Dist) -> Result<Viewer, HtmlError> {
        let read_text = |rel: &str| dist.read_text(rel);
        let index = read_text("index.html")?;
        // Only the marked parts of index.html are read (markers.rs); the rest of the head (the
        // site's CSP, trunk's inline loader if the build has one: the worker instantiates the
        // module) is not kept.
        let marked = markers::marked(&index)?;
        let mut body = marked.body.to_string();
        check_body(&body)?;
        // The report opens its own snapshot; "Open demo" would fetch assets/demo.pickle.
        if let Some(at) = body.find("id=\"demo-button\"") {
            body.insert_str(at + "id=\"demo-button\"".len(), " hidden");
        }

        let mut css = String::new();
        for href in markers::attr_values(marked.css, "href") {
            let rel = dist_path(href, "stylesheet")?;
            let text = read_text(&rel)?;
            check_css(&rel, &text)?;
            css.push_str(&text);
            css.push('\n');
        }
        let preloads = markers::attr_values(marked.preload, "href");
        let glue_links: Vec<&str> = preloads
            .iter()
            .copied()
            .filter(|h| h.ends_with(".js"))
            .collect();
        let glue = match glue_links.as_slice() {
            [one] => dist_path(one, "wasm-bindgen glue")?,
            [] => String::new(),
            many => match many.iter().find(|h| h.contains("memviz-web")) {
                Some(h) => dist_path(h, "wasm-bindgen glue")?,
                None => return Err(HtmlError::SeveralGlues(many.join(", "))),
            },
        };
        let wasm = preloads
            .iter()
            .find(|h| h.ends_with(".wasm"))
            .map(|h| dist_path(h, "wasm module"))
            .transpose()?;
        let (glue, wasm) = match (glue.is_empty(), wasm) {
            (false, Some(w)) => (glue, w),
            (true, None) => glue_beside_wasm(dist)?,
            (false, None) => (glue.clone(), wasm_beside_glue(dist, &glue)?),
            (true, Some(w)) => (glue_of_wasm(dist, &w)?, w),
        };

        let entry = match markers::attr_values(marked.entry, "src").as_slice() {
            [src] => dist_path(src, "module script")?,
            _ => return Err(HtmlError::NoEntry),
        };
        if !dist.is_file(WORKER) {
            return Err(HtmlError::Missing(dist.join(WORKER)));
        }

        let entry_text = bundle(dist, &entry)?;
        let worker_text = bundle(dist, WORKER)?;
        // (The glue imports nothing either, as long as memviz-web uses no JS snippets.)
        let glue_text = bundle(dist, &glue)?;
        // The assets: the wasm, then the glue, the worker and the page (the manifest's ranges).
        let mut assets = dist.read(&wasm)?.into_owned();
        let wasm_len = assets.len();
        let js_len = glue_text.len() + worker_text.len() + entry_text.len();
        let mut range = |text: &str| {
            let at = assets.len();
            assets.extend_from_slice(text.as_bytes());
            serde_json::json!([at, text.len()])
        };
        let manifest = serde_json::json!({
            "format": 2,
            "wasm": [0, wasm_len],
            "glue": range(&glue_text),
            "worker": range(&worker_text),
            "entry": range(&entry_text),
        });
        let manifest = manifest.to_string();
        let manifest = manifest
            .strip_prefix('{')
            .and_then(|m| m.strip_suffix('}'))
            .unwrap_or(&manifest)
            .to_string();
        Ok(Viewer {
            dist: dist.describe(),
            body_tag: marked.body_tag.to_string(),
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
fn glue_beside_wasm(dist: &Dist) -> Result<(String, String), HtmlError> {
    let mut pairs = Vec::new();
    for name in dist.root_files()? {
        if let Some(stem) = name.strip_suffix("_bg.wasm") {
            if dist.is_file(&format!("{stem}.js")) {
                pairs.push((format!("{stem}.js"), name));
            }
        }
    }
    match pairs.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(HtmlError::NoGlueAndWasm),
    }
}

fn wasm_beside_glue(dist: &Dist, glue: &str) -> Result<String, HtmlError> {
    let w = format!("{}_bg.wasm", glue.trim_end_matches(".js"));
    if dist.is_file(&w) {
        Ok(w)
    } else {
        Err(HtmlError::NoWasm(w))
    }
}

fn glue_of_wasm(dist: &Dist, wasm: &str) -> Result<String, HtmlError> {
    let g = format!(
        "{}.js",
        wasm.trim_end_matches(".wasm").trim_end_matches("_bg")
    );
    if dist.is_file(&g) {
        Ok(g)
    } else {
        Err(HtmlError::NoGlue(g))
    }
}

/// The body goes into the report as it is, so it may hold no script (the report runs only the
/// entry module and its imports) and nothing that loads a file. Fixed strings on the lower-cased
/// markup, comments included (so a doubt is a refusal, never a hole): from each `<img`, `<iframe`
/// … to its `>`, every `src`, `href` or `data` attribute (value quoted or not) is a `data:` URL.
fn check_body(body: &str) -> Result<(), HtmlError> {
    let lower = body.to_ascii_lowercase();
    for name in [
        "img", "iframe", "link", "object", "embed", "video", "audio", "source", "base",
    ] {
        let open = format!("<{name}");
        for (at, _) in lower.match_indices(&open) {
            let rest = &lower[at + open.len()..];
            if !rest.starts_with(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/') {
                continue; // another element (`<sourcex`)
            }
            let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
            if ["src", "href", "data"]
                .iter()
                .any(|attr| attr_loads(tag, attr))
            {
                return Err(HtmlError::BodyLoads(name));
            }
        }
    }
    if lower.contains("<script") {
        return Err(HtmlError::BodyScript);
    }
    Ok(())
}

/// Whether the text of a start tag (lower-case) has an attribute `attr` whose value is not a
/// `data:` URL.
fn attr_loads(tag: &str, attr: &str) -> bool {
    tag.match_indices(attr).any(|(i, _)| {
        let own = tag[..i].ends_with(|c: char| c.is_ascii_whitespace() || c == '/');
        let value = tag[i + attr.len()..].trim_start().strip_prefix('=');
        own && value.is_some_and(|v| {
            !v.trim_start()
                .trim_start_matches(['"', '\''])
                .starts_with("data:")
        })
    })
}

/// The stylesheet goes into a `<style>` as is: no way out of it, nothing loaded from elsewhere.
fn check_css(rel: &str, css: &str) -> Result<(), HtmlError> {
    // ASCII lower-casing keeps every byte where it was.
    let lower = css.to_ascii_lowercase();
    if lower.contains("</style") {
        return Err(HtmlError::CssEndsStyle(rel.to_string()));
    }
    if lower.contains("@import") {
        return Err(HtmlError::CssImport(rel.to_string()));
    }
    for (i, _) in lower.match_indices("url(") {
        let arg = css[i + 4..].trim_start_matches([' ', '"', '\'']);
        if !arg.starts_with("data:") {
            return Err(HtmlError::CssUrl(rel.to_string()));
        }
    }
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
