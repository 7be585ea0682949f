//! `memviz summary FILE [--json]`: per-device counts, bytes, peak and warnings
//! ([`memviz_analysis::summary`]). The JSON is written device by device as it is computed.

use crate::cli::SummaryArgs;
use crate::load;
use crate::out::{stdout, Done};
use memviz_analysis::summary;
use std::io::Write;

/// Runs `memviz summary` with the arguments after the command name.
pub fn run(a: &SummaryArgs) -> Done {
    let (file, json) = (&a.file, a.json);
    let snap = load(file)?;
    let mut out = stdout();
    if json {
        summary::write_json(&snap, &mut out)?;
        writeln!(out)?;
    } else {
        // The container (a JSON text has no protocol) and the accelerator that wrote it, when
        // its frames or settings say (docs/formats.md).
        let container = match snap.protocol {
            0 => "JSON".to_string(),
            p => format!("pickle protocol {p}"),
        };
        let accel = memviz_snapshot::accelerator::detect(&snap);
        match accel {
            memviz_snapshot::accelerator::Accelerator::Unknown => {
                writeln!(out, "{file}: {container}")?
            }
            a => writeln!(out, "{file}: {container}, {}", a.label())?,
        }
        summary::summarize(&snap).write_table(&mut out)?;
    }
    out.finish()
}
