//! The parity oracle of the layout: memory_viz's stacking ported literally.

use memviz_analysis::steps::NO_EVENT;
use memviz_analysis::timeline::Timeline;

/// memory_viz's stacking (SEMANTICS.md §3.4), ported literally with every element drawn: the
/// per-element series of `(timestep, bottom)` points and `max_at_time`. Quadratic (it removes
/// from the middle of a vector, as the reference does): a parity oracle for tests, not for use
/// on large traces.
pub fn reference_series(t: &Timeline) -> (Vec<Vec<(u32, u64)>>, Vec<u64>) {
    let (initial, actions) = replay_lists(t);
    let n = t.elements.len();
    let size = |e: usize| t.elements[e].size_bytes;
    let mut series: Vec<Vec<(u32, u64)>> = vec![Vec::new(); n];
    let mut current: Vec<usize> = Vec::new();
    let mut max_at_time = Vec::new();
    let mut total: u64 = 0;
    let mut ts: u32 = 0;
    for &e in &initial {
        let e = e as usize;
        current.push(e);
        series[e].push((ts, total));
        total += size(e);
    }
    for &(e, _) in &actions {
        let e = e as usize;
        match current.iter().rposition(|&x| x == e) {
            None => {
                current.push(e);
                series[e].push((ts, total));
                total += size(e);
                max_at_time.push(total);
                ts += 1;
            }
            Some(k) => {
                max_at_time.push(total);
                ts += 1;
                let last = series[e].last().map_or(0, |p| p.1);
                series[e].push((ts, last));
                current.remove(k);
                if k < current.len() {
                    for &s in &current[k..] {
                        let b = series[s].last().map_or(0, |p| p.1);
                        series[s].push((ts, b));
                        series[s].push((ts + 3, b.saturating_sub(size(e))));
                    }
                    for _ in 0..3 {
                        max_at_time.push(total);
                    }
                    ts += 3;
                }
                total -= size(e);
            }
        }
    }
    for &e in &current {
        let b = series[e].last().map_or(0, |p| p.1);
        series[e].push((ts, b));
    }
    (series, max_at_time)
}

/// The replay order of §3.2/§3.4: initially present elements (after the flat-graph quirk), then
/// the actions as `(element, event)`. (The parity oracle's input; the build reads the same
/// order without copying it.)
fn replay_lists(timeline: &Timeline) -> (Vec<u32>, Vec<(u32, u32)>) {
    let mut initial = timeline.initially_present.clone();
    let mut actions: Vec<(u32, u32)> = timeline
        .steps
        .iter()
        .map(|s| (s.element, s.event))
        .collect();
    if actions.is_empty() {
        if let Some(last) = initial.pop() {
            actions.push((last, NO_EVENT));
        }
    }
    (initial, actions)
}
