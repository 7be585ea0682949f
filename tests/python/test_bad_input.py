"""Bad input is a MemvizError (a ValueError) or a snapshot, never a crash or a PanicException:
every prefix of a small file, flipped bytes, random bytes and pickles of other things."""

import pickle
import random

import pytest

import memviz


def check(data: bytes) -> None:
    try:
        s = memviz.load(data)
    except memviz.MemvizError:
        return
    # Whatever opened answers every method without anything but MemvizError.
    for call in (s.summary, s.folded, s.lines, s.leaks, s.state, s.oom):
        try:
            call()
        except memviz.MemvizError:
            pass


@pytest.mark.filterwarnings("ignore")
def test_every_prefix_of_a_small_file(fixtures):
    raw = (fixtures / "vector.pickle").read_bytes()
    for n in range(len(raw) + 1):
        check(raw[:n])


@pytest.mark.filterwarnings("ignore")
def test_prefixes_and_flipped_bytes_of_a_larger_file(fixtures):
    raw = (fixtures / "multidevice.pickle").read_bytes()
    for n in range(0, len(raw), max(1, len(raw) // 150)):
        check(raw[:n])
    rng = random.Random(17)
    for _ in range(150):
        b = bytearray(raw)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        check(bytes(b))


@pytest.mark.filterwarnings("ignore")
def test_garbage(fixtures):
    rng = random.Random(3)
    for n in (0, 1, 2, 7, 100, 5000):
        check(bytes(rng.randrange(256) for _ in range(n)))
    check(b"\x80\x04")
    check(b"\x1f\x8b" + bytes(50))  # a gzip header, nothing after
    for obj in ({}, [], {"segments": 3}, {"segments": [{"x": 1}]}, [1, 2, "a"]):
        check(pickle.dumps(obj, protocol=4))
        try:
            memviz.load(obj)
        except memviz.MemvizError:
            pass
    with pytest.raises(memviz.MemvizError):
        memviz.load(b"")
    with pytest.raises(memviz.MemvizError):
        memviz.load({"a": object()})
