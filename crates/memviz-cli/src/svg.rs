//! `--svg OUT`: folded lines drawn as a flamegraph SVG by the `inferno` crate (no Perl, no
//! download). inferno escapes every frame name it writes into the SVG (text and title), so a
//! frame such as `<script>` stays text.

use crate::out::Fail;
use inferno::flamegraph::{self, Options};
use std::io::Write;

/// Writes the flamegraph of `folded` (lines `frame;frame;… count` or `… count_a count_b`, in
/// any order) to the file `path`, titled `title`, counting `count_name`.
pub fn write_svg(folded: &[u8], path: &str, title: &str, count_name: &str) -> Result<(), Fail> {
    let text = String::from_utf8_lossy(folded);
    let mut opts = Options::default();
    opts.title = title.to_string();
    opts.count_name = count_name.to_string();
    let mut svg: Vec<u8> = Vec::new();
    flamegraph::from_lines(&mut opts, text.lines(), &mut svg)
        .map_err(|e| format!("cannot draw the flamegraph: {e}"))?;
    let mut f = std::fs::File::create(path).map_err(|e| format!("{path}: cannot create: {e}"))?;
    f.write_all(&svg)
        .and_then(|()| f.flush())
        .map_err(|e| format!("{path}: cannot write: {e}"))?;
    Ok(())
}
