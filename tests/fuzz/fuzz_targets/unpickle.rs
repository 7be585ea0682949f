//! The generic pickle VM on arbitrary bytes, fed in chunks whose size comes from the first byte:
//! must never panic, and must give the same result whatever the chunking.
#![no_main]
use libfuzzer_sys::fuzz_target;
use memviz_pickle::tree::{render, TreeBuilder};
use memviz_pickle::Unpickler;

fn run(data: &[u8], chunk: usize) -> Result<String, String> {
    let mut u = Unpickler::new(TreeBuilder::default());
    for c in data.chunks(chunk) {
        u.push(c).map_err(|e| e.to_string())?;
    }
    let (v, atoms, tree) = u.finish().map_err(|e| e.to_string())?;
    let mut s = String::new();
    // Rendering is recursive; fuzz inputs are small, so depth stays bounded by the input size.
    if data.len() < 4096 {
        render(v, &atoms, &tree, &mut s);
    }
    Ok(s)
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let chunk = 1 + first as usize % 64;
    let a = run(rest, chunk);
    let b = run(rest, rest.len().max(1));
    assert_eq!(a, b, "result depends on chunking");
});
