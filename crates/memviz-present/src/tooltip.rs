//! The Active Memory Timeline tooltip (SEMANTICS.md §7 "Timeline tooltip", 2026 generation);
//! the address versions and stream ordinals of the annotate step (§2) it names blocks with are
//! memviz-analysis's [`versions`](memviz_analysis::versions).
//!
//! The tooltip is returned as plain strings in a [`TooltipInfo`]; escaping is the display
//! layer's job. Differences from memory_viz, on purpose: the address label has no apostrophe
//! (`b7f06…_0`, as the 2023–2025 viewer printed it), the timestamp is an ISO-8601 UTC string and
//! is only shown when the event has `time_us` (§9 "Invalid Date"), and no "summarized band"
//! text exists because every element is drawn.

use crate::layout::Layout;
use memviz_analysis::format::size_long;
use memviz_analysis::frames::{element_stack, format_stack, python_flags};
use memviz_analysis::timeline::{Origin, Timeline};
use memviz_analysis::versions::address_label;
pub use memviz_analysis::versions::{
    stream_ordinals, versions, StreamOrdinals, Versions, NO_VERSION,
};
use memviz_snapshot::{Snapshot, StrId, NO_STR, NO_TIME};
use serde::Serialize;

/// `time_us` (microseconds since the Unix epoch) as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC).
pub fn format_time_us(time_us: i64) -> String {
    let secs = time_us.div_euclid(1_000_000);
    let micros = time_us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// Everything a tooltip needs that is computed once per device.
#[derive(Clone, Debug)]
pub struct TooltipContext {
    pub device: i64,
    pub versions: Versions,
    pub streams: StreamOrdinals,
    /// The device's segments sorted by address.
    segments: memviz_analysis::timeline::SegmentIndex,
    /// The device's `annotate` events by address.
    pub annotations: memviz_analysis::annotations::AnnotationIndex,
}

impl TooltipContext {
    pub fn new(snap: &Snapshot, device: i64) -> Self {
        TooltipContext {
            device,
            versions: versions(snap, device),
            streams: stream_ordinals(snap),
            segments: memviz_analysis::timeline::SegmentIndex::new(snap, device),
            annotations: memviz_analysis::annotations::AnnotationIndex::new(snap, device),
        }
    }

    /// The pool id of the device segment containing `addr` (memory_viz's `find_pool_id`).
    pub fn pool_of_address(&self, addr: u64) -> Option<(i64, i64)> {
        self.segments.pool_of(addr)
    }
}

/// Where an element comes from, for the display layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum TooltipOrigin {
    Alloc,
    UnmatchedFree,
    Ghost,
    /// A `segment_alloc` / `segment_map` (Active Cached Segment Timeline).
    SegmentAlloc,
    /// A `segment_free` / `segment_unmap` of memory mapped before the trace.
    UnmatchedSegmentFree,
    /// A final segment (its bytes not mapped by the trace).
    Segment,
    /// A private pool's envelope (Allocated Memory incl. Private Pools).
    PoolEnvelope,
}

/// The tooltip of one timeline element. [`TooltipInfo::text`] joins it as memory_viz shows it.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
pub struct TooltipInfo {
    pub element: u32,
    /// `<element> Addr: b<hex>_<v>, Size: …, Total memory used after allocation: …, Compile
    /// context: …, stream n, pool_id (a, b)[, timestamp …]` (`s<hex>_<v>` for segment
    /// elements); `Private Pool (<a>,<b>,s<stream>): capacity <size>` for a pool envelope.
    pub title: String,
    /// Notes (unmatched free, ghost block, pre-existing segment, partial range) and the
    /// `User Metadata:` block, one line each.
    pub details: Vec<String>,
    /// [`format_stack`] of the element's stack (filtered).
    pub frames: Vec<String>,
    /// Whether each `frames` line is a Python frame ([`python_flags`]).
    pub python: Vec<bool>,
    /// Forward-pass stack lines (`forward_frames`), empty when absent.
    pub forward_frames: Vec<String>,
    pub origin: TooltipOrigin,
    pub address_label: String,
    pub size_bytes: u64,
    pub total_after_bytes: u64,
    pub stream: u32,
    pub pool_id: Option<(i64, i64)>,
    pub time_us: Option<i64>,
    pub compile_context: Option<String>,
}

/// Header of the forward-frames section.
pub const FORWARD_FRAMES_HEADER: &str =
    "=== Forward Pass Stack Trace (where this tensor was created) ===";
/// The unmatched-free note.
pub const UNMATCHED_FREE_NOTE: &str = "alloc not recorded, stack trace for free:";
/// The note of a final segment with no `segment_alloc` / `segment_map` in the trace.
pub const SEGMENT_NOTE: &str = "[Pre-existing segment] This segment exists in the segment snapshot but has no segment_alloc or segment_map trace event for these bytes. It was reserved before _record_memory_history() was called, or its event was evicted from the trace ring buffer. It is still reserved at snapshot time.";
/// The note of a piece of a mapped range that stayed mapped when the rest was unmapped.
pub const PARTIAL_RANGE_NOTE: &str = "[Partial range] The part of this mapping that stayed mapped after a later segment_unmap released the rest of it.";
/// The head of an `annotate` event's lines in the tooltip of the allocation it labels.
pub const ANNOTATED: &str = "Annotated";
/// The ghost-block note.
pub const GHOST_NOTE: &str = "[Ghost block] This block exists in the segment snapshot but has no alloc trace events. It was allocated before _record_memory_history() was called, or its alloc event was evicted from the trace ring buffer. The block is still active (not freed) at snapshot time.";

impl TooltipInfo {
    /// The whole tooltip as one `\n`-separated text (also what search matches against).
    pub fn text(&self) -> String {
        let mut lines: Vec<&str> = vec![&self.title];
        lines.extend(self.details.iter().map(String::as_str));
        lines.extend(self.frames.iter().map(String::as_str));
        if !self.forward_frames.is_empty() {
            lines.push("");
            lines.push(FORWARD_FRAMES_HEADER);
            lines.extend(self.forward_frames.iter().map(String::as_str));
        }
        lines.join("\n")
    }
}

fn sparse_get<T>(v: &[(u32, T)], event: u32) -> Option<&T> {
    v.binary_search_by_key(&event, |e| e.0)
        .ok()
        .and_then(|i| v.get(i))
        .map(|e| &e.1)
}

fn forward_lines(snap: &Snapshot, lines: &[StrId]) -> Vec<String> {
    let joined: String = lines.iter().map(|&s| snap.str(s)).collect();
    let trimmed = joined.trim_end();
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed.split('\n').map(str::to_string).collect()
}

/// The tooltip of `element` of `timeline` (built for `ctx.device`), or `None` for an unknown
/// element.
pub fn tooltip(
    snap: &Snapshot,
    ctx: &TooltipContext,
    timeline: &Timeline,
    layout: &Layout,
    element: u32,
) -> Option<TooltipInfo> {
    let el = timeline.elements.get(element as usize)?;
    let device = ctx.device;
    if let Origin::PoolInitial { pool } | Origin::PoolGrowth { pool } = el.origin {
        return pool_tooltip(ctx, timeline, layout, element, el.size_bytes, pool);
    }
    let trace = snap.trace(device);
    let size = el.size_bytes;
    let total_after = layout
        .base_bytes(element)
        .map(|b| b.saturating_add(layout.height_bytes(element)))
        .unwrap_or(0);
    let (origin, addr, version, raw_stream, pool_id, time_us, cc, um, fwd) = match el.origin {
        Origin::Alloc { event }
        | Origin::UnmatchedFree { event }
        | Origin::SegmentAlloc { event }
        | Origin::UnmatchedSegmentFree { event } => {
            let i = event as usize;
            let tr = trace?;
            let addr = tr.addr(i).unwrap_or(0);
            let pool = sparse_get(&tr.pool_id, event)
                .copied()
                .or_else(|| ctx.pool_of_address(addr));
            let time = tr.time_us(i).filter(|&t| t != NO_TIME);
            let cc = tr.compile_context.get(i).unwrap_or(NO_STR);
            let um = tr.user_metadata.get(i).unwrap_or(NO_STR);
            let fwd = sparse_get(&tr.forward_frames, event)
                .map(|f| forward_lines(snap, f))
                .unwrap_or_default();
            let origin = match el.origin {
                Origin::Alloc { .. } => TooltipOrigin::Alloc,
                Origin::SegmentAlloc { .. } => TooltipOrigin::SegmentAlloc,
                Origin::UnmatchedSegmentFree { .. } => TooltipOrigin::UnmatchedSegmentFree,
                _ => TooltipOrigin::UnmatchedFree,
            };
            (
                origin,
                addr,
                ctx.versions.events.get(i).copied().unwrap_or(NO_VERSION),
                tr.stream.get(i).unwrap_or(0),
                pool,
                time,
                cc,
                um,
                fwd,
            )
        }
        Origin::Ghost { block } => {
            let b = snap.blocks.get(block as usize)?;
            let seg = snap.segment_of_block(block).filter(|s| s.device == device);
            let fwd = sparse_get(&snap.block_forward_frames, block)
                .map(|f| forward_lines(snap, f))
                .unwrap_or_default();
            (
                TooltipOrigin::Ghost,
                b.address,
                ctx.versions
                    .blocks
                    .get(block as usize)
                    .copied()
                    .unwrap_or(NO_VERSION),
                seg.map(|s| s.stream).unwrap_or(0),
                seg.map(|s| s.pool_id)
                    .or_else(|| ctx.pool_of_address(b.address)),
                None,
                NO_STR,
                NO_STR,
                fwd,
            )
        }
        Origin::Segment { segment } => {
            let seg = snap.segments.get(segment as usize)?;
            (
                TooltipOrigin::Segment,
                seg.address,
                ctx.versions
                    .segments
                    .get(segment as usize)
                    .copied()
                    .unwrap_or(NO_VERSION),
                seg.stream,
                Some(seg.pool_id),
                None,
                NO_STR,
                NO_STR,
                Vec::new(),
            )
        }
        Origin::PoolInitial { .. } | Origin::PoolGrowth { .. } => return None,
    };
    let prefix = match origin {
        TooltipOrigin::Alloc | TooltipOrigin::UnmatchedFree | TooltipOrigin::Ghost => 'b',
        _ => 's',
    };
    let address_label = address_label(prefix, addr, version);
    let stream = ctx.streams.get(raw_stream).unwrap_or(0);
    let compile_context = (cc != NO_STR).then(|| snap.str(cc).to_string());
    let mut title = format!(
        "{element} Addr: {address_label}, Size: {} allocation, Total memory used after allocation: {}, Compile context: {}, stream {stream}",
        size_long(size),
        size_long(total_after),
        compile_context.as_deref().unwrap_or("None"),
    );
    match pool_id {
        Some((a, b)) => title.push_str(&format!(", pool_id ({a}, {b})")),
        None => title.push_str(", pool_id unknown"),
    }
    if let Some(t) = time_us {
        title.push_str(&format!(", timestamp {}", format_time_us(t)));
    }
    let mut details = Vec::new();
    match origin {
        TooltipOrigin::UnmatchedFree | TooltipOrigin::UnmatchedSegmentFree => {
            details.push(UNMATCHED_FREE_NOTE.to_string())
        }
        TooltipOrigin::Ghost => details.push(GHOST_NOTE.to_string()),
        TooltipOrigin::Segment => details.push(SEGMENT_NOTE.to_string()),
        TooltipOrigin::SegmentAlloc => {
            let event_size = match el.origin {
                Origin::SegmentAlloc { event } => {
                    trace.and_then(|tr| tr.size(event as usize)).unwrap_or(size)
                }
                _ => size,
            };
            if event_size != size {
                details.push(PARTIAL_RANGE_NOTE.to_string());
            }
        }
        TooltipOrigin::Alloc | TooltipOrigin::PoolEnvelope => {}
    }
    let metadata = snap.str(um);
    if !metadata.is_empty() {
        details.push("User Metadata:".to_string());
        details.extend(metadata.split('\n').map(|l| format!("  {l}")));
    }
    for (event, text) in ctx.annotations.of_element(snap, device, el) {
        details.push(format!("{ANNOTATED} (event {event}):"));
        details.extend(snap.str(text).split('\n').map(|l| format!("  {l}")));
    }
    let frames = format_stack(snap, element_stack(snap, device, el), true);
    Some(TooltipInfo {
        element,
        title,
        details,
        python: python_flags(&frames),
        frames,
        forward_frames: fwd,
        origin,
        address_label,
        size_bytes: size,
        total_after_bytes: total_after,
        stream,
        pool_id,
        time_us,
        compile_context,
    })
}

/// A private pool's envelope: `Private Pool (<a>,<b>,s<stream>): capacity <size>`, the capacity
/// once this envelope element was added. No frames, no notes.
fn pool_tooltip(
    ctx: &TooltipContext,
    timeline: &Timeline,
    layout: &Layout,
    element: u32,
    size: u64,
    pool: u32,
) -> Option<TooltipInfo> {
    let info = timeline.pools.get(pool as usize)?;
    let capacity = info.capacity_after(element).unwrap_or(info.capacity_bytes);
    let stream = ctx.streams.get(info.stream).unwrap_or(0);
    let (a, b) = info.id;
    let total_after = layout
        .base_bytes(element)
        .map(|x| x.saturating_add(layout.height_bytes(element)))
        .unwrap_or(0);
    Some(TooltipInfo {
        element,
        title: format!(
            "Private Pool ({a},{b},s{stream}): capacity {}",
            size_long(capacity)
        ),
        details: Vec::new(),
        frames: Vec::new(),
        python: Vec::new(),
        forward_frames: Vec::new(),
        origin: TooltipOrigin::PoolEnvelope,
        address_label: format!("{a},{b},s{stream}"),
        size_bytes: size,
        total_after_bytes: total_after,
        stream,
        pool_id: Some(info.id),
        time_us: None,
        compile_context: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_timestamps() {
        assert_eq!(format_time_us(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            format_time_us(1_708_000_000_123_456),
            "2024-02-15T12:26:40.123456Z"
        );
        assert_eq!(
            format_time_us(951_782_400_000_000),
            "2000-02-29T00:00:00.000000Z"
        );
        assert_eq!(format_time_us(-1), "1969-12-31T23:59:59.999999Z");
        // Extremes format without overflow.
        let _ = format_time_us(i64::MAX);
        let _ = format_time_us(i64::MIN + 1);
    }
}
