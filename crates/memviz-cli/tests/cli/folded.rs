//! The memory flamegraph (`memviz_analysis::flame`, `memviz folded`): the SEMANTICS §3.6 vector
//! (as generated, and a copy with frames) at the peak, at timesteps and after events, lifetime
//! mode, the frame filter, the tree (zoom, breadcrumb, hit, rects, tooltips), the CLI's output
//! and exit codes, hostile names, the real corpus, and (ignored) timings on big traces.

use crate::common;
use common::*;
use memviz_analysis::flame::{
    self, At, FlameOptions, FlameTree, FoldedEntry, FrameMode, ValueUnit, ALL_FILTERED, NO_FRAMES,
};
use memviz_present::layout::{Layout, LayoutOptions};
use memviz_analysis::summary::summarize;
use memviz_analysis::timeline;
use memviz_snapshot::Snapshot;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::Instant;

use common::{loaded_snapshot as dev, Loaded as Dev};

fn fold(d: &Dev, device: i64, at: At, opts: &FlameOptions) -> Vec<FoldedEntry> {
    flame::folded(&d.snap, device, &d.tl, &d.layout, at, opts)
}

fn filtered() -> FlameOptions {
    FlameOptions::default()
}
fn all_frames() -> FlameOptions {
    FlameOptions {
        frames: FrameMode::All,
        ..FlameOptions::default()
    }
}
fn lifetime(range: Option<(u32, u32)>) -> FlameOptions {
    FlameOptions {
        lifetime: true,
        step_range: range,
        ..FlameOptions::default()
    }
}

fn entry(frames: &[&str], v: u64) -> FoldedEntry {
    (frames.iter().map(|s| s.to_string()).collect(), v)
}

use common::memviz_output as memviz;

// ---------------------------------------------------------------------------------------------
// §3.6 vector, as generated (no frames)
// ---------------------------------------------------------------------------------------------

/// SEMANTICS §3.6: elements 0 = unmatched free @A+50 (5), 1 = x (20), 2 = y (25), 3 = z (3),
/// 4 = ghost @A (10). Timesteps: 0 free e0 (on top, no slide), 1 alloc x, 2 alloc y, 3 free x
/// (y above: slide 4..6), 7 alloc z, 8 free z; max_at_time = [15,30,55,55,55,55,55,38,38].
/// Trace indices: 0/1 free pair e0, 2 alloc x, 3 alloc y, 4/5 free pair x, 6 alloc z, 7/8 free
/// pair z; a merged pair frees at its request.
#[test]
fn vector_without_frames() {
    let d = dev(load_path(&fixture("vector.pickle")), 0);
    let nf = |v: u64| vec![entry(&[NO_FRAMES], v)];
    // Peak: step 2, ghost 10 + x 20 + y 25.
    assert_eq!(d.layout.peak_step, 2);
    assert_eq!(fold(&d, 0, At::Peak, &filtered()), nf(55));
    // Every timestep: the plot's live bytes (the freed x still counts during its slide, 3..6).
    let live = [15u64, 30, 55, 55, 55, 55, 55, 38, 38];
    for (s, &v) in live.iter().enumerate() {
        assert_eq!(
            fold(&d, 0, At::Step(s as u32), &filtered()),
            nf(v),
            "step {s}"
        );
    }
    assert!(fold(&d, 0, At::Step(9), &filtered()).is_empty());
    // After each event: 0 frees e0 → 10; 1 (merged, nothing) 10; 2 +x 30; 3 +y 55; 4 −x 35;
    // 5 35; 6 +z 38; 7 −z 35; 8 35 (= final live bytes: ghost + y).
    let after = [10u64, 10, 30, 55, 35, 35, 38, 35, 35];
    for (k, &v) in after.iter().enumerate() {
        assert_eq!(
            fold(&d, 0, At::Event(k as u32), &filtered()),
            nf(v),
            "event {k}"
        );
    }
    assert!(fold(&d, 0, At::Event(9), &filtered()).is_empty());
    // Lifetime = Σ max_at_time = 15 + 30 + 5·55 + 2·38 = 396.
    assert_eq!(fold(&d, 0, At::Peak, &lifetime(None)), nf(396));
    assert_eq!(fold(&d, 0, At::Peak, &lifetime(Some((2, 7)))), nf(5 * 55));
    assert_eq!(fold(&d, 0, At::Peak, &lifetime(Some((7, 100)))), nf(76));
    assert!(fold(&d, 0, At::Peak, &lifetime(Some((5, 5)))).is_empty());
    // A device with nothing.
    let d = dev(d.snap, 3);
    assert!(fold(&d, 3, At::Peak, &filtered()).is_empty());
    assert!(fold(&d, 3, At::Peak, &lifetime(None)).is_empty());
}

/// `resolve`: where an event is drawn. step_event = [0,2,3,4,4,4,4,6,7].
#[test]
fn vector_resolve() {
    let d = dev(load_path(&fixture("vector.pickle")), 0);
    assert_eq!(d.layout.step_event(), vec![0, 2, 3, 4, 4, 4, 4, 6, 7]);
    let step = |at| flame::resolve(&d.layout, 9, at).map(|m| m.step);
    assert_eq!(step(At::Peak), Ok(2));
    assert_eq!(step(At::Step(8)), Ok(8));
    assert!(step(At::Step(9)).is_err());
    assert_eq!(step(At::Event(0)), Ok(0));
    assert_eq!(step(At::Event(1)), Ok(0));
    assert_eq!(step(At::Event(3)), Ok(2));
    // The free of x and its slide: the last timestep drawn for events ≤ 4 is 6.
    assert_eq!(step(At::Event(4)), Ok(6));
    assert_eq!(step(At::Event(5)), Ok(6));
    assert_eq!(step(At::Event(8)), Ok(8));
    let e = step(At::Event(9)).expect_err("out of range").to_string();
    assert_eq!(
        e,
        "event 9 out of range: the device's trace has 9 events (0 to 8)"
    );
    let e = step(At::Step(9)).expect_err("out of range").to_string();
    assert_eq!(e, "timestep 9 out of range: the timeline has 9 timesteps");
}

// ---------------------------------------------------------------------------------------------
// §3.6 vector with frames
// ---------------------------------------------------------------------------------------------

/// Frames (innermost first in the file) for the §3.6 vector:
/// * e0 (the unmatched free @A+50): `Python/ceval.c:1:_PyEval_EvalFrameDefault`, filtered out
///   entirely by memory_viz's filter (filename contains `ceval.c`, name `PyEval_`);
/// * x: `layer.py:20:forward` ← `main.py:1:main`;
/// * y: `layer.py:30:back;ward⏎next` ← `main.py:1:main` (a `;` and a newline in a name);
/// * z: `Python/ceval.c:100:PyEval_EvalFrame` ← `layer.py:20:forward` ← `main.py:1:main`
///   (filtered, the same stack as x);
/// * the ghost block @A: `model.py:10:init` ← `main.py:1:main`.
const FRAMED_VECTOR: &str = r#"
import pickle, sys
A = 0x10000000
def fr(*t): return [{"filename": f, "line": l, "name": n} for f, l, n in t]
MAIN = ("main.py", 1, "main")
E0 = fr(("Python/ceval.c", 1, "_PyEval_EvalFrameDefault"))
X = fr(("layer.py", 20, "forward"), MAIN)
Y = fr(("layer.py", 30, "back;ward\nnext"), MAIN)
Z = fr(("Python/ceval.c", 100, "PyEval_EvalFrame"), ("layer.py", 20, "forward"), MAIN)
G = fr(("model.py", 10, "init"), MAIN)
blocks = [
    {"size": 10, "requested_size": 10, "state": "active_allocated", "frames": G},
    {"size": 20, "requested_size": 0, "state": "inactive", "frames": []},
    {"size": 30, "requested_size": 25, "state": "active_allocated", "frames": Y},
    {"size": 40, "requested_size": 0, "state": "inactive", "frames": []},
]
seg = {"device": 0, "address": A, "total_size": 100, "allocated_size": 40, "active_size": 40,
       "requested_size": 35, "stream": 0, "segment_type": "small", "segment_pool_id": (0, 0),
       "is_expandable": False, "frames": [], "blocks": blocks}
def ev(a, addr, size, frames):
    return {"action": a, "addr": addr, "size": size, "stream": 0, "frames": frames}
trace = [
    ev("free_requested", A + 50, 5, E0), ev("free_completed", A + 50, 5, E0),
    ev("alloc", A + 10, 20, X),
    ev("alloc", A + 30, 25, Y),
    ev("free_requested", A + 10, 20, X), ev("free_completed", A + 10, 20, X),
    ev("alloc", A + 60, 3, Z),
    ev("free_requested", A + 60, 3, Z), ev("free_completed", A + 60, 3, Z),
]
with open(sys.argv[1], "wb") as f:
    pickle.dump({"segments": [seg], "device_traces": [trace]}, f, protocol=4)
"#;

fn python_fixture(name: &str, script: &str) -> PathBuf {
    let out = fixtures_dir().join(name);
    python_c(script, &out, &format!("{name} script failed"));
    out
}

fn framed_vector() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| python_fixture("framed_vector.pickle", FRAMED_VECTOR))
        .clone()
}

const MAIN: &str = "main.py:1:main";
const FWD: &str = "layer.py:20:forward";
const BWD: &str = "layer.py:30:back;ward\nnext";
const INIT: &str = "model.py:10:init";
const CEVAL_E0: &str = "Python/ceval.c:1:_PyEval_EvalFrameDefault";
const CEVAL_Z: &str = "Python/ceval.c:100:PyEval_EvalFrame";

#[test]
fn framed_vector_moments() {
    let d = dev(load_path(&framed_vector()), 0);
    // Peak (step 2): ghost 10, x 20, y 25; sorted by stack: "layer.py:20" < "layer.py:30" <
    // "model.py" after the common root.
    let peak = vec![
        entry(&[MAIN, FWD], 20),
        entry(&[MAIN, BWD], 25),
        entry(&[MAIN, INIT], 10),
    ];
    assert_eq!(fold(&d, 0, At::Peak, &filtered()), peak);
    assert_eq!(fold(&d, 0, At::Peak, &all_frames()), peak);
    // Step 0: ghost 10 + e0 5 (its only frame filtered out).
    assert_eq!(
        fold(&d, 0, At::Step(0), &filtered()),
        vec![entry(&[ALL_FILTERED], 5), entry(&[MAIN, INIT], 10)]
    );
    assert_eq!(
        fold(&d, 0, At::Step(0), &all_frames()),
        vec![entry(&[CEVAL_E0], 5), entry(&[MAIN, INIT], 10)]
    );
    // Step 4 (x sliding away): still ghost, x, y.
    assert_eq!(fold(&d, 0, At::Step(4), &filtered()), peak);
    // Step 7 (z allocated): ghost 10, y 25, z 3; filtered z is x's stack.
    assert_eq!(
        fold(&d, 0, At::Step(7), &filtered()),
        vec![
            entry(&[MAIN, FWD], 3),
            entry(&[MAIN, BWD], 25),
            entry(&[MAIN, INIT], 10)
        ]
    );
    assert_eq!(
        fold(&d, 0, At::Step(7), &all_frames()),
        vec![
            entry(&[MAIN, FWD, CEVAL_Z], 3),
            entry(&[MAIN, BWD], 25),
            entry(&[MAIN, INIT], 10)
        ]
    );
    // After event 4 (x's free request, merged): ghost and y only.
    assert_eq!(
        fold(&d, 0, At::Event(4), &filtered()),
        vec![entry(&[MAIN, BWD], 25), entry(&[MAIN, INIT], 10)]
    );
}

/// Lifetimes in timesteps (span, plus 3 for a free that slid): ghost [0,9) 9·10 = 90,
/// e0 [0,1) 5, x [1,4)+3 6·20 = 120, y [2,9) 7·25 = 175, z [7,9) 2·3 = 6; Σ 396 = Σ max_at_time.
#[test]
fn framed_vector_lifetime() {
    let d = dev(load_path(&framed_vector()), 0);
    let whole = fold(&d, 0, At::Peak, &lifetime(None));
    assert_eq!(
        whole,
        vec![
            entry(&[ALL_FILTERED], 5),
            entry(&[MAIN, FWD], 120 + 6), // x and z merge once ceval is dropped
            entry(&[MAIN, BWD], 175),
            entry(&[MAIN, INIT], 90),
        ]
    );
    assert_eq!(flame::total(&whole), 396);
    let all = fold(
        &d,
        0,
        At::Peak,
        &FlameOptions {
            frames: FrameMode::All,
            lifetime: true,
            ..FlameOptions::default()
        },
    );
    assert_eq!(
        all,
        vec![
            entry(&[CEVAL_E0], 5),
            entry(&[MAIN, FWD], 120),
            entry(&[MAIN, FWD, CEVAL_Z], 6),
            entry(&[MAIN, BWD], 175),
            entry(&[MAIN, INIT], 90),
        ]
    );
    // Window [2, 7): ghost 5·10, x 5·20 (steps 2..6, slide included), y 5·25; e0 and z outside.
    assert_eq!(
        fold(&d, 0, At::Peak, &lifetime(Some((2, 7)))),
        vec![
            entry(&[MAIN, FWD], 100),
            entry(&[MAIN, BWD], 125),
            entry(&[MAIN, INIT], 50),
        ]
    );
}

#[test]
fn folded_text_format() {
    let d = dev(load_path(&framed_vector()), 0);
    let text = flame::folded_text(&fold(&d, 0, At::Peak, &filtered()));
    // `;` → U+FF1B, newline → space; one line per stack, sorted.
    assert_eq!(
        text,
        "main.py:1:main;layer.py:20:forward 20\n\
         main.py:1:main;layer.py:30:back\u{FF1B}ward next 25\n\
         main.py:1:main;model.py:10:init 10\n"
    );
    // Stacks equal after escaping merge; an empty stack prints <no frames>.
    let t = flame::folded_text(&[
        entry(&["a;b"], 1),
        entry(&["a\u{FF1B}b"], 2),
        entry(&[], 4),
        entry(&["x\r\ny", "z"], u64::MAX),
    ]);
    assert_eq!(
        t,
        format!("<no frames> 4\na\u{FF1B}b 3\nx  y;z {}\n", u64::MAX)
    );
    assert_eq!(flame::folded_text(&[]), "");
}

// ---------------------------------------------------------------------------------------------
// The tree
// ---------------------------------------------------------------------------------------------

/// Stacks a;b 3, a;c 5, a 2, d 1 (total 11). Root children by descending total: a [0,10),
/// d [10,11); a's: c [0,5), b [5,8), then a's self 2 as the gap [8,10).
#[test]
fn tree_zoom_breadcrumb_hit() {
    let t = FlameTree::build(
        &[
            entry(&["a", "b"], 3),
            entry(&["a", "c"], 5),
            entry(&["a"], 2),
            entry(&["d"], 1),
        ],
        ValueUnit::Bytes,
    );
    let id = |name: &str| t.nodes.iter().position(|n| n.name == name).expect("node") as u32;
    let (a, b, c, dd) = (id("a"), id("b"), id("c"), id("d"));
    assert_eq!(t.root().name, "all");
    assert_eq!((t.root().total, t.root().self_value), (11, 0));
    assert_eq!(t.root().children, vec![a, dd]);
    assert_eq!(t.nodes[a as usize].children, vec![c, b]);
    let n = |i: u32| &t.nodes[i as usize];
    assert_eq!(
        (n(a).x0, n(a).total, n(a).self_value, n(a).depth),
        (0, 10, 2, 1)
    );
    assert_eq!((n(dd).x0, n(dd).total), (10, 1));
    assert_eq!((n(c).x0, n(c).total, n(c).depth), (0, 5, 2));
    assert_eq!((n(b).x0, n(b).total, n(b).parent), (5, 3, Some(a)));
    // Every node: total = self + Σ children.
    for x in &t.nodes {
        let sum: u64 = x.children.iter().map(|&c| t.nodes[c as usize].total).sum();
        assert_eq!(x.total, x.self_value + sum);
    }
    // Rects of the whole tree (root = [0, 1)).
    let r = t.rects(0);
    let rect = |node: u32| *r.iter().find(|x| x.node == node).expect("rect");
    assert_eq!((rect(0).x0, rect(0).x1, rect(0).depth), (0.0, 1.0, 0));
    assert_eq!(
        (rect(a).x0, rect(a).x1, rect(a).depth),
        (0.0, 10.0 / 11.0, 1)
    );
    assert_eq!(
        (rect(b).x0, rect(b).x1, rect(b).depth),
        (5.0 / 11.0, 8.0 / 11.0, 2)
    );
    assert_eq!((rect(dd).x0, rect(dd).x1), (10.0 / 11.0, 1.0));
    assert_eq!(r.len(), 5);
    assert_eq!(rect(b).color_hash, flame::color_hash("b"));
    // Hit: x 0.5 → 5.5 bytes: b at depth 2; 8.25 bytes is a's self gap; d at depth 1.
    assert_eq!(t.hit(0.0, 0), Some(0));
    assert_eq!(t.hit(0.5, 1), Some(a));
    assert_eq!(t.hit(0.5, 2), Some(b));
    assert_eq!(t.hit(0.2, 2), Some(c));
    assert_eq!(t.hit(0.75, 2), None);
    assert_eq!(t.hit(0.95, 1), Some(dd));
    assert_eq!(t.hit(0.95, 2), None);
    assert_eq!(t.hit(0.5, 3), None);
    assert_eq!(t.hit(1.0, 0), None);
    assert_eq!(t.hit(-0.1, 0), None);
    assert_eq!(t.hit(f64::NAN, 0), None);
    // Breadcrumb.
    assert_eq!(t.breadcrumb(b), vec![0, a, b]);
    assert_eq!(t.breadcrumb(0), vec![0]);
    assert!(t.breadcrumb(999).is_empty());
    // Zoom on a: a becomes the full-width root; c [0, .5), b [.5, .8), gap [.8, 1).
    let z = t.zoom(a).expect("zoom");
    assert_eq!(z.root().name, "a");
    assert_eq!((z.root().total, z.root().depth, z.root().x0), (10, 0, 0));
    assert_eq!(z.root().parent, None);
    assert_eq!(z.root().origin, a);
    assert_eq!(z.grand_total, 11);
    let zr = z.rects(0);
    let zb = zr
        .iter()
        .find(|x| z.nodes[x.node as usize].origin == b)
        .expect("b");
    assert_eq!((zb.x0, zb.x1, zb.depth), (0.5, 0.8, 1));
    let zb_id = zb.node;
    assert_eq!(z.hit(0.6, 1), Some(zb_id));
    assert_eq!(z.hit(0.85, 1), None);
    assert_eq!(z.hit(0.85, 0), Some(0));
    assert_eq!(z.breadcrumb(zb_id), vec![0, zb_id]);
    // Same geometry as rects(a) / hit_in(a) of the unzoomed tree.
    let ra = t.rects(a);
    assert_eq!(ra.len(), zr.len());
    for (x, y) in ra.iter().zip(&zr) {
        assert_eq!((x.x0, x.x1, x.depth), (y.x0, y.x1, y.depth));
        assert_eq!(x.node, z.nodes[y.node as usize].origin);
    }
    assert_eq!(t.hit_in(a, 0.6, 1), Some(b));
    assert!(t.zoom(999).is_none());
    // Zoom of a zoom keeps the original ids.
    let zz = z.zoom(zb_id).expect("zoom");
    assert_eq!((zz.nodes.len(), zz.root().origin), (1, b));
    // Tooltips: share of the unzoomed total.
    assert_eq!(
        z.tooltip(zb_id).expect("tip"),
        "b\n3.0B (3 bytes) (27.27% of total)\nself: 3.0B (3 bytes)"
    );
    let j = t.node_json(a).expect("json");
    assert_eq!(j["name"], "a");
    assert_eq!(j["value"], 10);
    assert_eq!(j["value_text"], "10.0B (10 bytes)");
    assert_eq!(j["self_value"], 2);
    assert_eq!(j["share_text"], "90.91%");
    assert_eq!(j["children"], 2);
    assert_eq!(j["unit"], "bytes");
    assert!(t.node_json(999).is_none());
    let l = FlameTree::build(&[entry(&["a"], 1234)], ValueUnit::ByteSteps);
    assert_eq!(
        l.node_json(1).expect("json")["value_text"],
        "1,234 byte·steps"
    );
    // Empty tree: only the root, zero width everywhere.
    let e = FlameTree::build(&[], ValueUnit::Bytes);
    assert_eq!(e.nodes.len(), 1);
    assert_eq!(e.hit(0.5, 0), None);
    assert_eq!(e.rects(0).len(), 1);
    assert_eq!(e.share(0), 0.0);
    // Saturating totals.
    let s = FlameTree::build(
        &[entry(&["a"], u64::MAX), entry(&["b"], u64::MAX)],
        ValueUnit::Bytes,
    );
    assert_eq!(s.root().total, u64::MAX);
}

#[test]
fn framed_vector_tree() {
    let d = dev(load_path(&framed_vector()), 0);
    let t = FlameTree::build(&fold(&d, 0, At::Peak, &filtered()), ValueUnit::Bytes);
    // all 55 → main 55 → {backward 25, forward 20, init 10}.
    assert_eq!(t.root().total, 55);
    let main = t.root().children[0];
    assert_eq!(t.nodes[main as usize].name, MAIN);
    let kids: Vec<(&str, u64, u64)> = t.nodes[main as usize]
        .children
        .iter()
        .map(|&c| {
            let n = &t.nodes[c as usize];
            (n.name.as_str(), n.total, n.x0)
        })
        .collect();
    assert_eq!(kids, vec![(BWD, 25, 0), (FWD, 20, 25), (INIT, 10, 45)]);
    assert_eq!(
        t.hit(30.0 / 55.0, 2)
            .map(|n| t.nodes[n as usize].name.as_str()),
        Some(FWD)
    );
}

// ---------------------------------------------------------------------------------------------
// CLI
// ---------------------------------------------------------------------------------------------

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn cli_output() {
    let p = framed_vector();
    let f = p.to_str().expect("utf8 path");
    let o = memviz(&["folded", f]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "main.py:1:main;layer.py:20:forward 20\n\
         main.py:1:main;layer.py:30:back\u{FF1B}ward next 25\n\
         main.py:1:main;model.py:10:init 10\n"
    );
    assert_eq!(stdout(&memviz(&["folded", f, "--at", "peak"])), stdout(&o));
    // After event 6 (z allocated), all frames: ghost, y, z with the ceval frame.
    let o = memviz(&["folded", "--all-frames", f, "--at", "6", "--device", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "main.py:1:main;layer.py:20:forward;Python/ceval.c:100:PyEval_EvalFrame 3\n\
         main.py:1:main;layer.py:30:back\u{FF1B}ward next 25\n\
         main.py:1:main;model.py:10:init 10\n"
    );
    let o = memviz(&["folded", f, "--lifetime"]);
    assert_eq!(
        stdout(&o),
        "<all frames filtered> 5\n\
         main.py:1:main;layer.py:20:forward 126\n\
         main.py:1:main;layer.py:30:back\u{FF1B}ward next 175\n\
         main.py:1:main;model.py:10:init 90\n"
    );
    // JSON: frames unescaped, root first.
    let o = memviz(&["folded", f, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["device"], 0);
    assert_eq!(v["at_step"], 2);
    assert_eq!(v["total_bytes"], 55);
    assert_eq!(v["stacks"].as_array().map(Vec::len), Some(3));
    assert_eq!(v["stacks"][1]["frames"], serde_json::json!([MAIN, BWD]));
    assert_eq!(v["stacks"][1]["bytes"], 25);
    let v: serde_json::Value =
        serde_json::from_slice(&memviz(&["folded", f, "--json", "--at", "4"]).stdout)
            .expect("json");
    assert_eq!(
        (v["at_step"].clone(), v["total_bytes"].clone()),
        (6.into(), 35.into())
    );
    let v: serde_json::Value =
        serde_json::from_slice(&memviz(&["folded", f, "--json", "--lifetime"]).stdout)
            .expect("json");
    assert!(v["at_step"].is_null());
    assert_eq!(v["total_bytes"], 396);
}

#[test]
fn cli_errors() {
    let p = framed_vector();
    let f = p.to_str().expect("utf8 path");
    for args in [
        vec!["folded", f, "--at", "9"],
        vec!["folded", f, "--at", "-1"],
        vec!["folded", f, "--at", "x"],
        vec!["folded", f, "--at"],
        vec!["folded", f, "--bogus"],
        vec!["folded", f, "--device", "7"],
        vec!["folded", f, "--device", "zero"],
        vec!["folded", f, "--lifetime", "--at", "3"],
        vec!["folded", f, "--range", "7:2"],
        vec!["folded", f, "--range", "2"],
        vec!["folded", f, "--range", "2:7", "--at", "3"],
        vec!["folded", f, "--range", "2:7", "--phase", "x"],
        vec!["folded", f, "--phase", "no such phase"],
        vec!["folded"],
        vec!["folded", f, f],
        vec!["folded", "/nonexistent/x.pickle"],
    ] {
        let o = memviz(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(e.starts_with("memviz: "), "{args:?}: {e}");
    }
    let e = stderr(&memviz(&["folded", f, "--at", "9"]));
    assert!(e.contains("event 9") && e.contains("0 to 8"), "{e}");
}

/// `--range FROM:TO` is bytes × lifetime within those timesteps (the window of
/// `framed_vector_lifetime`, by hand), and `--phase NAME` within that phase's steps.
#[test]
fn cli_time_ranges() {
    let p = framed_vector();
    let f = p.to_str().expect("utf8 path");
    let o = memviz(&["folded", f, "--range", "2:7", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(v["total_bytes"], 100 + 125 + 50);
    assert_eq!(v["lifetime"], true);
    assert_eq!(v["step_range"], serde_json::json!([2, 7]));
    // Phases: the planted ProfilerStep#k of leaks.rs's fixture is not here; use a generated
    // fixture with phases and compare with the analysis.
    let fx = fixture("proto5.pickle");
    let snap = load_path(&fx);
    let device = snap.default_device();
    let d = dev(snap, device);
    let phases = memviz_analysis::annotations::phases(&d.snap, device, &d.layout);
    let first = phases.first().expect("proto5.pickle has phases");
    let want = flame::total(&fold(
        &d,
        device,
        At::Peak,
        &lifetime(Some((first.start_step, first.end_step))),
    ));
    let o = memviz(&["folded", &path_str(&fx), "--phase", &first.name, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(v["total_bytes"].as_u64(), Some(want));
    assert_eq!(
        v["step_range"],
        serde_json::json!([first.start_step, first.end_step])
    );
    let area: u64 = d
        .layout
        .live_at_step()
        .range(first.start_step as usize, first.end_step as usize)
        .sum();
    assert_eq!(want, area, "the area under the outline over the phase");
}

/// The default device is the longest trace (first on ties), as in the viewer.
#[test]
fn cli_default_device() {
    let p = fixture("multidevice.pickle");
    let snap = load_path(&p);
    let lens: Vec<usize> = snap.traces.iter().map(|t| t.len()).collect();
    let max = lens.iter().copied().max().unwrap_or(0);
    let want = lens.iter().position(|&l| l == max).unwrap_or(0) as i64;
    let o = memviz(&["folded", p.to_str().expect("utf8"), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["device"], want, "trace lengths {lens:?}");
    let s = summarize(&snap);
    let peak = s
        .devices
        .iter()
        .find(|d| d.device == want)
        .map_or(0, |d| d.peak_live_bytes);
    assert_eq!(v["total_bytes"], peak);
}

// ---------------------------------------------------------------------------------------------
// Hostile names and robustness
// ---------------------------------------------------------------------------------------------

/// Frame names and filenames with `;`, newlines, CR, tabs, NUL, markup and non-ASCII, plus
/// sizes near u64::MAX: the library never panics, every folded line is `frames value` with the
/// right number of `;`-separated frames.
const NASTY: &str = r#"
import pickle, sys
def fr(*t): return [{"filename": f, "line": l, "name": n} for f, l, n in t]
S1 = fr(("a;b.py", 1, "f;g\nh"), ("<b>x</b>\r\n", -5, "\x00\t;;"))
S2 = fr(("é;\u2028.py", 2**62, "naïve;\n"), ("", 0, ""))
S3 = fr(("x.py", 3, " 42"))
big = 2**64 - 1
trace = [
    {"action": "alloc", "addr": 16, "size": big, "stream": 0, "frames": S1},
    {"action": "alloc", "addr": 32, "size": big, "stream": 0, "frames": S2},
    {"action": "alloc", "addr": 48, "size": 7, "stream": 0, "frames": S3},
    {"action": "free_completed", "addr": 16, "size": big, "stream": 0, "frames": S1},
    {"action": "free_completed", "addr": 999, "size": 3, "stream": 0, "frames": S2},
]
with open(sys.argv[1], "wb") as f:
    pickle.dump({"segments": [], "device_traces": [trace]}, f, protocol=4)
"#;

fn check_lines(name: &str, entries: &[FoldedEntry]) {
    let text = flame::folded_text(entries);
    let merged: std::collections::BTreeSet<String> = entries
        .iter()
        .map(|(f, _)| {
            f.iter()
                .map(|x| flame::escape_frame(x))
                .collect::<Vec<_>>()
                .join(";")
        })
        .collect();
    assert_eq!(text.lines().count(), merged.len(), "{name}");
    for line in text.lines() {
        let (stack, value) = line.rsplit_once(' ').expect("space");
        assert!(value.parse::<u64>().is_ok(), "{name}: {line:?}");
        assert!(!stack.is_empty(), "{name}: {line:?}");
        assert!(!line.chars().any(char::is_control), "{name}: {line:?}");
    }
    for (f, _) in entries {
        for x in f {
            assert_eq!(
                flame::escape_frame(x).split(';').count(),
                1,
                "{name}: {x:?}"
            );
        }
    }
}

#[test]
fn hostile_names_keep_the_format() {
    let p = python_fixture("folded_nasty.pickle", NASTY);
    let d = dev(load_path(&p), 0);
    for at in [
        At::Peak,
        At::Step(0),
        At::Step(1),
        At::Step(2),
        At::Event(4),
    ] {
        for opts in [filtered(), all_frames(), lifetime(None)] {
            let e = fold(&d, 0, at, &opts);
            check_lines("nasty", &e);
            let t = FlameTree::build(&e, ValueUnit::Bytes);
            assert_eq!(t.root().total, flame::total(&e));
            for n in 0..t.nodes.len() as u32 {
                let _ = t.tooltip(n);
                let _ = t.node_json(n);
                let _ = t.zoom(n);
            }
        }
    }
    // Peak = step 0: the unmatched free (3) + the first u64::MAX alloc, saturated.
    let e = fold(&d, 0, At::Peak, &all_frames());
    assert_eq!(d.layout.peak_step, 0);
    assert_eq!(flame::total(&e), u64::MAX);
    assert_eq!(flame::total(&e), d.layout.peak_bytes);
    // After event 2 all three stacks are live (S2's alloc and unmatched free share a stack).
    let e = fold(&d, 0, At::Event(2), &all_frames());
    assert_eq!(e.len(), 3);
    let o = memviz(&[
        "folded",
        p.to_str().expect("utf8"),
        "--all-frames",
        "--at",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), e.len());
    for line in out.lines() {
        let (_, v) = line.rsplit_once(' ').expect("space");
        assert!(v.parse::<u64>().is_ok(), "{line:?}");
    }
    assert!(
        out.contains(";a\u{FF1B}b.py:1:f\u{FF1B}g h 18446744073709551615\n"),
        "{out}"
    );
    assert!(out.contains("x.py:3: 42 7\n"), "{out}");
    // The JSON keeps the names as they are.
    let o = memviz(&[
        "folded",
        p.to_str().expect("utf8"),
        "--all-frames",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let frames: Vec<String> = v["stacks"]
        .as_array()
        .expect("stacks")
        .iter()
        .flat_map(|s| s["frames"].as_array().cloned().unwrap_or_default())
        .filter_map(|f| f.as_str().map(str::to_string))
        .collect();
    assert!(frames.iter().any(|f| f == "a;b.py:1:f;g\nh"), "{frames:?}");
}

/// The elements live after trace event `k`: a replay of the timeline's steps.
fn live_by_steps(t: &timeline::Timeline, k: u32) -> Vec<u32> {
    let mut live = vec![false; t.elements.len()];
    for &e in &t.initially_present {
        live[e as usize] = true;
    }
    for s in t.steps.iter().take_while(|s| s.event <= k) {
        live[s.element as usize] = s.is_alloc;
    }
    (0..live.len() as u32)
        .filter(|&e| live[e as usize])
        .collect()
}

/// Every moment kind and option on a file: no panic, the invariants of the module docs.
fn check_file(name: &str, snap: Snapshot, samples: u32) {
    let s = summarize(&snap);
    let devices = snap.devices();
    let mut snap = snap;
    for &device in devices.iter().chain([-1, 99].iter()) {
        let d = dev(snap, device);
        let name = format!("{name} device {device}");
        let l = &d.layout;
        let peak = fold(&d, device, At::Peak, &filtered());
        let want = s
            .devices
            .iter()
            .find(|x| x.device == device)
            .map_or(0, |x| x.peak_live_bytes);
        assert_eq!(flame::total(&peak), want, "{name}: peak vs summary");
        assert_eq!(flame::total(&peak), l.peak_bytes, "{name}: peak vs layout");
        let tree = FlameTree::build(&peak, ValueUnit::Bytes);
        assert_eq!(tree.root().total, want, "{name}: tree root");
        for x in &tree.nodes {
            let sum = x.children.iter().fold(x.self_value, |a, &c| {
                a.saturating_add(tree.nodes[c as usize].total)
            });
            assert_eq!(x.total, sum, "{name}");
        }
        let all = fold(&d, device, At::Peak, &all_frames());
        assert_eq!(flame::total(&all), want, "{name}: all frames");
        assert!(all.len() >= peak.len(), "{name}: filtering only merges");
        check_lines(&name, &peak);
        check_lines(&name, &all);
        // Lifetime = Σ live_at_step (the area under the outline).
        let area = l
            .live_at_step()
            .iter()
            .fold(0u64, |a, v| a.saturating_add(v));
        let lt = fold(&d, device, At::Peak, &lifetime(None));
        assert_eq!(flame::total(&lt), area, "{name}: lifetime");
        let steps = l.step_count();
        let half = steps / 2;
        let area_half = l
            .live_at_step()
            .iter()
            .take(half as usize)
            .fold(0u64, |a, v| a.saturating_add(v));
        assert_eq!(
            flame::total(&fold(&d, device, At::Peak, &lifetime(Some((0, half))))),
            area_half,
            "{name}: lifetime window"
        );
        // Timesteps: the plot's live bytes.
        let stride = (steps / samples.max(1)).max(1);
        for st in (0..steps).step_by(stride as usize) {
            let e = fold(&d, device, At::Step(st), &filtered());
            assert_eq!(
                flame::total(&e),
                l.live_at_step().get(st as usize).expect("step"),
                "{name} step {st}"
            );
        }
        // Events: where the state after event k is drawn exactly, the totals agree (the last
        // timestep for events ≤ k is an alloc, or the next one is a free).
        let events = d.snap.trace(device).map_or(0, |t| t.len()) as u32;
        let stride = (events / samples.max(1)).max(1);
        for k in (0..events).step_by(stride as usize) {
            let e = fold(&d, device, At::Event(k), &filtered());
            let j = l.step_event().partition_point(|&x| x <= k);
            let is_alloc_step = |s: usize| {
                l.step_event().get(s).is_some_and(|ev| {
                    d.tl.steps
                        .iter()
                        .find(|x| x.event == ev)
                        .is_some_and(|x| x.is_alloc)
                })
            };
            if j > 0 && is_alloc_step(j - 1) {
                assert_eq!(
                    flame::total(&e),
                    l.live_at_step().get(j - 1).expect("step"),
                    "{name} event {k}"
                );
            } else if j < steps as usize
                && !is_alloc_step(j)
                && l.step_event().get(j).expect("step") != u32::MAX
            {
                assert_eq!(
                    flame::total(&e),
                    l.live_at_step().get(j).expect("step"),
                    "{name} event {k}"
                );
            }
        }
        assert!(fold(&d, device, At::Event(events), &filtered()).is_empty());
        assert!(fold(&d, device, At::Step(steps), &filtered()).is_empty());
        // The live set after an event, from the layout, is the replay of the timeline's steps
        // (which a viewer drops), for every kind of timeline.
        for t in [
            timeline::build(&d.snap, device),
            timeline::build_segments(&d.snap, device),
            timeline::build_pools(&d.snap, device),
        ] {
            let l = Layout::build(&t, LayoutOptions::default());
            let mut dropped = t.clone();
            dropped.drop_steps();
            for k in (0..events).step_by(stride as usize).chain([events / 2]) {
                if k >= events {
                    continue;
                }
                let m = flame::resolve(&l, events as usize, At::Event(k)).expect("in range");
                assert_eq!(
                    flame::live_elements(&dropped, &l, &m),
                    live_by_steps(&t, k),
                    "{name} event {k}"
                );
            }
        }
        snap = d.snap;
    }
}

#[test]
fn fixtures_never_panic() {
    for f in SMALL_FIXTURES {
        let p = fixture(f);
        let Ok(bytes) = std::fs::read(&p) else {
            continue;
        };
        if let Ok(snap) = memviz_snapshot::load_slice(&bytes) {
            check_file(f, snap, 50);
        }
        // The CLI either prints or fails with one line.
        let o = memviz(&["folded", p.to_str().expect("utf8")]);
        match o.status.code() {
            Some(0) => check_lines_text(f, &stdout(&o)),
            Some(2) => assert_eq!(stderr(&o).lines().count(), 1, "{f}"),
            c => panic!("{f}: exit {c:?}"),
        }
    }
    let h = hostile_fixture();
    check_file("hostile", load_path(&h), 50);
    let o = memviz(&["folded", h.to_str().expect("utf8"), "--all-frames"]);
    assert!(o.status.success(), "{}", stderr(&o));
    check_lines_text("hostile", &stdout(&o));
    assert!(stdout(&o).contains("<img src=x onerror=window.__pwned=1>"));
}

fn check_lines_text(name: &str, text: &str) {
    for line in text.lines() {
        let (stack, v) = line.rsplit_once(' ').expect("space");
        assert!(
            !stack.is_empty() && v.parse::<u64>().is_ok(),
            "{name}: {line:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Real corpus
// ---------------------------------------------------------------------------------------------

/// Every corpus file and device: the folded total at the peak = the summary's peak_live_bytes
/// = the tree's root total; timesteps, events and lifetime as in `check_file`.
#[test]
fn corpus_peak_totals() {
    let files = corpus_files();
    for p in &files {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        check_file(name, load_path(p), 40);
    }
    eprintln!("checked {} corpus files", files.len());
}

// ---------------------------------------------------------------------------------------------
// Timings (cargo test --release -p memviz-cli --test cli folded:: -- --ignored --nocapture)
// ---------------------------------------------------------------------------------------------

fn time_file(p: &Path) {
    let t0 = Instant::now();
    let snap = load_path(p);
    let load = t0.elapsed().as_secs_f64();
    let device = 0;
    let t0 = Instant::now();
    let tl = timeline::build(&snap, device);
    let layout = Layout::build(&tl, LayoutOptions::default());
    let build = t0.elapsed().as_secs_f64();
    let d = Dev { snap, tl, layout };
    let events = d.snap.trace(device).map_or(0, |t| t.len());
    let mut best = [f64::INFINITY; 6];
    let mut sizes = (0, 0, 0);
    for _ in 0..3 {
        let t0 = Instant::now();
        let peak = fold(&d, device, At::Peak, &filtered());
        best[0] = best[0].min(t0.elapsed().as_secs_f64());
        let t0 = Instant::now();
        let all = fold(&d, device, At::Peak, &all_frames());
        best[1] = best[1].min(t0.elapsed().as_secs_f64());
        let t0 = Instant::now();
        let ev = fold(&d, device, At::Event(events as u32 / 2), &filtered());
        best[2] = best[2].min(t0.elapsed().as_secs_f64());
        let t0 = Instant::now();
        let lt = fold(&d, device, At::Peak, &lifetime(None));
        best[3] = best[3].min(t0.elapsed().as_secs_f64());
        let t0 = Instant::now();
        let tree = FlameTree::build(&all, ValueUnit::Bytes);
        let rects = tree.rects(0);
        best[4] = best[4].min(t0.elapsed().as_secs_f64());
        let t0 = Instant::now();
        let text = flame::folded_text(&all);
        best[5] = best[5].min(t0.elapsed().as_secs_f64());
        assert_eq!(flame::total(&peak), d.layout.peak_bytes);
        assert_eq!(tree.root().total, d.layout.peak_bytes);
        sizes = (all.len(), rects.len(), text.len());
        let _ = (ev, lt);
    }
    eprintln!(
        "{}: {} events, {} elements, {} timesteps; load {load:.2} s, timeline+layout {build:.2} s",
        p.display(),
        events,
        d.tl.elements.len(),
        d.layout.step_count()
    );
    eprintln!(
        "  folded peak {:.1} ms, peak --all-frames {:.1} ms, after event n/2 {:.1} ms, \
         lifetime {:.1} ms; tree+rects {:.1} ms; text {:.1} ms ({} stacks, {} rects, {} bytes)",
        best[0] * 1e3,
        best[1] * 1e3,
        best[2] * 1e3,
        best[3] * 1e3,
        best[4] * 1e3,
        best[5] * 1e3,
        sizes.0,
        sizes.1,
        sizes.2
    );
    assert!(best[0] < 1.0, "folded at peak takes {} s", best[0]);
}

#[test]
#[ignore]
fn timing_big_traces() {
    let dir = repo_root().join("target/bench");
    let mut any = false;
    for f in ["snap_150mb.pickle", "snap_500mb.pickle"] {
        let p = dir.join(f);
        if p.exists() {
            any = true;
            time_file(&p);
        } else {
            eprintln!("note: {} absent", p.display());
        }
    }
    if !any {
        eprintln!(
            "note: generate one with python3 tests/fixtures/generate.py large --mb 150 \
             target/bench/snap_150mb.pickle"
        );
    }
}
