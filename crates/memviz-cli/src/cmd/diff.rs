//! `memviz diff A B [--device D] [--json]`: compare the live allocations (final
//! `active_allocated` blocks, grouped by stack) and the segments of two snapshots
//! ([`memviz_analysis::diff`]). All devices unless `--device`. `--folded` prints the live
//! bytes of both files by stack instead, `frame;frame;… a b` per line (the differential folded
//! format `flamegraph.pl` draws as a diff flamegraph; `--all-frames` keeps every frame;
//! `--svg OUT` draws it, red where B grew, blue where it shrank, with inferno).

use crate::cli::DiffArgs;
use crate::load;
use crate::out::{stdout, Done, Fail};
use memviz_analysis::diff::{Diff, DiffBuilder, DiffGroup, SegmentKey};
use memviz_analysis::format::{count, size_short};

use std::io::Write;

/// Groups shown by the table.
const TOP: usize = 30;

/// Runs `memviz diff` with the arguments after the command name.
pub fn run(a: &DiffArgs) -> Done {
    let (file_a, file_b, device, json) = (&a.a, &a.b, a.device, a.json);
    // One model at a time: what the comparison needs of A is taken before B is loaded.
    let mut out = stdout();
    if a.folded {
        use memviz_analysis::flame::FrameMode;
        // `--all-frames`: every frame; else the Python frames (a stack without one: its site).
        let mode = if a.all_frames {
            FrameMode::All
        } else {
            FrameMode::Python
        };
        let user = super::user_code(a.user_code.as_deref())?;
        let mut d = memviz_analysis::flame::DiffFolded::new(device, mode, user);
        let mut devices = Vec::new();
        for (i, file) in [file_a, file_b].into_iter().enumerate() {
            let snap = load(file)?;
            devices.extend(snap.devices());
            d.add(i, &snap);
        }
        check_device(a, &devices)?;
        if let Some(path) = &a.svg {
            let mut folded = Vec::new();
            d.write(&mut folded)?;
            return crate::svg::write_svg(&folded, path, "Live bytes by stack: A to B", "bytes");
        }
        d.write(&mut out)?;
        return out.finish();
    }
    let d = answer(a)?;
    if json {
        serde_json::to_writer(&mut out, &d)?;
        writeln!(out)?;
    } else {
        out.write_all(table(&d, file_a, file_b, device).as_bytes())?;
    }
    out.finish()
}

/// `--device` against the devices of either file ([`crate::device::resolve_device`]: a device
/// only one of them has is compared with nothing).
fn check_device(a: &DiffArgs, devices: &[i64]) -> Result<(), Fail> {
    crate::device::resolve_device(&format!("{} and {}", a.a, a.b), devices, a.device)?;
    Ok(())
}

/// `memviz diff --json`'s answer: one model at a time, what the comparison needs of A taken
/// before B is loaded.
pub fn answer(a: &DiffArgs) -> Result<Diff, Fail> {
    let user = super::user_code(a.user_code.as_deref())?;
    let mut d = DiffBuilder::with_user_code(a.device, user);
    let mut devices = Vec::new();
    for (i, file) in [&a.a, &a.b].into_iter().enumerate() {
        let snap = load(file)?;
        devices.extend(snap.devices());
        d.add(i, &snap);
    }
    check_device(a, &devices)?;
    Ok(d.finish())
}

fn signed_size(g: &DiffGroup) -> String {
    if g.bytes_b >= g.bytes_a {
        format!("+{}", size_short(g.bytes_b - g.bytes_a))
    } else {
        format!("-{}", size_short(g.bytes_a - g.bytes_b))
    }
}

fn segment_bytes(list: &[SegmentKey]) -> u64 {
    list.iter()
        .fold(0u64, |a, s| a.saturating_add(s.total_size))
}

fn table(d: &Diff, file_a: &str, file_b: &str, device: Option<i64>) -> String {
    let mut s = String::new();
    let scope = device.map_or_else(|| "all devices".to_string(), |d| format!("device {d}"));
    s.push_str(&format!("A: {file_a}\nB: {file_b}\n"));
    s.push_str(&format!(
        "live allocations by stack ({scope}); {} stacks differ\n",
        count(d.groups.len() as u64)
    ));
    if !d.groups.is_empty() {
        s.push_str(&format!(
            "{:>11} {:>11} {:>11} {:>17}  site\n",
            "change", "A", "B", "count A -> B"
        ));
        for g in d.groups.iter().take(TOP) {
            s.push_str(&format!(
                "{:>11} {:>11} {:>11} {:>17}  {}\n",
                signed_size(g),
                size_short(g.bytes_a),
                size_short(g.bytes_b),
                format!("{} -> {}", count(g.count_a), count(g.count_b)),
                super::site_text(&g.site)
            ));
        }
        if d.groups.len() > TOP {
            s.push_str(&format!(
                "… {} more stacks (--json lists all)\n",
                count((d.groups.len() - TOP) as u64)
            ));
        }
    }
    s.push_str(&format!(
        "segments only in A: {} ({})\nsegments only in B: {} ({})\n",
        count(d.segments_only_a.len() as u64),
        size_short(segment_bytes(&d.segments_only_a)),
        count(d.segments_only_b.len() as u64),
        size_short(segment_bytes(&d.segments_only_b)),
    ));
    s
}
