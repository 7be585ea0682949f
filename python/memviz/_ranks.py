"""``ranks``: one summary row per snapshot file (a rank of a job), sorted by peak, outliers
flagged: the rows of ``memviz ranks --json``, made by the same Rust code
(``memviz_analysis::ranks``). With a Dask ``distributed.Client`` each file is read by a worker
(one task per path: only the path goes through the scheduler, and only the small row comes
back); without one, a local thread pool (the native calls release the GIL). The rows are then
flagged and sorted on the caller's side, over all of them.
"""

import concurrent.futures
import json
import os
from typing import Any, Dict, Iterable, List, Optional

from memviz import _native

#: How outliers are flagged (the ``rule`` of ``memviz ranks --json``; also in docs/fleet.md).
RULE: str = _native.RANKS_RULE


def summarize_file(path: Any) -> Dict[str, Any]:
    """One file's row (``memviz ranks PATH --json``): the device with the highest peak, its
    peak, final and reserved bytes, the top sites at the peak, and the ``oom`` events of every
    device. ``outlier`` is set by :func:`reduce_rows`, over many rows."""
    path = os.fspath(path)
    text, _warnings = _native.command(["ranks", path, "--json"], [])
    (row,) = json.loads(text)["rows"]
    return row


def reduce_rows(rows: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Flags the outliers (:data:`RULE`) and sorts by peak (highest first, then by file), as
    ``memviz ranks`` does over its files."""
    return json.loads(_native.ranks_reduce(json.dumps(list(rows))))


def ranks(paths: Iterable[Any], client: Optional[Any] = None,
          max_workers: Optional[int] = None) -> List[Dict[str, Any]]:
    """Summarises many snapshot files: a list of rows (dicts) sorted by peak, outliers flagged,
    equal to the ``rows`` of ``memviz ranks PATHS... --json``. ``client``: a
    ``dask.distributed.Client`` (each worker opens its files itself, so the paths must be
    readable there); without one, a local thread pool of ``max_workers``."""
    paths = [os.fspath(p) for p in paths]
    if client is not None:
        futures = client.map(summarize_file, paths, pure=False)
        rows = client.gather(futures)
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max_workers) as pool:
            rows = list(pool.map(summarize_file, paths))
    return reduce_rows(rows)
