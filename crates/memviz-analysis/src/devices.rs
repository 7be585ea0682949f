//! The final segments grouped by device, built once.
//!
//! Analyses of one device read its segments by filtering [`Snapshot::segments`], which is
//! linear and fine once. Analyses that visit *every* device (the summary, `memviz oom`) would
//! filter all segments once per device: quadratic in a file with many devices (a 6 MB file with
//! 1 M devices and 10 k segments spent 12 s in `memviz summary` doing that). They build a
//! [`DeviceSegments`] instead: one stable sort of segment indices by device (4 bytes per
//! segment), then each device's segments are a slice.

use memviz_snapshot::{Segment, Snapshot};

/// Segment indices grouped by device; within a device, in file order.
#[derive(Clone, Debug, Default)]
pub struct DeviceSegments {
    /// Indices into [`Snapshot::segments`], sorted by device (stable).
    order: Vec<u32>,
    /// (device, start, end) of each device's run in `order`, ascending by device.
    runs: Vec<(i64, u32, u32)>,
}

impl DeviceSegments {
    /// Groups `snap`'s segments by device: O(S log S) once.
    #[must_use]
    pub fn new(snap: &Snapshot) -> Self {
        // Segment indices fit in u32: the model stores block ranges as u32 too.
        let n = snap.segments.len().min(u32::MAX as usize);
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&i| snap.segments.get(i as usize).map_or(i64::MAX, |s| s.device));
        let mut runs: Vec<(i64, u32, u32)> = Vec::new();
        for (at, &i) in order.iter().enumerate() {
            let Some(d) = snap.segments.get(i as usize).map(|s| s.device) else {
                continue;
            };
            match runs.last_mut() {
                Some(r) if r.0 == d => r.2 = at as u32 + 1,
                _ => runs.push((d, at as u32, at as u32 + 1)),
            }
        }
        DeviceSegments { order, runs }
    }

    /// The indices of `device`'s segments, in file order (empty for a device without any).
    #[must_use]
    pub fn of(&self, device: i64) -> &[u32] {
        let Ok(r) = self.runs.binary_search_by_key(&device, |r| r.0) else {
            return &[];
        };
        self.runs
            .get(r)
            .and_then(|&(_, a, b)| self.order.get(a as usize..b as usize))
            .unwrap_or(&[])
    }
}

/// Which of a snapshot's segments an analysis of one device reads: found by a scan of every
/// segment (one device analysed once), or given by a [`DeviceSegments`] (every device in turn).
#[derive(Clone, Copy, Debug)]
pub enum SegmentsOf<'a> {
    /// Every segment whose `device` is this one.
    Scan(i64),
    /// These indices into [`Snapshot::segments`] ([`DeviceSegments::of`]).
    Indexed(&'a [u32]),
}

impl<'a> SegmentsOf<'a> {
    /// The selected segments with their indices, in file order.
    pub fn iter<'s>(self, snap: &'s Snapshot) -> impl Iterator<Item = (usize, &'s Segment)> + 's
    where
        'a: 's,
    {
        let (scan, indexed) = match self {
            SegmentsOf::Scan(d) => (Some(d), &[][..]),
            SegmentsOf::Indexed(ix) => (None, ix),
        };
        let scanned = scan.into_iter().flat_map(move |d| {
            snap.segments
                .iter()
                .enumerate()
                .filter(move |(_, s)| s.device == d)
        });
        let picked = indexed
            .iter()
            .filter_map(move |&i| snap.segments.get(i as usize).map(|s| (i as usize, s)));
        scanned.chain(picked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(device: i64, address: u64) -> Segment {
        Segment {
            device,
            address,
            total_size: 512,
            allocated_size: 0,
            active_size: 0,
            requested_size: 0,
            stream: 0,
            segment_type: memviz_snapshot::NO_STR,
            pool_id: (0, 0),
            is_expandable: false,
            stack: memviz_snapshot::StackId::EMPTY,
            blocks: (0, 0),
        }
    }

    #[test]
    fn groups_by_device_in_file_order() {
        let mut snap = crate::test_util::empty_snapshot();
        for (d, a) in [(3, 0), (1, 10), (3, 20), (-2, 30), (1, 40), (3, 50)] {
            snap.segments.push(segment(d, a));
        }
        let ix = DeviceSegments::new(&snap);
        assert_eq!(ix.of(3), &[0, 2, 5]);
        assert_eq!(ix.of(1), &[1, 4]);
        assert_eq!(ix.of(-2), &[3]);
        assert!(ix.of(0).is_empty());
        for d in [3, 1, -2, 0] {
            let scanned: Vec<usize> = SegmentsOf::Scan(d).iter(&snap).map(|x| x.0).collect();
            let indexed: Vec<usize> = SegmentsOf::Indexed(ix.of(d))
                .iter(&snap)
                .map(|x| x.0)
                .collect();
            assert_eq!(scanned, indexed, "device {d}");
        }
    }

    #[test]
    fn empty_index() {
        let ix = DeviceSegments::default();
        assert!(ix.of(0).is_empty());
        assert!(ix.of(-1).is_empty());
    }
}
