"""Rows/s of `binlake.arrow_changes` against `mariadb-binlog -v`, on one file, in one run.

    .venv/bin/python bench/bench_arrow.py FILE [--repeat 3]

Prints, per repetition: arrow_changes end to end (pyarrow already imported),
mariadb-binlog --base64-output=decode-rows -v FILE >/dev/null, and the
split of arrow_changes' time: the native builder (`ChangeBatch.add_rows` and
`finish`) versus everything else (the per-event Python reader and loop).
Make a file with binlake.testing (generate_bulk) or use a corpus file.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time

import pyarrow as pa

import binlake
from binlake import core
from binlake.spark import batches
from binlake.spark.ranges import Split


class _Timed:
    """A ChangeBatch whose native calls are timed."""

    spent = 0.0

    def __init__(self, native):
        self.batch = native.ChangeBatch()

    def add_rows(self, *args):
        start = time.perf_counter()
        try:
            return self.batch.add_rows(*args)
        finally:
            _Timed.spent += time.perf_counter() - start

    def finish(self):
        start = time.perf_counter()
        try:
            return self.batch.finish()
        finally:
            _Timed.spent += time.perf_counter() - start

    def __getattr__(self, name):
        return getattr(self.batch, name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    native = core.native()
    assert native is not None, "build the native core first (scripts/build_native.sh)"
    print(f"{args.file}: {os.path.getsize(args.file) / 1e6:.0f} MB")
    for _ in range(args.repeat):
        start = time.perf_counter()
        rows = sum(b.num_rows for b in binlake.arrow_changes(args.file))
        arrow_s = time.perf_counter() - start
        start = time.perf_counter()
        subprocess.run(["mariadb-binlog", "--base64-output=decode-rows", "-v", args.file],
                       stdout=subprocess.DEVNULL, check=True)
        c_s = time.perf_counter() - start
        timed = type("Native", (), {"ChangeBatch": lambda: _Timed(native),
                                    "RowDecodeError": native.RowDecodeError,
                                    "ChangeLayout": native.ChangeLayout,
                                    "RowLayout": native.RowLayout})
        _Timed.spent = 0.0
        start = time.perf_counter()
        for batch in batches._native_change_batches(timed, Split(args.file, 1), {}):
            pa.record_batch(batch) if not isinstance(batch, pa.RecordBatch) else batch
        split_s = time.perf_counter() - start
        print(f"rows {rows}: arrow_changes {arrow_s:.3f}s {rows / arrow_s:,.0f} rows/s | "
              f"mariadb-binlog {c_s:.3f}s {rows / c_s:,.0f} rows/s | ratio {c_s / arrow_s:.2f}x | "
              f"native builder {_Timed.spent:.3f}s of {split_s:.3f}s "
              f"({rows / _Timed.spent:,.0f} rows/s alone)")


if __name__ == "__main__":
    main()
