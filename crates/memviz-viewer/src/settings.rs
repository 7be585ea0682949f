//! The Allocator Settings panel: a snapshot's `allocator_settings` (FORMAT.md §7) as readable
//! rows — the value as text and what it means for the caching allocator.

use memviz_snapshot::Snapshot;
use serde_json::Value;

use crate::answer::SettingRow;

/// What a known key means; `value` is the setting's JSON value.
fn meaning(key: &str, value: &Value) -> String {
    let b = value.as_bool();
    let i = value.as_i64();
    match key {
        "PYTORCH_CUDA_ALLOC_CONF" => {
            let s = value.as_str().unwrap_or("");
            if s.is_empty() {
                "The PYTORCH_CUDA_ALLOC_CONF string in effect: empty, so every option has its default."
                    .into()
            } else {
                "The PYTORCH_CUDA_ALLOC_CONF string in effect (comma-separated option:value pairs)."
                    .into()
            }
        }
        "max_split_size" => match i {
            Some(v) if v < 0 => "Unset: blocks of any size may be split (no limit).".into(),
            Some(v) => format!(
                "Blocks larger than {} are never split, which limits fragmentation of big blocks.",
                memviz_analysis::format::size_long(v.unsigned_abs())
            ),
            None => "Blocks larger than this are never split.".into(),
        },
        "garbage_collection_threshold" => match value.as_f64() {
            Some(v) if v > 0.0 => format!(
                "When reserved memory exceeds {:.0}% of the allowed memory, unused cached blocks are \
                 released before calling cudaMalloc again.",
                v * 100.0
            ),
            _ => "0: cached blocks are only released when an allocation fails (or on empty_cache).".into(),
        },
        "expandable_segments" => match b {
            Some(true) => "On: segments grow in place by mapping more pages (segment_map / segment_unmap \
                           events), which avoids most fragmentation."
                .into(),
            Some(false) => "Off: each segment is one cudaMalloc of a fixed size.".into(),
            None => "Whether segments grow in place by mapping pages.".into(),
        },
        "pinned_num_register_threads" => {
            "Threads used to register pinned host memory with cudaHostRegister.".into()
        }
        "release_lock_on_cudamalloc" => match b {
            Some(true) => "The allocator's lock is released around cudaMalloc/cudaFree calls.".into(),
            _ => "The allocator's lock is held during cudaMalloc/cudaFree calls.".into(),
        },
        "pinned_use_cuda_host_register" => match b {
            Some(true) => "Pinned host memory is malloc'd, then registered with cudaHostRegister.".into(),
            _ => "Pinned host memory comes from cudaHostAlloc.".into(),
        },
        "roundup_power2_divisions" => {
            "Allocation sizes are rounded up to one of this many divisions per power of two.".into()
        }
        "max_non_split_rounding_size" => {
            "Large unsplit blocks may serve requests up to this many bytes smaller.".into()
        }
        "last_allocator_settings" => "The settings string the allocator was last configured with.".into(),
        _ => String::new(),
    }
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        other => other.to_string(),
    }
}

/// `allocator_settings` as rows, in the file's key order, keys and values as text.
#[must_use]
pub fn rows(snap: &Snapshot) -> Vec<SettingRow> {
    let row = |key: &str, value: &Value, meaning: String| SettingRow {
        key: key.to_owned(),
        value: value_text(value),
        meaning,
    };
    match &snap.allocator_settings {
        Some(Value::Object(map)) => map.iter().map(|(k, v)| row(k, v, meaning(k, v))).collect(),
        Some(other) => vec![row("allocator_settings", other, String::new())],
        None => Vec::new(),
    }
}
