"""Rows/s of `binlake.arrow_changes` against `mariadb-binlog -v`, on one file, in one run.

    .venv/bin/python bench/bench_arrow.py FILE [FILE ...] [--repeat 3]

Prints, per file and repetition, three times measured back to back:

* API call: `binlake.arrow_changes(FILE)` consumed batch by batch, timed in
  this process (pyarrow and binlake already imported: no interpreter start);
  with its CPU time (user + system, every thread), which shows how much of
  the work the native loop's worker threads did in parallel;
* process: the same in a fresh `python -c` (interpreter start, imports and
  exit included), as a user running a script sees it;
* mariadb-binlog --base64-output=decode-rows -v FILE >/dev/null, with its
  CPU time too (the steadier figure when the machine is busy),

and rows/s with the ratio against the C tool for both binlake times. The
machines are shared and noisy: compare ratios within one run, and use
callgrind to compare two versions of the code.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

import pyarrow as pa  # noqa: F401  (imported before timing: not the API's time)

import binlake
from binlake import core

_PROCESS = ("import sys, binlake; "
            "print(sum(b.num_rows for b in binlake.arrow_changes(sys.argv[1])))")


def _cpu(who=resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    assert core.native() is not None, "build the native core first (scripts/build_native.sh)"
    for path in args.files:
        print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB")
        for _ in range(args.repeat):
            cpu, start = _cpu(), time.perf_counter()
            rows = sum(b.num_rows for b in binlake.arrow_changes(path))
            call_s, call_cpu = time.perf_counter() - start, _cpu() - cpu
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", _PROCESS, path], check=True,
                                 capture_output=True, text=True).stdout
            process_s = time.perf_counter() - start
            assert int(out) == rows, (out, rows)
            cpu, start = _cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
            subprocess.run(["mariadb-binlog", "--base64-output=decode-rows", "-v", path],
                           stdout=subprocess.DEVNULL, check=True)
            c_s, c_cpu = time.perf_counter() - start, _cpu(resource.RUSAGE_CHILDREN) - cpu
            print(f"  rows {rows:,} | mariadb-binlog {c_s:.3f}s {rows / c_s:,.0f} rows/s"
                  f" (cpu {c_cpu:.2f}s)"
                  f" | arrow_changes API call {call_s:.3f}s {rows / call_s:,.0f} rows/s"
                  f" = {c_s / call_s:.2f}x C (cpu {call_cpu:.2f}s)"
                  f" | as a process {process_s:.3f}s = {c_s / process_s:.2f}x C", flush=True)


if __name__ == "__main__":
    main()
