"""``ranks``: one summary row per snapshot file (a rank of a job), sorted by peak, outliers
flagged: the rows of ``memviz ranks --json``, made by the same Rust code
(``memviz_analysis::ranks``); ``min_capacities``: the smallest card each rank fits on
(``memviz whatif FILE --json``'s ``min_capacity``, docs/whatif.md). With a Dask ``distributed.Client`` each file is read by a worker
(one task per path: only the path goes through the scheduler, and only the small row comes
back); without one, a local thread pool (the native calls release the GIL). The rows are then
flagged and sorted on the caller's side, over all of them.
"""

import concurrent.futures
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from memviz import _native
from memviz._types import RankCapacity, RankRow

#: How outliers are flagged (the ``rule`` of ``memviz ranks --json``; also in docs/fleet.md).
RULE: str = _native.RANKS_RULE


def summarize_file(path: "Union[str, os.PathLike[str]]") -> RankRow:
    """One file's row (``memviz ranks PATH --json``): the device with the highest peak, its
    peak, final and reserved bytes, the top sites at the peak, and the ``oom`` events of every
    device. ``outlier`` is set by :func:`reduce_rows`, over many rows."""
    data, _warnings = _native.answer(["ranks", os.fspath(path), "--json"], [])
    (row,) = data["rows"]
    return RankRow.from_dict(row)


def reduce_rows(rows: Iterable[Union[RankRow, Mapping[str, Any]]]) -> List[RankRow]:
    """Flags the outliers (:data:`RULE`) and sorts by peak (highest first, then by file), as
    ``memviz ranks`` does over its files. ``rows``: :class:`RankRow`, or dicts of their keys."""
    plain: List[Dict[str, Any]] = [
        r.to_dict() if isinstance(r, RankRow) else dict(r) for r in rows
    ]
    out: List[Dict[str, Any]] = _native.ranks_reduce(plain)
    return [RankRow.from_dict(r) for r in out]


def ranks(paths: "Iterable[Union[str, os.PathLike[str]]]", client: Optional[Any] = None,
          max_workers: Optional[int] = None,
          parquet_dir: "Optional[Union[str, os.PathLike[str]]]" = None) -> List[RankRow]:
    """Summarises many snapshot files: a list of rows (:class:`RankRow`) sorted by peak, outliers flagged,
    equal to the ``rows`` of ``memviz ranks PATHS... --json``. ``client``: a
    ``dask.distributed.Client`` (each worker opens its files itself, so the paths must be
    readable there); without one, a local thread pool of ``max_workers``. ``parquet_dir``:
    also write the rows, in this order, to ``DIR/ranks.parquet``, one row group per rank
    (columns as the rows' keys, ``top_sites`` a list of ``{label, bytes}``), which DuckDB,
    Spark or pandas read without memviz."""
    names = [os.fspath(p) for p in paths]
    rows: List[RankRow]
    if client is not None:
        futures = client.map(summarize_file, names, pure=False)
        rows = list(client.gather(futures))
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max_workers) as pool:
            rows = list(pool.map(summarize_file, names))
    out = reduce_rows(rows)
    if parquet_dir is not None:
        os.makedirs(parquet_dir, exist_ok=True)
        path = os.path.join(os.fspath(parquet_dir), "ranks.parquet")
        _native.ranks_parquet([r.to_dict() for r in out], path)
    return out


def min_capacity_file(path: "Union[str, os.PathLike[str]]",
                      alloc_conf: Optional[str] = None) -> RankCapacity:
    """One file's smallest card (``memviz whatif PATH --json``): over the devices with a trace,
    the one whose smallest capacity is the largest (an OOM on any capacity counts as the
    largest), its ``min_capacity``, peak reserved bytes and replayed settings. ``alloc_conf``
    as in :meth:`memviz.Snapshot.whatif`."""
    name = os.fspath(path)
    args = ["whatif", name, "--json"]
    if alloc_conf is not None:
        args.append(f"--alloc-conf={alloc_conf}")
    data, _warnings = _native.answer(args, [])
    worst: Optional[Dict[str, Any]] = None
    for d in data:
        need = d["min_capacity"]
        if worst is None or need is None or (
                worst["min_capacity"] is not None and need > worst["min_capacity"]):
            worst = d
            if need is None:
                break
    keys = ("device", "settings", "peak_reserved", "min_capacity")
    return RankCapacity.from_dict(
        {"file": name, **{k: None if worst is None else worst[k] for k in keys}})


def min_capacities(paths: "Iterable[Union[str, os.PathLike[str]]]",
                   alloc_conf: Optional[str] = None, client: Optional[Any] = None,
                   max_workers: Optional[int] = None) -> List[RankCapacity]:
    """The smallest card of each rank: one :class:`RankCapacity` per path, in the order given
    (:func:`min_capacity_file`; each file is replayed and bisected, a few replays per
    device). ``client`` and ``max_workers`` as in :func:`ranks`."""
    names = [os.fspath(p) for p in paths]
    if client is not None:
        futures = client.map(min_capacity_file, names, alloc_conf=alloc_conf, pure=False)
        return list(client.gather(futures))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max_workers) as pool:
        return list(pool.map(lambda n: min_capacity_file(n, alloc_conf), names))
