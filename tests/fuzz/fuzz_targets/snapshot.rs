//! The whole load path (sniffing, gzip, unpickling, the JSON and zip readers, model building)
//! and the summary on arbitrary bytes: must never panic; loading must not depend on chunking.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../common/mod.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let chunk = 1 + first as usize % 97;
    if let Ok(a) = common::check_chunking(rest, chunk) {
        let s = memviz_analysis::summary::summarize(&a);
        let _ = s.to_json();
        let _ = s.to_table();
    }
});
