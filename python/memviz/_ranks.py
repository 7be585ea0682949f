"""``ranks``: one summary row per snapshot file (a rank of a job), sorted by peak, outliers
flagged. With a Dask ``distributed.Client`` each file is read by a worker (one task per path:
only the path goes through the scheduler, and only the small row comes back); without one, a
local thread pool (the native calls release the GIL).

LEAD: the row is computed here from the native ``summary``/``folded``/``oom`` calls, in the
shape of ``memviz ranks --json`` (``{"rows": [...], "rule": ...}``); switch ``summarize_file``
and ``reduce_rows`` to the CLI's ranks code once it exists, so both agree by construction.
"""

import concurrent.futures
import os
import statistics
from typing import Any, Dict, Iterable, List, Optional

from memviz._snapshot import load

#: How outliers are flagged (also in docs/fleet.md).
RULE = (
    "outlier: an oom event, or a peak above median + max(3 x MAD, 10% of the median) "
    "of the files' peaks (MAD: median absolute deviation)"
)

#: Sites listed per row.
TOP_SITES = 3


def summarize_file(path: str) -> Dict[str, Any]:
    """One file's row: the device with the highest peak, its peak, final and reserved bytes, the
    top sites at the peak (innermost shown frame), and the oom events of every device."""
    snap = load(path)
    devices = snap.summary().get("devices", [])
    row: Dict[str, Any] = {
        "file": os.fspath(path), "device": None, "peak_bytes": 0, "final_bytes": 0,
        "reserved_bytes": 0, "oom_events": 0, "top_sites": [], "outlier": False,
    }
    if devices:
        top = max(devices, key=lambda d: d.get("peak_live_bytes", 0))
        row.update(
            device=top["device"],
            peak_bytes=top.get("peak_live_bytes", 0),
            final_bytes=top.get("final_live_bytes", 0),
            reserved_bytes=top.get("reserved_bytes", 0),
        )
        if top.get("trace_entries", 0) > 0:
            stacks = snap.folded(device=top["device"]).get("stacks", [])
            stacks = sorted(stacks, key=lambda s: -s["bytes"])[:TOP_SITES]
            row["top_sites"] = [
                {"label": s["frames"][-1] if s["frames"] else "<no frames>", "bytes": s["bytes"]}
                for s in stacks
            ]
    row["oom_events"] = len(snap.oom())
    return row


def reduce_rows(rows: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Sorts rows by peak (highest first; then by file) and flags the outliers (:data:`RULE`)."""
    rows = [dict(r) for r in rows]
    peaks = [r["peak_bytes"] for r in rows]
    if peaks:
        med = statistics.median(peaks)
        mad = statistics.median(abs(p - med) for p in peaks)
        limit = med + max(3 * mad, 0.1 * med)
        for r in rows:
            r["outlier"] = r["oom_events"] > 0 or (len(rows) > 2 and r["peak_bytes"] > limit)
    rows.sort(key=lambda r: (-r["peak_bytes"], r["file"]))
    return rows


def ranks(paths: Iterable[Any], client: Optional[Any] = None,
          max_workers: Optional[int] = None) -> List[Dict[str, Any]]:
    """Summarises many snapshot files: a list of rows (dicts) sorted by peak, outliers flagged.
    ``client``: a ``dask.distributed.Client`` (each worker opens its files itself, so the paths
    must be readable there); without one, a local thread pool of ``max_workers``."""
    paths = [os.fspath(p) for p in paths]
    if client is not None:
        futures = client.map(summarize_file, paths, pure=False)
        rows = client.gather(futures)
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max_workers) as pool:
            rows = list(pool.map(summarize_file, paths))
    return reduce_rows(rows)
