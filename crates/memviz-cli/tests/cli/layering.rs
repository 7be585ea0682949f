//! Keeps the architecture honest: every crate is in ARCHITECTURE.md, and the core crates stay
//! free of rendering and web dependencies.

use crate::common;
use common::repo_root;

fn dependencies(manifest: &str) -> Vec<String> {
    // Names in [dependencies] / [dev-dependencies] / [build-dependencies] tables.
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_deps = t.contains("dependencies");
            continue;
        }
        if in_deps {
            if let Some(name) = t
                .split(['=', '.', ' '])
                .next()
                .filter(|n| !n.is_empty() && !n.starts_with('#'))
            {
                out.push(name.to_string());
            }
        }
    }
    out
}

#[test]
fn architecture_md_lists_every_crate() {
    let arch =
        std::fs::read_to_string(repo_root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    for e in std::fs::read_dir(repo_root().join("crates")).expect("crates/") {
        let name = e.expect("entry").file_name().to_string_lossy().to_string();
        assert!(
            arch.contains(&format!("`{name}`")),
            "ARCHITECTURE.md does not describe crate {name}"
        );
    }
}

#[test]
fn core_crates_know_nothing_of_gpu_or_web() {
    let forbidden = ["wgpu", "web-sys", "wasm-bindgen", "js-sys", "winit"];
    for krate in [
        "memviz-pickle",
        "memviz-snapshot",
        "memviz-analysis",
        "memviz-present",
        "memviz-alloc",
    ] {
        let manifest =
            std::fs::read_to_string(repo_root().join("crates").join(krate).join("Cargo.toml"))
                .expect("manifest");
        for dep in dependencies(&manifest) {
            assert!(
                !forbidden.contains(&dep.as_str()),
                "{krate} depends on {dep}"
            );
        }
    }
    let pickle = std::fs::read_to_string(repo_root().join("crates/memviz-pickle/Cargo.toml"))
        .expect("manifest");
    assert!(
        dependencies(&pickle)
            .iter()
            .all(|d| !d.starts_with("memviz")),
        "memviz-pickle must not depend on other memviz crates"
    );
}

/// The domain (memviz-analysis) knows nothing of what is drawn; the presentation sits on it and
/// on the snapshot model only.
#[test]
fn presentation_sits_above_the_domain() {
    let read = |krate: &str| {
        std::fs::read_to_string(repo_root().join("crates").join(krate).join("Cargo.toml"))
            .expect("manifest")
    };
    let analysis = dependencies(&read("memviz-analysis"));
    assert!(
        analysis
            .iter()
            .all(|d| !d.starts_with("memviz") || d == "memviz-snapshot"),
        "memviz-analysis depends on {analysis:?}"
    );
    let present = dependencies(&read("memviz-present"));
    assert!(
        present
            .iter()
            .all(|d| !d.starts_with("memviz") || d == "memviz-snapshot" || d == "memviz-analysis"),
        "memviz-present depends on {present:?}"
    );
    // The allocator model is domain too: it reads the model and the analyses, never what is drawn.
    let alloc = dependencies(&read("memviz-alloc"));
    assert!(
        alloc
            .iter()
            .all(|d| !d.starts_with("memviz") || d == "memviz-snapshot" || d == "memviz-analysis"),
        "memviz-alloc depends on {alloc:?}"
    );
}

#[test]
fn the_renderer_knows_nothing_of_snapshots() {
    let manifest = std::fs::read_to_string(repo_root().join("crates/memviz-render/Cargo.toml"))
        .expect("manifest");
    let deps = dependencies(&manifest);
    assert!(
        deps.iter().all(|d| !d.starts_with("memviz")),
        "memviz-render depends on {deps:?}"
    );
}

/// The shell only places Rust's strings as text: no HTML sinks anywhere in www/js.
#[test]
fn the_shell_never_parses_strings_as_html() {
    let mut dirs = vec![repo_root().join("www/js")];
    let mut checked = 0;
    // www/js and its subfolders (www/js/panels/).
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).expect("www/js") {
            let path = e.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|x| x != "js") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read");
            for sink in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "createContextualFragment",
                "eval(",
                "new Function",
            ] {
                assert!(
                    !text.contains(sink),
                    "{} uses {sink}: set text with textContent instead",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 10,
        "www/js and www/js/panels have the shell's modules"
    );
}
