use super::*;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type, UInt64Type};
use arrow_array::Array;

/// A small snapshot (JSON): one segment with two blocks at the end, a trace of six events on
/// device 0 (two allocs from user code, a free pair, a segment alloc), with times.
const SNAP: &str = r#"{
 "segments": [{"device": 0, "address": 4096, "total_size": 2097152, "allocated_size": 1536,
   "active_size": 1536, "requested_size": 1500, "stream": 0, "segment_type": "small",
   "segment_pool_id": [0, 0], "is_expandable": false, "frames": [],
   "blocks": [{"size": 512, "requested_size": 500, "state": "active_allocated",
               "frames": [{"filename": "train.py", "line": 10, "name": "main"}]},
              {"size": 1024, "requested_size": 1000, "state": "active_allocated",
               "frames": [{"filename": "/x/site-packages/torch/nn/linear.py", "line": 5, "name": "forward"},
                          {"filename": "model.py", "line": 7, "name": "fwd"}]},
              {"size": 2095616, "requested_size": 0, "state": "inactive", "frames": []}]}],
 "device_traces": [[
   {"action": "segment_alloc", "addr": 4096, "size": 2097152, "stream": 0, "time_us": 100, "frames": []},
   {"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 110,
    "frames": [{"filename": "train.py", "line": 10, "name": "main"}]},
   {"action": "alloc", "addr": 4608, "size": 1024, "stream": 0, "time_us": 120,
    "frames": [{"filename": "/x/site-packages/torch/nn/linear.py", "line": 5, "name": "forward"},
               {"filename": "model.py", "line": 7, "name": "fwd"}]},
   {"action": "alloc", "addr": 5632, "size": 2048, "stream": 0, "time_us": 130,
    "frames": [{"filename": "model.py", "line": 9, "name": "tmp"}], "user_metadata": "step1"},
   {"action": "free_requested", "addr": 5632, "size": 2048, "stream": 0, "time_us": 150,
    "frames": [{"filename": "model.py", "line": 9, "name": "tmp"}]},
   {"action": "free_completed", "addr": 5632, "size": 2048, "stream": 0, "time_us": 151,
    "frames": [{"filename": "model.py", "line": 9, "name": "tmp"}]}
 ]]
}"#;

fn snap() -> Snapshot {
    memviz_snapshot::load_slice(SNAP.as_bytes()).expect("the test snapshot loads")
}

fn sites(s: &Snapshot) -> SiteCache {
    SiteCache::default_for(s)
}

fn col<'a>(b: &'a RecordBatch, name: &str) -> &'a dyn Array {
    b.column_by_name(name).expect("column").as_ref()
}

fn strings(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let a = arrow_cast_strings(col(b, name));
    a
}

/// A string or dictionary-of-strings column as strings.
fn arrow_cast_strings(a: &dyn Array) -> Vec<Option<String>> {
    if let Some(d) = a.as_dictionary_opt::<UInt32Type>() {
        let values = d.values().as_string::<i32>();
        return d
            .keys()
            .iter()
            .map(|k| k.map(|k| values.value(k as usize).to_string()))
            .collect();
    }
    if let Some(d) = a.as_dictionary_opt::<arrow_array::types::UInt8Type>() {
        let values = d.values().as_string::<i32>();
        return d
            .keys()
            .iter()
            .map(|k| k.map(|k| values.value(k as usize).to_string()))
            .collect();
    }
    a.as_string::<i32>()
        .iter()
        .map(|s| s.map(str::to_string))
        .collect()
}

#[test]
fn trace_has_every_event_and_its_columns() {
    let s = snap();
    let b = trace(&s, None).expect("trace");
    assert_eq!(b.num_rows(), 6);
    let actions = strings(&b, "action");
    assert_eq!(actions[0].as_deref(), Some("segment_alloc"));
    assert_eq!(actions[4].as_deref(), Some("free_requested"));
    let size = col(&b, "size").as_primitive::<UInt64Type>();
    assert_eq!(size.value(2), 1024);
    let t = col(&b, "time_us").as_primitive::<Int64Type>();
    assert_eq!(t.value(5), 151);
    let um = strings(&b, "user_metadata");
    assert_eq!(um[3].as_deref(), Some("step1"));
    assert_eq!(um[0], None);
    let cc = col(&b, "compile_context");
    assert_eq!(cc.null_count(), 6);
    assert_eq!(trace(&s, Some(1)).expect("no device 1").num_rows(), 0);
}

#[test]
fn frames_and_stacks_agree() {
    let s = snap();
    let f = frames(&s, &mut sites(&s)).expect("frames");
    let st = stacks(&s).expect("stacks");
    assert_eq!(f.num_rows(), s.frames.len());
    assert_eq!(st.num_rows(), s.stacks.len());
    let kinds = strings(&f, "kind");
    let names = strings(&f, "filename");
    for (k, n) in kinds.iter().zip(&names) {
        let want = if n.as_deref().is_some_and(|n| n.contains("site-packages")) {
            "library"
        } else {
            "user"
        };
        assert_eq!(k.as_deref(), Some(want), "{n:?}");
    }
    let lists = col(&st, "frames").as_list::<i32>();
    assert_eq!(lists.value(0).len(), 0, "stack 0 is empty");
    let total: usize = (0..lists.len()).map(|i| lists.value(i).len()).sum();
    assert!(total >= 3);
}

#[test]
fn segments_are_the_final_ones() {
    let s = snap();
    let b = segments(&s).expect("segments");
    assert_eq!(b.num_rows(), 1);
    assert_eq!(
        col(&b, "total_size").as_primitive::<UInt64Type>().value(0),
        2_097_152
    );
    assert_eq!(strings(&b, "segment_type")[0].as_deref(), Some("small"));
    assert_eq!(col(&b, "blocks").as_primitive::<UInt32Type>().value(0), 3);
}

#[test]
fn allocations_name_sites_and_lifetimes() {
    let s = snap();
    let b = allocations(&s, Some(0), &mut sites(&s)).expect("allocations");
    assert_eq!(b.num_rows(), 3);
    let site = strings(&b, "site");
    assert!(
        site.iter().any(|x| x.as_deref() == Some("model.py:9:tmp")),
        "{site:?}"
    );
    assert!(
        site.iter().any(|x| x.as_deref() == Some("model.py:7:fwd")),
        "{site:?}"
    );
    let free = col(&b, "free_event").as_primitive::<UInt32Type>();
    let life = col(&b, "lifetime_us").as_primitive::<Int64Type>();
    let size = col(&b, "size").as_primitive::<UInt64Type>();
    let freed: Vec<usize> = (0..b.num_rows()).filter(|&i| free.is_valid(i)).collect();
    assert_eq!(freed.len(), 1);
    let i = freed[0];
    assert_eq!(size.value(i), 2048);
    assert_eq!(life.value(i), 20);
    let all = allocations(&s, None, &mut sites(&s)).expect("every device");
    assert_eq!(all.num_rows(), 3);
}

#[test]
fn blocks_at_match_the_state() {
    let s = snap();
    let fin = blocks_at(&s, 0, -1, &mut sites(&s)).expect("final");
    let kinds = strings(&fin, "kind");
    assert_eq!(
        kinds
            .iter()
            .filter(|k| k.as_deref() == Some("segment"))
            .count(),
        1
    );
    assert_eq!(
        kinds
            .iter()
            .filter(|k| k.as_deref() == Some("block"))
            .count(),
        2
    );
    // After merged event 0 (the segment alloc): one segment, no block.
    let first = blocks_at(&s, 0, 0, &mut sites(&s)).expect("event 0");
    assert_eq!(first.num_rows(), 1);
    assert!(blocks_at(&s, 0, 99, &mut sites(&s)).is_err());
}

#[test]
fn lines_are_the_site_table() {
    let s = snap();
    let b = lines(&s, 0, &mut sites(&s)).expect("lines");
    let labels = strings(&b, "label");
    assert!(
        labels
            .iter()
            .any(|l| l.as_deref() == Some("model.py:7:fwd")),
        "{labels:?}"
    );
    let detail = col(&b, "detail").as_list::<i32>();
    let total: usize = (0..detail.len()).map(|i| detail.value(i).len()).sum();
    assert_eq!(total, 1, "the linear.py line under model.py:7");
}

#[test]
fn json_and_parquet_out() {
    let s = snap();
    let b = trace(&s, None).expect("trace");
    let mut text = Vec::new();
    to_json(&b, &mut text).expect("json");
    let text = String::from_utf8(text).expect("utf-8");
    assert!(text.starts_with("[{"), "{text}");
    assert!(text.contains("\"compile_context\":null"), "{text}");
    let dir = std::env::temp_dir().join(format!("memviz-table-{}", std::process::id()));
    let paths = write_parquet(&dir, &s, &Options::default()).expect("parquet");
    assert_eq!(paths.len(), Table::ALL.len());
    for p in &paths {
        let bytes = std::fs::read(p).expect("written");
        assert_eq!(bytes.get(..4), Some(&b"PAR1"[..]));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ranks_one_row_group_per_rank() {
    use memviz_analysis::ranks::{RankRow, Site};
    let row = |file: &str, peak: u64| RankRow {
        file: file.to_string(),
        device: Some(0),
        peak_bytes: peak,
        final_bytes: 1,
        reserved_bytes: 2,
        oom_events: 0,
        top_sites: vec![Site {
            label: "a.py:1:f".into(),
            bytes: peak,
        }],
        outlier: false,
    };
    let rows = vec![row("r0", 10), row("r1", 20), row("r2", 30)];
    let path = std::env::temp_dir().join(format!("memviz-ranks-{}.parquet", std::process::id()));
    write_ranks_parquet(&path, &rows).expect("written");
    let file = std::fs::File::open(&path).expect("open");
    let reader = parquet::file::reader::SerializedFileReader::new(file).expect("parquet");
    use parquet::file::reader::FileReader;
    assert_eq!(reader.metadata().num_row_groups(), 3);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn tables_by_name_and_bad_arguments() {
    let s = snap();
    for t in Table::ALL {
        assert_eq!(Table::from_name(t.name()), Some(t));
        table(&s, t, &Options::default()).expect("every table");
    }
    let bad = Options {
        device: Some(5),
        ..Options::default()
    };
    let e = table(&s, Table::Trace, &bad).expect_err("no device 5");
    assert_eq!(e.to_string(), "no device 5 (devices: 0)");
}

/// One device's trace table reads the model's stack ids in place (no copy), and equals the
/// copied table.
#[test]
fn the_trace_shares_its_stack_column() {
    let snap = std::sync::Arc::new(snap());
    let d = snap.default_device();
    let shared = crate::trace_shared(&snap, Some(d)).expect("shared");
    let copied = crate::trace(&snap, Some(d)).expect("copied");
    assert_eq!(shared, copied);
    let col = shared
        .column_by_name("stack")
        .expect("stack")
        .as_primitive::<UInt32Type>();
    let model = snap.trace(d).expect("a trace").stacks();
    assert!(!model.is_empty());
    assert_eq!(
        col.values().as_ptr(),
        model.as_ptr().cast::<u32>(),
        "not shared"
    );
    // Every device at once: one table, copied.
    let all = crate::trace_shared(&snap, None).expect("all");
    assert_eq!(all, crate::trace(&snap, None).expect("all"));
    // The table outlives the caller's handle on the snapshot.
    drop(snap);
    assert_eq!(shared.num_rows(), copied.num_rows());
}
