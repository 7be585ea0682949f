"""memviz: PyTorch CUDA memory snapshots, from Python.

The same Rust code as the ``memviz`` command (one native module, ``memviz._native``):
``load`` a snapshot, ask it for the CLI's JSON answers as plain Python objects, ``show`` the
viewer in a notebook, ``record`` one from PyTorch, and summarise many ranks with ``ranks``.
See docs/python.md.
"""

from memviz._native import MemvizError
from memviz._snapshot import Snapshot, load
from memviz._record import Recording, record
from memviz._show import show
from memviz._ranks import RULE, ranks, summarize_file

__all__ = [
    "MemvizError",
    "RULE",
    "Recording",
    "Snapshot",
    "load",
    "ranks",
    "record",
    "show",
    "summarize_file",
]
