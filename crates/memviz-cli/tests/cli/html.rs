//! `memviz html FILE -o OUT.html`: the single-file report, built from a fake tiny dist/ written
//! here (index.html as trunk writes it, with and without trunk's inline wasm loader; a CSS, a
//! glue, a "wasm", the page and worker bundles www/bundle.sh writes). The report embeds the
//! snapshot and every asset, refers to no http(s) URL, escapes the title and carries a CSP whose
//! script hash is the bootstrap's; a missing dist/, a bad FILE, a dist/ whose modules are not
//! bundled and an index.html without its marker comments exit 2 with one line. The report in a real browser: tests/web/report.test.mjs.

use crate::common;
use common::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

const GLUE: &str = "memviz-web-0123abcd.js";
const WASM: &str = "memviz-web-0123abcd_bg.wasm";
const CSS: &str = "main-4567ef.css";
const WASM_BYTES: &[u8] = b"\0asm\x01\0\0\0 fake module \xff\xfe";

/// trunk's inline loader (dropped in the report), as trunk 0.21 writes it.
const TRUNK_LOADER: &str = r#"
<script type="module">
import init, * as bindings from './memviz-web-0123abcd.js';
const wasm = await init({ module_or_path: './memviz-web-0123abcd_bg.wasm' });
window.wasmBindings = bindings;
dispatchEvent(new CustomEvent("TrunkApplicationStarted", {detail: {wasm}}));
</script>"#;

/// A fresh directory under target/test-fixtures (tests run in parallel).
fn temp_dir(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = repo_root()
        .join("target/test-fixtures")
        .join(format!("html-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir
}

fn write(path: &Path, text: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// The two bundles of the fake dist/, as esbuild writes them (www/bundle.sh): no import
/// statement; the comment holding an import look-alike, `import.meta` and `import(expression)`
/// (the worker's glue) are inlined as they are.
fn modules() -> Vec<(&'static str, String)> {
    vec![
        (
            "js/main.js",
            r#"// www/js/util/fmt.js
var fmt = (n) => `${n} B`;
// www/js/main.js: import { x } from './commented.js';
/** @typedef {import('./types').Tooltip} Tooltip */
var ViewerClient = class { start() { return new Worker(new URL("./worker.js", import.meta.url), { type: "module" }); } };
/* import { y } from './in-a-comment.js'; */
const re = /x\/y/;
window.memviz = { open() {}, fmt, ViewerClient, re, tpl: `${1 / 2}`, url: import.meta.url };
"#
            .to_string(),
        ),
        (
            "js/worker.js",
            "// www/js/worker.js\nvar fmt = (n) => `${n} B`;\nself.onmessage = async (ev) => { const glue = await import(ev.data.glue); await glue.default({ module_or_path: ev.data.wasm }); postMessage(fmt(1)); };\n"
                .to_string(),
        ),
    ]
}

/// A dist/ as trunk writes it from the repository's index.html, with its marker comments;
/// `loader`: trunk's inline loader in the head (older trunk.toml).
fn fake_dist(loader: bool) -> PathBuf {
    let dir = temp_dir("dist");
    let index = format!(
        r#"<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <!-- served from https://example.invalid/memviz/ — nothing of the head is kept -->
  <meta http-equiv="Content-Security-Policy" content="default-src 'self'; connect-src 'self' https://example.invalid">
  <title>memviz: PyTorch CUDA memory snapshots</title>
  <link rel="icon" href="data:,">{}
  <!-- memviz:css -->
  <link rel="stylesheet" href="./{CSS}" integrity="sha384-x"/>
  <!-- /memviz:css -->
  <!-- memviz:entry -->
  <script type="module" src="js/main.js"></script>
  <!-- /memviz:entry -->
  <!-- memviz:preload -->
<link rel="modulepreload" href="./{GLUE}" crossorigin="anonymous" integrity="sha384-y"><link rel="preload" href="./{WASM}" crossorigin="anonymous" integrity="sha384-z" as="fetch" type="application/wasm"></head>
<body data-memviz-state="empty">
  <!-- memviz:body -->
  <header><h1>memviz</h1><p>Open a snapshot…</p></header>
  <button type="button" id="demo-button" class="secondary">Open demo</button>
  <div id="error" role="alert" hidden></div>
  <!-- /memviz:body -->
</body>
</html>
"#,
        if loader { TRUNK_LOADER } else { "" }
    );
    write(&dir.join("index.html"), index);
    write(
        &dir.join(CSS),
        "body { color: #123; }\n.icon { background: url(\"data:image/svg+xml,<svg/>\"); }\n",
    );
    write(
        &dir.join(GLUE),
        "// see https://rustwasm.github.io/wasm-bindgen\nexport class WebViewer {}\nasync function __wbg_init(m) { if (m === undefined) m = new URL('memviz-web_bg.wasm', import.meta.url); return m; }\nexport default __wbg_init;\n",
    );
    write(&dir.join(WASM), WASM_BYTES);
    for (name, text) in modules() {
        write(&dir.join(name), text);
    }
    write(&dir.join("assets/demo.pickle"), b"not embedded");
    dir
}

fn decode_base64(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for q in text.as_bytes().chunks(4) {
        assert_eq!(q.len(), 4, "base64 is padded");
        let pad = q.iter().filter(|&&c| c == b'=').count();
        let n = q.iter().take(4 - pad).fold(0u32, |n, &c| n << 6 | value(c)) << (6 * pad);
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    out
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("gzip");
    out
}

/// The text of the `<script …id="ID">` data block of `html`.
fn block<'a>(html: &'a str, id: &str) -> &'a str {
    let open = format!("id=\"{id}\">");
    let start = html.find(&open).expect("data block") + open.len();
    let end = html[start..].find("</script>").expect("block end") + start;
    &html[start..end]
}

/// Runs `memviz html FILE -o OUT --dist DIST EXTRA…`; returns (code, stdout, stderr).
fn html(file: &Path, out: &Path, dist: &Path, extra: &[&str]) -> (i32, String, String) {
    let (f, o, d) = (path_str(file), path_str(out), path_str(dist));
    let mut args = vec!["html", f.as_str(), "-o", o.as_str(), "--dist", d.as_str()];
    args.extend_from_slice(extra);
    memviz(&args)
}

fn assert_one_line_error(code: i32, stderr: &str, needle: &str) {
    assert_eq!(code, 2, "exit 2: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("memviz: "), "{stderr}");
    assert!(stderr.contains(needle), "`{needle}` in: {stderr}");
}

fn sha256_base64(text: &str) -> String {
    let out = Command::new("python3")
        .args([
            "-c",
            "import base64, hashlib, sys; print(base64.b64encode(hashlib.sha256(sys.stdin.buffer.read()).digest()).decode())",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .expect("python3 runs");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string()
}

/// Checks one report of `file` made from `fake_dist(loader)`.
fn check_report(loader: bool) {
    let dist = fake_dist(loader);
    let file = fixture("multidevice.pickle");
    let out = temp_dir("out").join("report.html");
    let title = r#"<b>run 7</b> & "quotes" 'too'"#;
    let (code, stdout, stderr) = html(&file, &out, &dist, &["--title", title]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("report.html"), "{stdout}");
    let report = std::fs::read_to_string(&out).expect("report");

    // No network anywhere: no http(s) URL (the fake dist has some in its head and glue), no
    // script or stylesheet loaded by URL.
    assert!(!report.contains("http://") && !report.contains("https://"));
    assert!(!report.contains(" src="), "nothing loaded by src=");
    assert!(!report.contains("rel=\"stylesheet\""));
    assert!(!report.contains("TrunkApplicationStarted") && !report.contains("import init"));
    assert!(report.contains("body { color: #123; }"), "CSS inlined");
    assert!(report.contains("<body data-memviz-state=\"empty\">"));
    assert!(
        report.contains("id=\"demo-button\" hidden"),
        "no demo in a report"
    );

    // The title is text.
    assert!(
        report.contains(
            "<title>&lt;b&gt;run 7&lt;/b&gt; &amp; &quot;quotes&quot; &#39;too&#39;</title>"
        ),
        "escaped title"
    );
    assert!(!report.contains("<b>run 7</b>"));

    // The CSP forbids the network and allows exactly the bootstrap as inline script.
    let csp_start = report
        .find("<meta http-equiv=\"Content-Security-Policy\" content=\"")
        .expect("CSP meta");
    assert!(
        csp_start < report.find("<script").expect("a script"),
        "the CSP comes before every script"
    );
    let csp = &report[csp_start..];
    let csp = &csp[csp.find("content=\"").expect("content") + 9..];
    let csp = &csp[..csp.find('"').expect("end")];
    assert!(csp.starts_with("default-src 'none';"), "{csp}");
    for directive in csp.split(';').map(str::trim) {
        if directive.starts_with("connect-src") {
            assert_eq!(directive, "connect-src blob: data:");
        }
        assert!(
            !directive.contains('*') && !directive.contains("'self'"),
            "{directive}"
        );
    }
    let boot_start = report.rfind("<script>").expect("bootstrap") + "<script>".len();
    let boot =
        &report[boot_start..boot_start + report[boot_start..].find("</script>").expect("end")];
    assert!(
        csp.contains(&format!("'sha256-{}'", sha256_base64(boot))),
        "the CSP allows the bootstrap by its hash: {csp}"
    );

    // The snapshot, gzip-compressed.
    let snapshot = gunzip(&decode_base64(block(&report, "memviz-snapshot")));
    assert_eq!(snapshot, std::fs::read(&file).expect("fixture"));

    // The assets: the wasm, the glue and the two bundles, each byte for byte.
    let manifest: serde_json::Value =
        serde_json::from_str(block(&report, "memviz-report")).expect("manifest JSON");
    assert_eq!(manifest["file"]["name"], "multidevice.pickle");
    assert_eq!(manifest["format"], 2);
    let assets = gunzip(&decode_base64(block(&report, "memviz-assets")));
    let range = |v: &serde_json::Value| {
        let o = v[0].as_u64().expect("offset") as usize;
        let n = v[1].as_u64().expect("length") as usize;
        &assets[o..o + n]
    };
    assert_eq!(range(&manifest["wasm"]), WASM_BYTES);
    assert_eq!(
        range(&manifest["glue"]),
        std::fs::read(dist.join(GLUE)).expect("glue")
    );
    let bundles = modules();
    for (key, name) in [("entry", "js/main.js"), ("worker", "js/worker.js")] {
        let (_, text) = bundles.iter().find(|(n, _)| *n == name).expect(name);
        assert_eq!(range(&manifest[key]), text.as_bytes(), "{name}");
    }
    // Nothing else: the wasm, the glue and the bundles, one after another.
    let ends: u64 = ["wasm", "glue", "worker", "entry"]
        .iter()
        .map(|k| manifest[k][1].as_u64().expect("length"))
        .sum();
    assert_eq!(ends as usize, assets.len());
}

#[test]
fn report_embeds_the_viewer_and_the_snapshot() {
    check_report(false);
}

#[test]
fn report_drops_trunks_inline_loader() {
    check_report(true);
}

#[test]
fn gzip_snapshot_is_embedded_as_is() {
    let dist = fake_dist(false);
    let dir = temp_dir("gz");
    let gz = dir.join("snap.pickle.gz");
    let raw = std::fs::read(fixture("proto5.pickle")).expect("fixture");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut enc, &raw).expect("gzip");
    let gz_bytes = enc.finish().expect("gzip");
    write(&gz, &gz_bytes);
    let out = dir.join("r.html");
    let (code, _, stderr) = html(&gz, &out, &dist, &[]);
    assert_eq!(code, 0, "{stderr}");
    let report = std::fs::read_to_string(&out).expect("report");
    assert_eq!(decode_base64(block(&report, "memviz-snapshot")), gz_bytes);
    assert!(report.contains("<title>memviz: snap.pickle.gz</title>"));
}

#[test]
fn missing_dist_exits_2_with_one_line() {
    let dir = temp_dir("nodist");
    let out = dir.join("r.html");
    let file = fixture("proto5.pickle");
    let (code, _, stderr) = html(&file, &out, &dir.join("no-such-dist"), &[]);
    assert_one_line_error(
        code,
        &stderr,
        "trunk --config trunk.toml build --release --offline",
    );
    assert!(!out.exists());

    // No --dist, no $MEMVIZ_DIST, no dist/ beside the executable's repository nor in the
    // working directory: a copy of the binary three levels down in an empty tree.
    let exe = dir.join("a/b/c/memviz");
    std::fs::create_dir_all(exe.parent().expect("parent")).expect("mkdir");
    std::fs::copy(env!("CARGO_BIN_EXE_memviz"), &exe).expect("copy memviz");
    let run = |env_dist: Option<&Path>| {
        let mut c = Command::new(&exe);
        c.args(["html", &path_str(&file), "-o", &path_str(&out)])
            .current_dir(dir.join("a/b"))
            .env_remove("MEMVIZ_DIST");
        if let Some(d) = env_dist {
            c.env("MEMVIZ_DIST", d);
        }
        // A fresh copy of an executable can be "busy" for a moment (ETXTBSY): another test
        // thread forked while the copy's write handle was open. Try again briefly.
        let mut tries = 0;
        let o = loop {
            match c.output() {
                Err(e) if e.raw_os_error() == Some(26) && tries < 50 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                r => break r.expect("memviz runs"),
            }
        };
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(None);
    if code == 0 {
        // This memviz has the viewer built in (dist/ existed when it was compiled): the report
        // needs nothing else.
        assert!(out.exists());
        let report = std::fs::read_to_string(&out).expect("report");
        assert!(report.contains("id=\"memviz-assets\""));
        std::fs::remove_file(&out).expect("rm");
    } else {
        assert_one_line_error(code, &stderr, "cargo xtask serve");
        assert!(stderr.contains("no built viewer found"), "{stderr}");
        assert!(stderr.contains("built without the viewer"), "{stderr}");
        assert!(!out.exists());
    }
    // $MEMVIZ_DIST is used when set.
    let (code, stderr) = run(Some(&fake_dist(false)));
    assert_eq!(code, 0, "{stderr}");
    assert!(out.exists());
    // … and names itself when it points nowhere.
    let (code, stderr) = run(Some(&dir.join("nowhere")));
    assert_one_line_error(code, &stderr, "MEMVIZ_DIST=");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_file_exits_2_with_one_line() {
    let dist = fake_dist(false);
    let dir = temp_dir("bad");
    let out = dir.join("r.html");
    let png = dir.join("image.png");
    write(&png, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let (code, _, stderr) = html(&png, &out, &dist, &[]);
    assert_one_line_error(code, &stderr, "image.png");
    assert!(!out.exists(), "no report of a bad file");
    let (code, _, stderr) = html(&dir.join("missing.pickle"), &out, &dist, &[]);
    assert_one_line_error(code, &stderr, "missing.pickle");
    // Usage errors are one line too.
    let (code, _, stderr) = memviz(&["html", &path_str(&fixture("proto5.pickle"))]);
    assert_one_line_error(code, &stderr, "-o");
    let (code, _, stderr) = memviz(&["html", "-o", &path_str(&out)]);
    assert_one_line_error(code, &stderr, "<FILE>");
}

#[test]
fn unbundled_modules_exit_2() {
    // A dist/ built before the shell's bundling (or by hand): its modules import others by a
    // static specifier, which a report cannot resolve. Named with its line; the build command.
    let file = fixture("proto5.pickle");
    for (module, text, line) in [
        (
            "js/main.js",
            "// main.js\nimport { ViewerClient } from './bridge.js';\nwindow.memviz = {};\n",
            2,
        ),
        ("js/main.js", "import * as util from './util/fmt.js';\n", 1),
        ("js/main.js", "f();\n  export { a } from './a.js';\n", 2),
        ("js/worker.js", "import './side-effect.js';\n", 1),
        ("js/worker.js", "import{ fmt } from \"./fmt.js\";\n", 1),
        (
            GLUE,
            "import * as snippet from './snippets/memviz-web/inline0.js';\n",
            1,
        ),
    ] {
        let dist = fake_dist(false);
        write(&dist.join(module), text);
        let out = temp_dir("imports").join("r.html");
        let (code, _, stderr) = html(&file, &out, &dist, &[]);
        assert_one_line_error(
            code,
            &stderr,
            &format!("dist/{module}: line {line} imports another module, which a report cannot embed: not a bundle"),
        );
        assert!(
            stderr.contains("trunk --config trunk.toml build"),
            "{stderr}"
        );
        assert!(!out.exists());
    }
    // The worker bundle is required.
    let dist = fake_dist(false);
    std::fs::remove_file(dist.join("js/worker.js")).expect("rm");
    let out = temp_dir("imports").join("r.html");
    let (code, _, stderr) = html(&file, &out, &dist, &[]);
    assert_one_line_error(code, &stderr, "js/worker.js: missing");
}

#[test]
fn index_html_it_cannot_read_exits_2() {
    // Only the marked parts of index.html are read: each marker must be there exactly once,
    // and what is marked must be embeddable.
    let file = fixture("proto5.pickle");
    let index = std::fs::read_to_string(fake_dist(false).join("index.html")).expect("index");
    for (changed, needle) in [
        (
            index.replace("  <!-- /memviz:body -->\n", ""),
            "no `<!-- /memviz:body -->` after `<!-- memviz:body -->`",
        ),
        (
            index.replace("<!-- memviz:css -->", ""),
            "no `<!-- memviz:css -->` marker",
        ),
        (
            index.replace(
                "<!-- memviz:entry -->",
                "<!-- memviz:entry --><!-- memviz:entry -->",
            ),
            "`<!-- memviz:entry -->` marker 2 times",
        ),
        (
            index.replace("</head>", ""),
            "no `</head>` after `<!-- memviz:preload -->`",
        ),
        (
            index.replace(
                "  <!-- /memviz:entry -->",
                "<script type=\"module\" src=\"js/bridge.js\"></script><!-- /memviz:entry -->",
            ),
            "not one <script type=\"module\" src=…>",
        ),
        (
            index.replace(
                "<div id=\"error\"",
                "<script>window.analytics = 1;</script><div id=\"error\"",
            ),
            "a script in its body",
        ),
        (
            index.replace(
                "<div id=\"error\"",
                "<img alt=\"logo\" src = 'logo.png'><div id=\"error\"",
            ),
            "<img> that loads a file",
        ),
    ] {
        let dist = fake_dist(false);
        write(&dist.join("index.html"), changed);
        let out = temp_dir("index").join("r.html");
        let (code, _, stderr) = html(&file, &out, &dist, &[]);
        assert_one_line_error(code, &stderr, needle);
        assert!(stderr.contains("dist/index.html"), "{stderr}");
        assert!(!out.exists());
    }
}
