"""Benchmark (prints numbers; not a test): `Snapshot.trace()` and `allocations()` of a big
snapshot, with a plain parse as the baseline in the same run, and whether pyarrow shares the
buffers Rust made (no copy across the C data interface).

    python tests/python/bench_tables.py [target/bench/snap_150mb.pickle] [REPEATS]

The 150 MB generated snapshot is what `cargo xtask bench` writes (`tests/fixtures/generate.py
large --mb 150 target/bench/snap_150mb.pickle`). Targets (issue 32): trace() < 0.5 s and
allocations() < 1 s on top of the parse."""

import sys
import time

import pyarrow as pa

import memviz


def best(repeats, f):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "target/bench/snap_150mb.pickle"
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    t_parse, snap = best(repeats, lambda: memviz.load(path))
    print(f"{path}: parse {t_parse:.3f} s (baseline)")
    pool = pa.default_memory_pool()
    for name, f in (("trace()", snap.trace), ("allocations()", snap.allocations)):
        before = pool.bytes_allocated()
        t, table = best(repeats, f)
        # Buffers imported through the C data interface are owned by Rust's allocator, not
        # pyarrow's pool: a pool that did not grow means nothing was copied on the way in.
        grown = pool.bytes_allocated() - before
        print(f"{name:14} {t:.3f} s, {table.num_rows} rows, {table.nbytes / 1e6:.1f} MB, "
              f"pyarrow pool grew by {grown} bytes, chunks per column "
              f"{sorted({c.num_chunks for c in table.columns})}")
        del table


if __name__ == "__main__":
    main()
