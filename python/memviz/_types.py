"""The answers' typed classes: one frozen dataclass per answer and per part of one, with typed
fields named as the CLI's ``--json`` keys. They are made from the Rust answer structs
(``memviz_cli::answer``, handed over by ``pythonize`` as plain Python objects), never from
printed text. ``to_dict()`` gives back the CLI's JSON shape (``memviz CMD --json``, field for
field), and ``x["key"]`` / ``"key" in x`` / ``x.keys()`` / iteration over the keys still work
as on the dicts earlier versions returned."""

import dataclasses
import typing
from typing import Any, ClassVar, Dict, FrozenSet, Iterator, List, Optional, Tuple, Type, TypeVar

T = TypeVar("T", bound="Answer")

_HINTS: Dict[type, Dict[str, Any]] = {}


def _hints(cls: type) -> Dict[str, Any]:
    h = _HINTS.get(cls)
    if h is None:
        h = {f.name: typing.get_type_hints(cls)[f.name] for f in dataclasses.fields(cls)}
        _HINTS[cls] = h
    return h


def _convert(tp: Any, v: Any) -> Any:
    """``v`` (plain data) as the type ``tp``."""
    if isinstance(tp, type) and issubclass(tp, Answer):
        return tp.from_dict(v)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union:  # Optional[X]
        if v is None:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _convert(inner, v)
    if origin is list:
        return [_convert(args[0], x) for x in v]
    if origin is tuple:
        return tuple(_convert(a, x) for a, x in zip(args, v))
    if origin is dict:
        return {k: _convert(args[1], x) for k, x in v.items()}
    if tp is float and isinstance(v, int):
        return float(v)
    return v


def _plain(v: Any) -> Any:
    """``v`` as the CLI's JSON has it: dicts, lists, numbers, strings, None."""
    if isinstance(v, Answer):
        return v.to_dict()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


class Answer:
    """What every answer class has: ``from_dict``, ``to_dict`` and read-only dict-style access
    by the JSON keys."""

    #: Fields the JSON leaves out when they are None.
    _OMIT_NONE: ClassVar[FrozenSet[str]] = frozenset()

    @classmethod
    def from_dict(cls: Type[T], data: Dict[str, Any]) -> T:
        """The answer made from its plain data (the CLI's JSON shape); unknown keys are an
        error (the classes and the Rust structs are one build)."""
        hints = _hints(cls)
        extra = set(data) - set(hints)
        if extra:
            raise TypeError(f"{cls.__name__}: unexpected fields {sorted(extra)}")
        return cls(**{k: _convert(hints[k], v) for k, v in data.items()})

    def to_dict(self) -> Dict[str, Any]:
        """The CLI's JSON shape of this answer (``memviz CMD --json``), as plain data."""
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if v is None and f.name in self._OMIT_NONE:
                continue
            out[f.name] = _plain(v)
        return out

    def keys(self) -> List[str]:
        """The JSON keys (the field names; fields the JSON omits when None left out)."""
        return [
            f.name
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
            if not (f.name in self._OMIT_NONE and getattr(self, f.name) is None)
        ]

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        """``self[key]``, or ``default`` when there is no such key."""
        return getattr(self, key) if key in self.keys() else default

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())


_frozen = dataclasses.dataclass(frozen=True)


@_frozen
class DeviceSummary(Answer):
    """One device of :class:`Summary`."""
    device: int
    trace_entries: int
    actions: Dict[str, int]
    segments: int
    blocks: int
    reserved_bytes: int
    allocated_bytes: int
    requested_bytes: int
    timeline_allocations: int
    peak_live_bytes: int
    final_live_bytes: int


@_frozen
class Summary(Answer):
    """``memviz summary --json``."""
    devices: List[DeviceSummary]
    warnings: List[str]


@_frozen
class FoldedStack(Answer):
    """One stack of :class:`Folded`: frames root first, and its bytes."""
    frames: List[str]
    bytes: int


@_frozen
class Folded(Answer):
    """``memviz folded --json``."""
    _OMIT_NONE: ClassVar[FrozenSet[str]] = frozenset({"at_event", "step_range"})
    device: int
    at_step: Optional[int]
    total_bytes: int
    stacks: List[FoldedStack]
    lifetime: bool
    frames: str
    all_frames: bool
    at_event: Optional[int] = None
    step_range: Optional[Tuple[int, int]] = None


@_frozen
class SiteDetail(Answer):
    """The library line below a user site."""
    file: str
    line: int
    name: str
    label: str


@_frozen
class Site(Answer):
    """An allocation site (docs/sites.md); ``kind``: user, library, autograd, native, none."""
    kind: str
    file: str
    line: int
    name: str
    label: str
    detail: Optional[SiteDetail]


@_frozen
class LineDetail(Answer):
    """A library line below a site of :class:`Lines`, with its byte columns."""
    file: str
    line: int
    name: str
    live_at_peak_bytes: int
    total_bytes: int
    count: int
    largest_bytes: int


@_frozen
class LinesRow(Answer):
    """One site of :class:`Lines`."""
    file: str
    line: int
    name: str
    kind: str
    label: str
    live_at_peak_bytes: int
    total_bytes: int
    count: int
    largest_bytes: int
    detail: List[LineDetail]


@_frozen
class Lines(Answer):
    """``memviz lines --json``."""
    device: int
    peak_step: int
    rows: List[LinesRow]


@_frozen
class LeakSuspect(Answer):
    """One suspect of :class:`Leaks`; ``kind``: alive_at_end or iteration_growth."""
    kind: str
    stack: List[str]
    bytes: int
    count: int
    growth_per_iteration: Optional[float]
    first_event: int
    explanation: str
    site: Site


@_frozen
class Leaks(Answer):
    """``memviz leaks --json``."""
    settled_step: int
    settled_rule: str
    suspects: List[LeakSuspect]
    device: int


@_frozen
class State(Answer):
    """``memviz state``: the allocator state after a merged event."""
    event: int
    action: str
    reserved_bytes: int
    allocated_bytes: int
    segments: int
    blocks: int


@_frozen
class LiveSite(Site):
    """One of the biggest live blocks of an :class:`OomReport`: its site, address and size."""
    address: int
    size: int


@_frozen
class OomReport(Answer):
    """One oom event explained (``memviz oom --json`` is a list of them)."""
    event: int
    requested_bytes: int
    device_free_bytes: Optional[int]
    reserved_bytes: int
    allocated_bytes: int
    reserved_free_bytes: int
    largest_free_block_bytes: int
    stream: int
    pool: Tuple[int, int]
    kind: str
    verdict: str
    biggest_live: List[Tuple[int, int]]
    device: int
    biggest_live_sites: List[LiveSite]


@_frozen
class DiffGroup(Answer):
    """One stack of :class:`Diff`: live bytes and counts in A and B."""
    stack: List[str]
    bytes_a: int
    bytes_b: int
    count_a: int
    count_b: int
    site: Site


@_frozen
class SegmentKey(Answer):
    """A segment only one side of :class:`Diff` has."""
    device: int
    address: int
    total_size: int
    stream: int


@_frozen
class Diff(Answer):
    """``memviz diff --json``."""
    groups: List[DiffGroup]
    segments_only_a: List[SegmentKey]
    segments_only_b: List[SegmentKey]


@_frozen
class RankSite(Answer):
    """One of a :class:`RankRow`'s top sites at the peak."""
    label: str
    bytes: int


@_frozen
class RankRow(Answer):
    """One file of ``memviz ranks --json``."""
    file: str
    device: Optional[int]
    peak_bytes: int
    final_bytes: int
    reserved_bytes: int
    oom_events: int
    top_sites: List[RankSite]
    outlier: bool


@_frozen
class Fragmentation(Answer):
    """:class:`WhatIf`'s ``fragmentation_at_peak``: when reserved bytes reached their peak
    (trace ``event``), ``free`` = ``reserved`` - ``allocated`` and the largest free block."""
    event: int
    reserved: int
    allocated: int
    free: int
    largest_free_block: int


@_frozen
class FreeAtOom(Answer):
    """What the device looked like when a :class:`WhatIfOom`'s request failed (after the
    allocator released what it could)."""
    reserved: int
    allocated: int
    cached_free: int
    largest_free_block: int
    device_free: int


@_frozen
class WhatIfOom(Answer):
    """:class:`WhatIf`'s ``first_oom``: the first request the model could not meet. ``event``
    is the row of the device trace; ``site`` the allocation's site, labelled as
    :meth:`Snapshot.lines` labels it; ``recorded``: the trace has an ``oom`` there too;
    ``merged_event``: the same event as the State History and :meth:`Snapshot.oom` number events
    (a free_requested/free_completed pair counts once)."""
    event: int
    merged_event: int
    requested: int
    rounded: int
    stream: int
    site: Optional[str]
    recorded: bool
    capacity: Optional[int]
    free: FreeAtOom


@_frozen
class SegmentEvent(Answer):
    """A segment event of :class:`ValidationDifference`; ``kind``: alloc, free, map, unmap;
    ``event``: the trace row."""
    kind: str
    size: int
    event: int


@_frozen
class ValidationCounts(Answer):
    """Segment events by kind, and the peak reserved bytes (:class:`Validation`)."""
    segment_alloc: int
    segment_free: int
    segment_map: int
    segment_unmap: int
    peak_reserved: int


@_frozen
class ValidationDifference(Answer):
    """Where the model's segment events first differ from the recording's."""
    index: int
    recorded: Optional[SegmentEvent]
    model: Optional[SegmentEvent]


@_frozen
class Validation(Answer):
    """``whatif(as_recorded=True)``: the model's segment events against the trace's own
    (docs/whatif.md, Validation)."""
    device: int
    settings: str
    recorded: ValidationCounts
    model: ValidationCounts
    matches: bool
    matches_per_event: bool
    first_difference: Optional[ValidationDifference]


@_frozen
class WhatIf(Answer):
    """One device of ``memviz whatif --json``: the trace replayed through the allocator model
    under ``settings`` (the canonical ``PYTORCH_CUDA_ALLOC_CONF``; ``""``: PyTorch's defaults)
    on ``capacity`` bytes (``None``: the recorded device, held to ``recorded_capacity``, the
    limit the trace shows, when it shows one). ``segment_allocs`` /
    ``segment_frees``: cudaMalloc / cudaFree sizes in order (expandable segments: the mapped
    and unmapped sizes); ``min_capacity``: the smallest capacity with no OOM (``None``: an OOM
    remains on any); ``recorded_settings``: ``None`` when the file records none."""
    device: int
    settings: str
    capacity: Optional[int]
    recorded_capacity: Optional[int]
    segment_allocs: List[int]
    segment_frees: List[int]
    peak_reserved: int
    peak_allocated: int
    fragmentation_at_peak: Fragmentation
    cuda_mallocs: int
    cuda_frees: int
    first_oom: Optional[WhatIfOom]
    ooms: int
    recorded_ooms_fitted: int
    empty_cache_calls: int
    initial_reserved: int
    initial_allocated: int
    completed: bool
    events: int
    inconsistencies: int
    min_capacity: Optional[int]
    recorded_settings: Optional[str]
    validation: Optional[Validation]


@_frozen
class SweepRow(WhatIf):
    """One row of ``memviz whatif --sweep --json``: one of the standard alternatives
    (``name``: ``recorded`` or the conf keys changed); ``best``: the smallest capacity of its
    device."""
    name: str
    best: bool


@_frozen
class RankCapacity(Answer):
    """One file of :func:`memviz.min_capacities`: the smallest card the rank fits on. ``device``:
    the device that needs the most (``None``: no trace); ``min_capacity``: ``None`` without a
    trace or when an OOM remains on any capacity."""
    file: str
    device: Optional[int]
    settings: Optional[str]
    peak_reserved: Optional[int]
    min_capacity: Optional[int]


__all__ = [
    "Answer", "DeviceSummary", "Diff", "DiffGroup", "Folded", "FoldedStack", "Fragmentation",
    "FreeAtOom", "LeakSuspect", "Leaks", "LineDetail", "Lines", "LinesRow", "LiveSite",
    "OomReport", "RankCapacity", "RankRow", "RankSite", "SegmentEvent", "SegmentKey", "Site",
    "SiteDetail", "State", "Summary", "SweepRow", "Validation", "ValidationCounts",
    "ValidationDifference", "WhatIf", "WhatIfOom",
]
