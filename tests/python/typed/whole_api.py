"""Uses the whole public API of memviz with its types: `mypy --strict` checks this file
(tests/python/test_types.py) and pytest runs it on a generated snapshot."""

import os
import sys
from typing import Dict, List, Optional, Tuple

import memviz
from memviz import (
    Answer, DeviceSummary, Diff, DiffGroup, Folded, FoldedStack, LeakSuspect, Leaks, LineDetail,
    Lines, LinesRow, LiveSite, OomReport, RankRow, RankSite, Recording, SegmentKey, Site,
    SiteDetail, Snapshot, State, Summary,
)


def site_text(site: Site) -> str:
    detail: Optional[SiteDetail] = site.detail
    below = "" if detail is None else f" -> {detail.file}:{detail.line}:{detail.name} {detail.label}"
    return f"{site.kind} {site.file}:{site.line}:{site.name} {site.label}{below}"


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
