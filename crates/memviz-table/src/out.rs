//! Tables out: JSON rows, Parquet files, and the rows of `memviz ranks` as a table.

use crate::build::Columns;
use crate::{table, Options, Table, TableError};
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::{ArrayRef, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Fields};
use memviz_analysis::ranks::RankRow;
use memviz_snapshot::Snapshot;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The rows of `batch` as one JSON array of objects (a null is written as `null`), as
/// `memviz export --table NAME --json` prints them.
pub fn to_json(batch: &RecordBatch, out: impl Write) -> Result<(), TableError> {
    let mut w = arrow_json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, arrow_json::writer::JsonArray>(out);
    w.write(batch)?;
    w.finish()?;
    Ok(())
}

fn properties() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build()
}

/// Writes `batches` to `path` as one Parquet file, one row group per batch.
fn write_file(
    path: &Path,
    schema: arrow_schema::SchemaRef,
    batches: &[RecordBatch],
) -> Result<(), TableError> {
    let file = std::fs::File::create(path)?;
    let mut w = ArrowWriter::try_new(file, schema, Some(properties()))?;
    for b in batches {
        w.write(b)?;
        // Each batch its own row group (a reader can skip a rank by its statistics).
        w.flush()?;
    }
    w.close()?;
    Ok(())
}

/// Writes every table of `snap` ([`Table::ALL`]) as `dir/<table>.parquet` (creating `dir`);
/// returns the paths written.
pub fn write_parquet(
    dir: &Path,
    snap: &Snapshot,
    opts: &Options,
) -> Result<Vec<PathBuf>, TableError> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for t in Table::ALL {
        let batch = table(snap, t, opts)?;
        let path = dir.join(format!("{}.parquet", t.name()));
        write_file(&path, batch.schema(), std::slice::from_ref(&batch))?;
        written.push(path);
    }
    Ok(written)
}

/// The rows of `memviz ranks --json` as a table: `file`, `device` (null: no device),
/// `peak_bytes`, `final_bytes`, `reserved_bytes`, `oom_events`, `top_sites` (a list of
/// `{label, bytes}`), `outlier`.
pub fn ranks_batch(rows: &[RankRow]) -> Result<RecordBatch, TableError> {
    let mut out = Columns::new();
    out.strings("file", rows.iter().map(|r| r.file.as_str()));
    out.optional::<Int64Type>("device", rows.iter().map(|r| r.device).collect());
    out.values::<UInt64Type>("peak_bytes", rows.iter().map(|r| r.peak_bytes).collect());
    out.values::<UInt64Type>("final_bytes", rows.iter().map(|r| r.final_bytes).collect());
    out.values::<UInt64Type>(
        "reserved_bytes",
        rows.iter().map(|r| r.reserved_bytes).collect(),
    );
    out.values::<UInt64Type>("oom_events", rows.iter().map(|r| r.oom_events).collect());
    let sites: Vec<_> = rows.iter().flat_map(|r| r.top_sites.iter()).collect();
    let label: ArrayRef = Arc::new(StringArray::from_iter_values(
        sites.iter().map(|s| s.label.as_str()),
    ));
    let bytes: ArrayRef = Arc::new(UInt64Array::from_iter_values(sites.iter().map(|s| s.bytes)));
    let fields = Fields::from(vec![
        Field::new("label", DataType::Utf8, false),
        Field::new("bytes", DataType::UInt64, false),
    ]);
    let list = crate::build::struct_list(
        fields,
        vec![label, bytes],
        rows.iter().map(|r| r.top_sites.len()),
        "sites",
    )?;
    out.add("top_sites", list, false);
    out.bools("outlier", rows.iter().map(|r| r.outlier).collect());
    out.finish()
}

/// Writes `rows` (the rows of `memviz ranks`, in order) to `path` as Parquet, one row group
/// per row: a 4,096-rank job's file is read by DuckDB or Spark without memviz.
pub fn write_ranks_parquet(path: &Path, rows: &[RankRow]) -> Result<(), TableError> {
    let all = ranks_batch(rows)?;
    let batches: Vec<RecordBatch> = (0..all.num_rows()).map(|i| all.slice(i, 1)).collect();
    write_file(path, all.schema(), &batches)
}
