"""``Snapshot.query``: the structured filter of the page and of ``memviz query`` (the same Rust
grammar and evaluation, memviz_analysis::query), through the CLI's command-capture path."""

import json
import warnings
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from memviz import _native

if TYPE_CHECKING:
    from memviz._snapshot import Snapshot


def query(snapshot: "Snapshot", text: str, device: Optional[int] = None,
          user_code: Optional[str] = None) -> Dict[str, Any]:
    """``memviz query FILE TEXT --json``: the allocations of one device (default: the longest
    trace) that the filter ``text`` keeps (``"size>=1MiB site:/attn/ at:peak -action:free"``;
    the grammar is in docs and ``memviz query --help``). Returns ``{"device", "count",
    "bytes", "size", "rows"}``, each row ``{"element", "alloc_event", "free_event", "addr",
    "size", "stream", "site", "file", "line", "lifetime_events", "lifetime_us",
    "alive_at_peak"}`` (``None`` for a missing event or time). ``user_code`` names sites as in
    :meth:`Snapshot.lines`. A filter that does not parse raises :class:`BadArgumentError`
    (a ``ValueError``) whose message names the column; a term that cannot apply (a time on
    a trace without times, a phase on a file without annotations) matches nothing and warns."""
    args: List[str] = ["query", snapshot.name, "--json"]
    if device is not None:
        args += ["--device", str(int(device))]
    if user_code is not None:
        args += ["--user-code", str(user_code)]
    # `--`: the filter is a value even when it starts with `-` (a negated term).
    args += ["--", str(text)]
    out, warns = _native.command(args, [snapshot._native])
    for w in warns:
        warnings.warn(w, stacklevel=3)
    data: Dict[str, Any] = json.loads(out)
    return data
