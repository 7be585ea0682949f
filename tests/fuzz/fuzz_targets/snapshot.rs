//! The whole load path (sniffing, gzip, unpickling, model building) and the analyses on
//! arbitrary bytes: must never panic; loading must not depend on chunking.
#![no_main]
use libfuzzer_sys::fuzz_target;
use memviz_snapshot::Loader;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let chunk = 1 + first as usize % 97;
    let mut l = Loader::new();
    let mut failed = None;
    for c in rest.chunks(chunk) {
        if let Err(e) = l.push(c) {
            failed = Some(e);
            break;
        }
    }
    let chunked = match failed {
        Some(e) => Err(e),
        None => l.finish(),
    };
    let whole = memviz_snapshot::load_slice(rest);
    match (&chunked, &whole) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.dump(), b.dump(), "model depends on chunking");
            let s = memviz_analysis::summary::summarize(a);
            let _ = s.to_json();
            let _ = s.to_table();
        }
        // With gzip, which fault shows first (corrupt deflate or bad pickle bytes) depends on
        // how much was decompressed when: only require that both fail.
        (Err(_), Err(_)) if rest.starts_with(&[0x1f, 0x8b]) => {}
        (Err(a), Err(b)) => assert_eq!(a, b, "error depends on chunking"),
        _ => panic!("chunked and whole loads disagree: {:?} vs {:?}", chunked.is_ok(), whole.is_ok()),
    }
});
