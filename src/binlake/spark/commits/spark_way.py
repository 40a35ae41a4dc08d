"""A run's tables computed by Spark's tasks: the way of the tables whose
changes are many (the driver's, binlake.spark.commits.driver_way, takes
the small ones).

Strategy: each large table gets a job of its own, which reads its
partitions of changes/ only and hands them to one Spark task as Arrow
(`applyInArrow`), where the table rules run: binlake.spark.rules.
table_rows, the very functions the driver runs in-process, so that no rule
exists twice. The task's typed rows go back to Spark, which sorts them by
key into files of about ROWS_PER_FILE rows and writes them where binlake.
spark.commits.table_commits commits them from. A task that needs the rows
a table holds (a MERGE completing partial images, a keyless table's
copies, rows carried through DDL) reads them from its Delta table itself.
Tables' jobs run side by side; nothing is cached. Jobs of a step over few
rows run interpreted (INTERPRETED_ROWS).
"""

from __future__ import annotations

import functools
import os
import re
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from pyspark.sql import functions as F, types as S

from binlake.spark.commits.change_files import CarriedFrom, ChangeFiles, by_table, sources_of
from binlake.spark.commits.delta import read_table, row_count, rows_under_keys
from binlake.spark.commits.table_commits import HISTORY, TABLES, TableCommits, partition_by
from binlake.spark.plans.layouts import qualified
from binlake.spark.plans.typed import table_struct
from binlake.spark.read.partitioned import parquet_rows
from binlake.spark.rules import table_rows
from binlake.spark.rules.columns import AT, CLOSES, COPY_OP, DELETED, PRESENT, VALID_FROM, VALID_TO
from binlake.spark.rules.engine import CHANGE_COLUMNS
from binlake.spark.rules.history_rows import history_versions
from binlake.spark.rules.tables import ROWS_PER_FILE, one_of
from binlake.spark.state.starts import AsOf

#: Spark jobs of a step over at most this many rows run interpreted: a
#: fresh JVM compiling their generated code (Janino, whole-stage and per
#: expression) takes seconds, far more than running a few rows through
#: Catalyst's interpreted expressions (bench/README.md, issue 29).
INTERPRETED_ROWS = 50_000
#: The session settings that make a job interpreted, and their values then.
INTERPRETED = {"spark.sql.codegen.wholeStage": "false",
               "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


class SparkTables:
    """The Spark way of one run's tables."""

    def __init__(self, spark, commits: TableCommits, changes: ChangeFiles):
        self.spark = spark  # a LazySession in a run: started where first used
        self.commits, self.changes = commits, changes

    def rebuild(self, read_changes, plans: list, as_of: AsOf | None) -> None:
        """Each table's state as of the end (or `as_of`), computed from its
        partitions of changes/ (binlake.spark.rules.table_rows.state) and
        committed whole as the table's next version. Files written but never
        committed are in no version."""
        if not plans:
            return
        by_key = by_table(plans)
        sizes = {key: self.changes.rows(sources_of(plan)) for key, plan in by_key.items()}

        def job(key: str) -> None:
            plan = by_key[key]
            changes = read_changes(only=sources_of(plan))
            if changes is None:
                return
            if as_of is not None:
                changes = changes.where(as_of.condition())
            rows = rows_in_task(changes, functools.partial(table_rows.state, plan=plan, table=key),
                                table_struct(plan["layout"]))
            self._write_whole(rows, plan, sizes[key])
        self._each(job, list(by_key), sum(sizes.values()))
        for key, plan in by_key.items():
            self.commits.stage_whole(key, plan, "rebuilt")
        self.commits.log(f"tables: {len(by_key)} rebuilt"
                         + (f" as of {as_of.describe()}" if as_of else ""))

    def apply(self, changes, files: list, plans: list) -> None:
        """Add new changes (`changes`, read from `files`) to tables whose
        definition did not change: inserts appended, a keyed table's net
        changes merged, a keyless table's copies merged."""
        found = self.changes.stats(files)
        ways = {}
        for plan in plans:
            sources = sources_of(plan)
            if not any(source in found for source in sources):
                continue  # nothing new
            key = qualified(plan["database"], plan["table"])
            if all(found[source].inserts_only for source in sources if source in found):
                ways[key] = "appended"
            else:
                ways[key] = "merged" if plan["primary_key"] else "rewritten"
        if ways:
            self.commits.log(f"tables: appending to {list(ways.values()).count('appended')}, "
                             f"merging into {list(ways.values()).count('merged')}, "
                             f"rewriting {list(ways.values()).count('rewritten')}")
        by_key = by_table(plans)
        sizes = {key: sum(found[s].rows for s in sources_of(by_key[key]) if s in found)
                 for key in ways}

        def job(key: str) -> None:
            plan, uri = by_key[key], os.path.join(self.commits.tables_dir, key)
            mine = changes.where(one_of(sources_of(plan)))
            layout = plan["layout"]
            if ways[key] == "appended":
                rows = rows_in_task(mine, functools.partial(table_rows.appended, plan=plan,
                                                            table=key), table_struct(layout))
                self._write_whole(rows, plan, sizes[key])
            elif ways[key] == "merged":
                rule = functools.partial(_net_changes, plan=plan, table=key, uri=uri)
                rows_in_task(mine, rule, _with(layout, NET_FIELDS)).write.parquet(
                    self.commits.folder(key))
            else:
                rule = functools.partial(_copies, plan=plan, table=key, uri=uri)
                rows_in_task(mine, rule, _with(layout, COPY_FIELDS)).write.parquet(
                    self.commits.folder(key))
        self._each(job, list(ways), sum(sizes.values()))
        for key, way in ways.items():
            if way == "appended":
                self.commits.stage_whole(key, by_key[key], "appended")
            elif way == "merged":
                self.commits.stage_net(key, by_key[key]["layout"])
            else:
                self.commits.stage_copies(key)

    def carry(self, read_changes, carried: dict) -> list:
        """Tables whose definition changed (ADD/DROP/RENAME COLUMN, MODIFY, a
        new key, RENAME TABLE, TRUNCATE, a new CREATE), {key: (plan,
        CarriedFrom, new change files)}: the rows they hold carried into the
        new columns, the new changes applied on top (binlake.spark.rules.
        table_rows.carried, rewritten), staged whole for one overwrite. The
        cost follows the table's size and its new changes, never its
        history. Returns the plans that need a rebuild instead (a type
        change binlake does not convert, a column whose fractional digits
        changed)."""
        rebuild, jobs = [], []
        for key, (plan, source, files) in carried.items():
            if not carries(plan, source, key):
                rebuild.append(plan)
                continue
            held = row_count(source.uri) if source.uri else 0
            jobs.append((key, plan, source, files, held + sum(map(parquet_rows, files))))
        if jobs:
            self.commits.log(f"tables: carrying {len(jobs)} into their new definitions")

        def job(key, plan, source, files, size) -> None:
            rule = functools.partial(_carried, plan=plan, table=key, source=source)
            changes = read_changes(files) if files else None
            self._write_whole(rows_in_task(changes, rule, table_struct(plan["layout"]),
                                           spark=self.spark), plan, size)
        self._each(lambda one: job(*one), jobs, sum(size for *_, size in jobs))
        for key, plan, *_ in jobs:
            self.commits.stage_whole(key, plan, "carried")
        return rebuild

    def history(self, key: str, plan: dict, changes, signature: str, whole: bool) -> None:
        """A keyed table's history rows from `changes` (binlake.spark.rules.tables.
        history_versions) staged: `whole`, every version, for one overwrite;
        else the new versions and the versions they end, for one MERGE."""
        rule = functools.partial(history_versions, plan=plan, table=key)
        rows = rows_in_task(changes.where(one_of(sources_of(plan))), rule,
                            _with(plan["layout"], HISTORY_FIELDS))
        if whole:
            rows = rows.where(~F.col(CLOSES)).drop(CLOSES)
        folder = self.commits.folder(os.path.join(HISTORY, key))
        files = max(1, -(-self.changes.rows(sources_of(plan)) // ROWS_PER_FILE)) if whole else 1
        rows.repartition(files).write.parquet(folder)
        self.commits.stage_history(key, plan, folder, signature, whole)

    # -- steps ------------------------------------------------------------------------
    def _each(self, function, jobs: list, rows: int) -> None:
        """`function(job)` for each of `jobs`, side by side; interpreted
        where the step's jobs are over `rows` <= INTERPRETED_ROWS."""
        if not jobs:
            return
        with _interpreted(self.spark, rows <= INTERPRETED_ROWS):
            concurrently(function, [(job,) for job in jobs])

    def _write_whole(self, rows, plan: dict, size: int) -> None:
        """A table's typed rows staged whole: in key order (every column's,
        keyless), in files of about ROWS_PER_FILE rows (`size`: at most the
        rows), in its partition folders."""
        layout = plan["layout"]
        order = [_column(k) for k in layout["primary_key"] or
                 [c["key"] for c in layout["columns"]]]
        files = max(1, -(-size // ROWS_PER_FILE))
        # One file: repartition(1), not coalesce(1), which would pull the
        # task that computes the rows into the one that writes the file.
        spread = rows.repartition(1) if files == 1 else rows.repartitionByRange(files, *order)
        _partitioned_writer(spread.sortWithinPartitions(*order), plan).parquet(
            self.commits.folder(qualified(plan["database"], plan["table"])))


#: The columns of a net change's row and of a keyless table's copy that are not the table's.
NET_FIELDS = [S.StructField(DELETED, S.BooleanType()), S.StructField(PRESENT, S.StringType()),
              S.StructField(AT, S.StringType())]
COPY_FIELDS = [S.StructField(COPY_OP, S.StringType())]
#: ... and of a history table's rows (binlake.spark.rules.history_rows).
HISTORY_FIELDS = [S.StructField(name, kind) for names in (VALID_FROM, VALID_TO)
                  for name, kind in zip(names, (S.StringType(), S.LongType(), S.TimestampType()))
                  ] + [S.StructField(CLOSES, S.BooleanType())]
_CHANGES = ("database string, `table` string, commit_key struct<file_seq: bigint, pos: bigint, "
            "sub: int, row: int>, file string, pos bigint, commit_pos bigint, "
            "commit_timestamp timestamp, op string, "
            "before map<string, string>, after map<string, string>")


def rows_in_task(changes, rule, schema: S.StructType, spark=None):
    """`rule(table)` (a pyarrow Table of the changes: CHANGE_COLUMNS,
    `database`, `table`, in no order) run in one Spark task on all of
    `changes` (a DataFrame of changes/), its rows as a DataFrame of
    `schema`. With `spark`, the task runs where there is no change too
    (`changes` None: a table's rows carried as they are)."""
    columns = ["database", "table", *CHANGE_COLUMNS]
    always = spark is not None

    def task(table):
        import pyarrow.compute as pc
        table = table.select(columns)
        if always:  # without the row that is no change
            table = table.filter(pc.is_valid(table.column("op")))
        return rule(table)
    if changes is not None:
        changes = changes.select(*[_column(c) for c in columns])
    if spark is not None:  # one row that is no change, so that the task runs
        none = spark.createDataFrame([(None,) * len(columns)], _CHANGES)
        changes = none if changes is None else changes.unionByName(none)
    return changes.groupBy(F.lit(0).alias("_task")).applyInArrow(task, schema)


def carries(plan: dict, source: CarriedFrom, key: str) -> bool:
    """The rows a table holds are carried into its new definition
    (binlake.spark.rules.table_rows.carried takes its columns' types as the
    Delta table has them), not rebuilt from its changes."""
    if source.uri is None:
        return True
    from deltalake import DeltaTable
    import pyarrow as pa
    held = pa.schema(DeltaTable(source.uri).schema().to_arrow()).empty_table()
    return table_rows.carried(held, plan, source.stretch, key) is not None


def _net_changes(changes, plan: dict, table: str, uri: str):
    """A task's MERGE source: the table's net changes, partial images
    completed from the rows the Delta table at `uri` holds."""
    return table_rows.net_changes(changes, plan, table, functools.partial(rows_under_keys, uri))


def _copies(changes, plan: dict, table: str, uri: str):
    """A task's MERGE source of a keyless table: its copies removed and added."""
    names = [c["key"] for c in plan["layout"]["columns"]]
    return table_rows.copies(read_table(uri).select(names), changes, plan, table)


def _carried(changes, plan: dict, table: str, source: CarriedFrom):
    """A task's rows of a table carried through DDL, its new changes applied."""
    held = read_table(source.uri) if source.uri and row_count(source.uri) else None
    current = table_rows.carried(held, plan, source.stretch, table)
    return table_rows.rewritten(current, changes, plan, table) if changes.num_rows else current


def _with(layout: dict, fields: list) -> S.StructType:
    return S.StructType(table_struct(layout).fields + fields)


def _column(name: str, frame: str | None = None):
    """A column by its name, whatever characters it holds (of the frame
    aliased `frame`)."""
    quoted = "`" + name.replace("`", "``") + "`"
    return F.col(f"{frame}.{quoted}" if frame else quoted)


def _partitioned_writer(frame, plan: dict):
    """A Spark writer of a whole table's rows, in its partition folders."""
    partitions = partition_by(plan)
    return frame.write.partitionBy(*partitions) if partitions else frame.write


def spark_table(spark, out: str, table: str, as_of=None):
    """One lake table as a DataFrame, at its current version or `as_of` (a
    version number, or a datetime: the version current then). delta-rs names
    the version's files; Spark reads them as Parquet (binlake's tables have
    no deletion vectors, so the files are the rows)."""
    return delta_frame(spark, os.path.join(out, TABLES, table), as_of)


def delta_frame(spark, uri: str, as_of=None):
    """The Delta table at `uri` as a DataFrame (see `spark_table`)."""
    import pyarrow as pa
    from deltalake import DeltaTable
    from pyspark.sql.pandas.types import from_arrow_schema
    delta = DeltaTable(uri)
    if as_of is not None:
        delta.load_as_version(as_of)
    schema = from_arrow_schema(pa.schema(delta.schema().to_arrow()))
    files = delta.file_uris()
    if not files:
        return spark.createDataFrame([], schema)
    reader = spark.read.schema(schema)
    if delta.metadata().partition_columns:
        # A partition column's value is in the file's folder name (Hive's
        # layout, as delta-rs and Spark write it), typed as the schema says.
        reader = reader.option("basePath", uri)
    return reader.parquet(*map(hadoop_literal, files)).select(*map(_column, schema.names))


def hadoop_literal(path: str) -> str:
    """A path Spark's readers take as it is: they expand glob patterns, so
    an output directory named like `lake{a,b}` would otherwise match others."""
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", path)


def concurrently(function, arguments: list, workers: int = 4) -> list:
    """Spark jobs submitted from several threads run side by side; small jobs
    are mostly scheduling latency, which this overlaps."""
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda args: function(*args), arguments))


@contextmanager
def _interpreted(spark, interpreted: bool):
    """The session's jobs interpreted (INTERPRETED) within, if `interpreted`;
    its settings as they were after."""
    if not interpreted:
        yield
        return
    conf = spark.conf
    was = {name: conf.get(name) for name in INTERPRETED}
    for name, value in INTERPRETED.items():
        conf.set(name, value)
    try:
        yield
    finally:
        for name, value in was.items():
            conf.set(name, value)
