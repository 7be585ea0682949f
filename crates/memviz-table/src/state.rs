//! Tables of memviz-analysis's answers: allocations, the allocator state after an event, the
//! per-site lines.

use crate::build::{Columns, Dict};
use crate::TableError;
use arrow_array::types::{Int64Type, UInt32Type, UInt64Type};
use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray};
use arrow_array::{Int64Array, UInt64Array};
use arrow_schema::{Field, Fields};
use memviz_analysis::allocations::allocations as rows_of;
use memviz_analysis::lines::{site_table, LineOptions, LineRow};
use memviz_analysis::site::{SiteCache, SiteId};
use memviz_analysis::state::{History, BYTES_PER_EVENT};
use memviz_analysis::steps::Steps;
use memviz_analysis::timeline;
use memviz_snapshot::{Snapshot, StackId};
use std::sync::Arc;

/// The site columns of rows by stack: `site` (the label), `site_kind`, `site_file`,
/// `site_line`, named by [`SiteCache::site`] alone.
struct SiteColumns {
    label: Dict<SiteId>,
    kind: Dict<SiteId>,
    file: Dict<SiteId>,
    line: Vec<i64>,
}

impl SiteColumns {
    fn with_capacity(n: usize) -> SiteColumns {
        SiteColumns {
            label: Dict::with_capacity(n),
            kind: Dict::with_capacity(n),
            file: Dict::with_capacity(n),
            line: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, snap: &Snapshot, sites: &mut SiteCache, stack: StackId) {
        let id = sites.id(snap, stack);
        let site = sites.get(id);
        self.label
            .push(id, || site.map(|s| s.label.clone()).unwrap_or_default());
        self.kind.push(id, || {
            site.map(|s| s.kind.as_str().to_string())
                .unwrap_or_default()
        });
        self.file
            .push(id, || site.map(|s| s.file.clone()).unwrap_or_default());
        self.line.push(site.map_or(0, |s| s.line));
    }

    fn add_to(self, out: &mut Columns) -> Result<(), TableError> {
        out.add("site", self.label.into_array()?, false);
        out.add("site_kind", self.kind.into_array()?, false);
        out.add("site_file", self.file.into_array()?, false);
        out.values::<Int64Type>("site_line", self.line);
        Ok(())
    }
}

/// One row per allocation of `device` (None: every device's, one after the other): the
/// elements of the device's Active Memory Timeline
/// ([`memviz_analysis::allocations::allocations`]): `device`, `element`, `alloc_event` and
/// `free_event` (trace rows; null: present at the start / alive at the end), `address`,
/// `size`, `stream`, `stack`, the site (`site`, `site_kind`, `site_file`, `site_line`),
/// `alloc_us`, `free_us`, `lifetime_events`, `lifetime_us` (null without times),
/// `alive_at_peak`.
pub fn allocations(
    snap: &Snapshot,
    device: Option<i64>,
    sites: &mut SiteCache,
) -> Result<RecordBatch, TableError> {
    let devices: Vec<i64> = match device {
        Some(d) => vec![d],
        None => snap.devices(),
    };
    let all: Vec<_> = devices
        .iter()
        .map(|&d| {
            let tl = timeline::build(snap, d);
            rows_of(snap, d, &tl)
        })
        .collect();
    let n: usize = all.iter().map(|a| a.rows.len()).sum();
    let mut dev: Vec<i64> = Vec::with_capacity(n);
    let mut site = SiteColumns::with_capacity(n);
    for a in &all {
        dev.extend(std::iter::repeat_n(a.device, a.rows.len()));
        for r in &a.rows {
            site.push(snap, sites, r.stack);
        }
    }
    let rows = || all.iter().flat_map(|a| a.rows.iter());
    let mut out = Columns::new();
    out.values::<Int64Type>("device", dev);
    out.values::<UInt32Type>("element", rows().map(|r| r.element).collect());
    out.optional::<UInt32Type>("alloc_event", rows().map(|r| r.alloc_event).collect());
    out.optional::<UInt32Type>("free_event", rows().map(|r| r.free_event).collect());
    out.values::<UInt64Type>("address", rows().map(|r| r.addr).collect());
    out.values::<UInt64Type>("size", rows().map(|r| r.size).collect());
    out.values::<UInt64Type>("stream", rows().map(|r| r.stream).collect());
    out.values::<UInt32Type>("stack", rows().map(|r| r.stack.0).collect());
    site.add_to(&mut out)?;
    out.optional::<Int64Type>("alloc_us", rows().map(|r| r.alloc_us).collect());
    out.optional::<Int64Type>("free_us", rows().map(|r| r.free_us).collect());
    out.values::<UInt64Type>(
        "lifetime_events",
        rows().map(|r| r.lifetime_events).collect(),
    );
    out.optional::<Int64Type>("lifetime_us", rows().map(|r| r.lifetime_us).collect());
    out.bools("alive_at_peak", rows().map(|r| r.alive_at_peak).collect());
    out.finish()
}

/// The allocator state of `device` after merged event `event` (-1: the final state), as
/// `memviz state --event` computes it: one row per segment, then one per live block, by
/// address: `kind` (`segment` or `block`), `address`, `size`, `requested_size` (blocks),
/// `pending` (a block freed and waiting on its stream), `stream` and `pool_id_0` /
/// `pool_id_1` (segments), `stack` and its site.
pub fn blocks_at(
    snap: &Snapshot,
    device: i64,
    event: i64,
    sites: &mut SiteCache,
) -> Result<RecordBatch, TableError> {
    let history = History::build_within(snap, device, BYTES_PER_EVENT);
    let n = history.len();
    let st = if event == -1 {
        history.final_state(snap)
    } else {
        usize::try_from(event)
            .ok()
            .filter(|&k| k < n)
            .and_then(|k| history.state_after(snap, k))
            .ok_or_else(|| {
                TableError::BadArgument(format!(
                    "device {device} has {n} events (merged): the event is 0 to {} or -1",
                    n.saturating_sub(1)
                ))
            })?
    };
    let rows = st.segments.len() + st.blocks.len();
    let mut kind: Dict<bool> = Dict::with_capacity(rows);
    let mut addr: Vec<u64> = Vec::with_capacity(rows);
    let mut size: Vec<u64> = Vec::with_capacity(rows);
    let mut requested: Vec<Option<u64>> = Vec::with_capacity(rows);
    let mut pending: Vec<Option<bool>> = Vec::with_capacity(rows);
    let mut stream: Vec<Option<u64>> = Vec::with_capacity(rows);
    let mut pool: Vec<Option<(i64, i64)>> = Vec::with_capacity(rows);
    let mut stack: Vec<u32> = Vec::with_capacity(rows);
    let mut site = SiteColumns::with_capacity(rows);
    for (&a, s) in &st.segments {
        kind.push(true, || "segment".into());
        addr.push(a);
        size.push(s.size);
        requested.push(None);
        pending.push(None);
        stream.push(Some(s.stream));
        pool.push(Some(s.pool));
        let k = s.stack(snap, device);
        stack.push(k.0);
        site.push(snap, sites, k);
    }
    for (&a, b) in &st.blocks {
        kind.push(false, || "block".into());
        addr.push(a);
        size.push(b.size);
        requested.push(Some(b.requested));
        pending.push(Some(b.pending));
        stream.push(None);
        pool.push(None);
        let k = b.stack(snap, device);
        stack.push(k.0);
        site.push(snap, sites, k);
    }
    let mut out = Columns::new();
    out.values::<Int64Type>("device", vec![device; rows]);
    out.add("kind", kind.into_array()?, false);
    out.values::<UInt64Type>("address", addr);
    out.values::<UInt64Type>("size", size);
    out.optional::<UInt64Type>("requested_size", requested);
    out.add("pending", Arc::new(BooleanArray::from(pending)), true);
    out.optional::<UInt64Type>("stream", stream);
    out.optional::<Int64Type>("pool_id_0", pool.iter().map(|p| p.map(|p| p.0)).collect());
    out.optional::<Int64Type>("pool_id_1", pool.iter().map(|p| p.map(|p| p.1)).collect());
    out.values::<UInt32Type>("stack", stack);
    site.add_to(&mut out)?;
    out.finish()
}

/// The columns of a [`LineRow`] (`file`, `line`, `name` and the byte columns).
fn line_arrays(rows: &[&LineRow]) -> Vec<(Field, ArrayRef)> {
    let u = |f: fn(&LineRow) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| f(r))))
    };
    let s = |f: fn(&LineRow) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| f(r))))
    };
    let field = |name: &str, a: &ArrayRef| Field::new(name, a.data_type().clone(), false);
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("file", s(|r| &r.file)),
        (
            "line",
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.line))),
        ),
        ("name", s(|r| &r.name)),
        ("live_at_peak_bytes", u(|r| r.live_at_peak_bytes)),
        ("total_bytes", u(|r| r.total_bytes)),
        ("count", u(|r| r.count)),
        ("largest_bytes", u(|r| r.largest_bytes)),
    ];
    cols.into_iter().map(|(n, a)| (field(n, &a), a)).collect()
}

/// The per-site table of `memviz lines` of `device` (its `rows`, in its order): `file`,
/// `line`, `name`, `kind`, `label`, `live_at_peak_bytes`, `total_bytes`, `count`,
/// `largest_bytes`, `detail` (a list of the library lines below the site, each with `file`,
/// `line`, `name` and the byte columns).
pub fn lines(
    snap: &Snapshot,
    device: i64,
    sites: &mut SiteCache,
) -> Result<RecordBatch, TableError> {
    let tl = timeline::build(snap, device);
    let steps = Steps::build(&tl);
    let rows = site_table(snap, device, &tl, &steps, LineOptions::default(), sites);
    let mut out = Columns::new();
    let own: Vec<&LineRow> = rows.iter().map(|r| &r.row).collect();
    let mut cols = line_arrays(&own).into_iter();
    for _ in 0..3 {
        if let Some((f, a)) = cols.next() {
            out.add(f.name(), a, false);
        }
    }
    let mut kind: Dict<&'static str> = Dict::with_capacity(rows.len());
    for r in &rows {
        let k = r.kind.as_str();
        kind.push(k, || k.to_string());
    }
    out.add("kind", kind.into_array()?, false);
    out.strings("label", rows.iter().map(|r| r.label.as_str()));
    for (f, a) in cols {
        out.add(f.name(), a, false);
    }
    let detail: Vec<&LineRow> = rows.iter().flat_map(|r| r.detail.iter()).collect();
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = line_arrays(&detail).into_iter().unzip();
    let fields = Fields::from(fields);
    let list = crate::build::struct_list(
        fields,
        arrays,
        rows.iter().map(|r| r.detail.len()),
        "detail rows",
    )?;
    out.add("detail", list, false);
    out.finish()
}
