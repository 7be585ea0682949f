//! Helpers of the unit tests.

use memviz_snapshot::Snapshot;

/// A snapshot with no segments and no trace, to fill in by hand.
pub(crate) fn empty_snapshot() -> Snapshot {
    // {"segments": [], "device_traces": []}, protocol 2.
    let mut p: Vec<u8> = vec![0x80, 2, b'}', b'('];
    for key in ["segments", "device_traces"] {
        p.push(b'X');
        p.extend_from_slice(&(key.len() as u32).to_le_bytes());
        p.extend_from_slice(key.as_bytes());
        p.push(b']');
    }
    p.extend_from_slice(b"u.");
    memviz_snapshot::load_slice(&p).expect("a minimal snapshot")
}
