"""``Snapshot.query`` (memviz._query): the CLI's ``memviz query --json``, on generated
fixtures."""

import pytest

import memviz
from memviz._query import query


def _query(s, text, **kw):
    # Through the Snapshot method once the lead wires it, else the module function.
    if hasattr(memviz.Snapshot, "query"):
        return s.query(text, **kw)
    return query(s, text, **kw)


def test_query_is_the_cli_answer(fixtures, cli):
    f = str(fixtures / "vector.pickle")
    s = memviz.load(f)
    ours = _query(s, "size>=1KiB", device=0)
    theirs = cli("query", f, "size>=1KiB", "--device", "0", "--json")
    assert ours == theirs
    assert ours["count"] == len(ours["rows"])
    assert ours["bytes"] == sum(r["size"] for r in ours["rows"])
    assert all(r["size"] >= 1024 for r in ours["rows"])


def test_every_row_and_negation(fixtures):
    s = memviz.load(str(fixtures / "vector.pickle"))
    everything = _query(s, "")
    assert everything["count"] == _query(s, "size>=0")["count"]
    for term in ["at:peak", "action:free", "size>=1MiB"]:
        yes = _query(s, term)
        no = _query(s, "-" + term)
        assert yes["count"] + no["count"] == everything["count"], term
        assert yes["bytes"] + no["bytes"] == everything["bytes"], term


def test_peak_matches_lines(fixtures):
    s = memviz.load(str(fixtures / "vector.pickle"))
    peak = _query(s, "at:peak")
    lines = s.lines()
    assert peak["bytes"] == sum(r.live_at_peak_bytes for r in lines.rows)
    assert all(r["alive_at_peak"] for r in peak["rows"])


def test_bad_filter_names_the_column(fixtures):
    s = memviz.load(str(fixtures / "vector.pickle"))
    with pytest.raises(memviz.BadArgumentError, match="column 7: unknown unit XB"):
        _query(s, "size>=1XB")
    with pytest.raises(ValueError, match="unknown field colour"):
        _query(s, "colour:red")
