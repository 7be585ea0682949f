"""Types and error kinds of the public API: `mypy --strict` passes on a script that uses every
function and class (typed/whole_api.py), which also runs; the package ships `py.typed` and the
native module's stubs; every answer is a frozen dataclass; each error is the `MemvizError`
subclass of its kind, taken from the Rust side's kind (never from the message's words)."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

import memviz
from conftest import plain

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "typed" / "whole_api.py"


def test_the_package_ships_py_typed_and_stubs():
    pkg = Path(memviz.__file__).parent
    assert (pkg / "py.typed").exists()
    assert (pkg / "_native.pyi").exists()


def test_mypy_strict_passes_on_a_script_using_the_whole_api(tmp_path):
    pytest.importorskip("mypy")
    p = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--cache-dir", str(tmp_path / "mypy-cache"), str(SCRIPT)],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Success" in p.stdout, p.stdout


def test_the_script_runs(fixtures, tmp_path):
    # to_html is typed in the script and run by test_api.py (it needs a built viewer).
    env = {k: v for k, v in os.environ.items() if k != "MEMVIZ_DIST"}
    p = subprocess.run(
        [sys.executable, str(SCRIPT), str(fixtures / "oomdevice.pickle"),
         str(fixtures / "multidevice.pickle"), str(tmp_path / "r.html")],
        capture_output=True, text=True, env=env,
    )
    assert p.returncode == 0, p.stderr
    assert "'numbers'" in p.stdout


def test_every_answer_is_a_frozen_dataclass_with_dict_access(fixtures):
    s = memviz.load(fixtures / "oomdevice.pickle")
    answers = [s.summary(), s.folded(), s.lines(), s.leaks(), s.state(), s.diff(s),
               *s.oom(), memviz.summarize_file(fixtures / "oomdevice.pickle")]
    for a in answers:
        assert dataclasses.is_dataclass(a) and isinstance(a, memviz.Answer), a
        with pytest.raises(dataclasses.FrozenInstanceError):
            a.__setattr__(dataclasses.fields(a)[0].name, None)
        d = a.to_dict()
        assert list(a) == list(d) and all(a[k] == getattr(a, k) for k in d)
        assert type(a).from_dict(d) == a
    summary = s.summary()
    assert summary["devices"][0]["device"] == summary.devices[0].device
    assert "warnings" in summary and "nope" not in summary
    with pytest.raises(KeyError):
        summary["nope"]
    folded = s.folded()
    assert "at_event" not in folded and folded.at_event is None
    assert "at_event" in s.folded(at=0) and s.folded(at=0)["at_event"] == 0
    assert plain(s.folded(range="0:4"))["step_range"] == [0, 4]


def test_errors_have_their_kind(fixtures, tmp_path):
    path = str(fixtures / "multidevice.pickle")
    s = memviz.load(path)
    cases = [
        (lambda: memviz.load(str(tmp_path / "missing.pickle")), memviz.MemvizIOError),
        (lambda: memviz.load(b""), memviz.NotASnapshotError),
        (lambda: memviz.load(b"<html>not a snapshot</html>"), memviz.NotASnapshotError),
        (lambda: memviz.load((fixtures / "multidevice.pickle").read_bytes()[:20]),
         memviz.TruncatedError),
        (lambda: s.state(event=10**9), memviz.BadArgumentError),
        (lambda: s.folded(range="5:1"), memviz.BadArgumentError),
        (lambda: s.folded(at="nope"), memviz.BadArgumentError),
        (lambda: s.folded(phase="no such phase"), memviz.BadArgumentError),
        (lambda: s.folded(frames="mine"), memviz.BadArgumentError),
        (lambda: s.lines(user_code="/(/"), memviz.BadArgumentError),
        (lambda: memviz.load({"a": object()}), memviz.NotASnapshotError),
        (lambda: memviz.load({"a": lambda: 0}), memviz.BadArgumentError),  # cannot pickle
    ]
    for method in ("folded", "lines", "leaks", "state", "oom"):
        cases.append((lambda m=method: getattr(s, m)(device=99), memviz.UnknownDeviceError))
    cases.append((lambda: s.diff(s, device=99), memviz.UnknownDeviceError))
    for call, kind in cases:
        with pytest.raises(kind) as e:
            call()
        assert isinstance(e.value, memviz.MemvizError) and isinstance(e.value, ValueError)
    assert issubclass(memviz.UnknownDeviceError, memviz.BadArgumentError)
    for k in (memviz.NotASnapshotError, memviz.TruncatedError, memviz.TooBigError,
              memviz.BadArgumentError, memviz.MemvizIOError, memviz.InternalError):
        assert issubclass(k, memviz.MemvizError)


def test_a_checkpoint_is_not_a_snapshot(tmp_path):
    from conftest import GENERATE

    ckpt = tmp_path / "model.pt"
    subprocess.run([sys.executable, str(GENERATE), "checkpoint", str(ckpt)], check=True,
                   stdout=subprocess.DEVNULL)
    with pytest.raises(memviz.NotASnapshotError, match="checkpoint"):
        memviz.load(ckpt)
