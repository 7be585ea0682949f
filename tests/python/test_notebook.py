"""docs/memviz.ipynb runs (nbclient) and its output holds the summary table and the viewer."""

import html
from pathlib import Path

import pytest

from conftest import REPO, dist_dir, require_all


def test_the_notebook_runs_and_shows_the_viewer(fixtures, monkeypatch, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    dist = dist_dir()
    assert dist is not None or not require_all(), "no dist/ (MEMVIZ_REQUIRE_ALL)"
    if dist is None:
        pytest.skip("no built viewer (dist/): memviz.show needs it")
    monkeypatch.setenv("MEMVIZ_DIST", dist)
    monkeypatch.setenv("MEMVIZ_SNAPSHOT", str(fixtures / "multidevice.pickle"))
    nb = nbformat.read(REPO / "docs" / "memviz.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    htmls = [o["data"]["text/html"] for c in nb.cells if c.cell_type == "code"
             for o in c.get("outputs", []) if "text/html" in o.get("data", {})]
    assert any(h.startswith('<div class="memviz-summary">') for h in htmls)
    frames = [h for h in htmls if h.startswith('<iframe class="memviz-viewer"')]
    assert len(frames) == 1
    doc = html.unescape(frames[0].split('srcdoc="', 1)[1].rsplit('"', 1)[0])
    assert 'id="memviz-snapshot"' in doc and 'id="memviz-assets"' in doc
    # The executed notebook, saved: its HTML holds the whole viewer (it opens offline).
    out = Path(tmp_path) / "memviz.executed.ipynb"
    nbformat.write(nb, out)
    assert out.stat().st_size > len(doc)
