//! The reader of a file's format, pickle or JSON, feeding the one [`SnapshotBuilder`]; what
//! it reads at the end, whole or cut.

use super::{LoadError, LoadErrorKind};
use crate::builder::{BuildError, Recovered, SnapshotBuilder};
use crate::json::{JsonCut, JsonErrorKind, JsonReader};
use crate::model::{DeviceTrace, Snapshot, TRUNCATED_WARNING};
use memviz_pickle::{ErrorKind, Limits, PickleError, Unpickler};

/// What a decoder is made with.
#[derive(Clone, Copy, Debug)]
pub(super) struct Setup {
    pub limits: Limits,
    /// The file's size in bytes (compressed, for gzip input), 0 when unknown.
    pub size_hint: u64,
}

/// Real and generated snapshots spend 67 to 330 bytes of pickle per trace entry; sizing for 72
/// over-reserves most (the slack is given back at STOP: 9 % of the rows of a 79-byte-per-entry
/// file), while sizing for more than a file spends makes every column copy itself once more
/// near the end (a generated 79-byte-per-entry file did, with 80; the 67-byte tile of a real
/// file grows its columns once, by the rest the trace's rate projects).
const BYTES_PER_EVENT_MIN: u64 = 72;

/// The same for JSON, which writes each entry's keys and frames out in full: the JSON twins of
/// the real corpus spend 600 to 12 600 bytes per trace entry (the one at 600 has few frames),
/// the twin of a generated benchmark snapshot 3 570 (`cargo xtask bench`). Sizing for the
/// fewest observed, as for pickles, over-reserves the others' rows (6x for the generated twin,
/// 8 MB of columns for its 284 MB; the slack is given back at the end), and a trace without
/// frames (about 130 bytes an entry) gets the rest of its rows as its rate projects them
/// ([`SnapshotBuilder::grow_for`]).
const JSON_BYTES_PER_EVENT_MIN: u64 = 600;

/// gzip'd pickles expand about 4 times (the tables then grow as needed); JSON more.
const GZIP_PICKLE_EXPANSION: u64 = 4;
const GZIP_JSON_EXPANSION: u64 = 10;

pub(super) enum Decoder {
    Pickle(Box<Unpickler<SnapshotBuilder>>),
    Json(Box<JsonReader<SnapshotBuilder>>),
}

/// Trace entries expected in `bytes` of data at `per_event` bytes each, when worth reserving.
fn expected_events(bytes: u64, per_event: u64) -> Option<usize> {
    let events = usize::try_from(bytes / per_event)
        .unwrap_or(usize::MAX)
        .min(1 << 26);
    (events > 1 << 14).then_some(events)
}

impl Decoder {
    /// A pickle reader (`gzip`: the size hint is the compressed size).
    pub(super) fn pickle(setup: Setup, gzip: bool) -> Decoder {
        let (b, atoms) = SnapshotBuilder::new();
        let mut u = Unpickler::with_atoms(b, atoms, setup.limits);
        let bytes = if gzip {
            setup.size_hint.saturating_mul(GZIP_PICKLE_EXPANSION)
        } else {
            setup.size_hint
        };
        if let Some(events) = expected_events(bytes, BYTES_PER_EVENT_MIN) {
            // Containers and memo slots run at 1.0 to 1.3 per event (their chunks' words are
            // reserved now, the trace columns' rows at the first trace entry); `grow` sizes them
            // again from the rate so far when they fill up.
            u.builder_mut().reserve(events);
            u.reserve_memo(events);
        }
        Decoder::Pickle(Box::new(u))
    }

    /// A JSON reader (`gzip`: the size hint is the compressed size).
    pub(super) fn json(setup: Setup, gzip: bool) -> Decoder {
        let (mut b, atoms) = SnapshotBuilder::new();
        let bytes = if gzip {
            setup.size_hint.saturating_mul(GZIP_JSON_EXPANSION)
        } else {
            setup.size_hint
        };
        if let Some(events) = expected_events(bytes, JSON_BYTES_PER_EVENT_MIN) {
            b.reserve(events);
        }
        Decoder::Json(Box::new(JsonReader::new(b, atoms, setup.limits)))
    }

    pub(super) fn builder(&self) -> &SnapshotBuilder {
        match self {
            Decoder::Pickle(u) => u.builder(),
            Decoder::Json(r) => r.builder(),
        }
    }

    /// Feed a chunk; `input` is the data's bytes with this chunk (what the builder's budget is
    /// bounded by), `gzip` whether they were decompressed (for messages).
    pub(super) fn push(&mut self, chunk: &[u8], input: u64, gzip: bool) -> Result<(), LoadError> {
        match self {
            Decoder::Pickle(u) => {
                u.builder_mut().set_input_bytes(input);
                u.push(chunk).map_err(|e| LoadError::from_pickle(&e, gzip))
            }
            Decoder::Json(r) => {
                r.builder_mut().set_input_bytes(input);
                r.push(chunk).map_err(|e| LoadError::from_json(&e, gzip))
            }
        }
    }

    /// Size the big tables for the rest of the file (see [`SnapshotBuilder::grow_for`]).
    pub(super) fn grow(&mut self, done: u64, total: u64) {
        if total == 0 {
            return;
        }
        match self {
            Decoder::Pickle(u) => {
                u.grow_memo_for(done, total);
                u.builder_mut().grow_for(done, total);
            }
            Decoder::Json(r) => r.builder_mut().grow_for(done, total),
        }
    }

    /// End of the data (`total` bytes of it): the snapshot, or why there is none.
    pub(super) fn finish(self, gzip: bool, total: u64) -> Result<Snapshot, LoadError> {
        match self {
            Decoder::Pickle(u) if !u.is_done() => truncated_pickle(*u, gzip, total),
            Decoder::Pickle(u) => {
                let protocol = u.protocol();
                let (root, atoms, builder) =
                    u.finish().map_err(|e| LoadError::from_pickle(&e, gzip))?;
                builder
                    .finish(root, atoms, protocol)
                    .map_err(LoadError::from_build)
            }
            Decoder::Json(r) if !r.is_done() => truncated_json(*r, gzip, total),
            Decoder::Json(r) => {
                let (root, atoms, builder) =
                    r.finish().map_err(|e| LoadError::from_json(&e, gzip))?;
                builder
                    .finish(root, atoms, 0)
                    .map_err(LoadError::from_build_json)
            }
        }
    }
}

/// " (offset in the decompressed data)" for gzip input.
fn decompressed(gzip: bool) -> &'static str {
    if gzip {
        " (offset in the decompressed data)"
    } else {
        ""
    }
}

/// The pickle ended before STOP: what was read before the cut, with a warning, or the
/// truncation error saying how far it got.
fn truncated_pickle(
    mut u: Unpickler<SnapshotBuilder>,
    gzip: bool,
    total: u64,
) -> Result<Snapshot, LoadError> {
    let offset = u.offset();
    let protocol = u.protocol();
    let atoms = u.atoms().clone();
    let builder = std::mem::replace(u.builder_mut(), SnapshotBuilder::new().0);
    let cut = match u.finish() {
        Err(e) => e,
        Ok(_) => PickleError {
            offset,
            kind: ErrorKind::Truncated { inside: None },
        },
    };
    match builder.recover(atoms, protocol) {
        Ok((mut snap, rec)) => {
            snap.warnings
                .insert(0, truncation_warning(&rec, offset, total, gzip));
            Ok(snap)
        }
        Err(why) => Err(LoadError {
            kind: LoadErrorKind::Truncated,
            offset: Some(cut.offset),
            message: format!(
                "{}; {why}, so there is nothing to show{}. Was the dump interrupted or the copy incomplete?",
                cut.kind,
                decompressed(gzip)
            ),
        }),
    }
}

/// The JSON text ended before its top-level value: what was read before the cut (every whole
/// segment and trace entry; see [`JsonReader::recover`]), with a warning, or the truncation
/// error saying how far it got.
fn truncated_json(
    r: JsonReader<SnapshotBuilder>,
    gzip: bool,
    total: u64,
) -> Result<Snapshot, LoadError> {
    let offset = r.offset();
    let cut = r.truncated();
    let nothing = |why: &str| {
        LoadError {
        kind: LoadErrorKind::Truncated,
        offset: Some(cut.offset),
        message: format!(
            "{}; {why}, so there is nothing to show{}. Was the dump interrupted or the copy incomplete?",
            cut.message,
            decompressed(gzip)
        ),
    }
    };
    let (root, atoms, builder, place) = match r.recover() {
        Ok(x) => x,
        Err(e) if e.kind == JsonErrorKind::Truncated => {
            return Err(nothing("nothing was read before the cut"))
        }
        Err(e) => return Err(LoadError::from_json(&e, gzip)),
    };
    let mut snap = match builder.finish(root, atoms, 0) {
        Ok(s) => s,
        Err(BuildError::Unexpected(_)) => {
            return Err(nothing(
                "the top level read before the cut is not a memory snapshot",
            ))
        }
        Err(e) => return Err(LoadError::from_build_json(e)),
    };
    let events: usize = snap.traces.iter().map(DeviceTrace::len).sum();
    if snap.segments.is_empty() && events == 0 {
        return Err(nothing(
            "no whole segment or trace event was read before the cut",
        ));
    }
    let w = json_truncation_warning(&place, snap.segments.len(), events, offset, total, gzip);
    snap.warnings.insert(0, w);
    Ok(snap)
}

/// "1 segment", "3 segments".
fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The warning of a snapshot read from a pickle cut before STOP (FORMAT.md §2: segments come
/// first, then `device_traces`).
fn truncation_warning(rec: &Recovered, offset: u64, total: u64, gzip: bool) -> String {
    let data = if gzip {
        "decompressed pickle"
    } else {
        "pickle"
    };
    let segments = plural(rec.segments, "segment", "segments");
    let events = plural(rec.events, "trace event", "trace events");
    let what = if rec.only_stop_missing {
        format!("everything but the final STOP opcode was read: {segments} and {events}")
    } else if !rec.segments_complete {
        format!(
            "showing the {segments} read before the cut (the segment list is incomplete and no trace was read)"
        )
    } else if rec.traces_complete {
        format!("showing all {segments} and {events}; what followed `device_traces` is missing")
    } else if let Some(d) = rec.cut_device {
        format!(
            "showing the {segments} and the {events} read before the cut (device {d}'s trace stops there; \
             later events, devices and keys are missing, and the segments are the state at the end of the dump)"
        )
    } else {
        format!("showing the {segments} read before the cut (no trace was read)")
    };
    format!(
        "{TRUNCATED_WARNING} the {data} ends after {offset} of {total} bytes without its STOP opcode \
         (an interrupted dump or an incomplete copy); {what}"
    )
}

/// The warning of a snapshot read from a JSON text cut before its end: where the cut is, from
/// the top-level key being read.
fn json_truncation_warning(
    cut: &JsonCut,
    segments: usize,
    events: usize,
    offset: u64,
    total: u64,
    gzip: bool,
) -> String {
    let data = if gzip {
        "decompressed JSON text"
    } else {
        "JSON text"
    };
    let segments = plural(segments, "segment", "segments");
    let events = plural(events, "trace event", "trace events");
    let what = match (cut.bare, cut.key.as_deref(), cut.item) {
        (true, _, _) | (false, Some("segments"), _) => format!(
            "showing the {segments} read before the cut (the segment list is incomplete) and {events}"
        ),
        (false, Some("device_traces"), Some(d)) => format!(
            "showing the {segments} and the {events} read before the cut (device {d}'s trace stops there; \
             later events, devices and keys are missing, and the segments are the state at the end of the dump)"
        ),
        (false, Some("device_traces"), None) => format!(
            "showing the {segments} and the {events} read before the cut (later devices and keys are missing)"
        ),
        (false, Some(key), _) => format!(
            "showing the {segments} and {events}; the top-level key {} was cut and is missing, with what followed it",
            crate::warnings::quoted(key)
        ),
        (false, None, _) => format!(
            "showing the {segments} and {events} read before the cut; the top-level keys after them are missing"
        ),
    };
    format!(
        "{TRUNCATED_WARNING} the {data} ends after {offset} of {total} bytes, before its closing brackets \
         (an interrupted dump or an incomplete copy); {what}"
    )
}
