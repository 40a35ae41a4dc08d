"""CPU time of the Spark `events` view of one file against `mariadb-binlog -v`, in one run.

    .venv/bin/python bench/bench_events.py FILE [FILE ...]

Per file, back to back in this process (pyarrow and binlake imported before):

* native: `event_batches(Split(FILE, 1), {})` consumed batch by batch (the
  native loop, `_native.EventsReader`);
* Python: the reference loop `_python_event_batches` on the same file, with
  the native core's reader under it (the events view before the native
  loop; skipped with --no-python);
* mariadb-binlog --base64-output=decode-rows -v FILE >/dev/null (its CPU
  time, user + system, from the child's rusage),

with the ratio of the C tool's CPU time to each. The machines are shared
and noisy: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import time

import pyarrow as pa  # noqa: F401  (imported before timing)

from binlake import core
from binlake.spark.read.batches import _python_event_batches, event_batches
from binlake.spark.read.ranges import Split

C_TOOL = ["mariadb-binlog", "--base64-output=decode-rows", "-v"]


def _cpu(who=resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _timed(make, path: str) -> tuple[int, float, float]:
    cpu, start = _cpu(), time.perf_counter()
    rows = sum(b.num_rows for b in make(Split(path, 1), {}))
    return rows, _cpu() - cpu, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--no-python", action="store_true")
    args = parser.parse_args()
    assert core.native() is not None, "build the native core first (scripts/build_native.sh)"
    for path in args.files:
        print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB")
        cpu, start = _cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run(C_TOOL + [path], check=True, stdout=subprocess.DEVNULL)
        c_cpu, c_wall = _cpu(resource.RUSAGE_CHILDREN) - cpu, time.perf_counter() - start
        print(f"  mariadb-binlog -v         CPU {c_cpu:6.2f} s  wall {c_wall:6.2f} s")
        runs = [("events view, native", event_batches)]
        if not args.no_python:
            runs.append(("events view, Python loop", _python_event_batches))
        for name, make in runs:
            rows, cpu_s, wall_s = _timed(make, path)
            print(f"  {name:25} CPU {cpu_s:6.2f} s  wall {wall_s:6.2f} s  {rows} rows  "
                  f"{c_cpu / cpu_s if cpu_s else float('inf'):5.2f}x C (CPU)")


if __name__ == "__main__":
    main()
