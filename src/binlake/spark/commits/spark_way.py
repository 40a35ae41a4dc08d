"""A run's tables computed by Spark's jobs: the way of the tables whose
changes are many (the driver's, binlake.spark.commits.driver_way, takes
the small ones).

Strategy: each table's rows come from its partitions of changes/ only,
by the rules of binlake.spark.rules.tables (a keyed table's state per key
by its last touch, a keyless table's as a multiset), typed by binlake.
spark.plans.typed, and are staged for binlake.spark.commits.table_commits to
commit. A table with many changes gets a job of its own, whose executors
write its files; small tables are computed together in one job per group
and collected to the driver, which writes their files (Spark's fixed cost
per job, per stage and per output file is what small tables would
otherwise spend their time on). Nothing is cached: each job reads its
tables' partitions of changes/ only. Jobs of a step over few rows run
interpreted (INTERPRETED_ROWS).
"""

from __future__ import annotations

import functools
import operator
import os
import re
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pyarrow.compute as pc
from pyspark.sql import Column, functions as F

from binlake.spark.commits.change_files import CarriedFrom, ChangeFiles, by_table, sources_of
from binlake.spark.commits.delta import row_count
from binlake.spark.commits.table_commits import (HISTORY, TABLES, TableCommits, partition_by, sorted_by,
                                           write_table_rows)
from binlake.spark.plans.history import carried_columns, days_keyed_otherwise
from binlake.spark.plans.layouts import qualified
from binlake.spark.plans.refusals import named
from binlake.spark.read.partitioned import parquet_rows
from binlake.spark.plans.typed import converted, from_text, refuse, table_struct, typed_columns
from binlake.spark.rules.columns import (AT, CLOSES, COPIES_REMOVED, COPY_ADDED, COPY_OP,
                                         DELETED, NET_COLUMNS, PRESENT)
from binlake.spark.rules.tables import (NOT_HELD, ROWS_PER_FILE, history_versions,
                                        multiset_deltas, one_of, rebuild_states, typed_rows,
                                        typed_state)
from binlake.spark.state.starts import AsOf

#: A table with at most this many change rows is computed in a job with
#: others and collected to the driver (Spark's cost per job and per file is
#: then paid once for many small tables); a larger one has a job of its own
#: whose executors write its files.
SMALL_TABLE_ROWS = 250_000
#: At most this many change rows, and tables, in one collected job.
COLLECTED_ROWS = 500_000
COLLECTED_TABLES = 8
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
        partitions of changes/ and committed whole as the table's next
        version. Files written but never committed are in no version."""
        if not plans:
            return
        by_key = by_table(plans)
        sizes = {key: self.changes.rows(sources_of(plan)) for key, plan in by_key.items()}
        # A key added since the table began: the changes of its days without
        # it are copies added and removed (`_rewrite`), then the rest by key.
        rekeyed = [key for key, plan in by_key.items() if days_keyed_otherwise(plan)]
        for key in rekeyed:
            plan = by_key.pop(key)
            changes = read_changes(only=sources_of(plan))
            if as_of is not None and changes is not None:
                changes = changes.where(as_of.condition())
            empty = self.spark.createDataFrame([], table_struct(plan["layout"]))
            self._rewrite(changes, plan, empty, sizes.pop(key))
            self.commits.stage_whole(key, plan, "rebuilt")

        # Tables whose every change inserts (an event log) need no aggregate by key.
        inserts = {key: self.changes.inserts_only(sources_of(plan)) for key, plan in by_key.items()}

        def job(keys: list) -> None:
            group = [by_key[key] for key in keys]
            changes = read_changes(only=set().union(*map(sources_of, group)))
            if changes is not None:
                self._write(rebuild_states(changes, group, as_of, inserts_only=inserts[keys[0]]),
                            group, sizes)
        self._each(job, self._jobs(sizes, inserts), sum(sizes.values()))
        for key, plan in by_key.items():
            self.commits.stage_whole(key, plan, "rebuilt")
        self.commits.log(f"tables: {len(by_key) + len(rekeyed)} rebuilt"
                 + (f" as of {as_of.describe()}" if as_of else ""))

    def apply(self, changes, files: list, plans: list) -> None:
        """Add new changes (`changes`, read from `files`) to tables whose
        definition did not change: inserts appended, a keyed table's net
        changes merged, a keyless table's rows rewritten."""
        found = self.changes.stats(files)
        appended, merged, rewritten = [], [], []
        for plan in plans:
            sources = sources_of(plan)
            if not any(source in found for source in sources):
                continue  # nothing new
            if all(found[source].inserts_only for source in sources if source in found):
                appended.append(plan)
            elif plan["primary_key"]:
                merged.append(plan)
            else:
                rewritten.append(plan)
        if appended or merged or rewritten:
            self.commits.log(f"tables: appending to {len(appended)}, merging into {len(merged)}, "
                     f"rewriting {len(rewritten)}")
        kinds = {**{key: "rows" for key in by_table(appended)},
                 **{key: "net" for key in by_table(merged)}}
        by_key = by_table(appended + merged)
        sizes = {key: sum(found[s].rows for s in sources_of(plan) if s in found)
                 for key, plan in by_key.items()}

        def job(keys: list) -> None:
            group = [by_key[key] for key in keys]
            mine = changes.where(one_of(set().union(*map(sources_of, group))))
            net = kinds[keys[0]] == "net"
            self._write(rebuild_states(mine, group, net=net, inserts_only=not net), group, sizes,
                        net=net)
        self._each(job, self._jobs(sizes, kinds), sum(sizes.values()))
        for key, plan in by_key.items():
            if kinds[key] == "rows":
                self.commits.stage_whole(key, plan, "appended")
            else:
                self.commits.stage_net(key, plan["layout"])

        def rewrite(plan: dict) -> None:
            key = qualified(plan["database"], plan["table"])
            current = delta_frame(changes.sparkSession, os.path.join(self.commits.tables_dir, key))
            self._copies(changes, plan, current.select(
                *[_column(c["key"]) for c in plan["layout"]["columns"]]))
        held = sum(row_count(os.path.join(self.commits.tables_dir, key)) for key in by_table(rewritten))
        self._each(rewrite, rewritten, held + sum(found[s].rows for plan in rewritten
                                                  for s in sources_of(plan) if s in found))
        for key in by_table(rewritten):
            self.commits.stage_copies(key)

    def carry(self, read_changes, carried: dict) -> list:
        """Tables whose definition changed (ADD/DROP/RENAME COLUMN, MODIFY, a
        new key, RENAME TABLE, TRUNCATE, a new CREATE), {key: (plan,
        CarriedFrom, new change files)}: the rows they hold carried into the
        new columns (each from the column it was, converted where its type
        changed; an added one its DEFAULT), the new changes applied on top,
        staged whole for one overwrite. The cost follows the table's size
        and its new changes, never its history. Returns the plans that need
        a rebuild instead (a type change binlake does not convert, a column
        whose fractional digits changed)."""
        rebuild, jobs = [], []
        for key, (plan, source, files) in carried.items():
            current = self._carried_rows(plan, source)
            if current is None:
                rebuild.append(plan)
                continue
            held = row_count(source.uri) if source.uri else 0
            jobs.append((plan, current, files, held + sum(map(parquet_rows, files))))
        if jobs:
            self.commits.log(f"tables: carrying {len(jobs)} into their new definitions")

        def job(plan, current, files, size) -> None:
            self._rewrite(read_changes(files) if files else None, plan, current, size)
        self._each(lambda one: job(*one), jobs, sum(size for *_, size in jobs))
        for plan, *_ in jobs:
            key = qualified(plan["database"], plan["table"])
            self.commits.stage_whole(key, plan, "carried")
        return rebuild

    def _carried_rows(self, plan: dict, source: "CarriedFrom"):
        """The rows `source` holds, in the plan's columns (none after a
        TRUNCATE), or None where a column's type or fractional digits
        changed in a way binlake does not convert."""
        layout = plan["layout"]
        key = qualified(plan["database"], plan["table"])
        if source.uri is None:
            return self.spark.createDataFrame([], table_struct(layout))
        current = delta_frame(self.spark, source.uri)
        held = {field.name: field.dataType for field in current.schema.fields}
        columns = []
        for column, name, default, digits, was in carried_columns(layout, source.stretch):
            if name is None:
                value = from_text(F.lit(default).cast("string"), column, key)
            elif digits is not None:
                return None
            else:
                value = converted(_column(name), was, held.get(name), column)
                if value is None:
                    return None
            columns.append(value.alias(column["key"]))
        return current.select(*columns)

    def _rewrite(self, changes, plan: dict, current, size: int) -> None:
        """`current` (a table's rows, typed) with `changes` (None: none)
        applied, staged whole for one overwrite (readers see the old version
        or the new): a keyed table's net changes replace, delete or complete
        (partial images) the rows of their keys; a table without a key is a
        multiset, each distinct row's copies added or removed. A copy
        removed that the table does not hold changes nothing, as a rebuild
        from the changes has it, and as a keyed table's DELETE of a key it
        does not hold does; a partial image of a key it does not hold is
        refused."""
        key, layout = qualified(plan["database"], plan["table"]), plan["layout"]
        names = [_column(c["key"]) for c in layout["columns"]]
        rows = current
        if changes is not None:
            mine = changes.where(one_of(sources_of(plan)))
            if plan["primary_key"]:
                # Changes from when the table had no key, or another (a key
                # added by this run's DDL), are what they were then: copies
                # added and removed (one of two equal rows deleted before
                # the key was added leaves the other).
                then = days_keyed_otherwise(plan)
                if then:
                    rows = _with_copies(rows, mine, dict(plan, primary_key=[], stretches=then),
                                        names)
                    plan = dict(plan, stretches=[s for s in plan["stretches"] if s not in then])
                net = _net_rows(rebuild_states(mine, [plan], net=True), plan)
                rows = _merged(rows, net, layout)
            else:
                rows = _with_copies(rows, mine, plan, names)
        order = [_column(k) for k in layout["primary_key"]] or names
        files = max(1, -(-size // ROWS_PER_FILE))  # `size`: at most the rows written
        spread = rows.repartition(1) if files == 1 else rows.repartitionByRange(files, *order)
        _partitioned_writer(spread.sortWithinPartitions(*order), plan).parquet(
            self.commits.folder(key))

    def history(self, key: str, plan: dict, changes, signature: str, whole: bool) -> None:
        """A keyed table's history rows from `changes` (binlake.spark.rules.tables.
        history_versions) staged: `whole`, every version, for one overwrite;
        else the new versions and the versions they end, for one MERGE."""
        rows = history_versions(changes.where(one_of(sources_of(plan))), plan)
        if whole:
            rows = rows.where(~F.col(CLOSES)).drop(CLOSES)
        folder = self.commits.folder(os.path.join(HISTORY, key))
        files = max(1, -(-self.changes.rows(sources_of(plan)) // ROWS_PER_FILE)) if whole else 1
        rows.repartition(files).write.parquet(folder)
        self.commits.stage_history(key, plan, folder, signature, whole)

    # -- steps ------------------------------------------------------------------------
    def _jobs(self, sizes: dict, kinds: dict) -> list[list[str]]:
        """Tables in jobs: a large one alone, small ones of one kind
        (`kinds[key]`: how its rows are computed) together."""
        jobs, groups = [], {}  # kind -> (keys, rows) of the job being filled
        for key in sorted(sizes, key=lambda k: (sizes[k], k)):
            if sizes[key] > SMALL_TABLE_ROWS:
                jobs.append([key])
                continue
            group, rows = groups.get(kinds[key], ([], 0))
            if group and (rows + sizes[key] > COLLECTED_ROWS or len(group) == COLLECTED_TABLES):
                jobs.append(group)
                group, rows = [], 0
            groups[kinds[key]] = (group + [key], rows + sizes[key])
        return jobs + [group for group, _ in groups.values()]

    def _each(self, function, jobs: list, rows: int) -> None:
        """`function(job)` for each of `jobs`, side by side; interpreted
        where the step's jobs are over `rows` <= INTERPRETED_ROWS."""
        if not jobs:
            return
        with _interpreted(self.spark, rows <= INTERPRETED_ROWS):
            concurrently(function, [(job,) for job in jobs])

    def _write(self, states, plans: list, sizes: dict, net: bool = False) -> None:
        """Stage the typed rows of `plans` from their `states` (net changes
        with `net`): a large table by Spark's executors, small ones
        collected in one job and written here."""
        keys = list(by_table(plans))
        if len(plans) == 1 and sizes[keys[0]] > SMALL_TABLE_ROWS:
            plan = plans[0]
            if net:  # a MERGE's source
                _net_rows(states, plan).write.parquet(self.commits.folder(keys[0]))
            else:
                _partitioned_writer(typed_state(states, plan["layout"], sizes[keys[0]]),
                                    plan).parquet(self.commits.folder(keys[0]))
            return
        # Each table's columns side by side, set on its own rows only.
        names = [[c["key"] for c in plan["layout"]["columns"]] + (list(NET_COLUMNS) if net else [])
                 for plan in plans]
        packed = [F.when(one_of({(plan["database"], plan["table"])}), column).alias(f"t{i}_{j}")
                  for i, plan in enumerate(plans)
                  for j, column in enumerate(_typed_columns(plan, net))]
        collected = states.select("database", "table", *packed).toArrow()
        for i, (key, plan) in enumerate(zip(keys, plans)):
            mine = pc.and_(pc.equal(collected["database"], plan["database"]),
                           pc.equal(collected["table"], plan["table"]))
            rows = (collected.select([f"t{i}_{j}" for j in range(len(names[i]))]).filter(mine)
                    .rename_columns(names[i]))
            if rows.num_rows == 0:
                continue
            if plan["layout"]["primary_key"] and not net:
                rows = sorted_by(rows, plan["layout"]["primary_key"])
            write_table_rows(self.commits.folder(key), rows,
                        () if net else partition_by(plan))

    def _copies(self, changes, plan: dict, current) -> None:
        """What the changes do to a keyless table's copies (`current`: its
        rows), staged as `merge_copies` takes them: for each distinct row
        that loses copies, the row marked COPIES_REMOVED and the copies it
        keeps; for one that gains, the copies added."""
        key, layout = qualified(plan["database"], plan["table"]), plan["layout"]
        names = [_column(c["key"]) for c in layout["columns"]]
        mine = changes.where(one_of(sources_of(plan)))
        deltas = _typed_deltas(mine, plan).alias("d")
        held = current.groupBy(*names).agg(F.count(F.lit(1)).alias(_HELD)).alias("h")
        keys = [c["key"] for c in layout["columns"]]
        same = functools.reduce(operator.and_, [_column(k, "d").eqNullSafe(_column(k, "h"))
                                                for k in keys])
        n, copies = F.col(_COPIES), F.coalesce(F.col(_HELD), F.lit(0))
        counted = deltas.join(held, same, "left").select(
            *[_column(k, "d").alias(k) for k in keys], n, copies.alias(_HELD))
        row = F.struct(*names)

        def marked(op: str, count) -> Column:
            return F.array_repeat(F.struct(row.alias("r"), F.lit(op).alias("op")),
                                  count.cast("int"))
        held_now = F.col(_HELD)
        removed = marked(COPIES_REMOVED, F.when((n < 0) & (held_now > 0), 1).otherwise(0))
        added = marked(COPY_ADDED, F.when(n > 0, n).when(held_now > 0,
                                                         F.greatest(held_now + n, F.lit(0)))
                       .otherwise(0))
        ops = counted.select(F.explode(F.concat(removed, added)).alias("o"))
        ops.select("o.r.*", F.col("o.op").alias(COPY_OP)).write.parquet(
            self.commits.folder(key))


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


def _merged(current, net, layout: dict):
    """A keyed table's rows (`current`) with its net changes (`net`, as
    `_net_rows` types them) applied: a key's net change replaces its row,
    deletes it, or sets the columns a partial one holds (PRESENT) in it; a
    partial one whose key the table does not hold is refused. One full
    outer join on the key."""
    names = [c["key"] for c in layout["columns"]]
    held = current.select(*[_column(n).alias(f"c{i}") for i, n in enumerate(names)],
                          F.lit(True).alias("c_held"))
    new = net.select(*[_column(n).alias(f"n{i}") for i, n in enumerate(names)],
                     _column(DELETED).alias("n_deleted"), _column(PRESENT).alias("n_present"),
                     _column(AT).alias("n_at"))
    # NULL-safe: changes from before a key was added may carry NULLs in it
    keys = [names.index(k) for k in layout["primary_key"]]
    joined = held.join(new, functools.reduce(operator.and_, [
        held[f"c{i}"].eqNullSafe(new[f"n{i}"]) for i in keys]), "full_outer")
    changed, present = F.col("n_deleted").isNotNull(), F.col("n_present")
    unheld = changed & present.isNotNull() & F.col("c_held").isNull()
    key = qualified(layout["database"], layout["table"])
    kept = refuse(unheld, ~F.coalesce(F.col("n_deleted"), F.lit(False)),
                  F.concat(F.col("n_at"), F.lit(f": {key}: {named(NOT_HELD, key)}")), "boolean")
    values = [F.when(~changed | (present.isNotNull() & (F.substring(present, i + 1, 1) == "0")),
                     F.col(f"c{i}")).otherwise(F.col(f"n{i}")).alias(name)
              for i, name in enumerate(names)]
    return joined.where(kept).select(*values)


def _column(name: str, frame: str | None = None):
    """A column by its name, whatever characters it holds (of the frame
    aliased `frame`)."""
    quoted = "`" + name.replace("`", "``") + "`"
    return F.col(f"{frame}.{quoted}" if frame else quoted)


#: Columns of a keyless table's counts, named apart from any of its own.
_COPIES, _HELD = "_binlake_copies", "_binlake_held"


def _typed_deltas(changes, plan: dict):
    """The copies the changes add (negative: remove) per distinct row of a
    keyless table, typed: the table's columns and _COPIES."""
    deltas = multiset_deltas(changes, [plan]).withColumnRenamed("n", _COPIES)
    return typed_rows(deltas, plan["layout"], extra=(_COPIES,))


def _with_copies(rows, changes, plan: dict, names: list):
    """`rows` (a multiset) with the copies `changes` add and remove, by the
    plan's stretches read as a table without a key: a copy removed that
    the rows do not hold changes nothing."""
    n = F.col(_COPIES)
    counted = (rows.select(*names, F.lit(1).cast("long").alias(_COPIES))
               .unionByName(_typed_deltas(changes, plan))
               .groupBy(*names).agg(F.sum(n).alias(_COPIES)).where(n > 0))
    return counted.select(F.explode(F.array_repeat(F.struct(*names), n.cast("int")))
                          .alias("r")).select("r.*")


def _typed_columns(plan: dict, net: bool) -> list:
    """A state row's typed columns (`row`: exact texts in column order);
    with `net`, a net change's: a deleted key's row holds its key columns
    alone (what the MERGE matches on), and `DELETED` says so."""
    layout = plan["layout"]
    if not net:
        return typed_columns(layout, F.col("row"), by_position=True)
    primary = plan["primary_key"]
    key_only = F.array(*[F.col("key")[primary.index(i)] if i in primary
                         else F.lit(None).cast("string") for i in range(len(layout["columns"]))])
    return [*typed_columns(layout, F.coalesce("row", key_only), by_position=True),
            F.col("row").isNull().alias(DELETED), F.col("present").alias(PRESENT),
            F.col("at").alias(AT)]


def _net_rows(net, plan: dict):
    """One table's net changes, typed, with `DELETED`."""
    mine = net.where(one_of({(plan["database"], plan["table"])}))
    return mine.select(*_typed_columns(plan, net=True))


def _partitioned_writer(frame, plan: dict):
    """A Spark writer of a whole table's rows, in its partition folders."""
    partitions = partition_by(plan)
    return frame.write.partitionBy(*partitions) if partitions else frame.write
