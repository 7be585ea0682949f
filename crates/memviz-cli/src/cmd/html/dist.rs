//! Where the built viewer's files come from: a dist/ directory on disk (`--dist DIR`,
//! `$MEMVIZ_DIST`, the repository's dist/) or the copy embedded in the binary at compile time
//! (build.rs: the repository's dist/ when it was built, else nothing; `rust-embed`).

use super::error::HtmlError;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// The viewer built into the binary (empty when dist/ did not exist at compile time). The
/// TypeScript declarations of js/generated/ are for the type check only, never loaded.
#[derive(rust_embed::Embed)]
#[folder = "$MEMVIZ_EMBED_DIST"]
#[exclude = "js/generated/*"]
struct Embedded;

/// A built viewer.
pub enum Dist {
    Dir(PathBuf),
    Embedded,
}

impl Dist {
    /// The embedded viewer, if this binary was built with one.
    pub fn embedded() -> Option<Dist> {
        Embedded::get("index.html").map(|_| Dist::Embedded)
    }

    /// A file of the viewer by its '/'-separated path relative to dist/.
    pub fn get(&self, rel: &str) -> Option<Cow<'static, [u8]>> {
        match self {
            Dist::Dir(d) => std::fs::read(d.join(rel)).ok().map(Cow::Owned),
            Dist::Embedded => Embedded::get(rel).map(|f| f.data),
        }
    }

    /// Like [`Dist::get`], with the reason when it cannot be read.
    pub(super) fn read(&self, rel: &str) -> Result<Cow<'static, [u8]>, HtmlError> {
        match self {
            Dist::Dir(d) => {
                let path = d.join(rel);
                std::fs::read(&path)
                    .map(Cow::Owned)
                    .map_err(|source| HtmlError::Read { path, source })
            }
            Dist::Embedded => Embedded::get(rel)
                .map(|f| f.data)
                .ok_or_else(|| HtmlError::Missing(self.join(rel))),
        }
    }

    /// A text file (UTF-8) of the viewer.
    pub(super) fn read_text(&self, rel: &str) -> Result<String, HtmlError> {
        let bytes = self.read(rel)?.into_owned();
        String::from_utf8(bytes).map_err(|e| HtmlError::Read {
            path: self.join(rel),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })
    }

    pub fn is_file(&self, rel: &str) -> bool {
        match self {
            Dist::Dir(d) => d.join(rel).is_file(),
            Dist::Embedded => Embedded::get(rel).is_some(),
        }
    }

    /// The names of the files directly in dist/ (not in its subdirectories).
    pub(super) fn root_files(&self) -> Result<Vec<String>, HtmlError> {
        match self {
            Dist::Dir(d) => {
                let rd = std::fs::read_dir(d).map_err(|source| HtmlError::List {
                    path: d.clone(),
                    source,
                })?;
                Ok(rd
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect())
            }
            Dist::Embedded => Ok(Embedded::iter()
                .filter(|n| !n.contains('/'))
                .map(Cow::into_owned)
                .collect()),
        }
    }

    /// A file's name for messages.
    pub fn join(&self, rel: &str) -> PathBuf {
        match self {
            Dist::Dir(d) => d.join(rel),
            Dist::Embedded => Path::new("<the viewer built into memviz>").join(rel),
        }
    }

    /// Where the viewer comes from, for messages.
    pub fn describe(&self) -> String {
        match self {
            Dist::Dir(d) => d.display().to_string(),
            Dist::Embedded => "the viewer built into memviz".to_string(),
        }
    }
}
