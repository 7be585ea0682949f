//! What the `snapshot`, `json` and `zip` targets check alike: the loader gives the same model
//! or the same error whatever the chunking.
use memviz_snapshot::{LoadError, Loader, Snapshot};

/// `rest` pushed through a [`Loader`] in chunks of `chunk` bytes.
pub fn load_chunked(rest: &[u8], chunk: usize) -> Result<Snapshot, LoadError> {
    let mut l = Loader::new();
    for c in rest.chunks(chunk.max(1)) {
        l.push(c)?;
    }
    l.finish()
}

/// True when the file or the zip entry the loader reads is gzip'd: which fault shows first
/// (corrupt deflate or bad bytes after it) then depends on how much was decompressed when.
fn gzip_inside(rest: &[u8]) -> bool {
    rest.starts_with(&[0x1f, 0x8b]) || (rest.starts_with(b"PK\x03\x04") && has_gzip_magic(rest))
}

fn has_gzip_magic(b: &[u8]) -> bool {
    b.windows(2).any(|w| w == [0x1f, 0x8b])
}

/// The load in chunks of `chunk` bytes against `load_slice` whole: the same model (`dump()`)
/// or the same error. Returns the whole load.
pub fn check_chunking(rest: &[u8], chunk: usize) -> Result<Snapshot, LoadError> {
    let chunked = load_chunked(rest, chunk);
    let whole = memviz_snapshot::load_slice(rest);
    match (&chunked, &whole) {
        (Ok(a), Ok(b)) => assert_eq!(a.dump(), b.dump(), "model depends on chunking"),
        (Err(_), Err(_)) if gzip_inside(rest) => {}
        (Err(a), Err(b)) => assert_eq!(a, b, "error depends on chunking"),
        _ => panic!(
            "chunked and whole loads disagree: {:?} vs {:?}",
            chunked.as_ref().map(|_| ()),
            whole.as_ref().map(|_| ())
        ),
    }
    whole
}
