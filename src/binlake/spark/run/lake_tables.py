"""The lake's tables: brought in step with the manifest by a run, built as
of a point in a folder of their own, and read back.

Strategy: a run's plans are the schema history's tables `--tables`
selects, typed as `--temporals` says and partitioned as `--partition-by`
says (`_plans`); binlake.spark.commits.lake applies them (appended, merged
by key, or rebuilt where a table's definition changed), each table
committed as its next Delta version, then the manifest records the tables'
state. `bring_tables_in_step` does nothing where tables/ is in step already;
`build_tables_as_of` builds every table whole as of a point (`parse_as_of`),
refusing a point the lake cannot give exactly, and leaves the lake's
tables and manifest as they are. `read_changes`, `read_events` and
`read_table` read the lake's views back.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from binlake.spark.commits.lake import TABLES, update_tables
from binlake.spark.commits.spark_way import hadoop_literal
from binlake.spark.plans.history import PositionOrder, keyed_table_plans
from binlake.spark.plans.typed import PARTITION_TYPES, spark_type, with_temporals
from binlake.spark.read.batches import CHANGES, EVENTS, spark_ddl
from binlake.spark.state.starts import AsOf
from binlake.spark.run.rebuild import stale_tables
from binlake.spark.state.progress import snapshot_reading
from binlake.spark.state.manifest import Manifest
from binlake.spark.state.starts import refuse_inexact, starting_anew
from binlake.spark.state.compaction import view_files
from binlake.spark.state.store import TABLES_NEW, folder_path, save_manifest

if TYPE_CHECKING:
    from binlake.spark.run.pipeline import Run


def build_tables_as_of(run: Run, as_of: str, as_of_out: str, manifest: Manifest, history,
                       layouts: dict, temporals: str, partition_by: dict) -> None:
    """The tables as of the point, whole, in their own folder; the lake's
    tables and its manifest's state of them stay as they are. Each table
    starts where the normal build starts it; a point the lake cannot give
    exactly (a table still being read among them) is refused."""
    order = PositionOrder(manifest.file_seqs())
    point = parse_as_of(as_of, manifest)
    plans = _plans(history, layouts, order, run.wanted, temporals, partition_by,
                   _before(point, order))
    refuse_inexact(as_of, point, plans, manifest, os.path.join(run.out, "changes"))
    plans, _ = starting_anew(plans, manifest.chunks)
    os.makedirs(as_of_out, exist_ok=True)
    result = run.result
    result.tables, _, result.table_work = update_tables(
        run.spark, run.out, plans, manifest, as_of=point,
        staged=os.path.join(as_of_out, "_binlake.new"),
        tables_mixed=lambda: None, committing=lambda: None, log=run.log,
        tables_dir=os.path.join(as_of_out, TABLES))
    result.tables_rebuilt = True


def bring_tables_in_step(run: Run, manifest: Manifest, history, layouts: dict,
                         temporals: str, keep_history: bool, partition_by: dict) -> None:
    """tables/ (and history/) brought in step with the manifest, where they
    are not: the changes a run added, a choice changed, tables --rebuild
    names."""
    out, state = run.out, manifest.tables
    if not (manifest.pending or state is None or state.mixed or state.as_of is not None
            or state.temporals != temporals or state.history != keep_history
            or state.partition_by != partition_by or stale_tables(state)
            or not os.path.isdir(os.path.join(out, TABLES))):
        return
    order = PositionOrder(manifest.file_seqs())
    # A table the lock-free snapshot is still reading is not in tables/ yet:
    # its chunks and changes wait in changes/, and the run that appends its
    # last chunk builds it from them, as a table new to the lake.
    reading, wanted = snapshot_reading(manifest.chunks), run.wanted
    built = wanted if not reading else (
        lambda database, table: wanted(database, table) and f"{database}.{table}" not in reading)
    plans, fresh = starting_anew(_plans(history, layouts, order, built, temporals,
                                        partition_by), manifest.chunks)
    fresh |= stale_tables(state)  # built from their changes, never carried

    def tables_mixed() -> None:
        save_manifest(out, manifest.tables_mixed(partition_by))

    result = run.result
    result.tables, built, result.table_work = update_tables(
        run.spark, out, plans, manifest, as_of=None, staged=folder_path(out, TABLES_NEW),
        tables_mixed=tables_mixed, committing=run.undo.forget,
        log=run.log, history=keep_history, selected=built, fresh=fresh)
    result.tables_rebuilt = True
    save_manifest(out, manifest.tables_built(
        replace(built, temporals=temporals, history=keep_history, partition_by=partition_by)))


def _plans(history, layouts: dict, order, wanted, temporals: str, partition_by: dict,
           before=None) -> list:
    """The plans of the tables `wanted` selects, their temporal columns
    typed as `temporals` says (a lake switched to another way carries no
    such column over: its tables are rebuilt, the plans having changed),
    partitioned as `partition_by` says (a changed partitioning rewrites the
    table: its plan changed). The plans of the lake's tables now are kept
    for the next run in this process (`_Known`): a follower's micro-batch
    makes only those of the tables whose table map changed, unless DDL
    changed the history."""
    known = _known.plans(history, order, temporals, partition_by) if before is None else None
    found, plans = {}, []
    for key, entry, plan in keyed_table_plans(history, layouts, order, before, known):
        if known is None or known.get(key, (None, None))[1] is not plan:
            plan = dict(plan, layout=with_temporals(plan["layout"], temporals))
            column = partition_by.get(f"{plan['database']}.{plan['table']}")
            if column:
                plan["partition_by"] = [_partition_column(plan, column)]
        found[key] = (entry, plan)
        if wanted(plan["database"], plan["table"]):
            plans.append(plan)
    if before is None:
        _known.keep(history, order, temporals, partition_by, found)
    return plans


class _Known:
    """The plans a run made of the lake's tables, for the next run in this
    process: valid while the history is the lake's file unchanged (no DDL
    since), the choices are the same and the order orders every position
    alike (binlake.spark.plans.history.PositionOrder.extends)."""

    def __init__(self):
        self._basis, self._order, self._found = None, None, {}

    def plans(self, history, order, temporals: str, partition_by: dict) -> dict | None:
        if (self._basis is None or self._basis != _basis(history, temporals, partition_by)
                or not order.extends(self._order)):
            return None
        return self._found

    def keep(self, history, order, temporals: str, partition_by: dict, found: dict) -> None:
        basis = _basis(history, temporals, partition_by)
        self._basis, self._order, self._found = basis, order, found if basis else {}


def _basis(history, temporals: str, partition_by: dict) -> tuple | None:
    """What a run's plans are made of besides the tables' layouts: None
    where that is not a saved history as it was read (a seed, or one a
    statement of this run changed)."""
    read = history.read_from
    if read is None or read[2] != history.state():
        return None
    return read, temporals, tuple(sorted(partition_by.items()))


_known = _Known()


def _partition_column(plan: dict, name: str) -> str:
    """The column of the plan's table named `name` (as MySQL matches column
    names: without case), refused in one line where the table has none or
    it is not of a type whose values name partition folders exactly."""
    table = f"{plan['database']}.{plan['table']}"
    found = [c for c in plan["layout"]["columns"] if c["key"].lower() == name.lower()]
    if not found:
        raise ValueError(f"--partition-by {table}={name}: the table has no such column "
                         f"({', '.join(c['key'] for c in plan['layout']['columns'])}): name "
                         f"another, or none ({table}=); nothing was changed")
    if not isinstance(spark_type(found[0]), PARTITION_TYPES):
        raise ValueError(f"--partition-by {table}={name}: a {spark_type(found[0]).simpleString()} "
                         "column: a table is partitioned by an integer or DATE column (typed, "
                         "not --temporals text); nothing was changed")
    return found[0]["key"]


def parse_partition_by(given: str | dict | None) -> dict:
    """`db.table=column,...` (or such a dict) as {"db.table": column};
    `db.table=` (an empty column) ends that table's partitioning."""
    if isinstance(given, dict) or given is None:
        return dict(given or {})
    found = {}
    for item in filter(None, (part.strip() for part in given.split(","))):
        table, equals, column = item.partition("=")
        if not equals or table.count(".") != 1 or not all(table.split(".")):
            raise ValueError(f"--partition-by {item!r}: DB.TABLE=COLUMN (DB.TABLE= for none)")
        found[table] = column.strip()
    return found


def _before(point: AsOf | None, order: PositionOrder):
    """Which statements of the schema history come before `point`."""
    if point is None:
        return None
    if point.time is not None:
        limit = point.time.timestamp()
        return lambda version: version.timestamp is None or version.timestamp <= limit
    return lambda version: order(version.position) < (point.file_seq, point.pos)


def read_changes(spark, out: str, files: list | None = None):
    """The changes/ dataset (or those `files` of it), with its partition
    columns typed as written: its files as a reader lists them, never half
    of a merge (binlake.spark.state.compaction)."""
    return _view(spark, out, "changes", CHANGES, files)


def read_events(spark, out: str):
    """The events/ dataset, listed as `read_changes` lists changes/."""
    return _view(spark, out, "events", EVENTS, None)


def _view(spark, out: str, view: str, columns, files: list | None):
    schema = spark_ddl(columns) + ", `date` DATE"
    root = os.path.join(out, view)
    files = view_files(out, root) if files is None else files
    if not files:
        return spark.createDataFrame([], schema)
    return (spark.read.schema(schema).option("basePath", root)
            .parquet(*map(hadoop_literal, files)))


def read_table(out: str, table: str):
    """A lake table's current version as a pyarrow Table (`table`: "db.table")."""
    from binlake.spark.commits.delta import read_table as read
    return read(os.path.join(out, "tables", table))


_POSITION = re.compile(r"(?P<file>.+):(?P<pos>\d+)")


def parse_as_of(text: str, manifest: Manifest) -> AsOf:
    """`FILE:POS` (a file the manifest knows) or a date-time (UTC unless it says)."""
    match = _POSITION.fullmatch(text)
    if match:
        entry = manifest.files.get(os.path.basename(match["file"]))
        if entry is not None:
            return AsOf(file_seq=entry.file_seq, pos=int(match["pos"]))
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--as-of {text!r}: neither FILE:POS of a file read so far "
                         "nor a date-time like 2024-05-01T12:00:00") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return AsOf(time=moment)


__all__ = ["build_tables_as_of", "bring_tables_in_step", "parse_partition_by", "parse_as_of",
           "read_changes", "read_events", "read_table"]
