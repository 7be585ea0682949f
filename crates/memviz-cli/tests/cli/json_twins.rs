//! Every real snapshot saved as JSON (its JSON twin, written here by Python's `json.dump` of the
//! pickle loaded with an Unpickler that refuses every class) opens as the same model as the
//! pickle, whatever the chunking, and summarizes the same.

use crate::common;
use common::*;
use std::path::Path;
use std::process::Command;

/// `json.dump` of the snapshot in `pickle` (restricted: a class in the pickle fails the test).
fn json_twin(pickle: &Path) -> Vec<u8> {
    const SCRIPT: &str = "\
import json, pickle, sys
class Plain(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError('refused %s.%s' % (module, name))
with open(sys.argv[1], 'rb') as f:
    obj = Plain(f).load()
json.dump(obj, sys.stdout)
";
    let out = Command::new("python3")
        .args(["-c", SCRIPT])
        .arg(pickle)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "json twin of {}: {}",
        pickle.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The model's dump without its first line (the pickle's protocol, 0 for JSON).
fn dump(s: &memviz_snapshot::Snapshot) -> String {
    s.dump()
        .split_once('\n')
        .map(|x| x.1.to_string())
        .unwrap_or_default()
}

#[test]
fn every_corpus_file_as_json_is_the_same_model_as_its_pickle() {
    let files = corpus_files();
    let (mut pickle_bytes, mut json_bytes) = (0usize, 0usize);
    for f in &files {
        let from_pickle = load_path(f);
        let want = dump(&from_pickle);
        let want_summary = summary_json(&from_pickle);
        let json = json_twin(f);
        pickle_bytes += std::fs::metadata(f).map_or(0, |m| m.len() as usize);
        json_bytes += json.len();
        // Every chunking on the smaller twins; on the large ones (up to 115 MB) a page's 4 KiB
        // and whole.
        let chunks: &[usize] = if json.len() <= 4 << 20 {
            &[1, 7, 4096, usize::MAX]
        } else {
            &[4096, usize::MAX]
        };
        for &n in chunks {
            let s = load_chunked(&json, n)
                .unwrap_or_else(|e| panic!("{} as JSON, chunk {n}: {e}", f.display()));
            assert_eq!(s.protocol, 0);
            assert!(
                dump(&s) == want,
                "{} as JSON (chunk {n}) is another model than the pickle",
                f.display()
            );
            assert_eq!(summary_json(&s), want_summary, "{}", f.display());
        }
    }
    eprintln!(
        "{} corpus files: {} MB of pickle, {} MB as JSON; each the same model",
        files.len(),
        pickle_bytes >> 20,
        json_bytes >> 20
    );
}
