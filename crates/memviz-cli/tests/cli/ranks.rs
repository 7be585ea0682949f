//! `memviz ranks FILE… [--json]` on generated fixtures (landmarks: known sites and bytes;
//! oomdevice: an oom on the other device; a fleet with one rank far above the rest) and on the
//! real corpus (every file one row, peaks as `memviz summary` computes them).

use crate::common;

use common::{corpus_files, fixture, fixtures_dir, generate, memviz, path_str};
use serde_json::Value;
use std::path::PathBuf;

const MIB: u64 = 1 << 20;

fn ranks_json(files: &[PathBuf]) -> Value {
    let names: Vec<String> = files.iter().map(|f| path_str(f)).collect();
    let mut args = vec!["ranks", "--json"];
    args.extend(names.iter().map(String::as_str));
    let (code, out, err) = memviz(&args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).expect("JSON")
}

fn landmarks() -> PathBuf {
    let p = fixtures_dir().join("ranks-landmarks.pickle");
    if !p.exists() {
        generate("landmarks", &p);
    }
    p
}

#[test]
fn a_row_has_the_peak_final_reserved_and_top_sites() {
    let v = ranks_json(&[landmarks()]);
    let row = &v["rows"][0];
    assert_eq!(row["device"], 0);
    assert_eq!(row["peak_bytes"], 14 * MIB);
    assert_eq!(row["final_bytes"], 12 * MIB);
    assert_eq!(row["reserved_bytes"], 20 * MIB);
    assert_eq!(row["oom_events"], 0);
    assert_eq!(row["outlier"], false);
    let sites: Vec<(String, u64)> = row["top_sites"]
        .as_array()
        .expect("sites")
        .iter()
        .map(|s| {
            (
                s["label"].as_str().expect("label").to_string(),
                s["bytes"].as_u64().expect("bytes"),
            )
        })
        .collect();
    assert_eq!(
        sites,
        [
            ("beta.py:22:make_beta".to_string(), 8 * MIB),
            ("alpha.py:11:make_alpha".to_string(), 4 * MIB),
            ("gamma.py:33:make_gamma".to_string(), 2 * MIB),
        ]
    );
    assert!(v["rule"].as_str().expect("rule").contains("median"));
}

#[test]
fn oom_events_of_every_device_count() {
    let p = fixtures_dir().join("ranks-oomdevice.pickle");
    generate("oomdevice", &p);
    let v = ranks_json(&[p]);
    assert_eq!(v["rows"][0]["oom_events"], 1);
    // The row is the device with the largest peak, named.
    let d = v["rows"][0]["device"].as_i64().expect("device");
    let (_, summary, _) = memviz(&[
        "summary",
        "--json",
        &path_str(&fixtures_dir().join("ranks-oomdevice.pickle")),
    ]);
    let s: Value = serde_json::from_str(&summary).expect("summary");
    let peak = s["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .map(|d| d["peak_live_bytes"].as_u64().expect("peak"))
        .max();
    assert_eq!(v["rows"][0]["peak_bytes"].as_u64(), peak);
    assert!(s["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .any(|x| x["device"] == d && x["peak_live_bytes"].as_u64() == peak));
}

#[test]
fn a_fleet_sorts_by_peak_and_flags_the_rank_far_above() {
    let dir = fixtures_dir().join("ranks-fleet");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut files = Vec::new();
    for i in 0..4 {
        let p = dir.join(format!("rank{i}.pickle"));
        std::fs::copy(landmarks(), &p).expect("copy");
        files.push(p);
    }
    // pools.pickle peaks at 346 MiB, far above 14 MiB.
    files.push(fixture("pools.pickle"));
    let v = ranks_json(&files);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 5);
    assert!(rows[0]["file"]
        .as_str()
        .expect("file")
        .ends_with("pools.pickle"));
    assert_eq!(rows[0]["outlier"], true);
    assert!(rows[1..].iter().all(|r| r["outlier"] == false));
    let peaks: Vec<u64> = rows
        .iter()
        .map(|r| r["peak_bytes"].as_u64().expect("peak"))
        .collect();
    assert!(peaks.windows(2).all(|w| w[0] >= w[1]), "{peaks:?}");
    // Ties keep the file order by name.
    let names: Vec<&str> = rows[1..]
        .iter()
        .map(|r| r["file"].as_str().expect("file"))
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);

    // The table: a header, one line per file, the rule.
    let args: Vec<String> = files.iter().map(|f| path_str(f)).collect();
    let mut a = vec!["ranks"];
    a.extend(args.iter().map(String::as_str));
    let (code, out, err) = memviz(&a);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 7, "{out}");
    assert!(
        lines[1].contains("pools.pickle") && lines[1].contains("OUTLIER"),
        "{out}"
    );
    assert!(lines[6].starts_with("1 outlier(s); rule:"), "{out}");
}

#[test]
fn a_bad_file_is_one_line_naming_it() {
    let (code, _, err) = memviz(&[
        "ranks",
        &path_str(&fixture("proto5.pickle")),
        "/no/such.pickle",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("/no/such.pickle: cannot open"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn the_corpus_gives_one_row_per_file_with_summary_peaks() {
    let files = corpus_files();
    if files.is_empty() {
        return;
    }
    let v = ranks_json(&files);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), files.len());
    for r in rows {
        let f = r["file"].as_str().expect("file");
        let (_, out, _) = memviz(&["summary", "--json", f]);
        let s: Value = serde_json::from_str(&out).expect("summary");
        let peak = s["devices"]
            .as_array()
            .expect("devices")
            .iter()
            .map(|d| d["peak_live_bytes"].as_u64().expect("peak"))
            .max()
            .unwrap_or(0);
        assert_eq!(r["peak_bytes"].as_u64(), Some(peak), "{f}");
        let sites = r["top_sites"].as_array().expect("sites");
        assert!(sites.len() <= 3, "{f}");
        let total: u64 = sites
            .iter()
            .map(|s| s["bytes"].as_u64().expect("bytes"))
            .sum();
        assert!(total <= peak, "{f}");
    }
}
