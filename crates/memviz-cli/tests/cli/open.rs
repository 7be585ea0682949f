//! `memviz open --no-browser --port 0 FILE…`: the server prints its URL, serves the viewer and
//! the named files, and answers 404 to every other path (`..`, encoded slashes, absolute paths,
//! files it was not given). Fetched with a plain `TcpStream`. The viewer built into the binary
//! is checked when the binary has one (built after `trunk build` wrote dist/); a small dist/ of
//! our own (`--dist`) is checked always.

use crate::common;

use common::{fixture, path_str, unique};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running `memviz open`, stopped when dropped.
struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`
    base: String,
    /// The full URL it printed.
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `memviz open --no-browser --port 0 ARGS…`; `Err(stderr)` when it exits instead.
fn start(args: &[&str]) -> Result<Server, String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_memviz"))
        .args(["open", "--no-browser", "--port", "0"])
        .args(args)
        .env_remove("MEMVIZ_DIST")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("memviz runs");
    let mut first = String::new();
    let stdout = child.stdout.take().expect("stdout");
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("read stdout");
    if first.is_empty() {
        let status = child.wait().expect("wait");
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        assert_eq!(status.code(), Some(2), "{err}");
        return Err(err);
    }
    let url = first.trim().to_string();
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .unwrap_or_else(|| panic!("a 127.0.0.1 URL: {url}"));
    let port: u16 = rest[..rest.find('/').expect("path")].parse().expect("port");
    assert_ne!(port, 0);
    Ok(Server {
        child,
        base: format!("http://127.0.0.1:{port}"),
        url,
    })
}

/// One response: status, headers (lower-cased names), body.
struct Got {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Got {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `METHOD PATH` sent as it is (no normalising of `..` or `%2f`); HTTP/1.0, so the body comes
/// whole (not chunked) and the server closes the connection.
fn fetch_with(server: &Server, method: &str, path: &str) -> Got {
    let hostport = server.base.trim_start_matches("http://");
    let mut s = TcpStream::connect(hostport).expect("connect");
    write!(s, "{method} {path} HTTP/1.0\r\nHost: {hostport}\r\n\r\n").expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("end of headers");
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Got {
        status,
        headers,
        body: raw[end + 4..].to_vec(),
    }
}

fn fetch(server: &Server, path: &str) -> Got {
    fetch_with(server, "GET", path)
}

/// Every path outside what was named answers 404.
fn assert_refuses_the_rest(server: &Server) {
    for path in [
        "/../Cargo.toml",
        "/../../Cargo.toml",
        "/etc/passwd",
        "//etc/passwd",
        "/files/1/x",
        "/files/0/../../Cargo.toml",
        "/files/0/%2e%2e%2f%2e%2e%2fCargo.toml",
        "/%2e%2e/Cargo.toml",
        "/js%2fmain.js",
        "/..%2fCargo.toml",
        "/./index.html",
        "/secret.txt",
        "/index.html/",
        "http://127.0.0.1/etc/passwd",
    ] {
        let g = fetch(server, path);
        assert_eq!(g.status, 404, "{path}");
        assert!(
            !String::from_utf8_lossy(&g.body).contains("[package]"),
            "{path}"
        );
    }
    assert_eq!(fetch_with(server, "POST", "/").status, 405);
}

/// The first served file: 200 with exactly its bytes.
fn assert_serves_file(server: &Server, file: &Path) {
    let q = server.url.split_once("?url=").expect("?url=").1;
    // The page resolves `url` against itself: files%2F0%2FNAME → /files/0/NAME.
    let rel = q.split('&').next().expect("first").replace("%2F", "/");
    let rel = rel.replace("%25", "%");
    let g = fetch(server, &format!("/{rel}"));
    assert_eq!(g.status, 200, "{rel}");
    let want = std::fs::read(file).expect("read fixture");
    assert_eq!(g.body.len(), want.len(), "{rel}");
    assert!(g.body == want, "{rel}: other bytes");
    assert_eq!(g.header("x-content-type-options"), Some("nosniff"));
}

/// A dist/ of our own: index.html, a module, a wasm, and a file beside dist/ it must not serve.
fn small_dist() -> PathBuf {
    let root = unique(&common::repo_root().join("target/test-fixtures/open-dist"));
    let dist = root.join("dist");
    std::fs::create_dir_all(dist.join("js")).expect("mkdir");
    std::fs::write(dist.join("index.html"), "<!doctype html><title>t</title>").expect("w");
    std::fs::write(dist.join("js/main.js"), "export const a = 1;\n").expect("w");
    std::fs::write(dist.join("x_bg.wasm"), b"\0asm\x01\0\0\0").expect("w");
    std::fs::write(root.join("secret.txt"), "secret").expect("w");
    dist
}

#[test]
fn open_serves_a_given_dist_and_the_files_and_nothing_else() {
    let file = fixture("proto5.pickle");
    let dist = small_dist();
    let server = start(&[&path_str(&file), "--dist", &path_str(&dist)]).expect("serves");
    assert!(
        server.url.contains("?url=files%2F0%2Fproto5.pickle"),
        "{}",
        server.url
    );
    let index = fetch(&server, "/");
    assert_eq!(index.status, 200);
    assert_eq!(
        index.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let wasm = fetch(&server, "/x_bg.wasm");
    assert_eq!(wasm.header("content-type"), Some("application/wasm"));
    assert_eq!(wasm.body, b"\0asm\x01\0\0\0");
    let js = fetch(&server, "/js/main.js?v=1");
    assert_eq!(
        js.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_serves_file(&server, &file);
    assert_refuses_the_rest(&server);
    drop(server);
    let _ = std::fs::remove_dir_all(dist.parent().expect("root"));
}

#[test]
fn several_files_are_each_named_in_the_url_with_names_encoded() {
    let dir = unique(&common::repo_root().join("target/test-fixtures/open-names"));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let a = dir.join("rank 0 & <x>.pickle");
    let b = dir.join("rank1.pickle");
    std::fs::copy(fixture("proto5.pickle"), &a).expect("copy");
    std::fs::copy(fixture("vector.pickle"), &b).expect("copy");
    let dist = small_dist();
    let server =
        start(&[&path_str(&a), &path_str(&b), "--dist", &path_str(&dist)]).expect("serves");
    assert!(
        server.url.ends_with(
            "/?url=files%2F0%2Frank%25200%2520%2526%2520%253Cx%253E.pickle&url=files%2F1%2Frank1.pickle"
        ),
        "{}",
        server.url
    );
    assert_serves_file(&server, &a);
    let g = fetch(&server, "/files/1/rank1.pickle");
    assert!(g.body == std::fs::read(&b).expect("read"), "other bytes");
    // Another name, or a file under another's number, is no path of ours.
    assert_eq!(fetch(&server, "/files/0/rank0.pickle").status, 404);
    assert_eq!(fetch(&server, "/files/0/rank1.pickle").status, 404);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(dist.parent().expect("root"));
}

#[test]
fn open_serves_the_viewer_built_into_the_binary() {
    let file = fixture("proto5.pickle");
    let server = match start(&[&path_str(&file)]) {
        Ok(s) => s,
        Err(stderr) => {
            // Built before dist/ existed: it says so (one line), and --dist still works (above).
            assert!(stderr.contains("built without the viewer"), "{stderr}");
            assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
            eprintln!("note: memviz was built without the viewer; its checks skipped");
            return;
        }
    };
    let index = fetch(&server, "/");
    assert_eq!(index.status, 200);
    let html = String::from_utf8_lossy(&index.body).into_owned();
    let wasm = html
        .split(['"', '\''])
        .find(|s| s.ends_with("_bg.wasm"))
        .expect("index.html names the wasm")
        .trim_start_matches("./")
        .trim_start_matches('/')
        .to_string();
    let w = fetch(&server, &format!("/{wasm}"));
    assert_eq!(w.status, 200, "{wasm}");
    assert_eq!(w.header("content-type"), Some("application/wasm"));
    assert!(w.body.starts_with(b"\0asm"));
    let js = fetch(&server, "/js/main.js");
    assert_eq!(js.status, 200);
    assert_eq!(
        js.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_serves_file(&server, &file);
    assert_refuses_the_rest(&server);
}

#[test]
fn a_missing_file_is_one_line_before_serving() {
    let dist = small_dist();
    let err = start(&["/no/such/file.pickle", "--dist", &path_str(&dist)])
        .err()
        .expect("refused");
    assert!(err.contains("/no/such/file.pickle: cannot open"), "{err}");
    let _ = std::fs::remove_dir_all(dist.parent().expect("root"));
}
