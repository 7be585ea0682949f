"""docs/memviz.ipynb runs (nbclient); its output holds the summary table and the viewer, and the
saved notebook HTML (nbconvert) opens the viewer by itself in headless Chromium, offline
(tests/web/notebook_html.mjs, with the repository's playwright-core)."""

import html
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, dist_dir, require_all

NODE_SCRIPT = REPO / "tests" / "web" / "notebook_html.mjs"
PLAYWRIGHT = REPO / "tests" / "web" / "node_modules" / "playwright-core"


def default_peak(summary: dict) -> int:
    """The viewer's default device (the longest trace, the first on ties) and its peak."""
    best = None
    for d in summary["devices"]:
        if best is None or d["trace_entries"] > best["trace_entries"]:
            best = d
    return best["peak_live_bytes"]


def test_the_notebook_runs_and_shows_the_viewer(fixtures, monkeypatch, tmp_path, cli):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nbconvert = pytest.importorskip("nbconvert")
    dist = dist_dir()
    assert dist is not None or not require_all(), "no dist/ (MEMVIZ_REQUIRE_ALL)"
    if dist is None:
        pytest.skip("no built viewer (dist/): memviz.show needs it")
    snapshot = fixtures / "multidevice.pickle"
    monkeypatch.setenv("MEMVIZ_DIST", dist)
    monkeypatch.setenv("MEMVIZ_SNAPSHOT", str(snapshot))
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
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert errors == []
    # The executed notebook, saved as .ipynb and as HTML (nbconvert's default template).
    out = Path(tmp_path) / "memviz.executed.ipynb"
    nbformat.write(nb, out)
    assert out.stat().st_size > len(doc)
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    page = Path(tmp_path) / "memviz.executed.html"
    page.write_text(body, encoding="utf-8")
    assert body.count('class="memviz-viewer"') == 1
    # The saved HTML in headless Chromium: the viewer in the iframe opens the snapshot.
    node = shutil.which("node")
    if node is None or not PLAYWRIGHT.exists():
        assert not require_all(), "node and tests/web/node_modules are needed (MEMVIZ_REQUIRE_ALL)"
        pytest.skip("no node or playwright-core (tests/web: npm ci)")
    shots = REPO / "target" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([node, str(NODE_SCRIPT), str(page), str(shots / "notebook-viewer.png")],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    seen = json.loads(p.stdout.strip().splitlines()[-1])
    assert seen["state"] == "ready", seen
    assert seen["backend"] in ("webgl2", "webgpu"), seen
    assert seen["peak_bytes"] == default_peak(cli("summary", str(snapshot), "--json")), seen
    assert seen["legend"] > 0, seen
    # about:srcdoc has no address a link could reopen; the controls wrap in a narrow output.
    assert seen["copyLink"] is False and seen["controlsCut"] is False, seen
    assert seen["errors"] == [] and seen["requests"] == [], seen
