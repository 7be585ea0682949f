//! The messages of an archive that holds no snapshot entry or ends before it, and of errors
//! placed in the snapshot entry.

use super::header::zip_error;
use super::{Current, State, ZipStream};
use crate::load::{LoadError, LoadErrorKind};
use LoadErrorKind::{Malformed, NotPickle, Truncated};

impl ZipStream {
    /// The error of an archive whose entries ended without a data.pkl.
    pub(super) fn no_snapshot(&self) -> LoadError {
        LoadError::new(
            NotPickle,
            format!(
                "this file is a zip archive holding {}, none of them a data.pkl: not a \
                 torch.save'd snapshot; open the file written by \
                 torch.cuda.memory._dump_snapshot() or a torch.save of \
                 torch.cuda.memory._snapshot()",
                self.entry_count()
            ),
        )
    }

    /// "N entries (a, b, …)": the count and the first names, "…" when there are more.
    fn entry_count(&self) -> String {
        let n = self.entries;
        let mut list = self.names.join(", ");
        if n > self.names.len() as u64 {
            list.push_str(", …");
        }
        let entries = if n == 1 { "entry" } else { "entries" };
        format!("{n} {entries} ({list})")
    }

    /// The error of an archive that ends before its snapshot entry.
    pub(super) fn truncated(&self) -> LoadError {
        let name = |c: &Current| c.local.name.clone();
        let inside = match (&self.state, &self.cur) {
            (State::Header(b), _) if !b.is_empty() => {
                format!("inside the local header of entry {}", self.entries + 1)
            }
            (State::Header(_), Some(c)) => format!("after entry '{}'", name(c)),
            (State::Data { left }, Some(c)) => format!(
                "inside the data of entry '{}' ({} of its bytes missing)",
                name(c),
                left
            ),
            (State::Descriptor(_), Some(c)) => {
                format!("inside the data descriptor after entry '{}'", name(c))
            }
            (_, Some(c)) => format!("inside the data of entry '{}'", name(c)),
            (_, None) => "inside its first local header".into(),
        };
        let entries = if self.entries == 0 {
            String::new()
        } else {
            format!(" among its {}", self.entry_count())
        };
        zip_error(
            Truncated,
            self.pos,
            format!(
                "the zip archive ends after {} bytes, {inside}, with no data.pkl{entries} and \
                 before its central directory: was the copy incomplete?",
                self.pos
            ),
        )
    }
}

/// The snapshot entry's crc-32 against the archive's.
pub(super) fn check_crc(c: &Current, want: u32, at: u64) -> Result<(), LoadError> {
    let got = c.crc.sum();
    if got == want {
        return Ok(());
    }
    Err(c.local.error(
        Malformed,
        at,
        &format!(
            "does not match its crc-32 (the data's is {got:08x}, the archive says {want:08x}): \
             the zip archive is damaged; copy or save it again"
        ),
    ))
}

pub(super) fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// An error of the loader reading the snapshot entry, placed in the archive: an offset is one
/// in the entry's data (said after the message), else the entry is named before it.
pub fn in_entry(mut e: LoadError, entry: &str) -> LoadError {
    if e.offset.is_some() {
        e.message
            .push_str(&format!(" (offset in {entry} of the zip archive)"));
    } else {
        e.message = format!("in the zip archive's {entry}: {}", e.message);
    }
    e
}
