//! Every real snapshot parses, and its summary equals the independent Python oracle's.

use crate::common;
use common::*;

#[test]
fn every_corpus_file_matches_the_oracle() {
    let files = corpus_files();
    for f in &files {
        let snap = load_path(f);
        assert_matches_oracle(summary_json(&snap), f);
    }
    eprintln!("{} corpus files checked against the oracle", files.len());
}

#[test]
fn issue_reference_numbers() {
    let f = repo_root()
        .join("../shared/corpus/real/notHanmin__assignment2-systems__memory_snapshot.pickle");
    if !f.exists() {
        eprintln!("note: corpus absent; skipped");
        return;
    }
    let s = summary_json(&load_path(&f));
    let expected = serde_json::json!({"device": 0, "trace_entries": 19464,
      "actions": {"alloc": 6488, "free_completed": 6488, "free_requested": 6488},
      "segments": 999, "blocks": 1987,
      "reserved_bytes": 23842521088u64, "allocated_bytes": 16019091968u64, "requested_bytes": 15568596996u64,
      "timeline_allocations": 7801, "peak_live_bytes": 22827925508u64, "final_live_bytes": 15568596996u64});
    assert_eq!(s["devices"][0], expected);
    assert_eq!(s["devices"].as_array().map(|a| a.len()), Some(1));
}

#[test]
fn same_model_for_any_chunk_size() {
    let files = corpus_files();
    for f in &files {
        let bytes = std::fs::read(f).expect("read");
        let whole = load_chunked(&bytes, bytes.len()).expect("whole").dump();
        for n in [1, 7, 4096] {
            let d = load_chunked(&bytes, n).expect("chunked").dump();
            assert!(
                d == whole,
                "model differs with chunk size {n} for {}",
                f.display()
            );
        }
    }
}

#[test]
fn the_cli_prints_json_and_a_table() {
    let Some(f) = corpus_files()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("silmont2000"))
    else {
        return;
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memviz"))
        .args(["summary"])
        .arg(&f)
        .arg("--json")
        .output()
        .expect("run");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["devices"][0]["trace_entries"], 97);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memviz"))
        .args(["summary"])
        .arg(&f)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("trace entries") && text.contains("peak live"),
        "{text}"
    );
}
