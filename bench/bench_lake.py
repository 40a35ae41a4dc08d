#!/usr/bin/env python3
"""The lake's costs (issue 18's targets): `binlake pipeline` against bare
PySpark jobs, run in the same session of this script, each a fresh process
as a user runs it (JVM start included).

    .venv/bin/python bench/bench_lake.py [--mb 100] [--masters local[1],local[2]] [--repeat 3]

Strategy: three binlog files of the same two tables are written once by a
private MariaDB (binlake.testing.workload.generate_bulk, cached under
bench/data/lake-<MB>MB/): binlog.000001 a bulk batch, binlog.000002 a few
KB, binlog.000003 a second bulk batch that updates and deletes rows of the
first. Then, timed:
- fixed cost: the pipeline over the bundled sample, against a bare PySpark
  job (session start, one tiny Parquet write, one tiny aggregate write),
  run as a user writes it and again with the JVM option binlake gives a
  short run on a few cores (the JVM's share compared like for like);
- marginal cost: the pipeline over the first bulk file minus the sample's,
  against Spark reading the pipeline's own changes/ and writing it again
  with the same partitioning minus the bare job (Spark's part alone);
- incremental: on that lake, a run with nothing new; adding the small file;
  adding the second bulk file (against the first); and two floors against
  a Spark session alone: the session with one tiny aggregate query (any run
  that queries at all), and the session reading the small file's new
  change files with one aggregate (Spark's part alone of that increment);
- local[2] over local[1] on the first bulk file (local[1] also pinned to one
  CPU with taskset: unpinned, its JVM and the native decoder's threads still
  use every core).
Each figure is the median of `--repeat` rounds of the whole sequence (a
shared machine's noise is per run). Targets: fixed <= 1.3x, marginal <= 1.5x, small increment <= 1.5x nothing
new, second bulk <= first, local[2]/local[1] >= 1.7x.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
PYTHON = sys.executable

BARE_JOB = """
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master(sys.argv[2]).appName("bare")
         .config("spark.sql.shuffle.partitions", "8").getOrCreate())
frame = spark.createDataFrame([(1, "a"), (2, "b"), (3, "a")], "id INT, k STRING")
frame.write.parquet(sys.argv[1] + "/rows")
frame.groupBy("k").count().write.parquet(sys.argv[1] + "/counts")
spark.stop()
"""

SESSION_ONLY = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master(sys.argv[2]).appName("session").getOrCreate()
spark.stop()
"""

TINY_QUERY = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master(sys.argv[2]).appName("tiny").getOrCreate()
frame = spark.range(25)
frame.groupBy((frame.id % 2).alias("k")).count().collect()
spark.stop()
"""

READ_NEW_CHANGES = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master(sys.argv[2]).appName("increment").getOrCreate()
files = sys.argv[3:]
frame = spark.read.option("basePath", sys.argv[1]).parquet(*files)
frame.groupBy("database", "table").count().collect()
spark.stop()
"""

COPY_JOB = """
import sys
from binlake.spark.run.lake_tables import read_changes
from binlake.spark.run.session import spark_session
spark = spark_session(sys.argv[3], "copy")
(read_changes(spark, sys.argv[1]).sortWithinPartitions("database", "table", "date")
 .write.partitionBy("database", "table", "date").parquet(sys.argv[2]))
spark.stop()
"""


def bulk_server(work: str):
    """A private MariaDB sized for writing large binlogs fast."""
    from binlake.testing.mariadb import MariaDBServer
    return MariaDBServer(work, max_binlog_size=1 << 30,
                         extra={"innodb_buffer_pool_size": "1G", "innodb_log_file_size": "256M"})


def lake_binlogs(megabytes: int) -> list[Path]:
    folder = DATA / f"lake-{megabytes}MB"
    done = folder / "lake.json"
    if not done.exists():
        from binlake.testing.workload import generate_bulk
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        counts = {}
        with tempfile.TemporaryDirectory(prefix="binlake-bench-") as work:
            with bulk_server(work) as server:
                counts["first"] = generate_bulk(server, "bench", megabytes << 20)
                server.flush_logs()
                server.execute("UPDATE bench.bulk_orders SET amount = amount + 1 WHERE id <= 20")
                server.execute("DELETE FROM bench.bulk_events WHERE id <= 5")
                server.flush_logs()
                counts["second"] = generate_bulk(server, "bench", megabytes << 20, seed=1,
                                                 more=True)
                server.flush_logs()
            for path in server.binlog_files()[:3]:
                shutil.copyfile(path, folder / path.name)
        done.write_text(json.dumps(counts, indent=1))
    return sorted(folder.glob("binlog.[0-9]*"))


#: binlake's JVM option for a short run on a few local cores (spark_session).
SHORT_RUN_JVM = "--driver-java-options -XX:TieredStopAtLevel=1 pyspark-shell"


def timed(argv: list[str], submit_args: str | None = None) -> float:
    env = {**os.environ, "TZ": "UTC", "PYTHONPATH": str(ROOT / "src"),
           "PYSPARK_PYTHON": PYTHON, "PYSPARK_DRIVER_PYTHON": PYTHON}
    if submit_args:
        env["PYSPARK_SUBMIT_ARGS"] = submit_args
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    return seconds


def pipeline(inputs, out: Path, master: str) -> float:
    return timed([PYTHON, "-m", "binlake", "pipeline", *map(str, inputs), "--out", str(out),
                  "--master", master])


def change_files(lake: Path) -> set[str]:
    return {str(p) for p in (lake / "changes").rglob("*.parquet")}


def one_round(work: Path, first: Path, small: Path, second: Path, args) -> dict:
    """Every timed run once, in order (the incremental runs grow one lake)."""
    figures = {}
    figures["bare PySpark job"] = timed([PYTHON, "-c", BARE_JOB, str(work / "bare"), args.master])
    figures["bare job, short-run JVM"] = timed([PYTHON, "-c", BARE_JOB, str(work / "bare1"),
                                                args.master], SHORT_RUN_JVM)
    figures["Spark session alone"] = timed([PYTHON, "-c", SESSION_ONLY, "-", args.master],
                                           SHORT_RUN_JVM)
    figures["session + one tiny query"] = timed([PYTHON, "-c", TINY_QUERY, "-", args.master],
                                                SHORT_RUN_JVM)
    figures["pipeline, sample"] = timed([PYTHON, "-m", "binlake", "pipeline", "--sample",
                                         "--temporals", "text",  # the sample's zero dates
                                         "--out", str(work / "sample"), "--master", args.master])
    lake = work / "lake"
    figures["pipeline, first bulk"] = pipeline([first], lake, args.master)
    figures["Spark copy of its changes/"] = timed([PYTHON, "-c", COPY_JOB, str(lake),
                                                   str(work / "copy"), args.master])
    figures["copy, short-run JVM"] = timed([PYTHON, "-c", COPY_JOB, str(lake), str(work / "copy1"),
                                            args.master], SHORT_RUN_JVM)
    figures["nothing new"] = pipeline([first], lake, args.master)
    before = change_files(lake)
    figures["+ small binlog"] = pipeline([first, small], lake, args.master)
    # Spark's part alone of any increment: reading its new change files, one aggregate.
    figures["session + its new changes read"] = timed(
        [PYTHON, "-c", READ_NEW_CHANGES, str(lake / "changes"), args.master,
         *sorted(change_files(lake) - before)], SHORT_RUN_JVM)
    figures["+ second bulk"] = pipeline([first, small, second], lake, args.master)
    for master in args.masters.split(","):
        folder = work / "".join(c for c in master if c.isalnum())
        figures[f"first bulk, {master}"] = pipeline([first], folder, master)
    if shutil.which("taskset"):  # local[1] where it has one CPU: what a busy machine gives it
        one = args.masters.split(",")[0]
        figures[f"first bulk, {one} on one CPU"] = timed(
            ["taskset", "-c", "0", PYTHON, "-m", "binlake", "pipeline", str(first),
             "--out", str(work / "pinned"), "--master", one])
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=100, help="size of each bulk binlog")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--masters", default="local[1],local[2]",
                        help="the two masters of the scaling ratio")
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds of every run; each figure is the median")
    args = parser.parse_args(argv)
    first, small, second = lake_binlogs(args.mb)
    sizes = {p.name: p.stat().st_size for p in (first, small, second)}
    print(f"binlogs: {sizes}", flush=True)
    rounds = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="binlake-lake-") as scratch:
            rounds.append(one_round(Path(scratch), first, small, second, args))
    # Each figure's median over the rounds (the machine's noise is per run).
    figures = {name: statistics.median(r[name] for r in rounds) for name in rounds[0]}
    for name, seconds in figures.items():
        spread = ", ".join(f"{r[name]:.1f}" for r in rounds)
        print(f"{name:32} {seconds:7.1f} s   ({spread})", flush=True)
    one, two = args.masters.split(",")
    f = figures
    ratios = {
        "fixed: sample / bare (<= 1.3)": f["pipeline, sample"] / f["bare PySpark job"],
        "  the same, bare job with the short-run JVM":
            f["pipeline, sample"] / f["bare job, short-run JVM"],
        "marginal: (bulk - sample) / (copy - bare) (<= 1.5)":
            (f["pipeline, first bulk"] - f["pipeline, sample"])
            / (f["Spark copy of its changes/"] - f["bare PySpark job"]),
        "  the same, peers with the short-run JVM":
            (f["pipeline, first bulk"] - f["pipeline, sample"])
            / (f["copy, short-run JVM"] - f["bare job, short-run JVM"]),
        "small increment / nothing new (<= 1.5)": f["+ small binlog"] / f["nothing new"],
        "  floor: one tiny query / session alone":
            f["session + one tiny query"] / f["Spark session alone"],
        "  floor: Spark reading the increment's changes / session alone":
            f["session + its new changes read"] / f["Spark session alone"],
        "second bulk / first bulk (<= 1.0)": f["+ second bulk"] / f["pipeline, first bulk"],
        f"{one} / {two} (>= 1.7)": f[f"first bulk, {one}"] / f[f"first bulk, {two}"],
    }
    if f"first bulk, {one} on one CPU" in f:
        ratios[f"  the same, {one} on one CPU"] = (f[f"first bulk, {one} on one CPU"]
                                                  / f[f"first bulk, {two}"])
    for name, ratio in ratios.items():
        print(f"{name:52} {ratio:5.2f}x", flush=True)
    (DATA / "lake_results.json").write_text(json.dumps({"figures": figures, "ratios": ratios,
                                                         "rounds": rounds, "sizes": sizes},
                                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
