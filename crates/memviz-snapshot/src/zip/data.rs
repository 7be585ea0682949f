//! Reading an entry's data when it is not simply counted off: deflated data, stored data of
//! unknown size (flag bit 3), and the data descriptor after an entry (APPNOTE.TXT §4.3.9).

use super::header::{
    descriptor_crc, descriptor_lengths, is_next_record, may_start_next_record,
    stored_descriptor_before, SIG_DESCRIPTOR,
};
use super::messages::check_crc;
use super::{Sink, State, ZipStream};
use crate::load::{LoadError, LoadErrorKind, GZIP_FLOOR, GZIP_MAX_RATIO};
use flate2::{FlushDecompress, Status};
use LoadErrorKind::{Malformed, TooBig};

/// Inflated bytes handed on at a time.
const INFLATE_BUF: usize = 32 << 10;
/// Bytes of a stored entry of unknown size examined at a time (its descriptor is looked for
/// in them): what the scan holds at most, beyond a 27-byte tail.
const SCAN_PIECE: usize = 64 << 10;
/// The longest data descriptor (signature, crc-32, two 8-byte sizes) and a signature's first
/// three bytes: the tail a scan keeps between pieces.
pub(super) const SCAN_TAIL: usize = 24 + 3;

impl ZipStream {
    /// Inflates deflated data: to the sink for the snapshot entry, else to nowhere (to find
    /// where the entry ends when its size comes after it).
    pub(super) fn inflate(&mut self, input: &[u8], sink: &mut Sink) -> Result<usize, LoadError> {
        let (State::Inflate { z, left, ended }, Some(c)) = (&mut self.state, &mut self.cur) else {
            return Ok(0);
        };
        let avail = match *left {
            Some(l) => input.len().min(usize::try_from(l).unwrap_or(usize::MAX)),
            None => input.len(),
        };
        let mut used = 0;
        if *ended {
            // Bytes after the end of the deflate stream, within the entry's size.
            used = avail;
        } else {
            if self.out.is_empty() {
                self.out = vec![0; INFLATE_BUF];
            }
            loop {
                let rest = input.get(used..avail).unwrap_or_default();
                let (in0, out0) = (z.total_in(), z.total_out());
                // A fault in the deflate data is returned after the bytes inflated before it
                // went to the sink, as in a call that ended before the fault; and the sink gets
                // at most the bytes the local header says before the entry is refused for
                // inflating to more, as in calls that inflate a few bytes at a time. So the
                // entry's loader sees the same bytes, and the load fails the same way (its own
                // error first, when those bytes hold one), however the archive is chunked
                // (found by the `zip` fuzz target: crash-ca15d920, crash-cfcb1a33).
                let result = z.decompress(rest, &mut self.out, FlushDecompress::None);
                let consumed = usize::try_from(z.total_in() - in0).unwrap_or(usize::MAX);
                let produced = usize::try_from(z.total_out() - out0).unwrap_or(usize::MAX);
                used += consumed;
                c.consumed += consumed as u64;
                let before = c.bytes;
                c.bytes += produced as u64;
                let sized = c.emit && !c.local.has_descriptor();
                if c.emit {
                    let cap = if sized { c.local.usize } else { u64::MAX };
                    let keep = usize::try_from(cap.saturating_sub(before))
                        .unwrap_or(usize::MAX)
                        .min(produced);
                    c.emit(self.out.get(..keep).unwrap_or_default(), sink)?;
                }
                if sized && c.bytes > c.local.usize {
                    return Err(c.local.error(
                        Malformed,
                        c.data_at,
                        &format!(
                            "inflates to more than the {} bytes its local header says: the \
                             zip archive is damaged; copy or save it again",
                            c.local.usize
                        ),
                    ));
                }
                let limit = c
                    .consumed
                    .saturating_mul(GZIP_MAX_RATIO)
                    .saturating_add(GZIP_FLOOR);
                if c.bytes > limit {
                    return Err(c.local.error(
                        TooBig,
                        c.data_at,
                        &format!(
                            "inflates to more than {GZIP_MAX_RATIO} times its compressed bytes \
                             plus {} MB (memory snapshots compress 9 to 40 times): refused as a \
                             decompression bomb. If it is a real snapshot, extract it (`unzip \
                             FILE`) and open that data.pkl",
                            GZIP_FLOOR >> 20
                        ),
                    ));
                }
                let status = result.map_err(|e| {
                    c.local.error(
                        Malformed,
                        c.data_at,
                        &format!(
                            "has corrupt deflate data ({e}) in the data starting here: the zip \
                             archive is damaged; copy or save it again"
                        ),
                    )
                })?;
                if status == Status::StreamEnd {
                    *ended = true;
                    break;
                }
                if consumed == 0 && produced == 0 {
                    if used < avail {
                        return Err(c.local.error(
                            Malformed,
                            c.data_at,
                            "has deflate data that stops making progress: the zip archive is \
                             damaged; copy or save it again",
                        ));
                    }
                    break;
                }
                // Go on while there is input, or the output buffer filled (more may be
                // pending).
                if used >= avail && produced < self.out.len() {
                    break;
                }
            }
        }
        if let Some(l) = left {
            *l -= used as u64;
        }
        let finished = match *left {
            Some(0) => {
                if !*ended {
                    return Err(c.local.error(
                        Malformed,
                        self.pos + used as u64,
                        &format!(
                            "ends after its {} compressed bytes in the middle of its deflate \
                             stream: the zip archive is damaged; copy or save it again",
                            c.local.csize
                        ),
                    ));
                }
                true
            }
            Some(_) => false,
            None => *ended,
        };
        if finished {
            self.end_of_data(self.pos + used as u64)?;
        }
        Ok(used)
    }

    /// Stored data of unknown size: hands it on, keeping the last [`SCAN_TAIL`] bytes, until a
    /// data descriptor whose sizes equal the data's length is followed by a record signature.
    pub(super) fn scan(&mut self, input: &[u8], sink: &mut Sink) -> Result<usize, LoadError> {
        let (State::Scan { buf, seen }, Some(c)) = (&mut self.state, &mut self.cur) else {
            return Ok(0);
        };
        let old = buf.len();
        let take = input.len().min(SCAN_PIECE);
        buf.extend_from_slice(input.get(..take).unwrap_or_default());
        // Candidates: a signature starting at q, not checked before (those starting in the
        // tail's last 3 bytes were not whole then).
        let end = buf.len().saturating_sub(3);
        let mut q = old.saturating_sub(3);
        let mut found = None;
        while let Some(k) = buf
            .get(q..end)
            .and_then(|b| b.iter().position(|&b| b == b'P'))
        {
            q += k;
            if buf.get(q..q + 4).is_some_and(is_next_record) {
                found = stored_descriptor_before(buf, q, *seen + q as u64, c.local.zip64)
                    .map(|d| (q, d));
                if found.is_some() {
                    break;
                }
            }
            q += 1;
        }
        let Some((q, (dlen, crc))) = found else {
            let keep = buf.len().min(SCAN_TAIL);
            let flush = buf.len() - keep;
            if flush > 0 {
                if c.emit {
                    c.bytes += flush as u64;
                    c.emit(buf.get(..flush).unwrap_or_default(), sink)?;
                }
                buf.drain(..flush);
                *seen += flush as u64;
            }
            return Ok(take);
        };
        let data_end = q - dlen;
        if c.emit {
            c.bytes += data_end as u64;
            c.emit(buf.get(..data_end).unwrap_or_default(), sink)?;
            let at = self.pos + take as u64 - (buf.len() - data_end) as u64;
            check_crc(c, crc, at)?;
        }
        let (prefill, used) = resume_at(buf, old, q);
        self.state = if c.emit {
            State::Done
        } else {
            State::Header(prefill)
        };
        Ok(used)
    }

    /// The data descriptor after an entry's data: its crc-32 for the snapshot entry, else its
    /// length, by where the next record's signature is.
    pub(super) fn descriptor(&mut self, input: &[u8]) -> Result<usize, LoadError> {
        let (State::Descriptor(buf), Some(c)) = (&mut self.state, &self.cur) else {
            return Ok(0);
        };
        let at = self.pos - buf.len() as u64;
        let signed = |b: &[u8]| b.starts_with(&SIG_DESCRIPTOR);
        // Enough for the signature and crc-32 of the snapshot entry's descriptor, else for
        // the longest descriptor and a signature.
        let want: usize = match (c.emit, buf.len() >= 4 && signed(buf)) {
            (true, true) => 8,
            (true, false) => 4,
            (false, _) => 24 + 4,
        };
        let old = buf.len();
        let take = want.saturating_sub(old).min(input.len());
        buf.extend_from_slice(input.get(..take).unwrap_or_default());
        if c.emit {
            if buf.len() >= 8 || (buf.len() >= 4 && !signed(buf)) {
                if let Some(crc) = descriptor_crc(buf) {
                    check_crc(c, crc, at)?;
                }
                self.state = State::Done;
            }
            return Ok(take);
        }
        if buf.len() < 4 {
            return Ok(take);
        }
        for len in descriptor_lengths(signed(buf), c.local.zip64) {
            match buf.get(len..len + 4) {
                Some(sig) if is_next_record(sig) => {
                    let (prefill, used) = resume_at(buf, old, len);
                    self.state = State::Header(prefill);
                    return Ok(used);
                }
                Some(_) => {}
                // Wait for the bytes at this length before trying the next.
                None => return Ok(take),
            }
        }
        Err(c.local.error(
            Malformed,
            at,
            "has its size after its data (flag bit 3), but no data descriptor followed by a \
             zip header comes after its data: the zip archive is damaged; copy or save it again",
        ))
    }
}

/// Where the input ended during a scan (stored data of unknown size): the data's end and its
/// descriptor's crc-32 when the held bytes end with a matching data descriptor, then at most
/// the first 3 bytes of a next record's signature (a cut right after the descriptor). `seen`
/// is how many of the data's bytes were handed on before `buf`.
pub(super) fn scan_end_at_eof(buf: &[u8], seen: u64, zip64: bool) -> Option<(usize, u32)> {
    (0..=3usize.min(buf.len())).find_map(|tail| {
        let q = buf.len() - tail;
        if !may_start_next_record(buf.get(q..).unwrap_or_default()) {
            return None;
        }
        stored_descriptor_before(buf, q, seen + q as u64, zip64).map(|(dlen, crc)| (q - dlen, crc))
    })
}

/// The next record starts at `buf[q..]`, where `buf` held `old` bytes before this push's
/// were added: the bytes of it that came before this push (kept as the start of the record),
/// and how many of this push's bytes come before it (the rest are left in the input).
fn resume_at(buf: &[u8], old: usize, q: usize) -> (Vec<u8>, usize) {
    let prefill = buf.get(q..old.max(q)).unwrap_or_default().to_vec();
    (prefill, q.max(old) - old)
}
