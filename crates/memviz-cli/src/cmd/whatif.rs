//! `memviz whatif FILE [--device D] [--capacity SIZE] [--alloc-conf CONF] [--as-recorded]
//! [--sweep] [--user-code P] [--json]`: each device's trace replayed through memviz-alloc's
//! model of PyTorch's caching allocator (docs/whatif.md) under other settings and a capacity:
//! peak reserved and allocated, the fragmentation at the reserved peak, the cudaMalloc /
//! cudaFree calls, the first OOM (its site named by memviz's frame classifier, as `memviz oom`
//! and `memviz lines` name it, `--user-code` included) and the smallest capacity the trace fits
//! on. `--alloc-conf` keys apply over the recorded settings (the file's `allocator_settings`,
//! else PyTorch's defaults); an unknown key or a bad value is refused. `--as-recorded` adds the
//! validation (the model's segment events against the trace's own). `--sweep`: the standard
//! alternatives ([`memviz_alloc::ALTERNATIVES`]), one row each, the best (smallest capacity)
//! marked.
//!
//! `--json`: a list, one object per device: [`memviz_alloc::Outcome`]'s fields (`device`,
//! `settings`, `capacity`, `segment_allocs`, `segment_frees`, `peak_reserved`,
//! `peak_allocated`, `fragmentation_at_peak`, `cuda_mallocs`, `first_oom`, `min_capacity`, …),
//! `recorded_settings` (`null`: the file records none) and `validation` (`null` unless
//! `--as-recorded`). `--sweep --json`: a list of rows, each such an object plus `name` and
//! `best`. Without a trace there is nothing to replay: a sentence (`[]` in JSON), exit 0.

use crate::capacity::parse_capacity;
use crate::cli::WhatifArgs;
use crate::error::bad_argument;
use crate::load;
use crate::out::{stdout, Done, Fail, Out};
use memviz_alloc::{Cancelled, Options, Outcome, Prepared, Settings, Validation, ALTERNATIVES};
use memviz_analysis::format::{count, size_long, size_short};
use memviz_analysis::site::{Site, SiteCache};
use memviz_snapshot::Snapshot;
use serde::Serialize;
use std::io::Write;

/// One device's answer of `memviz whatif --json`.
#[derive(Clone, Debug, Serialize)]
pub struct WhatifAnswer {
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The canonical conf string of the recorded settings; `None`: the file records none
    /// (PyTorch's defaults were assumed).
    pub recorded_settings: Option<String>,
    /// With `--as-recorded`: the model's segment events against the trace's.
    pub validation: Option<Validation>,
    /// The first OOM's site (the text names it with the library line below it).
    #[serde(skip)]
    pub site: Option<Site>,
}

/// One row of `memviz whatif --sweep --json`: one device under one alternative.
#[derive(Clone, Debug, Serialize)]
pub struct SweepAnswerRow {
    /// `recorded`, or the conf keys changed from the recorded settings.
    pub name: String,
    /// The row with the smallest capacity of its device (ties: the smaller peak reserved,
    /// then the first).
    pub best: bool,
    #[serde(flatten)]
    pub whatif: WhatifAnswer,
}

/// `memviz whatif --json`'s answer.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum WhatifOutput {
    /// One answer per device.
    Devices(Vec<WhatifAnswer>),
    /// `--sweep`: one row per device and alternative.
    Sweep(Vec<SweepAnswerRow>),
}

/// The CLI never cancels a replay (the page's worker does).
fn go_on(_done: usize, _total: usize) -> bool {
    true
}

fn not_cancelled(_: Cancelled) -> Fail {
    Fail::Msg("the replay was cancelled".to_string())
}

/// `--alloc-conf`'s keys over `base`, or the refusal naming what is wrong (an unknown key, a
/// bad value, a setting the model does not follow).
fn with_conf(base: &Settings, conf: &str) -> Result<Settings, Fail> {
    let mut s = base.clone();
    let mut warnings = Vec::new();
    s.apply_conf(conf, &mut warnings);
    if warnings.is_empty() {
        return Ok(s);
    }
    let why: Vec<&str> = warnings
        .iter()
        .map(|w| w.strip_suffix("; ignored").unwrap_or(w))
        .collect();
    Err(bad_argument(format!(
        "--alloc-conf `{conf}`: {}",
        why.join("; ")
    )))
}

/// What the command was asked, checked before the file is read.
struct Asked {
    capacity: Option<u64>,
}

fn asked(a: &WhatifArgs) -> Result<Asked, Fail> {
    let capacity = match a.capacity.as_deref() {
        None => None,
        Some(t) => Some(parse_capacity(t).map_err(|e| bad_argument(format!("--capacity {e}")))?),
    };
    if let Some(conf) = a.alloc_conf.as_deref() {
        with_conf(&Settings::default(), conf)?;
    }
    Ok(Asked { capacity })
}

/// The devices to replay: `--device D`, or every device with a non-empty trace.
fn devices(a: &WhatifArgs, snap: &Snapshot) -> Result<Vec<i64>, Fail> {
    Ok(
        match crate::device::report_devices(&a.file, snap, a.device)? {
            Some(d) => vec![d],
            None => snap.devices(),
        }
        .into_iter()
        .filter(|&d| snap.trace(d).is_some_and(|t| !t.is_empty()))
        .collect(),
    )
}

/// The recorded settings and the sentences about them (warned once per file).
fn recorded(snap: &Snapshot) -> (Settings, Option<String>, Vec<String>) {
    let (s, warnings) = Settings::from_snapshot(snap);
    if snap.allocator_settings.is_none() {
        return (s, None, Vec::new());
    }
    let conf = s.to_string();
    (s, Some(conf), warnings)
}

/// The first OOM's site, by the file's classifier.
fn name_site(snap: &Snapshot, sites: &mut SiteCache, out: &mut Outcome) -> Option<Site> {
    let o = out.first_oom.as_mut()?;
    let site = sites.site(snap, o.stack).clone();
    o.site = Some(site.label.clone());
    Some(site)
}

/// The loaded file and what every device needs.
struct File {
    snap: std::sync::Arc<Snapshot>,
    devices: Vec<i64>,
    sites: SiteCache,
    recorded: Settings,
    recorded_conf: Option<String>,
}

fn open(a: &WhatifArgs) -> Result<(Asked, File), Fail> {
    let asked = asked(a)?;
    let user = super::user_code(a.user_code.as_deref())?;
    let snap = load(&a.file)?;
    let devices = devices(a, &snap)?;
    let sites = SiteCache::new(&snap, user);
    let (recorded, recorded_conf, warnings) = recorded(&snap);
    for w in warnings {
        crate::out::warn(&format!("memviz: warning: {}: {w}", a.file));
    }
    Ok((
        asked,
        File {
            snap,
            devices,
            sites,
            recorded,
            recorded_conf,
        },
    ))
}

/// The sentences of a device's start state (the settings' own were said once per file).
fn warn_device(file: &str, device: i64, prep: &Prepared<'_>, snap: &Snapshot) {
    let (_, said) = Settings::from_snapshot(snap);
    for w in prep.warnings.iter().filter(|w| !said.contains(w)) {
        crate::out::warn(&format!("memviz: warning: {file}, device {device}: {w}"));
    }
}

/// One replay per device (`--as-recorded`: with the validation).
fn replays(a: &WhatifArgs, asked: &Asked, f: &mut File) -> Result<Vec<WhatifAnswer>, Fail> {
    let settings = match a.alloc_conf.as_deref() {
        Some(conf) if !a.as_recorded => with_conf(&f.recorded, conf)?,
        _ => f.recorded.clone(),
    };
    let snap = &*f.snap;
    let mut answers = Vec::with_capacity(f.devices.len());
    for &d in &f.devices {
        let prep = Prepared::new(snap, d);
        warn_device(&a.file, d, &prep, snap);
        let opts = Options {
            capacity: asked.capacity,
            ..Options::default()
        };
        let mut outcome = prep
            .replay(&settings, &opts, &mut go_on)
            .map_err(not_cancelled)?;
        let site = name_site(snap, &mut f.sites, &mut outcome);
        outcome.min_capacity =
            memviz_alloc::min_capacity(&prep, &settings, &mut go_on).map_err(not_cancelled)?;
        let validation = if a.as_recorded {
            Some(memviz_alloc::validate(snap, d, &mut go_on).map_err(not_cancelled)?)
        } else {
            None
        };
        answers.push(WhatifAnswer {
            outcome,
            recorded_settings: f.recorded_conf.clone(),
            validation,
            site,
        });
    }
    Ok(answers)
}

/// The sweep's rows, device by device, each device's best marked.
fn sweeps(a: &WhatifArgs, asked: &Asked, f: &mut File) -> Result<Vec<SweepAnswerRow>, Fail> {
    let snap = &*f.snap;
    let mut rows = Vec::new();
    for &d in &f.devices {
        let prep = Prepared::new(snap, d);
        warn_device(&a.file, d, &prep, snap);
        let swept =
            memviz_alloc::sweep(&prep, asked.capacity, &mut go_on).map_err(not_cancelled)?;
        let first = rows.len();
        for r in swept {
            let mut outcome = r.outcome;
            let site = name_site(snap, &mut f.sites, &mut outcome);
            rows.push(SweepAnswerRow {
                name: r.name,
                best: false,
                whatif: WhatifAnswer {
                    outcome,
                    recorded_settings: f.recorded_conf.clone(),
                    validation: None,
                    site,
                },
            });
        }
        let best = rows
            .get(first..)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let o = &r.whatif.outcome;
                o.min_capacity.map(|m| ((m, o.peak_reserved, i), i))
            })
            .min()
            .map(|(_, i)| first + i);
        if let Some(r) = best.and_then(|i| rows.get_mut(i)) {
            r.best = true;
        }
    }
    Ok(rows)
}

/// `memviz whatif --json`'s answer.
pub fn answer(a: &WhatifArgs) -> Result<WhatifOutput, Fail> {
    let (asked, mut f) = open(a)?;
    Ok(if a.sweep {
        WhatifOutput::Sweep(sweeps(a, &asked, &mut f)?)
    } else {
        WhatifOutput::Devices(replays(a, &asked, &mut f)?)
    })
}

/// `conf`, or what an empty conf means.
fn conf_text(conf: &str) -> String {
    if conf.is_empty() {
        "PyTorch's defaults".to_string()
    } else {
        crate::cmd::lines::printable(conf)
    }
}

/// What the recorded settings were.
fn recorded_text(recorded: Option<&str>) -> String {
    match recorded {
        None => "none in the file: PyTorch's defaults assumed".to_string(),
        Some(c) => conf_text(c),
    }
}

fn capacity_text(o: &Outcome) -> String {
    match (o.capacity, o.recorded_capacity) {
        (Some(c), _) => size_long(c),
        (None, Some(l)) => format!(
            "as recorded: {} (the device's limit where the trace shows it was hit)",
            size_long(l)
        ),
        (None, None) => {
            "as recorded (the trace never shows the device full: unconstrained)".to_string()
        }
    }
}

/// The text of one device's answer.
fn write_answer(out: &mut Out, file: &str, w: &WhatifAnswer) -> Done {
    let o = &w.outcome;
    let file = crate::cmd::lines::printable(file);
    writeln!(out, "{file}, device {}", o.device)?;
    let recorded = recorded_text(w.recorded_settings.as_deref());
    let same = w.recorded_settings.as_deref().unwrap_or("") == o.settings;
    let note = match (same, w.recorded_settings.is_some()) {
        (true, true) => " (as recorded)".to_string(),
        (true, false) => {
            " (as recorded: the file records none, PyTorch's defaults assumed)".to_string()
        }
        (false, _) => format!(" (recorded: {recorded})"),
    };
    writeln!(
        out,
        "  settings            {}{note}",
        conf_text(&o.settings)
    )?;
    writeln!(out, "  capacity            {}", capacity_text(o))?;
    writeln!(out, "  peak reserved       {}", size_long(o.peak_reserved))?;
    writeln!(out, "  peak allocated      {}", size_long(o.peak_allocated))?;
    let fr = &o.fragmentation_at_peak;
    writeln!(
        out,
        "  at the peak         {} reserved but not allocated, largest free block {} (trace event {})",
        size_short(fr.free),
        size_short(fr.largest_free_block),
        fr.event
    )?;
    writeln!(
        out,
        "  cudaMalloc/cudaFree {} / {}{}",
        count(o.cuda_mallocs),
        count(o.cuda_frees),
        if o.empty_cache_calls > 0 {
            format!(
                " ({} empty_cache calls replayed)",
                count(o.empty_cache_calls)
            )
        } else {
            String::new()
        }
    )?;
    match &o.first_oom {
        None => writeln!(out, "  first OOM           none")?,
        Some(oom) => {
            writeln!(
                out,
                "  first OOM           trace event {} (merged event {}): {} requested ({} rounded){}",
                oom.event,
                oom.merged_event,
                size_long(oom.requested),
                size_short(oom.rounded),
                if oom.recorded {
                    ", an oom the recording has too"
                } else {
                    ""
                }
            )?;
            let site = w
                .site
                .as_ref()
                .map(super::site_text)
                .unwrap_or_else(|| "<unknown>".to_string());
            writeln!(out, "    site              {site}")?;
            writeln!(
                out,
                "    then              {} reserved, {} allocated, {} free in reserved segments (largest block {}), {} free on the device",
                size_short(oom.free.reserved),
                size_short(oom.free.allocated),
                size_short(oom.free.cached_free),
                size_short(oom.free.largest_free_block),
                size_short(oom.free.device_free)
            )?;
            if o.ooms > 1 {
                writeln!(out, "    {} requests refused in all", count(o.ooms))?;
            }
            if !o.completed {
                writeln!(
                    out,
                    "    the replay stops there: the program would have raised at trace event {}",
                    oom.event
                )?;
            }
        }
    }
    match o.min_capacity {
        Some(c) => writeln!(out, "  smallest capacity   {}", size_long(c))?,
        None => writeln!(
            out,
            "  smallest capacity   none: an OOM remains on any capacity"
        )?,
    }
    if let Some(v) = &w.validation {
        let c = |k: &memviz_alloc::Counts| {
            format!(
                "{} segment_alloc, {} segment_free, {} segment_map, {} segment_unmap, peak reserved {}",
                k.segment_alloc,
                k.segment_free,
                k.segment_map,
                k.segment_unmap,
                size_short(k.peak_reserved)
            )
        };
        writeln!(out, "  recorded            {}", c(&v.recorded))?;
        writeln!(out, "  model               {}", c(&v.model))?;
        let verdict = if v.matches {
            "the model matches the recording (the same segment events in order, the same peak)"
                .to_string()
        } else if v.matches_per_event {
            "the same segment events at the same trace events and the same peak; only the order inside one release differs".to_string()
        } else {
            match &v.first_difference {
                Some(d) => {
                    let e = |x: &Option<memviz_alloc::SegEvent>| match x {
                        Some(s) => format!(
                            "{} of {} at event {}",
                            seg_kind(s.kind),
                            size_short(s.size),
                            s.event
                        ),
                        None => "nothing".to_string(),
                    };
                    format!(
                        "differs at segment event {}: recorded {}, model {}",
                        d.index,
                        e(&d.recorded),
                        e(&d.model)
                    )
                }
                None => "the same segment events, but another peak reserved".to_string(),
            }
        };
        writeln!(out, "  validation          {verdict}")?;
    }
    Ok(())
}

/// A segment event's name in the trace.
fn seg_kind(k: memviz_alloc::SegKind) -> &'static str {
    use memviz_alloc::SegKind;
    match k {
        SegKind::Alloc => "segment_alloc",
        SegKind::Free => "segment_free",
        SegKind::Map => "segment_map",
        SegKind::Unmap => "segment_unmap",
    }
}

fn cell_oom(w: &WhatifAnswer) -> String {
    w.outcome
        .first_oom
        .as_ref()
        .map_or_else(|| "-".to_string(), |o| format!("event {}", o.event))
}

/// The sweep's table, one per device.
fn write_sweep(out: &mut Out, file: &str, rows: &[SweepAnswerRow]) -> Done {
    let file = crate::cmd::lines::printable(file);
    let width = ALTERNATIVES
        .iter()
        .map(|(n, _)| n.len())
        .chain(rows.iter().map(|r| r.name.chars().count()))
        .max()
        .unwrap_or(8);
    let mut device = None;
    for r in rows {
        let o = &r.whatif.outcome;
        if device != Some(o.device) {
            if device.is_some() {
                writeln!(out)?;
            }
            device = Some(o.device);
            writeln!(
                out,
                "{file}, device {}: capacity {}; recorded settings: {}",
                o.device,
                capacity_text(o),
                recorded_text(r.whatif.recorded_settings.as_deref())
            )?;
            writeln!(
                out,
                "{:<width$}  {:>13}  {:>13}  {:>13}  {:>10}  {:>12}  {:>17}",
                "setting",
                "peak reserved",
                "free at peak",
                "largest free",
                "cudaMalloc",
                "first OOM",
                "smallest capacity"
            )?;
        }
        let fr = &o.fragmentation_at_peak;
        writeln!(
            out,
            "{:<width$}  {:>13}  {:>13}  {:>13}  {:>10}  {:>12}  {:>17}{}",
            crate::cmd::lines::printable(&r.name),
            size_short(o.peak_reserved),
            size_short(fr.free),
            size_short(fr.largest_free_block),
            count(o.cuda_mallocs),
            cell_oom(&r.whatif),
            o.min_capacity
                .map_or_else(|| "none".to_string(), size_short),
            if r.best { "  best" } else { "" }
        )?;
    }
    Ok(())
}

/// What the text says when there is nothing to replay.
fn nothing(a: &WhatifArgs) -> String {
    let file = crate::cmd::lines::printable(&a.file);
    match a.device {
        Some(d) => format!("{file}, device {d}: no trace to replay (the snapshot was taken without torch.cuda.memory._record_memory_history())"),
        None => format!("{file}: no trace to replay (the snapshot was taken without torch.cuda.memory._record_memory_history())"),
    }
}

/// Runs `memviz whatif` with the arguments after the command name.
pub fn run(a: &WhatifArgs) -> Done {
    let answer = answer(a)?;
    let mut out = stdout();
    if a.json {
        serde_json::to_writer(&mut out, &answer)?;
        writeln!(out)?;
        return out.finish();
    }
    match &answer {
        WhatifOutput::Devices(v) if v.is_empty() => writeln!(out, "{}", nothing(a))?,
        WhatifOutput::Sweep(v) if v.is_empty() => writeln!(out, "{}", nothing(a))?,
        WhatifOutput::Devices(v) => {
            for (i, w) in v.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                write_answer(&mut out, &a.file, w)?;
            }
        }
        WhatifOutput::Sweep(v) => write_sweep(&mut out, &a.file, v)?,
    }
    out.finish()
}
