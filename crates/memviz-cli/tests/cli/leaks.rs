//! `memviz leaks`, `memviz_analysis::leaks` and `memviz_analysis::annotations`: a planted
//! training trace (ProfilerStep#1..#5, one stack leaking one allocation per step), phase
//! pairing, hostile input, every fixture and corpus file, the CLI.

use crate::common;
use common::*;
use memviz_analysis::annotations::{annotate_events, iterations, phases, Phase};
use memviz_present::layout::{Layout, LayoutOptions};
use memviz_analysis::leaks::{leaks, LeakReport, LeakSuspect};
use memviz_analysis::timeline;
use memviz_snapshot::Snapshot;
use std::path::PathBuf;
use std::sync::OnceLock;

const T0: i64 = 1_700_000_000_000_000;

/// Writes `leak.pickle`, `leak_noann.pickle` and `phases.pickle`: one device-0 segment at
/// BASE, the same trace, different `external_annotations`.
///
/// Stacks (`/m/train.py:<line>:<name>`): init (1), temp (2), leak (3), steady (4), late (5).
/// Event `i` is at `T0 + 1000 i` µs. Offsets from BASE: W 0 (4096), T 4096 (8192),
/// L_i 12288 + 1024 (i − 1) (1024 each), K_i 17408 when i is odd else 19456 (2048), Z 21504 (512).
/// ```text
/// ev 0        alloc W (init)
/// step i = 1..5, first event e = 7 i − 6 (1, 6, 13, 20, 27; step 1 has no K free):
///   alloc T (temp); free_requested T; free_completed T; alloc L_i (leak); alloc K_i (steady);
///   free_requested K_{i−1}; free_completed K_{i−1}     (i ≥ 2)
/// ev 34       alloc Z (late)
/// ```
/// Events: step 1 = 1..5, step 2 = 6..12, step 3 = 13..19, step 4 = 20..26, step 5 = 27..33.
/// Final blocks (tiling 24576 bytes): W active, T inactive, L1..L5 active, K5 active (17408),
/// 19456 inactive, Z active, 2560 inactive. Nothing is a ghost.
///
/// `leak.pickle`: ProfilerStep#i START 500 µs before the first event of step i, END 500 µs
/// after its last event. `leak_noann.pickle`: none. `phases.pickle`: see `phase_pairing`, plus an `annotate`
/// event (35) on L1 with user_metadata "tag".
const SCRIPT: &str = r#"
import pickle, sys, os
out = sys.argv[1]
T0 = 1_700_000_000_000_000
BASE = 0x7F0000000000
def fr(line, name):
    return [{"name": name, "filename": "/m/train.py", "line": line}]
INIT, TEMP, LEAK, STEADY, LATE = fr(1, "init"), fr(2, "temp"), fr(3, "leak"), fr(4, "steady"), fr(5, "late")
ev = []
def e(action, off, size, frames, meta=""):
    ev.append({"action": action, "addr": BASE + off, "size": size, "stream": 0,
               "time_us": T0 + 1000 * len(ev), "compile_context": "N/A",
               "user_metadata": meta, "frames": frames})
K = lambda i: 17408 if i % 2 else 19456
e("alloc", 0, 4096, INIT)
steps = []
for i in range(1, 6):
    first = len(ev)
    e("alloc", 4096, 8192, TEMP)
    e("free_requested", 4096, 8192, TEMP)
    e("free_completed", 4096, 8192, TEMP)
    e("alloc", 12288 + 1024 * (i - 1), 1024, LEAK)
    e("alloc", K(i), 2048, STEADY)
    if i > 1:
        e("free_requested", K(i - 1), 2048, STEADY)
        e("free_completed", K(i - 1), 2048, STEADY)
    steps.append((first, len(ev) - 1))
e("alloc", 21504, 512, LATE)
assert [s for s, _ in steps] == [1, 6, 13, 20, 27] and len(ev) == 35
blocks = []
addr = BASE
for size, frames in [(4096, INIT), (8192, None)] + [(1024, LEAK)] * 5 + [(2048, STEADY), (2048, None), (512, LATE), (2560, None)]:
    active = frames is not None
    blocks.append({"address": addr, "size": size, "requested_size": size if active else 0,
                   "state": "active_allocated" if active else "inactive", "frames": frames or []})
    addr += size
total = addr - BASE
alloc = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
seg = {"device": 0, "address": BASE, "total_size": total, "allocated_size": alloc,
       "active_size": alloc, "requested_size": alloc, "stream": 0, "segment_type": "large",
       "segment_pool_id": (0, 0), "is_expandable": False, "frames": [], "blocks": blocks}
def ann(name, stage, t, device=0):
    return {"name": name, "stage": stage, "device": device, "time_us": t}
steps_ann = []
for i, (a, b) in enumerate(steps, 1):
    steps_ann.append(ann(f"ProfilerStep#{i}", "START", T0 + 1000 * a - 500))
    steps_ann.append(ann(f"ProfilerStep#{i}", "END", T0 + 1000 * b + 500))
def write(name, obj):
    with open(os.path.join(out, name), "wb") as f:
        pickle.dump(obj, f, protocol=4)
write("leak.pickle", {"segments": [seg], "device_traces": [ev], "external_annotations": steps_ann})
write("leak_noann.pickle", {"segments": [seg], "device_traces": [ev]})
ev2 = list(ev)
ev2.append({"action": "annotate", "addr": BASE + 12288, "size": 1024, "stream": 0,
            "time_us": T0 + 35000, "user_metadata": "tag", "frames": []})
pa = [ann("Y", "END", T0 + 3500),
      ann("outer", "START", T0 + 500), ann("inner", "START", T0 + 1500),
      ann("inner", "END", T0 + 2500), ann("outer", "END", T0 + 5500),
      ann("X", "START", T0 + 6500), ann("X", "START", T0 + 8500),
      ann("X", "END", T0 + 9500), ann("X", "END", T0 + 12500),
      ann("other", "START", T0 + 500, device=1), ann("other", "END", T0 + 900, device=1),
      ann("Z", "START", T0 + 30500)]
write("phases.pickle", {"segments": [seg], "device_traces": [ev2], "external_annotations": pa})
"#;

fn planted_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| planted_fixtures("leaks", SCRIPT))
        .clone()
}

fn planted(name: &str) -> PathBuf {
    planted_dir().join(name)
}

fn analyse(snap: &Snapshot, device: i64) -> (Layout, LeakReport) {
    let t = timeline::build(snap, device);
    let layout = Layout::build(&t, LayoutOptions::default());
    let r = leaks(snap, device, &t, &layout);
    (layout, r)
}

fn stack(name: &str, line: u32) -> Vec<String> {
    vec![format!("/m/train.py:{line}:{name}")]
}

/// Timesteps of the planted trace (SEMANTICS §3.4: one per alloc / merged free, +3 for a free
/// below the top): ts 0 = W; step 1: ts 1 T, 2 free T, 3 L1, 4 K1; step 2: 5 T, 6 free T, 7 L2,
/// 8 K2, 9–12 free K1 (slides: L2, K2 above it); step 3: 13–20; step 4: 21–28; step 5: 29 T,
/// 30 free T, 31 L5, 32 K5, 33–36 free K4; ts 37 Z. 38 timesteps.
///
/// ProfilerStep#i covers the timesteps of its events: #1 [1, 5), #2 [5, 13), #3 [13, 21),
/// #4 [21, 29), #5 [29, 37). Settled: the last timestep of #1 = 4.
///
/// (b) Live bytes per stack at the last timestep of each step (4, 12, 20, 28, 36):
/// leak 1024, 2048, 3072, 4096, 5120 (slope 1024, 4 rises of 4): the suspect, 5 allocations,
/// first event 9 (L2, the first after step 1); steady 2048 each time (K1 alive at ts 4, K2 at
/// 12, …), init 4096 each time, temp 0: no suspects.
/// (a) Alive at the end, pushed after ts 4: L2..L5 (4 × 1024 = 4096, first event 9), K5 (2048,
/// event 31), Z (512, event 34), in that order.
#[test]
fn planted_iteration_leak() {
    let snap = load_path(&planted("leak.pickle"));
    let (layout, r) = analyse(&snap, 0);
    assert_eq!(layout.step_count(), 38);
    let ph = phases(&snap, 0, &layout);
    let spans: Vec<(String, u32, u32)> = ph
        .iter()
        .map(|p| (p.name.clone(), p.start_step, p.end_step))
        .collect();
    let want: Vec<(String, u32, u32)> = [(1, 5), (5, 13), (13, 21), (21, 29), (29, 37)]
        .iter()
        .enumerate()
        .map(|(i, &(s, e))| (format!("ProfilerStep#{}", i + 1), s, e))
        .collect();
    assert_eq!(spans, want);
    assert_eq!(iterations(&ph), ph);
    assert_eq!(r.settled_step, 4);
    assert!(
        r.settled_rule.contains("ProfilerStep#1"),
        "{}",
        r.settled_rule
    );

    let top = r.suspects.first().expect("a suspect");
    assert_eq!(top.kind, "iteration_growth");
    assert_eq!(top.stack, stack("leak", 3));
    assert_eq!(top.growth_per_iteration, Some(1024.0));
    assert_eq!((top.bytes, top.count, top.first_event), (5120, 5, 9));
    let growth: Vec<&LeakSuspect> = r
        .suspects
        .iter()
        .filter(|s| s.kind == "iteration_growth")
        .collect();
    assert_eq!(growth.len(), 1, "{:#?}", r.suspects);

    // (a) needs repetition: L2..L5 were made in 4 iterations; K5 and Z are single
    // allocations (the steady state and a late one), not suspects.
    let alive: Vec<(Vec<String>, u64, u64, u32)> = r
        .suspects
        .iter()
        .filter(|s| s.kind == "alive_at_end")
        .map(|s| (s.stack.clone(), s.bytes, s.count, s.first_event))
        .collect();
    assert_eq!(alive, [(stack("leak", 3), 4096, 4, 9)]);
    for s in &r.suspects {
        assert!(s.explanation.ends_with('.'), "{}", s.explanation);
        assert_eq!(s.explanation.matches(". ").count(), 0, "{}", s.explanation);
        assert!(!s.explanation.contains('\n'));
    }
    assert_eq!(
        r.suspects.get(1).map(|s| s.explanation.as_str()),
        Some("4 allocations of 1.0KiB from train.py:3:leak allocated after timestep 4 in 4 iterations are still alive at the end (4.0KiB).")
    );
    assert!(
        top.explanation.contains("train.py:3:leak"),
        "{}",
        top.explanation
    );
    assert!(
        top.explanation.contains("1.0KiB per iteration"),
        "{}",
        top.explanation
    );
}

/// Without annotations the 90 % rule applies. Live bytes per timestep (see above): … ts 23 (L4)
/// 10240, ts 24 (K4) 12288, … ts 31 (L5) 11264, ts 32 (K5) 13312, …, ts 37 (Z) 11776 = final.
/// 90 % of 11776 is 10598.4; the last timestep below it is 23, so settled = 24. What is alive
/// at the end and made after it, K5 (2048, event 31), L5 (1024, event 30), Z (512, event 34),
/// is one allocation per stack: no evidence of repetition, no suspect.
#[test]
fn planted_without_annotations_uses_the_live_level() {
    let snap = load_path(&planted("leak_noann.pickle"));
    let (layout, r) = analyse(&snap, 0);
    assert_eq!(layout.live_at_step().get(23), Some(10240));
    assert_eq!(layout.live_at_step().last(), Some(11776));
    assert_eq!(r.settled_step, 24);
    assert!(r.settled_rule.contains("90%"), "{}", r.settled_rule);
    assert_eq!(r.suspects, []);
}

/// A device-0 trace of `events` (stack indices into `stacks`, one frame each of `/m/run.py`)
/// with no segments and no annotations.
fn trace_snapshot(names: &[&str], events: Vec<common::pickle::Event>) -> Snapshot {
    use common::pickle::{Entry, Snap};
    let stacks = names
        .iter()
        .enumerate()
        .map(|(i, n)| vec![(n.to_string(), "/m/run.py".to_string(), i as i64 + 1)])
        .collect();
    let snap = Snap {
        stacks,
        traces: vec![events.into_iter().map(Entry::New).collect()],
        ..Snap::default()
    };
    memviz_snapshot::load_slice(&snap.pickle()).expect("a snapshot")
}

const MB: u64 = 1 << 20;
const BASE: u64 = 0x7F00_0000_0000;

/// A one-step forward benchmark: 1 MiB of weights (one stack, in a loop), then 12 layers, each
/// allocating a temporary (512 KiB, freed in the layer, more than 10 % of the peak) and two
/// activations kept for a backward that never comes (96 KiB each, two stacks, in the layer
/// loop). Everything alive at the end is the benchmark's ordinary memory: no suspect, although
/// the activations were made after the level settled, by the same stacks, once per layer, with
/// the temporary's rise and fall between them. (The rule before this one flagged them.)
#[test]
fn one_step_forward_has_no_suspects() {
    use common::pickle::Event;
    let mut ev = Vec::new();
    let mut at = BASE;
    let mut alloc = |ev: &mut Vec<Event>, size: u64, stack: usize| {
        ev.push(Event::new("alloc", at, size).with_stack(stack));
        at += size;
        at - size
    };
    for _ in 0..8 {
        alloc(&mut ev, MB / 8, 0);
    }
    for _ in 0..12 {
        let t = alloc(&mut ev, 512 << 10, 1);
        alloc(&mut ev, 96 << 10, 2);
        ev.push(Event::new("free_requested", t, 512 << 10).with_stack(1));
        ev.push(Event::new("free_completed", t, 512 << 10).with_stack(1));
        alloc(&mut ev, 96 << 10, 3);
    }
    let snap = trace_snapshot(&["load_weight", "attention_scores", "proj", "mlp"], ev);
    let (_, r) = analyse(&snap, 0);
    assert!(r.settled_step > 0, "{}", r.settled_rule);
    assert_eq!(r.suspects, [], "{}", r.settled_rule);
}

/// Repeated steps without annotations: 1 MiB of weights, then 10 steps, each leaking 4 KiB
/// (stack `leak`) and then allocating and freeing 512 KiB of activations, then four small
/// allocations. The other stacks'
/// memory rises by 512 KiB (over 10 % of the peak) and falls back between two leaked
/// allocations: the steps are inferred, and the leak is named after its user frame.
#[test]
fn repeated_steps_without_annotations_are_inferred() {
    use common::pickle::Event;
    let mut ev = Vec::new();
    let mut at = BASE;
    ev.push(Event::new("alloc", at, MB).with_stack(0));
    at += MB;
    for _ in 0..10 {
        ev.push(Event::new("alloc", at, 4096).with_stack(1));
        at += 4096;
        ev.push(Event::new("alloc", at, 512 << 10).with_stack(2));
        ev.push(Event::new("free_requested", at, 512 << 10).with_stack(2));
        ev.push(Event::new("free_completed", at, 512 << 10).with_stack(2));
    }
    // A few small allocations after the last step, so that the final level is not the last
    // free's slide (SEMANTICS §3.4).
    for _ in 0..4 {
        ev.push(Event::new("alloc", at, 64).with_stack(0));
        at += 64;
    }
    let snap = trace_snapshot(&["init", "leak", "activations"], ev);
    let (_, r) = analyse(&snap, 0);
    let [s] = r.suspects.as_slice() else {
        panic!("one suspect: {:#?} ({})", r.suspects, r.settled_rule);
    };
    assert_eq!(s.kind, "alive_at_end");
    assert_eq!(s.stack, ["/m/run.py:2:leak"]);
    assert!(s.count >= 3, "{s:?}");
    assert_eq!(s.bytes, 4096 * s.count);
    assert!(
        s.explanation.contains("from run.py:2:leak ") && s.explanation.contains("repeated steps"),
        "{}",
        s.explanation
    );
}

/// A stack with no Python frame (autograd's backward thread) is named after its autograd node,
/// not after the dispatcher's `RegisterCUDA.cpp` or the allocator.
#[test]
fn cpp_only_stacks_are_named_after_the_autograd_node() {
    use common::pickle::{Entry, Event, Snap};
    let cpp = |name: &str, file: &str| (name.to_string(), file.to_string(), 0);
    let stack = vec![
        cpp(
            "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char)",
            "CUDACachingAllocator.cpp",
        ),
        cpp("at::detail::empty_cuda(c10::ArrayRef<long>)", "??"),
        cpp(
            "at::(anonymous namespace)::create_out(c10::ArrayRef<long>)",
            "RegisterCUDA.cpp",
        ),
        cpp(
            "at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)",
            "??",
        ),
        cpp(
            "torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)",
            "??",
        ),
        cpp("torch::autograd::Engine::thread_main()", "??"),
    ];
    let mut ev = vec![Event::new("alloc", BASE, MB).with_stack(1)];
    let mut at = BASE + MB;
    for _ in 0..10 {
        ev.push(Event::new("alloc", at, 4096).with_stack(0));
        at += 4096;
        ev.push(Event::new("alloc", at, 512 << 10).with_stack(1));
        ev.push(Event::new("free_requested", at, 512 << 10).with_stack(1));
        ev.push(Event::new("free_completed", at, 512 << 10).with_stack(1));
    }
    for _ in 0..4 {
        ev.push(Event::new("alloc", at, 64).with_stack(1));
        at += 64;
    }
    let snap = Snap {
        stacks: vec![stack, vec![cpp("step", "/m/run.py")]],
        traces: vec![ev.into_iter().map(Entry::New).collect()],
        ..Snap::default()
    };
    let snap = memviz_snapshot::load_slice(&snap.pickle()).expect("a snapshot");
    let (_, r) = analyse(&snap, 0);
    let s = r.suspects.first().expect("a suspect");
    assert!(
        s.explanation.contains("from backward of bmm "),
        "{}",
        s.explanation
    );
    assert!(!s.explanation.contains("RegisterCUDA"), "{}", s.explanation);
    assert_eq!(s.site.name, "BmmBackward0");
}

/// Pairing (file order; END closes the latest open START of its name) and placement (a
/// timestep belongs to a phase when its event's time is within [start, end]). Timestep times:
/// ts 0 T0, 1 +1000, 2 +2000 (free T: the request's event), 3 +4000, 4 +5000, 5 +6000,
/// 6 +7000, 7 +9000, 8 +10000, 9–12 +11000, 13 +13000, …, 31 +30000, 32 +31000, 33–36 +32000,
/// 37 +34000.
/// * Y: END without START at +3500 → (None, +3500), steps [0, 3)
/// * outer +500..+5500 → [1, 5); inner (nested) +1500..+2500 → [2, 3)
/// * X twice nested: the first END (+9500) closes the second START (+8500) → [7, 8); the second
///   END (+12500) closes the first (+6500) → [6, 13)
/// * Z: START at +30500 without END → [32, 38)
/// * "other" is on device 1.
#[test]
fn phase_pairing() {
    let snap = load_path(&planted("phases.pickle"));
    let (layout, _) = analyse(&snap, 0);
    let ph = phases(&snap, 0, &layout);
    let p = |name: &str, s: Option<i64>, e: Option<i64>, ss: u32, es: u32| Phase {
        name: name.to_string(),
        start_us: s.map(|x| T0 + x),
        end_us: e.map(|x| T0 + x),
        start_step: ss,
        end_step: es,
    };
    assert_eq!(
        ph,
        [
            p("Y", None, Some(3500), 0, 3),
            p("outer", Some(500), Some(5500), 1, 5),
            p("inner", Some(1500), Some(2500), 2, 3),
            p("X", Some(6500), Some(12500), 6, 13),
            p("X", Some(8500), Some(9500), 7, 8),
            p("Z", Some(30500), None, 32, 38),
        ]
    );
    assert!(iterations(&ph).is_empty());
    let other = phases(&snap, 1, &layout);
    assert_eq!(other.len(), 1);
    assert_eq!(other.first().map(|p| p.name.as_str()), Some("other"));
    assert_eq!(
        annotate_events(&snap, 0),
        [(35, 0x7F00_0000_0000 + 12288, "tag".to_string())]
    );
    assert!(annotate_events(&snap, 1).is_empty());
    assert!(annotate_events(&snap, 7).is_empty());
}

/// An `annotate` event is shown on the allocation it labels: event 35 annotates L1 (alloc at
/// event 4, never freed), so L1's tooltip ends with the annotation and a search for its text
/// finds L1 alone; the other allocations (among them L2, allocated after L1 at another
/// address) carry no annotation.
#[test]
fn annotate_event_on_its_allocation() {
    use memviz_analysis::search::{parse_query, search};
    use memviz_analysis::timeline::Origin;
    use memviz_present::tooltip::{tooltip, TooltipContext, ANNOTATED};
    let snap = load_path(&planted("phases.pickle"));
    let tl = timeline::build(&snap, 0);
    let layout = Layout::build(&tl, LayoutOptions::default());
    let ctx = TooltipContext::new(&snap, 0);
    let l1 = tl
        .elements
        .iter()
        .position(|e| e.origin == Origin::Alloc { event: 4 })
        .expect("L1") as u32;
    for e in 0..tl.elements.len() as u32 {
        let tip = tooltip(&snap, &ctx, &tl, &layout, e).expect("test value");
        let has = tip.details.iter().any(|d| d.starts_with(ANNOTATED));
        assert_eq!(has, e == l1, "element {e}: {:?}", tip.details);
        if e == l1 {
            let at = tip
                .details
                .iter()
                .position(|d| d.starts_with(ANNOTATED))
                .expect("test value");
            assert_eq!(
                tip.details[at..],
                [format!("{ANNOTATED} (event 35):"), "  tag".to_string()]
            );
            assert!(tip.text().contains("Annotated (event 35):\n  tag"));
        }
    }
    let r = search(&snap, 0, &tl, &parse_query("tag").expect("test value"));
    assert_eq!(r.elements, [l1]);
    // Without the annotate event nothing is annotated and nothing matches.
    let plain = load_path(&planted("leak.pickle"));
    let tl2 = timeline::build(&plain, 0);
    assert_eq!(
        search(&plain, 0, &tl2, &parse_query("tag").expect("test value")).count,
        0
    );
}

fn all_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = SMALL_FIXTURES.iter().map(|f| fixture(f)).collect();
    files.extend(
        [
            "hostile.pickle",
            "leak.pickle",
            "leak_noann.pickle",
            "phases.pickle",
        ]
        .iter()
        .map(|f| planted(f)),
    );
    files.extend(corpus_files());
    files
}

/// Never panics; suspects are well-formed and ordered, on every fixture (hostile included) and
/// corpus file, every device (and a device that does not exist).
#[test]
fn every_file_every_device() {
    for path in all_files() {
        let snap = load_path(&path);
        let mut devices = snap.devices();
        devices.push(99);
        devices.push(-1);
        for d in devices {
            let (layout, r) = analyse(&snap, d);
            let ctx = format!("{} device {d}", path.display());
            assert!(r.settled_step <= layout.step_count(), "{ctx}");
            assert!(!r.settled_rule.is_empty());
            let mut seen_alive = false;
            for s in &r.suspects {
                assert!(s.bytes > 0 && s.count > 0, "{ctx}: {s:?}");
                assert!(s.explanation.ends_with('.') && !s.explanation.contains('\n'));
                match s.kind {
                    "iteration_growth" => {
                        assert!(!seen_alive, "{ctx}: growth suspects come first");
                        assert!(s.growth_per_iteration.is_some_and(|g| g > 0.0), "{ctx}");
                    }
                    "alive_at_end" => {
                        seen_alive = true;
                        assert_eq!(s.growth_per_iteration, None);
                    }
                    k => panic!("{ctx}: kind {k}"),
                }
            }
            let alive: Vec<u64> = r
                .suspects
                .iter()
                .filter(|s| s.kind == "alive_at_end")
                .map(|s| s.bytes)
                .collect();
            assert!(alive.windows(2).all(|w| w[0] >= w[1]), "{ctx}");
            let ph = phases(&snap, d, &layout);
            for p in &ph {
                assert!(p.start_step <= p.end_step && p.end_step <= layout.step_count());
            }
            let _ = annotate_events(&snap, d);
        }
    }
}

#[test]
fn cli_json_and_table() {
    let f = path_str(&planted("leak.pickle"));
    let (code, out, err) = memviz(&["leaks", &f, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(v["device"], 0);
    assert_eq!(v["settled_step"], 4);
    let s0 = &v["suspects"][0];
    assert_eq!(s0["kind"], "iteration_growth");
    assert_eq!(s0["stack"], serde_json::json!(["/m/train.py:3:leak"]));
    assert_eq!(s0["bytes"], 5120);
    assert_eq!(s0["count"], 5);
    assert_eq!(s0["growth_per_iteration"], 1024.0);
    assert_eq!(s0["first_event"], 9);
    assert!(s0["explanation"].is_string());
    // Its site, in the shape `memviz oom --json` and `memviz diff --json` write one.
    assert_eq!(
        s0["site"],
        serde_json::json!({"kind": "user", "file": "/m/train.py", "line": 3, "name": "leak",
            "label": "train.py:3:leak", "detail": null})
    );
    assert_eq!(
        v["suspects"][1]["growth_per_iteration"],
        serde_json::Value::Null
    );
    assert_eq!(v["suspects"].as_array().map(Vec::len), Some(2));
    let (code, out, err) = memviz(&["leaks", &f, "--device", "0"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("[iteration_growth]"), "{out}");
    assert!(out.contains("/m/train.py:3:leak"), "{out}");
    // The default device is the longest trace: device 1 of multidevice.pickle, if it is.
    let multi = fixture("multidevice.pickle");
    let snap = load_path(&multi);
    let longest = (0..snap.traces.len())
        .max_by_key(|&i| {
            (
                snap.traces.get(i).map_or(0, |t| t.len()),
                std::cmp::Reverse(i),
            )
        })
        .unwrap_or(0);
    let (code, out, err) = memviz(&["leaks", &path_str(&multi), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(v["device"], longest as i64);
}

#[test]
fn cli_errors_exit_2_with_one_line() {
    let f = path_str(&planted("leak.pickle"));
    let missing = path_str(&planted("missing.pickle"));
    let cases: Vec<Vec<&str>> = vec![
        vec!["leaks"],
        vec!["leaks", &f, &f],
        vec!["leaks", &missing],
        vec!["leaks", &missing, "--json"],
        vec!["leaks", &f, "--bogus"],
        vec!["leaks", &f, "--device", "zero"],
        vec!["leaks", &f, "--device"],
    ];
    for args in cases {
        let (code, out, err) = memviz(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("memviz: "), "{err}");
        assert!(out.is_empty(), "{args:?}: {out}");
    }
    // Hostile input is not an error; an absent device is, as in every command taking
    // `--device` (one rule: the CLI's `device.rs`).
    let hostile = path_str(&planted("hostile.pickle"));
    for args in [
        vec!["leaks", hostile.as_str()],
        vec!["leaks", hostile.as_str(), "--json"],
    ] {
        let (code, _, err) = memviz(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    let (code, _, err) = memviz(&["leaks", hostile.as_str(), "--device", "5", "--json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no device 5 (devices: 0)"), "{err}");
}

/// Timing on the 150 MB synthetic snapshot (release): `cargo test --release -p memviz-cli
/// --test cli leaks:: -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_leaks_150mb() {
    let path = repo_root().join("target/bench/snap_150mb.pickle");
    if !path.exists() {
        eprintln!("note: {} missing; skipped", path.display());
        return;
    }
    let snap = load_path(&path);
    let t0 = std::time::Instant::now();
    let t = timeline::build(&snap, 0);
    let t1 = std::time::Instant::now();
    let layout = Layout::build(
        &t,
        LayoutOptions {
            mode: memviz_present::layout::PointMode::Compact,
            ..LayoutOptions::default()
        },
    );
    let t2 = std::time::Instant::now();
    let mut best = f64::INFINITY;
    let mut r = LeakReport::default();
    for _ in 0..3 {
        let s = std::time::Instant::now();
        r = leaks(&snap, 0, &t, &layout);
        best = best.min(s.elapsed().as_secs_f64());
    }
    let ph = phases(&snap, 0, &layout);
    eprintln!(
        "leaks 150 MB: timeline {:.1} ms, layout (compact) {:.1} ms, leaks best of 3 {:.1} ms; \
         {} phases, {} iterations, settled {} ({}), {} suspects",
        (t1 - t0).as_secs_f64() * 1e3,
        (t2 - t1).as_secs_f64() * 1e3,
        best * 1e3,
        ph.len(),
        iterations(&ph).len(),
        r.settled_step,
        r.settled_rule,
        r.suspects.len()
    );
    assert!(best < 1.0);
    assert!((t2 - t0).as_secs_f64() + best < 1.0);
}
