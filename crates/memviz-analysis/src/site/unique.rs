//! Labels that tell sites apart ([`unique_labels`]): the legend lists stacks, and two stacks
//! (or two sites) may share a short label.

use super::{FrameKind, SiteCache};
use memviz_snapshot::{Snapshot, StackId};
use rustc_hash::FxHashMap;

/// How many callers [`unique_labels`] may add.
const MAX_CALLERS: usize = 3;

/// The Python frames outside the site's frame, innermost first, as `basename:line:name`
/// (at most `n`); `user_only`: only the user's frames (`model.py:1307:mlp ← model.py:1320:block`
/// says more than `module.py:1763:_call_impl`).
pub fn callers(
    snap: &Snapshot,
    stack: StackId,
    sites: &mut SiteCache,
    n: usize,
    user_only: bool,
) -> Vec<String> {
    let Some(frame) = sites.site(snap, stack).frame else {
        return Vec::new();
    };
    let ids = snap.stack(stack);
    let Some(at) = ids.iter().position(|&id| id == frame) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for &id in ids.get(at + 1..).unwrap_or(&[]) {
        if out.len() >= n {
            break;
        }
        let keep = match sites.frame_kind(snap, id) {
            FrameKind::User => true,
            FrameKind::Library => !user_only,
            FrameKind::Interpreter | FrameKind::Native => false,
        };
        if !keep {
            continue;
        }
        if let Some(f) = snap.frame(id) {
            out.push(format!(
                "{}:{}:{}",
                crate::frames::basename(snap.str(f.filename)),
                f.line,
                snap.str(f.name)
            ));
        }
    }
    out
}

/// The ATen op the stack ran, from its innermost dispatcher frame (`at::_ops::bmm::call(…)`
/// gives `bmm`); `None` when no frame names one.
fn op_name(snap: &Snapshot, stack: StackId) -> Option<String> {
    const OPS: &str = "at::_ops::";
    snap.stack(stack).iter().find_map(|&id| {
        let name = snap.str(snap.frame(id)?.name);
        let rest = name.get(name.find(OPS)? + OPS.len()..)?;
        let op = rest.split("::").next().filter(|op| !op.is_empty())?;
        Some(op.to_string())
    })
}

/// A label per `(stack, label)` entry, unique among the entries: an entry whose label no
/// other shares keeps it; a group sharing one gets, by the first step that makes the group's
/// labels distinct: the site's detail (`model.py:9:f → transformers/…/x.py:3:g`), the site's
/// full path (two files of one basename), one to three callers (the user's frames first: `model.py:9:f ← train.py:40:main`),
/// the ATen op (`model.py:9:f [empty]`), else a number (`model.py:9:f #2`). Entries of one stack are one site and keep one label.
pub fn unique_labels(
    snap: &Snapshot,
    entries: &[(StackId, String)],
    sites: &mut SiteCache,
) -> Vec<String> {
    let mut out: Vec<String> = entries.iter().map(|(_, l)| l.clone()).collect();
    let mut groups: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
    for (i, (_, l)) in entries.iter().enumerate() {
        groups.entry(l.as_str()).or_default().push(i);
    }
    let mut shared: Vec<Vec<usize>> = groups.into_values().filter(|g| g.len() > 1).collect();
    shared.sort_unstable();
    for group in shared {
        let base = |i: usize| entries.get(i).map_or("", |e| e.1.as_str()).to_string();
        let stack = |i: usize| entries.get(i).map_or(StackId::EMPTY, |e| e.0);
        let mut steps: Vec<Vec<String>> = Vec::new();
        steps.push(
            group
                .iter()
                .map(|&i| {
                    let s = sites.site(snap, stack(i));
                    match &s.detail {
                        Some(d) => format!("{} → {}", base(i), d.label),
                        None => base(i),
                    }
                })
                .collect(),
        );
        steps.push(
            group
                .iter()
                .map(|&i| sites.site(snap, stack(i)).path())
                .collect(),
        );
        for (user_only, depth) in [true, false]
            .into_iter()
            .flat_map(|u| (1..=MAX_CALLERS).map(move |d| (u, d)))
        {
            steps.push(
                group
                    .iter()
                    .map(|&i| {
                        let c = callers(snap, stack(i), sites, depth, user_only);
                        if c.is_empty() {
                            base(i)
                        } else {
                            format!("{} ← {}", base(i), c.join(" ← "))
                        }
                    })
                    .collect(),
            );
        }
        // Stacks that differ only below the Python frames: the op each ran (`[empty]`).
        steps.push(
            group
                .iter()
                .map(|&i| match op_name(snap, stack(i)) {
                    Some(op) => format!("{} [{op}]", base(i)),
                    None => base(i),
                })
                .collect(),
        );
        let distinct = |labels: &[String]| {
            let mut v: Vec<&String> = labels.iter().collect();
            v.sort_unstable();
            v.windows(2).all(|w| w.first() != w.get(1))
        };
        let chosen = steps.into_iter().find(|l| distinct(l)).unwrap_or_else(|| {
            group
                .iter()
                .enumerate()
                .map(|(k, &i)| {
                    if k == 0 {
                        base(i)
                    } else {
                        format!("{} #{}", base(i), k + 1)
                    }
                })
                .collect()
        });
        for (&i, l) in group.iter().zip(chosen) {
            if let Some(slot) = out.get_mut(i) {
                *slot = l;
            }
        }
    }
    // A numbered or extended label may equal another entry's own label: number what is left.
    let mut seen: FxHashMap<String, usize> = FxHashMap::default();
    for l in &mut out {
        let n = seen.entry(l.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            let mut k = *n;
            let mut cand = format!("{l} #{k}");
            while seen.contains_key(&cand) {
                k += 1;
                cand = format!("{l} #{k}");
            }
            seen.insert(cand.clone(), 1);
            *l = cand;
        }
    }
    out
}
