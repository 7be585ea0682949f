//! The build and test commands: `serve`, `site`, `test` (the README's test command, step by step),
//! `gen-types`, `lint-js`, and the node and wasm builds they share.

use super::*;

pub(crate) fn serve(port: u16) -> Result<()> {
    install()?;
    let port = port.to_string();
    eprintln!("serve: http://127.0.0.1:{port}/ (Ctrl-C to stop)");
    run(trunk(&[
        "serve",
        "--release",
        "--offline",
        "--address",
        "127.0.0.1",
        "--port",
        &port,
    ]))
}

/// `cargo xtask site`: only what the page's build needs (no Debian or Python packages; npm for
/// wasm-opt), then the trunk build of `test`'s step 5.
pub(crate) fn site() -> Result<()> {
    install::ensure_site_tools()?;
    trunk_build()
}

pub(crate) fn trunk_build() -> Result<()> {
    run(trunk(&["build", "--release", "--offline"]))
}

/// `trunk --config trunk.toml ARGS` with tests/web's npm programs first on PATH, so that trunk
/// takes npm's wasm-opt (binaryen 116, trunk.toml's `version_116`) and, being `--offline`,
/// downloads nothing.
pub(crate) fn trunk(args: &[&str]) -> Command {
    let mut c = cmd("trunk", ["--config", TRUNK_CONFIG]);
    c.args(args);
    let old = env::var_os("PATH").unwrap_or_default();
    let parts = std::iter::once(repo_root().join(NPM_BIN)).chain(env::split_paths(&old));
    if let Ok(path) = env::join_paths(parts) {
        c.env("PATH", path);
    }
    c
}

// ---------------------------------------------------------------------------------------------
// test

pub(crate) const NODE_WASM_DIR: &str = "target/wasm-node";
/// The repository's trunk config. trunk only finds `Trunk.toml` by itself, so name it explicitly.
pub(crate) const TRUNK_CONFIG: &str = "trunk.toml";

pub(crate) fn test() -> Result<()> {
    let mut steps = Steps::new("test", 12);
    steps.step("install the pinned toolchain", install)?;
    // The Python step's fresh venv and its pinned test packages: mostly downloads, so in a
    // thread beside the builds and tests below; the Python step waits for it.
    let venv = std::thread::spawn(python::prepare_test_venv);
    // First: seconds, and a type error in the shell fails before the long builds.
    steps.step(
        "the shell's JS: type check (tsc --checkJs) and lint (eslint)",
        lint_js,
    )?;
    steps.step(
        "the shell's node unit tests (tests/web/share.test.mjs)",
        || node_tests(&["share.test.mjs"]),
    )?;
    // The page's build and clippy at the same time: the build spends minutes on one core (the
    // fat-LTO link of the wasm, wasm-opt in node), which clippy's checking fills (docs/ci.md).
    // dist/ first: memviz-cli embeds it when it is built (its build.rs), so the Rust tests
    // below (`memviz open`, `memviz html` without --dist) test the viewer of this checkout.
    steps.together(vec![
        ("web bundle (trunk build into dist/)", Box::new(trunk_build)),
        ("clippy (warnings are errors)", Box::new(clippy)),
    ])?;
    // Built here, run below beside the browser tests. Cargo.toml's `ci` profile: release's
    // optimisation without LTO, so the test binaries (one per crate's tests/ where they can
    // share a process: docs/ci.md) link in a fraction of release's time.
    steps.step("Rust tests: build (profile ci)", || {
        run(cmd(
            "cargo",
            ["test", "--workspace", "--profile", CI_PROFILE, "--no-run"],
        ))
    })?;
    steps.step(
        "native CLI (the tests' ci build, the reference for the wasm and page tests: MEMVIZ_CLI)",
        native_cli,
    )?;
    steps.step("node-targeted wasm", build_node_wasm)?;
    steps.step(
        "wasm in node vs native CLI (tests/web/wasm_node.test.mjs)",
        || node_tests(&["wasm_node.test.mjs"]),
    )?;
    // The browser tests, the Rust tests (built above) and the wheel at the same time: the
    // browser runs one test file at a time and mostly waits on frames (about one core busy),
    // which the Rust tests' run and maturin's build fill (docs/ci.md).
    steps.together(vec![
        (
            "page in headless Chromium (tests/web/page.test.mjs, layout.test.mjs, report.test.mjs, escaping.test.mjs, open.test.mjs, formats.test.mjs, defects.test.mjs, gpu_fallback.test.mjs, accelerator.test.mjs, sites.test.mjs, flame_modes.test.mjs, whatif.test.mjs, filter.test.mjs)",
            Box::new(|| node_tests(&["page.test.mjs", "layout.test.mjs", "report.test.mjs", "escaping.test.mjs", "open.test.mjs", "formats.test.mjs", "defects.test.mjs", "gpu_fallback.test.mjs", "accelerator.test.mjs", "sites.test.mjs", "flame_modes.test.mjs", "whatif.test.mjs", "filter.test.mjs"])),
        ),
        (
            "Rust tests: run (profile ci)",
            Box::new(|| {
                // The render tests skip without a GPU adapter; here one is required (llvmpipe).
                let mut c = cmd("cargo", ["test", "--workspace", "--profile", CI_PROFILE]);
                c.env("MEMVIZ_REQUIRE_GPU", "1");
                run(c)
            }),
        ),
        (
            "the wheel (maturin) in a fresh venv: memviz summary, tests/python (API, notebook, Dask ranks)",
            Box::new(move || {
                venv.join()
                    .unwrap_or_else(|_| Err("the test venv thread panicked".to_owned()))
                    .map_err(|e| format!("the test venv: {e}"))?;
                python::python_tests_in_venv()
            }),
        ),
    ])?;
    eprintln!("\nxtask test: all steps passed");
    Ok(())
}

/// `cargo clippy` with warnings as errors, on the workspace (profile `ci`, as the tests: the
/// proc macros and build scripts that clippy compiles and runs are then the tests' ones, in
/// target/ci) and on the browser-only code (cfg wasm32: the WebViewer, the canvas context).
fn clippy() -> Result<()> {
    run(cmd(
        "cargo",
        [
            "clippy",
            "--workspace",
            "--all-targets",
            "--profile",
            CI_PROFILE,
            "--",
            "-D",
            "warnings",
        ],
    ))?;
    run(cmd(
        "cargo",
        [
            "clippy",
            "-p",
            "memviz-web",
            "-p",
            "memviz-render",
            "--target",
            "wasm32-unknown-unknown",
            "--profile",
            CI_PROFILE,
            "--",
            "-D",
            "warnings",
        ],
    ))
}

/// The profile of `test`'s native builds: clippy, the Rust tests, the CLI the page tests compare
/// with, and the wheel (Cargo.toml: release's optimisation without LTO; docs/ci.md).
pub(crate) const CI_PROFILE: &str = "ci";
/// The native CLI the wasm and page tests compare with (tests/web reads `MEMVIZ_CLI`): the `ci`
/// build of `memviz` that `cargo test --workspace --profile ci --no-run` has just built for memviz-cli's
/// tests (with this checkout's dist/ inside), instead of building memviz-cli and its
/// dependencies again in `release` (thin LTO).
const NATIVE_CLI: &str = "target/ci/memviz";

/// Checks that the Rust tests' step built the native CLI the node tests run ([`NATIVE_CLI`]).
pub(crate) fn native_cli() -> Result<()> {
    if !Path::new(NATIVE_CLI).is_file() {
        return Err(format!(
            "{NATIVE_CLI} is missing: the Rust tests' build step builds it (cargo test --workspace --profile {CI_PROFILE} --no-run)"
        ));
    }
    eprintln!("native CLI: {NATIVE_CLI}");
    Ok(())
}

/// Writes www/js/generated/ from the Rust types: memviz-viewer's `ts_types` tests (in `tests/viewer_all`) in write mode
/// (without it, the same test fails while the committed files differ).
pub(crate) fn gen_types() -> Result<()> {
    let mut c = cmd(
        "cargo",
        [
            "test",
            "--release",
            "-p",
            "memviz-viewer",
            "--test",
            "viewer_all",
            "ts_types::",
        ],
    );
    c.env("MEMVIZ_WRITE_TYPES", "1");
    run(c)
}

/// The shell's check: `tsc --checkJs --noEmit` on the main thread's modules (DOM lib) and on the
/// worker (WebWorker lib), then eslint; the tools are tests/web's pinned npm packages.
pub(crate) fn lint_js() -> Result<()> {
    install::ensure_npm_packages()?;
    let bin = |tool: &str| format!("tests/web/node_modules/.bin/{tool}");
    for config in ["www/jsconfig.json", "www/jsconfig.worker.json"] {
        run(cmd(
            &bin("tsc"),
            ["-p", config, "--checkJs", "--noEmit", "--pretty", "false"],
        ))?;
    }
    run(cmd(
        &bin("eslint"),
        [
            "--config",
            "tests/web/eslint.config.mjs",
            "--max-warnings",
            "0",
            "www/js",
            "www/report",
        ],
    ))
}

/// The page's profile (index.html's `data-cargo-profile`).
pub(crate) const PAGE_PROFILE: &str = "wasm-release";

/// memviz-web for node: the page's own build (the profile of index.html, which `trunk build`
/// has just built, so cargo finds it fresh and only wasm-bindgen runs), bound for node.
pub(crate) fn build_node_wasm() -> Result<()> {
    run(cmd(
        "cargo",
        [
            "build",
            "-p",
            "memviz-web",
            "--profile",
            PAGE_PROFILE,
            "--target",
            WASM_TARGET,
        ],
    ))?;
    let wasm = format!("target/{WASM_TARGET}/{PAGE_PROFILE}/memviz_web.wasm");
    run(cmd(
        "wasm-bindgen",
        ["--target", "nodejs", "--out-dir", NODE_WASM_DIR, &wasm],
    ))
}

/// `node --test` on the given files of tests/web (every `*.test.mjs` there must be listed by
/// some step; checked here so a new test file is not silently skipped).
pub(crate) fn node_tests(files: &[&str]) -> Result<()> {
    let mut known: Vec<String> = fs::read_dir("tests/web")
        .map_err(|e| format!("cannot list tests/web: {e}"))?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".test.mjs"))
        .collect();
    known.sort();
    for name in files {
        if !known.iter().any(|k| k == name) {
            return Err(format!("tests/web/{name} is missing"));
        }
    }
    let expected = [
        "share.test.mjs",
        "page.test.mjs",
        "layout.test.mjs",
        "open.test.mjs",
        "report.test.mjs",
        "escaping.test.mjs",
        "formats.test.mjs",
        "defects.test.mjs",
        "gpu_fallback.test.mjs",
        "accelerator.test.mjs",
        "sites.test.mjs",
        "flame_modes.test.mjs",
        "whatif.test.mjs",
        "filter.test.mjs",
        "wasm_node.test.mjs",
    ];
    if let Some(extra) = known.iter().find(|k| !expected.contains(&k.as_str())) {
        return Err(format!("tests/web/{extra} is not run by any step of `cargo xtask test`: add it in crates/xtask"));
    }
    let mut c = cmd("node", ["--test", "--test-reporter=spec"]);
    c.args(files.iter().map(|f| format!("tests/web/{f}")));
    c.env("MEMVIZ_CLI", NATIVE_CLI);
    run(c)
}
