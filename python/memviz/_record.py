"""``record``: a context manager around PyTorch's memory history. torch is imported here,
lazily, and nowhere else in the package."""

import contextlib
import importlib
import os
from typing import Any, Iterator, Optional, Union

from memviz._snapshot import Snapshot, load


class Recording:
    """What ``with memviz.record() as r`` yields; ``r.snapshot`` is set when the block ends."""

    def __init__(self, path: Optional[str]) -> None:
        self.path = path
        self.snapshot: Optional[Snapshot] = None

    def __repr__(self) -> str:
        return f"<memviz.Recording path={self.path!r} snapshot={self.snapshot!r}>"


@contextlib.contextmanager
def record(path: Union[str, "os.PathLike[str]", None] = None,
           max_entries: int = 100000) -> Iterator[Recording]:
    """Records the CUDA caching allocator's history inside the block
    (``torch.cuda.memory._record_memory_history(max_entries=...)``), then takes the snapshot:
    ``_dump_snapshot(path)`` when a path is given, else ``_snapshot()`` read in memory. Recording
    stops at the end of the block, also when it raises."""
    # Lazily, by name: only recording needs PyTorch (an optional dependency).
    torch: Any = importlib.import_module("torch")
    mem = torch.cuda.memory
    rec = Recording(None if path is None else os.fspath(path))
    mem._record_memory_history(max_entries=max_entries)
    try:
        yield rec
        if rec.path is None:
            rec.snapshot = load(mem._snapshot())
        else:
            mem._dump_snapshot(rec.path)
            rec.snapshot = load(rec.path)
    finally:
        mem._record_memory_history(enabled=None)
