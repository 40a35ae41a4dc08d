"""binlake.spark.read.partitioned: the driver writes Spark's partitioned layout.

Spark's own writer names the folders the escape function is checked
against, and Spark reads back what the driver wrote, rows in commit order
per folder however often the bounded buffers spill.
"""
from __future__ import annotations

import os

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyspark")
from binlake.spark.read.partitioned import (  # noqa: E402
    DEFAULT_PARTITION_NAME, PartitionedParquet, escape_partition_value, unescape_partition_value)

ODD_NAMES = [chr(c) for c in range(1, 128)] + ["é", "a b", "日本", "x=1/y", "50%"]


def test_folder_names_are_the_ones_spark_writes(spark, tmp_path):
    frame = spark.createDataFrame([(i, v) for i, v in enumerate(ODD_NAMES + [""])],
                                  "i int, t string")
    frame.write.partitionBy("t").parquet(str(tmp_path / "spark"))
    by_spark = {n for n in os.listdir(tmp_path / "spark") if n.startswith("t=")}
    ours = {f"t={escape_partition_value(v)}" for v in ODD_NAMES + [""]}
    assert ours == by_spark
    assert escape_partition_value(None) == escape_partition_value("") == DEFAULT_PARTITION_NAME


def test_unescape_inverts_escape():
    for name in ODD_NAMES:
        assert unescape_partition_value(escape_partition_value(name)) == name
    assert unescape_partition_value(DEFAULT_PARTITION_NAME) is None


SCHEMA = pa.schema([("seq", pa.int64()), ("database", pa.string()), ("table", pa.string()),
                    ("timestamp", pa.timestamp("us", tz="UTC")), ("payload", pa.string())])


def _batches(rows: int, per_batch: int):
    day = 86_400_000_000
    for start in range(0, rows, per_batch):
        seq = list(range(start, min(rows, start + per_batch)))
        yield pa.record_batch([
            pa.array(seq, pa.int64()),
            pa.array([ODD_NAMES[i % 3 + 30] for i in seq]),
            pa.array([ODD_NAMES[(i // 7) % len(ODD_NAMES)] for i in seq]),
            pa.array([(i % 4) * day + i for i in seq], pa.timestamp("us", tz="UTC")),
            pa.array(["x" * (i % 50) for i in seq]),
        ], schema=SCHEMA)


def test_spark_reads_back_every_row_in_order_when_buffers_spill(spark, tmp_path):
    root = str(tmp_path / "out")
    sink = PartitionedParquet(root, SCHEMA, ("database", "table", "date"), buffer_bytes=64 << 10)
    for batch in _batches(20_000, 1000):
        sink.write(batch)
    assert sink.close() == 20_000
    files = [os.path.join(d, n) for d, _, names in os.walk(root) for n in names]
    assert len(files) > len({os.path.dirname(f) for f in files})  # spilled: several per folder
    for path in files:  # partition columns live in the folder names only
        assert pq.ParquetFile(path).schema_arrow.names == ["seq", "timestamp", "payload"]
    got = spark.read.schema("seq long, timestamp timestamp, payload string, database string, "
                            "`table` string, date date").parquet(root)
    rows = sorted(got.collect(), key=lambda r: r.seq)
    expected = [r for b in _batches(20_000, 1000) for r in b.to_pylist()]
    assert [(r.seq, r.database, r.table, r.payload, r.date) for r in rows] == [
        (e["seq"], e["database"] or None, e["table"] or None, e["payload"],
         e["timestamp"].date()) for e in expected]
    # Within a folder, files and rows follow the input's order.
    for folder in {os.path.dirname(f) for f in files}:
        names = sorted(n for n in os.listdir(folder))
        seqs = [s for n in names for s in pq.read_table(os.path.join(folder, n))["seq"].to_pylist()]
        assert seqs == sorted(seqs)


def test_interleaved_folders_are_one_file_each_within_the_budget(tmp_path):
    # Every batch touches every folder: held rows must count their own bytes
    # only (not the batch they came from), or the buffers would spill early.
    root = str(tmp_path / "out")
    sink = PartitionedParquet(root, SCHEMA, ("database", "table", "date"), buffer_bytes=32 << 20)
    for batch in _batches(50_000, 2000):
        sink.write(batch)
    assert sink.close() == 50_000
    folders = {d: names for d, _, names in os.walk(root) if names}
    assert len(folders) > 100
    assert all(len(names) == 1 for names in folders.values())
