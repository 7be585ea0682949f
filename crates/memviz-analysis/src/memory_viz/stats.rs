//! `memviz stats`: memory_viz's `segsum` (SEMANTICS.md §8 "stats"), how the allocator has
//! filled its segments. Per segment: allocated = Σ `requested_size` of `active_allocated`
//! blocks (capped at each block's size), internal free = Σ (size − requested) of those blocks,
//! external free = Σ sizes of the other blocks. Segments are sorted by
//! `(total_size, Σ sizes of active_allocated blocks)` (stable), and those of at least
//! [`PAGE_SIZE`] print a body of one character per page.

use std::io::{self, Write};

use memviz_snapshot::{BlockState, Snapshot};

use super::py_bytes;

/// One page of a segment's body: 20 MiB.
pub const PAGE_SIZE: u64 = 20 << 20;

/// Pages printed for one segment at most (1.25 TiB); a longer body ends in `…`.
pub const MAX_PAGES: u64 = 1 << 16;

/// The legend printed after the totals (the reference's text).
pub const LEGEND: &str = "
Legend:
    [a     ] - a segment in the allocator
     ^-- a page 20.0MiB of memory in the segment
    a-z: pages filled with a single block's content
    ' ': page is completely free
    *: page if completely full with multiple blocks
    0-9: page is partially full with tensors of multiple blocks (9 == 90% full)
    (X% internal) - of the free memory, X% is free because we rounded the size of the allocation.
";

/// One segment's numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentStats {
    /// Index into [`Snapshot::segments`].
    pub index: usize,
    pub device: i64,
    pub stream: u64,
    pub total_size: u64,
    /// Σ requested bytes of the `active_allocated` blocks.
    pub allocated: u64,
    /// Σ rounding of the `active_allocated` blocks.
    pub free_internal: u64,
    /// Σ sizes of the other blocks.
    pub free_external: u64,
    /// One character per [`PAGE_SIZE`] page (see [`page_body`]).
    pub body: String,
}

/// The whole report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// In print order.
    pub segments: Vec<SegmentStats>,
    pub total_reserved: u64,
    pub total_allocated: u64,
    pub free_internal: u64,
    pub free_external: u64,
}

/// The page characters of a segment of `total_size` bytes whose active blocks cover the
/// ranges `(offset, bytes)` (in address order): for each page, `' '` when no range touches it,
/// the range's letter (`a` + its index mod 26) when one does, else the tenths of the page
/// filled, `0`–`9`, or `*` when full.
#[must_use]
pub fn page_body(total_size: u64, ranges: &[(u64, u64)]) -> String {
    let pages = if total_size == 0 {
        0
    } else {
        total_size.saturating_sub(1) / PAGE_SIZE + 1
    };
    // A malformed size cannot make the body huge: past MAX_PAGES it ends in `…`.
    let shown = usize::try_from(pages.min(MAX_PAGES)).unwrap_or(0);
    let mut occupied = vec![' '; shown];
    let mut frac = vec![0.0f64; shown];
    for (i, &(start, size)) in ranges.iter().enumerate() {
        if size == 0 {
            continue;
        }
        let finish = start.saturating_add(size);
        let first = start / PAGE_SIZE;
        let last = (finish - 1) / PAGE_SIZE + 1;
        let letter = char::from(b'a' + (i % 26) as u8);
        for j in first..last {
            let (Some(o), Some(fr)) = (occupied.get_mut(j as usize), frac.get_mut(j as usize))
            else {
                break;
            };
            let s = start.max(j * PAGE_SIZE);
            let e = finish.min((j + 1) * PAGE_SIZE);
            *fr += (e - s) as f64 / PAGE_SIZE as f64;
            *o = if *o == ' ' {
                letter
            } else {
                let tenth = ((*fr * 10.0) as usize).min(10);
                char::from(b"0123456789*"[tenth])
            };
        }
    }
    let mut body: String = occupied.into_iter().collect();
    if pages > MAX_PAGES {
        body.push('…');
    }
    body
}

/// The stats of the segments of `device` (`None`: every device).
#[must_use]
pub fn stats(snap: &Snapshot, device: Option<i64>) -> Stats {
    let mut rows: Vec<(u64, u64, SegmentStats)> = Vec::new();
    let mut st = Stats::default();
    for (index, seg) in snap.segments.iter().enumerate() {
        if device.is_some_and(|d| d != seg.device) {
            continue;
        }
        let (mut allocated, mut internal, mut external, mut active_sizes) =
            (0u64, 0u64, 0u64, 0u64);
        let mut ranges = Vec::new();
        let mut offset = 0u64;
        for b in snap.segment_blocks(seg) {
            if b.state == BlockState::ActiveAllocated {
                let req = b.requested_size.min(b.size);
                ranges.push((offset, req));
                allocated = allocated.saturating_add(req);
                internal = internal.saturating_add(b.size - req);
                active_sizes = active_sizes.saturating_add(b.size);
            } else {
                external = external.saturating_add(b.size);
            }
            offset = offset.saturating_add(b.size);
        }
        st.total_reserved = st.total_reserved.saturating_add(seg.total_size);
        st.total_allocated = st.total_allocated.saturating_add(allocated);
        st.free_internal = st.free_internal.saturating_add(internal);
        st.free_external = st.free_external.saturating_add(external);
        let body = if seg.total_size >= PAGE_SIZE {
            page_body(seg.total_size, &ranges)
        } else {
            String::new()
        };
        rows.push((
            seg.total_size,
            active_sizes,
            SegmentStats {
                index,
                device: seg.device,
                stream: seg.stream,
                total_size: seg.total_size,
                allocated,
                free_internal: internal,
                free_external: external,
                body,
            },
        ));
    }
    rows.sort_by_key(|r| (r.0, r.1));
    st.segments = rows.into_iter().map(|r| r.2).collect();
    st
}

/// memory_viz's `_report_free`: `<total>` and, when not 0, ` (<p>% internal)`.
#[must_use]
pub fn report_free(external: u64, internal: u64) -> String {
    let total = u128::from(external) + u128::from(internal);
    let t = py_bytes(i128::try_from(total).unwrap_or(i128::MAX));
    if total == 0 {
        return t;
    }
    let pct = internal as f64 / total as f64 * 100.0;
    format!("{t} ({pct:.1}% internal)")
}

/// Writes the report as memory_viz prints it.
pub fn write_stats(w: &mut dyn Write, st: &Stats) -> io::Result<()> {
    writeln!(
        w,
        "Summary of segments >= {} in size",
        py_bytes(i128::from(PAGE_SIZE))
    )?;
    for s in &st.segments {
        if s.total_size < PAGE_SIZE {
            continue;
        }
        let stream = if s.stream == 0 {
            String::new()
        } else {
            format!(" stream_{}", s.stream)
        };
        writeln!(
            w,
            "[{}] {} allocated, {} free{stream}",
            s.body,
            py_bytes(i128::from(s.total_size)),
            report_free(s.free_external, s.free_internal)
        )?;
    }
    writeln!(w, "segments: {}", st.segments.len())?;
    writeln!(
        w,
        "total_reserved: {}",
        py_bytes(i128::from(st.total_reserved))
    )?;
    writeln!(
        w,
        "total_allocated: {}",
        py_bytes(i128::from(st.total_allocated))
    )?;
    writeln!(
        w,
        "total_free: {}",
        report_free(st.free_external, st.free_internal)
    )?;
    w.write_all(LEGEND.as_bytes())
}
