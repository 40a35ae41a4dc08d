"""A run's new rows staged, then committed to events/ and changes/ with
the manifest that names them.

Strategy: new files are written under _binlake/staging/ (in the driver,
straight to Parquet by binlake.spark.read.partitioned, or by the `binlog`
data source in a cluster's executors where the new ranges are large:
`read_in`) and fsynced (binlake.atomic.fsync_files: Spark's and the
driver's writers do not), the manifest they belong to is written next to
them, then they are moved into place, their folders fsynced, and the
manifest replaced: a power cut never leaves a manifest naming bytes the
disk does not hold. The run's undo record (binlake.spark.state.run_undo)
names the files before they move. The staged manifest and schema history,
and their installing, are binlake.spark.state.store's (`stage_state`,
`install_staged_state`); the data is this module's. A run finding a
staging manifest finishes that move first; one finding staging data
without one discards it (`recover_lake`).
"""

from __future__ import annotations

import json
import os

from binlake.atomic import fsync_files
from binlake.spark.commits.spark_way import concurrently
from binlake.spark.read.batches import VIEWS
from binlake.spark.read.partitioned import parquet_rows
from binlake.spark.read.ranges import DRIVER_READ_BYTES, READ_IN, split_bytes_of
from binlake.spark.run.session import LazySession
from binlake.spark.state.manifest import Manifest
from binlake.spark.state.run_undo import RunUndo
from binlake.spark.state.store import (STAGING, clear_folder, folder_path, has_staged_state,
                                       install_staged_state, stage_state)

CHANGE_PARTITIONS = ("database", "table", "date")
EVENT_PARTITIONS = ("date",)
VIEW_PARTITIONS = [("events", EVENT_PARTITIONS), ("changes", CHANGE_PARTITIONS)]


def stage_and_commit(spark, out: str, segments: list, options: dict, manifest: Manifest,
                     history, log, undo: RunUndo, snapshot_folder: str | None = None,
                     read_in: str = "auto", views: tuple = ("events", "changes"),
                     counted: dict | None = None, progress=None):
    """Read the segments, stage `views` (and a snapshot's rows), then commit
    them with `manifest` as their run; returns (the manifest committed,
    events, changes written). `counted` ("db.table" -> changes) is added
    each table's changes written (the follower's metrics). `progress(view,
    split, batch)` is told of each batch read in the driver (the bar of
    binlake.spark.run.pipeline)."""
    staging = clear_folder(out, STAGING, make=True)
    if snapshot_folder:
        os.replace(snapshot_folder, os.path.join(staging, "snapshot"))
    chosen = [(view, parts) for view, parts in VIEW_PARTITIONS if view in views]
    written = dict.fromkeys(("events", "changes"), 0)
    if not segments:
        pass
    elif _read_in_driver(spark, segments, read_in):
        for view, parts in chosen:
            written[view] = _write_in_driver(segments, options, staging, view, parts, log,
                                             progress)
    else:
        from binlake.spark.read.source import register
        register(spark)  # only here: registering a Python data source takes a second
        options = {"min_partitions": str(spark.sparkContext.defaultParallelism), **options}
        # Two jobs at once: each keeps the cores busy while the other waits on its tail.
        written.update(zip((view for view, _ in chosen), concurrently(
            lambda view, parts: _write_in_spark(spark, segments, options, staging, view, parts,
                                                log), chosen)))
    events, changes = written["events"], written["changes"]
    if snapshot_folder:  # its rows are changes like the others (op "r")
        changes += parquet_rows(os.path.join(staging, "snapshot"))
        _move_tree(os.path.join(staging, "snapshot"), os.path.join(staging, "changes"))
    # The change files tables/ has yet to take in, by run (binlake.spark.commits.lake).
    written = sorted(os.path.relpath(os.path.join(folder, name), os.path.join(staging, "changes"))
                     for folder, _, names in os.walk(os.path.join(staging, "changes"))
                     for name in names if name.endswith(".parquet"))
    manifest = manifest.staging(written)
    if counted is not None:
        _count_by_table(os.path.join(staging, "changes"), written, counted)
    # Not fsynced here: until the manifest naming them is installed, a kill
    # or a power cut undoes them (the run's undo record is open), and
    # _commit_staging fsyncs them, in their place, before it installs it.
    stage_state(out, manifest, history)
    _commit_staging(out, undo)
    return manifest, events, changes


def _count_by_table(changes: str, written: list, counted: dict) -> None:
    """Each table's rows in the change files `written` (paths under
    `changes`, partitioned database=/table=/date=), from their footers: one
    count for the driver's files and Spark's alike."""
    import pyarrow.parquet as pq
    from binlake.spark.read.partitioned import unescape_partition_value
    for path in written:
        parts = dict(part.split("=", 1) for part in path.split(os.sep)[:-1] if "=" in part)
        name = ".".join(unescape_partition_value(parts.get(key, "")) or ""
                        for key in ("database", "table"))
        rows = pq.ParquetFile(os.path.join(changes, path)).metadata.num_rows
        counted[name] = counted.get(name, 0) + rows


def _read_in_driver(spark, segments: list, read_in: str) -> bool:
    """Where new ranges are read: "driver", "executors", or "auto": in the
    driver when Spark runs on this machine anyway (a local master) or the
    ranges are small; a cluster's executors read large ones in parallel."""
    if read_in not in READ_IN:
        raise ValueError(f"read_in {read_in!r}: one of {', '.join(READ_IN)}")
    if read_in != "auto":
        return read_in == "driver"
    lazy = isinstance(spark, LazySession) and spark.master
    local = (spark.master if lazy else spark.sparkContext.master).startswith("local")
    return local or sum(split_bytes_of(s) for s in segments) <= DRIVER_READ_BYTES


def _write_in_driver(segments: list, options: dict, staging: str, view: str, parts: tuple,
                     log, progress=None) -> int:
    """One view of the ranges, decoded here and written as Spark's layout
    (binlake.spark.read.partitioned)."""
    from binlake.spark.read.batches import change_batches, event_batches
    from binlake.spark.read.partitioned import PartitionedParquet
    batches = change_batches if view == "changes" else event_batches
    sink = PartitionedParquet(os.path.join(staging, view), VIEWS[view], parts)
    for split in segments:
        for batch in batches(split, options):
            sink.write(batch)
            if progress is not None:
                progress(view, split, batch)
    rows = sink.close()
    log(f"{view}: {rows} rows from {len(segments)} range(s)")
    return rows


def _write_in_spark(spark, segments: list, options: dict, staging: str, view: str,
                    parts: tuple, log) -> int:
    """One view of the ranges, read by the `binlog` data source in Spark's tasks."""
    from pyspark.sql import functions as F
    ranges = json.dumps([{"path": s.path, "file_seq": s.file_seq, "start": s.start, "end": s.end}
                         for s in segments])
    # Days in UTC, whatever the session time zone.
    date = F.date_from_unix_date(F.floor(F.unix_seconds("timestamp") / 86400).cast("int"))
    # A reader of its own: DataFrameReader.option() changes the reader it is called on.
    reader = spark.read.format("binlog").options(**options, ranges=ranges, view=view)
    frame = reader.load().withColumn("date", date)
    target = os.path.join(staging, view)
    # The writer wants its partition columns sorted; commit order within them.
    frame.sortWithinPartitions(*parts, "commit_key").write.partitionBy(*parts).parquet(target)
    rows = parquet_rows(target)
    log(f"{view}: {rows} rows from {len(segments)} range(s)")
    return rows


def _data_files(root: str) -> list[str]:
    """Every data file under `root` (not _SUCCESS, nor Hadoop's .crc files)."""
    return [os.path.join(folder, name) for folder, _dirs, names in os.walk(root)
            for name in names if not name.startswith(("_", "."))]


def _move_tree(root: str, target: str) -> list[str]:
    """Every data file under `root` to the same place under `target`; their
    new paths."""
    moved = []
    for path in _data_files(root):
        moved.append(os.path.join(target, os.path.relpath(path, root)))
        os.makedirs(os.path.dirname(moved[-1]), exist_ok=True)
        os.replace(path, moved[-1])
    return moved


def _commit_staging(out: str, undo: RunUndo | None) -> None:
    """Move staged data files (fsynced when staged) into place, make their
    new names durable, then install their manifest; the run's `undo`
    record names the files first."""
    staging = folder_path(out, STAGING)
    if undo is not None:
        undo.adding([os.path.join(out, view, os.path.relpath(path, os.path.join(staging, view)))
                     for view in ("events", "changes")
                     for path in _data_files(os.path.join(staging, view))])
    moved = [path for view in ("events", "changes")
             for path in _move_tree(os.path.join(staging, view), os.path.join(out, view))]
    fsync_files(moved, out)  # bytes and new names, before the manifest names them
    install_staged_state(out)
    clear_folder(out, STAGING)


def recover_lake(out: str, log) -> None:
    """What a killed run left: undone where its record is open, else (a
    run of an earlier version) its staged commit completed or discarded.
    Called under the lake's lock before anything reads the manifest: a
    follower's own writes to it (requests taken) must not be undone by it."""
    if RunUndo.recover(out, log):
        return
    if not os.path.isdir(folder_path(out, STAGING)):
        return
    if has_staged_state(out):
        log("completing the commit of an interrupted run")
        _commit_staging(out, None)
    else:
        log("discarding the staged output of an interrupted run")
        clear_folder(out, STAGING, strict=True)


__all__ = ["stage_and_commit", "recover_lake", "VIEW_PARTITIONS"]
