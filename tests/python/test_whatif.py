"""``Snapshot.whatif``, ``min_capacity``, ``whatif_sweep`` and ``memviz.min_capacities``: the
answers of ``memviz whatif --json`` (the same Rust code), typed, on generated fixtures."""

import pickle
import shutil

import pytest

import memviz
from memviz import SweepRow, WhatIf, WhatIfOom

MiB = 1 << 20
ALTERNATIVES = [
    "recorded", "expandable_segments", "max_split_size_mb:128", "max_split_size_mb:256",
    "max_split_size_mb:512", "roundup_power2_divisions:4", "roundup_power2_divisions:8",
    "garbage_collection_threshold:0.6",
]


def recorded_segment_allocs(path, device):
    with open(path, "rb") as f:
        trace = pickle.load(f)["device_traces"][device]
    return [e["size"] for e in trace if e["action"] == "segment_alloc"]


def test_whatif_is_the_cli_answer_typed(fixtures, cli):
    f = str(fixtures / "multidevice.pickle")
    s = memviz.load(f)
    w = s.whatif(alloc_conf="expandable_segments:True", capacity="64MiB", device=2)
    assert isinstance(w, WhatIf)
    want = cli("whatif", f, "--json", "--device", "2", "--capacity", "64MiB",
               "--alloc-conf", "expandable_segments:True")
    assert [w.to_dict()] == want
    assert w.device == 2 and w.capacity == 64 * MiB
    assert w.settings == "expandable_segments:True"
    assert w.recorded_settings == ""
    assert all(isinstance(x, int) for x in w.segment_allocs + w.segment_frees)
    assert w.fragmentation_at_peak.free == (w.fragmentation_at_peak.reserved
                                            - w.fragmentation_at_peak.allocated)
    assert w.validation is None
    # Dict-style access by the JSON keys, as every answer has.
    assert w["peak_reserved"] == w.peak_reserved and "first_oom" in w
    # Without device=: the device the one-device commands use (the longest trace).
    assert s.whatif().device == cli("lines", f, "--json")["device"]


def test_capacity_spellings_and_refusals(fixtures):
    s = memviz.load(fixtures / "proto5.pickle")
    by_int = s.whatif(capacity=48 * MiB)
    assert by_int.capacity == 48 * MiB
    assert s.whatif(capacity="48MiB").to_dict() == by_int.to_dict()
    assert s.whatif(capacity="0.046875GiB").capacity == 48 * MiB
    assert s.whatif(capacity="1GB").capacity == 10 ** 9
    for bad, says in [("40XB", "unknown unit `XB`"), (0, "more than 0 bytes"),
                      (-1, "expected bytes"), ("forty", "expected bytes")]:
        with pytest.raises(memviz.BadArgumentError, match="--capacity") as e:
            s.whatif(capacity=bad)
        assert says in str(e.value)
    with pytest.raises(TypeError):
        s.whatif(capacity=True)
    with pytest.raises(TypeError):
        s.whatif(capacity=1.5)
    with pytest.raises(memviz.BadArgumentError, match="unknown allocator setting `bogus`"):
        s.whatif(alloc_conf="bogus:1")
    with pytest.raises(memviz.BadArgumentError, match="at least 20"):
        s.min_capacity(alloc_conf="max_split_size_mb:5")
    with pytest.raises(memviz.BadArgumentError):
        s.whatif(as_recorded=True, capacity="1GiB")
    with pytest.raises(memviz.UnknownDeviceError):
        s.whatif(device=7)


def test_first_oom_and_min_capacity(fixtures, cli):
    f = str(fixtures / "proto5.pickle")
    s = memviz.load(f)
    need = s.min_capacity()
    assert need is not None and need % (2 * MiB) == 0
    fits = s.whatif(capacity=need)
    assert fits.first_oom is None and fits.completed
    assert fits.min_capacity == need
    short = s.whatif(capacity=need - 2 * MiB)
    oom = short.first_oom
    assert isinstance(oom, WhatIfOom)
    assert oom.requested > 0 and oom.capacity == need - 2 * MiB
    assert isinstance(oom.site, str) and oom.site
    assert oom.free.reserved <= need
    # The site is labelled as `lines` labels sites.
    labels = {r["label"] for r in cli("lines", f, "--json")["rows"]}
    assert oom.site in labels
    # A setting changes the smallest capacity the way the sweep says.
    rows = {r.name: r.min_capacity for r in s.whatif_sweep()}
    assert s.min_capacity(alloc_conf="max_split_size_mb:128") == rows["max_split_size_mb:128"]
    assert rows["recorded"] == need


def test_as_recorded_validates_against_the_trace(fixtures):
    for name, device in [("multidevice.pickle", 0), ("multidevice.pickle", 2),
                         ("proto5.pickle", 0)]:
        path = fixtures / name
        w = memviz.load(path).whatif(as_recorded=True, device=device)
        assert w.segment_allocs == recorded_segment_allocs(path, device)
        v = w.validation
        assert v is not None and v.matches and v.first_difference is None
        assert v.recorded.segment_alloc == len(w.segment_allocs)
        assert v.model.peak_reserved == v.recorded.peak_reserved == w.peak_reserved
    # The generator's expandable emulator is simpler than PyTorch (docs/whatif.md): the first
    # difference is typed.
    v = memviz.load(fixtures / "expandable.pickle").whatif(as_recorded=True).validation
    assert v is not None and not v.matches
    d = v.first_difference
    assert d is not None and d.model is not None and d.model.kind in {"map", "unmap"}


def test_sweep_rows(fixtures, cli):
    f = str(fixtures / "multidevice.pickle")
    rows = memviz.load(f).whatif_sweep(device=0, capacity="1GiB")
    assert all(isinstance(r, SweepRow) for r in rows)
    assert [r.name for r in rows] == ALTERNATIVES
    assert [r.to_dict() for r in rows] == cli("whatif", f, "--json", "--sweep", "--device", "0",
                                              "--capacity", "1GiB")
    best = [r for r in rows if r.best]
    assert len(best) == 1
    assert best[0].min_capacity == min(r.min_capacity for r in rows if r.min_capacity)
    assert all(r.capacity == 1 << 30 for r in rows)


def test_no_trace_raises(fixtures):
    s = memviz.load(fixtures / "empty.pickle")
    with pytest.raises(memviz.MemvizError, match="no trace to replay"):
        s.whatif()
    with pytest.raises(memviz.MemvizError, match="no trace to replay"):
        s.whatif_sweep()


def test_min_capacities_per_rank(fixtures, tmp_path):
    paths = []
    for i, n in enumerate(["multidevice", "proto5", "empty", "pools"]):
        p = tmp_path / f"rank{i}.pickle"
        shutil.copy(fixtures / f"{n}.pickle", p)
        paths.append(str(p))
    got = memviz.min_capacities(paths, max_workers=2)
    assert [r.file for r in got] == paths
    for r, p in zip(got, paths):
        assert r.to_dict() == memviz.min_capacity_file(p).to_dict()
    multi = got[0]
    per_device = {d: memviz.load(paths[0]).min_capacity(device=d) for d in (0, 2)}
    assert multi.min_capacity == max(v for v in per_device.values() if v is not None)
    assert per_device[multi.device] == multi.min_capacity
    assert got[1].min_capacity == memviz.load(paths[1]).min_capacity()
    assert got[2].device is None and got[2].min_capacity is None
    expandable = memviz.min_capacities(paths[1:2], alloc_conf="expandable_segments:True")
    assert expandable[0].settings == "expandable_segments:True"
