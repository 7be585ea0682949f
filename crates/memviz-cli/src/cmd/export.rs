//! `memviz export FILE --parquet DIR [--device D] [--user-code P]`: every table of
//! memviz-table (trace, allocations, frames, stacks, segments, blocks, lines) as
//! `DIR/<table>.parquet`; `memviz export FILE --table NAME --json`: one table's rows as a JSON
//! array of objects (the rows Python's `Snapshot.trace()` and the others return, for
//! comparisons).

use crate::load;
use crate::out::{stdout, Done, Fail};
use clap::Args;
use memviz_table::{Options, Table, TableError};
use std::io::Write;

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The snapshot file.
    pub file: String,
    /// Write every table as DIR/<table>.parquet.
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with = "table",
        required_unless_present = "table"
    )]
    pub parquet: Option<String>,
    /// One table: trace, allocations, frames, stacks, segments, blocks or lines.
    #[arg(long, value_name = "NAME")]
    pub table: Option<String>,
    /// With --table: its rows as JSON (the only format; required for clarity).
    #[arg(long, requires = "table")]
    pub json: bool,
    /// The device of trace and allocations (default: every device) and of blocks and lines
    /// (default: the longest trace).
    #[arg(long)]
    pub device: Option<i64>,
    /// The merged event of the blocks table (-1: the final state).
    #[arg(long, allow_negative_numbers = true)]
    pub event: Option<i64>,
    /// Python files that count as your own code besides the default (docs/sites.md).
    #[arg(long, value_name = "PATTERN")]
    pub user_code: Option<String>,
}

/// The error of a table, as the CLI reports it.
fn fail(file: &str, e: TableError) -> Fail {
    match e {
        TableError::BadArgument(m) if m.starts_with("no device") => {
            Fail::Kind(crate::error::Error::new(
                crate::error::ErrorKind::UnknownDevice,
                format!("{file}: {m}"),
            ))
        }
        TableError::BadArgument(m) => crate::error::bad_argument(format!("{file}: {m}")),
        e => Fail::from(format!("{file}: {e}")),
    }
}

/// Runs `memviz export` with the arguments after the command name.
pub fn run(a: &ExportArgs) -> Done {
    let file = a.file.as_str();
    let opts = Options {
        device: a.device,
        event: a.event,
        user: super::user_code(a.user_code.as_deref())?,
    };
    if let Some(name) = &a.table {
        let which = Table::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = Table::ALL.iter().map(|t| t.name()).collect();
            crate::error::bad_argument(format!(
                "--table {name}: no such table (tables: {})",
                names.join(", ")
            ))
        })?;
        if !a.json {
            return Err(crate::error::bad_argument(
                "--table prints JSON only: add --json (or write Parquet with --parquet DIR)"
                    .to_string(),
            ));
        }
        let snap = load(file)?;
        let batch = memviz_table::table(&snap, which, &opts).map_err(|e| fail(file, e))?;
        let mut out = stdout();
        let mut w = SeesClosed {
            out: &mut out,
            closed: false,
        };
        if let Err(e) = memviz_table::to_json(&batch, &mut w) {
            // arrow wraps the write's error in its own: a closed reader (`| head`) is still
            // the quiet end every command gives it.
            if w.closed {
                return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe).into());
            }
            return Err(fail(file, e));
        }
        writeln!(out)?;
        return out.finish();
    }
    let Some(dir) = &a.parquet else {
        return Err(crate::error::bad_argument(
            "export needs --parquet DIR or --table NAME --json".to_string(),
        ));
    };
    let snap = load(file)?;
    let written = memviz_table::write_parquet(std::path::Path::new(dir), &snap, &opts)
        .map_err(|e| fail(file, e))?;
    let mut out = stdout();
    for p in written {
        writeln!(out, "{}", p.display())?;
    }
    out.finish()
}

/// A writer that remembers whether its reader went away (arrow's JSON writer hides the
/// `io::Error` inside its own error type).
struct SeesClosed<'a, W: Write> {
    out: &'a mut W,
    closed: bool,
}

impl<W: Write> Write for SeesClosed<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf).inspect_err(|e| {
            self.closed |= e.kind() == std::io::ErrorKind::BrokenPipe;
        })
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush().inspect_err(|e| {
            self.closed |= e.kind() == std::io::ErrorKind::BrokenPipe;
        })
    }
}
