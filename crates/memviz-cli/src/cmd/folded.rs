//! `memviz folded FILE [--device D] [--at peak|EVENT] [--frames my-code|python|all] [--user-code P] [--lifetime] [--json]`:
//! live bytes by call stack at a moment of the Active Memory Timeline (default: the peak) as
//! folded stacks (`frame;frame;frame bytes`, root first: the input of flamegraph.pl, inferno,
//! speedscope), or with `--lifetime` bytes × timesteps over the whole trace. EVENT is an index
//! into the device's trace as stored in the file (free pairs not merged; `memviz state` counts
//! merged events). The default device is the one with the longest trace, as the viewer picks.
//! `--range FROM:TO` (timesteps, half-open) or `--phase NAME` (the first `external_annotations`
//! phase of that name, e.g. `ProfilerStep#3`) give bytes × timesteps within that time range
//! (they imply `--lifetime`). `--json` prints `{"device","at_step","total_bytes","stacks":[{"frames":[…],"bytes":N}]}`
//! (`at_step` is null with `--lifetime`; frames unescaped, root first). `--svg OUT` draws the
//! folded lines as a flamegraph SVG instead (inferno). `--frames` (docs/sites.md's classifier,
//! `memviz_analysis::flame::FrameMode`): `my-code` keeps your frames and collapses each run of
//! library calls into one `[package] path:line:name` node, `python` drops C++ and interpreter
//! frames, `all` keeps every frame (`--all-frames`); the default is my-code when the file has
//! frames of your code (`--user-code` adds some), else python. Every mode has the same total.

use crate::cli::FoldedArgs;
use crate::error::bad_argument;
use crate::load;
use crate::out::{stdout, Done, Fail};
use memviz_analysis::flame::{self, At, FlameOptions, FrameMode};
use memviz_analysis::steps::Steps;
use memviz_analysis::timeline;
use serde::Serialize;
use std::io::Write;

const FOLDED_USAGE: &str =
    "usage: memviz folded FILE [--device D] [--at peak|EVENT] [--frames my-code|python|all] [--user-code P] [--lifetime | --range FROM:TO | --phase NAME] [--json | --svg OUT]";

/// One line: the first line of `msg` and the command's usage.
fn one_line(msg: &str) -> String {
    let first = msg.lines().next().unwrap_or("");
    format!("{first}; {FOLDED_USAGE}")
}

/// One stack of `memviz folded --json`: its frames, root first, and its bytes.
#[derive(Clone, Debug, Serialize)]
pub struct FoldedStack {
    pub frames: Vec<String>,
    pub bytes: u64,
}

/// `memviz folded --json`'s answer (the CLI streams the same fields, run below).
#[derive(Clone, Debug, Serialize)]
pub struct FoldedAnswer {
    pub device: i64,
    /// The timestep of the moment; `None` over a time range.
    pub at_step: Option<u32>,
    pub total_bytes: u64,
    pub stacks: Vec<FoldedStack>,
    /// The trace event asked for (`--at EVENT`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_event: Option<u32>,
    pub lifetime: bool,
    /// The time range (`--range`, `--phase`), half-open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_range: Option<(u32, u32)>,
    /// `my_code`, `python` or `all`.
    pub frames: &'static str,
    pub all_frames: bool,
}

/// What `memviz folded` computes before its output: the file, device, options and moment,
/// with the timeline and its step model.
struct Query {
    snap: std::sync::Arc<memviz_snapshot::Snapshot>,
    device: i64,
    opts: FlameOptions,
    at: At,
    moment: Option<flame::Moment>,
    tl: timeline::Timeline,
    layout: Steps,
}

/// `memviz folded --json`'s answer.
pub fn answer(a: &FoldedArgs) -> Result<FoldedAnswer, Fail> {
    let q = query(a)?;
    let entries = flame::folded(&q.snap, q.device, &q.tl, &q.layout, q.at, &q.opts);
    Ok(FoldedAnswer {
        device: q.device,
        at_step: q.moment.map(|m| m.step),
        total_bytes: flame::total(&entries),
        stacks: entries
            .into_iter()
            .map(|(frames, bytes)| FoldedStack { frames, bytes })
            .collect(),
        at_event: match q.moment.map(|m| m.at) {
            Some(At::Event(k)) => Some(k),
            _ => None,
        },
        lifetime: q.opts.lifetime,
        step_range: q.opts.step_range,
        frames: q.opts.frames.as_str(),
        all_frames: q.opts.frames == FrameMode::All,
    })
}

/// Runs `memviz folded`.
pub fn run(a: &FoldedArgs) -> Done {
    let Query {
        snap,
        device,
        opts,
        at,
        moment,
        tl,
        layout,
    } = query(a)?;
    let values = flame::stack_values(&snap, device, &tl, &layout, at, &opts);
    // The timeline and layout are not needed to print: free them before the output is made.
    drop(layout);
    drop(tl);
    if let Some(path) = &a.svg {
        let mut folded = Vec::new();
        flame::write_folded_text(&mut folded, &snap, &values, opts.frames, &opts.user)?;
        let (title, unit) = if opts.lifetime {
            ("Live bytes x timesteps by stack", "byte-timesteps")
        } else {
            ("Live bytes by stack", "bytes")
        };
        return crate::svg::write_svg(&folded, path, title, unit);
    }
    let mut out = stdout();
    if a.json {
        // The fields of `FoldedAnswer`, in its order, the stacks written as they are printed.
        write!(out, "{{\"device\":{device},\"at_step\":")?;
        match moment {
            Some(m) => write!(out, "{}", m.step)?,
            None => out.write_all(b"null")?,
        }
        write!(
            out,
            ",\"total_bytes\":{},\"stacks\":[",
            flame::values_total(&values)
        )?;
        flame::write_folded_json(&mut out, &snap, &values, opts.frames, &opts.user)?;
        out.write_all(b"]")?;
        if let Some(At::Event(k)) = moment.map(|m| m.at) {
            write!(out, ",\"at_event\":{k}")?;
        }
        write!(out, ",\"lifetime\":{}", opts.lifetime)?;
        if let Some((a, b)) = opts.step_range {
            write!(out, ",\"step_range\":[{a},{b}]")?;
        }
        write!(out, ",\"frames\":\"{}\"", opts.frames.as_str())?;
        writeln!(out, ",\"all_frames\":{}}}", opts.frames == FrameMode::All)?;
    } else {
        flame::write_folded_text(&mut out, &snap, &values, opts.frames, &opts.user)?;
    }
    out.finish()
}

/// The arguments checked, the file read, the device, moment and range resolved.
fn query(a: &FoldedArgs) -> Result<Query, Fail> {
    let file = a.file.as_str();
    let range = match a.range.as_deref() {
        None => None,
        Some(r) => {
            let parsed = r
                .split_once(':')
                .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
                .filter(|(a, b)| a <= b);
            Some(parsed.ok_or_else(|| {
                bad_argument(one_line(&format!(
                    "--range takes FROM:TO timesteps with FROM <= TO, not {r:?}"
                )))
            })?)
        }
    };
    let phase = a.phase.as_deref();
    // None: the default, decided once the file is read.
    let frames = match (a.frames.as_deref(), a.all_frames) {
        (_, true) => Some(FrameMode::All),
        (None, false) => None,
        (Some(t), false) => Some(FrameMode::parse(t).ok_or_else(|| {
            bad_argument(one_line(&format!(
                "--frames takes my-code, python or all, not {t:?}"
            )))
        })?),
    };
    let user = super::user_code(a.user_code.as_deref())?;
    let mut opts = FlameOptions {
        frames: frames.unwrap_or_default(),
        user,
        lifetime: a.lifetime || range.is_some() || phase.is_some(),
        step_range: range,
    };
    let at = match a.at.as_deref() {
        None | Some("peak") => At::Peak,
        Some(s) => At::Event(s.parse::<u32>().map_err(|_| {
            bad_argument(one_line(&format!(
                "--at takes peak or an event index, not {s:?}"
            )))
        })?),
    };
    if opts.lifetime && a.at.is_some() {
        return Err(bad_argument(one_line(
            "--at excludes --lifetime, --range and --phase (a moment or a time range)",
        )));
    }
    let device = a.device;
    let snap = load(file)?;
    if frames.is_none() {
        opts.frames = FrameMode::default_for(&snap, &opts.user);
    }
    let device = crate::device::one_device(file, &snap, device)?;
    let tl = timeline::build(&snap, device);
    // The step model: the numbers of the layout without its polylines, which only drawing
    // needs (in exact mode they take up to 192 MiB).
    let layout = Steps::build(&tl);
    if let Some(name) = phase {
        let phases = memviz_analysis::annotations::phase_spans(&snap, device, &layout);
        let p = phases.iter().find(|p| p.name(&snap) == name).ok_or_else(|| {
            bad_argument(format!(
                "{file}: device {device}: no phase named {name:?} ({} phases in external_annotations)",
                phases.len()
            ))
        })?;
        opts.step_range = Some((p.start_step, p.end_step));
    }
    let events = snap.trace(device).map_or(0, |t| t.len());
    let moment = if opts.lifetime {
        None
    } else {
        Some(
            flame::resolve(&layout, events, at)
                .map_err(|e| bad_argument(format!("{file}: device {device}: {e}")))?,
        )
    };
    Ok(Query {
        snap,
        device,
        opts,
        at,
        moment,
        tl,
        layout,
    })
}
