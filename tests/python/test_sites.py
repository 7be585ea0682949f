"""Sites (docs/sites.md) through Python: every row of ``lines()``, ``oom()``, ``leaks()`` and
``diff()`` carries its site, kind and detail; ``user_code`` moves files into the user's code (a
bad pattern is a ``ValueError`` with the CLI's message); ``folded(frames=...)`` picks the frame
mode. On the generated fixtures and, when it is there, the real corpus (read in place, never
copied: ``../shared/corpus/real`` beside the repository)."""

import json
import subprocess
from pathlib import Path

import pytest

import memviz
from conftest import REPO, plain as as_json, require_all

KINDS = {"user", "library", "autograd", "native", "none"}
SITE_KEYS = {"file", "line", "name", "kind", "label", "detail"}
DETAIL_KEYS = {"file", "line", "name", "label"}
CORPUS = REPO.parent / "shared" / "corpus" / "real"
SUN = "Constructor-Sun__code_location__memory_snapshot.pickle"
FIXTURES = ["multidevice.pickle", "proto5.pickle", "expandable.pickle", "oomdevice.pickle",
            "pools.pickle", "xss.pickle"]


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The real snapshots, read in place (skipped when absent, failed under
    ``MEMVIZ_REQUIRE_ALL=1``)."""
    if not CORPUS.is_dir():
        pytest.skip(f"{CORPUS} not found")
    return CORPUS


def check_site(site: dict, where: str) -> None:
    """A site in the one shape every command writes: file, line, name, kind, label, detail."""
    assert SITE_KEYS <= set(site), (where, site)
    assert site["kind"] in KINDS, (where, site)
    d = site["detail"]
    assert d is None or DETAIL_KEYS <= set(d), (where, site)


def check_lines(rows: list, where: str) -> None:
    for r in rows:
        assert r["kind"] in KINDS, (where, r)
        assert "detail" in r and isinstance(r["detail"], list), (where, r)
        for k in ("file", "line", "name", "label", "live_at_peak_bytes", "total_bytes"):
            assert k in r, (where, k, r)
        for d in r["detail"]:
            assert {"file", "line", "name", "live_at_peak_bytes"} <= set(d), (where, d)


@pytest.mark.parametrize("name", FIXTURES)
def test_every_row_of_the_fixtures_names_its_site(fixtures, name):
    s = memviz.load(str(fixtures / name))
    devices = [d["device"] for d in s.summary()["devices"]]
    for dev in devices:
        check_lines(s.lines(device=dev)["rows"], f"{name} lines {dev}")
        for sus in s.leaks(device=dev)["suspects"]:
            check_site(sus["site"], f"{name} leaks {dev}")
    for r in s.oom():
        assert len(r["biggest_live_sites"]) == len(r["biggest_live"]), name
        for b in r["biggest_live_sites"]:
            check_site(b, f"{name} oom")
            assert {"address", "size"} <= set(b)
    other = memviz.load(str(fixtures / "multidevice.pickle"))
    for g in s.diff(other)["groups"]:
        check_site(g["site"], f"{name} diff")


def test_leak_suspects_of_a_fixture_carry_a_user_site(fixtures):
    sus = memviz.load(str(fixtures / "expandable.pickle")).leaks()["suspects"]
    assert sus, "expandable.pickle has a leak suspect"
    site = sus[0]["site"]
    check_site(site, "expandable leaks")
    assert site["kind"] == "user" and site["file"].endswith("model.py"), site
    assert site["label"] in sus[0]["explanation"]


def test_user_code_patterns_change_kinds(fixtures):
    """legacy_history.pickle has stacks without a user frame (library sites in torch): a
    `/regex/` or a package path naming torch makes them user sites."""
    s = memviz.load(str(fixtures / "legacy_history.pickle"))
    kinds = lambda rows: {(r["file"], r["line"], r["name"]): r["kind"] for r in rows}
    plain = kinds(s.lines()["rows"])
    lib = {k for k, v in plain.items() if v == "library"}
    assert lib and all("/torch/" in k[0] for k in lib), plain
    for pattern in ("/(site-packages|dist-packages)/torch/", "torch"):
        mine = kinds(s.lines(user_code=pattern)["rows"])
        assert "library" not in mine.values(), (pattern, mine)
        assert mine != plain
        # Each former library site is a user site now (or a user line inside it is).
        assert any(v == "user" and "/torch/" in k[0] for k, v in mine.items()), (pattern, mine)


def test_user_code_moves_files_into_the_users_code(fixtures, cli):
    path = str(fixtures / "multidevice.pickle")
    s = memviz.load(path)
    dev = s.summary()["devices"][0]["device"]
    plain = s.lines(device=dev)["rows"]
    torch = s.lines(device=dev, user_code="/site-packages/torch/")["rows"]
    assert as_json(torch) == cli("lines", path, "--json", "--device", str(dev),
                        "--user-code", "/site-packages/torch/")["rows"]
    assert torch != plain
    # torch's frames are the user's now: its lines are user sites, no longer details.
    assert not any(r["kind"] == "user" and "/torch/" in r["file"] for r in plain)
    assert any(r["kind"] == "user" and "/site-packages/torch/" in r["file"] for r in torch)
    # A pattern that names no file changes nothing.
    assert s.lines(device=dev, user_code="/no_such_dir_anywhere/")["rows"] == plain
    # The same option on the other commands.
    other = memviz.load(str(fixtures / "proto5.pickle"))
    assert as_json(s.diff(other, user_code="torch")) == cli(
        "diff", path, str(fixtures / "proto5.pickle"), "--json", "--user-code", "torch")
    oom = str(fixtures / "oomdevice.pickle")
    assert as_json(memviz.load(oom).oom(user_code="torch")) == cli("oom", oom, "--json",
                                                           "--user-code", "torch")
    assert as_json(s.leaks(user_code="torch")) == cli("leaks", path, "--json", "--user-code", "torch")


@pytest.mark.parametrize("method", ["lines", "oom", "leaks", "diff"])
def test_a_bad_user_code_regex_is_a_value_error_with_the_message(fixtures, method):
    s = memviz.load(str(fixtures / "proto5.pickle"))
    args = [s] if method == "diff" else []
    with pytest.raises(ValueError, match=r"--user-code: /\(/ is not a valid regex"):
        getattr(s, method)(*args, user_code="/(/")
    with pytest.raises(memviz.MemvizError, match="one regex at most"):
        getattr(s, method)(*args, user_code="/a/,/b/")


def _cli_has_frames(memviz_exe: str) -> bool:
    p = subprocess.run([memviz_exe, "folded", "--help"], capture_output=True, text=True)
    return "--frames" in p.stdout + p.stderr


def test_folded_frames_modes(fixtures, cli, memviz_exe):
    path = str(fixtures / "multidevice.pickle")
    s = memviz.load(path)
    with pytest.raises(ValueError, match="frames='mine'"):
        s.folded(frames="mine")
    if not _cli_has_frames(memviz_exe):
        pytest.skip("this build's `memviz folded` has no --frames yet")
    totals = {}
    for mode, flag in (("my_code", "my-code"), ("python", "python"), ("all", "all")):
        got = s.folded(frames=mode)
        assert as_json(got) == cli("folded", path, "--json", "--frames", flag), mode
        totals[mode] = got["total_bytes"]
        frames = {f for st in got["stacks"] for f in st["frames"]}
        if mode == "my_code":
            # The user's frames, library or native calls collapsed into `[package] …` nodes, and
            # a backward-pass stack (no Python frame) as its site, `backward of <op>`.
            assert all(f.startswith(("/home/user/proj/", "[", "backward of ")) for f in frames), \
                sorted(frames)
            assert any(f.startswith("[torch] ") for f in frames), sorted(frames)
        elif mode == "python":
            assert not any(".cpp:" in f or f.startswith("??:") for f in frames), sorted(frames)
        else:
            assert any(".cpp:" in f for f in frames)
    # Every mode counts the same bytes.
    assert len(set(totals.values())) == 1, totals
    # user_code moves torch into the user's code: its frames are no longer collapsed.
    mine = s.folded(frames="my_code", user_code="torch")
    assert as_json(mine) == cli("folded", path, "--json", "--frames", "my-code", "--user-code", "torch")
    frames = {f for st in mine["stacks"] for f in st["frames"]}
    assert any("/site-packages/torch/" in f for f in frames), sorted(frames)
    assert as_json(s.folded()) == cli("folded", path, "--json")


def test_corpus_lines_rows_carry_kind_and_detail(corpus):
    files = sorted(p for p in corpus.iterdir() if p.suffix in (".pickle", ".pkl"))
    assert files
    seen = set()
    for p in files:
        s = memviz.load(str(p))
        rows = s.lines()["rows"]
        check_lines(rows, p.name)
        seen.update(r["kind"] for r in rows)
    # The corpus has user lines and backward-pass (autograd) allocations.
    assert {"user", "autograd"} <= seen, seen


def test_constructor_sun_oom_names_update_nodes(corpus):
    path = corpus / SUN
    if not path.exists():
        if require_all():
            pytest.fail(f"{path} not found")
        pytest.skip(f"{path} not found")
    s = memviz.load(str(path))
    reports = s.oom(device=1)
    r = next(r for r in reports if r["event"] == 333)
    named = r["biggest_live_sites"]
    assert len(named) == len(r["biggest_live"]) > 0
    ok = {"models.py:174:update_nodes", "models.py:181:update_nodes",
          "models.py:178:update_nodes"}
    for b in named:
        check_site(b, SUN)
        assert b["kind"] == "user", b
        assert b["label"] in ok, b
        assert b["file"].endswith("/models.py") and b["name"] == "update_nodes", b
    # The ten biggest are six blocks of line 174 and four of 181 (178's are smaller).
    labels = [b["label"] for b in named]
    assert {"models.py:174:update_nodes", "models.py:181:update_nodes"} <= set(labels), labels
    # Counting torch.nn as the user's code moves the site of line 181's blocks to the torch line
    # that was its detail (`functional.py:1701:relu`).
    plain = s.lines(device=1)["rows"]
    mine = s.lines(device=1, user_code="/torch/nn/")["rows"]
    key = lambda r: (r["file"], r["line"], r["name"])
    l181 = lambda rows: [r for r in rows if r["label"] == "models.py:181:update_nodes"]
    assert any(d["file"].endswith("torch/nn/functional.py") for d in l181(plain)[0]["detail"])
    assert not any("/torch/nn/" in r["file"] for r in plain)
    relu = [r for r in mine if r["file"].endswith("torch/nn/functional.py")]
    assert relu and all(r["kind"] == "user" for r in relu), relu
    # Its blocks went through relu: line 181 keeps none of them (or fewer).
    live = lambda rows: sum(r["live_at_peak_bytes"] for r in rows)
    assert live(l181(mine)) < live(l181(plain))
    assert {key(r) for r in mine} != {key(r) for r in plain}
    json.dumps(as_json(reports))  # plain data
