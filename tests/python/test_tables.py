"""The Arrow tables (`Snapshot.trace()` and the others): each equals `memviz export --table NAME
--json` row for row on every generated fixture and corpus file; `lines_table()` and
`blocks_at()` agree with `memviz lines --json` / `memviz state --json`; pandas and polars read
them; a DuckDB query over the Parquet of `memviz.ranks(..., parquet_dir=)` equals `memviz
ranks`."""

import subprocess
import sys
from pathlib import Path

import pytest

import memviz
from conftest import REPO, rank_copies, require_all

pa = pytest.importorskip("pyarrow")

CORPUS = REPO.parent / "shared" / "corpus" / "real"
SMALL = ["vector", "proto5", "proto2_cxx", "deferred", "long1_big", "legacy_history",
         "bare_list", "expandable", "pools", "multidevice", "unknown_action", "oomdevice"]


def files(fixtures):
    out = [fixtures / f"{n}.pickle" for n in SMALL]
    if CORPUS.is_dir():
        out += sorted(p for p in CORPUS.iterdir() if p.suffix in (".pickle", ".pkl"))
    return out


def tables(snap):
    return {
        "trace": snap.trace(),
        "allocations": snap.allocations(),
        "frames": snap.frames(),
        "stacks": snap.stacks(),
        "segments": snap.segments(),
        "blocks": snap.blocks_at(),
        "lines": snap.lines_table(),
    }


def test_every_table_equals_the_cli_rows(fixtures, cli):
    for path in files(fixtures):
        snap = memviz.load(path)
        for name, t in tables(snap).items():
            assert isinstance(t, pa.Table), name
            want = cli("export", str(path), "--table", name, "--json")
            assert t.num_rows == len(want), (path.name, name)
            assert t.to_pylist() == want, (path.name, name)


def test_lines_and_blocks_equal_the_commands(fixtures, cli, cli_error):
    for path in files(fixtures):
        snap = memviz.load(path)
        lines = cli("lines", str(path), "--json")
        assert snap.lines_table().to_pylist() == lines["rows"], path.name
        for event in (-1, 0):
            try:
                rows = snap.blocks_at(event).to_pylist()
            except memviz.BadArgumentError:
                assert event == 0  # a trace without events: `memviz state` refuses too
                cli_error("state", str(path), "--event", "0", "--json")
                continue
            state = cli("state", str(path), "--event", str(event), "--json")
            segs = [r for r in rows if r["kind"] == "segment"]
            blocks = [r for r in rows if r["kind"] == "block"]
            assert len(segs) == state["segments"], path.name
            assert len(blocks) == state["blocks"], path.name
            assert sum(r["size"] for r in segs) == state["reserved_bytes"], path.name
            assert sum(r["requested_size"] for r in blocks) == state["allocated_bytes"]


def test_pandas_and_polars_read_them(fixtures):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    snap = memviz.load(fixtures / "multidevice.pickle")
    for name, t in tables(snap).items():
        df = t.to_pandas()
        assert isinstance(df, pd.DataFrame) and len(df) == t.num_rows, name
        p = pl.from_arrow(t)
        assert p.height == t.num_rows and p.columns == t.column_names, name
    a = pl.from_arrow(snap.allocations())
    top = (a.group_by("site").agg(pl.col("size").sum().alias("bytes"))
           .sort("bytes", descending=True))
    assert top.height >= 1
    assert int(top["bytes"].sum()) == sum(snap.allocations().column("size").to_pylist())


def test_zero_copy_and_errors(fixtures):
    snap = memviz.load(fixtures / "multidevice.pickle")
    t = snap.trace()
    # Every column is one chunk handed over from Rust (no re-chunking, no conversion).
    assert all(c.num_chunks == 1 for c in t.columns)
    assert t.schema.field("action").type == pa.dictionary(pa.uint8(), pa.string())
    with pytest.raises(memviz.UnknownDeviceError, match="no device 9"):
        snap.trace(device=9)
    with pytest.raises(memviz.BadArgumentError, match="events"):
        snap.blocks_at(10**9)
    with pytest.raises(memviz.BadArgumentError):
        snap.allocations(user_code="/(/")


def test_missing_pyarrow_is_named(fixtures):
    code = ("import sys; sys.modules['pyarrow'] = None\n"
            "import memviz\n"
            f"s = memviz.load({str(fixtures / 'vector.pickle')!r})\n"
            "try:\n    s.trace()\nexcept ImportError as e:\n    print(e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "pip install memviz[arrow]" in p.stdout, p.stderr


@pytest.fixture(scope="module")
def many_ranks(fixtures, tmp_path_factory):
    """A generated many-rank set: the fixtures copied as 48 ranks."""
    return rank_copies(fixtures, tmp_path_factory.mktemp("many-ranks"), 8, 3)


def test_duckdb_over_the_ranks_parquet_equals_memviz_ranks(many_ranks, cli, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "fleet"
    rows = memviz.ranks(many_ranks, parquet_dir=out)
    want = cli("ranks", *many_ranks, "--json")["rows"]
    assert [r.to_dict() for r in rows] == want
    path = out / "ranks.parquet"
    assert pq.ParquetFile(path).metadata.num_row_groups == len(want)
    con = duckdb.connect()
    cur = con.execute(
        "SELECT file, device, peak_bytes, final_bytes, reserved_bytes, oom_events, top_sites, "
        f"outlier FROM read_parquet('{path}')")
    names = [d[0] for d in cur.description]
    got = [dict(zip(names, r)) for r in cur.fetchall()]
    assert got == want
    top = con.execute(f"SELECT file FROM read_parquet('{path}') WHERE outlier "
                      "ORDER BY peak_bytes DESC, file").fetchall()
    assert [r[0] for r in top] == [r["file"] for r in want if r["outlier"]]


def test_the_query_notebook_runs(fixtures, monkeypatch, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    for mod in ("polars", "duckdb"):
        if require_all():
            __import__(mod)
        pytest.importorskip(mod)
    monkeypatch.setenv("MEMVIZ_SNAPSHOT", str(fixtures / "multidevice.pickle"))
    nb = nbformat.read(REPO / "docs" / "query.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert errors == []
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.get("outputs", []) if o.get("output_type") == "stream")
    assert "outlive" in text
    assert Path(tmp_path).is_dir()
