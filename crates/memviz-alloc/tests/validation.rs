//! Issue 31 item 2: replayed as recorded, the model must produce each file's own segment
//! events (count, sizes in order, peak reserved). Runs over every real corpus file
//! (`../shared/corpus/real`, skipped with a note when absent) and the generated fixtures
//! (`tests/fixtures/generate.py`), and fails for any file whose result differs from its row in
//! docs/whatif.md's validation table (a mismatch must be listed there with its explanation).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The generated fixtures with segment events, in a private directory.
fn fixtures() -> Vec<PathBuf> {
    let dir = repo_root()
        .join("target/test-fixtures")
        .join(format!("alloc-validation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let script = repo_root().join("tests/fixtures/generate.py");
    let npu = dir.join("accelerator_npu.pickle");
    let demo = dir.join("demo.pickle");
    for args in [
        vec!["small".to_string(), dir.display().to_string()],
        vec![
            "accelerator".into(),
            "npu".into(),
            npu.display().to_string(),
        ],
        vec!["demo".into(), demo.display().to_string()],
    ] {
        let st = Command::new("python3")
            .arg(&script)
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("python3 runs");
        assert!(st.success(), "generate.py {args:?} failed");
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pickle"))
        .collect();
    files.sort();
    files
}

fn corpus() -> Vec<PathBuf> {
    let dir = repo_root().join("../shared/corpus/real");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        eprintln!("note: no corpus at {}: real files skipped", dir.display());
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x != "md"))
        .collect();
    files.sort();
    files
}

/// docs/whatif.md's validation table: (file, device) → result cell.
fn table() -> BTreeMap<(String, i64), String> {
    let text = std::fs::read_to_string(repo_root().join("docs/whatif.md")).expect("docs/whatif.md");
    let section = text
        .split("## Validation")
        .nth(1)
        .expect("a `## Validation` section");
    let mut out = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // "", file, device, recorded, model, result, ""
        let (Some(file), Some(dev), Some(result)) = (cells.get(1), cells.get(2), cells.get(5))
        else {
            continue;
        };
        let Ok(dev) = dev.parse::<i64>() else {
            continue;
        };
        out.insert(
            (file.trim_matches('`').to_string(), dev),
            (*result).to_string(),
        );
    }
    out
}

fn counts(c: &memviz_alloc::Counts) -> String {
    format!(
        "{}/{}/{}/{}, {}",
        c.segment_alloc, c.segment_free, c.segment_map, c.segment_unmap, c.peak_reserved
    )
}

#[test]
fn the_model_reproduces_each_files_segment_events_or_the_table_explains_why() {
    let table = table();
    let mut problems = Vec::new();
    let mut rows = Vec::new();
    let mut files = corpus();
    files.extend(fixtures());
    for path in files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Ok(snap) = memviz_snapshot::load_slice(&bytes) else {
            continue;
        };
        for device in 0..snap.traces.len() as i64 {
            let v = memviz_alloc::validate(&snap, device, &mut |_, _| true).expect("no cancel");
            let r = &v.recorded;
            if r.segment_alloc + r.segment_free + r.segment_map + r.segment_unmap == 0 {
                continue;
            }
            let line = format!(
                "| `{name}` | {device} | {} | {} | {} |",
                counts(&v.recorded),
                counts(&v.model),
                if v.matches { "match" } else { "mismatch" }
            );
            rows.push(line.clone());
            match table.get(&(name.clone(), device)) {
                None => problems.push(format!("not in the table: {line}")),
                Some(res) if v.matches && !res.starts_with("match") => {
                    problems.push(format!("now matches, update the table: {line}"));
                }
                Some(res) if !v.matches && !res.starts_with("mismatch") => problems.push(format!(
                    "mismatch not explained ({:?}): {line}",
                    v.first_difference
                )),
                _ => {}
            }
        }
    }
    eprintln!("{}", rows.join("\n"));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
