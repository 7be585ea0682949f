//! Hostile pickles (issue 14): small files whose memo references, batches or nesting asked the
//! loader for gigabytes, and files it named wrongly. One regression test per class, the bytes
//! built here with a tiny opcode writer, at a size that proves the bound: each asserts what the
//! model holds (frames of the stack table, rows, heap bytes) and the heap the whole load took at
//! its peak (a counting allocator, per thread), against a linear bound in the input — or that
//! the file is refused with the one sentence that says why.

// The counting allocator below is the only unsafe code of this crate (Cargo.toml).
#![allow(unsafe_code)]

use memviz_snapshot::builder::budget::{COPY_FACTOR, COPY_FLOOR};
use memviz_snapshot::{load_slice, LoadError, LoadErrorKind, Loader, Snapshot, StackId};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;

// ---- the heap, counted per thread (tests run on threads of their own) ----

struct Counting;

thread_local! {
    static NOW: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn add(n: usize) {
    let _ = NOW.try_with(|c| {
        let v = c.get().saturating_add(n);
        c.set(v);
        let _ = PEAK.try_with(|p| p.set(p.get().max(v)));
    });
}

fn sub(n: usize) {
    let _ = NOW.try_with(|c| c.set(c.get().saturating_sub(n)));
}

// SAFETY: every call is forwarded to `System` with its arguments unchanged; the counters are
// plain thread-local cells (`const`-initialised: touching them never allocates).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        add(l.size());
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        add(l.size());
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        sub(l.size());
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        add(new);
        sub(l.size());
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static HEAP: Counting = Counting;

/// Load `bytes` whole; the result and the peak heap the load took above what was live before.
fn load_peak(bytes: &[u8]) -> (Result<Snapshot, LoadError>, usize) {
    let base = NOW.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let r = load_slice(bytes);
    let peak = PEAK.with(Cell::get) - base;
    (r, peak)
}

/// Bytes of heap a load may take per input byte for the linear shapes below (VM stack values
/// of 16 bytes, container slots, memo, store words and their doubling), and whatever the size.
const HEAP_PER_BYTE: usize = 24;
const HEAP_FLOOR: usize = 8 << 20;

fn assert_linear_heap(what: &str, input: usize, peak: usize) {
    let bound = HEAP_PER_BYTE * input + HEAP_FLOOR;
    assert!(
        peak <= bound,
        "{what}: the load's heap peaked at {peak} bytes for {input} input bytes (bound {bound})"
    );
}

/// The heap of a load that made copies up to the budget ([`COPY_FACTOR`] per byte plus
/// [`COPY_FLOOR`]) before it stopped: the copies, twice (vectors grow by doubling), on top of
/// the linear part.
fn assert_budget_heap(what: &str, input: usize, peak: usize) {
    let copies = COPY_FACTOR as usize * input + COPY_FLOOR as usize;
    let bound = 2 * copies + HEAP_PER_BYTE * input + HEAP_FLOOR;
    assert!(
        peak <= bound,
        "{what}: the load's heap peaked at {peak} bytes for {input} input bytes (bound {bound})"
    );
}

/// Frames held by the stack table (every stack, including any left unused).
fn table_frames(s: &Snapshot) -> usize {
    (0..s.stacks.len())
        .map(|i| s.stack(StackId(i as u32)).len())
        .sum()
}

fn refused(r: Result<Snapshot, LoadError>) -> String {
    match r {
        Ok(_) => panic!("expected the file to be refused"),
        Err(e) => e.to_string(),
    }
}

/// [`refused`], of this kind.
fn refused_as(r: Result<Snapshot, LoadError>, kind: LoadErrorKind) -> String {
    if let Err(e) = &r {
        assert_eq!(e.kind, kind, "{e}");
    }
    refused(r)
}

fn gzip(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(p).expect("gzip");
        out.extend(e.finish().expect("gzip"));
    }
    out
}

// ---- a tiny pickle writer ----

struct P {
    b: Vec<u8>,
    memo: u32,
}

impl P {
    fn new() -> P {
        P {
            b: vec![0x80, 4],
            memo: 0,
        }
    }
    fn op(&mut self, bytes: &[u8]) -> &mut P {
        self.b.extend_from_slice(bytes);
        self
    }
    fn s(&mut self, t: &str) -> &mut P {
        if t.len() < 256 {
            self.b.extend([0x8c, t.len() as u8]);
        } else {
            self.b.push(b'X');
            self.b.extend((t.len() as u32).to_le_bytes());
        }
        self.op(t.as_bytes())
    }
    fn int(&mut self, i: i64) -> &mut P {
        match i {
            0..=255 => self.op(&[b'K', i as u8]),
            _ => {
                self.b.push(b'J');
                self.op(&(i as i32).to_le_bytes())
            }
        }
    }
    /// `{"segments": [], "device_traces": [` and a first trace list opened: `[`, MARK, `[`.
    fn traces_opened(&mut self) -> &mut P {
        self.op(b"}(")
            .s("segments")
            .op(b"]")
            .s("device_traces")
            .op(b"](]")
    }

    fn memoize(&mut self) -> u32 {
        self.b.push(0x94);
        self.memo += 1;
        self.memo - 1
    }
    fn get(&mut self, i: u32) -> &mut P {
        match u8::try_from(i) {
            Ok(i) => self.op(&[b'h', i]),
            Err(_) => {
                self.b.push(b'j');
                self.op(&i.to_le_bytes())
            }
        }
    }
    /// A frame dict, memoized (left on the stack).
    fn frame(&mut self, name: &str, line: i64) -> u32 {
        self.op(b"}");
        let m = self.memoize();
        self.op(b"(").s("name").s(name).s("filename").s("x.py");
        self.s("line").int(line).op(b"u");
        m
    }
    /// `{'segments': [], 'device_traces': [[` with the mark of the trace's items open.
    fn head(&mut self) -> &mut P {
        self.op(b"}").memoize();
        self.op(b"(").s("segments").op(b"]").s("device_traces");
        self.op(b"](](")
    }
    /// Closes what [`Self::head`] opened.
    fn tail(&mut self) -> Vec<u8> {
        self.op(b"eeu.");
        std::mem::take(&mut self.b)
    }
    /// A trace entry (alloc at `addr`) whose frames are memo slot `frames`, if any.
    fn event(&mut self, frames: Option<u32>, addr: i64) -> &mut P {
        self.op(b"}(").s("action").s("alloc").s("addr").int(addr);
        self.s("size").int(512);
        if let Some(f) = frames {
            self.s("frames").get(f);
        }
        self.op(b"u")
    }
}

/// One event whose frame list is built by `n` single-item APPENDs of one shared frame dict.
fn memo_bomb(n: usize) -> Vec<u8> {
    let mut p = P::new();
    p.head();
    let f = p.frame("f", 1);
    p.op(b"0]");
    let list = p.memoize();
    for _ in 0..n {
        p.get(f).op(b"a");
    }
    p.op(b"0");
    p.event(Some(list), 4096);
    p.tail()
}

/// The memo bomb of issue 14: 300 KB, 100 000 single APPENDs to one frame list (each extension
/// was a new stack: 5·10⁹ frames, "memory allocation of 8589934592 bytes failed").
#[test]
fn memo_bomb_300k_single_item_appends_stay_linear() {
    let bytes = memo_bomb(100_000);
    assert!(bytes.len() > 290_000);
    let (r, peak) = load_peak(&bytes);
    let s = r.expect("loads");
    let t = s.trace(0).expect("device 0");
    assert_eq!(t.len(), 1);
    assert_eq!(s.stack(t.stack(0).expect("row")).len(), 100_000);
    // The first APPEND interned a stack of one frame, left unused: nothing else.
    assert!(table_frames(&s) <= 100_001, "{}", table_frames(&s));
    assert_linear_heap("memo bomb", bytes.len(), peak);
}

/// A deep stack as CPython writes it (MARK … APPENDS in batches of 1 000): 100 000 frames in
/// 100 batches were 100 stacks of 1 000, 2 000, … frames (5·10⁶ in all, quadratic).
#[test]
fn deep_stack_in_1000_item_batches_is_interned_once() {
    let mut p = P::new();
    p.head();
    let a = p.frame("rec_a", 1);
    let b = p.frame("rec_b", 2);
    p.op(b"00]");
    let list = p.memoize();
    for batch in 0..100 {
        p.op(b"(");
        for k in 0..1000 {
            p.get(if (batch * 1000 + k) % 2 == 0 { a } else { b });
        }
        p.op(b"e");
    }
    p.op(b"0");
    p.event(Some(list), 4096);
    let bytes = p.tail();
    let (r, peak) = load_peak(&bytes);
    let s = r.expect("loads");
    let stack = s.stack(s.trace(0).and_then(|t| t.stack(0)).expect("row"));
    assert_eq!(stack.len(), 100_000);
    assert_eq!(s.frame(stack[0]).map(|f| s.str(f.name)), Some("rec_a"));
    assert_eq!(s.frame(stack[99_999]).map(|f| s.str(f.name)), Some("rec_b"));
    // The stack once, plus its first batch interned before the second came.
    assert!(table_frames(&s) <= 101_000, "{}", table_frames(&s));
    assert_linear_heap("deep stack", bytes.len(), peak);
}

/// 2 M APPENDS batches of one frame each onto one list (8 MB): "allocation of 12 GB failed".
#[test]
fn two_million_frame_batches_stay_linear() {
    let mut p = P::new();
    p.head();
    let f = p.frame("f", 1);
    p.op(b"0]");
    let list = p.memoize();
    for _ in 0..2_000_000 {
        p.op(b"(").get(f).op(b"e");
    }
    p.op(b"0");
    p.event(Some(list), 4096);
    let bytes = p.tail();
    let (r, peak) = load_peak(&bytes);
    let s = r.expect("loads");
    assert_eq!(
        s.stack(s.trace(0).and_then(|t| t.stack(0)).expect("row"))
            .len(),
        2_000_000
    );
    assert!(table_frames(&s) <= 2_000_001);
    assert_linear_heap("frame batches", bytes.len(), peak);
}

/// A stack bomb inside gzip (a few KB of gzip for 6 MB of pickle) stays linear in the pickle;
/// a gzip that expands past 100 times its size (beyond 64 MB) is refused as a bomb.
#[test]
fn gzip_stack_bomb_stays_linear_and_a_decompression_bomb_is_refused() {
    let pickle = memo_bomb(2_000_000);
    let gz = gzip(&[&pickle]);
    assert!(gz.len() < 100_000, "{}", gz.len());
    let (r, peak) = load_peak(&gz);
    let s = r.expect("loads");
    assert!(table_frames(&s) <= 2_000_001);
    assert_linear_heap("gzip stack bomb", pickle.len(), peak);

    let big = memo_bomb(25_000_000);
    let gz = gzip(&[&big]);
    assert!(gz.len() < 700_000, "{}", gz.len());
    let (r, peak) = load_peak(&gz);
    let e = refused_as(r, LoadErrorKind::TooBig);
    assert!(e.contains("refused as a decompression bomb"), "{e}");
    assert!(e.contains("gzip -dc FILE > FILE.pickle"), "{e}");
    assert_linear_heap("gzip bomb", 64 << 20, peak);
}

/// A frame list extended by one frame after each use: each event's stack is a new, longer one
/// (n²/2 frames by its meaning). The copies are charged, and the file refused past the budget.
#[test]
fn frame_list_extended_after_each_use_is_refused_with_the_budget_sentence() {
    let mut p = P::new();
    p.head();
    let f = p.frame("f", 1);
    p.op(b"0]");
    let list = p.memoize();
    p.op(b"0");
    for i in 0..20_000 {
        p.get(list).get(f).op(b"a0");
        p.event(Some(list), 4096 + 512 * i);
    }
    let bytes = p.tail();
    let (r, peak) = load_peak(&bytes);
    let e = refused(r);
    assert!(
        e.contains("this file expands to more than 0.02 GB in memory"),
        "{e}"
    );
    assert!(e.contains("extended after it was used"), "{e}");
    // The copies stop at the budget (16 MB plus 4x the input), whatever the file asks.
    assert_budget_heap("extended after use", bytes.len(), peak);

    // A few such extensions are fine: each use sees the list as it was then.
    let mut p = P::new();
    p.head();
    let f = p.frame("f", 1);
    p.op(b"0]");
    let list = p.memoize();
    p.op(b"0");
    for i in 0..3 {
        p.get(list).get(f).op(b"a0");
        p.event(Some(list), 4096 + 512 * i);
    }
    let s = load_slice(&p.tail()).expect("loads");
    let t = s.trace(0).expect("trace");
    let lens: Vec<usize> = (0..3)
        .map(|i| s.stack(t.stack(i).expect("row")).len())
        .collect();
    assert_eq!(lens, [1, 2, 3]);
}

/// An unknown top-level key whose dict is filled by 60 000 single SETITEMs (300 KB): every
/// SETITEM moved the whole dict, "out of memory for container items" after 2 GB.
#[test]
fn dict_filled_by_single_setitems_stays_linear() {
    let mut p = P::new();
    p.op(b"}").memoize();
    p.op(b"(")
        .s("segments")
        .op(b"]")
        .s("device_traces")
        .op(b"]u");
    p.s("zzz").op(b"}");
    for i in 0..60_000 {
        p.int(i).op(b"Ns");
    }
    p.op(b"s.");
    let bytes = std::mem::take(&mut p.b);
    let (r, peak) = load_peak(&bytes);
    let s = r.expect("loads");
    assert_eq!(s.extra.len(), 1);
    assert!(s.warnings.iter().any(|w| w.contains("`zzz`")));
    assert_linear_heap("single SETITEMs", bytes.len(), peak);
}

/// 20 000 legacy blocks that all share one `history` list of 20 000 references (840 KB): the
/// list was read into every block, 4·10⁸ entries ("allocation of 3221225472 bytes failed").
#[test]
fn a_history_list_shared_by_blocks_is_read_once() {
    let (blocks, entries) = (20_000, 20_000);
    let mut p = P::new();
    p.op(b"}(")
        .s("segments")
        .op(b"](}(")
        .s("address")
        .int(1 << 30);
    p.s("total_size").int(512 * blocks).s("blocks").op(b"](");
    let mut shared = None;
    for _ in 0..blocks {
        p.op(b"}(")
            .s("size")
            .int(512)
            .s("state")
            .s("inactive")
            .s("history");
        match shared {
            Some(l) => {
                p.get(l);
            }
            None => {
                p.op(b"}");
                let h = p.memoize();
                p.op(b"(")
                    .s("addr")
                    .int(1)
                    .s("real_size")
                    .int(512)
                    .op(b"u0]");
                shared = Some(p.memoize());
                p.op(b"(");
                for _ in 0..entries {
                    p.get(h);
                }
                p.op(b"e");
            }
        }
        p.op(b"u");
    }
    p.op(b"eue").s("device_traces").op(b"]u.");
    let bytes = std::mem::take(&mut p.b);
    let (r, peak) = load_peak(&bytes);
    let s = r.expect("loads");
    assert_eq!(s.blocks.len(), blocks as usize);
    assert_eq!(s.history.len(), entries);
    assert!(s.blocks.iter().all(|b| b.history == (0, entries as u32)));
    // The legacy fill: requested size from the first history entry.
    assert!(s.blocks.iter().all(|b| b.requested_size == 512));
    assert_linear_heap("shared history", bytes.len(), peak);
}

/// `device_traces = [L, L, …]`: one list of 20 000 entries shared by 100 000 devices (960 KB)
/// was copied into each (2·10⁹ rows). The copies are charged: refused with the sentence.
#[test]
fn a_trace_list_shared_by_many_devices_is_refused() {
    let mut p = P::new();
    p.traces_opened();
    let lone = p.memoize();
    p.event(None, 4096).op(b"a0]");
    let list = p.memoize();
    for batch in 0..20 {
        p.op(b"(");
        for k in 0..1000 {
            p.event(None, 4096 + 512 * (batch * 1000 + k));
        }
        p.op(b"e");
    }
    p.op(b"0").get(lone);
    for _ in 0..100_000 {
        p.get(list);
    }
    p.op(b"eu.");
    // Either charge reaches the limit first (with 4-byte addresses the copies are charged
    // less, and the 100 000 device traces go over it before they do).
    refused_within_budget(
        &mut p,
        "shared trace list",
        &[
            "shared by several devices is copied into each",
            "becomes a device trace of its own",
        ],
    );
}

/// Loads `p`'s bytes: refused with the budget's sentence naming one of `why`, and the load's
/// peak heap within the budget.
fn refused_within_budget(p: &mut P, what: &str, why: &[&str]) {
    let bytes = std::mem::take(&mut p.b);
    let (r, peak) = load_peak(&bytes);
    let e = refused_as(r, LoadErrorKind::TooBig);
    assert!(e.starts_with("this file expands to more than"), "{e}");
    assert!(why.iter().any(|w| e.contains(w)), "{e}");
    assert_budget_heap(what, bytes.len(), peak);
}

/// One trace entry referenced 10 M times in one trace list (20 MB of 2-byte BINGETs): each
/// reference is a row of its own. The copies are charged, and the refusal names the entry
/// referenced many times (before, it blamed a list shared by several devices, which this file
/// does not have).
#[test]
fn a_trace_entry_referenced_millions_of_times_is_refused_naming_it() {
    let mut p = P::new();
    p.traces_opened();
    p.event(None, 4096);
    let entry = p.memoize();
    p.op(b"a");
    for _ in 0..10_000 {
        p.op(b"(");
        for _ in 0..1000 {
            p.get(entry);
        }
        p.op(b"e");
    }
    p.op(b"eu.");
    refused_within_budget(
        &mut p,
        "shared trace entry",
        &["a trace entry referenced many times in a trace list is copied"],
    );
}

/// Many devices of one `oom` entry each (a sparse `device_free`): every device's trace scanned
/// every device's sparse entries (quadratic). 20 000 devices: each keeps its own value.
#[test]
fn many_devices_keep_their_sparse_fields() {
    let n = 20_000;
    let mut p = P::new();
    p.op(b"}(")
        .s("segments")
        .op(b"]")
        .s("device_traces")
        .op(b"](");
    for d in 0..n {
        p.op(b"]}(").s("action").s("oom").s("size").int(512);
        p.s("device_free").int(d).op(b"ua");
    }
    p.op(b"eu.");
    let bytes = std::mem::take(&mut p.b);
    let (r, peak) = load_peak(&bytes);
    let s = r.expect("loads");
    assert_eq!(s.traces.len(), n as usize);
    for d in [0, 1, 777, n - 1] {
        let t = s.trace(d).expect("device");
        assert_eq!(t.device_free_of(0), Some(d as u64));
    }
    assert_linear_heap("many devices", bytes.len(), peak);
}

/// 20 000 unknown top-level keys, each a list of 50 000 references to one 100-byte string
/// (290 KB): 10⁹ JSON strings. The JSON of the file is cut at its allowance, with a warning.
#[test]
fn json_of_shared_values_is_cut_at_its_allowance() {
    let mut p = P::new();
    p.op(b"}(")
        .s("segments")
        .op(b"]")
        .s("device_traces")
        .op(b"]");
    p.s(&"x".repeat(100));
    let sid = p.memoize();
    p.op(b"0]");
    let list = p.memoize();
    p.op(b"(");
    for _ in 0..50_000 {
        p.get(sid);
    }
    p.op(b"e0");
    for k in 0..20_000 {
        p.s(&format!("k{k}")).get(list);
    }
    p.op(b"u.");
    let bytes = std::mem::take(&mut p.b);
    let (r, peak) = load_peak(&bytes);
    let s = r.expect("loads");
    assert_eq!(s.extra.len(), 20_000);
    assert!(
        s.warnings.iter().any(|w| w.contains("were cut")),
        "{:?}",
        s.warnings.iter().rev().take(3).collect::<Vec<_>>()
    );
    // The allowance: 2 bytes of JSON per input byte plus 1 MB.
    let text: usize = s
        .extra
        .iter()
        .map(|(k, v)| k.len() + v.to_string().len())
        .sum();
    assert!(
        text < 2 * bytes.len() + memviz_snapshot::builder::budget::JSON_FLOOR as usize,
        "{text}"
    );
    assert_budget_heap("shared JSON", bytes.len(), peak);
}

/// One `forward_frames` list of 10 000 lines shared by 50 000 entries (3 MB): 5·10⁸ copies.
#[test]
fn shared_forward_frames_are_refused() {
    let mut p = P::new();
    p.head().op(b"]");
    let ff = p.memoize();
    p.op(b"(");
    for i in 0..10_000 {
        p.s(&format!("  File \"m.py\", line {i}"));
    }
    p.op(b"e0");
    for i in 0..50_000 {
        p.op(b"}(")
            .s("action")
            .s("alloc")
            .s("addr")
            .int(4096 + 512 * i);
        p.s("forward_frames").get(ff).op(b"u");
    }
    let bytes = p.tail();
    let (r, peak) = load_peak(&bytes);
    let e = refused(r);
    assert!(e.contains("this file expands to more than"), "{e}");
    assert!(e.contains("`forward_frames` list is copied"), "{e}");
    assert_budget_heap("shared forward_frames", bytes.len(), peak);
}

/// One annotation dict with 5 000 extra keys listed 100 000 times (250 KB): 5·10⁸ pairs.
#[test]
fn an_annotation_listed_many_times_is_refused() {
    let mut p = P::new();
    p.op(b"}(")
        .s("segments")
        .op(b"]")
        .s("device_traces")
        .op(b"]");
    p.s("external_annotations").op(b"](}");
    let a = p.memoize();
    p.op(b"(").s("name").s("step").s("stage").s("START");
    for i in 0..5_000 {
        p.s(&format!("x{i}")).s("v");
    }
    p.op(b"u");
    for _ in 0..99_999 {
        p.get(a);
    }
    p.op(b"eu.");
    let bytes = std::mem::take(&mut p.b);
    let (r, peak) = load_peak(&bytes);
    let e = refused(r);
    assert!(e.contains("annotation dict listed again"), "{e}");
    assert_budget_heap("shared annotation", bytes.len(), peak);
}

/// A pickled list of dicts without any of a segment's keys opened as an empty snapshot.
#[test]
fn a_list_of_dicts_without_segment_keys_is_refused_naming_the_keys() {
    let mut p = P::new();
    p.op(b"](}(").s("name").s("a").s("value").int(1).op(b"u}(");
    p.s("weight\n\u{202e}").int(2).op(b"u");
    p.op(b"}(").s(&"k".repeat(500)).int(3).op(b"ue.");
    let e = refused(load_slice(&p.b));
    assert!(
        e.contains("a valid pickle, but not a memory snapshot"),
        "{e}"
    );
    assert!(
        e.contains("list of 3 dicts with none of a segment's keys"),
        "{e}"
    );
    assert!(e.contains("`name`, `value`, `weight\\n\\u{202e}`"), "{e}");
    assert!(e.len() < 700, "{e}");
    // A bare list of segments still opens.
    let mut p = P::new();
    p.op(b"](}(")
        .s("address")
        .int(1 << 20)
        .s("total_size")
        .int(512)
        .op(b"ue.");
    assert_eq!(load_slice(&p.b).expect("loads").segments.len(), 1);
}

/// A valid multi-member gzip (`cat a.gz b.gz`, pigz) was "corrupt".
#[test]
fn a_multi_member_gzip_opens() {
    let mut p = P::new();
    p.head();
    for i in 0..1000 {
        p.event(None, 4096 + 512 * i);
    }
    let pickle = p.tail();
    let whole = load_slice(&pickle).expect("raw").dump();
    let (a, b) = pickle.split_at(pickle.len() / 3);
    let gz = gzip(&[a, b]);
    assert_eq!(load_slice(&gz).expect("two members").dump(), whole);
    let mut l = Loader::new();
    for c in gz.chunks(7) {
        l.push(c).expect("push");
    }
    assert_eq!(l.finish().expect("in chunks").dump(), whole);
}

/// Gzipped JSON or zip got "the gzip data is corrupt"; they are named as when raw.
#[test]
fn gzipped_non_pickles_are_named() {
    // JSON inside gzip is a snapshot like a pickle inside gzip (issue 28).
    let json = gzip(&[b"{\"segments\": [], \"device_traces\": []}\n"]);
    let s = load_slice(&json).expect("gzip'd JSON opens");
    assert!(s.segments.is_empty());
    // A zip archive opens only as the file itself (a torch.save archive), not inside gzip.
    let mut zip = b"PK\x03\x04".to_vec();
    zip.extend([0u8; 200]);
    let e = refused_as(load_slice(&gzip(&[&zip])), LoadErrorKind::NotPickle);
    assert!(
        e.contains("holds a zip archive inside another container"),
        "{e}"
    );
    assert!(e.contains("50 4b 03 04"), "{e}");
    let e = refused(load_slice(&gzip(&[&gzip(&[&memo_bomb(3)])])));
    assert!(e.contains("gzip-compressed data inside gzip"), "{e}");
}

/// A protocol-0 pickle (`pickle.dumps(d, protocol=0)`) was called a text file.
#[test]
fn protocol_0_is_named() {
    let p0: &[u8] = b"(dp0\nVsegments\np1\n(lp2\nsVdevice_traces\np3\n(lp4\ns.";
    let e = refused_as(load_slice(p0), LoadErrorKind::NotSnapshot);
    assert!(
        e.contains("a pickle of protocol 0 (the text protocol"),
        "{e}"
    );
    assert!(e.contains("torch never writes"), "{e}");
    // Text stays text.
    let e = refused_as(
        load_slice(b"memory notes: the run used 40 GB at step 12\n"),
        LoadErrorKind::NotPickle,
    );
    assert!(e.contains("a text file, not a pickle"), "{e}");
    let e = refused(load_slice(b"(hello world) said the file\n"));
    assert!(e.contains("a text file, not a pickle"), "{e}");
}

/// A segment dict listed many times: the copies are charged (and a few are fine).
#[test]
fn a_segment_listed_many_times_is_bounded() {
    let mut p = P::new();
    p.op(b"}(").s("segments").op(b"](}");
    let seg = p.memoize();
    p.op(b"(")
        .s("address")
        .int(1 << 20)
        .s("total_size")
        .int(512)
        .s("spare")
        .int(1);
    p.op(b"u");
    for _ in 0..2_000_000 {
        p.get(seg);
    }
    p.op(b"e").s("device_traces").op(b"]u.");
    let bytes = std::mem::take(&mut p.b);
    let (r, peak) = load_peak(&bytes);
    let e = refused(r);
    assert!(e.contains("segment dict listed again"), "{e}");
    assert_budget_heap("shared segment", bytes.len(), peak);
}

/// A segment dict of 1 000 keys listed 100 000 times (300 KB): each reference read its 2 000
/// values again (2·10⁸). The values read back out of shared containers are bounded too.
#[test]
fn a_large_dict_read_again_per_reference_is_refused() {
    let mut p = P::new();
    p.op(b"}(").s("segments").op(b"](}");
    let seg = p.memoize();
    p.op(b"(")
        .s("address")
        .int(1 << 20)
        .s("total_size")
        .int(512);
    for k in 0..1000 {
        p.s(&format!("spare{k}")).int(1);
    }
    p.op(b"u");
    for _ in 0..100_000 {
        p.get(seg);
    }
    p.op(b"e").s("device_traces").op(b"]u.");
    let bytes = std::mem::take(&mut p.b);
    let (r, peak) = load_peak(&bytes);
    let e = refused(r);
    assert!(
        e.contains("values read back out of shared containers; memo gets"),
        "{e}"
    );
    assert_budget_heap("shared large dict", bytes.len(), peak);
}
