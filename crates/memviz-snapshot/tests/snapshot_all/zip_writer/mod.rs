//! Zip archives written byte by byte (APPNOTE.TXT §4.3: local headers, data descriptors,
//! central directory, end of central directory) as `torch.save` writes them, and in the
//! variants other writers use (data descriptors, deflate, zip64); a checkpoint-shaped one.
//! Shared by tests: `mod zip_writer;` in `snapshot_all/main.rs`, or
//! `#[path = "…/memviz-snapshot/tests/snapshot_all/zip_writer/mod.rs"] mod zip_writer;` from another crate.
#![allow(dead_code)]

use std::io::Write;

/// How one entry is written.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// 0 stored, 8 deflated, or another method number (its data is then written as given).
    pub method: u16,
    /// Flag bit 3: zero crc and sizes in the local header, a data descriptor after the data.
    pub descriptor: bool,
    /// The data descriptor starts with its optional signature.
    pub signed: bool,
    /// Sizes 0xFFFFFFFF in the headers and a zip64 extra field holding them (8-byte sizes in
    /// the descriptor).
    pub zip64: bool,
    /// torch's "FB" extra field (id 0x4246) padding the local header so the data starts at a
    /// multiple of 64.
    pub align: bool,
    /// General purpose flags or'ed in (bit 0: encrypted).
    pub flags: u16,
}

/// What torch.save writes (PyTorchStreamWriter through miniz 3.0.2 at level 0, as
/// tests/fixtures/formats.py reproduces it byte for byte): stored, general purpose flag bit 3
/// with crc-32 and sizes 0 in the local header and a signed 16-byte data descriptor after the
/// data, UTF-8 names (bit 11), the data aligned to 64 bytes by the "FB" extra field.
pub const TORCH: Entry = Entry {
    method: 0,
    descriptor: true,
    signed: true,
    zip64: false,
    align: true,
    flags: 0x0800,
};

/// As [`TORCH`] but with the crc-32 and sizes in the local header and no data descriptor (most
/// zip writers, and miniz with `MZ_ZIP_FLAG_WRITE_HEADER_SET_SIZE`).
pub const SIZED: Entry = Entry {
    descriptor: false,
    flags: 0,
    ..TORCH
};

impl Entry {
    /// Deflated (method 8), or another method.
    pub const fn method(self, method: u16) -> Self {
        Entry { method, ..self }
    }
    /// Flag bit 3: a data descriptor after the data, with or without its signature.
    pub const fn descriptor(self, signed: bool) -> Self {
        Entry {
            descriptor: true,
            signed,
            ..self
        }
    }
    /// Zip64 sizes.
    pub const fn zip64(self) -> Self {
        Entry {
            zip64: true,
            ..self
        }
    }
    /// No "FB" padding.
    pub const fn unaligned(self) -> Self {
        Entry {
            align: false,
            ..self
        }
    }
    /// General purpose flags or'ed in.
    pub const fn flags(self, flags: u16) -> Self {
        Entry {
            flags: self.flags | flags,
            ..self
        }
    }
}

/// A zip archive written entry by entry.
#[derive(Default)]
pub struct ZipWriter {
    out: Vec<u8>,
    central: Vec<u8>,
    count: u16,
}

pub fn crc32(data: &[u8]) -> u32 {
    let mut c = flate2::Crc::new();
    c.update(data);
    c.sum()
}

/// Raw deflate (no zlib or gzip header), as zip method 8 holds it.
pub fn deflate(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).expect("deflate");
    e.finish().expect("deflate")
}

impl ZipWriter {
    /// Adds an entry holding `data` (compressed here when `e.method` is 8).
    pub fn add(&mut self, name: &str, data: &[u8], e: Entry) -> &mut Self {
        let packed = if e.method == 8 {
            deflate(data)
        } else {
            data.to_vec()
        };
        self.add_raw(name, &packed, data.len() as u64, crc32(data), e)
    }

    /// Adds an entry whose data is `packed` as given, declaring `size` and `crc`.
    pub fn add_raw(
        &mut self,
        name: &str,
        packed: &[u8],
        size: u64,
        crc: u32,
        e: Entry,
    ) -> &mut Self {
        let offset = self.out.len() as u64;
        let flags = e.flags | if e.descriptor { 1 << 3 } else { 0 };
        let version: u16 = if e.zip64 { 45 } else { 20 };
        let (csize, usize) = (packed.len() as u64, size);
        let in_header = |v: u64| -> u32 {
            if e.descriptor {
                0
            } else if e.zip64 {
                u32::MAX
            } else {
                v as u32
            }
        };
        // Extra field: zip64 (§4.5.3: uncompressed, then compressed size), then torch's padding.
        let mut extra = Vec::new();
        if e.zip64 {
            extra.extend(1u16.to_le_bytes());
            extra.extend(16u16.to_le_bytes());
            let (u, c) = if e.descriptor { (0, 0) } else { (usize, csize) };
            extra.extend(u.to_le_bytes());
            extra.extend(c.to_le_bytes());
        }
        if e.align {
            // As torch's getPadding: the data after a 4-byte "FB" header and padding 'Z's.
            let start = offset as usize + 30 + name.len() + extra.len() + 4;
            let pad = (64 - start % 64) % 64;
            extra.extend(b"FB");
            extra.extend((pad as u16).to_le_bytes());
            extra.extend(std::iter::repeat_n(b'Z', pad));
        }
        let o = &mut self.out;
        o.extend(b"PK\x03\x04");
        o.extend(version.to_le_bytes());
        o.extend(flags.to_le_bytes());
        o.extend(e.method.to_le_bytes());
        o.extend([0, 0, 0x21, 0]); // time, date (1980-01-01)
        o.extend((if e.descriptor { 0 } else { crc }).to_le_bytes());
        o.extend(in_header(csize).to_le_bytes());
        o.extend(in_header(usize).to_le_bytes());
        o.extend((name.len() as u16).to_le_bytes());
        o.extend((extra.len() as u16).to_le_bytes());
        o.extend(name.as_bytes());
        o.extend(&extra);
        o.extend(packed);
        if e.descriptor {
            if e.signed {
                o.extend(b"PK\x07\x08");
            }
            o.extend(crc.to_le_bytes());
            if e.zip64 {
                o.extend(csize.to_le_bytes());
                o.extend(usize.to_le_bytes());
            } else {
                o.extend((csize as u32).to_le_bytes());
                o.extend((usize as u32).to_le_bytes());
            }
        }
        // Central directory file header (§4.3.12).
        let mut cextra = Vec::new();
        if e.zip64 {
            cextra.extend(1u16.to_le_bytes());
            cextra.extend(24u16.to_le_bytes());
            cextra.extend(usize.to_le_bytes());
            cextra.extend(csize.to_le_bytes());
            cextra.extend(offset.to_le_bytes());
        }
        let big = |v: u64| if e.zip64 { u32::MAX } else { v as u32 };
        let c = &mut self.central;
        c.extend(b"PK\x01\x02");
        c.extend(version.to_le_bytes()); // made by
        c.extend(version.to_le_bytes()); // needed
        c.extend(flags.to_le_bytes());
        c.extend(e.method.to_le_bytes());
        c.extend([0, 0, 0x21, 0]);
        c.extend(crc.to_le_bytes());
        c.extend(big(csize).to_le_bytes());
        c.extend(big(usize).to_le_bytes());
        c.extend((name.len() as u16).to_le_bytes());
        c.extend((cextra.len() as u16).to_le_bytes());
        c.extend([0; 8]); // comment length, disk, internal and external attributes
        c.extend([0; 2]);
        c.extend(big(offset).to_le_bytes());
        c.extend(name.as_bytes());
        c.extend(&cextra);
        self.count += 1;
        self
    }

    /// The archive: the entries, the central directory and its end record (§4.3.16).
    pub fn finish(&self) -> Vec<u8> {
        let mut o = self.out.clone();
        let at = o.len() as u32;
        o.extend(&self.central);
        o.extend(b"PK\x05\x06");
        o.extend([0; 4]);
        o.extend(self.count.to_le_bytes());
        o.extend(self.count.to_le_bytes());
        o.extend((self.central.len() as u32).to_le_bytes());
        o.extend(at.to_le_bytes());
        o.extend([0; 2]);
        o
    }
}

/// What `torch.save(obj, "NAME.pt")` writes for an object pickled as `pkl` (torch 2.x's
/// order), with `storages` as `NAME/data/KEY` entries; every entry written as `e`.
pub fn torch_zip(name: &str, pkl: &[u8], storages: &[(&str, &[u8])], e: Entry) -> Vec<u8> {
    let mut w = ZipWriter::default();
    w.add(&format!("{name}/data.pkl"), pkl, e)
        .add(&format!("{name}/.format_version"), b"1", e)
        .add(&format!("{name}/.storage_alignment"), b"64", e)
        .add(&format!("{name}/byteorder"), b"little", e);
    for (key, bytes) in storages {
        w.add(&format!("{name}/data/{key}"), bytes, e);
    }
    w.add(&format!("{name}/version"), b"3\n", e).add(
        &format!("{name}/.data/serialization_id"),
        b"1234567890123456789012345678901234567890",
        e,
    );
    w.finish()
}

/// The data.pkl of `torch.save({'weight': torch.ones(2, 2)}, f)`, written by hand: protocol 2,
/// the tensor rebuilt by GLOBAL `torch._utils._rebuild_tensor_v2` from a storage named by a
/// persistent id (BINPERSID of `('storage', torch.FloatStorage, '0', 'cpu', 4)`).
pub fn checkpoint_pickle() -> Vec<u8> {
    let mut p = b"\x80\x02}q\x00X\x06\x00\x00\x00weightq\x01".to_vec();
    p.extend(b"ctorch._utils\n_rebuild_tensor_v2\nq\x02((X\x07\x00\x00\x00storageq\x03");
    p.extend(
        b"ctorch\nFloatStorage\nq\x04X\x01\x00\x00\x000q\x05X\x03\x00\x00\x00cpuq\x06K\x04tq\x07Q",
    );
    p.extend(b"K\x00K\x02K\x02\x86q\x08K\x02K\x01\x86q\t\x89");
    p.extend(b"ccollections\nOrderedDict\nq\n)Rq\x0btq\x0cRq\rs.");
    p
}

/// A model checkpoint as torch.save writes it: `checkpoint/data.pkl` ([`checkpoint_pickle`])
/// and its tensor storage `checkpoint/data/0` (four float32 ones).
pub fn checkpoint_zip() -> Vec<u8> {
    let ones: Vec<u8> = std::iter::repeat_n(1f32.to_le_bytes(), 4)
        .flatten()
        .collect();
    torch_zip("checkpoint", &checkpoint_pickle(), &[("0", &ones)], TORCH)
}
