"""`memviz.ranks`: local thread pool vs a Dask LocalCluster with 2 workers, on generated files."""

import shutil

import pytest

import memviz


@pytest.fixture(scope="module")
def rank_files(fixtures, tmp_path_factory):
    d = tmp_path_factory.mktemp("ranks")
    names = ["multidevice", "proto5", "expandable", "pools", "oomdevice", "deferred"]
    paths = []
    for i, n in enumerate(names * 2):
        p = d / f"rank{i:02d}.pickle"
        shutil.copy(fixtures / f"{n}.pickle", p)
        paths.append(str(p))
    return paths


def test_rows_are_sorted_by_peak_and_flag_oom_ranks(rank_files):
    rows = memviz.ranks(rank_files)
    assert [r["file"] for r in rows] != rank_files
    assert sorted(r["file"] for r in rows) == sorted(rank_files)
    peaks = [r["peak_bytes"] for r in rows]
    assert peaks == sorted(peaks, reverse=True)
    keys = {"file", "device", "peak_bytes", "final_bytes", "reserved_bytes", "oom_events",
            "top_sites", "outlier"}
    for r in rows:
        assert set(r) == keys
        assert all(set(s) == {"label", "bytes"} for s in r["top_sites"])
        if r["oom_events"]:
            assert r["outlier"]
    assert any(r["oom_events"] for r in rows)
    one = memviz.summarize_file(rank_files[0])
    s = memviz.load(rank_files[0]).summary()["devices"]
    assert one["peak_bytes"] == max(d["peak_live_bytes"] for d in s)


def test_outlier_rule():
    rows = [{"file": f"r{i}", "peak_bytes": p, "oom_events": 0} for i, p in
            enumerate([100, 101, 99, 100, 300])]
    out = memviz._ranks.reduce_rows(rows)
    assert [r["file"] for r in out if r["outlier"]] == ["r4"]
    assert out[0]["file"] == "r4"


def test_dask_local_cluster_equals_the_local_pool(rank_files):
    distributed = pytest.importorskip("distributed")
    local = memviz.ranks(rank_files)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            assert len(client.scheduler_info()["workers"]) == 2
            assert memviz.ranks(rank_files, client=client) == local
