//! `cargo xtask install`: the pinned web toolchain (wasm target, wasm-bindgen, wasm-opt,
//! trunk), Debian's chromium and node, and the npm packages pinned in tests/web/package.json
//! (playwright-core, typescript, eslint), and maturin (pip, in target/py/tools); each checked first and
//! skipped when the pinned version is there.

use std::collections::BTreeMap;

use super::*;
// ---------------------------------------------------------------------------------------------
// install

pub(crate) fn install() -> Result<()> {
    let started = Instant::now();
    ensure_site_tools()?;
    ensure_debian_packages()?;
    ensure_npm_packages()?;
    python::ensure_maturin()?;
    eprintln!(
        "install: all tools present ({:.2} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// What building the page needs: the wasm target, wasm-bindgen, wasm-opt and trunk, pinned.
pub(crate) fn ensure_site_tools() -> Result<()> {
    ensure_wasm_target()?;
    ensure_cargo_tool(
        "wasm-bindgen",
        WASM_BINDGEN_VERSION,
        &["wasm-bindgen-cli", "--version", WASM_BINDGEN_VERSION],
    )?;
    ensure_cargo_tool(
        "wasm-opt",
        WASM_OPT_REPORTED,
        &["wasm-opt", "--version", WASM_OPT_CRATE_VERSION, "--locked"],
    )?;
    ensure_cargo_tool(
        "trunk",
        TRUNK_VERSION,
        &["trunk", "--version", TRUNK_VERSION, "--locked"],
    )
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

/// `cargo install` (with `install_args`) unless `program --version` already mentions `reported`.
pub(crate) fn ensure_cargo_tool(
    program: &str,
    reported: &str,
    install_args: &[&str],
) -> Result<()> {
    if version_matches(program, reported) {
        return Ok(());
    }
    eprintln!("install: {program} {reported} missing; building it (several minutes on 2 cores)");
    let mut c = cmd("cargo", ["install"]);
    c.args(install_args);
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
