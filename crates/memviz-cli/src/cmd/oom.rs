//! `memviz oom FILE [--device D] [--user-code P] [--json]`: every `oom` event explained
//! ([`memviz_analysis::state::OomScan`]: one backward pass per device, whatever the number of
//! `oom` events), printed report by report as they are made, with the site of each of the
//! biggest live blocks (docs/sites.md; `--json`: `biggest_live_sites`, one object per
//! `biggest_live` entry: `address`, `size`, the site's `file`, `line`, `name`, `kind`, `label`
//! and `detail`).

use crate::cli::DeviceArgs;
use crate::load;
use crate::out::{stdout, Done};
use memviz_analysis::devices::{DeviceSegments, SegmentsOf};
use memviz_analysis::format::size_short;
use memviz_analysis::site::SiteCache;
use memviz_analysis::state::OomScan;
use std::io::Write;

/// Biggest live blocks named per report in the text output.
const TOP_SITES: usize = 5;

/// Runs `memviz oom` with the arguments after the command name.
pub fn run(a: &DeviceArgs) -> Done {
    let (file, json, wanted) = (a.file.as_str(), a.json, a.device);
    let user = super::user_code(a.user_code.as_deref())?;
    let snap = load(file)?;
    let mut sites = SiteCache::new(&snap, user);
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
            let named: Vec<_> = r
                .biggest_live
                .iter()
                .zip(&r.biggest_live_stacks)
                .map(|(&(addr, size), &stack)| (addr, size, sites.site(&snap, stack).clone()))
                .collect();
            if json {
                if printed > 0 {
                    out.write_all(b",")?;
                }
                let mut v = serde_json::to_value(&r)?;
                if let Some(o) = v.as_object_mut() {
                    o.insert("device".into(), d.into());
                    let list: Vec<serde_json::Value> = named
                        .iter()
                        .map(|(addr, size, site)| {
                            let mut x = super::lines::site_json(site);
                            if let Some(m) = x.as_object_mut() {
                                m.insert("address".into(), (*addr).into());
                                m.insert("size".into(), (*size).into());
                            }
                            x
                        })
                        .collect();
                    o.insert("biggest_live_sites".into(), list.into());
                }
                serde_json::to_writer(&mut out, &v)?;
            } else {
                writeln!(out, "device {d}, event {}: {}", r.event, r.verdict)?;
                for (_, size, site) in named.iter().take(TOP_SITES) {
                    writeln!(
                        out,
                        "    {:>9}  {}",
                        size_short(*size),
                        super::site_text(site)
                    )?;
                }
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
