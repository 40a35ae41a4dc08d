"""A run's tables staged, then committed: the one writer of the lake's
Delta tables (tables/ and history/).

Strategy: the ways a table's next version is computed (binlake.spark.
commits.spark_way, .driver_way) write its files under the run's staging
folder and queue its commit here (`stage_*`); nothing is committed until
every table is staged, so a change refused on the way leaves every table
as it was (`commit` then runs the queue: each commit atomic, a table at a
time, a rerun completing the ones a kill left). Each commit records the
run whose changes it holds (binlake.spark.commits.delta's application
transaction). Data files are fsynced before a log entry names them
(binlake.spark.commits.delta_sync). `maintain` compacts and lite-vacuums
what the run committed to (binlake.spark.commits.delta_upkeep).
"""

from __future__ import annotations

import functools
import os
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from binlake.spark.commits.change_files import parquet_names
from binlake.spark.commits.delta import (commit_table, footer, merge_copies, merge_history,
                                         merge_net_changes, partition_folder, key_bounds,
                                         table_properties)
from binlake.spark.commits.delta_upkeep import VACUUM_EVERY_SECONDS, after_run
from binlake.spark.plans.typed import arrow_type
from binlake.spark.rules.columns import VALID_FROM, VALID_TO

#: Rows in a table's file at most. A whole table's files are in key order,
#: so a MERGE reads only the files whose key statistics its keys fall in,
#: and rewrites each of those whole (delta-rs writes no deletion vectors):
#: a file's rows bound what changing one row costs (a 10-row UPDATE of a
#: 2.5 M-row table: 0.31 s in files of 833,000 rows, bench_lake_state.py),
#: while files stay large enough for a scan (some 3,800 per billion rows).
ROWS_PER_FILE = 262_144
#: Tables committed (and the driver's jobs run) side by side.
COMMIT_THREADS = 4
#: The folders of the lake's tables and of their histories (`--history`).
TABLES, HISTORY = "tables", "history"
#: How a table's next version came to be, as a run reports it.
WAYS = ("appended", "merged", "rewritten", "carried", "rebuilt", "history")


class TableCommits:
    """One run's staged tables and their queued commits."""

    def __init__(self, tables_dir: str, staged: str, history_dir: str, run: int,
                 through: dict, log, keep_versions: float | None = None):
        self.tables_dir, self.staged, self.history_dir = tables_dir, staged, history_dir
        self.run, self.through, self.log = run, through, log
        #: every table's (--keep-versions: binlake.spark.commits.delta.table_properties)
        self.properties = table_properties(keep_versions)
        self.keep_versions = keep_versions
        #: how often a table is vacuumed: at least twice in the time it keeps versions
        self.vacuum_every = VACUUM_EVERY_SECONDS if keep_versions is None else min(
            VACUUM_EVERY_SECONDS, keep_versions / 2)
        self.work: dict[str, list[str]] = {way: [] for way in WAYS}
        self.pending: list = []  #: the commits `commit` makes, in order

    def folder(self, key: str) -> str:
        """Where a table's next files are staged."""
        return os.path.join(self.staged, key)

    # -- what a run stages ------------------------------------------------------------
    def stage_whole(self, key: str, plan: dict, how: str) -> None:
        """The table's staged files become its rows: "appended" to them, or
        its next version whole ("rebuilt", "carried")."""
        self.work[how].append(key)
        appended = how == "appended"
        self.pending.append(functools.partial(
            self._commit, key, plan, "append" if appended else "overwrite",
            None if appended else how))

    def stage_net(self, key: str, layout: dict) -> None:
        """A keyed table's staged net changes MERGEd."""
        self.work["merged"].append(key)
        self.pending.append(functools.partial(self._merge, key, layout))

    def stage_copies(self, key: str) -> None:
        """A keyless table's staged copies removed and added MERGEd."""
        self.work["rewritten"].append(key)
        self.pending.append(functools.partial(self._merge_copies, key))

    def stage_history(self, key: str, plan: dict, folder: str, signature: str,
                      whole: bool) -> None:
        """A history table's staged versions: its next version `whole`, or merged."""
        self.work["history"].append(key)
        self.pending.append(functools.partial(self._commit_history, key, plan, folder,
                                              signature, whole))

    def write_rows(self, key: str, rows, plan: dict) -> None:
        """Rows the driver computed staged as Spark would write them."""
        write_table_rows(self.folder(key), rows, partition_by(plan))

    # -- committing -------------------------------------------------------------------
    def commit(self) -> None:
        """Each staged table's next version committed: each commit is atomic
        and of a table of its own, so they go side by side (COMMIT_THREADS:
        most of a commit is delta-rs's and fsync's, which let go of the
        GIL), and a rerun completes the ones a kill or an error left."""
        side_by_side(self.pending)
        self.pending = []

    def maintain(self) -> None:
        """The tables this run committed to, compacted when their files are
        many, and lite-vacuumed (binlake.spark.commits.delta_upkeep.after_run: the
        full vacuum is `binlake maintain`'s)."""
        touched = [os.path.join(self.history_dir if how == "history" else self.tables_dir, key)
                   for how, keys in self.work.items() for key in keys]
        done = side_by_side([functools.partial(after_run, uri, self.vacuum_every,
                                               self.keep_versions) for uri in touched])
        compacted = sum(d["compacted"] for d in done)
        if compacted:
            self.log(f"tables: {compacted} small files compacted")

    def drop_all_but(self, keep, folder: str | None = None) -> None:
        """Tables dropped, or no longer selected, leave the lake (or the
        history, `folder`) whole."""
        folder = folder or self.tables_dir
        if not os.path.isdir(folder):
            return
        for name in os.listdir(folder):
            if name not in keep:
                gone = os.path.join(os.path.dirname(self.staged), f"dropped-{uuid.uuid4().hex}")
                os.replace(os.path.join(folder, name), gone)
                shutil.rmtree(gone)

    def _commit_history(self, key: str, plan: dict, folder: str, signature: str,
                        whole: bool) -> None:
        import pyarrow.dataset as ds
        uri = os.path.join(self.history_dir, key)
        names = parquet_names(folder)
        if not whole:
            if names:
                rows = ds.dataset([os.path.join(folder, n) for n in names], format="parquet")
                merge_history(uri, history_name(key), rows.scanner().to_reader(),
                              plan["layout"]["primary_key"], run=self.run,
                              through=self.through, plan=signature)
            return
        os.makedirs(uri, exist_ok=True)
        for name in names:
            os.replace(os.path.join(folder, name), os.path.join(uri, name))
        schema = _parquet_schema(uri, names) or _history_schema(plan["layout"])
        commit_table(uri, history_name(key), names, schema, run=self.run,
                     through=self.through, mode="overwrite", plan=signature,
                     properties=self.properties)

    def _staged_files(self, key: str, target: str) -> list[str]:
        """Move what Spark wrote for `key` into the table's folder (Spark's
        names are unique: a UUID each); the names, relative to it."""
        folder = self.folder(key)
        names = parquet_names(folder)
        for name in names:
            os.makedirs(os.path.dirname(os.path.join(target, name)), exist_ok=True)
            os.replace(os.path.join(folder, name), os.path.join(target, name))
        return names

    def _commit(self, key: str, plan: dict, mode: str, rewritten: str | None = None) -> None:
        target = os.path.join(self.tables_dir, key)
        names = self._staged_files(key, target)
        layout, partitions = plan["layout"], partition_by(plan)
        written = _parquet_schema(target, names)
        schema = _arrow_schema(layout) if written is None else pa.schema(
            [written.field(f.name) if f.name in written.names else f
             for f in _arrow_schema(layout)])  # a partition column is in no file
        commit_table(target, key, names, schema, run=self.run, through=self.through, mode=mode,
                     partition_by=partitions, rewritten=rewritten, properties=self.properties)

    def _staged(self, key: str) -> pa.Table:
        """The rows staged for `key` (a MERGE's source: one job's file), as a
        Table (pyarrow.dataset would import pandas: 0.27 s of a small run)."""
        folder = self.folder(key)
        return pa.concat_tables([pq.ParquetFile(os.path.join(folder, name)).read()
                                 for name in parquet_names(folder)])

    def _merge_copies(self, key: str) -> None:
        """MERGE a keyless table's copies removed and added."""
        merge_copies(os.path.join(self.tables_dir, key), key, self._staged(key).to_reader(),
                     run=self.run, through=self.through, properties=self.properties)

    def _merge(self, key: str, layout: dict) -> None:
        """MERGE the table's net changes into it."""
        keys, net = layout["primary_key"], self._staged(key)
        merge_net_changes(os.path.join(self.tables_dir, key), key, net.to_reader(), keys,
                          run=self.run, through=self.through, bounds=key_bounds(net.select(keys)),
                          properties=self.properties)


def side_by_side(calls: list) -> list:
    """The results of `calls` (each of a table of its own), made by
    COMMIT_THREADS threads; the first error raised once all have ended."""
    if len(calls) <= 1:
        return [call() for call in calls]
    with ThreadPoolExecutor(COMMIT_THREADS, thread_name_prefix="table commit") as pool:
        futures = [pool.submit(call) for call in calls]
    errors = [future.exception() for future in futures if future.exception() is not None]
    if errors:
        raise errors[0]
    return [future.result() for future in futures]


class RowFiles:
    """Rows the driver computed for a table, written as Spark would: row
    groups in files of about ROWS_PER_FILE rows each (so that the table
    needs no compaction after), one file set per partition value."""

    def __init__(self, folder: str, partition_by: tuple):
        self.folder, self.partition_by = folder, partition_by
        self._writer, self._rows = None, 0

    def __enter__(self) -> "RowFiles":
        return self

    def write(self, rows) -> None:
        if self.partition_by:  # (rare: a file per partition value and write)
            write_table_rows(self.folder, rows, self.partition_by)
            return
        if self._writer is not None and self._writer.schema != rows.schema:
            self.close()
        start = 0
        while True:  # (rows of no rows: a file all the same, the table's schema)
            if self._writer is None:
                os.makedirs(self.folder, exist_ok=True)
                self._writer = pq.ParquetWriter(
                    os.path.join(self.folder, f"part-{uuid.uuid4().hex}.parquet"), rows.schema)
            part = rows.slice(start, ROWS_PER_FILE - self._rows)
            self._writer.write_table(part)
            self._rows += part.num_rows
            start += part.num_rows
            if self._rows >= ROWS_PER_FILE:
                self.close()
            if start >= rows.num_rows:
                break

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._writer, self._rows = None, 0

    def __exit__(self, *exc_info) -> None:
        self.close()


def write_table_rows(folder: str, rows, partition_by: tuple) -> None:
    """Rows the driver computed written to `folder` as Spark would: a file
    per partition value, in its folder, without the column."""
    if not partition_by:
        os.makedirs(folder, exist_ok=True)
        pq.write_table(rows, os.path.join(folder, f"part-{uuid.uuid4().hex}.parquet"))
        return
    column, = partition_by
    values = rows.column(column)
    for value in pc.unique(values).to_pylist():
        mine = pc.is_null(values) if value is None else pc.equal(values, value)
        write_table_rows(os.path.join(folder, partition_folder(column, value)),
                    rows.filter(mine).drop_columns([column]), ())


def history_name(key: str) -> str:
    """A history table's name in its commits' application transaction."""
    return f"history:{key}"


def partition_by(plan: dict) -> tuple:
    """The columns the table is partitioned by (--partition-by)."""
    return tuple(plan.get("partition_by") or ())


def sorted_by(rows, key: list[str]):
    """`rows` in key order, as a large table's files are (a key Arrow
    cannot sort, such as a SET's list, leaves them as they came)."""
    try:
        return rows.sort_by([(name, "ascending") for name in key])
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return rows


def _parquet_schema(folder: str, names: list[str]):
    """The Arrow schema of the files Spark wrote (their exact types), if any."""
    if not names:
        return None
    return footer(os.path.join(folder, names[0])).schema.to_arrow_schema().remove_metadata()


def _history_schema(layout: dict):
    """A history table's Arrow schema: the table's columns, then where and
    when each version started and ended."""
    stamps = [pa.string(), pa.int64(), pa.timestamp("us", tz="UTC")]
    return pa.schema(list(_arrow_schema(layout)) + [
        pa.field(name, kind) for names in (VALID_FROM, VALID_TO)
        for name, kind in zip(names, stamps)])


def _arrow_schema(layout: dict):
    return pa.schema([pa.field(c["key"], arrow_type(c)) for c in layout["columns"]])
