"""memviz: PyTorch CUDA memory snapshots, from Python.

The same Rust code as the ``memviz`` command (one native module, ``memviz._native``):
``load`` a snapshot, ask it for the CLI's answers as typed objects (``memviz._types``: one
frozen dataclass per answer, ``to_dict()`` for the CLI's JSON), ``show`` the viewer in a
notebook, ``record`` one from PyTorch, summarise many ranks with ``ranks``, and replay a trace
under other allocator settings with ``Snapshot.whatif`` (``min_capacities`` for many ranks).
Errors are ``MemvizError`` subclasses by kind. See docs/python.md.
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
from memviz._ranks import RULE, min_capacities, min_capacity_file, ranks, summarize_file
from memviz._types import (
    Answer,
    DeviceSummary,
    Diff,
    DiffGroup,
    Folded,
    FoldedStack,
    Fragmentation,
    FreeAtOom,
    LeakSuspect,
    Leaks,
    LineDetail,
    Lines,
    LinesRow,
    LiveSite,
    OomReport,
    RankCapacity,
    RankRow,
    RankSite,
    SegmentEvent,
    SegmentKey,
    Site,
    SiteDetail,
    State,
    Summary,
    SweepRow,
    Validation,
    ValidationCounts,
    ValidationDifference,
    WhatIf,
    WhatIfOom,
)

__all__ = [
    "Answer",
    "BadArgumentError",
    "DeviceSummary",
    "Diff",
    "DiffGroup",
    "Folded",
    "FoldedStack",
    "Fragmentation",
    "FreeAtOom",
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
    "RankCapacity",
    "RankRow",
    "RankSite",
    "Recording",
    "SegmentEvent",
    "SegmentKey",
    "Site",
    "SiteDetail",
    "Snapshot",
    "State",
    "Summary",
    "SweepRow",
    "TooBigError",
    "TruncatedError",
    "UnknownDeviceError",
    "Validation",
    "ValidationCounts",
    "ValidationDifference",
    "WhatIf",
    "WhatIfOom",
    "load",
    "min_capacities",
    "min_capacity_file",
    "ranks",
    "record",
    "show",
    "summarize_file",
]
