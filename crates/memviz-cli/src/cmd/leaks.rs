//! `memviz leaks FILE [--device D] [--user-code P] [--json]`: leak suspects of one device's
//! trace ([`memviz_analysis::leaks`]), each named by its site (docs/sites.md). The default
//! device is the viewer's: the longest trace (first on ties), else the first device with
//! segments, else 0. `--json`: the report, each suspect with its `site` as `memviz oom --json`
//! and `memviz diff --json` write one (`file`, `line`, `name`, `kind`, `label`, `detail`:
//! `{file, line, name, label}` or `null`: the [`Site`]'s own serialisation).

use crate::cli::DeviceArgs;
use crate::load;
use crate::out::{stdout, Done, Fail};
use memviz_analysis::leaks::{leaks_with, LeakReport, LeakSuspect};
use memviz_analysis::site::{Site, SiteCache, UserCode};
use memviz_analysis::steps::Steps;
use memviz_analysis::timeline;
use memviz_snapshot::Snapshot;
use serde::Serialize;
use std::io::Write;

/// Suspects shown by the table, and stack lines per suspect.
const TOP: usize = 30;
const FRAMES: usize = 5;

/// The report for `device` of `snap`: the timeline, its layout (compact: no polylines are
/// needed) and the analysis.
pub fn report(snap: &Snapshot, device: i64, user: UserCode) -> LeakReport {
    let t = timeline::build(snap, device);
    let layout = Steps::build(&t);
    leaks_with(snap, device, &t, &layout, &mut SiteCache::new(snap, user))
}

/// A suspect of `memviz leaks --json`: the suspect and its site. (The site is not in the
/// suspect's own serialisation: the viewer's answer flattens the suspect and does not carry
/// it.)
#[derive(Clone, Debug, Serialize)]
pub struct SuspectAnswer {
    #[serde(flatten)]
    pub suspect: LeakSuspect,
    pub site: Site,
}

/// `memviz leaks --json`'s answer.
#[derive(Clone, Debug, Serialize)]
pub struct LeaksAnswer {
    pub settled_step: u32,
    pub settled_rule: String,
    pub suspects: Vec<SuspectAnswer>,
    pub device: i64,
}

/// The device and its report.
fn device_report(a: &DeviceArgs) -> Result<(i64, LeakReport), Fail> {
    let user = super::user_code(a.user_code.as_deref())?;
    let snap = load(&a.file)?;
    let device = crate::device::one_device(&a.file, &snap, a.device)?;
    Ok((device, report(&snap, device, user)))
}

/// `memviz leaks --json`'s answer.
pub fn answer(a: &DeviceArgs) -> Result<LeaksAnswer, Fail> {
    let (device, r) = device_report(a)?;
    Ok(LeaksAnswer {
        settled_step: r.settled_step,
        settled_rule: r.settled_rule,
        suspects: r
            .suspects
            .into_iter()
            .map(|s| SuspectAnswer {
                site: s.site.clone(),
                suspect: s,
            })
            .collect(),
        device,
    })
}

/// Runs `memviz leaks`.
pub fn run(a: &DeviceArgs) -> Done {
    let file = a.file.as_str();
    let mut out = stdout();
    if a.json {
        serde_json::to_writer(&mut out, &answer(a)?)?;
        writeln!(out)?;
        return out.finish();
    }
    let (device, r) = device_report(a)?;
    writeln!(
        out,
        "{file}, device {device}: settled after timestep {} ({})",
        r.settled_step, r.settled_rule
    )?;
    if r.suspects.is_empty() {
        writeln!(out, "no leak suspects")?;
    }
    for s in r.suspects.iter().take(TOP) {
        writeln!(
            out,
            "[{}] {} (first alloc: event {})",
            s.kind, s.explanation, s.first_event
        )?;
        writeln!(out, "  site: {}", super::site_text(&s.site))?;
        // The Python frames when there are any (C++ allocator frames say little), else the
        // innermost lines.
        let shown = memviz_analysis::frames::shown_frames(&s.stack);
        if shown.is_empty() {
            writeln!(out, "    <no frames>")?;
        }
        for line in shown.iter().take(FRAMES) {
            writeln!(out, "    {line}")?;
        }
        if shown.len() > FRAMES {
            writeln!(out, "    … {} more", shown.len() - FRAMES)?;
        }
    }
    if r.suspects.len() > TOP {
        writeln!(
            out,
            "… {} more suspects (--json lists all)",
            r.suspects.len() - TOP
        )?;
    }
    out.finish()
}
