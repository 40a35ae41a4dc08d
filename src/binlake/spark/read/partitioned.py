"""The events and changes views of new binlog ranges, read in the driver and
written as Spark's partitioned Parquet layout.

Strategy: the pipeline's new ranges are decoded by the same batch readers
the `binlog` data source runs in Spark's tasks (binlake.spark.read.batches; the
native loop decodes on threads of its own), and their Arrow batches are
written straight to Parquet: no Python worker process to start, no Spark
job to schedule, no row crossing from Python to the JVM and back. Spark's
executors read instead where that pays (binlake.spark.run.pipeline decides).

The files are laid out as Spark's `partitionBy` writes them, so that Spark,
and any Hive-style reader, finds the same dataset whoever wrote it:
`col=value` folders, values escaped as Spark escapes them (its own test
pins that: tests/spark/test_partitioned.py), an empty or missing value as
`__HIVE_DEFAULT_PARTITION__`, the partition columns left out of the files,
and rows in commit order within each folder. Dates are UTC days of the
event's timestamp.

Rule: memory stays bounded whatever the mix of tables: rows are buffered
per folder, and when the buffers together pass `buffer_bytes` the largest
is written out as a file of its own (a folder may so get several files),
so no file stays open between writes.
"""

from __future__ import annotations

import os
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from binlake.spark.read.batches import parquet_options

#: Spark's folder name for a partition value that is NULL or empty.
DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"
#: How the names of a chunk's files in changes/ begin (the lock-free
#: snapshot writes them, the lake builds a table from them).
SNAPSHOT_FILES = "part-snapshot-chunk-"
#: Characters Spark writes as %XX in a partition folder name (ExternalCatalogUtils).
_ESCAPED = frozenset(chr(c) for c in range(0x20)) | frozenset('"#%\'*/:=?[\\]^{\x7f')
#: What the buffers of one writer may hold before the largest is written out.
BUFFER_BYTES = 128 << 20
#: Rows per Parquet row group (Spark's readers split files by row group).
ROW_GROUP_ROWS = 128 * 1024
#: Folders whose files `PartitionedParquet.close` writes side by side.
FLUSH_THREADS = 4


def escape_partition_value(value: str | None) -> str:
    """A partition value as Spark names its folder."""
    if value is None or value == "":
        return DEFAULT_PARTITION_NAME
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def unescape_partition_value(name: str) -> str | None:
    """A partition folder's value as Spark reads it back."""
    if name == DEFAULT_PARTITION_NAME:
        return None
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m[1], 16)), name)


def parquet_rows(folder: str) -> int:
    """The rows of the Parquet files under `folder`, or of the file `folder`
    names (from their footers: no data read); none when it does not exist."""
    if os.path.isfile(folder):
        return pq.ParquetFile(folder).metadata.num_rows
    return sum(pq.ParquetFile(os.path.join(root, name)).metadata.num_rows
               for root, _, names in os.walk(folder) for name in names
               if name.endswith(".parquet"))


def utc_dates(timestamps: pa.Array) -> pa.Array:
    """The UTC day of each timestamp (as Spark's `date` partition column)."""
    return pc.cast(pc.cast(timestamps, pa.timestamp("us", tz="UTC")), pa.date32())


class PartitionedParquet:
    """Batches of one schema into `root`/col=value/.../part-*.parquet, the
    `partitions` columns (`date`: computed from `timestamp`) naming the folders."""

    def __init__(self, root: str, schema: pa.Schema, partitions: tuple[str, ...], *,
                 buffer_bytes: int = BUFFER_BYTES):
        self.root, self.partitions, self.buffer_bytes = root, partitions, buffer_bytes
        self.data_columns = [name for name in schema.names if name not in partitions]
        self.file_schema = pa.schema([schema.field(name) for name in self.data_columns])
        self.prefix = f"part-{uuid.uuid4().hex}"
        self.rows = 0
        self._buffers: dict[tuple, list[pa.RecordBatch]] = {}
        self._sizes: dict[tuple, int] = {}
        self._held = 0
        self._files = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        self.rows += batch.num_rows
        keys = [utc_dates(batch.column("timestamp")) if name == "date" else batch.column(name)
                for name in self.partitions]
        # A stable sort by folder keeps commit order within each folder.
        order = pc.sort_indices(pa.table(keys, names=[str(i) for i in range(len(keys))]),
                                [(str(i), "ascending") for i in range(len(keys))],
                                )
        data = batch.select(self.data_columns)
        keys = [key.take(order) for key in keys]
        for start, end in _runs(keys):
            folder = tuple(key[start].as_py() for key in keys)
            # Taken, not sliced: a slice would keep the whole batch alive for
            # as long as its folder is held.
            self._hold(folder, data.take(order.slice(start, end - start)))
        while self._held > self.buffer_bytes:
            self._flush(max(self._sizes, key=self._sizes.__getitem__))

    def close(self) -> int:
        """Write what is held; returns the rows written. The folders' files
        are written side by side (FLUSH_THREADS: Arrow encodes and writes
        without the GIL, and a follower's micro-batch holds a file or two
        for each table it changed: a hundred, spread over a thousand tables)."""
        folders = list(self._buffers)
        if len(folders) <= 1:
            for folder in folders:
                self._flush(folder)
            return self.rows
        numbers = range(self._files + 1, self._files + 1 + len(folders))
        self._files += len(folders)
        with ThreadPoolExecutor(FLUSH_THREADS, thread_name_prefix="view files") as pool:
            for _ in pool.map(self._write, [(folder, self._taken(folder)) for folder in folders],
                              numbers):
                pass
        return self.rows

    def _hold(self, folder: tuple, rows: pa.RecordBatch) -> None:
        size = rows.get_total_buffer_size()
        self._buffers.setdefault(folder, []).append(rows)
        self._sizes[folder] = self._sizes.get(folder, 0) + size
        self._held += size

    def _flush(self, folder: tuple) -> None:
        self._files += 1
        self._write((folder, self._taken(folder)), self._files)

    def _taken(self, folder: tuple) -> list:
        """The batches held for `folder`, no longer held."""
        self._held -= self._sizes.pop(folder)
        return self._buffers.pop(folder)

    def _write(self, held: tuple, number: int) -> None:
        """A folder's batches (`held`: (folder, batches)) as its file `number`."""
        folder, batches = held
        table = pa.Table.from_batches(batches, self.file_schema)
        names = [f"{name}={escape_partition_value(_text(value))}"
                 for name, value in zip(self.partitions, folder)]
        target = os.path.join(self.root, *names)
        os.makedirs(target, exist_ok=True)
        path = os.path.join(target, f"{self.prefix}-{number:05d}.snappy.parquet")
        pq.write_table(table, path, row_group_size=ROW_GROUP_ROWS,
                       **parquet_options(self.file_schema))


def _text(value) -> str | None:
    return None if value is None else str(value)


def _runs(keys: Iterable[pa.Array]) -> list[tuple[int, int]]:
    """[start, end) of the runs of equal key tuples in sorted key columns."""
    ends = set()
    length = 0
    for key in keys:
        length = len(key)
        ends.update(pc.run_end_encode(key).run_ends.to_pylist())
    bounds = [0, *sorted(ends)] if length else [0]
    return list(zip(bounds, bounds[1:]))
