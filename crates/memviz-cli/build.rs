//! Picks the built viewer to embed (src/cmd/html/dist.rs): the repository's dist/ when it holds
//! an index.html (`trunk --config trunk.toml build --release --offline`), else an empty
//! directory, so a plain `cargo build` of a fresh clone still builds a `memviz` (that says it
//! has no viewer). A new or changed dist/ re-embeds.
//!
//! dist/ is made (empty) when missing: see below.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let dist = manifest.join("../../dist");
    // Cargo reruns a build script whose watched path is missing on every build (and so
    // recompiles memviz); an empty dist/ (git-ignored, where trunk builds) is watched instead.
    if !dist.exists() {
        let _ = std::fs::create_dir_all(&dist);
    }
    println!("cargo:rerun-if-changed={}", dist.display());
    println!("cargo:rerun-if-changed=build.rs");
    let folder = if dist.join("index.html").is_file() {
        dist.canonicalize().unwrap_or(dist)
    } else {
        let empty =
            PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("no-dist");
        std::fs::create_dir_all(&empty).expect("create OUT_DIR/no-dist");
        empty
    };
    println!("cargo:rustc-env=MEMVIZ_EMBED_DIST={}", folder.display());
}
