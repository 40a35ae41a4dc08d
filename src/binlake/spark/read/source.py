"""The `binlog` Spark data source (PySpark Python Data Source API), batch and streaming.

    spark.read.format("binlog").option("view", "changes").load(path_or_glob_or_dir)
    spark.readStream.format("binlog").option("view", "changes").load(folder)

Strategy: the driver lists the files, numbers them (binlake.spark.read.ranges),
and cuts large ones at transaction boundaries; each partition is a picklable
`Split` that one task reads on its own into Arrow record batches
(binlake.spark.read.batches). Options are documented in docs/spark.md.

A live server: given connection options (host, port, user, password,
socket, defaults_file; server_id, heartbeat; file, the binlog a new folder
starts from, default the server's first), the streaming source follows
the server into the folder it loads, as `binlake dump -R --raw
--stop-never` would (binlake.live.backup.Copier, a thread of the query's
reader), and reads that folder as below: offsets are positions in the
copies, so a restarted query reads its micro-batch again from them.

Streaming: an offset is {"file_seq", "file", "pos"}, always a transaction
boundary: the end of the last complete transaction of the newest file, found
by the header scan; with MariaDB GTIDs also "gtid", the GTID state there
(the file's GTID list and each GTID since, carried from one offset to the
next: where a replica of the same domain would go on). A micro-batch reads from the previous offset (inclusive)
to the new one (exclusive), so a restart from a checkpointed offset neither
loses nor repeats a change. Older files are complete once a newer one exists
(the server rotates after a whole transaction) and are read to their end.
"""

from __future__ import annotations

import json
import os

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from binlake.atomic import durable_size
from binlake.read.scan import scan
from binlake.spark.read.batches import VIEWS, change_batches, event_batches, spark_ddl
from binlake.spark.read.ranges import (DEFAULT_SPLIT_BYTES, FIRST_EVENT, Split, expand_inputs,
                                  name_sequence, number_files, pack, plan_splits, split_bytes_of)

SOURCE_NAME = "binlog"


class SplitPartition(InputPartition):
    """Splits read one after the other by one task; Spark pickles it to the task."""

    def __init__(self, splits: tuple):
        super().__init__(splits)
        self.splits = splits


def _view(options) -> str:
    view = (options.get("view") or "events").lower()
    if view not in VIEWS:
        raise ValueError(f"binlog: unknown view {view!r} (events or changes)")
    return view


def _input_paths(options) -> list[str]:
    if options.get("paths"):
        return json.loads(options["paths"])
    if options.get("path"):
        return [options["path"]]
    return []


def read_partition(partition: SplitPartition, view: str, options: dict):
    batches = change_batches if view == "changes" else event_batches
    for split in partition.splits:
        yield from batches(split, options)


def _partitions(splits: list[Split], split_bytes: int) -> list[SplitPartition]:
    return [SplitPartition(group) for group in pack(splits, split_bytes)]


class BinlogDataSource(DataSource):
    """spark.read.format("binlog") and spark.readStream.format("binlog")."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return spark_ddl(VIEWS[_view(self.options)])

    def reader(self, schema) -> "BinlogBatchReader":
        return BinlogBatchReader(dict(self.options))

    def streamReader(self, schema) -> "BinlogStreamReader":
        return BinlogStreamReader(dict(self.options))


class BinlogBatchReader(DataSourceReader):
    def __init__(self, options: dict):
        self.options = options
        self.view = _view(options)

    def partitions(self) -> list[SplitPartition]:
        splits, split_bytes = plan(self.options)
        return _partitions(splits, split_bytes)

    def read(self, partition: SplitPartition):
        return read_partition(partition, self.view, self.options)


def plan(options: dict) -> tuple[list[Split], int]:
    """The splits of a batch read, and the bytes per task: `ranges` (JSON,
    from the pipeline) or the input paths; files cut at about `split_bytes`,
    into at least `min_partitions` pieces where the files allow."""
    if options.get("ranges"):
        segments = [Split(r["path"], int(r["file_seq"]), int(r.get("start") or FIRST_EVENT),
                          None if r.get("end") is None else int(r["end"]))
                    for r in json.loads(options["ranges"])]
    else:
        paths = expand_inputs(_input_paths(options))
        if not paths:
            raise ValueError("binlog: no input (load(path), a list of paths, or a directory)")
        segments = [Split(path, seq) for path, seq in number_files(paths)]
    split_bytes = int(options.get("split_bytes") or DEFAULT_SPLIT_BYTES)
    wanted = int(options.get("min_partitions") or 1)
    if wanted > 1:
        total = sum(split_bytes_of(s) for s in segments)
        split_bytes = max(1 << 16, min(split_bytes, -(-total // wanted)))
    return plan_splits(segments, split_bytes), split_bytes


# -- streaming -------------------------------------------------------------------------

NOTHING_READ = {"file_seq": -1, "file": "", "pos": 0}


class BinlogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A folder where the server (or a copy job) adds binlog files and the
    newest one grows. Files must appear whole or grow by appending. With
    connection options, the reader's own copier keeps it."""

    def __init__(self, options: dict):
        self.options = options
        self.view = _view(options)
        self._target: dict | None = None
        self._scanned: tuple | None = None  # (path, closed_end): where the last scan ended
        self._gtids: tuple = ("", 0, {})    # (path, offset, MariaDB GTID state there)
        # Started by the first offset asked for: only the query's planner
        # asks (Spark makes readers in its tasks too, to read partitions).
        self._copier = None

    def stop(self) -> None:
        if self._copier is not None:
            self._copier.close()
            self._copier = None

    def _files(self) -> list[tuple[str, int]]:
        return number_files(expand_inputs(_input_paths(self.options)), require_names=True)

    def initialOffset(self) -> dict:
        self._follow()
        return dict(NOTHING_READ)

    def _follow(self) -> None:
        """The copier of a live server the options name, started once."""
        if self._copier is None:
            self._copier = _follow_server(self.options)
        if self._copier is not None and self._copier.failure is not None:
            raise self._copier.failure  # the server cannot be followed: the query ends

    def _latest(self) -> dict:
        files = self._files()
        if not files:
            return dict(NOTHING_READ)
        path, seq = files[-1]
        # Resume the header scan where the last one found a boundary.
        resume = self._scanned[1] if self._scanned and self._scanned[0] == path else None
        # A live server's copy: only what is on disk for sure (the copier
        # fsyncs within a second), so that no checkpointed offset is past
        # bytes an OS crash can take (a closed copy is fsynced whole).
        stop = durable_size(path) if self._copier is not None else None
        result = scan(path, start=resume, stop=stop)
        if result.framing is None:  # the file has just appeared and is still empty
            return {"file_seq": seq, "file": os.path.basename(path), "pos": FIRST_EVENT}
        self._scanned = (path, result.closed_end)
        offset = {"file_seq": seq, "file": os.path.basename(path), "pos": result.closed_end}
        gtid = self._gtid_state(path, result.closed_end)
        if gtid:
            offset["gtid"] = gtid
        return offset

    def _gtid_state(self, path: str, end: int) -> str:
        """The GTID state at `end` of `path` (the offset's `gtid`: where a
        replica of the same domain would go on; MariaDB's GTID list, MySQL's
        GTID set), carried from the last offset's (a new file's GTID list or
        Previous_gtids gives it whole)."""
        from binlake.spark.read.failover import gtid_text, gtids_in
        known, at, state = self._gtids
        if known != path or at > end:
            at = FIRST_EVENT
        state, _ = gtids_in(path, end, state, at)
        self._gtids = (path, end, state)
        return gtid_text(state)

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        self._follow()
        latest = self._target if self._target is not None else self._latest()
        if start is not None and _key(latest) < _key(start):
            return start
        return latest

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()

    def partitions(self, start: dict, end: dict) -> list[SplitPartition]:
        if _key(end) <= _key(start):
            return []
        segments = []
        for path, seq in self._files():
            if seq < start["file_seq"] or seq > end["file_seq"]:
                continue
            first = start["pos"] if seq == start["file_seq"] else FIRST_EVENT
            last = end["pos"] if seq == end["file_seq"] else None
            split = Split(path, seq, max(first, FIRST_EVENT), last)
            if split_bytes_of(split) > 0:
                segments.append(split)
        split_bytes = int(self.options.get("split_bytes") or DEFAULT_SPLIT_BYTES)
        return _partitions(plan_splits(segments, split_bytes), split_bytes)

    def read(self, partition: SplitPartition):
        return read_partition(partition, self.view, self.options)

    def commit(self, end: dict) -> None:
        pass


#: The options that name a live server to follow (the rest: `_follow_server`).
SERVER_OPTIONS = ("host", "port", "user", "password", "socket", "defaults_file")


def _follow_server(options: dict):
    """The Copier keeping the loaded folder with the binlogs of the server
    the options name, or None where they name none."""
    if not any(options.get(name) for name in SERVER_OPTIONS):
        return None
    from binlake.connection.settings import ServerAddress, connect, connection_settings
    from binlake.live.backup import Copier
    from binlake.live.source import DEFAULT_SERVER_ID, LiveOptions, LiveSource
    paths = _input_paths(options)
    if len(paths) != 1:
        raise ValueError("binlog: a live server is followed into one folder: load(folder)")
    port = options.get("port")
    address = ServerAddress(host=options.get("host"), port=int(port) if port else None,
                            user=options.get("user"), password=options.get("password"),
                            socket=options.get("socket"),
                            defaults_file=options.get("defaults_file"))
    source = LiveSource(LiveOptions(
        settings=connection_settings(address), to_last_log=True, stop_never=True,
        server_id=int(options.get("server_id") or DEFAULT_SERVER_ID),
        heartbeat=float(options.get("heartbeat") or 5.0)))
    copier = Copier(source, os.path.join(paths[0], ""), name_sequence)
    try:
        start = options.get("file") or copier.first_copy()
        if start is None:  # a new folder: from the server's first binlog
            connection = connect(address, "binlog source")
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SHOW BINARY LOGS")
                    start = cursor.fetchone()[0]
            finally:
                connection.close()
        copier.start(start)
    except BaseException:
        copier.close()
        raise
    return copier


def _key(offset: dict) -> tuple:
    return (offset["file_seq"], offset["pos"])


def register(spark) -> None:
    """Make `spark.read.format("binlog")` and `readStream.format("binlog")` available."""
    spark.dataSource.register(BinlogDataSource)
