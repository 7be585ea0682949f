//! The zip reader of torch.save archives (`memviz_snapshot::zip`) on arbitrary bytes: must
//! never panic, and must not depend on chunking; an entry it unwraps loads as the bytes alone.
//!
//! Input: one control byte, then bytes. Its low 6 bits: chunk size 1–64; its top 2 bits, the
//! mode:
//! * 0 (the seeds' control byte 63): the bytes are an archive. `ZipStream` in chunks and whole
//!   gives the same entry bytes and result (entry or error), and the loader in chunks and whole
//!   the same model or error (the `snapshot` target's check).
//! * 1, 2, 3: the bytes are a data.pkl, put into an archive as torch.save lays it out (a
//!   `byteorder` record before it, the central directory after) with a correct crc-32 (which
//!   random bytes never have, so mutations reach the loader behind the zip reader): 1 stored with
//!   its sizes in the local header, 2 stored with its sizes in a data descriptor after it
//!   (torch.save's own flags), 3 deflated with a data descriptor. The archive loads as the bytes
//!   alone do: the same model, or an error of the same kind and offset whose message holds the
//!   bare load's; and the loader in chunks and whole agree on it.
#![no_main]
use flate2::write::DeflateEncoder;
use flate2::{Compression, Crc};
use libfuzzer_sys::fuzz_target;
use memviz_snapshot::zip::ZipStream;
use memviz_snapshot::{load_slice, LoadError};
use std::io::Write;

#[path = "../common/mod.rs"]
mod common;

/// The entry bytes `ZipStream` hands on and its result, the archive pushed in `chunk`s.
fn stream(archive: &[u8], chunk: usize) -> (Vec<u8>, Result<(String, u64, bool), LoadError>) {
    let mut out = Vec::new();
    let mut z = ZipStream::new();
    let mut sink = |b: &[u8]| -> Result<(), LoadError> {
        out.extend_from_slice(b);
        Ok(())
    };
    let mut pushed = Ok(());
    for c in archive.chunks(chunk.max(1)) {
        pushed = z.push(c, &mut sink);
        if pushed.is_err() {
            break;
        }
    }
    let r = pushed.and_then(|()| z.finish(&mut sink));
    (out, r.map(|e| (e.name, e.bytes, e.complete)))
}

fn raw(archive: &[u8], chunk: usize) {
    let (whole_bytes, whole) = stream(archive, archive.len().max(1));
    let (chunked_bytes, chunked) = stream(archive, chunk);
    assert_eq!(chunked, whole, "zip reader result depends on chunking");
    if let Ok((_, n, _)) = &whole {
        assert_eq!(chunked_bytes, whole_bytes, "entry bytes depend on chunking");
        assert_eq!(*n, whole_bytes.len() as u64, "entry size = bytes handed on");
    }
    let _ = common::check_chunking(archive, chunk);
}

/// A record as torch.save writes it (`tests/fixtures/formats.py` `TorchZip`), stored or
/// deflated, its sizes in the local header or in a signed data descriptor after the data.
fn record(out: &mut Vec<u8>, name: &[u8], data: &[u8], deflate: bool, descriptor: bool) {
    let mut crc = Crc::new();
    crc.update(data);
    let body = if deflate {
        let mut e = DeflateEncoder::new(Vec::new(), Compression::fast());
        let _ = e.write_all(data);
        e.finish().unwrap_or_default()
    } else {
        data.to_vec()
    };
    let flags: u16 = if descriptor { 0x0808 } else { 0x0800 };
    let method: u16 = if deflate { 8 } else { 0 };
    let (c, sizes) = if descriptor {
        (0, (0, 0))
    } else {
        (crc.sum(), (body.len() as u32, data.len() as u32))
    };
    out.extend(b"PK\x03\x04");
    out.extend(20u16.to_le_bytes());
    out.extend(flags.to_le_bytes());
    out.extend(method.to_le_bytes());
    out.extend([0; 4]);
    out.extend(c.to_le_bytes());
    out.extend(sizes.0.to_le_bytes());
    out.extend(sizes.1.to_le_bytes());
    out.extend((name.len() as u16).to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out.extend(name);
    out.extend(&body);
    if descriptor {
        out.extend(b"PK\x07\x08");
        out.extend(crc.sum().to_le_bytes());
        out.extend((body.len() as u32).to_le_bytes());
        out.extend((data.len() as u32).to_le_bytes());
    }
}

fn wrapped(data: &[u8], chunk: usize, mode: u8) {
    // A stored entry with a descriptor ends at the first descriptor-and-signature its bytes
    // hold (the format's own ambiguity: such bytes are refused with a crc mismatch or read
    // short), so those are only run, not compared.
    let ambiguous = mode == 2 && data.windows(2).any(|w| w == b"PK");
    let mut archive = Vec::new();
    record(&mut archive, b"snap/byteorder", b"little", false, mode != 1);
    record(&mut archive, b"snap/data.pkl", data, mode == 3, mode != 1);
    archive.extend(b"PK\x01\x02");
    archive.extend([0; 42]);
    let zipped = common::check_chunking(&archive, chunk);
    // An archive inside an archive is refused, not opened.
    if ambiguous || data.starts_with(b"PK\x03\x04") {
        return;
    }
    let bare = load_slice(data);
    match (&zipped, &bare) {
        (Ok(a), Ok(b)) => assert_eq!(a.dump(), b.dump(), "the entry loads unlike the bytes"),
        // gzip'd: which fault shows first depends on how the bytes arrive.
        (Err(_), Err(_)) if data.starts_with(&[0x1f, 0x8b]) => {}
        (Err(a), Err(b)) => {
            assert_eq!((a.kind, a.offset), (b.kind, b.offset), "{a} vs {b}");
            assert!(a.message.contains(&b.message), "{a} vs {b}");
        }
        _ => panic!(
            "the entry and the bytes load differently: {:?} vs {:?}",
            zipped.as_ref().map(|_| ()),
            bare.as_ref().map(|_| ())
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let chunk = 1 + (first & 0x3f) as usize;
    match first >> 6 {
        0 => raw(rest, chunk),
        mode => wrapped(rest, chunk, mode),
    }
});
