//! The end of the text: the top-level value, or what a cut text holds.

use super::reader::{err, Expect, JsonReader};
use super::{JsonError, JsonErrorKind};
use memviz_pickle::{Atoms, Builder, Value};

/// Where a text that ends before its top-level value does was cut (see
/// [`JsonReader::recover`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JsonCut {
    /// The top level is an array (a bare list of segments).
    pub bare: bool,
    /// The top-level key whose value was being read, if any.
    pub key: Option<String>,
    /// When that value is an array: the index of its item being read (a device's list in
    /// `device_traces`).
    pub item: Option<u64>,
}

impl<B: Builder> JsonReader<B> {
    /// End of input: the top-level value, the atoms and the builder, or why the text is not
    /// whole.
    pub fn finish(self) -> Result<(Value, Atoms, B), JsonError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        match self.root {
            Some(root) => Ok((root, self.atoms, self.builder)),
            None => Err(self.truncated()),
        }
    }

    /// The error of a text that ends before its top-level value does.
    pub fn truncated(&self) -> JsonError {
        let inside = match self.carry.first() {
            Some(b'"') => " in the middle of a string",
            Some(b'-' | b'0'..=b'9') => " in the middle of a number",
            Some(_) => " in the middle of a literal",
            None => "",
        };
        let message = match self.stack.len() {
            0 if self.expect == Expect::Start => {
                "the file ends before the JSON text's first '{' or '[': expected more data (the file is truncated)"
                    .to_string()
            }
            n => format!(
                "the file ends{inside} before the end of the JSON text ({n} bracket{} still open): \
                 expected more data (the file is truncated)",
                if n == 1 { "" } else { "s" }
            ),
        };
        err(self.offset, JsonErrorKind::Truncated, message)
    }

    /// Where the text was cut (see [`JsonCut`]).
    fn cut(&self) -> JsonCut {
        let Some(root) = self.stack.first() else {
            return JsonCut::default();
        };
        if !root.object {
            return JsonCut {
                bare: true,
                ..JsonCut::default()
            };
        }
        let end = self.stack.get(1).map_or(self.vals.len(), |o| o.start);
        let own = self.vals.get(root.start..end).unwrap_or(&[]);
        let key = match own.last() {
            Some(Value::Str(k)) if own.len() % 2 == 1 => Some(self.atoms.str(*k).to_string()),
            _ => None,
        };
        let item = match (self.stack.get(1), self.stack.len()) {
            (Some(list), 3..) if !list.object => Some(list.items),
            _ => None,
        };
        JsonCut {
            bare: false,
            key,
            item,
        }
    }

    /// End of a text cut before its top-level value ends: the top level as if the text ended
    /// there, and where it was cut. Every open array is closed with its whole items; the
    /// outermost open object below the top level (a segment, a trace entry, the settings: a
    /// record cut in the middle) is dropped with all it holds, and so is a top-level key whose
    /// value was cut. The top level is Ok as is when the text was whole.
    pub fn recover(mut self) -> Result<(Value, Atoms, B, JsonCut), JsonError> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if let Some(root) = self.root {
            return Ok((root, self.atoms, self.builder, JsonCut::default()));
        }
        if self.stack.is_empty() {
            return Err(self.truncated());
        }
        let cut = self.cut();
        self.carry.clear();
        self.resume = None;
        let first_object = self
            .stack
            .iter()
            .skip(1)
            .position(|o| o.object)
            .map(|i| i + 1);
        if let Some(i) = first_object {
            let start = self.stack.get(i).map_or(self.vals.len(), |o| o.start);
            self.stack.truncate(i);
            self.vals.truncate(start);
        }
        if let Some(top) = self.stack.last() {
            if top.object && (self.vals.len() - top.start) % 2 == 1 {
                // A key whose value was cut.
                self.vals.pop();
            }
        }
        let at = 0;
        while !self.stack.is_empty() {
            self.close(at)?;
        }
        match self.root {
            Some(root) => Ok((root, self.atoms, self.builder, cut)),
            None => Err(self.truncated()),
        }
    }
}
