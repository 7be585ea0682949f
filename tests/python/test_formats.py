"""The other containers of a snapshot through the Python API (issue 28): a pickle's JSON, gzip'd
JSON and torch.save'd (.pt) twins (tests/fixtures/generate.py twins) load by path, as bytes, as a
file object (the JSON also in text mode) and give the pickle's answers; the segment list of
``torch.cuda.memory_snapshot()`` loads as a path and as the list itself; a checkpoint is refused."""

import io
import pickle
import subprocess
import sys

import pytest

import memviz

from conftest import GENERATE

TWIN_EXTS = ("json", "json.gz", "pt")


@pytest.fixture(scope="session")
def twins(fixtures, tmp_path_factory):
    """{source name: {ext: path}} for a traced file, a multi-device one and a segment list."""
    out = tmp_path_factory.mktemp("twins")
    made = {}
    for name in ("proto5.pickle", "multidevice.pickle", "bare_list.pickle"):
        subprocess.run([sys.executable, str(GENERATE), "twins", str(fixtures / name), str(out)],
                       check=True, stdout=subprocess.DEVNULL)
        stem = name.rsplit(".", 1)[0]
        made[name] = {ext: out / f"{stem}.{ext}" for ext in TWIN_EXTS}
    return made


@pytest.mark.parametrize("name", ["proto5.pickle", "multidevice.pickle", "bare_list.pickle"])
def test_twins_load_by_path_bytes_and_file_with_the_pickles_answers(fixtures, twins, name):
    want = memviz.load(fixtures / name)
    for ext, path in twins[name].items():
        by_path = memviz.load(path)
        assert by_path.summary() == want.summary(), ext
        assert by_path.state() == want.state(), ext
        assert memviz.load(path.read_bytes()).summary() == want.summary(), ext
        with open(path, "rb") as f:
            assert memviz.load(f).summary() == want.summary(), ext
    with open(twins[name]["json"], encoding="utf-8") as f:
        assert memviz.load(f).summary() == want.summary(), "a JSON file opened in text mode"


def test_a_segment_list_has_segments_and_no_trace(fixtures, twins):
    s = memviz.load(fixtures / "bare_list.pickle")
    summary = s.summary()
    assert [d["trace_entries"] for d in summary["devices"]] == [0]
    assert summary["devices"][0]["segments"] > 0
    assert s.state()["segments"] == summary["devices"][0]["segments"]
    # The list itself, as torch.cuda.memory_snapshot() returns it (read here without executing
    # anything: the fixture is plain data).
    with open(fixtures / "bare_list.pickle", "rb") as f:
        segments = pickle.load(f)
    assert isinstance(segments, list)
    assert memviz.load(segments).summary() == summary


def test_a_checkpoint_is_refused_as_one(tmp_path):
    ckpt = tmp_path / "model.pt"
    subprocess.run([sys.executable, str(GENERATE), "checkpoint", str(ckpt)], check=True,
                   stdout=subprocess.DEVNULL)
    with pytest.raises(memviz.MemvizError, match="checkpoint"):
        memviz.load(ckpt)
    with pytest.raises(memviz.MemvizError, match="checkpoint"):
        memviz.load(io.BytesIO(ckpt.read_bytes()))
