//! `memviz open FILE… [--port P] [--no-browser] [--dist DIR]`: a local HTTP server on
//! 127.0.0.1 (`tiny_http`) serving the built viewer (the one in the binary, or `--dist`) and the
//! named files, and the browser (`webbrowser`) on `/?url=files/0/NAME&url=files/1/NAME…`: the
//! page opens each file at start (www/js/share.js `urlParams`).
//!
//! What is served, and nothing else (any other path: 404):
//! - `/` and the viewer's files by their path relative to dist/, when every segment of the path
//!   is a plain name (letters, digits, `.`, `_`, `-`; not `.` or `..`): no percent-decoding, so no
//!   encoded slash or dot reaches the file system, and an absolute path is no name;
//! - `/files/I/NAME`, exactly as printed (NAME percent-encoded), for the I-th file named.
//!
//! Only GET and HEAD; the files are sent as they are on disk, read when asked. Ctrl-C stops.

use crate::cli::OpenArgs;
use crate::cmd::html::{dist::Dist, find_viewer};
use crate::out::{stdout, Done, Fail};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Threads answering requests (a large file being sent does not hold up the page's modules).
const THREADS: usize = 4;

/// One file named on the command line.
struct Served {
    /// Its URL path, `/files/I/NAME`.
    url: String,
    path: String,
}

/// A file name's characters that go into a URL as they are (RFC 3986 unreserved); every other
/// byte of its UTF-8 is percent-encoded.
fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The path of a viewer file relative to dist/, when `path` (a request's path, `/…`) names one
/// in the plain form this server accepts; `/` is index.html.
fn viewer_path(path: &str) -> Option<&str> {
    let rel = path.strip_prefix('/')?;
    if rel.is_empty() {
        return Some("index.html");
    }
    let plain = |seg: &str| {
        !seg.is_empty()
            && seg != "."
            && seg != ".."
            && seg
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    rel.split('/').all(plain).then_some(rel)
}

/// The Content-Type of a viewer file by its extension.
fn mime(rel: &str) -> &'static str {
    match rel.rsplit_once('.').map_or("", |(_, e)| e) {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// A response header; every name and value used here is ASCII without line breaks.
fn with_headers<R: std::io::Read>(
    mut r: tiny_http::Response<R>,
    headers: &[(&str, &str)],
) -> tiny_http::Response<R> {
    for (name, value) in headers {
        if let Ok(h) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            r.add_header(h);
        }
    }
    r
}

/// The headers of every file served.
const COMMON: [(&str, &str); 3] = [
    ("X-Content-Type-Options", "nosniff"),
    ("Cache-Control", "no-store"),
    ("Referrer-Policy", "no-referrer"),
];

/// Answers one request (tiny_http leaves out the body of a HEAD's answer).
fn respond(req: tiny_http::Request, dist: &Dist, files: &[Served]) {
    use tiny_http::{Method, Response};
    if !matches!(req.method(), Method::Get | Method::Head) {
        let r = Response::from_string("only GET and HEAD\n").with_status_code(405);
        let _ = req.respond(with_headers(r, &[("Allow", "GET, HEAD")]));
        return;
    }
    let path = req.url().split(['?', '#']).next().unwrap_or("").to_string();
    let not_found = || Response::from_string("not found\n").with_status_code(404);
    if let Some(f) = files.iter().find(|f| f.url == path) {
        let _ = match std::fs::File::open(&f.path) {
            Ok(file) => {
                let r = Response::from_file(file);
                let r = with_headers(r, &[("Content-Type", "application/octet-stream")]);
                req.respond(with_headers(r, &COMMON))
            }
            Err(e) => {
                crate::out::warn(&format!("memviz: {}: cannot read: {e}", f.path));
                req.respond(not_found())
            }
        };
        return;
    }
    let found = viewer_path(&path).and_then(|rel| Some((rel, dist.get(rel)?)));
    let _ = match found {
        Some((rel, bytes)) => {
            let r = Response::from_data(bytes.into_owned());
            let r = with_headers(r, &[("Content-Type", mime(rel))]);
            req.respond(with_headers(r, &COMMON))
        }
        None => req.respond(not_found()),
    };
}

/// Runs `memviz open`: serves until the process is stopped (Ctrl-C).
pub fn run(a: &OpenArgs) -> Done {
    let dist = find_viewer(a.dist.as_deref())?;
    let mut files = Vec::new();
    for (i, path) in a.files.iter().enumerate() {
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => {}
            Ok(_) => return Err(Fail::Msg(format!("{path}: not a file"))),
            Err(e) => return Err(Fail::Msg(format!("{path}: cannot open: {e}"))),
        }
        let name = Path::new(path).file_name().map_or_else(
            || "snapshot".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        files.push(Served {
            url: format!("/files/{i}/{}", encode(&name)),
            path: path.clone(),
        });
    }
    let server = tiny_http::Server::http(("127.0.0.1", a.port))
        .map_err(|e| Fail::Msg(format!("cannot listen on 127.0.0.1:{}: {e}", a.port)))?;
    let port = server
        .server_addr()
        .to_ip()
        .map_or(a.port, |addr| addr.port());
    let query: Vec<String> = files
        .iter()
        .map(|f| format!("url={}", encode(f.url.trim_start_matches('/'))))
        .collect();
    let url = format!("http://127.0.0.1:{port}/?{}", query.join("&"));
    let mut out = stdout();
    writeln!(out, "{url}")?;
    writeln!(
        out,
        "memviz: serving {} file(s) and {} on 127.0.0.1 port {port}; Ctrl-C stops",
        files.len(),
        dist.describe()
    )?;
    out.finish()?;
    if !a.no_browser {
        if let Err(e) = webbrowser::open(&url) {
            crate::out::warn(&format!(
                "memviz: cannot start a browser ({e}); open {url} yourself"
            ));
        }
    }
    let server = Arc::new(server);
    let shared = Arc::new((dist, files));
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (server, shared) = (Arc::clone(&server), Arc::clone(&shared));
            std::thread::spawn(move || {
                for req in server.incoming_requests() {
                    respond(req, &shared.0, &shared.1);
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_are_viewer_paths() {
        assert_eq!(viewer_path("/"), Some("index.html"));
        assert_eq!(viewer_path("/js/main.js"), Some("js/main.js"));
        for bad in [
            "/../Cargo.toml",
            "/js/../../x",
            "//etc/passwd",
            "/js//main.js",
            "/%2e%2e/x",
            "/js%2Fmain.js",
            "/./index.html",
            "/a\\b",
            "relative",
            "/js/",
        ] {
            assert_eq!(viewer_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn names_are_percent_encoded() {
        assert_eq!(encode("a b/ä?.pickle"), "a%20b%2F%C3%A4%3F.pickle");
        assert_eq!(mime("x_bg.wasm"), "application/wasm");
        assert_eq!(mime("js/main.js"), "text/javascript; charset=utf-8");
    }
}
