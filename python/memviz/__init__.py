"""memviz: PyTorch CUDA memory snapshots, from Python.

The same Rust code as the ``memviz`` command (one native module, ``memviz._native``):
``load`` a snapshot, ask it for the CLI's answers as typed objects (``memviz._types``: one
frozen dataclass per answer, ``to_dict()`` for the CLI's JSON), ``show`` the viewer in a
notebook, ``record`` one from PyTorch, and summarise many ranks with ``ranks``. Errors are
``MemvizError`` subclasses by kind. See docs/python.md.
"""

from memviz._native import (
    BadArgumentError,
    InternalError,
    MemvizError,
    MemvizIOError,
    NotASnapshotError,
    TooBigError,
    TruncatedError,
    UnknownDeviceError,
)
from memviz._snapshot import Snapshot, load
from memviz._record import Recording, record
from memviz._show import show
from memviz._ranks import RULE, ranks, summarize_file
from memviz._types import (
    Answer,
    DeviceSummary,
    Diff,
    DiffGroup,
    Folded,
    FoldedStack,
    LeakSuspect,
    Leaks,
    LineDetail,
    Lines,
    LinesRow,
    LiveSite,
    OomReport,
    RankRow,
    RankSite,
    SegmentKey,
    Site,
    SiteDetail,
    State,
    Summary,
)

__all__ = [
    "Answer",
    "BadArgumentError",
    "DeviceSummary",
    "Diff",
    "DiffGroup",
    "Folded",
    "FoldedStack",
    "InternalError",
    "LeakSuspect",
    "Leaks",
    "LineDetail",
    "Lines",
    "LinesRow",
    "LiveSite",
    "MemvizError",
    "MemvizIOError",
    "NotASnapshotError",
    "OomReport",
    "RULE",
    "RankRow",
    "RankSite",
    "Recording",
    "SegmentKey",
    "Site",
    "SiteDetail",
    "Snapshot",
    "State",
    "Summary",
    "TooBigError",
    "TruncatedError",
    "UnknownDeviceError",
    "load",
    "ranks",
    "record",
    "show",
    "summarize_file",
]
