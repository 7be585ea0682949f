//! `memviz oom FILE [--device D] [--json]`: every `oom` event explained
//! ([`memviz_analysis::state::OomScan`]: one backward pass per device, whatever the number of
//! `oom` events), printed report by report as they are made.

use crate::cli::DeviceArgs;
use crate::load;
use crate::out::{stdout, Done};
use memviz_analysis::devices::{DeviceSegments, SegmentsOf};
use memviz_analysis::state::OomScan;
use std::io::Write;

/// Runs `memviz oom` with the arguments after the command name.
pub fn run(a: &DeviceArgs) -> Done {
    let (file, json, wanted) = (a.file.as_str(), a.json, a.device);
    let snap = load(file)?;
    let devices = wanted.map_or_else(|| snap.devices(), |d| vec![d]);
    let index = DeviceSegments::new(&snap);
    let mut out = stdout();
    let mut printed = 0usize;
    if json {
        out.write_all(b"[")?;
    }
    for d in devices {
        let scan = OomScan::new_in(&snap, d, SegmentsOf::Indexed(index.of(d)))
            .map_err(|e| format!("{file}: {e}"))?;
        for r in scan {
            if json {
                if printed > 0 {
                    out.write_all(b",")?;
                }
                let mut v = serde_json::to_value(&r)?;
                if let Some(o) = v.as_object_mut() {
                    o.insert("device".into(), d.into());
                }
                serde_json::to_writer(&mut out, &v)?;
            } else {
                writeln!(out, "device {d}, event {}: {}", r.event, r.verdict)?;
            }
            printed += 1;
        }
    }
    if json {
        out.write_all(b"]\n")?;
    } else if printed == 0 {
        writeln!(out, "{file}: no oom events")?;
    }
    out.finish()
}
