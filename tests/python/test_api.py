"""Every Snapshot method against `memviz <command> --json` of the same build (the typed answers'
`to_dict()` equals the CLI's JSON, field for field), and every kind of input `memviz.load`
takes."""

import io
import pickle

import pytest

import memviz
from conftest import dist_dir, plain, require_all

FILES = ["multidevice.pickle", "proto5.pickle", "expandable.pickle", "oomdevice.pickle",
         "pools.pickle", "xss.pickle"]


@pytest.mark.parametrize("name", FILES)
def test_every_method_equals_the_cli_json(fixtures, cli, name):
    path = str(fixtures / name)
    s = memviz.load(path)
    assert s.name == path
    assert plain(s.summary()) == cli("summary", path, "--json")
    assert plain(s.folded()) == cli("folded", path, "--json")
    assert plain(s.folded(lifetime=True)) == cli("folded", path, "--json", "--lifetime")
    assert plain(s.lines()) == cli("lines", path, "--json")
    assert plain(s.leaks()) == cli("leaks", path, "--json")
    assert plain(s.state()) == cli("state", path)
    assert plain(s.state(event=0)) == cli("state", path, "--event", "0")
    assert plain(s.oom()) == cli("oom", path, "--json")
    other = str(fixtures / "multidevice.pickle")
    assert plain(s.diff(memviz.load(other))) == cli("diff", path, other, "--json")
    for dev in [d["device"] for d in s.summary()["devices"]]:
        assert plain(s.folded(device=dev, at="peak")) == cli("folded", path, "--json", "--device", str(dev))
        assert plain(s.oom(device=dev)) == cli("oom", path, "--json", "--device", str(dev))


def test_oom_events_are_listed(fixtures, cli):
    path = str(fixtures / "oomdevice.pickle")
    ooms = memviz.load(path).oom()
    assert len(ooms) >= 1 and plain(ooms) == cli("oom", path, "--json")


def test_bytes_file_objects_and_dicts_read_the_same(fixtures):
    path = fixtures / "multidevice.pickle"
    want = memviz.load(path).summary()
    raw = path.read_bytes()
    assert memviz.load(raw).summary() == want
    assert memviz.load(bytearray(raw)).summary() == want
    assert memviz.load(io.BytesIO(raw)).summary() == want
    with open(path, "rb") as f:
        assert memviz.load(f).summary() == want
    d = pickle.loads(raw)
    assert isinstance(d, dict)
    from_dict = memviz.load(d)
    assert from_dict.name == "<dict>"
    assert from_dict.summary() == want
    assert from_dict.folded() == memviz.load(path).folded()


def test_diff_of_two_snapshots_from_memory(fixtures, cli):
    a, b = fixtures / "multidevice.pickle", fixtures / "proto5.pickle"
    want = cli("diff", str(a), str(b), "--json")
    assert plain(memviz.load(a.read_bytes()).diff(memviz.load(b.read_bytes()))) == want
    assert plain(memviz.load(str(a)).diff(str(b))) == want


def test_errors_carry_the_cli_message(fixtures, cli_error, tmp_path):
    missing = str(tmp_path / "missing.pickle")
    with pytest.raises(memviz.MemvizIOError) as e:
        memviz.load(missing)
    assert str(e.value) == cli_error("summary", missing)
    assert isinstance(e.value, ValueError) and isinstance(e.value, memviz.MemvizError)
    path = str(fixtures / "multidevice.pickle")
    with pytest.raises(memviz.BadArgumentError) as e:
        memviz.load(path).state(event=10**9)
    assert str(e.value) == cli_error("state", path, "--event", str(10**9))
    with pytest.raises(memviz.UnknownDeviceError) as e:
        memviz.load(path).folded(device=99)
    assert str(e.value) == cli_error("folded", path, "--json", "--device", "99")
    assert isinstance(e.value, memviz.BadArgumentError)


def test_a_file_cut_short_warns_as_the_cli_does_and_opens(fixtures, tmp_path, memviz_exe):
    import subprocess

    path = tmp_path / "cut.pickle"
    path.write_bytes((fixtures / "multidevice.pickle").read_bytes()[:60000])
    cli = subprocess.run([memviz_exe, "summary", str(path)], capture_output=True, text=True)
    want = cli.stderr.strip()
    assert want.startswith("memviz: warning: ") and "truncated file" in want
    with pytest.warns(UserWarning) as w:
        s = memviz.load(str(path))
    assert [str(x.message) for x in w] == [want]
    assert s.summary()["devices"]
    with pytest.warns(UserWarning, match="truncated file"):
        memviz.load(path.read_bytes())


def test_repr_html_is_a_compact_escaped_table(fixtures):
    s = memviz.load(fixtures / "multidevice.pickle")
    h = s._repr_html_()
    assert h.startswith('<div class="memviz-summary">') and "<table>" in h
    assert h.count("<tr>") == 1 + len(s.summary()["devices"])
    x = memviz.load((fixtures / "xss.pickle").read_bytes())
    x._native = x._native.renamed("<script>alert(1)</script>")
    h = x._repr_html_()
    assert "<script>" not in h and "&lt;script&gt;" in h


def test_to_html_writes_the_report_or_says_what_is_missing(fixtures, tmp_path):
    s = memviz.load((fixtures / "multidevice.pickle").read_bytes())
    out = tmp_path / "r.html"
    dist = dist_dir()
    assert dist is not None or not require_all(), "no dist/ (MEMVIZ_REQUIRE_ALL)"
    if dist is None:
        with pytest.raises(memviz.MemvizError, match="viewer"):
            s.to_html(out)
        return
    assert s.to_html(out, dist=dist) == str(out)
    text = out.read_text(encoding="utf-8")
    assert 'id="memviz-snapshot"' in text and "Content-Security-Policy" in text


def test_show_puts_the_report_in_an_escaped_srcdoc(fixtures, monkeypatch):
    from memviz import _show

    doc = '<html><body onload="x()">"&</body></html>'
    frame = _show.iframe(doc)
    assert frame.startswith("<iframe") and 'srcdoc="&lt;html&gt;' in frame
    assert '"x()"' not in frame and "&quot;&amp;" in frame


def test_wrong_types_are_type_errors():
    for x in (3, None, 2.5, object()):
        with pytest.raises(TypeError):
            memviz.load(x)
    with pytest.raises(memviz.MemvizError, match="binary"):
        memviz.load(io.StringIO("text"))
