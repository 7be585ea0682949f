//! `memviz leaks FILE [--device D] [--user-code P] [--json]`: leak suspects of one device's
//! trace ([`memviz_analysis::leaks`]), each named by its site (docs/sites.md). The default
//! device is the viewer's: the longest trace (first on ties), else the first device with
//! segments, else 0. `--json`: the report, each suspect with its `site` as `memviz oom --json`
//! and `memviz diff --json` write one (`file`, `line`, `name`, `kind`, `label`, `detail`:
//! `{file, line, name, label}` or `null`; [`super::lines::site_json`]).

use crate::cli::DeviceArgs;
use crate::load;
use crate::out::{stdout, Done};
use memviz_analysis::layout::{Layout, LayoutOptions, PointMode};
use memviz_analysis::leaks::{leaks_with, LeakReport};
use memviz_analysis::site::{SiteCache, UserCode};
use memviz_analysis::timeline;
use memviz_snapshot::Snapshot;
use std::io::Write;

/// Suspects shown by the table, and stack lines per suspect.
const TOP: usize = 30;
const FRAMES: usize = 5;

/// The report for `device` of `snap`: the timeline, its layout (compact: no polylines are
/// needed) and the analysis.
pub fn report(snap: &Snapshot, device: i64, user: UserCode) -> LeakReport {
    let t = timeline::build(snap, device);
    let layout = Layout::build(
        &t,
        LayoutOptions {
            mode: PointMode::Compact,
            ..LayoutOptions::default()
        },
    );
    leaks_with(snap, device, &t, &layout, &mut SiteCache::new(snap, user))
}

/// Runs `memviz leaks`.
pub fn run(a: &DeviceArgs) -> Done {
    let (file, json, device) = (a.file.as_str(), a.json, a.device);
    let user = super::user_code(a.user_code.as_deref())?;
    let snap = load(file)?;
    let device = device.unwrap_or_else(|| snap.default_device());
    let r = report(&snap, device, user);
    let mut out = stdout();
    if json {
        let mut v = serde_json::to_value(&r).map_err(|e| format!("cannot write JSON: {e}"))?;
        if let Some(o) = v.as_object_mut() {
            o.insert("device".into(), device.into());
        }
        // The site is not in the suspect's own serialisation (the viewer's answer flattens the
        // suspect and does not carry it): added here, in the one shape every command uses.
        let list = v
            .get_mut("suspects")
            .and_then(serde_json::Value::as_array_mut);
        for (x, s) in list.into_iter().flatten().zip(&r.suspects) {
            if let Some(o) = x.as_object_mut() {
                o.insert("site".into(), super::lines::site_json(&s.site));
            }
        }
        writeln!(out, "{v}")?;
        return out.finish();
    }
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
