"""`memviz.record` with a stand-in `torch` module that records the calls (the real torch with its
CUDA libraries is gigabytes)."""

import sys
import types

import pytest

import memviz


@pytest.fixture
def fake_torch(monkeypatch, fixtures):
    calls = []
    snapshot_file = fixtures / "multidevice.pickle"
    import pickle

    snap_dict = pickle.loads(snapshot_file.read_bytes())

    def record_history(enabled="all", max_entries=None, **kw):
        calls.append(("_record_memory_history", enabled, max_entries))

    def dump(path):
        calls.append(("_dump_snapshot", path))
        with open(path, "wb") as f:
            f.write(snapshot_file.read_bytes())

    def snapshot():
        calls.append(("_snapshot",))
        return snap_dict

    memory = types.SimpleNamespace(_record_memory_history=record_history,
                                   _dump_snapshot=dump, _snapshot=snapshot)
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(memory=memory)
    monkeypatch.setitem(sys.modules, "torch", torch)
    return calls


def test_torch_is_not_imported_by_the_package():
    import subprocess

    code = "import sys, memviz; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_record_in_memory(fake_torch, fixtures):
    with memviz.record(max_entries=1234) as r:
        assert r.snapshot is None
        assert fake_torch == [("_record_memory_history", "all", 1234)]
    assert fake_torch[1:] == [("_snapshot",), ("_record_memory_history", None, None)]
    assert r.snapshot.name == "<dict>"
    assert r.snapshot.summary() == memviz.load(fixtures / "multidevice.pickle").summary()


def test_record_to_a_file(fake_torch, tmp_path, fixtures):
    out = tmp_path / "snap.pickle"
    with memviz.record(out) as r:
        pass
    assert fake_torch == [("_record_memory_history", "all", 100000),
                          ("_dump_snapshot", str(out)),
                          ("_record_memory_history", None, None)]
    assert r.snapshot.name == str(out)
    assert r.snapshot.summary() == memviz.load(fixtures / "multidevice.pickle").summary()


def test_recording_stops_when_the_block_raises(fake_torch):
    with pytest.raises(RuntimeError):
        with memviz.record() as r:
            raise RuntimeError("boom")
    assert fake_torch[-1] == ("_record_memory_history", None, None)
    assert ("_snapshot",) not in fake_torch and r.snapshot is None
