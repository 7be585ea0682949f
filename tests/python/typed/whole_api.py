"""Uses the whole public API of memviz with its types: `mypy --strict` checks this file
(tests/python/test_types.py) and pytest runs it on a generated snapshot."""

import os
import sys
from typing import Dict, List, Optional, Tuple

import memviz
from memviz import (
    Answer, DeviceSummary, Diff, DiffGroup, Folded, FoldedStack, Fragmentation, FreeAtOom,
    LeakSuspect, Leaks, LineDetail, Lines, LinesRow, LiveSite, OomReport, RankCapacity, RankRow,
    RankSite, Recording, SegmentEvent, SegmentKey, Site, SiteDetail, Snapshot, State, Summary,
    SweepRow, Validation, ValidationCounts, ValidationDifference, WhatIf, WhatIfOom,
)


def site_text(site: Site) -> str:
    detail: Optional[SiteDetail] = site.detail
    below = "" if detail is None else f" -> {detail.file}:{detail.line}:{detail.name} {detail.label}"
    return f"{site.kind} {site.file}:{site.line}:{site.name} {site.label}{below}"


def seg_event(e: Optional[SegmentEvent]) -> str:
    return "-" if e is None else f"{e.kind} {e.size} at {e.event}"


def query_part(s: Snapshot, path: str, other: str) -> List[int]:
    """The Arrow tables, Snapshot.query and ranks(parquet_dir=)."""
    numbers: List[int] = []
    for t in (s.trace(device=None), s.allocations(device=None, user_code=None),
              s.frames(user_code=None), s.stacks(), s.segments(),
              s.blocks_at(-1, device=None), s.lines_table(device=None)):
        rows: int = t.num_rows
        numbers.append(rows)
    q: Dict[str, object] = s.query("size>=0 at:peak", device=None, user_code=None)
    count = q["count"]
    assert isinstance(count, int)
    numbers.append(count)
    out_dir = os.path.join(os.path.dirname(os.path.abspath(path)), "whole_api_parquet")
    rows_of_ranks: List[RankRow] = memviz.ranks([path, other], parquet_dir=out_dir)
    numbers.append(len(rows_of_ranks))
    return numbers


def whatif_part(s: Snapshot, path: str, other: str) -> Tuple[List[int], List[str]]:
    """Snapshot.whatif, min_capacity, whatif_sweep and memviz.min_capacities, every field."""
    numbers: List[int] = []
    texts: List[str] = []
    w: WhatIf = s.whatif(alloc_conf="expandable_segments:True", capacity="40GiB", device=None,
                         as_recorded=False, user_code=None)
    small: WhatIf = s.whatif(capacity=64 << 20)
    rec: WhatIf = s.whatif(as_recorded=True)
    for x in (w, small, rec):
        cap: Optional[int] = x.capacity
        limit: Optional[int] = x.recorded_capacity
        numbers.append(limit or 0)
        fr: Fragmentation = x.fragmentation_at_peak
        need: Optional[int] = x.min_capacity
        recorded: Optional[str] = x.recorded_settings
        numbers += [x.device, cap or 0, x.peak_reserved, x.peak_allocated, x.cuda_mallocs,
                    x.cuda_frees, x.ooms, x.recorded_ooms_fitted, x.empty_cache_calls,
                    x.initial_reserved, x.initial_allocated, x.events, x.inconsistencies,
                    need or 0, fr.event, fr.reserved, fr.allocated, fr.free,
                    fr.largest_free_block, int(x.completed)]
        allocs: List[int] = x.segment_allocs + x.segment_frees
        numbers += allocs
        texts += [x.settings, recorded or ""]
        oom: Optional[WhatIfOom] = x.first_oom
        if oom is not None:
            free: FreeAtOom = oom.free
            site: Optional[str] = oom.site
            numbers += [oom.event, oom.merged_event, oom.requested, oom.rounded, oom.stream, oom.capacity or 0,
                        int(oom.recorded), free.reserved, free.allocated, free.cached_free,
                        free.largest_free_block, free.device_free]
            texts.append(site or "")
        v: Optional[Validation] = x.validation
        if v is not None:
            counts: List[ValidationCounts] = [v.recorded, v.model]
            numbers += [v.device] + [c.segment_alloc + c.segment_free + c.segment_map
                                     + c.segment_unmap + c.peak_reserved for c in counts]
            texts += [v.settings, str(v.matches), str(v.matches_per_event)]
            diff: Optional[ValidationDifference] = v.first_difference
            if diff is not None:
                numbers.append(diff.index)
                texts += [seg_event(diff.recorded), seg_event(diff.model)]
    least: Optional[int] = s.min_capacity(alloc_conf=None, device=None)
    numbers.append(least or 0)
    rows: List[SweepRow] = s.whatif_sweep(capacity=None, device=None, user_code=None)
    texts += [r.name for r in rows if r.best]
    numbers += [r.min_capacity or 0 for r in rows]
    ranks: List[RankCapacity] = memviz.min_capacities([path, other], alloc_conf=None,
                                                      client=None, max_workers=2)
    one: RankCapacity = memviz.min_capacity_file(path, alloc_conf="max_split_size_mb:512")
    for r in ranks + [one]:
        dev: Optional[int] = r.device
        peak: Optional[int] = r.peak_reserved
        card: Optional[int] = r.min_capacity
        numbers += [dev or 0, peak or 0, card or 0]
        texts += [r.file, r.settings or ""]
    return numbers, texts


def main(path: str, other: str, out_html: str, dist: Optional[str]) -> Dict[str, int]:
    s: Snapshot = memviz.load(path)
    name: str = s.name
    summary: Summary = s.summary()
    devices: List[DeviceSummary] = summary.devices
    warnings: List[str] = summary.warnings
    d0: DeviceSummary = devices[0]
    counts: Dict[str, int] = d0.actions
    numbers: List[int] = [d0.device, d0.trace_entries, d0.segments, d0.blocks, d0.reserved_bytes,
                          d0.allocated_bytes, d0.requested_bytes, d0.timeline_allocations,
                          d0.peak_live_bytes, d0.final_live_bytes, len(counts), len(warnings)]
    folded: Folded = s.folded(at="peak", device=d0.device, frames="python", user_code="torch")
    ranged: Folded = s.folded(range="0:5")
    lifetime: Folded = s.folded(lifetime=True, all_frames=True)
    stacks: List[FoldedStack] = folded.stacks
    at_step: Optional[int] = folded.at_step
    at_event: Optional[int] = folded.at_event
    step_range: Optional[Tuple[int, int]] = ranged.step_range
    flags: List[bool] = [lifetime.lifetime, lifetime.all_frames]
    mode: str = folded.frames
    total: int = folded.total_bytes + sum(st.bytes for st in stacks) + folded.device
    frames: List[str] = [f for st in stacks for f in st.frames]
    lines: Lines = s.lines(device=d0.device, all_frames=False, user_code=None)
    rows: List[LinesRow] = lines.rows
    details: List[LineDetail] = [d for r in rows for d in r.detail]
    numbers += [lines.device, lines.peak_step]
    numbers += [r.line + r.live_at_peak_bytes + r.total_bytes + r.count + r.largest_bytes
                for r in rows]
    numbers += [d.line + d.live_at_peak_bytes + d.total_bytes + d.count + d.largest_bytes
                for d in details]
    texts: List[str] = [r.file + r.name + r.kind + r.label for r in rows]
    texts += [d.file + d.name for d in details]
    leaks: Leaks = s.leaks(device=None, user_code=None)
    suspects: List[LeakSuspect] = leaks.suspects
    growth: List[Optional[float]] = [x.growth_per_iteration for x in suspects]
    texts += [leaks.settled_rule] + [x.kind + x.explanation + site_text(x.site) for x in suspects]
    numbers += [leaks.settled_step, leaks.device]
    numbers += [x.bytes + x.count + x.first_event + len(x.stack) for x in suspects]
    state: State = s.state(event=-1, device=None)
    numbers += [state.event, state.reserved_bytes, state.allocated_bytes, state.segments,
                state.blocks]
    texts.append(state.action)
    reports: List[OomReport] = s.oom(device=None, user_code=None)
    for r in reports:
        live: List[LiveSite] = r.biggest_live_sites
        pairs: List[Tuple[int, int]] = r.biggest_live
        free: Optional[int] = r.device_free_bytes
        pool: Tuple[int, int] = r.pool
        numbers += [r.event, r.requested_bytes, r.reserved_bytes, r.allocated_bytes,
                    r.reserved_free_bytes, r.largest_free_block_bytes, r.stream, r.device,
                    len(pairs), pool[0], free or 0]
        texts += [r.kind, r.verdict] + [b.kind + b.file + b.name + b.label for b in live]
        numbers += [b.address + b.size + b.line for b in live]
        texts += [b.detail.label for b in live if b.detail is not None]
    diff: Diff = s.diff(memviz.load(other), device=None, user_code=None)
    groups: List[DiffGroup] = diff.groups
    only: List[SegmentKey] = diff.segments_only_a + diff.segments_only_b
    numbers += [g.bytes_a + g.bytes_b + g.count_a + g.count_b + len(g.stack) for g in groups]
    texts += [site_text(g.site) for g in groups]
    numbers += [k.device + k.address + k.total_size + k.stream for k in only]
    rows_of_ranks: List[RankRow] = memviz.ranks([path, other], client=None, max_workers=2)
    one: RankRow = memviz.summarize_file(path)
    for rr in rows_of_ranks + [one]:
        top: List[RankSite] = rr.top_sites
        dev: Optional[int] = rr.device
        numbers += [rr.peak_bytes, rr.final_bytes, rr.reserved_bytes, rr.oom_events, dev or 0]
        texts += [rr.file] + [t.label for t in top]
        numbers += [t.bytes for t in top]
        flags.append(rr.outlier)
    rule: str = memviz.RULE
    more_numbers, more_texts = whatif_part(s, path, other)
    numbers += query_part(s, path, other)
    numbers += more_numbers
    texts += more_texts
    as_dict: Dict[str, object] = summary.to_dict()
    answer: Answer = summary
    keys: List[str] = answer.keys()
    peak: object = summary["devices"]
    if dist is not None:
        written: str = s.to_html(out_html, title="t", dist=dist)
        texts.append(written)
    html: str = s._repr_html_()
    rec: Optional[Recording] = None
    errors = (memviz.MemvizError, memviz.NotASnapshotError, memviz.TruncatedError,
              memviz.TooBigError, memviz.BadArgumentError, memviz.UnknownDeviceError,
              memviz.MemvizIOError, memviz.InternalError)
    try:
        s.folded(device=10**6)
    except memviz.UnknownDeviceError as e:
        texts.append(str(e))
    try:
        memviz.load(b"not a snapshot")
    except memviz.NotASnapshotError as e:
        texts.append(str(e))
    if False:  # needs torch and a notebook: typed, not run
        with memviz.record(path=None, max_entries=10) as rec:
            pass
        memviz.show(s, height=100, title=None, dist=None)
    return {
        "name": len(name), "numbers": len(numbers), "total": total, "frames": len(frames),
        "texts": len(texts), "growth": len(growth), "flags": len(flags), "rule": len(rule),
        "dict": len(as_dict), "keys": len(keys), "peak": peak is not None, "html": len(html),
        "at": (at_step or 0) + (at_event or 0) + len(step_range or ()), "mode": len(mode),
        "errors": len(errors), "rec": rec is None,
    }


if __name__ == "__main__":
    print(main(sys.argv[1], sys.argv[2], sys.argv[3], os.environ.get("MEMVIZ_DIST")))
