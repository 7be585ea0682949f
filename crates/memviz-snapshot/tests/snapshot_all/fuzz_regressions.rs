//! Inputs the fuzz targets of tests/fuzz found against the JSON and zip readers (issue 28),
//! minimised (`cargo +nightly fuzz tmin`), each with what went wrong and what the fix holds.
//! docs/fuzzing.md lists them.

use crate::zip_writer;

use memviz_snapshot::{load_slice, LoadError, LoadErrorKind, Loader};
use zip_writer::{crc32, deflate, ZipWriter, SIZED};

/// `file` pushed through a loader in chunks of `chunk` bytes.
fn load_chunked(file: &[u8], chunk: usize) -> Result<memviz_snapshot::Snapshot, LoadError> {
    let mut l = Loader::new();
    for c in file.chunks(chunk) {
        l.push(c)?;
    }
    l.finish()
}

/// Found by the `zip` target (crash-ca15d920, minimised to these 65 bytes): a deflated
/// data.pkl whose deflate data turns corrupt after its first bytes, which are not a pickle.
/// Pushed in small chunks, the bytes inflated before the fault reached the entry's loader in
/// earlier calls, which refused them ("not a pickle"); pushed whole, the one inflate call that
/// met the fault returned its error and dropped the bytes it had inflated, so the load said
/// "corrupt deflate data" instead. The zip reader now hands on what a call inflated before it
/// reports the fault: the same bytes reach the entry's loader, and the error is the same,
/// whatever the chunking.
#[test]
fn fuzz_ca15d920_a_deflate_fault_does_not_hide_the_bytes_before_it() {
    let file: &[u8] = b"PK\x03\x04\x14\x00\x08\x00\x08\x00\x83\x18\x22\x58\xff\xff\xff\xff\
        \xff\xff\x00\x28\x00\x00\x00\x00\x0d\x00\x00\x00snap/data.pkl\x63\x52\xdb\x4e\xdc\x30\
        \x10\x75\x96\xa9\x64\x3e\x5f\x67\x8c\x69\xb8\xcc\xa1\x30\x1a\xbd";
    assert_eq!(file.len(), 65);
    let whole = load_slice(file).expect_err("a damaged archive does not load");
    for chunk in 1..=file.len() {
        let chunked = load_chunked(file, chunk).expect_err("a damaged archive does not load");
        assert_eq!(chunked, whole, "chunks of {chunk} bytes");
    }
    // What was inflated before the fault is a fault of its own, named first.
    assert_eq!(whole.kind, LoadErrorKind::NotPickle, "{whole}");
    assert!(
        whole
            .message
            .starts_with("in the zip archive's snap/data.pkl: "),
        "{whole}"
    );
}

/// Found by the `zip` target (crash-cfcb1a33, 1 786 bytes; `tmin` left 953, so the test builds
/// the same shape): a deflated data.pkl whose local header says fewer bytes (here 150) than its
/// deflate data inflates to, with bytes past that size that are not a pickle. Pushed in small
/// chunks, the inflated bytes reached the entry's loader a few at a time, and the reader refused
/// the entry as soon as they passed the size ("inflates to more than the 150 bytes its local
/// header says"); pushed whole, one inflate call handed all of them on first, and the entry's
/// loader refused the bytes past the size (here an unknown opcode). The zip reader now hands on
/// at most the size its local header says, then refuses the entry, whatever the chunking.
#[test]
fn fuzz_cfcb1a33_an_entry_inflating_past_its_size_is_refused_at_its_size() {
    // A pickle that reads fine for 200 bytes (a MARK, then 1-byte ints), then 0xfe, no opcode.
    let mut inflated = b"\x80\x02(".to_vec();
    for _ in 0..100 {
        inflated.extend(b"K\x01");
    }
    inflated.extend([0xfe; 10]);
    let declared = 150;
    let crc = crc32(
        inflated
            .get(..declared)
            .expect("declared size within the data"),
    );
    let mut w = ZipWriter::default();
    w.add("snap/byteorder", b"little", SIZED.unaligned());
    w.add_raw(
        "snap/data.pkl",
        &deflate(&inflated),
        declared as u64,
        crc,
        SIZED.unaligned().method(8),
    );
    let file = w.finish();
    let whole = load_slice(&file).expect_err("a damaged archive does not load");
    for chunk in 1..=file.len() {
        let chunked = load_chunked(&file, chunk).expect_err("a damaged archive does not load");
        assert_eq!(chunked, whole, "chunks of {chunk} bytes");
    }
    assert_eq!(whole.kind, LoadErrorKind::Malformed, "{whole}");
    assert!(
        whole
            .message
            .contains("inflates to more than the 150 bytes its local header says"),
        "{whole}"
    );
}

/// Found by the `snapshot` target (crash-89c16439, a JSON seed behind 79 tabs): the loader
/// chose the format from all of the bytes it held when it decided, which were the first chunk
/// (or the first write of decompressed bytes), not a fixed window. Whole, the text was JSON; in
/// chunks of 64 bytes, the window held tabs only and the file was "a text file". The choice is
/// now made on the first 64 bytes alone, and a window of whitespace is a JSON text indented
/// further, so it opens at every chunking, raw and gzip'd.
#[test]
fn fuzz_89c16439_json_behind_long_whitespace_is_json_at_every_chunking() {
    let mut file = vec![b'\t'; 79];
    file.extend_from_slice(
        br#"{"segments": [], "device_traces": [[{"action": "alloc", "addr": 4096, "size": 512}]]}"#,
    );
    let whole = load_slice(&file).expect("JSON behind whitespace opens");
    assert_eq!(whole.trace(0).map(|t| t.len()), Some(1));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &file).expect("gzip");
    let gz = gz.finish().expect("gzip");
    for f in [&file, &gz] {
        for chunk in 1..=f.len() {
            let chunked = load_chunked(f, chunk).expect("JSON behind whitespace opens");
            assert_eq!(chunked.dump(), whole.dump(), "chunks of {chunk} bytes");
        }
    }
    // Whitespace alone, longer than the window: read as JSON, the same error at every chunking.
    let blank = vec![b' '; 100];
    let e = load_slice(&blank).expect_err("no JSON value");
    for chunk in 1..=blank.len() {
        assert_eq!(load_chunked(&blank, chunk).expect_err("no JSON value"), e);
    }
    // Shorter than the window, it is still named from what it is.
    let short = load_slice(b"   \n").expect_err("whitespace is no snapshot");
    assert_eq!(short.kind, LoadErrorKind::NotPickle, "{short}");
}
