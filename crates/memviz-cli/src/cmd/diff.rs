//! `memviz diff A B [--device D] [--json]`: compare the live allocations (final
//! `active_allocated` blocks, grouped by stack) and the segments of two snapshots
//! ([`memviz_analysis::diff`]). All devices unless `--device`. `--folded` prints the live
//! bytes of both files by stack instead, `frame;frame;… a b` per line (the differential folded
//! format `flamegraph.pl` draws as a diff flamegraph; `--all-frames` keeps every frame;
//! `--svg OUT` draws it, red where B grew, blue where it shrank, with inferno).

use crate::cli::DiffArgs;
use crate::load;
use crate::out::{stdout, Done};
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
        let all = a.all_frames;
        let mut d = memviz_analysis::flame::DiffFolded::new(device, all);
        d.add(0, &*load(file_a)?);
        d.add(1, &*load(file_b)?);
        if let Some(path) = &a.svg {
            let mut folded = Vec::new();
            d.write(&mut folded)?;
            return crate::svg::write_svg(&folded, path, "Live bytes by stack: A to B", "bytes");
        }
        d.write(&mut out)?;
        return out.finish();
    }
    let mut d = DiffBuilder::new(device);
    d.add(0, &*load(file_a)?);
    d.add(1, &*load(file_b)?);
    let d = d.finish();
    if json {
        serde_json::to_writer(&mut out, &d)?;
        writeln!(out)?;
    } else {
        out.write_all(table(&d, file_a, file_b, device).as_bytes())?;
    }
    out.finish()
}

/// A short label for a stack line list: `basename:line:name` of the innermost Python frame
/// outside torch's own package, else of the innermost Python frame, else the first line.
fn label(stack: &[String]) -> String {
    // Frame lines only (FX annotation lines are indented).
    let frames: Vec<&str> = stack
        .iter()
        .map(String::as_str)
        .filter(|l| !l.starts_with(' '))
        .collect();
    let pick = frames
        .iter()
        .find(|l| l.contains(".py:") && !l.contains("/torch/") && !l.contains("\\torch\\"))
        .or_else(|| frames.iter().find(|l| l.contains(".py:")))
        .or_else(|| frames.first());
    match pick {
        None => "<no frames>".to_string(),
        Some(l) => {
            // Basename of the filename part: cut at the last separator before `.py:` (or the
            // `:line:` part for other frames).
            let end = l.find(".py:").unwrap_or(l.len());
            let start = l
                .get(..end)
                .and_then(|f| f.rfind(['/', '\\']))
                .map_or(0, |i| i + 1);
            l.get(start..).unwrap_or(l).to_string()
        }
    }
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
            "{:>11} {:>11} {:>11} {:>17}  stack\n",
            "change", "A", "B", "count A -> B"
        ));
        for g in d.groups.iter().take(TOP) {
            s.push_str(&format!(
                "{:>11} {:>11} {:>11} {:>17}  {}\n",
                signed_size(g),
                size_short(g.bytes_a),
                size_short(g.bytes_b),
                format!("{} -> {}", count(g.count_a), count(g.count_b)),
                label(&g.stack)
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

#[cfg(test)]
mod tests {
    use super::label;

    #[test]
    fn labels() {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(label(&[]), "<no frames>");
        assert_eq!(
            label(&v(&[
                "??:0:c10::alloc",
                "/x/torch/nn/f.py:3:linear",
                "/home/u/model.py:88:forward"
            ])),
            "model.py:88:forward"
        );
        assert_eq!(label(&v(&["C:\\t\\torch\\f.py:3:g"])), "f.py:3:g");
        assert_eq!(label(&v(&["??:0:c10::alloc"])), "??:0:c10::alloc");
    }
}
