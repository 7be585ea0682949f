//! The hover texts of the map ([`SegMap::item_text`]) and the number format they use.

use super::*;
use memviz_analysis::format::size_long;
use memviz_analysis::frames::format_stack;

/// A number as JavaScript's `Number.prototype.toString` prints it (shortest round-trip digits,
/// exponent form below 1e-6 and from 1e21).
pub(super) fn js_number(v: f64) -> String {
    if v.is_nan() {
        return "NaN".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let a = v.abs();
    if (1e-6..1e21).contains(&a) {
        return format!("{v}");
    }
    let s = format!("{v:e}");
    match s.split_once('e') {
        Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
        _ => s,
    }
}

/// The segment of `state` containing `addr`.
fn containing_segment(state: &State, addr: u64) -> Option<(u64, &Seg)> {
    let (&a, seg) = state.segments.range(..=addr).next_back()?;
    (addr < a.saturating_add(seg.size)).then_some((a, seg))
}

impl SegMap {
    /// The hover text of §6.5 for `item` in `state` (the state this map was built from), lines
    /// joined by `\n`:
    /// * segment: `s<hex>_<v>: segment <size> allocated, <size − occupied> free[ (<p>% internal)]
    ///   (stream n[, pool_id (a, b)])`, where occupied = Σ requested and internal = Σ (size −
    ///   requested) of its blocks and `p` = internal / free · 100 unrounded, shown when internal
    ///   > 0;
    /// * block: `b<hex>_<v> <requested> allocation[ (block freed but waiting due to
    ///   record_stream)] (stream n[, pool_id (a, b)])` with the segment's stream and private pool;
    /// * waste: `Free space lost due to rounding <size − requested> (stream n)`;
    ///
    /// then `User Metadata:` lines when the item's event has some, then the frames (filtered,
    /// repeats elided, or the no-frames explanation), then for blocks and waste the forward-pass
    /// stack. `None` when the item is not in `state` (or a waste item whose block has none).
    #[must_use]
    pub fn item_text(
        &self,
        snap: &Snapshot,
        ctx: &RowContext,
        state: &State,
        item: Item,
    ) -> Option<String> {
        let device = ctx.device();
        let pool_str = |pool: (i64, i64)| {
            if pool == (0, 0) {
                String::new()
            } else {
                format!(", pool_id ({}, {})", pool.0, pool.1)
            }
        };
        let (title, src, stack, forward) = match item {
            Item::Segment(addr) => {
                let seg = state.segments.get(&addr)?;
                let end = addr.saturating_add(seg.size);
                let (mut occupied, mut internal) = (0u64, 0u64);
                for b in state.blocks.range(addr..end).map(|(_, b)| b) {
                    occupied = occupied.saturating_add(b.requested);
                    internal = internal.saturating_add(b.size.saturating_sub(b.requested));
                }
                let free = seg.size.saturating_sub(occupied);
                let share = if internal > 0 {
                    format!(
                        " ({}% internal)",
                        js_number(internal as f64 / free as f64 * 100.0)
                    )
                } else {
                    String::new()
                };
                let title = format!(
                    "{}: segment {} allocated, {} free{share} (stream {}{})",
                    seg.label(addr, ctx),
                    size_long(seg.size),
                    size_long(free),
                    ctx.stream(seg.stream),
                    pool_str(seg.pool)
                );
                (title, seg.src, seg.stack(snap, device), None)
            }
            Item::Block(addr) | Item::Waste(addr) => {
                let b = state.blocks.get(&addr)?;
                let seg = containing_segment(state, addr).map(|(_, s)| s);
                let title = if let Item::Waste(_) = item {
                    if b.size <= b.requested {
                        return None;
                    }
                    let stream = seg.map_or_else(
                        || ORPHAN_NOTE.to_string(),
                        |s| format!(" (stream {})", ctx.stream(s.stream)),
                    );
                    format!(
                        "Free space lost due to rounding {}{stream}",
                        size_long(b.size - b.requested)
                    )
                } else {
                    let stream = seg.map_or_else(
                        || ORPHAN_NOTE.to_string(),
                        |s| format!(" (stream {}{})", ctx.stream(s.stream), pool_str(s.pool)),
                    );
                    format!(
                        "{} {} allocation{}{stream}",
                        b.label(addr, ctx),
                        size_long(b.requested),
                        if b.pending { PENDING_NOTE } else { "" }
                    )
                };
                (
                    title,
                    b.src,
                    b.stack(snap, device),
                    b.forward_frames(snap, device),
                )
            }
        };
        let mut lines = vec![title];
        let metadata = src.user_metadata(snap, device);
        if !metadata.is_empty() {
            lines.push("User Metadata:".to_string());
            lines.extend(metadata.split('\n').map(|l| format!("  {l}")));
        }
        lines.extend(format_stack(snap, stack, true));
        if let Some(f) = forward {
            let joined: String = f.iter().map(|&s| snap.str(s)).collect();
            let trimmed = joined.trim_end();
            if !trimmed.is_empty() {
                lines.push(String::new());
                lines.push(crate::tooltip::FORWARD_FRAMES_HEADER.to_string());
                lines.extend(trimmed.split('\n').map(str::to_string));
            }
        }
        Some(lines.join("\n"))
    }
}
