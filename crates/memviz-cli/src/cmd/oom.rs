//! `memviz oom FILE [--device D] [--user-code P] [--json]`: every `oom` event explained
//! ([`memviz_analysis::state::OomScan`]: one backward pass per device, whatever the number of
//! `oom` events), printed report by report as they are made, with the site of each of the
//! biggest live blocks (docs/sites.md; `--json`: `biggest_live_sites`, one object per
//! `biggest_live` entry: `address`, `size`, the site's `file`, `line`, `name`, `kind`, `label`
//! and `detail`).

use crate::cli::DeviceArgs;
use crate::load;
use crate::out::{stdout, Done, Fail};
use memviz_analysis::devices::{DeviceSegments, SegmentsOf};
use memviz_analysis::format::size_short;
use memviz_analysis::site::{Site, SiteCache};
use memviz_analysis::state::{OomReport, OomScan};
use serde::Serialize;
use std::io::Write;

/// Biggest live blocks named per report in the text output.
const TOP_SITES: usize = 5;

/// One of the biggest live blocks of an oom report, named by its site.
#[derive(Clone, Debug, Serialize)]
pub struct LiveSite {
    #[serde(flatten)]
    pub site: Site,
    pub address: u64,
    pub size: u64,
}

/// One report of `memviz oom --json`: the report, its device and its biggest live blocks'
/// sites.
#[derive(Clone, Debug, Serialize)]
pub struct OomAnswer {
    #[serde(flatten)]
    pub report: OomReport,
    pub device: i64,
    pub biggest_live_sites: Vec<LiveSite>,
}

/// Every report of the devices `a` asks for, in order, each handed to `each` as it is made.
fn reports(a: &DeviceArgs, mut each: impl FnMut(OomAnswer) -> Done) -> Done {
    let file = a.file.as_str();
    let user = super::user_code(a.user_code.as_deref())?;
    let snap = load(file)?;
    let mut sites = SiteCache::new(&snap, user);
    let devices = crate::device::report_devices(file, &snap, a.device)?
        .map_or_else(|| snap.devices(), |d| vec![d]);
    let index = DeviceSegments::new(&snap);
    for d in devices {
        let scan = OomScan::new_in(&snap, d, SegmentsOf::Indexed(index.of(d)))
            .map_err(|e| crate::Error::new(crate::ErrorKind::TooBig, format!("{file}: {e}")))?;
        for r in scan {
            let biggest_live_sites = r
                .biggest_live
                .iter()
                .zip(&r.biggest_live_stacks)
                .map(|(&(address, size), &stack)| LiveSite {
                    site: sites.site(&snap, stack).clone(),
                    address,
                    size,
                })
                .collect();
            each(OomAnswer {
                report: r,
                device: d,
                biggest_live_sites,
            })?;
        }
    }
    Ok(())
}

/// `memviz oom --json`'s answer: every report.
pub fn answer(a: &DeviceArgs) -> Result<Vec<OomAnswer>, Fail> {
    let mut all = Vec::new();
    reports(a, |r| {
        all.push(r);
        Ok(())
    })?;
    Ok(all)
}

/// Runs `memviz oom` with the arguments after the command name.
pub fn run(a: &DeviceArgs) -> Done {
    let (file, json) = (a.file.as_str(), a.json);
    let mut out = stdout();
    let mut printed = 0usize;
    if json {
        out.write_all(b"[")?;
    }
    reports(a, |r| {
        if json {
            if printed > 0 {
                out.write_all(b",")?;
            }
            serde_json::to_writer(&mut out, &r)?;
        } else {
            writeln!(
                out,
                "device {}, event {}: {}",
                r.device, r.report.event, r.report.verdict
            )?;
            for b in r.biggest_live_sites.iter().take(TOP_SITES) {
                writeln!(
                    out,
                    "    {:>9}  {}",
                    size_short(b.size),
                    super::site_text(&b.site)
                )?;
            }
        }
        printed += 1;
        Ok(())
    })?;
    if json {
        out.write_all(b"]\n")?;
    } else if printed == 0 {
        writeln!(out, "{file}: no oom events")?;
    }
    out.finish()
}
