#!/usr/bin/env python3
"""Independent reference implementation of `memviz summary --json` (stdlib only).

Usage: python3 tests/oracle/summary.py FILE

FILE is a PyTorch CUDA memory snapshot pickle (optionally gzip-compressed).
Prints exactly one JSON object:

    {"devices": [ {per-device summary}, ... ], "warnings": [...]}

Per-device keys (see shared/docs/SEMANTICS.md §2-3 and FORMAT.md):
    device, trace_entries, actions, segments, blocks, reserved_bytes,
    allocated_bytes, requested_bytes, timeline_allocations,
    peak_live_bytes, final_live_bytes

This file deliberately shares no code with the Rust implementation: it relies on
Python's own `pickle` module, with class lookup disabled so nothing is ever
imported or executed.
"""

import gzip
import io
import json
import pickle
import sys


class SafeUnpickler(pickle.Unpickler):
    """An Unpickler that refuses every global (GLOBAL / STACK_GLOBAL).

    Snapshots consist only of dicts, lists, tuples, strings, ints, floats and
    bools, so a legitimate file never needs a class lookup.
    """

    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            f"refusing to load global {module}.{name}: snapshots never need one")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("persistent ids are not allowed in snapshots")


def load_snapshot(path):
    """Read FILE (raw or gzip) and return the unpickled top-level object."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    # pickle stops at STOP and ignores trailing bytes (e.g. HTML base64 padding).
    return SafeUnpickler(io.BytesIO(data)).load()


def block_requested_size(block):
    """Requested size of a block, with the legacy (torch 2.0) fill rule.

    A block WITHOUT a `frames` key is legacy: its size is
    `requested_size or (history[0].real_size if history else size)` with
    JavaScript `||` semantics (0 / missing falls through).
    """
    if "frames" not in block:
        req = block.get("requested_size")
        if req:
            return req
        history = block.get("history")
        if history:
            return history[0].get("real_size")
        return block.get("size")
    return block.get("requested_size", 0)


def merge_free_pairs(trace):
    """SEMANTICS.md §2: collapse adjacent free_requested + free_completed.

    A `free_completed` whose immediately preceding *output* event is a
    `free_requested` with the same addr becomes part of that event, which is
    renamed `free` and keeps the request's fields (notably its size).
    Returns a new list of (action, addr, size) tuples.
    """
    out = []
    for e in trace:
        action = e.get("action")
        addr = e.get("addr")
        size = e.get("size", 0)
        if (action == "free_completed" and out
                and out[-1][0] == "free_requested" and out[-1][1] == addr):
            prev = out[-1]
            out[-1] = ("free", prev[1], prev[2])
            continue
        out.append((action, addr, size))
    return out


def timeline(trace, device_segments):
    """Active Memory Timeline element count and live-byte curve (SEMANTICS.md §3.1-3.2).

    Returns (timeline_allocations, peak_live_bytes, final_live_bytes).
    """
    events = merge_free_pairs(trace)

    n_elements = 0          # allocs + unmatched frees + ghosts
    initial_bytes = 0       # Σ sizes of elements present from the start
    deltas = []             # live-byte change of each counted event, in order
    live = {}               # addr -> size of the element remembered there

    for action, addr, size in events:
        if action == "alloc":
            n_elements += 1
            live[addr] = size        # overwrite: the older element is lost
            deltas.append(size)
        elif action in ("free", "free_completed"):
            if addr in live:
                deltas.append(-live.pop(addr))
            else:
                # Unmatched free: the allocation predates the trace window.
                n_elements += 1
                initial_bytes += size
                deltas.append(-size)
        # Everything else (lone free_requested, oom, snapshot, segment_*,
        # annotate, unknown actions) is ignored.

    # Ghosts: final active_allocated blocks not accounted for by the trace.
    for seg in device_segments:
        addr = seg.get("address", 0)
        for b in seg.get("blocks", []):
            # The block address is always computed, even if an `address` key exists.
            if b.get("state") == "active_allocated" and addr not in live:
                n_elements += 1
                initial_bytes += block_requested_size(b)
            addr += b.get("size", 0)

    cur = peak = initial_bytes
    for d in deltas:
        cur += d
        if cur > peak:
            peak = cur
    return n_elements, peak, cur


def summarize(obj):
    """Compute the summary dict for an unpickled snapshot."""
    warnings = []
    if isinstance(obj, list):
        obj = {"segments": obj, "device_traces": []}
    if not isinstance(obj, dict):
        raise ValueError(f"top level is {type(obj).__name__}, expected dict or list")

    segments = obj.get("segments") or []
    traces = obj.get("device_traces") or []

    devices = set(range(len(traces)))
    for seg in segments:
        devices.add(seg.get("device", 0))

    out = []
    for dev in sorted(devices):
        trace = traces[dev] if dev < len(traces) else []
        trace = trace or []
        segs = [s for s in segments if s.get("device", 0) == dev]

        actions = {}
        for e in trace:
            a = e.get("action")
            actions[a] = actions.get(a, 0) + 1

        n_blocks = 0
        reserved = allocated = requested = 0
        for s in segs:
            reserved += s.get("total_size", 0)
            for b in s.get("blocks", []):
                n_blocks += 1
                if b.get("state") == "active_allocated":
                    allocated += b.get("size", 0)
                    requested += block_requested_size(b)

        n_elem, peak, final = timeline(trace, segs)
        out.append({
            "device": dev,
            "trace_entries": len(trace),
            "actions": dict(sorted(actions.items())),
            "segments": len(segs),
            "blocks": n_blocks,
            "reserved_bytes": reserved,
            "allocated_bytes": allocated,
            "requested_bytes": requested,
            "timeline_allocations": n_elem,
            "peak_live_bytes": peak,
            "final_live_bytes": final,
        })
    return {"devices": out, "warnings": warnings}


def main(argv):
    if len(argv) != 2:
        print("usage: summary.py FILE", file=sys.stderr)
        return 2
    result = summarize(load_snapshot(argv[1]))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
