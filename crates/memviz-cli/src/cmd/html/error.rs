//! Why `memviz html` stops: each variant is one sentence for stderr (exit 2).

use super::markers::{MarkerError, ENTRY};
use super::{BUILD_HINT, NOT_BUILT_IN};
use crate::out::Fail;
use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub(super) enum HtmlError {
    // ----- finding dist/
    #[error("--dist {0}: no index.html there; {BUILD_HINT}")]
    DistArg(String),
    #[error("MEMVIZ_DIST={}: no index.html there; {BUILD_HINT}", .0.display())]
    DistEnv(PathBuf),
    #[error("no built viewer found ({NOT_BUILT_IN}; looked for index.html in {0}); {BUILD_HINT}")]
    NoDist(String),

    // ----- reading dist/
    #[error("{}: cannot read: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{}: cannot list: {source}", path.display())]
    List { path: PathBuf, source: io::Error },
    #[error("{}: missing; {BUILD_HINT}", .0.display())]
    Missing(PathBuf),
    #[error("dist/index.html: the {what} `{href}` is not a file beside index.html, which a single-file report cannot include")]
    NotBeside { what: &'static str, href: String },
    #[error("dist/index.html: the {what} `{href}` leaves dist/")]
    LeavesDist { what: &'static str, href: String },
    #[error("dist/index.html {0}: not a build of memviz's index.html (or of an older one); {BUILD_HINT}")]
    Markers(#[from] MarkerError),
    #[error("dist/index.html preloads several modules ({0}): cannot tell which is the wasm-bindgen glue")]
    SeveralGlues(String),
    #[error("dist/index.html has a script in its body: memviz html does not know how to embed it")]
    BodyScript,
    #[error("dist/index.html has not one <script type=\"module\" src=…> between `{}` and `{}`: not a memviz build", ENTRY[0], ENTRY[1])]
    NoEntry,
    #[error("dist/index.html has no <link rel=\"modulepreload\"> / <link rel=\"preload\"> for the wasm-bindgen glue and module, and dist/ has not exactly one X.js + X_bg.wasm; {BUILD_HINT}")]
    NoGlueAndWasm,
    #[error("dist/index.html names no .wasm and dist/{0} is missing; {BUILD_HINT}")]
    NoWasm(String),
    #[error("dist/index.html names no wasm-bindgen glue and dist/{0} is missing; {BUILD_HINT}")]
    NoGlue(String),
    #[error("dist/index.html's body has a <{0}> that loads a file: memviz html does not know how to embed it")]
    BodyLoads(&'static str),
    #[error("dist/{0} contains `</style`: cannot inline it")]
    CssEndsStyle(String),
    #[error("dist/{0} uses @import: memviz html cannot inline that")]
    CssImport(String),
    #[error("dist/{0} refers to a file with url(…): memviz html can only inline data: URLs")]
    CssUrl(String),

    // ----- the bundles
    #[error("dist/{key}: line {line} imports another module, which a report cannot embed: not a bundle (dist/ was built before the shell's bundling, or by hand); {BUILD_HINT}")]
    NotBundled { key: String, line: usize },

    // ----- writing the report
    #[error("cannot compress: out of memory")]
    CompressMemory,
    #[error("cannot compress: {0}")]
    Compress(io::Error),
    #[error("{out}: cannot write: {source}")]
    Write { out: String, source: io::Error },
}

impl From<HtmlError> for Fail {
    fn from(e: HtmlError) -> Self {
        Fail::Msg(e.to_string())
    }
}
