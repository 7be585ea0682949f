"""`memviz.ranks`: the rows of `memviz ranks --json`, from a local thread pool and from a Dask
LocalCluster with 2 workers, on generated files."""

import pytest

import memviz
from conftest import rank_copies


@pytest.fixture(scope="module")
def rank_files(fixtures, tmp_path_factory):
    return rank_copies(fixtures, tmp_path_factory.mktemp("ranks"), 2, 2)


def test_rows_equal_the_cli_sorted_by_peak(rank_files, cli):
    rows = memviz.ranks(rank_files)
    want = cli("ranks", *rank_files, "--json")
    assert [r.to_dict() for r in rows] == want["rows"]
    assert memviz.RULE == want["rule"]
    assert sorted(r["file"] for r in rows) == sorted(rank_files)
    peaks = [r["peak_bytes"] for r in rows]
    assert peaks == sorted(peaks, reverse=True)
    keys = {"file", "device", "peak_bytes", "final_bytes", "reserved_bytes", "oom_events",
            "top_sites", "outlier"}
    for r in rows:
        assert set(r) == keys
        assert all(set(s) == {"label", "bytes"} for s in r["top_sites"])
    assert any(r["oom_events"] for r in rows)
    one = memviz.summarize_file(rank_files[0])
    s = memviz.load(rank_files[0]).summary()["devices"]
    assert one["peak_bytes"] == max(d["peak_live_bytes"] for d in s)
    assert one["outlier"] is False


def row(file, peak):
    return {"file": file, "device": 0, "peak_bytes": peak, "final_bytes": 0,
            "reserved_bytes": 0, "oom_events": 0, "top_sites": [], "outlier": False}


def test_outlier_rule():
    out = memviz._ranks.reduce_rows([row(f"r{i}", p) for i, p in enumerate([100, 101, 99, 100, 300])])
    assert [r["file"] for r in out if r["outlier"]] == ["r4"]
    assert out[0]["file"] == "r4"
    # Two files say nothing; a tight fleet does not flag a rank a few bytes over the rest.
    assert not any(r["outlier"] for r in memviz._ranks.reduce_rows([row("a", 1), row("b", 1000)]))
    tight = [row(f"t{i}", 1000 + (i == 3) * 5) for i in range(6)]
    assert not any(r["outlier"] for r in memviz._ranks.reduce_rows(tight))
    with pytest.raises(memviz.MemvizError, match="memviz ranks --json"):
        memviz._ranks.reduce_rows([{"file": "x"}])


def test_dask_local_cluster_equals_the_local_pool(rank_files):
    distributed = pytest.importorskip("distributed")
    local = memviz.ranks(rank_files)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            assert len(client.scheduler_info()["workers"]) == 2
            assert memviz.ranks(rank_files, client=client) == local
