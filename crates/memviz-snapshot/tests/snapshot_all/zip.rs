//! `torch.save`d snapshots: [`ZipStream`] unwraps the data.pkl of zip archives built here byte
//! by byte (torch's layout, data descriptors, deflate, zip64, hostile headers) around real
//! snapshots (`../shared/corpus/real`, skipped when absent), whatever the chunking; piped into a
//! [`Loader`] as the loader's zip state does it, a checkpoint stays a checkpoint.

use crate::zip_writer;

use memviz_snapshot::zip::{in_entry, ZipEntry, ZipStream};
use memviz_snapshot::{load_slice, LoadError, LoadErrorKind, Loader, Snapshot};
use std::io::Write;
use std::path::PathBuf;
use zip_writer::{checkpoint_pickle, checkpoint_zip, deflate, torch_zip, ZipWriter, SIZED, TORCH};
use LoadErrorKind::*;

// ---------------------------------------------------------------------------------------------
// Reading them.

/// What unwrapping gave: the bytes handed on, the entry, `entry_done()` after the last push.
type Unwrapped = Result<(Vec<u8>, ZipEntry, bool), LoadError>;

fn unwrap_chunked(zip: &[u8], chunk: usize) -> Unwrapped {
    let mut z = ZipStream::new();
    let mut out = Vec::new();
    let r = {
        let mut sink = |b: &[u8]| {
            out.extend_from_slice(b);
            Ok(())
        };
        zip.chunks(chunk.max(1))
            .try_for_each(|c| z.push(c, &mut sink))
            .map(|()| z.entry_done())
            .and_then(|done| z.finish(&mut sink).map(|e| (e, done)))
    };
    r.map(|(e, done)| (out, e, done))
}

/// Unwraps `zip` in chunks of 1, 7 and 4096 bytes and whole: all give the same.
fn unzip(zip: &[u8]) -> Unwrapped {
    let whole = unwrap_chunked(zip, usize::MAX);
    for chunk in [1, 7, 4096] {
        assert_eq!(unwrap_chunked(zip, chunk), whole, "chunks of {chunk}");
    }
    whole
}

/// As the loader's zip state: the entry's bytes pushed to an inner [`Loader`] as they come.
fn load_zip(zip: &[u8], chunk: usize) -> Result<Snapshot, LoadError> {
    let mut z = ZipStream::new();
    let mut inner = Loader::new();
    let entry = {
        let mut sink = |b: &[u8]| inner.push(b);
        zip.chunks(chunk.max(1))
            .try_for_each(|c| z.push(c, &mut sink))
            .and_then(|()| z.finish(&mut sink))?
    };
    inner.finish().map_err(|e| in_entry(e, &entry.name))
}

fn corpus() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/real");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipped: no corpus at {}", dir.display());
        None
    }
}

/// A real snapshot pickle of the corpus, by a part of its name.
fn real(part: &str) -> Option<Vec<u8>> {
    let dir = corpus()?;
    let path = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().contains(part))?;
    std::fs::read(path).ok()
}

/// A small made-up pickle, for tests that need no real snapshot.
fn small_pickle() -> Vec<u8> {
    let mut p = b"\x80\x02}q\x00(X\x08\x00\x00\x00segmentsq\x01]q\x02".to_vec();
    p.extend(b"X\x0d\x00\x00\x00device_tracesq\x03]q\x04u.");
    p
}

fn assert_same_snapshot(a: &Snapshot, b: &Snapshot) {
    assert_eq!(a.segments.len(), b.segments.len());
    assert_eq!(a.blocks.len(), b.blocks.len());
    assert_eq!(a.traces.len(), b.traces.len());
    for (x, y) in a.traces.iter().zip(&b.traces) {
        assert_eq!(x.len(), y.len());
    }
    assert_eq!(a.frames.len(), b.frames.len());
    assert_eq!(a.warnings, b.warnings);
}

fn refused(r: Unwrapped) -> LoadError {
    match r {
        Ok((b, e, _)) => panic!("unwrapped {} bytes of {e:?}", b.len()),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------------------------------------

#[test]
fn a_torch_save_archive_gives_its_data_pkl_whatever_the_chunking() {
    for part in ["nishi951", "silmont2000", "MAGMA27"] {
        let Some(pkl) = real(part) else { return };
        let zip = torch_zip("snapshot_50", &pkl, &[], TORCH);
        // torch's layout: data.pkl first, its data at a multiple of 64.
        let at = zip
            .windows(pkl.len())
            .position(|w| w == pkl)
            .expect("the pickle is in the zip");
        assert_eq!(at % 64, 0, "{part}");
        let (bytes, entry, done) = unzip(&zip).expect("unwraps");
        assert!(bytes == pkl, "{part}: the bytes are the pickle");
        assert!(done, "{part}: entry_done");
        assert_eq!(
            entry,
            ZipEntry {
                name: "snapshot_50/data.pkl".into(),
                bytes: pkl.len() as u64,
                complete: true
            }
        );
        let want = load_slice(&pkl).expect("the pickle loads");
        for chunk in [4096, 1 << 20] {
            let got = load_zip(&zip, chunk).expect("the zip loads");
            assert_same_snapshot(&got, &want);
        }
    }
}

#[test]
fn every_way_of_writing_an_entry_unwraps() {
    let pkl = real("silmont2000").unwrap_or_else(small_pickle);
    let plain = SIZED.unaligned();
    let variants = [
        ("torch", TORCH),
        ("sizes in the local header", SIZED),
        ("unaligned", plain),
        ("unsigned descriptor", plain.descriptor(false)),
        ("zip64", SIZED.zip64()),
        ("zip64 descriptor", plain.zip64().descriptor(true)),
        ("zip64 unsigned descriptor", plain.zip64().descriptor(false)),
        ("deflate", plain.method(8)),
        ("deflate descriptor", plain.method(8).descriptor(true)),
        (
            "deflate zip64 descriptor",
            plain.method(8).zip64().descriptor(true),
        ),
    ];
    for (what, e) in variants {
        // data.pkl first, and after entries written the same way.
        let first = torch_zip("snap", &pkl, &[], e);
        let mut w = ZipWriter::default();
        w.add("snap/notes.txt", b"PK\x03\x04 PK\x07\x08 not a header", e)
            .add("snap/empty", b"", e)
            .add("snap/big", &vec![7u8; 100_000], e)
            .add("snap/data.pkl", &pkl, e)
            .add("snap/version", b"3\n", e);
        let later = w.finish();
        for (order, zip) in [("first", first), ("later", later)] {
            let (bytes, entry, done) =
                unzip(&zip).unwrap_or_else(|e| panic!("{what}, {order}: {e}"));
            assert!(bytes == pkl, "{what}, {order}: the bytes are the pickle");
            assert!(done, "{what}, {order}: entry_done");
            assert!(entry.complete, "{what}, {order}");
            assert_eq!(entry.name, "snap/data.pkl");
        }
    }
}

#[test]
fn a_bare_data_pkl_name_and_a_gzipped_data_pkl_load() {
    let pkl = small_pickle();
    let mut w = ZipWriter::default();
    w.add("data.pkl", &pkl, SIZED);
    let (bytes, entry, _) = unzip(&w.finish()).expect("unwraps");
    assert_eq!((bytes, entry.name.as_str()), (pkl.clone(), "data.pkl"));
    // The entry goes through a whole loader: a gzip'd data.pkl is read as gzip.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&pkl).expect("gzip");
    let gz = gz.finish().expect("gzip");
    let zip = torch_zip("s", &gz, &[], TORCH);
    let snap = load_zip(&zip, 7).expect("loads");
    assert!(snap.segments.is_empty() && snap.traces.is_empty());
}

#[test]
fn a_checkpoint_archive_is_a_checkpoint() {
    let zip = checkpoint_zip();
    let (bytes, _, _) = unzip(&zip).expect("unwraps");
    assert_eq!(bytes, checkpoint_pickle());
    for chunk in [1, 7, 4096, usize::MAX] {
        let e = load_zip(&zip, chunk).expect_err("refused");
        assert_eq!(e.kind, Checkpoint, "{e}");
        let msg = e.to_string();
        assert!(msg.contains("torch._utils._rebuild_tensor_v2"), "{msg}");
        assert!(msg.contains("model checkpoint"), "{msg}");
        assert!(
            msg.ends_with("(offset in checkpoint/data.pkl of the zip archive)"),
            "{msg}"
        );
    }
}

#[test]
fn an_archive_without_data_pkl_names_what_it_holds() {
    let mut w = ZipWriter::default();
    for i in 0..10 {
        w.add(&format!("dir/file{i}.txt"), b"text", SIZED);
    }
    let e = refused(unzip(&w.finish()));
    assert_eq!((e.kind, e.offset), (NotPickle, None));
    assert_eq!(
        e.to_string(),
        "this file is a zip archive holding 10 entries (dir/file0.txt, dir/file1.txt, \
         dir/file2.txt, dir/file3.txt, dir/file4.txt, dir/file5.txt, dir/file6.txt, \
         dir/file7.txt, …), none of them a data.pkl: not a torch.save'd snapshot; open the file \
         written by torch.cuda.memory._dump_snapshot() or a torch.save of \
         torch.cuda.memory._snapshot()"
    );
    let mut w = ZipWriter::default();
    w.add("a/data.pkl.bak", b"x", SIZED)
        .add("a/my_data.pkl", b"y", SIZED);
    let e = refused(unzip(&w.finish()));
    assert!(
        e.message.starts_with(
            "this file is a zip archive holding 2 entries (a/data.pkl.bak, a/my_data.pkl), none"
        ),
        "{e}"
    );
    // Names are data: control characters are replaced, long names cut.
    let mut w = ZipWriter::default();
    w.add(
        &format!("evil\n\u{1b}[31m{}", "x".repeat(60_000)),
        b"",
        SIZED.unaligned(),
    );
    let e = refused(unzip(&w.finish()));
    assert!(e.message.contains("holding 1 entry (evil??[31mxxx"), "{e}");
    assert!(e.message.contains("x…), none"), "{e}");
    assert!(!e.message.contains('\n'));
}

#[test]
fn cut_archives_give_a_prefix_or_say_where_they_end() {
    // The small pickle too: its archive's cuts land inside the data descriptor.
    for pkl in [real("nishi951"), Some(small_pickle())]
        .into_iter()
        .flatten()
    {
        cut_archives_of(&pkl);
    }
}

fn cut_archives_of(pkl: &[u8]) {
    let variants = [
        ("torch", TORCH),
        ("sizes in the local header", SIZED),
        ("unsigned descriptor", SIZED.descriptor(false)),
        ("deflate", SIZED.method(8)),
        ("deflate descriptor", SIZED.method(8).descriptor(true)),
    ];
    for (what, e) in variants {
        let mut w = ZipWriter::default();
        w.add("x/byteorder", b"little", e)
            .add("x/data.pkl", pkl, e)
            .add("x/version", b"3\n", e);
        let zip = w.finish();
        let data_at = zip.windows(8).position(|w| w == b"data.pkl").expect("name") + 8;
        for k in 0..=20 {
            let cut = zip.len() * k / 20;
            let r = unzip(&zip[..cut]);
            match &r {
                Ok((bytes, entry, _)) => {
                    assert!(
                        pkl.starts_with(bytes),
                        "{what} cut {cut}: a prefix of the pickle"
                    );
                    assert_eq!(entry.complete, bytes.len() == pkl.len(), "{what} cut {cut}");
                    assert!(cut > data_at, "{what} cut {cut}");
                }
                Err(e) => {
                    assert_eq!(e.kind, Truncated, "{what} cut {cut}: {e}");
                    assert_eq!(e.offset, Some(cut as u64), "{what} cut {cut}: {e}");
                    assert!(e.message.contains("was the copy incomplete?"), "{e}");
                }
            }
            // Through the loader: a snapshot (what was read before the cut) or an error.
            let _ = load_zip(&zip[..cut], 4096);
        }
    }
}

#[test]
fn a_cut_inside_a_header_or_an_entry_before_data_pkl_says_where() {
    let mut w = ZipWriter::default();
    w.add("x/byteorder", b"little", SIZED)
        .add("x/data.pkl", b"\x80\x02N.", SIZED);
    let zip = w.finish();
    let e = refused(unzip(&zip[..20]));
    assert_eq!(
        e.to_string(),
        "at byte 20: the zip archive ends after 20 bytes, inside the local header of entry 1, \
         with no data.pkl and before its central directory: was the copy incomplete? (offset in \
         the zip archive)"
    );
    let e = refused(unzip(&zip[..66]));
    assert!(
        e.message.contains(
            "inside the data of entry 'x/byteorder' (4 of its bytes missing), with no data.pkl \
             among its 1 entry (x/byteorder)"
        ),
        "{e}"
    );
}

#[test]
fn hostile_headers_are_refused_with_an_offset() {
    let pkl = small_pickle();
    // Encrypted (flag bit 0).
    let mut w = ZipWriter::default();
    w.add("s/data.pkl", &pkl, SIZED.flags(1));
    let e = refused(unzip(&w.finish()));
    assert_eq!((e.kind, e.offset), (NotPickle, Some(6)), "{e}");
    assert!(
        e.message
            .contains("entry 's/data.pkl' of the zip archive is encrypted"),
        "{e}"
    );
    // An encrypted entry before it is skipped by its size.
    let mut w = ZipWriter::default();
    w.add("s/secret", b"0123456789", SIZED.flags(1))
        .add("s/data.pkl", &pkl, SIZED);
    assert_eq!(unzip(&w.finish()).expect("unwraps").0, pkl);
    // A method memviz does not read.
    let mut w = ZipWriter::default();
    w.add_raw("s/data.pkl", b"BZh91AY&SY", 100, 0, SIZED.method(12));
    let e = refused(unzip(&w.finish()));
    assert_eq!((e.kind, e.offset), (NotPickle, Some(8)), "{e}");
    assert!(
        e.message.contains("compressed with bzip2 (method 12)"),
        "{e}"
    );
    // ... before it, with its size after its data: cannot be skipped.
    let mut w = ZipWriter::default();
    w.add_raw("s/x", b"BZh9", 10, 0, SIZED.method(12).descriptor(true))
        .add("s/data.pkl", &pkl, SIZED);
    let e = refused(unzip(&w.finish()));
    assert!(e.message.contains("cannot skip it"), "{e}");
    // A crc that does not match.
    let mut w = ZipWriter::default();
    w.add_raw("s/data.pkl", &pkl, pkl.len() as u64, 0xdead_beef, SIZED);
    let zip = w.finish();
    let e = refused(unzip(&zip));
    assert_eq!(e.kind, Malformed, "{e}");
    assert!(e.message.contains("does not match its crc-32"), "{e}");
    assert_eq!(e.offset, Some(64 + pkl.len() as u64));
    // ... in the data descriptor (torch's layout): placed at the end of the data too.
    let mut w = ZipWriter::default();
    w.add_raw("s/data.pkl", &pkl, pkl.len() as u64, 0xdead_beef, TORCH);
    let e = refused(unzip(&w.finish()));
    assert_eq!(
        (e.kind, e.offset),
        (Malformed, Some(64 + pkl.len() as u64)),
        "{e}"
    );
    // Garbage where the next header should be.
    let mut w = ZipWriter::default();
    w.add("s/byteorder", b"little", SIZED);
    let mut zip = w.finish();
    zip.truncate(70);
    zip.extend(b"garbage");
    let e = refused(unzip(&zip));
    assert_eq!((e.kind, e.offset), (Malformed, Some(70)), "{e}");
    assert!(e.message.contains("found 67 61 72 62"), "{e}");
    // Sizes past the end (a zip64 size of 2^62) and an absurd name length.
    let mut w = ZipWriter::default();
    w.add_raw("s/huge", b"abc", 1 << 62, 0, SIZED.zip64());
    let mut zip = w.finish();
    // The zip64 field after the 6-byte name: id, length, uncompressed, compressed size.
    zip[48..56].copy_from_slice(&(1u64 << 62).to_le_bytes());
    let e = refused(unzip(&zip));
    assert_eq!(e.kind, Truncated, "{e}");
    assert!(
        e.message.contains("inside the data of entry 's/huge'"),
        "{e}"
    );
    zip.truncate(30);
    zip[26..28].copy_from_slice(&u16::MAX.to_le_bytes());
    zip.extend(b"name...");
    let e = refused(unzip(&zip));
    assert_eq!(e.kind, Truncated, "{e}");
    // Sizes 0xFFFFFFFF without a zip64 field.
    let mut w = ZipWriter::default();
    w.add("s/data.pkl", &pkl, SIZED.zip64().unaligned());
    let mut zip = w.finish();
    zip[28..30].copy_from_slice(&0u16.to_le_bytes());
    let e = refused(unzip(&zip));
    assert_eq!((e.kind, e.offset), (Malformed, Some(18)), "{e}");
    assert!(e.message.contains("no zip64 extra field"), "{e}");
}

#[test]
fn deflate_bombs_and_corrupt_deflate_data_are_refused() {
    // 300 MB of zeros deflate to 1.4 MB (fast compression): past 100 times plus 64 MB.
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..300 {
        enc.write_all(&zeros).expect("deflate");
    }
    let bomb = enc.finish().expect("deflate");
    assert!(bomb.len() * 100 + (64 << 20) < 300 << 20, "{}", bomb.len());
    for (what, name, e) in [
        ("data.pkl", "s/data.pkl", SIZED.method(8)),
        ("skipped", "s/bomb", SIZED.method(8).descriptor(true)),
    ] {
        let mut w = ZipWriter::default();
        w.add_raw(name, &bomb, 300 << 20, 0, e)
            .add("s/data.pkl", b"\x80\x02N.", SIZED);
        let zip = w.finish();
        for chunk in [4096, usize::MAX] {
            let e = refused(unwrap_chunked(&zip, chunk));
            assert_eq!((e.kind, e.offset), (TooBig, Some(64)), "{what}: {e}");
            assert!(e.message.contains("refused as a decompression bomb"), "{e}");
        }
    }
    // Corrupt deflate data (a reserved block type).
    let mut w = ZipWriter::default();
    w.add_raw("s/data.pkl", &[0xff; 64], 10, 0, SIZED.method(8));
    let e = refused(unzip(&w.finish()));
    assert_eq!((e.kind, e.offset), (Malformed, Some(64)), "{e}");
    assert!(e.message.contains("corrupt deflate data"), "{e}");
    // A deflate stream longer than the entry's compressed size.
    let packed = deflate(&[5u8; 1000]);
    let mut w = ZipWriter::default();
    w.add_raw(
        "s/data.pkl",
        packed.get(..packed.len() - 2).expect("len"),
        1000,
        0,
        SIZED.method(8),
    );
    let e = refused(unzip(&w.finish()));
    assert!(
        e.message.contains("in the middle of its deflate stream"),
        "{e}"
    );
}

/// Byte flips of small archives of every kind: no panic, and the same result in every chunking.
#[test]
fn mutated_archives_never_panic_and_do_not_depend_on_chunking() {
    let pkl = small_pickle();
    let mut seeds = Vec::new();
    for e in [
        SIZED,
        TORCH,
        SIZED.method(8).zip64().descriptor(true),
        SIZED.zip64().descriptor(false),
    ] {
        let mut w = ZipWriter::default();
        w.add("s/a", b"hello", e)
            .add("s/data.pkl", &pkl, e)
            .add("s/b", b"bye", e);
        seeds.push(w.finish());
    }
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for seed in &seeds {
        for _ in 0..300 {
            let mut z = seed.clone();
            for _ in 0..1 + next() % 3 {
                let i = (next() % z.len() as u64) as usize;
                z[i] = next() as u8;
            }
            let cut = z.len() - (next() % 8) as usize;
            let _ = unzip(&z[..cut]);
        }
    }
}

/// The loader opens zip archives: a torch.save'd snapshot loads as its pickle does (its
/// progress counted in data.pkl's bytes), a cut one gives what was read before the cut, a
/// checkpoint is a checkpoint, an archive without a data.pkl says what it holds, and a zip in
/// a data.pkl is refused, not opened. Needs the loader's zip state (issue 28).
#[test]
fn the_loader_opens_torch_save_archives() {
    let load_chunked = |zip: &[u8], chunk: usize| {
        let mut l = Loader::new();
        zip.chunks(chunk)
            .try_for_each(|c| l.push(c))
            .and_then(|()| l.finish())
    };
    let zip = checkpoint_zip();
    for chunk in [1, 7, 4096, usize::MAX] {
        let e = load_chunked(&zip, chunk).expect_err("a checkpoint");
        assert_eq!(e.kind, Checkpoint, "{e}");
        let msg = e.to_string();
        assert!(
            msg.ends_with("(offset in checkpoint/data.pkl of the zip archive)"),
            "{msg}"
        );
    }
    let pkl = real("silmont2000").unwrap_or_else(small_pickle);
    let zip = torch_zip("snapshot_50", &pkl, &[], TORCH);
    let want = load_slice(&pkl).expect("the pickle loads");
    for chunk in [7, 4096, usize::MAX] {
        assert_same_snapshot(&load_chunked(&zip, chunk).expect("loads"), &want);
    }
    let mut l = Loader::new().with_size_hint(zip.len() as u64);
    for c in zip.chunks(4096) {
        l.push(c).expect("push");
    }
    assert_eq!(l.pickle_bytes(), pkl.len() as u64);
    let events: usize = want.traces.iter().map(|t| t.len()).sum();
    assert_eq!(l.trace_entries(), events as u64);
    match load_slice(&zip[..64 + pkl.len() * 3 / 4]) {
        Ok(s) => assert!(s.truncation_warning().is_some()),
        Err(e) => assert_eq!(e.kind, Truncated, "{e}"),
    }
    let mut w = ZipWriter::default();
    w.add("model/weights.bin", b"1234", SIZED);
    let e = load_slice(&w.finish()).expect_err("no data.pkl");
    assert_eq!(e.kind, NotPickle, "{e}");
    assert!(e
        .message
        .starts_with("this file is a zip archive holding 1 entry (model/weights.bin)"));
    let nested = torch_zip("outer", &torch_zip("inner", &pkl, &[], TORCH), &[], TORCH);
    let e = load_slice(&nested).expect_err("a zip in a zip");
    assert_eq!(e.kind, NotPickle, "{e}");
    assert!(
        e.message
            .starts_with("in the zip archive's outer/data.pkl: this file is a zip archive"),
        "{e}"
    );
}
