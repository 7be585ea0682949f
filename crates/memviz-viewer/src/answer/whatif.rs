//! The "What if" tab's answers (issue 31): the recorded settings to pre-fill the form, a job's
//! progress, and the results of a run or a sweep, every number already worded.

use serde::Serialize;
use ts_rs::TS;

/// One allocator setting of the form: the value it is pre-filled with (the recorded one) and
/// the text saying what was recorded.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct WhatIfKey {
    /// The conf key (`expandable_segments`, `max_split_size_mb`, …).
    pub key: String,
    /// The recorded value as conf text (`""`: not set, PyTorch's default).
    pub value: String,
    /// For `expandable_segments`: whether it was on.
    pub checked: bool,
    /// `recorded: expandable_segments:True`, or `recorded: not set (default …)`.
    pub recorded: String,
}

/// What the tab shows when it opens: the device, the recorded settings and any result kept.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct WhatIfInfo {
    pub device: i64,
    /// The recorded settings as one conf string (`""`: PyTorch's defaults).
    pub recorded: String,
    /// The five settings of the form.
    pub keys: Vec<WhatIfKey>,
    /// Notes on the recorded settings (no `allocator_settings` in the file, unreadable keys).
    pub notes: Vec<String>,
    /// The device has trace events (else nothing can be replayed).
    pub has_trace: bool,
    /// A job is running.
    pub running: bool,
    /// The last result of this file and device, when kept.
    pub result: Option<WhatIfResult>,
}

/// A job's progress (each `whatif_step` does one slice of it).
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct WhatIfProgress {
    /// Still running: ask `whatif_step` again.
    pub running: bool,
    /// How far, in [0, 1].
    pub fraction: f64,
    /// `Sweep: 3 of 8 settings, 27 replays`, `Cancelled.`, or why nothing runs.
    pub text: String,
    /// The result, once done.
    pub result: Option<WhatIfResult>,
}

/// The first request the replay could not satisfy.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct WhatIfOom {
    /// Its event in the State History's numbering (a free_requested + free_completed pair
    /// counts once), as the OOM panel and `memviz oom` number events.
    pub event: u64,
    /// Its row of the device trace (`memviz whatif --json`'s `event`).
    pub trace_row: u64,
    /// `1.2GiB (1288490188 bytes)`.
    pub requested: String,
    /// The site of the allocation by memviz's frame rules (the user's line first).
    pub site: String,
    /// What was free then: `reserved 39.5GiB, allocated 38.1GiB, largest free block 512.0MiB,
    /// device free 20.0MiB`.
    pub free: String,
    /// The recording had an `oom` there too.
    pub recorded: bool,
}

/// One replayed setting: its answers, worded.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct WhatIfRow {
    /// `recorded`, `expandable_segments`, …, or `run` for a single run.
    pub name: String,
    /// The settings replayed as a conf string (`PyTorch defaults` when empty).
    pub settings: String,
    pub peak_reserved: String,
    pub peak_allocated: String,
    /// Reserved minus allocated at the reserved peak, and its largest free block.
    pub fragmentation: String,
    /// cudaMalloc calls (plus page maps).
    pub cuda_mallocs: u64,
    /// cudaFree calls (plus page unmaps).
    pub cuda_frees: u64,
    pub first_oom: Option<WhatIfOom>,
    /// The smallest capacity it fits (multiple of 2 MiB), or why there is none.
    pub min_capacity: String,
    /// Bytes of the peak reserved (for tests and sorting).
    pub peak_reserved_bytes: u64,
    /// Bytes of the smallest capacity (`null`: none).
    pub min_capacity_bytes: Option<u64>,
}

/// A finished run or sweep.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct WhatIfResult {
    /// A sweep over the standard alternatives (else one run).
    pub sweep: bool,
    pub device: i64,
    /// `40.0GiB`, or `the recorded device` without a capacity.
    pub capacity: String,
    pub rows: Vec<WhatIfRow>,
    /// The row with the smallest capacity (then peak reserved).
    pub best: Option<u32>,
    /// The row whose curve is drawn over the timelines (`null`: none).
    pub shown: Option<u32>,
    /// The conf string's warnings (unknown keys, bad values).
    pub warnings: Vec<String>,
}

/// The simulated reserved curve drawn over the timeline: its legend text, colour and the
/// simulated first OOM's canvas x when inside the plot.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
pub struct WhatIfMark {
    pub label: String,
    pub rgba: [u8; 4],
    pub oom_x: Option<f64>,
    /// The simulated OOM's text (`simulated OOM at event 1234: 1.0GiB at train.py:12`).
    pub oom_text: String,
}
