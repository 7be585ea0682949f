//! Picks the built viewer to embed (src/cmd/html/dist.rs): the repository's dist/ when it holds
//! an index.html (`trunk --config trunk.toml build --release --offline`), else an empty
//! directory, so a plain `cargo build` of a fresh clone still builds a `memviz` (that says it
//! has no viewer). A new or changed dist/ re-embeds.
//!
//! With the `site` feature (the wheel: pyproject.toml) a missing dist/ is built first, by
//! `cargo xtask site` in a target directory of its own (`target/site`: the outer build holds
//! the lock of `target/`), so `pip wheel .` from a clean checkout embeds the viewer.
//!
//! dist/ is made (empty) when missing: see below.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Variables cargo sets for this build script (or that steer a cargo build) which must not
/// leak into the nested build: it is a build of its own, for the host and for wasm32.
fn nested_build_env_ok(key: &str) -> bool {
    const KEEP_CARGO: &[&str] = &[
        "CARGO_HOME",
        "CARGO_NET_",
        "CARGO_HTTP_",
        "CARGO_REGISTRIES_",
        "CARGO_REGISTRY_",
        "CARGO_SOURCE_",
    ];
    const DROP: &[&str] = &[
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "RUSTC",
        "RUSTDOC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_LINKER",
        "TARGET",
        "HOST",
        "OUT_DIR",
        "PROFILE",
        "OPT_LEVEL",
        "DEBUG",
        "NUM_JOBS",
        "MAKEFLAGS",
        "MFLAGS",
    ];
    if key.starts_with("CARGO") {
        return KEEP_CARGO.iter().any(|k| key.starts_with(k));
    }
    !(DROP.contains(&key) || key.starts_with("DEP_") || key.starts_with("PYO3_"))
}

/// Builds dist/ with `cargo xtask site`; panics (the build script's way to fail) with what to do.
fn build_site(root: &Path) {
    println!("cargo:warning=memviz: no dist/ here: building the viewer first (cargo xtask site, several minutes)");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut c = Command::new(cargo);
    c.args(["run", "--quiet", "--package", "xtask", "--", "site"])
        .current_dir(root)
        .env_clear()
        .envs(std::env::vars_os().filter(|(k, _)| k.to_str().is_some_and(nested_build_env_ok)))
        .env("CARGO_TARGET_DIR", root.join("target/site"));
    match c.status() {
        Ok(s) if s.success() && root.join("dist/index.html").is_file() => {}
        Ok(s) => panic!(
            "`cargo xtask site` (building the viewer into dist/) failed ({s}); run it in {} to see why",
            root.display()
        ),
        Err(e) => panic!("cannot run cargo to build the viewer: {e}"),
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.join("../..");
    let dist = root.join("dist");
    if std::env::var_os("CARGO_FEATURE_SITE").is_some()
        && !dist.join("index.html").is_file()
        && root.join("trunk.toml").is_file()
    {
        build_site(&root);
    }
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
