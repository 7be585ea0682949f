//! `cargo xtask install`: the pinned web toolchain (wasm target, wasm-bindgen and trunk from
//! crates.io, wasm-opt from npm's `binaryen`), Debian's chromium and node, the npm packages pinned
//! in tests/web/package.json (playwright-core, typescript, eslint, esbuild, binaryen), and
//! maturin (pip, in target/py/tools); each checked first and skipped when the pinned version is
//! there. The two `cargo install`s (the long part on a fresh machine) run beside the downloads
//! (apt, npm, pip), which need the network more than the cores.

use std::collections::BTreeMap;

use super::*;
// ---------------------------------------------------------------------------------------------
// install

/// `cargo install` arguments of wasm-bindgen-cli. No `--locked`: its 0.2.130 lock file names
/// webpki-roots 1.0.11, which the registry does not serve (cargo fails to resolve it); the version
/// of wasm-bindgen-cli itself is exact, and it must equal the `wasm-bindgen` in Cargo.lock. No
/// default features: they are rustls (ring, webpki-roots) for wasm-bindgen-test-runner's https
/// downloads, which nothing here runs; `wasm-bindgen` itself does not touch the network.
const WASM_BINDGEN_INSTALL: &[&str] = &[
    "wasm-bindgen-cli",
    "--version",
    WASM_BINDGEN_VERSION,
    "--no-default-features",
];
/// `cargo install` arguments of trunk: exact version, its lock file, and no default features
/// (they are rustls, for https downloads and `serve --tls`, and the update check: nothing here
/// uses them, since trunk runs `--offline` and serves plain http on 127.0.0.1).
const TRUNK_INSTALL: &[&str] = &[
    "trunk",
    "--version",
    TRUNK_VERSION,
    "--locked",
    "--no-default-features",
];
/// trunk's own release profile is fat LTO with one codegen unit, for a tool that only
/// orchestrates cargo, wasm-bindgen and wasm-opt: both tools are built without LTO and with 16
/// codegen units, and at a low opt-level ([`TRUNK_OPT_LEVEL`], [`WASM_BINDGEN_OPT_LEVEL`]),
/// in a fraction of the time (docs/ci.md).
const TOOL_PROFILE: &[(&str, &str)] = &[
    ("CARGO_PROFILE_RELEASE_LTO", "off"),
    ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16"),
];
/// trunk does little work of its own (it runs cargo, wasm-bindgen, wasm-opt and the hooks):
/// unoptimised it builds in 430 s of CPU against 673 s at opt-level 1.
const TRUNK_OPT_LEVEL: &str = "0";
/// wasm-bindgen reads and rewrites the page's 7 MB module on every page build: at opt-level 1 it
/// writes the same bytes as at 3 in about 0.5 s more, and builds in 239 s of CPU against 295 s.
const WASM_BINDGEN_OPT_LEVEL: &str = "1";

pub(crate) fn install() -> Result<()> {
    let started = Instant::now();
    // The cargo installs use the cores; apt, npm and pip mostly wait for the network: side by
    // side. (Their logs interleave on a first run; later runs print nothing here.)
    let (rust, rest) = std::thread::scope(|scope| {
        let rust = scope.spawn(ensure_cargo_tools);
        let rest = (|| {
            ensure_debian_packages()?;
            ensure_npm_packages()?;
            python::ensure_maturin()
        })();
        let rust = rust
            .join()
            .unwrap_or_else(|_| Err("the cargo install thread panicked".to_owned()));
        (rust, rest)
    });
    rust?;
    rest?;
    ensure_npm_wasm_opt()?;
    eprintln!(
        "install: all tools present ({:.2} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// What building the page needs: the wasm target, wasm-bindgen and trunk (crates.io), and
/// wasm-opt (npm's binaryen, with the other pinned npm packages: needs `npm`).
pub(crate) fn ensure_site_tools() -> Result<()> {
    ensure_cargo_tools()?;
    ensure_npm_packages()?;
    ensure_npm_wasm_opt()
}

/// The wasm target, wasm-bindgen-cli and trunk. The two installs run side by side: each build
/// has long stretches on one core (a big crate's front end, the final link, downloading the
/// crates), which the other fills.
fn ensure_cargo_tools() -> Result<()> {
    ensure_wasm_target()?;
    let (bindgen, trunk) = std::thread::scope(|scope| {
        let bindgen = scope.spawn(|| {
            ensure_cargo_tool(
                "wasm-bindgen",
                WASM_BINDGEN_VERSION,
                WASM_BINDGEN_INSTALL,
                WASM_BINDGEN_OPT_LEVEL,
            )
        });
        let trunk = ensure_cargo_tool("trunk", TRUNK_VERSION, TRUNK_INSTALL, TRUNK_OPT_LEVEL);
        let bindgen = bindgen
            .join()
            .unwrap_or_else(|_| Err("the wasm-bindgen install thread panicked".to_owned()));
        (bindgen, trunk)
    });
    bindgen?;
    trunk
}

/// npm's wasm-opt (binaryen, pinned in tests/web/package.json) reports the version trunk.toml asks for.
pub(crate) fn ensure_npm_wasm_opt() -> Result<()> {
    let wasm_opt = format!("{NPM_BIN}/wasm-opt");
    if version_matches(&wasm_opt, WASM_OPT_REPORTED) {
        Ok(())
    } else {
        Err(format!("`{wasm_opt} --version` does not report {WASM_OPT_REPORTED} (trunk.toml's wasm_opt): pin binaryen 116.0.0 in {NPM_PACKAGE_JSON} and rerun"))
    }
}

pub(crate) fn ensure_wasm_target() -> Result<()> {
    let sysroot = quiet_output("rustc", &["--print", "sysroot"]).unwrap_or_default();
    let lib = Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(WASM_TARGET);
    if !sysroot.trim().is_empty() && lib.is_dir() {
        return Ok(());
    }
    run(cmd("rustup", ["target", "add", WASM_TARGET]))
}

/// `cargo install` (with `install_args`, at `opt_level`) unless `program --version` already
/// mentions `reported`.
pub(crate) fn ensure_cargo_tool(
    program: &str,
    reported: &str,
    install_args: &[&str],
    opt_level: &str,
) -> Result<()> {
    if version_matches(program, reported) {
        return Ok(());
    }
    eprintln!("install: {program} {reported} missing; building it (a few minutes on 2 cores)");
    let mut c = cmd("cargo", ["install"]);
    // Each in cargo's own temporary target dir: a shared one was measured and saves nothing
    // (wasm-bindgen-cli resolves newer versions than trunk's lock file, so only 2 of trunk's
    // 367 crates were reused; docs/ci.md).
    c.args(install_args)
        .envs(TOOL_PROFILE.iter().copied())
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", opt_level);
    run(c)?;
    if version_matches(program, reported) {
        Ok(())
    } else {
        Err(format!("{program} was installed but `{program} --version` does not report {reported}; is another {program} earlier on PATH?"))
    }
}

/// Debian packages the tests need, each with how to tell it is already there.
pub(crate) fn debian_packages() -> Vec<(&'static str, bool)> {
    vec![
        ("chromium", Path::new(CHROMIUM_PATH).exists()),
        ("nodejs", quiet_output("node", &["--version"]).is_some()),
        ("npm", quiet_output("npm", &["--version"]).is_some()),
        ("python3", quiet_output("python3", &["--version"]).is_some()),
        // `python3 -m venv` (the wheel's test venv) needs ensurepip, which Debian ships apart.
        (
            "python3-venv",
            quiet_output("python3", &["-c", "import ensurepip; print('ok')"])
                .is_some_and(|s| s.trim() == "ok"),
        ),
        // Mesa's GL through EGL (llvmpipe): the software adapter the offscreen render tests use.
        ("libegl1", dpkg_installed("libegl1")),
        ("libegl-mesa0", dpkg_installed("libegl-mesa0")),
        ("libgl1-mesa-dri", dpkg_installed("libgl1-mesa-dri")),
    ]
}

pub(crate) fn dpkg_installed(package: &str) -> bool {
    quiet_output("dpkg-query", &["-W", "-f=${Status}", package])
        .is_some_and(|s| s.contains("install ok installed"))
}

/// Installs the missing Debian packages (one `apt-get update`, one `apt-get install`).
pub(crate) fn ensure_debian_packages() -> Result<()> {
    let missing: Vec<&str> = debian_packages()
        .into_iter()
        .filter(|(_, present)| !present)
        .map(|(name, _)| name)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("install: Debian packages missing: {}", missing.join(" "));
    let is_root = quiet_output("id", &["-u"]).is_some_and(|s| s.trim() == "0");
    let apt = |args: &[&str]| {
        let mut c = if is_root {
            cmd("apt-get", args)
        } else {
            let mut c = cmd("sudo", ["-n", "apt-get"]);
            c.args(args);
            c
        };
        c.env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    run(apt(&["update"]))?;
    let mut args = vec!["install", "-y", "--no-install-recommends"];
    args.extend(&missing);
    run(apt(&args))?;
    let still: Vec<&str> = debian_packages()
        .into_iter()
        .filter(|(_, present)| !present)
        .map(|(name, _)| name)
        .collect();
    if still.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "apt-get ran but these are still missing: {}",
            still.join(" ")
        ))
    }
}

/// What xtask reads of a package.json: tests/web's pins, or an installed package's version.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct PackageJson {
    version: Option<String>,
    dev_dependencies: BTreeMap<String, String>,
}

fn read_package_json(path: &str) -> Result<PackageJson> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{path} is not a package.json: {e}"))
}

/// Every npm package tests/web/package.json pins, with its version; each pin must be exact
/// ("1.65.1", not "^1.65.1"), so every machine runs the same tools.
pub(crate) fn pinned_npm_packages() -> Result<Vec<(String, String)>> {
    let pins = read_package_json(NPM_PACKAGE_JSON)?.dev_dependencies;
    for (name, version) in &pins {
        let exact = !version.is_empty()
            && version.split('.').count() == 3
            && version.chars().all(|c| c.is_ascii_digit() || c == '.');
        if !exact {
            return Err(format!("{NPM_PACKAGE_JSON} must pin {name} to an exact version like \"1.65.1\", not \"{version}\""));
        }
    }
    if !pins.contains_key(PLAYWRIGHT_PACKAGE) {
        return Err(format!("{NPM_PACKAGE_JSON} must pin {PLAYWRIGHT_PACKAGE}"));
    }
    Ok(pins.into_iter().collect())
}

/// The version of `name` installed in tests/web/node_modules, if any.
fn installed_npm_version(name: &str) -> Option<String> {
    read_package_json(&format!("tests/web/node_modules/{name}/package.json"))
        .ok()?
        .version
}

/// `npm install` in tests/web unless every pinned package is there at its pinned version
/// (playwright-core for the browser tests; typescript, eslint and its config packages for
/// `lint-js`). No lock file: the exact pins are the lock for what we name, and nothing here is
/// shipped.
pub(crate) fn ensure_npm_packages() -> Result<()> {
    let missing: Vec<String> = pinned_npm_packages()?
        .into_iter()
        .filter(|(name, version)| installed_npm_version(name).as_deref() != Some(version))
        .map(|(name, version)| format!("{name}@{version}"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!(
        "install: npm packages missing: {}; running npm install in tests/web",
        missing.join(" ")
    );
    let mut c = cmd(
        "npm",
        ["install", "--no-package-lock", "--no-audit", "--no-fund"],
    );
    c.current_dir("tests/web");
    run(c)
}
