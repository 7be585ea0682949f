//! The "What if" tab's state (issue 31, docs/whatif.md): a resumable replay job of
//! memviz-alloc ([`memviz_alloc::Job`]: a run, or the sweep over the standard alternatives)
//! that each `whatif_step` request advances by one slice (preparing the start state, or one
//! replay), so the page's single-threaded worker reads a Cancel between two slices; the result
//! kept for its file and device, and the simulated reserved curve ([`curve::SimCurve`]) that
//! the Active Memory and Cached Segment timelines draw while it is shown.

pub(super) mod curve;

use std::rc::Rc;

use memviz_alloc::{best_row, Detached, Job, Prepared, Settings, SweepRow, MIB};
use memviz_analysis::format::{count, size_long, size_short};
use memviz_snapshot::{Snapshot, StackId};

use super::files::LoadedFile;
use super::selection::Selection;
use crate::answer::{
    ViewKind, WhatIfInfo, WhatIfKey, WhatIfOom, WhatIfProgress, WhatIfResult, WhatIfRow,
};
use curve::SimCurve;

/// A job under way.
struct Running {
    file: usize,
    device: i64,
    snap: Rc<Snapshot>,
    /// The start state, once prepared (the first slice).
    prep: Option<Detached>,
    /// Made once prepared (a sweep needs the recorded settings).
    job: Option<Job>,
    sweep: bool,
    settings: Settings,
    capacity: Option<u64>,
    warnings: Vec<String>,
    /// The progress reported last (never reported lower: the bisections' lengths are
    /// estimates until they start).
    fraction: f64,
}

/// A finished job's rows, for its file and device.
struct Done {
    file: usize,
    device: i64,
    sweep: bool,
    capacity: Option<u64>,
    rows: Vec<SweepRow>,
    best: Option<usize>,
    shown: Option<usize>,
    warnings: Vec<String>,
    curve: Option<Rc<SimCurve>>,
}

/// The tab's state in the app.
#[derive(Default)]
pub(super) struct WhatIf {
    running: Option<Running>,
    done: Option<Done>,
}

impl WhatIf {
    /// The curve the timeline `kind` of (file, device) draws, when a result is shown there.
    pub(super) fn curve_for(
        &self,
        file: usize,
        device: i64,
        kind: ViewKind,
    ) -> Option<Rc<SimCurve>> {
        let d = self.done.as_ref()?;
        let c = d.curve.as_ref()?;
        (matches!(kind, ViewKind::Active | ViewKind::Segments)
            && c.file == file
            && c.device == device)
            .then(|| Rc::clone(c))
    }
}

/// A capacity in GiB from the shell (`None`: the recorded device; not finite or ≤ 0: none).
fn capacity_bytes(gib: Option<f64>) -> Option<u64> {
    let g = gib.filter(|g| g.is_finite() && *g > 0.0)?;
    Some((g.min(1e6) * (1u64 << 30) as f64) as u64)
}

/// `c`, or the recorded device with the limit its trace shows (the rows' `recorded_capacity`).
fn capacity_text(c: Option<u64>, rows: &[SweepRow]) -> String {
    match (c, rows.iter().find_map(|r| r.outcome.recorded_capacity)) {
        (Some(c), _) => size_short(c),
        (None, Some(l)) => format!(
            "the recorded device ({}, as the trace shows)",
            size_short(l)
        ),
        (None, None) => "the recorded device".to_string(),
    }
}

fn settings_text(conf: &str) -> String {
    if conf.is_empty() {
        "PyTorch defaults".to_string()
    } else {
        conf.to_string()
    }
}

/// The form's five keys, pre-filled with `s` (the recorded settings).
fn keys(s: &Settings, from_file: bool) -> Vec<WhatIfKey> {
    let d = Settings::default();
    let rec = |conf: String, default: &str| {
        if !from_file {
            format!("not recorded (PyTorch's default: {default})")
        } else if conf.is_empty() {
            format!("recorded: not set (default: {default})")
        } else {
            format!("recorded: {conf}")
        }
    };
    let divisions = Settings {
        roundup_power2_divisions: s.roundup_power2_divisions,
        ..Settings::default()
    }
    .to_string();
    let div_value = divisions
        .strip_prefix("roundup_power2_divisions:")
        .unwrap_or("")
        .to_string();
    let split = s
        .max_split_size
        .map(|b| (b / MIB).to_string())
        .unwrap_or_default();
    let gc = s
        .garbage_collection_threshold
        .map(|t| t.to_string())
        .unwrap_or_default();
    let nsr = (s.max_non_split_rounding / MIB).to_string();
    let key = |key: &str, value: String, checked: bool, recorded: String| WhatIfKey {
        key: key.to_string(),
        value,
        checked,
        recorded,
    };
    vec![
        key(
            "expandable_segments",
            if s.expandable_segments {
                "True"
            } else {
                "False"
            }
            .to_string(),
            s.expandable_segments,
            rec(
                format!(
                    "expandable_segments:{}",
                    if s.expandable_segments {
                        "True"
                    } else {
                        "False"
                    }
                ),
                "False",
            ),
        ),
        key(
            "max_split_size_mb",
            split.clone(),
            false,
            rec(
                if split.is_empty() {
                    String::new()
                } else {
                    format!("max_split_size_mb:{split}")
                },
                "unlimited",
            ),
        ),
        key(
            "roundup_power2_divisions",
            div_value,
            false,
            rec(divisions, "off"),
        ),
        key(
            "garbage_collection_threshold",
            gc.clone(),
            false,
            rec(
                if gc.is_empty() {
                    String::new()
                } else {
                    format!("garbage_collection_threshold:{gc}")
                },
                "off",
            ),
        ),
        key(
            "max_non_split_rounding_mb",
            nsr.clone(),
            false,
            rec(
                if s.max_non_split_rounding == d.max_non_split_rounding {
                    String::new()
                } else {
                    format!("max_non_split_rounding_mb:{nsr}")
                },
                "20",
            ),
        ),
    ]
}

/// The label of the site of `stack` in file `file`, by the file's [`SiteCache`] under the
/// page's user code (`set_user_code`), so the tab names the OOM's allocation as every other
/// view names it (memviz-alloc's own `name_site` knows only the default rule).
///
/// [`SiteCache`]: memviz_analysis::site::SiteCache
fn site_label(files: &mut [LoadedFile], file: usize, stack: StackId) -> String {
    files
        .get_mut(file)
        .map_or_else(String::new, |f| f.sites.site(&f.snap, stack).label.clone())
}

/// One row, worded; `site` names the OOM's allocation ([`site_label`]).
fn row(r: &SweepRow, site: &mut dyn FnMut(StackId) -> String) -> WhatIfRow {
    let o = &r.outcome;
    let f = &o.fragmentation_at_peak;
    WhatIfRow {
        name: r.name.clone(),
        settings: settings_text(&o.settings),
        peak_reserved: size_long(o.peak_reserved),
        peak_allocated: size_long(o.peak_allocated),
        fragmentation: format!(
            "{} free, largest free block {}",
            size_short(f.free),
            size_short(f.largest_free_block)
        ),
        cuda_mallocs: o.cuda_mallocs,
        cuda_frees: o.cuda_frees,
        first_oom: o.first_oom.as_ref().map(|x| WhatIfOom {
            event: x.merged_event,
            trace_row: x.event,
            requested: size_long(x.requested),
            site: site(x.stack),
            free: format!(
                "reserved {}, allocated {}, largest free block {}, device free {}",
                size_short(x.free.reserved),
                size_short(x.free.allocated),
                size_short(x.free.largest_free_block),
                size_short(x.free.device_free)
            ),
            recorded: x.recorded,
        }),
        min_capacity: o.min_capacity.map_or_else(
            || "none: it runs out of memory even unconstrained".to_string(),
            size_long,
        ),
        peak_reserved_bytes: o.peak_reserved,
        min_capacity_bytes: o.min_capacity,
    }
}

fn result_of(d: &Done, files: &mut [LoadedFile]) -> WhatIfResult {
    let mut site = |s| site_label(files, d.file, s);
    WhatIfResult {
        sweep: d.sweep,
        device: d.device,
        capacity: capacity_text(d.capacity, &d.rows),
        rows: d.rows.iter().map(|r| row(r, &mut site)).collect(),
        best: d.best.map(|b| b as u32),
        shown: d.shown.map(|b| b as u32),
        warnings: d.warnings.clone(),
    }
}

/// The curve of row `i` of `d`.
fn curve_of(d: &Done, i: usize, files: &mut [LoadedFile]) -> Option<Rc<SimCurve>> {
    let r = d.rows.get(i)?;
    let label = format!(
        "simulated reserved: {} on {}",
        settings_text(&r.outcome.settings),
        capacity_text(d.capacity, &d.rows)
    );
    let oom_text = r.outcome.first_oom.as_ref().map_or_else(String::new, |o| {
        format!(
            "simulated OOM at event {}: {} at {}",
            count(o.merged_event),
            size_short(o.requested),
            site_label(files, d.file, o.stack)
        )
    });
    Some(Rc::new(SimCurve::new(
        d.file, d.device, &r.outcome, label, oom_text,
    )))
}

impl WhatIf {
    fn progress(&mut self, text: String) -> WhatIfProgress {
        let r = self.running.as_mut();
        let fraction = r.map_or(0.0, |r| {
            let now = r.job.as_ref().map_or(0.0, |j| j.fraction(0.0));
            r.fraction = r.fraction.max(now);
            r.fraction
        });
        WhatIfProgress {
            running: self.running.is_some(),
            fraction,
            text,
            result: None,
        }
    }

    /// The tab's opening answer (`whatif_info`) for the current file and device.
    pub(super) fn info(&self, files: &mut [LoadedFile], sel: Selection) -> Option<WhatIfInfo> {
        let snap = Rc::clone(&files.get(sel.file)?.snap);
        let device = sel.device;
        let (recorded, notes) = Settings::from_snapshot(&snap);
        let result = self
            .done
            .as_ref()
            .filter(|d| d.file == sel.file && d.device == device)
            .map(|d| result_of(d, files));
        Some(WhatIfInfo {
            device,
            recorded: recorded.to_string(),
            keys: keys(&recorded, snap.allocator_settings.is_some()),
            notes,
            has_trace: snap.trace(device).is_some_and(|t| !t.is_empty()),
            running: self.running.is_some(),
            result,
        })
    }

    /// Starts a run of `conf` (over PyTorch's defaults) or the sweep (over the recorded
    /// settings), on `capacity_gib` (`None`: the recorded device), replacing any job running.
    pub(super) fn start(
        &mut self,
        files: &[LoadedFile],
        sel: Selection,
        conf: &str,
        capacity_gib: Option<f64>,
        sweep: bool,
    ) -> WhatIfProgress {
        self.running = None;
        let Some(f) = files.get(sel.file) else {
            return self.progress("Open a snapshot first.".to_string());
        };
        if f.snap.trace(sel.device).is_none_or(|t| t.is_empty()) {
            return self.progress("This device has no trace events to replay.".to_string());
        }
        let (settings, warnings) = if sweep {
            (Settings::default(), Vec::new())
        } else {
            Settings::parse(conf)
        };
        self.running = Some(Running {
            file: sel.file,
            device: sel.device,
            snap: Rc::clone(&f.snap),
            prep: None,
            job: None,
            sweep,
            settings,
            capacity: capacity_bytes(capacity_gib),
            warnings,
            fraction: 0.0,
        });
        self.progress("Preparing the state at the trace's start…".to_string())
    }

    /// One slice of the running job (`whatif_step`): the start state, or one replay.
    pub(super) fn step(&mut self, files: &mut [LoadedFile]) -> WhatIfProgress {
        let Some(mut r) = self.running.take() else {
            return self.progress("Nothing is running.".to_string());
        };
        let snap = Rc::clone(&r.snap);
        let Some(det) = r.prep.take() else {
            let prep = Prepared::new(&snap, r.device);
            let job = if r.sweep {
                Job::sweep(&prep.recorded, r.capacity)
            } else {
                Job::run("run", r.settings.clone(), r.capacity)
            };
            r.warnings.extend(prep.warnings.iter().cloned());
            r.job = Some(job);
            r.prep = Some(prep.detach());
            self.running = Some(r);
            return self.progress("Replaying…".to_string());
        };
        let prep = det.attach(&snap);
        let Some(job) = r.job.as_mut() else {
            return self.progress("Nothing is running.".to_string());
        };
        // One replay; nothing cancels inside it (the Cancel arrives between two slices).
        let finished = job.step(&prep, &mut |_, _| true).unwrap_or(false);
        r.prep = Some(prep.detach());
        if !finished {
            let text = if r.sweep {
                format!(
                    "Sweep: {} of {} settings done, {} replays…",
                    job.rows().len(),
                    job.task_count(),
                    job.replays()
                )
            } else {
                format!("Finding the smallest capacity: {} replays…", job.replays())
            };
            self.running = Some(r);
            return self.progress(text);
        }
        let rows = r.job.take().map(Job::into_rows).unwrap_or_default();
        let best = best_row(&rows);
        let mut d = Done {
            file: r.file,
            device: r.device,
            sweep: r.sweep,
            capacity: r.capacity,
            best,
            shown: if r.sweep { best } else { Some(0) },
            rows,
            warnings: r.warnings,
            curve: None,
        };
        d.curve = d.shown.and_then(|i| curve_of(&d, i, files));
        let result = result_of(&d, files);
        self.done = Some(d);
        WhatIfProgress {
            running: false,
            fraction: 1.0,
            text: "Done.".to_string(),
            result: Some(result),
        }
    }

    /// Stops the running job (`whatif_cancel`): true when one ran.
    pub(super) fn cancel(&mut self) -> bool {
        self.running.take().is_some()
    }

    /// Drops the result and its curve (`whatif_clear`).
    pub(super) fn clear(&mut self) {
        self.done = None;
    }

    /// Draws row `row`'s curve (negative: none) over the timelines (`whatif_show`).
    pub(super) fn show(&mut self, row: i64, files: &mut [LoadedFile]) -> Option<WhatIfResult> {
        let d = self.done.as_mut()?;
        d.shown = usize::try_from(row).ok().filter(|&i| i < d.rows.len());
        d.curve = d.shown.and_then(|i| curve_of(d, i, files));
        Some(result_of(d, files))
    }

    /// Names the shown curve's OOM site anew (after `set_user_code` reclassified the sites).
    pub(super) fn rename(&mut self, files: &mut [LoadedFile]) {
        if let Some(d) = self.done.as_mut() {
            d.curve = d.shown.and_then(|i| curve_of(d, i, files));
        }
    }
}
