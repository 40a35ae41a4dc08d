#!/usr/bin/env python3
"""`binlake pipeline` over a large generated binlog: throughput on local[1] and local[2].

    .venv/bin/python bench/bench_pipeline.py [--mb 300] [--masters local[1],local[2]]

Strategy: the binlog is written once by a private MariaDB running
binlake.testing.workload.generate_bulk (inserts, updates, deletes of two
realistic tables) and cached under bench/data/ (gitignored). Then, for each
Spark master, a fresh session runs the whole pipeline (events/, changes/,
tables/) into a scratch directory, timed as a whole and per stage. Reported:
MB/s and row changes/s per master, the scaling ratio local[1] -> local[2]
next to the ratio a CPU-only Python source gets on the same machine at the
same time (the ceiling: these machines are shared), the header scan's speed
(binlake.read.scan, the splitter) and, as the yardstick,
`mariadb-binlog --base64-output=decode-rows -v` over the same files.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"


def bulk_binlogs(megabytes: int) -> list[Path]:
    """The cached binlog files of a generate_bulk run of about `megabytes` MB."""
    folder = DATA / f"bulk-{megabytes}MB"
    done = folder / "bulk.json"
    if not done.exists():
        from binlake.testing.mariadb import MariaDBServer
        from binlake.testing.workload import generate_bulk
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        with tempfile.TemporaryDirectory(prefix="binlake-bench-") as work:
            started = time.perf_counter()
            with MariaDBServer(work, max_binlog_size=1 << 30) as server:
                counts = generate_bulk(server, "bench", megabytes << 20)
                server.flush_logs()
            files = server.binlog_files()[:-1]
            for path in files:
                shutil.copyfile(path, folder / path.name)
        counts["seconds"] = round(time.perf_counter() - started, 1)
        done.write_text(json.dumps(counts, indent=1))
        print(f"generated {counts} in {folder}", flush=True)
    return sorted(folder.glob("binlog.[0-9]*"))


def timed(function, *args, **kwargs):
    started = time.perf_counter()
    value = function(*args, **kwargs)
    seconds = time.perf_counter() - started
    return value, seconds


def header_scan(files: list[Path]) -> float:
    from binlake.read.scan import scan
    total = sum(p.stat().st_size for p in files)
    for p in files:  # warm the page cache: the scan is measured, not the disk
        p.read_bytes()
    _, seconds = timed(lambda: [scan(p) for p in files])
    return total / seconds / 1e6


def mariadb_binlog(files: list[Path]) -> float | None:
    tool = shutil.which("mariadb-binlog")
    if tool is None:
        return None
    command = [tool, "--base64-output=decode-rows", "-v", *map(str, files)]
    _, seconds = timed(subprocess.run, command, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
    return seconds


def burn_seconds(spark, tasks: int = 4, cpu_seconds: float = 1.0) -> float:
    """Wall time of a Python data source whose tasks only burn CPU: how much
    parallelism this machine really gives Spark's Python workers right now
    (the machines are shared), i.e. the ceiling of the pipeline's scaling."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Burn(DataSource):
        @classmethod
        def name(cls):
            return "binlake_bench_burn"

        def schema(self):
            return "n long"

        def reader(self, schema):
            return BurnReader()

    class BurnReader(DataSourceReader):
        def partitions(self):
            return [InputPartition(i) for i in range(tasks)]

        def read(self, partition):
            import time as clock
            started, n = clock.process_time(), 0
            while clock.process_time() - started < cpu_seconds:
                n += 1
            yield (n,)

    spark.dataSource.register(Burn)
    frame = spark.read.format("binlake_bench_burn").load()
    frame.write.format("noop").mode("overwrite").save()  # workers started
    _, seconds = timed(frame.write.format("noop").mode("overwrite").save)
    return seconds


def pipeline(master: str, files: list[Path], split_bytes: int) -> dict:
    """One fresh session on `master`, one pipeline run; stage times from its log."""
    from binlake.spark.run.pipeline import run_pipeline
    from binlake.spark.run.session import spark_session
    spark = spark_session(master, "binlake bench")  # as `binlake pipeline --master` makes it
    spark.sparkContext.setLogLevel("ERROR")
    spark.range(1).count()  # the JVM is up before the clock starts
    burn = burn_seconds(spark)
    marks = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="binlake-bench-out-") as out:
        result = run_pipeline(spark, [str(p) for p in files], out, split_bytes=split_bytes,
                              log=lambda m: marks.append((time.perf_counter() - started, m)))
        total = time.perf_counter() - started
    spark.stop()
    read = max(t for t, m in marks if m.startswith(("events:", "changes:")))
    return {"master": master, "seconds": total, "read_seconds": read, "burn_seconds": burn,
            "tables_seconds": total - read, "changes": result.changes,
            "events": result.events, "partitions": len(result.segments)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=300, help="binlog size to generate (MB)")
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--split-mb", type=int, default=32, help="bytes per range (MB)")
    parser.add_argument("--run-one", metavar="MASTER", help=argparse.SUPPRESS)
    parser.add_argument("files", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_one:
        print(json.dumps(pipeline(args.run_one, [Path(f) for f in args.files], args.split_mb << 20)))
        return 0
    files = bulk_binlogs(args.mb)
    size = sum(p.stat().st_size for p in files)
    print(f"input: {len(files)} file(s), {size / 1e6:.0f} MB; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    print(f"header scan (binlake.read.scan): {header_scan(files):.0f} MB/s", flush=True)
    peer = mariadb_binlog(files)
    if peer:
        print(f"mariadb-binlog -v decode: {peer:.1f} s, {size / peer / 1e6:.0f} MB/s", flush=True)
    runs = []
    for master in args.masters.split(","):
        # A process of its own per master: each starts from a cold JVM, as a user would.
        command = [sys.executable, __file__, "--run-one", master, "--split-mb", str(args.split_mb),
                   *map(str, files)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        run = json.loads(done.stdout.strip().splitlines()[-1])
        runs.append(run)
        print(f"{master}: pipeline {run['seconds']:.1f} s ({size / run['seconds'] / 1e6:.1f} MB/s, "
              f"{run['changes'] / run['seconds']:,.0f} changes/s); reading {run['read_seconds']:.1f} s "
              f"({size / run['read_seconds'] / 1e6:.1f} MB/s), tables {run['tables_seconds']:.1f} s; "
              f"{run['changes']:,} changes, {run['events']:,} events", flush=True)
    if len(runs) >= 2:
        first, last = runs[0], runs[-1]
        print(f"scaling {first['master']} -> {last['master']}: "
              f"x{first['seconds'] / last['seconds']:.2f} whole, "
              f"x{first['read_seconds'] / last['read_seconds']:.2f} reading; "
              f"ceiling on this machine now (CPU-only Python tasks): "
              f"x{first['burn_seconds'] / last['burn_seconds']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
