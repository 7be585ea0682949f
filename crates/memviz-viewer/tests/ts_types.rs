//! The shell's TypeScript declarations (`www/js/generated/`) are the ones the Rust answer
//! structs and the request enum give (`ts-rs`): this test generates them into a scratch
//! directory and fails, naming the files, when the committed ones differ. With
//! `MEMVIZ_WRITE_TYPES=1` (`cargo xtask gen-types`) it writes them instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn read_dir(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".ts") {
                out.insert(name, std::fs::read_to_string(e.path()).unwrap_or_default());
            }
        }
    }
    out
}

#[test]
fn generated_typescript_is_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let committed_dir = root.join("www/js/generated");
    let scratch: PathBuf = root
        .join("target/test-fixtures/ts-types")
        .join(std::process::id().to_string());
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("mkdir");
    let cfg = ts_rs::Config::new()
        .with_large_int("number")
        .with_out_dir(&scratch);
    memviz_viewer::request::export_ts(&cfg).expect("export");
    let fresh = read_dir(&scratch);
    assert!(fresh.contains_key("Request.ts") && fresh.contains_key("Answers.ts"));
    if std::env::var_os("MEMVIZ_WRITE_TYPES").is_some() {
        let _ = std::fs::remove_dir_all(&committed_dir);
        std::fs::create_dir_all(&committed_dir).expect("mkdir");
        for (name, text) in &fresh {
            std::fs::write(committed_dir.join(name), text).expect("write");
        }
    } else {
        let committed = read_dir(&committed_dir);
        let stale: std::collections::BTreeSet<&String> = fresh
            .keys()
            .chain(committed.keys())
            .filter(|k| fresh.get(*k) != committed.get(*k))
            .collect();
        assert!(
            stale.is_empty(),
            "www/js/generated/ is out of date ({stale:?}): run `cargo xtask gen-types`"
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
