//! What a file may make the builder build beyond what it writes out: the budget that keeps the
//! model linear in the bytes read.
//!
//! # Why
//! A pickle refers to an object it wrote once with a memo get of 2 or 5 bytes. Most of what the
//! builder makes from the file is linear in the bytes read by construction: an event row, a
//! frame, a segment or a block is made once per dict the file writes out, an interned stack
//! once per list. Some structures, though, are made per *reference* when the model has no way
//! to share them: a stack interned again after its list grew, the rows of a trace list that two
//! devices share, a device trace per trace list, `forward_frames` and annotation entries,
//! legacy `history` entries, a segment listed twice, and the values read back out of a generic
//! container. A few bytes of references can then ask for gigabytes (issue 14: a 300 KB file
//! asked for 8 GB, a 4 MB one for 12 GB).
//!
//! # The bound
//! Those copies are charged here, before they are made, in bytes of the model they add:
//! together at most [`COPY_FACTOR`] times the pickle bytes read so far plus [`COPY_FLOOR`].
//! Values read back out of generic containers are counted too: at most [`READ_FACTOR`] per
//! byte read plus [`READ_FLOOR`]. Past either, the file is refused with one sentence, "this
//! file expands to more than N GB; …". Real snapshots use a small part of it (their copies are
//! the rows of devices after the first, and the stacks, well under one byte per byte read).
//! The JSON kept of `allocator_settings` and unknown top-level keys has an allowance of its
//! own, [`JSON_FACTOR`] bytes per byte read plus [`JSON_FLOOR`]; past it the values are cut
//! (`"..."`) with a warning instead, as the fixed cut of 100 000 values per key already did.
//!
//! The bytes read are the pickle bytes pushed so far, the chunk being read included (for gzip
//! input the decompressed bytes): the loader says so before each chunk
//! ([`SnapshotBuilder::set_input_bytes`](super::SnapshotBuilder::set_input_bytes)).

use super::BuildError;
use std::cell::Cell;

/// Model bytes the copies may take per pickle byte read.
pub const COPY_FACTOR: u64 = 4;
/// Model bytes the copies may take whatever the file's size. (Was 64 MB: a 1 KB input could
/// then copy for 20 ms; real files need well under one byte per byte read, so 16 MB leaves any
/// small real file ample room.)
pub const COPY_FLOOR: u64 = 16 << 20;
/// Values read back out of generic containers per pickle byte read.
pub const READ_FACTOR: u64 = 16;
/// Values read back out of generic containers whatever the file's size. (Was 2^24: a 241-byte
/// input read back 16 M values, 1.9 s under ASan; fuzzing spent most of its time on such
/// inputs. Real files read back well under one value per byte.)
pub const READ_FLOOR: u64 = 1 << 20;
/// Bytes of JSON (settings, unknown keys) per pickle byte read.
pub const JSON_FACTOR: u64 = 2;
/// Bytes of JSON whatever the file's size. (Was 16 MB: a 270-byte input made 16 MB of JSON
/// text for an unknown key, 0.2 s natively. Real `allocator_settings` are under 1 KB.)
pub const JSON_FLOOR: u64 = 1 << 20;
/// JSON values made at most for the whole file (settings and unknown keys together): each
/// conversion had 100 000 of its own, so a 364-byte file of 28 unknown keys referring to one
/// list holding itself 39 times made 2.8 M values, and 16 M container reads before the read
/// bound refused it (0.2 s, 190 MB; over 10 s under ASan: found by fuzzing). 10 000 since:
/// a 1 KB input making 100 000 values spent 50–100 ms in the allocator alone, and real
/// `allocator_settings` have about 20 values.
pub const JSON_VALUES: usize = 10_000;

#[derive(Default)]
pub(crate) struct Budget {
    /// Pickle bytes read (pushed) so far.
    input: u64,
    /// Model bytes of the copies made so far.
    copies: u64,
    /// Values read back out of generic containers so far (`Cell`: reads happen through `&self`).
    reads: Cell<u64>,
    /// Set when the reads went past their bound (the reads from then on are empty).
    reads_over: Cell<bool>,
    /// JSON bytes made so far, and whether some were cut.
    json: Cell<u64>,
    json_cut: Cell<bool>,
    /// JSON values made so far, over every conversion of the file ([`JSON_VALUES`] at most).
    json_values: Cell<usize>,
    /// The first refusal, kept until the builder can return it.
    error: Option<BuildError>,
    /// Set with `error` or `reads_over`: the one flag [`Budget::check`] reads.
    over: Cell<bool>,
}

/// `bytes` as a short decimal amount ("0.07 GB", "12.3 GB").
fn gb(bytes: u64) -> String {
    let g = bytes as f64 / 1e9;
    if g < 10.0 {
        format!("{g:.2} GB")
    } else {
        format!("{g:.1} GB")
    }
}

impl Budget {
    pub(crate) fn set_input(&mut self, bytes: u64) {
        self.input = self.input.max(bytes);
    }

    /// The bytes the copies may take now.
    pub(crate) fn copy_limit(&self) -> u64 {
        self.input
            .saturating_mul(COPY_FACTOR)
            .saturating_add(COPY_FLOOR)
    }

    fn read_limit(&self) -> u64 {
        self.input
            .saturating_mul(READ_FACTOR)
            .saturating_add(READ_FLOOR)
    }

    fn json_limit(&self) -> u64 {
        self.input
            .saturating_mul(JSON_FACTOR)
            .saturating_add(JSON_FLOOR)
    }

    /// Charge `bytes` of copies; `why` says what makes them, as a clause ("a trace list shared
    /// by several devices is copied into each"). An error (kept, and returned) when they do not
    /// fit.
    pub(crate) fn charge(&mut self, bytes: u64, why: &str) -> Result<(), BuildError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let total = self.copies.saturating_add(bytes);
        let limit = self.copy_limit();
        if total > limit {
            let e = BuildError::Limit(format!(
                "this file expands to more than {} in memory; {why} (the limit is \
                 {COPY_FACTOR}x the {} pickle bytes read plus {} MB). A memory snapshot \
                 written by PyTorch never does this, so the file is refused",
                gb(limit),
                self.input,
                COPY_FLOOR >> 20
            ));
            self.error = Some(e.clone());
            self.over.set(true);
            return Err(e);
        }
        self.copies = total;
        Ok(())
    }

    /// Keep `e` as the refusal (the first one wins): for errors found where they cannot be
    /// returned at once.
    pub(crate) fn fail(&mut self, e: BuildError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
        self.over.set(true);
    }

    /// Count `n` values about to be read back out of a generic container: false (and nothing
    /// may be read) once the reads go past their bound.
    #[inline]
    pub(crate) fn read(&self, n: usize) -> bool {
        if self.reads_over.get() {
            return false;
        }
        let total = self.reads.get().saturating_add(n as u64);
        if total > self.read_limit() {
            self.reads_over.set(true);
            self.over.set(true);
            return false;
        }
        self.reads.set(total);
        true
    }

    /// Take `bytes` of JSON: false (cut the value) once the JSON allowance is spent.
    pub(crate) fn json(&self, bytes: usize) -> bool {
        let total = self.json.get().saturating_add(bytes as u64);
        if total > self.json_limit() {
            self.json_cut.set(true);
            return false;
        }
        self.json.set(total);
        true
    }

    /// JSON values the file's conversions may still make.
    pub(crate) fn json_values_left(&self) -> usize {
        JSON_VALUES.saturating_sub(self.json_values.get())
    }

    /// `n` more JSON values were made.
    pub(crate) fn spend_json_values(&self, n: usize) {
        let total = self.json_values.get().saturating_add(n);
        self.json_values.set(total);
        if total >= JSON_VALUES {
            // The values left out are cut, as past the byte allowance.
            self.json_cut.set(true);
        }
    }

    /// Whether some JSON was cut, and the allowance in bytes.
    pub(crate) fn json_cut(&self) -> Option<u64> {
        self.json_cut.get().then(|| self.json_limit())
    }

    /// The refusal, if the file went past a bound.
    pub(crate) fn error(&self) -> Option<BuildError> {
        if let Some(e) = &self.error {
            return Some(e.clone());
        }
        self.reads_over.get().then(|| {
            BuildError::Limit(format!(
                "this file expands to more than {} million values read back out of shared \
                 containers; memo gets of the same lists and dicts are read again for each \
                 reference (the limit is {READ_FACTOR} per pickle byte read, {} bytes, plus {} \
                 million). A memory snapshot written by PyTorch never does this, so the file \
                 is refused",
                self.read_limit() / 1_000_000,
                self.input,
                READ_FLOOR / 1_000_000
            ))
        })
    }

    /// The refusal as an `Err`, if any.
    #[inline]
    pub(crate) fn check(&self) -> Result<(), BuildError> {
        if !self.over.get() {
            return Ok(());
        }
        Err(self
            .error()
            .unwrap_or_else(|| BuildError::Limit(String::new())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_bounded_by_the_input() {
        let mut b = Budget::default();
        b.set_input(1000);
        assert!(b.charge(COPY_FLOOR, "stacks").is_ok());
        assert!(b.charge(4000, "stacks").is_ok());
        let e = b.charge(1, "stacks").expect_err("over the limit");
        assert!(matches!(e, BuildError::Limit(_)), "{e:?}");
        let e = e.to_string();
        assert!(
            e.starts_with("this file expands to more than 0.02 GB in memory"),
            "{e}"
        );
        assert!(
            e.contains("in memory; stacks (the limit is 4x the 1000"),
            "{e}"
        );
        assert!(b.check().is_err());
        // More input, more room; the refusal stays.
        b.set_input(1 << 30);
        assert!(b.charge(1, "stacks").is_err());
    }

    #[test]
    fn reads_and_json_are_bounded() {
        let b = Budget::default();
        assert!(b.read(READ_FLOOR as usize));
        assert!(!b.read(1));
        assert!(b.check().is_err());
        assert!(b.json(JSON_FLOOR as usize));
        assert!(!b.json(1));
        assert_eq!(b.json_cut(), Some(JSON_FLOOR));
    }
}
