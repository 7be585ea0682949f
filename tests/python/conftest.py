"""Fixtures of the Python package's tests: generated snapshots (tests/fixtures/generate.py, never
committed corpus files) and the installed `memviz` console script of the same build."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GENERATE = REPO / "tests" / "fixtures" / "generate.py"


@pytest.fixture(scope="session")
def fixtures(tmp_path_factory) -> Path:
    """The small fixture set and the two-device oom file, generated once."""
    d = tmp_path_factory.mktemp("fixtures")
    subprocess.run([sys.executable, str(GENERATE), "small", str(d)], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, str(GENERATE), "oomdevice", str(d / "oomdevice.pickle")],
                   check=True, stdout=subprocess.DEVNULL)
    return d


@pytest.fixture(scope="session")
def memviz_exe() -> str:
    """The `memviz` console script installed beside this interpreter (the wheel's)."""
    exe = Path(sys.executable).parent / "memviz"
    found = str(exe) if exe.exists() else shutil.which("memviz")
    assert found, "the memviz console script is not installed"
    return found


@pytest.fixture(scope="session")
def cli(memviz_exe):
    """Runs `memviz ARGS` and returns its parsed JSON stdout (exit 0 required)."""

    def run(*args: str):
        p = subprocess.run([memviz_exe, *args], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    return run


@pytest.fixture(scope="session")
def cli_error(memviz_exe):
    """Runs `memviz ARGS`, which must fail, and returns its stderr's message (after `memviz: `)."""

    def run(*args: str) -> str:
        p = subprocess.run([memviz_exe, *args], capture_output=True, text=True)
        assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
        line = p.stderr.strip().splitlines()[-1]
        assert line.startswith("memviz: "), line
        return line[len("memviz: "):]

    return run


RANK_SOURCES = ["multidevice", "proto5", "expandable", "pools", "oomdevice", "deferred"]


def rank_copies(fixtures: Path, directory: Path, repeat: int, digits: int) -> list:
    """A generated many-rank set: the fixtures of RANK_SOURCES copied ``repeat`` times as
    ``rank{i}.pickle`` (``i`` zero-padded to ``digits``); the paths, in rank order."""
    paths = []
    for i, n in enumerate(RANK_SOURCES * repeat):
        p = directory / f"rank{i:0{digits}d}.pickle"
        shutil.copy(fixtures / f"{n}.pickle", p)
        paths.append(str(p))
    return paths


def plain(x):
    """A typed answer (or a list of them) as the CLI's JSON: ``to_dict()``."""
    return [plain(i) for i in x] if isinstance(x, list) else x.to_dict()


def require_all() -> bool:
    """`cargo xtask test` sets MEMVIZ_REQUIRE_ALL=1: nothing may be skipped there."""
    return os.environ.get("MEMVIZ_REQUIRE_ALL") == "1"


def dist_dir():
    """The built viewer, when there is one ($MEMVIZ_DIST or the repository's dist/)."""
    for d in (os.environ.get("MEMVIZ_DIST"), str(REPO / "dist")):
        if d and (Path(d) / "index.html").exists():
            return d
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under MEMVIZ_REQUIRE_ALL=1 (`cargo xtask test`) a skipped test is a failed one."""
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and require_all():
        rep.outcome = "failed"
        rep.longrepr = f"skipped, but MEMVIZ_REQUIRE_ALL=1: {rep.longrepr}"
