//! The parity oracle of the layout: memory_viz's stacking ported literally.

use super::build::replay_lists;
use crate::timeline::Timeline;

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
