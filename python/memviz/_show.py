"""``show``: the viewer inline in a notebook, offline: the single-file report (``memviz html``)
in an iframe's ``srcdoc``."""

import html
import importlib
import os
import tempfile
from typing import Any, Optional

from memviz._snapshot import Snapshot, load


def report_html(snapshot_or_path: Any, title: Optional[str] = None,
                dist: Optional[str] = None) -> str:
    """The single-file report of a snapshot (a :class:`Snapshot` or anything :func:`load`
    takes), as a string."""
    snap = snapshot_or_path if isinstance(snapshot_or_path, Snapshot) else load(snapshot_or_path)
    with tempfile.TemporaryDirectory(prefix="memviz-") as d:
        out = os.path.join(d, "report.html")
        snap.to_html(out, title=title, dist=dist)
        with open(out, encoding="utf-8") as f:
            return f.read()


def iframe(doc: str, height: int = 720) -> str:
    """An iframe showing the HTML document ``doc`` (escaped for the attribute)."""
    return (
        f'<iframe class="memviz-viewer" style="width:100%;height:{int(height)}px;border:0" '
        f'srcdoc="{html.escape(doc, quote=True)}"></iframe>'
    )


def show(snapshot_or_path: Any, height: int = 720, title: Optional[str] = None,
         dist: Optional[str] = None) -> None:
    """Displays the viewer with the snapshot in the notebook (IPython's ``display``)."""
    # Only in a notebook (imported by name: IPython is an optional dependency, untyped).
    ipy: Any = importlib.import_module("IPython.display")
    ipy.display(ipy.HTML(iframe(report_html(snapshot_or_path, title=title, dist=dist), height)))
