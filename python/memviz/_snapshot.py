"""``load`` and ``Snapshot``: each method runs the CLI's command in-process and returns its
typed answer (``memviz._types``: the ``--json`` structs of the Rust code, field for field)."""

import html
import io
import os
import pickle
import warnings
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Type, TypeVar, Union

from memviz import _native
from memviz._native import BadArgumentError, MemvizError
from memviz._types import (
    Answer, Diff, Folded, Leaks, Lines, OomReport, State, Summary, SweepRow, WhatIf,
)

if TYPE_CHECKING:
    import pyarrow  # type: ignore[import-untyped,import-not-found,unused-ignore]

A = TypeVar("A", bound=Answer)


class Snapshot:
    """A parsed snapshot. Make one with :func:`load`."""

    def __init__(self, native: "_native.NativeSnapshot") -> None:
        self._native = native

    @property
    def name(self) -> str:
        """The file's path, or ``<bytes>`` / ``<dict>`` for a snapshot read from memory."""
        return self._native.name

    def __repr__(self) -> str:
        return f"<memviz.Snapshot {self.name!r}>"

    def _run(self, args: List[str],
             others: Optional[Sequence["_native.NativeSnapshot"]] = None) -> str:
        text, warns = _native.command(args, [self._native, *(others or [])])
        for w in warns:
            warnings.warn(w, stacklevel=3)
        return text

    def _data(self, args: List[str],
              others: Optional[Sequence["_native.NativeSnapshot"]] = None) -> Any:
        data, warns = _native.answer(args, [self._native, *(others or [])])
        for w in warns:
            warnings.warn(w, stacklevel=3)
        return data

    def _typed(self, cls: Type[A], args: List[str],
               others: Optional[Sequence["_native.NativeSnapshot"]] = None) -> A:
        data: Dict[str, Any] = self._data(args, others)
        return cls.from_dict(data)

    def summary(self) -> Summary:
        """``memviz summary FILE --json``: per-device counts, bytes, peak and warnings."""
        return self._typed(Summary, ["summary", self.name, "--json"])

    def folded(
        self,
        at: Union[str, int, None] = None,
        device: Optional[int] = None,
        all_frames: bool = False,
        lifetime: bool = False,
        range: Optional[str] = None,  # noqa: A002 (the CLI's option name)
        phase: Optional[str] = None,
        frames: Optional[str] = None,
        user_code: Optional[str] = None,
    ) -> Folded:
        """``memviz folded FILE --json``: live bytes by call stack at ``at`` ("peak", the
        default, or a trace event index), or bytes x timesteps with ``lifetime``, ``range``
        ("FROM:TO") or ``phase``. ``frames`` picks the frames of each stack as the flamegraph's
        modes do: ``"my_code"`` (only the user's frames, the library calls between them
        collapsed into one), ``"python"`` (no native or interpreter frames) or ``"all"``
        (``--frames my-code|python|all``; ``None``: the CLI's default, ``"my_code"`` when the
        file has frames of the user's code). ``user_code`` as in :meth:`lines`."""
        args = ["folded", self.name, "--json"]
        if at is not None:
            args += ["--at", str(at)]
        args += _device(device)
        if all_frames:
            args.append("--all-frames")
        if lifetime:
            args.append("--lifetime")
        if range is not None:
            args += ["--range", str(range)]
        if phase is not None:
            args += ["--phase", str(phase)]
        if frames is not None:
            args += ["--frames", _frames(frames)]
        return self._typed(Folded, args + _user_code(user_code))

    def query(self, text: str, device: Optional[int] = None,
              user_code: Optional[str] = None) -> Dict[str, Any]:
        """``memviz query FILE TEXT --json``: the allocations the structured filter keeps
        (``size>=1MiB site:/attn/ at:peak``; docs/query.md; :func:`memviz._query.query`)."""
        from memviz._query import query
        return query(self, text, device=device, user_code=user_code)

    def lines(self, device: Optional[int] = None, all_frames: bool = False,
              user_code: Optional[str] = None) -> Lines:
        """``memviz lines FILE --json``: bytes by allocation site, the innermost line of the
        user's code (docs/sites.md). Returns ``{"device", "peak_step", "rows"}``; each row
        carries its site (``file``, ``line``, ``name``, ``label``), its ``kind`` (``"user"``,
        ``"library"``, ``"autograd"``, ``"native"`` or ``"none"``), the byte columns
        (``live_at_peak_bytes``, ``total_bytes``, ``count``, ``largest_bytes``) and ``detail``:
        the library lines below the site, each a row of the same columns (``[]`` when there
        are none). ``user_code`` counts more files as the user's (``--user-code``: path
        prefixes or packages, comma-separated, or one ``/regex/``); a bad pattern raises
        :class:`MemvizError` (a ``ValueError``) with the CLI's message."""
        args = ["lines", self.name, "--json", *_device(device)]
        if all_frames:
            args.append("--all-frames")
        return self._typed(Lines, args + _user_code(user_code))

    def leaks(self, device: Optional[int] = None, user_code: Optional[str] = None) -> Leaks:
        """``memviz leaks FILE --json``: leak suspects of one device's trace. Each suspect
        carries its ``kind`` of suspect (``"alive_at_end"`` or ``"iteration_growth"``), its
        ``stack``, bytes, count, ``explanation`` and ``site``: ``{"file", "line", "name",
        "kind", "label", "detail"}``, where ``kind`` is the site's (``"user"``, ``"library"``,
        ``"autograd"``, ``"native"``, ``"none"``) and ``detail`` the library line below a user
        site (``{"file", "line", "name", "label"}``) or ``None``. ``user_code`` as in
        :meth:`lines`."""
        args = ["leaks", self.name, "--json", *_device(device)]
        return self._typed(Leaks, args + _user_code(user_code))

    def state(self, event: int = -1, device: Optional[int] = None) -> State:
        """``memviz state FILE --event K``: the allocator state after merged event ``event``
        (-1: the final state)."""
        return self._typed(State,
                           ["state", self.name, "--event", str(int(event)), *_device(device)])

    def oom(self, device: Optional[int] = None,
            user_code: Optional[str] = None) -> List[OomReport]:
        """``memviz oom FILE --json``: every ``oom`` event explained, one report per event
        (with its ``device``). ``biggest_live_sites`` names each of the biggest live blocks:
        ``address``, ``size`` and its site, ``file``, ``line``, ``name``, ``label``, ``kind``
        (``"user"``, ``"library"``, ``"autograd"``, ``"native"``, ``"none"``) and ``detail``
        (the library line below a user site, ``{"file", "line", "name", "label"}``, or
        ``None``). ``user_code`` as in :meth:`lines`."""
        args = ["oom", self.name, "--json", *_device(device)]
        data: List[Dict[str, Any]] = self._data(args + _user_code(user_code))
        return [OomReport.from_dict(r) for r in data]

    def diff(self, other: Any, device: Optional[int] = None,
             user_code: Optional[str] = None) -> Diff:
        """``memviz diff SELF OTHER --json``: what changed from this snapshot to ``other``.
        Each of ``groups`` (live bytes and counts by stack in both files) carries its ``site``:
        ``{"file", "line", "name", "kind", "label", "detail"}`` as in :meth:`leaks`.
        ``user_code`` as in :meth:`lines`."""
        if not isinstance(other, Snapshot):
            other = load(other)
        theirs = other._native
        if theirs.name == self.name and theirs is not self._native:
            theirs = theirs.renamed(theirs.name + " (2)")
        args = ["diff", self.name, theirs.name, "--json", *_device(device)]
        return self._typed(Diff, args + _user_code(user_code), [theirs])

    def whatif(self, alloc_conf: Optional[str] = None, capacity: Union[int, str, None] = None,
               device: Optional[int] = None, as_recorded: bool = False,
               user_code: Optional[str] = None) -> WhatIf:
        """``memviz whatif FILE --json`` for one device: its trace replayed through the model
        of PyTorch's caching allocator (docs/whatif.md). ``alloc_conf``: a
        ``PYTORCH_CUDA_ALLOC_CONF`` string whose keys apply over the recorded settings
        (``"expandable_segments:True,max_split_size_mb:512"``); an unknown key or a bad value
        raises :class:`BadArgumentError`. ``capacity``: the memory the allocator may reserve,
        bytes (``int``) or a size as the CLI reads it (``"40GiB"``, ``"40GB"`` = 40e9,
        ``"40G"``, ``"24576MiB"``); ``None``: the recorded device. ``as_recorded``: the
        recorded settings and device, with ``validation`` (takes neither ``alloc_conf`` nor
        ``capacity``). ``device``: default the longest trace. ``user_code`` names
        ``first_oom.site`` as in :meth:`lines`. Raises :class:`MemvizError` when the device has
        no trace."""
        d = self._one_device(device)
        args = ["whatif", self.name, "--json", "--device", str(d)]
        args += _whatif_args(alloc_conf, capacity)
        if as_recorded:
            args.append("--as-recorded")
        data: List[Dict[str, Any]] = self._data(args + _user_code(user_code))
        if not data:
            raise MemvizError(f"{self.name}, device {d}: no trace to replay")
        return WhatIf.from_dict(data[0])

    def min_capacity(self, alloc_conf: Optional[str] = None,
                     device: Optional[int] = None) -> Optional[int]:
        """The smallest capacity in bytes (a multiple of 2 MiB) on which the device's trace
        replays without an OOM under ``alloc_conf`` (as in :meth:`whatif`); ``None`` when an
        OOM remains on any capacity. Often below the peak reserved bytes: a full allocator
        frees its cache and retries."""
        return self.whatif(alloc_conf=alloc_conf, device=device).min_capacity

    def whatif_sweep(self, capacity: Union[int, str, None] = None,
                     device: Optional[int] = None,
                     user_code: Optional[str] = None) -> List[SweepRow]:
        """``memviz whatif FILE --sweep --json`` for one device: one :class:`SweepRow` per
        standard alternative (recorded, expandable_segments, max_split_size_mb 128/256/512,
        roundup_power2_divisions 4/8, garbage_collection_threshold 0.6), each with its
        outcome on ``capacity`` (as in :meth:`whatif`) and its ``min_capacity``; the row with
        the smallest capacity has ``best``. Raises :class:`MemvizError` when the device has
        no trace."""
        d = self._one_device(device)
        args = ["whatif", self.name, "--json", "--sweep", "--device", str(d)]
        args += _whatif_args(None, capacity)
        data: List[Dict[str, Any]] = self._data(args + _user_code(user_code))
        if not data:
            raise MemvizError(f"{self.name}, device {d}: no trace to replay")
        return [SweepRow.from_dict(r) for r in data]

    def _table(self, name: str, device: Optional[int] = None, event: Optional[int] = None,
               user_code: Optional[str] = None) -> "pyarrow.Table":
        pa = _pyarrow()
        native = _native.table(self._native, name, device, event, user_code)
        # The Arrow C stream interface (``__arrow_c_stream__``): pyarrow takes the buffers
        # Rust made, without a copy.
        table: "pyarrow.Table" = pa.table(native)
        return table

    def trace(self, device: Optional[int] = None) -> "pyarrow.Table":
        """One row per trace event of ``device`` (``None``: every device): ``event`` (the row
        in the device's trace), ``device``, ``action`` (dictionary), ``address``, ``size``,
        ``stream`` (raw ``cudaStream_t``), ``time_us`` (null without a time), ``stack`` (an id
        of :meth:`stacks`), ``compile_context`` and ``user_metadata`` (null when absent).
        Needs pyarrow (``pip install memviz[arrow]``); ``memviz export FILE --table trace``."""
        return self._table("trace", device)

    def allocations(self, device: Optional[int] = None,
                    user_code: Optional[str] = None) -> "pyarrow.Table":
        """One row per allocation (an element of the Active Memory Timeline) of ``device``
        (``None``: every device): ``device``, ``element``, ``alloc_event`` / ``free_event``
        (trace rows; null: present at the start / alive at the end), ``address``, ``size``,
        ``stream``, ``stack``, the site by memviz's frame rules (``site``, ``site_kind``,
        ``site_file``, ``site_line``; ``user_code`` as in :meth:`lines`), ``alloc_us``,
        ``free_us``, ``lifetime_events``, ``lifetime_us``, ``alive_at_peak``."""
        return self._table("allocations", device, user_code=user_code)

    def frames(self, user_code: Optional[str] = None) -> "pyarrow.Table":
        """Every frame: ``frame`` (id), ``filename``, ``line``, ``name``, ``kind``
        (``user``, ``library``, ``interpreter``, ``native``)."""
        return self._table("frames", user_code=user_code)

    def stacks(self) -> "pyarrow.Table":
        """Every interned stack: ``stack`` (id) and ``frames`` (frame ids, innermost first)."""
        return self._table("stacks")

    def segments(self) -> "pyarrow.Table":
        """The snapshot's segments (the state at the end), one row each."""
        return self._table("segments")

    def blocks_at(self, event: int = -1, device: Optional[int] = None,
                  user_code: Optional[str] = None) -> "pyarrow.Table":
        """The allocator state after merged event ``event`` (-1: the final state; numbered as
        :meth:`state`): a row per segment, then per live block (``kind``), with ``address``,
        ``size``, ``requested_size``, ``pending``, ``stream``, pool, ``stack`` and site."""
        return self._table("blocks", device, int(event), user_code)

    def lines_table(self, device: Optional[int] = None,
                    user_code: Optional[str] = None) -> "pyarrow.Table":
        """:meth:`lines`' rows as a table (``detail``: a list of structs)."""
        return self._table("lines", device, user_code=user_code)

    def _one_device(self, device: Optional[int]) -> int:
        return self._native.default_device if device is None else int(device)

    def to_html(self, path: Union[str, "os.PathLike[str]"], title: Optional[str] = None,
                dist: Optional[str] = None) -> str:
        """``memviz html FILE -o PATH``: the single-file report, which opens offline. Needs
        the built viewer: embedded in the package, ``dist``, or ``$MEMVIZ_DIST``. Returns the
        path."""
        out = os.fspath(path)
        args = ["html", self.name, "-o", out]
        if dist is not None:
            args += ["--dist", os.fspath(dist)]
        if title is not None:
            args += ["--title", title]
        self._run(args)
        return out

    def _repr_html_(self) -> str:
        s = self.summary()
        e = html.escape
        rows = "".join(
            "<tr>"
            + "".join(
                f"<td>{e(_size(v) if k.endswith('bytes') else str(v))}</td>"
                for k, v in (("device", d.device), ("trace_entries", d.trace_entries),
                             ("peak_live_bytes", d.peak_live_bytes),
                             ("final_live_bytes", d.final_live_bytes),
                             ("allocated_bytes", d.allocated_bytes),
                             ("reserved_bytes", d.reserved_bytes), ("segments", d.segments))
            )
            + "</tr>"
            for d in s.devices
        )
        head = "".join(
            f"<th>{h}</th>"
            for h in ("device", "events", "peak", "final", "allocated", "reserved", "segments")
        )
        warns = "".join(f"<li>{e(str(w))}</li>" for w in s.warnings)
        return (
            f"<div class=\"memviz-summary\"><b>memviz</b> {e(self.name)}"
            f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
            + (f"<ul>{warns}</ul>" if warns else "")
            + "</div>"
        )


def _pyarrow() -> Any:
    """pyarrow, or an ImportError that says how to get it."""
    try:
        import pyarrow
    except ImportError as e:
        raise ImportError(
            "memviz's tables need pyarrow: pip install memviz[arrow] (or pip install pyarrow)"
        ) from e
    return pyarrow


def _size(n: Any) -> str:
    """Bytes as the CLI's table shows them (KiB, MiB, GiB)."""
    if not isinstance(n, int):
        return ""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if abs(n) >= 1 << shift:
            return f"{n / (1 << shift):.1f}{unit}"
    return f"{n}B"


def _device(device: Optional[int]) -> List[str]:
    return [] if device is None else ["--device", str(int(device))]


def _whatif_args(alloc_conf: Optional[str], capacity: Union[int, str, None]) -> List[str]:
    """``--alloc-conf`` and ``--capacity`` (the CLI parses and checks both; ``=`` keeps a
    value that starts with ``-`` a value)."""
    args: List[str] = []
    if alloc_conf is not None:
        if not isinstance(alloc_conf, str):
            raise TypeError(f"alloc_conf takes a str, not {type(alloc_conf).__name__}")
        args.append(f"--alloc-conf={alloc_conf}")
    if capacity is not None:
        if isinstance(capacity, bool) or not isinstance(capacity, (int, str)):
            raise TypeError(f"capacity takes bytes (int) or a size (str such as '40GiB'), "
                            f"not {type(capacity).__name__}")
        args.append(f"--capacity={capacity}")
    return args


def _user_code(user_code: Optional[str]) -> List[str]:
    return [] if user_code is None else ["--user-code", str(user_code)]


#: ``folded(frames=...)``: the Python names of the CLI's ``--frames`` values.
_FRAMES = {"my_code": "my-code", "python": "python", "all": "all"}


def _frames(frames: str) -> str:
    value = _FRAMES.get(str(frames).replace("-", "_"))
    if value is None:
        raise BadArgumentError(
            f"frames={frames!r}: expected one of {', '.join(map(repr, _FRAMES))}"
        )
    return value


def _from_bytes(data: bytes, name: str) -> Snapshot:
    native, warns = _native.load_bytes(bytes(data), name)
    for w in warns:
        warnings.warn(w, stacklevel=3)
    return Snapshot(native)


def load(x: Any) -> Snapshot:
    """Reads a snapshot from a path (``str`` or ``os.PathLike``), ``bytes``, a file object,
    the dict ``torch.cuda.memory._snapshot()`` returns or the list ``torch.cuda.memory_snapshot()``
    returns (pickled in memory: the parser executes nothing). A file is a pickle, JSON or
    ``torch.save``'d snapshot, optionally gzip-compressed, as the CLI reads it. Raises
    :class:`MemvizError` with the CLI's message."""
    if isinstance(x, Snapshot):
        return x
    if isinstance(x, (str, os.PathLike)):
        native, warns = _native.open(os.fspath(x))
        for w in warns:
            warnings.warn(w, stacklevel=2)
        return Snapshot(native)
    if isinstance(x, (bytes, bytearray, memoryview)):
        return _from_bytes(bytes(x), "<bytes>")
    if isinstance(x, (dict, list)):
        try:
            data = pickle.dumps(x, protocol=4)
        except Exception as e:  # an object pickle cannot write
            raise BadArgumentError(f"<dict>: cannot pickle it: {e}") from e
        return _from_bytes(data, "<dict>")
    read = getattr(x, "read", None)
    if callable(read):
        data = read()
        name = getattr(x, "name", None)
        name = name if isinstance(name, str) else "<file>"
        if isinstance(data, str):
            # A file opened in text mode: a JSON snapshot reads as text, and its UTF-8 is the
            # file; anything else needs the bytes (a pickle in text mode mostly fails in read()).
            try:
                return _from_bytes(data.encode("utf-8"), name)
            except MemvizError as e:
                raise type(e)(f"{e} (the file was opened in text mode: open a pickle or a "
                                  "gzip file in binary mode, 'rb')") from None
        if isinstance(x, io.TextIOBase):
            raise BadArgumentError("open the file in binary mode ('rb')")
        return _from_bytes(data, name)
    raise TypeError(
        f"memviz.load takes a path, bytes, a file object, or a snapshot dict or segment list, not {type(x).__name__}"
    )
