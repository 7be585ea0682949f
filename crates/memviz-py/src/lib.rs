//! `memviz._native`: the Python package's native module. It holds no analysis of its own: every
//! method runs a memviz-cli command in-process on snapshots already in memory and hands back its
//! typed answer ([`memviz_cli::answer`]: the `--json` structs, turned into Python objects by
//! `pythonize`; `python/memviz/_types.py` wraps them into typed classes). Errors carry their
//! kind ([`memviz_cli::ErrorKind`]) as a `MemvizError` subclass. The console script runs the
//! whole command line ([`memviz_cli::run`]).
//!
//! Every call releases the GIL (a pool of threads summarises files in parallel) and catches
//! panics: a bad file is a `MemvizError`, never a crashed interpreter.

use memviz_cli::{Error, ErrorKind, Named};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::ffi::OsString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

create_exception!(
    memviz._native,
    MemvizError,
    PyValueError,
    "A file memviz cannot read, or a command it cannot run: the CLI's message."
);
create_exception!(
    memviz._native,
    NotASnapshotError,
    MemvizError,
    "The bytes are no memory snapshot (another format, a checkpoint, a broken pickle or JSON)."
);
create_exception!(
    memviz._native,
    TruncatedError,
    MemvizError,
    "The file ends before anything that can be shown was read."
);
create_exception!(
    memviz._native,
    TooBigError,
    MemvizError,
    "Refused for what it would take (memory, a reader's limit, a gzip ratio)."
);
create_exception!(
    memviz._native,
    BadArgumentError,
    MemvizError,
    "An argument's value is wrong (an option, an event index, a pattern)."
);
create_exception!(
    memviz._native,
    UnknownDeviceError,
    BadArgumentError,
    "`device=` names a device the snapshot does not have."
);
create_exception!(
    memviz._native,
    MemvizIOError,
    MemvizError,
    "A file could not be opened, read or written."
);
create_exception!(
    memviz._native,
    InternalError,
    MemvizError,
    "A bug in memviz (a caught panic): please report it."
);

/// The Python exception of a command's error, by its kind.
fn py_error(e: Error) -> PyErr {
    let m = e.message;
    match e.kind {
        ErrorKind::NotASnapshot => NotASnapshotError::new_err(m),
        ErrorKind::Truncated => TruncatedError::new_err(m),
        ErrorKind::TooBig => TooBigError::new_err(m),
        ErrorKind::BadArgument => BadArgumentError::new_err(m),
        ErrorKind::UnknownDevice => UnknownDeviceError::new_err(m),
        ErrorKind::Io => MemvizIOError::new_err(m),
        ErrorKind::Other => MemvizError::new_err(m),
    }
}

/// A parsed snapshot (`memviz.Snapshot` wraps it).
#[pyclass(frozen, module = "memviz._native")]
struct NativeSnapshot {
    named: Named,
}

#[pymethods]
impl NativeSnapshot {
    /// The name commands use: the path, or `<bytes>` for a snapshot read from memory.
    #[getter]
    fn name(&self) -> &str {
        &self.named.name
    }

    /// The device a command about one device uses without `device=` (the CLI's rule: the
    /// longest trace, first on ties; without a trace the first device with segments, else 0).
    #[getter]
    fn default_device(&self) -> i64 {
        self.named.snap.default_device()
    }

    /// The same snapshot under another name (two snapshots of one name in one command).
    fn renamed(&self, name: String) -> NativeSnapshot {
        NativeSnapshot {
            named: Named {
                name,
                ..self.named.clone()
            },
        }
    }
}

/// Runs `f` without the GIL, a panic turned into an [`InternalError`].
fn guarded<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Error> + Send) -> PyResult<T> {
    py.detach(|| match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(py_error),
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(InternalError::new_err(format!(
                "internal error (please report it): {what}"
            )))
        }
    })
}

/// `open(path) -> (NativeSnapshot, warnings)`: reads the file as `memviz summary` does.
#[pyfunction]
fn open(py: Python<'_>, path: String) -> PyResult<(NativeSnapshot, Vec<String>)> {
    let (snap, warnings) = guarded(py, || memviz_cli::open(&path))?;
    let named = Named {
        name: path,
        snap,
        raw: None,
    };
    Ok((NativeSnapshot { named }, warnings))
}

/// `load_bytes(data, name) -> (NativeSnapshot, warnings)`: parses a whole file held in memory
/// (plain or gzip-compressed pickle); `name` stands for the file in messages and commands.
#[pyfunction]
fn load_bytes(
    py: Python<'_>,
    data: Vec<u8>,
    name: String,
) -> PyResult<(NativeSnapshot, Vec<String>)> {
    let raw: Arc<[u8]> = data.into();
    let (snap, warnings) = guarded(py, || memviz_cli::load_bytes(&name, &raw))?;
    let named = Named {
        name,
        snap,
        raw: Some(raw),
    };
    Ok((NativeSnapshot { named }, warnings))
}

/// `command(args, snapshots) -> (stdout, warnings)`: runs `memviz ARGS…` with the snapshots
/// known by their names; raises `MemvizError` with the CLI's message.
#[pyfunction]
fn command(
    py: Python<'_>,
    args: Vec<String>,
    snapshots: Vec<PyRef<'_, NativeSnapshot>>,
) -> PyResult<(String, Vec<String>)> {
    let named: Vec<Named> = snapshots.iter().map(|s| s.named.clone()).collect();
    let c = guarded(py, || memviz_cli::capture(&args, &named))?;
    let text = String::from_utf8(c.stdout)
        .map_err(|_| InternalError::new_err("the command printed bytes that are not UTF-8"))?;
    Ok((text, c.warnings))
}

/// `answer(args, snapshots) -> (answer, warnings)`: runs `memviz ARGS…` (a command with a
/// `--json` answer) with the snapshots known by their names and returns its answer as Python
/// objects (the answer structs through `pythonize`: dicts, lists, numbers, strings, None);
/// raises the `MemvizError` subclass of the error's kind.
#[pyfunction]
fn answer<'py>(
    py: Python<'py>,
    args: Vec<String>,
    snapshots: Vec<PyRef<'py, NativeSnapshot>>,
) -> PyResult<(Bound<'py, PyAny>, Vec<String>)> {
    let named: Vec<Named> = snapshots.iter().map(|s| s.named.clone()).collect();
    let (a, warnings) = guarded(py, || {
        let (r, warnings) = memviz_cli::answer::answer(&args, &named);
        r.map(|a| (a, warnings))
    })?;
    let obj = pythonize::pythonize(py, &a)
        .map_err(|e| InternalError::new_err(format!("internal error (please report it): {e}")))?;
    Ok((obj, warnings))
}

/// `run_cli(argv) -> exit code`: the whole `memviz` command line (argv[0] is the program).
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<String>) -> u8 {
    let args: Vec<OsString> = argv.into_iter().map(OsString::from).collect();
    py.detach(|| catch_unwind(AssertUnwindSafe(|| memviz_cli::run(args))).unwrap_or(101))
}

/// `ranks_reduce(rows) -> rows`: the rows of `memviz ranks --json` (one per file, each made by
/// `memviz ranks FILE --json`, as dicts) flagged and sorted over all of them, as the CLI does
/// for its files ([`memviz_analysis::ranks::flag_outliers`], [`sort_by_peak`]).
///
/// [`sort_by_peak`]: memviz_analysis::ranks::sort_by_peak
#[pyfunction]
fn ranks_reduce<'py>(given: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    use memviz_analysis::ranks::{flag_outliers, sort_by_peak, RankRow};
    let mut rows: Vec<RankRow> = pythonize::depythonize(given).map_err(|e| {
        BadArgumentError::new_err(format!("not rows of `memviz ranks --json`: {e}"))
    })?;
    flag_outliers(&mut rows);
    sort_by_peak(&mut rows);
    pythonize::pythonize(given.py(), &rows)
        .map_err(|e| InternalError::new_err(format!("internal error (please report it): {e}")))
}

/// The error of a table, as the CLI's `memviz export` names it.
fn table_error(name: &str, e: memviz_table::TableError) -> PyErr {
    use memviz_table::TableError;
    match e {
        TableError::BadArgument(m) if m.starts_with("no device") => {
            UnknownDeviceError::new_err(format!("{name}: {m}"))
        }
        TableError::BadArgument(m) => BadArgumentError::new_err(format!("{name}: {m}")),
        TableError::Io(e) => MemvizIOError::new_err(format!("{name}: {e}")),
        e => MemvizError::new_err(format!("{name}: {e}")),
    }
}

/// Runs `f` without the GIL, a panic turned into an [`InternalError`] (as [`guarded`]).
fn guarded_table<T: Send>(
    py: Python<'_>,
    name: &str,
    f: impl FnOnce() -> Result<T, memviz_table::TableError> + Send,
) -> PyResult<T> {
    let r = guarded(py, || Ok(f()))?;
    r.map_err(|e| table_error(name, e))
}

/// `table(snapshot, name, device=None, event=None, user_code=None) -> Arrow table`: one table
/// of memviz-table (`trace`, `allocations`, `frames`, `stacks`, `segments`, `blocks`,
/// `lines`), the rows of `memviz export FILE --table NAME --json`. The result carries
/// `__arrow_c_stream__`: `pyarrow.table(result)` takes its buffers without a copy.
#[pyfunction]
#[pyo3(signature = (snapshot, name, device=None, event=None, user_code=None))]
fn table(
    py: Python<'_>,
    snapshot: PyRef<'_, NativeSnapshot>,
    name: String,
    device: Option<i64>,
    event: Option<i64>,
    user_code: Option<String>,
) -> PyResult<pyo3_arrow::PyTable> {
    let file = snapshot.named.name.clone();
    let snap = Arc::clone(&snapshot.named.snap);
    let which = memviz_table::Table::from_name(&name).ok_or_else(|| {
        let names: Vec<&str> = memviz_table::Table::ALL.iter().map(|t| t.name()).collect();
        BadArgumentError::new_err(format!("no table {name:?} (tables: {})", names.join(", ")))
    })?;
    let user = memviz_analysis::site::UserCode::parse(user_code.as_deref().unwrap_or(""))
        .map_err(BadArgumentError::new_err)?;
    let opts = memviz_table::Options {
        device,
        event,
        user,
    };
    let batch = guarded_table(py, &file, || {
        memviz_table::table_shared(&snap, which, &opts)
    })?;
    let schema = batch.schema();
    pyo3_arrow::PyTable::try_new(vec![batch], schema)
}

/// `ranks_parquet(rows, path)`: writes rows of `memviz ranks --json` (dicts, in order) to
/// `path` as Parquet, one row group per row (memviz-table's `write_ranks_parquet`).
#[pyfunction]
fn ranks_parquet(py: Python<'_>, rows: &Bound<'_, PyAny>, path: String) -> PyResult<()> {
    use memviz_analysis::ranks::RankRow;
    let rows: Vec<RankRow> = pythonize::depythonize(rows).map_err(|e| {
        BadArgumentError::new_err(format!("not rows of `memviz ranks --json`: {e}"))
    })?;
    let p = path.clone();
    guarded_table(py, &path, move || {
        memviz_table::write_ranks_parquet(std::path::Path::new(&p), &rows)
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MemvizError", m.py().get_type::<MemvizError>())?;
    m.add("NotASnapshotError", m.py().get_type::<NotASnapshotError>())?;
    m.add("TruncatedError", m.py().get_type::<TruncatedError>())?;
    m.add("TooBigError", m.py().get_type::<TooBigError>())?;
    m.add("BadArgumentError", m.py().get_type::<BadArgumentError>())?;
    m.add(
        "UnknownDeviceError",
        m.py().get_type::<UnknownDeviceError>(),
    )?;
    m.add("MemvizIOError", m.py().get_type::<MemvizIOError>())?;
    m.add("InternalError", m.py().get_type::<InternalError>())?;
    m.add_class::<NativeSnapshot>()?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(load_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(command, m)?)?;
    m.add_function(wrap_pyfunction!(answer, m)?)?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(ranks_reduce, m)?)?;
    m.add_function(wrap_pyfunction!(table, m)?)?;
    m.add_function(wrap_pyfunction!(ranks_parquet, m)?)?;
    m.add("RANKS_RULE", memviz_analysis::ranks::OUTLIER_RULE)?;
    Ok(())
}
