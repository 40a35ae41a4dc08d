"""A Structured Streaming query over the `binlog` source, killed with SIGKILL
at random moments (JVM and all) while binlogs arrive, then run to the end:
its sink, read as Spark reads a file sink (through its `_spark_metadata`
log), holds every change exactly once, as a batch read of the same files.

What makes it safe is Spark's own protocol (offsets logged before a batch
runs, the sink's commit log after it) together with offsets the source can
replay: a batch between two logged offsets reads the same bytes again.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import sweeps

from .test_streaming import change_keys

pytest.importorskip("pyspark")

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(str(p) for p in (ROOT / "src" / "binlake" / "sample_data").glob("binlog.0*"))
KILLS = 6  #: in a full sweep (tests/sweeps.py)

#: One run of the query: the files not yet in the folder arrive one by one,
#: each processed as a micro-batch of its own, then the query stops.
QUERY = textwrap.dedent("""
    import os, shutil, sys
    from pyspark.sql import SparkSession
    import binlake.spark
    folder, sink, checkpoint, *samples = sys.argv[1:]
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    binlake.spark.register(spark)
    query = (spark.readStream.format("binlog").option("view", "changes").load(folder)
             .writeStream.format("parquet").option("path", sink)
             .option("checkpointLocation", checkpoint)
             .trigger(processingTime="100 milliseconds").start())
    for source in samples:
        target = os.path.join(folder, os.path.basename(source))
        if not os.path.exists(target):  # arrives whole, as a rename makes it
            shutil.copyfile(source, target + ".tmp")
            os.replace(target + ".tmp", target)
        query.processAllAvailable()
    query.stop()
""")


def run(folder: Path, sink: Path, checkpoint: Path, **popen) -> subprocess.Popen:
    _drop_aborted_log_writes(checkpoint)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    return subprocess.Popen([sys.executable, "-c", QUERY, str(folder), str(sink), str(checkpoint),
                             *SAMPLES], env=env, start_new_session=True, **popen)


def _drop_aborted_log_writes(checkpoint: Path) -> None:
    """Spark writes each offset-log entry to a hidden `.N.<uuid>.tmp` and
    renames it; a kill in between leaves that file, which is no entry. Yet
    before batch 0 Spark (4.x, `verifyNewCheckpointDirectory`) counts any file
    in offsets/ and refuses to start. Its message says to clear the location:
    what a user does, only for the aborted writes (docs/spark.md)."""
    for log in ("offsets", "commits"):
        for path in (checkpoint / log).glob(".*.tmp*"):
            path.unlink()


def test_a_streaming_query_killed_at_random_moments_ends_with_every_change_once(spark,
                                                                               tmp_path):
    folder, sink, checkpoint = tmp_path / "binlogs", tmp_path / "sink", tmp_path / "checkpoint"
    folder.mkdir()
    (tmp_path / "ref-binlogs").mkdir()
    start = time.perf_counter()
    whole = run(tmp_path / "ref-binlogs", tmp_path / "ref-sink", tmp_path / "ref-checkpoint",
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert whole.wait() == 0, whole.stderr.read()[-2000:]
    duration = time.perf_counter() - start
    rng = sweeps.generator(17)
    for _ in range(sweeps.trials(KILLS)):
        process = run(folder, sink, checkpoint, stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(duration / 3, duration))  # past the JVM's start, mostly
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    done = run(folder, sink, checkpoint, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert done.wait() == 0, done.stderr.read()[-2000:]
    streamed = [row.asDict(recursive=True) for row in spark.read.parquet(str(sink)).collect()]
    batch = spark.read.format("binlog").option("view", "changes").load(SAMPLES)
    expected = [row.asDict(recursive=True) for row in batch.collect()]
    assert expected
    assert change_keys(streamed) == change_keys(expected)
    reference = [row.asDict(recursive=True)
                 for row in spark.read.parquet(str(tmp_path / "ref-sink")).collect()]
    assert change_keys(reference) == change_keys(expected)
