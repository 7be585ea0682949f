#!/usr/bin/env python3
"""Memo-heavy fuzz seeds (issue 14): the shapes that made small files ask for gigabytes, at a
size the fuzzers run fast (each under 4 KiB), so that mutations explore around them; and small
JSON snapshots and zip archives (issue 28) for the loader's JSON and zip readers.

    python3 tests/fuzz/seeds.py DIR     # writes seed-memo-*.bin into DIR

The zip archives: torch.save's layout (tests/fixtures/formats.py `TorchZip`, as
`generate.py twins` writes it) of a small snapshot dict, of a list of segments and of a JSON
text; a checkpoint (`generate.py checkpoint`: a pickle naming torch storages); a zip without a
data.pkl (`generate.py zipjunk`); Python's zipfile with the data.pkl stored with its sizes in
the local header, deflated, deflated to a stream (sizes in a data descriptor), and with zip64
extra fields (`force_zip64`).

Each file starts with the control byte 63 (as the seeds `cargo xtask fuzz` writes), then the
file. Standard library only; deterministic (gzip with mtime 0)."""
import gzip
import io
import os
import pickle
import struct
import sys
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import formats  # noqa: E402  (tests/fixtures/formats.py: torch.save's zip layout)

CONTROL = bytes([63])


class P:
    """A tiny pickle-opcode writer (the same as crates/memviz-snapshot/tests/snapshot_all/hostile.rs)."""

    def __init__(self, proto=4):
        self.b = bytearray(b"\x80" + bytes([proto]))
        self.memo = 0

    def op(self, *bs):
        for x in bs:
            self.b += x if isinstance(x, (bytes, bytearray)) else bytes([x])
        return self

    def s(self, t):
        e = t.encode()
        return self.op(0x8C, bytes([len(e)]), e)

    def int(self, i):
        if 0 <= i < 256:
            return self.op(b"K", bytes([i]))
        return self.op(b"J", struct.pack("<i", i))

    def memoize(self):
        self.op(0x94)
        self.memo += 1
        return self.memo - 1

    def get(self, i):
        return self.op(b"h", bytes([i]))

    def frame(self, name, line=1):
        self.op(b"}")
        m = self.memoize()
        self.op(b"(").s("name").s(name).s("filename").s("x.py").s("line").int(line).op(b"u")
        return m

    def head(self):
        self.op(b"}")
        self.memoize()
        return self.op(b"(").s("segments").op(b"]").s("device_traces").op(b"](](")

    def tail(self):
        return bytes(self.op(b"eeu.").b)

    def event(self, frames=None, addr=4096, extra=b""):
        self.op(b"}(").s("action").s("alloc").s("addr").int(addr).s("size").int(512)
        if frames is not None:
            self.s("frames").get(frames)
        return self.op(extra, b"u")


def single_appends(n=100):
    p = P().head()
    f = p.frame("f")
    p.op(b"0]")
    lst = p.memoize()
    for _ in range(n):
        p.get(f).op(b"a")
    p.op(b"0")
    p.event(lst)
    return p.tail()


def batches(n=300, batch=100):
    p = P().head()
    a, b = p.frame("a", 1), p.frame("b", 2)
    p.op(b"00]")
    lst = p.memoize()
    for k in range(0, n, batch):
        p.op(b"(")
        for j in range(batch):
            p.get(a if (k + j) % 2 == 0 else b)
        p.op(b"e")
    p.op(b"0")
    p.event(lst)
    return p.tail()


def extend_after_use(n=12):
    p = P().head()
    f = p.frame("f")
    p.op(b"0]")
    lst = p.memoize()
    p.op(b"0")
    for i in range(n):
        p.get(lst).get(f).op(b"a0")
        p.event(lst, 4096 + 512 * i)
    return p.tail()


def shared_trace(events=10, devices=40):
    p = P()
    p.op(b"}(").s("segments").op(b"]").s("device_traces").op(b"](]")
    lone = p.memoize()
    p.event().op(b"a0]")
    lst = p.memoize()
    p.op(b"(")
    for k in range(events):
        p.event(addr=4096 + 512 * k)
    p.op(b"e0").get(lone)
    for _ in range(devices):
        p.get(lst)
    return bytes(p.op(b"eu.").b)


def shared_history(blocks=20, entries=30):
    p = P()
    p.op(b"}(").s("segments").op(b"](}(").s("address").int(1 << 20)
    p.s("total_size").int(512 * blocks).s("blocks").op(b"](")
    shared = None
    for _ in range(blocks):
        p.op(b"}(").s("size").int(512).s("state").s("inactive").s("history")
        if shared is None:
            p.op(b"}")
            h = p.memoize()
            p.op(b"(").s("addr").int(1).s("real_size").int(512).op(b"u0]")
            shared = p.memoize()
            p.op(b"(")
            for _ in range(entries):
                p.get(h)
            p.op(b"e")
        else:
            p.get(shared)
        p.op(b"u")
    p.op(b"eue").s("device_traces").op(b"]u.")
    return bytes(p.b)


def many_devices(n=80):
    p = P()
    p.op(b"}(").s("segments").op(b"]").s("device_traces").op(b"](")
    for d in range(n):
        p.op(b"]}(").s("action").s("oom").s("size").int(512).s("device_free").int(d).op(b"ua")
    return bytes(p.op(b"eu.").b)


def single_setitems(n=200):
    p = P()
    p.op(b"}")
    p.memoize()
    p.op(b"(").s("segments").op(b"]").s("device_traces").op(b"]u").s("zzz").op(b"}")
    for i in range(n):
        p.int(i).op(b"Ns")
    return bytes(p.op(b"s.").b)


def shared_json(keys=30, items=40):
    p = P()
    p.op(b"}(").s("segments").op(b"]").s("device_traces").op(b"]")
    p.s("x" * 40)
    sid = p.memoize()
    p.op(b"0]")
    lst = p.memoize()
    p.op(b"(")
    for _ in range(items):
        p.get(sid)
    p.op(b"e0")
    for k in range(keys):
        p.s("k%d" % k).get(lst)
    return bytes(p.op(b"u.").b)


def shared_forward_frames(events=30, lines=20):
    p = P().head().op(b"]")
    ff = p.memoize()
    p.op(b"(")
    for i in range(lines):
        p.s('  File "m.py", line %d' % i)
    p.op(b"e0")
    for i in range(events):
        p.op(b"}(").s("action").s("alloc").s("addr").int(4096 + 512 * i)
        p.s("forward_frames").get(ff).op(b"u")
    return p.tail()


def shared_annotation(count=60, extras=10):
    p = P()
    p.op(b"}(").s("segments").op(b"]").s("device_traces").op(b"]")
    p.s("external_annotations").op(b"](}")
    a = p.memoize()
    p.op(b"(").s("name").s("step").s("stage").s("START")
    for i in range(extras):
        p.s("x%d" % i).s("v")
    p.op(b"u")
    for _ in range(count - 1):
        p.get(a)
    return bytes(p.op(b"eu.").b)


def shared_segment(count=200):
    p = P()
    p.op(b"}(").s("segments").op(b"](}")
    seg = p.memoize()
    p.op(b"(").s("address").int(1 << 20).s("total_size").int(512).s("spare").int(1).op(b"u")
    for _ in range(count):
        p.get(seg)
    return bytes(p.op(b"e").s("device_traces").op(b"]u.").b)


def not_segments():
    p = P()
    p.op(b"](}(").s("name").s("a").s("value").int(1).op(b"u}(").s("weight").int(2).op(b"ue.")
    return bytes(p.b)


def json_snapshot(events=12, cut=None):
    """A small snapshot as `json.dump` writes it (frames shared by the entries, a pool id
    pair as a list, Python's NaN, a big integer, escapes), optionally cut after `cut` bytes."""
    import json

    frames = [{"name": "f\u00e9", "filename": "a.py", "line": 1},
              {"name": "operator[]", "filename": "??", "line": 0}]
    seg = {"device": 0, "address": 1 << 40, "total_size": 2097152, "allocated_size": 512,
           "active_size": 512, "requested_size": 500, "stream": 0, "segment_type": "small",
           "segment_pool_id": [0, 0], "is_expandable": False, "frames": frames,
           "blocks": [{"address": 1 << 40, "size": 512, "requested_size": 500,
                       "state": "active_allocated", "frames": frames},
                      {"address": (1 << 40) + 512, "size": 2096640, "requested_size": 0,
                       "state": "inactive", "frames": []}]}
    trace = [{"action": ["alloc", "free_requested", "free_completed"][i % 3],
              "addr": (1 << 40) + 512 * (i // 3), "size": 500, "stream": 0,
              "time_us": 1708000000000000 + i, "frames": frames if i % 2 else []}
             for i in range(events)]
    trace.append({"action": "oom", "size": 1 << 64, "device_free": 0, "stream": 0})
    snap = {"segments": [seg], "device_traces": [trace, []],
            "allocator_settings": {"garbage_collection_threshold": float("nan"),
                                   "PYTORCH_CUDA_ALLOC_CONF": "a\"b\n"},
            "external_annotations": [{"name": "s", "stage": "START", "device": 0,
                                      "time_us": 1708000000000000}]}
    text = json.dumps(snap).encode()
    return text if cut is None else text[:cut]


def small_snapshot():
    """A small snapshot dict, as `torch.cuda.memory._snapshot()` returns it."""
    frames = [{"name": "f", "filename": "a.py", "line": 1}]
    seg = {"device": 0, "address": 1 << 32, "total_size": 4096, "allocated_size": 512,
           "active_size": 512, "requested_size": 500, "stream": 0, "segment_type": "small",
           "segment_pool_id": (0, 0), "is_expandable": False, "frames": frames,
           "blocks": [{"address": 1 << 32, "size": 512, "requested_size": 500,
                       "state": "active_allocated", "frames": frames},
                      {"address": (1 << 32) + 512, "size": 3584, "requested_size": 0,
                       "state": "inactive", "frames": []}]}
    trace = [{"action": a, "addr": 1 << 32, "size": 500, "stream": 0, "time_us": 1000 + i,
              "frames": frames} for i, a in enumerate(["alloc", "free_requested",
                                                       "free_completed", "alloc"])]
    return {"segments": [seg], "device_traces": [trace], "allocator_settings": {}}


def torch_zip(data_pkl, storages=(), archive="snap"):
    """torch.save's archive of a pickle (formats.write_torch_save, in memory)."""
    f = io.BytesIO()
    z = formats.TorchZip(f, archive)
    z.record("data.pkl", data_pkl)
    z.record(".format_version", b"1")
    z.record(".storage_alignment", b"64")
    z.record("byteorder", b"little")
    for key, data in storages:
        z.record("data/%s" % key, data)
    z.finish()
    return f.getvalue()


class Unseekable(io.RawIOBase):
    """A write-only stream zipfile cannot seek in: it writes data descriptors."""

    def __init__(self):
        self.b = bytearray()

    def writable(self):
        return True

    def write(self, b):
        self.b += b
        return len(b)


def python_zip(data_pkl, method, stream=False, zip64=False):
    """Python's zipfile: `snap/byteorder` and `snap/data.pkl` (stored or deflated)."""
    f = Unseekable() if stream else io.BytesIO()
    with zipfile.ZipFile(f, "w") as z:
        for name, data in (("snap/byteorder", b"little"), ("snap/data.pkl", data_pkl)):
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 2, 3, 4, 6))
            info.compress_type = method
            with z.open(info, "w", force_zip64=zip64) as w:
                w.write(data)
    return bytes(f.b) if stream else f.getvalue()


def zip_junk():
    """`generate.py zipjunk`: two text files, no data.pkl."""
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w") as z:
        for name, text, method in formats.JUNK:
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 2, 3, 4, 6))
            info.compress_type = method
            z.writestr(info, text)
    return f.getvalue()


def zip_seeds():
    snap = pickle.dumps(small_snapshot(), protocol=2)
    segments = pickle.dumps(small_snapshot()["segments"], protocol=2)
    return {
        "zip-torch": torch_zip(snap),
        "zip-torch-segments": torch_zip(segments, archive="snapshot_50"),
        "zip-torch-json": torch_zip(json_snapshot(4)),
        "zip-checkpoint": torch_zip(formats.checkpoint_pickle(),
                                    [("0", struct.pack("<4f", 1.0, 2.0, 3.0, 4.0))]),
        "zip-junk": zip_junk(),
        "zip-stored": python_zip(snap, zipfile.ZIP_STORED),
        "zip-deflated": python_zip(snap, zipfile.ZIP_DEFLATED),
        "zip-deflated-stream": python_zip(snap, zipfile.ZIP_DEFLATED, stream=True),
        "zip-zip64": python_zip(snap, zipfile.ZIP_STORED, zip64=True),
        "zip-zip64-deflated-stream": python_zip(snap, zipfile.ZIP_DEFLATED, stream=True,
                                                zip64=True),
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    small = single_appends(40)
    seeds = {
        "single-appends": single_appends(),
        "batches": batches(),
        "extend-after-use": extend_after_use(),
        "shared-trace": shared_trace(),
        "shared-history": shared_history(),
        "many-devices": many_devices(),
        "single-setitems": single_setitems(),
        "shared-json": shared_json(),
        "shared-forward-frames": shared_forward_frames(),
        "shared-annotation": shared_annotation(),
        "shared-segment": shared_segment(),
        "not-segments": not_segments(),
        "multi-member.gz": gzip.compress(small[:50], mtime=0) + gzip.compress(small[50:], mtime=0),
        "gzip-of-json.gz": gzip.compress(b'{"segments": [], "device_traces": []}', mtime=0),
        "protocol-0": b"(dp0\nVsegments\np1\n(lp2\nsVdevice_traces\np3\n(lp4\ns.",
        # Snapshots saved as JSON (issue 28): whole, cut in the trace, a bare list of segments
        # with a byte order mark, and gzipped.
        "json": json_snapshot(),
        "json-cut": json_snapshot(cut=1800),
        "json-bare-bom": b"\xef\xbb\xbf " + json_snapshot()[len(b'{"segments": '):].split(b', "device_traces"')[0],
        "json.gz": gzip.compress(json_snapshot(6), mtime=0),
    }
    # Zip archives (issue 28): torch.save's layout and what other writers do.
    seeds.update(zip_seeds())
    for name, body in seeds.items():
        assert len(body) < 4096, (name, len(body))
        with open(os.path.join(out, "seed-memo-%s.bin" % name), "wb") as f:
            f.write(CONTROL + body)
    print("%d seeds in %s" % (len(seeds), out))


if __name__ == "__main__":
    main()
