//! `cargo xtask test`'s Python step: build the wheel (maturin, pinned, in a tools venv), install
//! it into a fresh venv with the pinned test packages, and run there the console script on a
//! generated snapshot and tests/python (the API against the CLI's JSON, bad input, `record()`
//! with a stand-in torch, `memviz open --no-browser` fetched with urllib, the notebook with
//! nbclient and its saved HTML in headless Chromium, `ranks` on a Dask LocalCluster of 2
//! workers against the local pool and the CLI).

use super::*;

/// maturin builds the wheel (pyproject.toml's build backend pins the same version).
const MATURIN: &str = "maturin==1.16.0";
/// What `maturin --version` prints for it.
const MATURIN_REPORTED: &str = "maturin 1.16.0";
/// The test venv's packages, each pinned.
const TEST_PACKAGES: &[&str] = &[
    "pytest==8.3.4",
    "mypy==2.4.1",
    "nbclient==0.10.2",
    "nbformat==5.10.4",
    "nbconvert==7.17.2",
    // nbconvert renders markdown with mistune; pinned too (7.16.4 broke on mistune 3.1).
    "mistune==3.4.0",
    "ipykernel==6.29.5",
    "dask[distributed]==2024.12.1",
    // The Arrow tables (issue 32): pyarrow (`memviz[arrow]`), and what the tests and
    // docs/query.ipynb hand them to.
    "pyarrow==26.0.1",
    "pandas==3.1.2",
    "polars==2.2.0",
    "duckdb==2.0.1",
];
/// The tools venv (maturin), kept between runs.
const TOOLS_VENV: &str = "target/py/tools";
/// The fresh venv of each run.
const TEST_VENV: &str = "target/py/test";
/// Where the wheel is written.
const WHEELS: &str = "target/wheels";

fn bin(venv: &str, program: &str) -> String {
    format!("{venv}/bin/{program}")
}

/// maturin in the tools venv, installed with pip unless the pinned version is there.
pub(crate) fn ensure_maturin() -> Result<()> {
    let maturin = bin(TOOLS_VENV, "maturin");
    if version_matches(&maturin, MATURIN_REPORTED) {
        return Ok(());
    }
    if !Path::new(&bin(TOOLS_VENV, "pip")).exists() {
        run(cmd("python3", ["-m", "venv", TOOLS_VENV]))?;
    }
    run(cmd(&bin(TOOLS_VENV, "pip"), ["install", "-q", MATURIN]))?;
    if version_matches(&maturin, MATURIN_REPORTED) {
        Ok(())
    } else {
        Err(format!(
            "{maturin} --version does not report {MATURIN_REPORTED}"
        ))
    }
}

/// Builds the wheel; returns its path.
fn build_wheel() -> Result<PathBuf> {
    ensure_maturin()?;
    // Only this build's wheel in the folder, so there is one to install.
    if Path::new(WHEELS).exists() {
        fs::remove_dir_all(WHEELS).map_err(|e| format!("cannot empty {WHEELS}: {e}"))?;
    }
    // The tests' profile and target dir (Cargo.toml's `ci`): the dependencies the Rust tests
    // built are reused; only memviz-cli (with the `site` feature), pyo3 and memviz-py build here.
    run(cmd(
        &bin(TOOLS_VENV, "maturin"),
        ["build", "--profile", CI_PROFILE, "--out", WHEELS],
    ))?;
    let wheels: Vec<PathBuf> = fs::read_dir(WHEELS)
        .map_err(|e| format!("cannot list {WHEELS}: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    match wheels.as_slice() {
        [one] => {
            let size = fs::metadata(one).map(|m| m.len()).unwrap_or(0);
            eprintln!("python: wheel {} ({size} bytes)", one.display());
            Ok(one.clone())
        }
        _ => Err(format!("expected one wheel in {WHEELS}, found {wheels:?}")),
    }
}

/// A fresh test venv with the pinned test packages (not the wheel yet). Mostly downloads:
/// `cargo xtask test` runs it in a thread beside the builds (`tasks::test`).
pub(crate) fn prepare_test_venv() -> Result<()> {
    if Path::new(TEST_VENV).exists() {
        fs::remove_dir_all(TEST_VENV).map_err(|e| format!("cannot remove {TEST_VENV}: {e}"))?;
    }
    run(cmd("python3", ["-m", "venv", TEST_VENV]))?;
    let mut pip = cmd(&bin(TEST_VENV, "pip"), ["install", "-q"]);
    pip.args(TEST_PACKAGES);
    run(pip)
}

/// The whole step (module documentation), `cargo xtask test-python`.
pub(crate) fn python_tests() -> Result<()> {
    prepare_test_venv()?;
    python_tests_in_venv()
}

/// The step after [`prepare_test_venv`]: build the wheel, install it there, test it.
pub(crate) fn python_tests_in_venv() -> Result<()> {
    let started = Instant::now();
    let wheel = build_wheel()?;
    // The wheel has no required dependencies; the test packages are there already.
    let mut pip = cmd(&bin(TEST_VENV, "pip"), ["install", "-q", "--no-deps"]);
    pip.arg(&wheel);
    run(pip)?;
    // The console script on a generated snapshot.
    let fixtures = "target/py/fixtures";
    fs::create_dir_all(fixtures).map_err(|e| format!("cannot create {fixtures}: {e}"))?;
    let snap = format!("{fixtures}/demo.pickle");
    run(cmd(
        &bin(TEST_VENV, "python"),
        ["tests/fixtures/generate.py", "demo", &snap],
    ))?;
    let out = run_capture(cmd(&bin(TEST_VENV, "memviz"), ["summary", &snap]))?;
    if !out.contains("pickle protocol") {
        return Err(format!("memviz summary printed no summary: {out}"));
    }
    // The API, bad input, record(), the notebook and ranks on a LocalCluster: nothing may skip
    // (the viewer is built by the step before: dist/).
    let dist = repo_root().join("dist");
    let mut pytest = cmd(
        &bin(TEST_VENV, "python"),
        ["-m", "pytest", "-q", "-rs", "tests/python"],
    );
    pytest
        .env("MEMVIZ_DIST", &dist)
        .env("MEMVIZ_REQUIRE_ALL", "1");
    run(pytest)?;
    eprintln!(
        "python: wheel built and tested in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
