//! Inputs found by `cargo xtask fuzz` (docs/fuzzing.md), each a named test with its bytes
//! inline: `fuzz_<first 8 hex digits of the artifact's name>_<what it checks>`.

use crate::common;
use common::*;

/// Found under the `unpickle` target as an out-of-memory (a single malloc over the 256 MiB
/// limit), oom-01a2e0c6: `LONG_BINPUT` to index 2^20, 2·2^20, 3·2^20, … Each put was allowed a
/// gap of 2^20 empty memo slots (8 MiB), so 255 puts in 1.3 KB grew the memo to 2 GiB. Gaps are
/// now bounded in total: an index may exceed the bytes read by at most 2^20.
#[test]
fn fuzz_01a2e0c6_memo_gaps_are_bounded_in_total() {
    let mut bytes = b"\x80\x04N".to_vec();
    for i in 1..=255u32 {
        bytes.push(b'r'); // LONG_BINPUT
        bytes.extend_from_slice(&(i << 20).to_le_bytes());
    }
    bytes.push(b'.');
    let e = memviz_pickle::tree::parse_tree(&bytes).expect_err("refused");
    let msg = e.to_string();
    assert!(msg.contains("memo"), "{msg}");
    // The first put (a gap of 2^20 at byte 3) is still allowed; the second one is not.
    assert!(msg.starts_with("at byte 8:"), "{msg}");
    let l = load_chunked(&bytes, 7).expect_err("refused");
    assert!(l.to_string().contains("memo"), "{l}");

    // A modest gap, as before, is fine: LONG_BINPUT 4096 at byte 3.
    memviz_pickle::tree::parse_tree(b"\x80\x04Nr\x00\x10\x00\x00.")
        .expect("a gap of 4096 slots parses");
}

/// Found under the `snapshot` target as an out-of-memory (a single malloc over the 256 MiB
/// limit), oom-eafbc972 and again oom-0f8e18f3; these 174 bytes are a hand-minimised
/// equivalent. `allocator_settings` holds 30 dicts nested as each other's keys:
/// `{{{…: 0}: 0}: 0}`. The generic conversion to JSON (`SnapshotBuilder::to_json` in
/// memviz-snapshot) turned a non-string key into its JSON text, so each level escaped the one
/// below and doubled it: 2^30 bytes and more from 174 (`memviz summary` aborted after 1.6 GB).
/// Its budget counted values, not bytes. Fixed in memviz-snapshot: a container key's text is cut
/// short (`short_key`).
#[test]
fn fuzz_eafbc972_container_dict_keys_stay_small() {
    let bytes: &[u8] = b"\x80\x04}(\x8c\x08segments]\x8c\rdevice_traces]\x8c\x12allocator_settings\
}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}\
K\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00s\
K\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00sK\x00s\
u.";
    assert_eq!(bytes.len(), 174);
    let s = load_chunked(bytes, 64).expect("loads");
    let text = s
        .allocator_settings
        .map(|v| v.to_string())
        .unwrap_or_default();
    assert!(
        text.len() < 1 << 20,
        "settings as JSON: {} bytes",
        text.len()
    );
}

/// Found under the `snapshot` target as a timeout (10 s under ASan), timeout-137a0c67 (567
/// bytes); this is a hand-made equivalent. An unknown top-level key holds a list of 40
/// references to itself. The generic conversion to JSON stopped recursing at depth 64 and after
/// 100 000 values, but every list it reached still got one `"..."` per cut item: 100 000 lists
/// × 40 = 4 M values, 450 MB for `memviz summary` (0.3 s natively, over 10 s under ASan). A
/// container now ends with a single `"..."` once it is cut (`SnapshotBuilder::json_spent` in
/// memviz-snapshot): 45 MB.
#[test]
fn fuzz_137a0c67_a_cut_container_ends_with_one_ellipsis() {
    let mut bytes = b"\x80\x04}(\x8c\x08segments]\x8c\x09extra_key]\x94(".to_vec();
    for _ in 0..40 {
        bytes.extend_from_slice(b"h\x00"); // BINGET 0: the list itself
    }
    bytes.extend_from_slice(b"eu.");
    let s = load_chunked(&bytes, 64).expect("loads");
    let (key, value) = s.extra.first().expect("the unknown key is kept");
    assert_eq!(key, "extra_key");
    fn count(v: &serde_json::Value) -> usize {
        1 + match v {
            serde_json::Value::Array(a) => a.iter().map(count).sum(),
            serde_json::Value::Object(m) => m.values().map(count).sum(),
            _ => 0,
        }
    }
    let n = count(value);
    // At most the 100 000 values converted, and one "..." per list that was cut.
    assert!(n <= 200_000, "{n} JSON values from {} bytes", bytes.len());
}

/// Found under the `analysis` target as a timeout (over 10 s under ASan), timeout-bb5d9d08
/// (364 bytes); this is a hand-made equivalent. 28 unknown top-level keys refer to one list
/// that holds itself 39 times. Each key's conversion to JSON had 100 000 values of its own:
/// 2.8 M values, and 16 M reads of the shared list before the read bound refused the file
/// (0.2 s and 190 MB natively). The values are now counted for the whole file
/// (`budget::JSON_VALUES` in memviz-snapshot): it opens, with every key kept and cut.
#[test]
fn fuzz_bb5d9d08_json_values_are_bounded_per_file() {
    let mut bytes = b"\x80\x04}(\x8c\x08segments]\x8c\x0ddevice_traces]".to_vec();
    bytes.extend_from_slice(b"]\x94(");
    for _ in 0..39 {
        bytes.extend_from_slice(b"h\x00"); // BINGET 0: the list itself
    }
    bytes.push(b'e');
    bytes.push(b'0'); // POP: the list is reached through the memo from here on
    for k in 0..28 {
        let key = format!("k{k}");
        bytes.extend_from_slice(&[0x8c, key.len() as u8]);
        bytes.extend_from_slice(key.as_bytes());
        bytes.extend_from_slice(b"h\x00");
    }
    bytes.extend_from_slice(b"u.");
    let s = load_chunked(&bytes, 64).expect("loads");
    assert_eq!(s.extra.len(), 28, "every unknown key is kept");
    fn count(v: &serde_json::Value) -> usize {
        1 + match v {
            serde_json::Value::Array(a) => a.iter().map(count).sum(),
            serde_json::Value::Object(m) => m.values().map(count).sum(),
            _ => 0,
        }
    }
    let n: usize = s.extra.iter().map(|(_, v)| count(v)).sum();
    // 100 000 values for the file, and one "..." per list that was cut.
    assert!(n <= 200_000, "{n} JSON values from {} bytes", bytes.len());
}

/// Found while writing the `analysis` target (reading the sums for overflow) and reproduced
/// under the `snapshot` and `analysis` targets as a panic, "attempt to add with overflow"
/// (input 93b3c845: the control byte, then these bytes): two segments of 2^64 − 1 bytes, each
/// with an active block as large. `summary::summarize` added the sizes with `+=`: a panic with
/// overflow checks (debug builds, the fuzzers), 2^64 − 2 in a release `memviz summary`. The
/// sums now saturate.
#[test]
fn fuzz_93b3c845_summary_sums_saturate() {
    let bytes: &[u8] = b"\x80\x04\x95\xfa\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x08segments\x94]\x94(}\x94(\x8c\x06device\x94K\x00\x8c\x07address\x94K\x00\x8c\ntotal_size\x94\x8a\t\xff\xff\xff\xff\xff\xff\xff\xff\x00\x8c\x06blocks\x94]\x94}\x94(\x8c\x04size\x94\x8a\t\xff\xff\xff\xff\xff\xff\xff\xff\x00\x8c\x0erequested_size\x94\x8a\t\xff\xff\xff\xff\xff\xff\xff\xff\x00\x8c\x05state\x94\x8c\x10active_allocated\x94h\x05K\x00uau}\x94(h\x04K\x00h\x05K\x01h\x06\x8a\t\xff\xff\xff\xff\xff\xff\xff\xff\x00h\x07]\x94}\x94(h\n\x8a\t\xff\xff\xff\xff\xff\xff\xff\xff\x00h\x0b\x8a\t\xff\xff\xff\xff\xff\xff\xff\xff\x00h\x0ch\rh\x05K\x01uaue\x8c\rdevice_traces\x94]\x94u.";
    let snap = load_chunked(bytes, 64).expect("loads");
    let s = memviz_analysis::summary::summarize(&snap);
    let d = s.devices.first().expect("device 0");
    assert_eq!((d.segments, d.blocks), (2, 2));
    assert_eq!(d.reserved_bytes, u64::MAX);
    assert_eq!(d.allocated_bytes, u64::MAX);
    assert_eq!(d.requested_bytes, u64::MAX);
    let _ = s.to_json();
    let _ = s.to_table();
}
