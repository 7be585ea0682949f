//! The snapshot model as Arrow tables, for pandas, polars, DuckDB and Spark (issue 32).
//!
//! Each function builds one [`RecordBatch`] from a [`Snapshot`] and memviz-analysis:
//! * [`trace`]: one row per trace event (every device, or one);
//! * [`allocations()`]: one row per allocation (an element of the Active Memory Timeline), its
//!   site named by [`SiteCache::site`] (the one frame classifier), lifetime, alive at the peak;
//! * [`frames`], [`stacks`]: the interned frames (with their kind) and stacks (frame ids);
//! * [`segments`]: the snapshot's segments at the end;
//! * [`blocks_at`]: the allocator state after merged event K (`memviz state`);
//! * [`lines`]: the per-site table of `memviz lines`.
//!
//! [`write_parquet`] writes them as `DIR/<table>.parquet`; [`ranks_batch`] makes the rows of
//! `memviz ranks` a table (one row group per rank in `memviz.ranks(..., parquet_dir=)`).
//!
//! # Copies
//! The model's hot trace columns are compact codes (a table of distinct addresses and sizes,
//! a time offset per chunk, an action byte, runs of equal streams and strings), so a table
//! decodes each of them once into a fresh `Vec` that Arrow then takes over without copying
//! (`Buffer::from_vec`: the vector's allocation becomes the buffer). The one plain column, a
//! device's stack ids, is shared: [`trace_shared`] (what Python's `Snapshot.trace()` calls)
//! hands Arrow the model's own vector through `bytes::Bytes::from_owner` over the
//! `Arc<Snapshot>`, so the table reads it in place and keeps the snapshot alive (no `unsafe`:
//! `StackId` is `bytemuck::Pod`). A table of every device at once is one batch, copied. After
//! that every hand-off is shared: the batch crosses into pyarrow through the Arrow C data
//! interface (memviz-py), and polars / DuckDB read that memory in place.

use arrow_array::RecordBatch;
use memviz_analysis::site::{SiteCache, UserCode};
use memviz_snapshot::Snapshot;

mod build;
mod model;
mod out;
mod state;

pub use arrow_array;
pub use arrow_schema;
pub use model::{frames, segments, stacks, trace, trace_shared};
pub use out::{ranks_batch, to_json, write_parquet, write_ranks_parquet};
pub use state::{allocations, blocks_at, lines};

/// What can go wrong making a table.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// An argument out of range (a device the file lacks, an event past the end).
    #[error("{0}")]
    BadArgument(String),
    /// Arrow refused a column (a bug: the columns are made to fit).
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// Writing a Parquet file failed.
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// A file or directory could not be written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The tables, by the names the CLI and Python use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Trace,
    Allocations,
    Frames,
    Stacks,
    Segments,
    Blocks,
    Lines,
}

impl Table {
    /// Every table, in the order `memviz export --parquet` writes them.
    pub const ALL: [Table; 7] = [
        Table::Trace,
        Table::Allocations,
        Table::Frames,
        Table::Stacks,
        Table::Segments,
        Table::Blocks,
        Table::Lines,
    ];

    /// `trace`, `allocations`, `frames`, `stacks`, `segments`, `blocks`, `lines`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Table::Trace => "trace",
            Table::Allocations => "allocations",
            Table::Frames => "frames",
            Table::Stacks => "stacks",
            Table::Segments => "segments",
            Table::Blocks => "blocks",
            Table::Lines => "lines",
        }
    }

    /// The table of a name ([`Table::name`]).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Table> {
        Table::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What the tables of one device are asked for.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The device of `trace` and `allocations` (None: every device) and of `blocks` and
    /// `lines` (None: [`Snapshot::default_device`]).
    pub device: Option<i64>,
    /// The merged event of `blocks` (-1 or None: the final state).
    pub event: Option<i64>,
    /// The user code sites are named under.
    pub user: UserCode,
}

/// The device `wanted` of `snap` (an error naming the devices when it has no such device), or
/// None when none is wanted.
pub fn check_device(snap: &Snapshot, wanted: Option<i64>) -> Result<Option<i64>, TableError> {
    let Some(d) = wanted else {
        return Ok(None);
    };
    let devices = snap.devices();
    if devices.contains(&d) || (devices.is_empty() && d == 0) {
        return Ok(Some(d));
    }
    let list: Vec<String> = devices.iter().map(i64::to_string).collect();
    let list = if list.is_empty() {
        "none".to_string()
    } else {
        list.join(", ")
    };
    Err(TableError::BadArgument(format!(
        "no device {d} (devices: {list})"
    )))
}

/// [`table`], the trace's stack column shared with the snapshot ([`trace_shared`]).
pub fn table_shared(
    snap: &std::sync::Arc<Snapshot>,
    which: Table,
    opts: &Options,
) -> Result<RecordBatch, TableError> {
    match which {
        Table::Trace => trace_shared(snap, check_device(snap, opts.device)?),
        _ => table(snap, which, opts),
    }
}

/// One table of `snap` as `opts` asks.
pub fn table(snap: &Snapshot, which: Table, opts: &Options) -> Result<RecordBatch, TableError> {
    let wanted = check_device(snap, opts.device)?;
    let one = wanted.unwrap_or_else(|| snap.default_device());
    let sites = || SiteCache::new(snap, opts.user.clone());
    match which {
        Table::Trace => trace(snap, wanted),
        Table::Allocations => allocations(snap, wanted, &mut sites()),
        Table::Frames => frames(snap, &mut sites()),
        Table::Stacks => stacks(snap),
        Table::Segments => segments(snap),
        Table::Blocks => blocks_at(snap, one, opts.event.unwrap_or(-1), &mut sites()),
        Table::Lines => lines(snap, one, &mut sites()),
    }
}

#[cfg(test)]
mod tests;
