//! Helpers shared by the viewer tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use memviz_render::{Image, Offscreen, RenderError};
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
    match Offscreen::new() {
        Ok(o) => {
            let info = o.adapter_info();
            eprintln!(
                "{test}: adapter {:?} ({:?}, {:?})",
                info.name, info.backend, info.device_type
            );
            Some(o)
        }
        Err(RenderError::NoAdapter(why))
            if std::env::var_os("MEMVIZ_REQUIRE_GPU").is_none_or(|v| v != "1") =>
        {
            eprintln!("SKIPPED {test}: no wgpu adapter on this machine ({why})");
            None
        }
        Err(e) => panic!("{test}: {e}"),
    }
}

pub fn write_png(img: &Image, name: &str) -> PathBuf {
    let dir = repo_root().join("target/screenshots");
    std::fs::create_dir_all(&dir).expect("mkdir screenshots");
    let path = dir.join(name);
    let file = std::fs::File::create(&path).expect("create png");
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), img.width, img.height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
    encoder
        .write_header()
        .expect("png header")
        .write_image_data(&img.rgba)
        .expect("png data");
    path
}
