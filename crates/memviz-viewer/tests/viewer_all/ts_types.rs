//! The shell's TypeScript declarations (`www/js/generated/`) are the ones the Rust answer
//! structs and the request enum give (`ts-rs`), and its list of views (`views.js`) is
//! `memviz_viewer::kinds::VIEWS`: this test generates them into a scratch directory and fails,
//! naming the files, when the committed ones differ. With `MEMVIZ_WRITE_TYPES=1`
//! (`cargo xtask gen-types`) it writes them instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memviz_viewer::kinds::{ViewInfo, VIEWS};
use ts_rs::TS;

fn read_dir(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".ts") || name.ends_with(".js") {
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
    ViewInfo::export_all(&cfg).expect("export ViewInfo");
    std::fs::write(scratch.join("views.js"), views_js()).expect("write views.js");
    let fresh = read_dir(&scratch);
    assert!(["Request.ts", "Answers.ts", "ViewInfo.ts", "views.js"]
        .iter()
        .all(|f| fresh.contains_key(*f)));
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

/// `views.js`: [`VIEWS`] as a frozen array of frozen `ViewInfo` objects (each row is its serde
/// JSON, which is JavaScript), typed by the generated `ViewInfo.ts`.
fn views_js() -> String {
    let mut out = String::from(
        "// Generated from memviz-viewer's list of views (crates/memviz-viewer/src/kinds.rs, `VIEWS`).\n\
         // Do not edit: `cargo xtask gen-types` writes it.\n\n\
         /** @typedef {import('./ViewInfo').ViewInfo} ViewInfo */\n\n\
         /** Every view, in the view selector's order. @type {ReadonlyArray<Readonly<ViewInfo>>} */\n\
         export const VIEWS = Object.freeze([\n",
    );
    for v in &VIEWS {
        let row = serde_json::to_string(v).expect("a view's row is JSON");
        out.push_str(&format!("  Object.freeze({row}),\n"));
    }
    out.push_str("]);\n");
    out
}
