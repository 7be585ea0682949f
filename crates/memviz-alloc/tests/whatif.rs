//! Synthetic traces (built here, as JSON snapshots) that OOM at a capacity because of
//! fragmentation: one that `expandable_segments` lets fit, one where it does not help.

use memviz_alloc::{min_capacity, replay, Options, Prepared, Settings, MIB};
use memviz_snapshot::{load_slice, Snapshot};

/// A snapshot whose device-0 trace is `events` (action, addr, size), with no final segments
/// (every allocation is freed by the end).
fn snapshot(events: &[(&str, u64, u64)]) -> Snapshot {
    let trace: Vec<String> = events
        .iter()
        .map(|(a, addr, size)| {
            format!(
                r#"{{"action":"{a}","addr":{addr},"size":{size},"stream":0,"frames":[{{"filename":"train.py","line":{line},"name":"step"}}]}}"#,
                line = 10 + addr % 7
            )
        })
        .collect();
    let json = format!(
        r#"{{"segments":[],"device_traces":[[{}]]}}"#,
        trace.join(",")
    );
    load_slice(json.as_bytes()).expect("the synthetic snapshot loads")
}

struct Trace {
    events: Vec<(&'static str, u64, u64)>,
    live: Vec<(u64, u64)>,
    next: u64,
}

impl Trace {
    fn new() -> Self {
        Trace {
            events: Vec::new(),
            live: Vec::new(),
            next: 0x7f00_0000_0000,
        }
    }
    fn alloc(&mut self, size: u64) -> u64 {
        let a = self.next;
        self.next += 1 << 32;
        self.events.push(("alloc", a, size));
        self.live.push((a, size));
        a
    }
    fn free(&mut self, addr: u64) {
        if let Some(i) = self.live.iter().position(|l| l.0 == addr) {
            let (a, s) = self.live.remove(i);
            self.events.push(("free_requested", a, s));
            self.events.push(("free_completed", a, s));
        }
    }
    fn free_all(&mut self) {
        for (a, _) in self.live.clone() {
            self.free(a);
        }
    }
}

fn run(snap: &Snapshot, conf: &str, capacity: u64) -> memviz_alloc::Outcome {
    let (settings, w) = Settings::parse(conf);
    assert!(w.is_empty(), "{w:?}");
    replay(snap, 0, &settings, Some(capacity), &mut |_, _| true).expect("not cancelled")
}

/// Ten 6 MiB tensors. Without expandable segments each 20 MiB segment holds three, and its
/// last 2 MiB can never join a neighbour's (segments do not merge): the tenth needs a fourth
/// segment, 80 MiB on a 70 MiB device, while 6 MiB sit free in 2 MiB pieces and no segment is
/// free to release. With expandable segments the tensors are packed into 20 MiB pages of one
/// growing range: 60 MiB.
#[test]
fn expandable_segments_fit_what_fragmentation_refuses() {
    let mut t = Trace::new();
    for _ in 0..9 {
        t.alloc(6 * MIB);
    }
    let want = t.events.len();
    t.alloc(6 * MIB);
    t.free_all();
    let snap = snapshot(&t.events);

    let plain = run(&snap, "", 70 * MIB);
    let oom = plain
        .first_oom
        .as_ref()
        .expect("OOM without expandable segments");
    assert_eq!(oom.event, want as u64);
    assert_eq!(oom.requested, 6 * MIB);
    assert_eq!(oom.free.reserved, 60 * MIB);
    assert_eq!(oom.free.cached_free, 6 * MIB);
    assert_eq!(oom.free.largest_free_block, 2 * MIB, "{oom:?}");
    assert_eq!(
        oom.site.as_deref().map(|s| s.contains("train.py")),
        Some(true)
    );
    assert!(!plain.completed);

    let exp = run(&snap, "expandable_segments:True", 70 * MIB);
    assert!(exp.first_oom.is_none(), "{:?}", exp.first_oom);
    assert!(exp.completed);
    assert_eq!(exp.peak_reserved, 60 * MIB);
    assert_eq!(exp.segment_allocs, vec![20 * MIB; 3]);

    // The smallest cards: 60 MiB with expandable segments, 80 MiB without.
    let prep = Prepared::new(&snap, 0);
    let (es, _) = Settings::parse("expandable_segments:True");
    let cap_exp = min_capacity(&prep, &es, &mut |_, _| true).expect("not cancelled");
    let cap_plain = min_capacity(&prep, &Settings::default(), &mut |_, _| true).expect("ok");
    assert_eq!(cap_exp, Some(60 * MIB));
    assert_eq!(cap_plain, Some(80 * MIB));
}

/// Eight 9 MiB tensors, two per 20 MiB page or segment, every other one freed: the 9 MiB
/// holes sit between live tensors in either layout, and none holds a whole 20 MiB page to
/// unmap, so a 30 MiB request fails at 100 MiB both ways.
#[test]
fn expandable_segments_do_not_fix_holes_between_live_tensors() {
    let mut t = Trace::new();
    let xs: Vec<u64> = (0..8).map(|_| t.alloc(9 * MIB)).collect();
    for x in xs.iter().step_by(2) {
        t.free(*x);
    }
    t.alloc(30 * MIB);
    t.free_all();
    let snap = snapshot(&t.events);
    let plain = run(&snap, "", 100 * MIB);
    let exp = run(&snap, "expandable_segments:True", 100 * MIB);
    assert!(plain.first_oom.is_some());
    assert!(exp.first_oom.is_some(), "{exp:?}");
    assert_eq!(
        exp.first_oom.as_ref().map(|o| o.free.largest_free_block),
        Some(9 * MIB)
    );
}

#[test]
fn progress_can_cancel() {
    let mut t = Trace::new();
    for _ in 0..10 {
        let a = t.alloc(MIB);
        t.free(a);
    }
    let snap = snapshot(&t.events);
    let prep = Prepared::new(&snap, 0);
    let r = prep.replay(&Settings::default(), &Options::default(), &mut |_, _| false);
    assert!(r.is_err());
    let out = prep
        .replay(&Settings::default(), &Options::default(), &mut |_, _| true)
        .expect("runs");
    let json = serde_json::to_value(&out).expect("serializes");
    for key in [
        "device",
        "settings",
        "capacity",
        "segment_allocs",
        "segment_frees",
        "peak_reserved",
        "peak_allocated",
        "fragmentation_at_peak",
        "cuda_mallocs",
        "first_oom",
        "min_capacity",
    ] {
        assert!(json.get(key).is_some(), "{key} missing");
    }
}
