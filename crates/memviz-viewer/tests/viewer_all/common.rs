//! Helpers shared by the viewer tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use memviz_render::{Image, Offscreen};
use memviz_viewer::App;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

pub const NOT_HANMIN: &str = "notHanmin__assignment2-systems__memory_snapshot.pickle";

/// A real corpus file, or `None` (with a note) when `../shared/corpus/real` is absent.
pub fn corpus_file(name: &str) -> Option<PathBuf> {
    let p = repo_root().join("../shared/corpus/real").join(name);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("note: {} not found; test skipped", p.display());
        None
    }
}

/// `tests/fixtures/generate.py small DIR`, once per test binary.
pub fn fixture(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = repo_root()
            .join("target/test-fixtures")
            .join(format!("viewer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let st = Command::new("python3")
            .arg(repo_root().join("tests/fixtures/generate.py"))
            .arg("small")
            .arg(&dir)
            .status()
            .expect("python3 runs");
        assert!(st.success(), "generate.py small failed");
        dir
    })
    .join(name)
}

pub fn load_app(path: &Path) -> App {
    let bytes = std::fs::read(path).expect("read snapshot");
    let snap = memviz_snapshot::load_slice(&bytes).expect("parse snapshot");
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
    App::new(name, snap)
}

pub fn offscreen(test: &str) -> Option<Offscreen> {
    Offscreen::for_test(test)
}

pub fn write_png(img: &Image, name: &str) -> PathBuf {
    let path = repo_root().join("target/screenshots").join(name);
    img.write_png(&path).expect("write png");
    path
}
