"""The `binlog` source as a Structured Streaming source over a folder that fills up.

The ground-truth binlogs arrive one by one; the second grows in two steps,
first cut in the middle of an event (as a reader can see a file the server
is writing). The query is stopped and restarted from its checkpoint twice,
once while that file is half written. At the end the sink must hold every
change of every file exactly once: the same rows as a batch read.
"""
from __future__ import annotations

import os
import shutil

import pytest

pq = pytest.importorskip("pyarrow.parquet")


def arrive(source: str, folder, data: bytes | None = None) -> None:
    """Put a file (or a prefix of it) in place at once, as a rename does."""
    target = os.path.join(folder, os.path.basename(source))
    tmp = os.path.join(os.path.dirname(folder), "tmp-" + os.path.basename(source))
    if data is None:
        shutil.copyfile(source, tmp)
    else:
        with open(tmp, "wb") as f:
            f.write(data)
    os.replace(tmp, target)


def change_keys(rows) -> list:
    """Changes as comparable tuples (pyarrow gives maps as item lists, Spark as dicts)."""
    def items(image):
        if image is None:
            return None
        return sorted(image.items() if isinstance(image, dict) else image)
    return sorted((tuple(r["commit_key"].values()), r["op"], items(r["before"]), items(r["after"]))
                  for r in rows)


def test_every_change_exactly_once_across_restarts(spark, truth, tmp_path):
    folder, sink, checkpoint = tmp_path / "binlogs", tmp_path / "sink", tmp_path / "checkpoint"
    folder.mkdir()
    first, second, *rest = truth.files
    stream = (spark.readStream.format("binlog").option("view", "changes").load(str(folder))
              .writeStream.format("parquet").option("path", str(sink))
              .option("checkpointLocation", str(checkpoint)))

    # Run 1: a continuous query while files arrive.
    query = stream.trigger(processingTime="200 milliseconds").start()
    try:
        arrive(first, folder)
        query.processAllAvailable()
        data = open(second, "rb").read()
        arrive(second, folder, data[:len(data) // 2 + 7])
        query.processAllAvailable()
    finally:
        query.stop()
    after_first_run = pq.read_table(sink).num_rows
    assert after_first_run > 0

    # Run 2: restarted from the checkpoint with the half-read file now whole.
    arrive(second, folder)
    for path in rest[:1]:
        arrive(path, folder)
    stream.trigger(availableNow=True).start().awaitTermination()

    # Run 3: continuous again, the last files arriving while it runs.
    query = stream.trigger(processingTime="200 milliseconds").start()
    try:
        for path in rest[1:]:
            arrive(path, folder)
        query.processAllAvailable()
    finally:
        query.stop()

    streamed = pq.read_table(sink).to_pylist()
    batch = spark.read.format("binlog").option("view", "changes").load(truth.files)
    expected = [row.asDict(recursive=True) for row in batch.collect()]
    assert len(streamed) > after_first_run
    assert change_keys(streamed) == change_keys(expected)
