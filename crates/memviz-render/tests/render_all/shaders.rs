//! Every `shader/*.wgsl` parses and validates with naga (the compiler inside wgpu), and every
//! entry point translates to WebGL2's GLSL ES 3.00. Shaders compile lazily at run time, so
//! without this test a user's browser would be the first to find a mistake.

// Native only: offscreen rendering and file access do not exist on wasm32.
#![cfg(not(target_arch = "wasm32"))]

use std::path::PathBuf;

fn shader_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("shader");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("shader/ directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "wgsl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .wgsl files in {}", dir.display());
    files
}

fn parse_and_validate(path: &PathBuf) -> (naga::Module, naga::valid::ModuleInfo) {
    let source = std::fs::read_to_string(path).expect("read shader");
    let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| {
        panic!(
            "{}",
            e.emit_to_string_with_path(&source, &path.display().to_string())
        )
    });
    // No optional capabilities: what validates here is what the WebGL2 baseline can run.
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    )
    .validate(&module)
    .unwrap_or_else(|e| {
        panic!(
            "{}",
            e.emit_to_string_with_path(&source, &path.display().to_string())
        )
    });
    (module, info)
}

#[test]
fn every_wgsl_file_validates() {
    for path in shader_files() {
        parse_and_validate(&path);
    }
}

#[test]
fn every_entry_point_translates_to_webgl2_glsl() {
    for path in shader_files() {
        let (module, info) = parse_and_validate(&path);
        assert!(
            !module.entry_points.is_empty(),
            "{}: no entry points",
            path.display()
        );
        for entry in &module.entry_points {
            let options = naga::back::glsl::Options {
                version: naga::back::glsl::Version::Embedded {
                    version: 300,
                    is_webgl: true,
                },
                ..naga::back::glsl::Options::default()
            };
            let pipeline = naga::back::glsl::PipelineOptions {
                shader_stage: entry.stage,
                entry_point: entry.name.clone(),
                multiview: None,
            };
            let mut glsl = String::new();
            let mut writer = naga::back::glsl::Writer::new(
                &mut glsl,
                &module,
                &info,
                &options,
                &pipeline,
                naga::proc::BoundsCheckPolicies::default(),
            )
            .unwrap_or_else(|e| panic!("{} {}: {e}", path.display(), entry.name));
            writer
                .write()
                .unwrap_or_else(|e| panic!("{} {}: {e}", path.display(), entry.name));
            assert!(
                glsl.starts_with("#version 300 es"),
                "{}",
                glsl.lines().next().unwrap_or("")
            );
        }
    }
}

#[test]
fn the_crate_embeds_the_file_on_disk() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("shader/trapezoid.wgsl");
    assert_eq!(
        std::fs::read_to_string(path).expect("read"),
        memviz_render::TRAPEZOID_WGSL
    );
}
