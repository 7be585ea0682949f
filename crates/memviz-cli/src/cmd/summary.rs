//! `memviz summary FILE [--json]`: per-device counts, bytes, peak and warnings
//! ([`memviz_analysis::summary`]). The JSON is written device by device as it is computed.

use crate::out::{stdout, Done};
use crate::{load, USAGE};
use memviz_analysis::summary;
use std::io::Write;

/// Runs `memviz summary` with the arguments after the command name.
pub fn run(args: &[String]) -> Done {
    let json = args.iter().any(|a| a == "--json");
    let files: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    if let Some(bad) = args.iter().find(|a| a.starts_with("--") && *a != "--json") {
        return Err(format!("unknown option {bad}\n{USAGE}").into());
    }
    let [file] = files.as_slice() else {
        return Err(format!("summary takes exactly one FILE\n{USAGE}").into());
    };
    let snap = load(file)?;
    let mut out = stdout();
    if json {
        summary::write_json(&snap, &mut out)?;
        writeln!(out)?;
    } else {
        writeln!(out, "{file}: pickle protocol {}", snap.protocol)?;
        summary::summarize(&snap).write_table(&mut out)?;
    }
    out.finish()
}
