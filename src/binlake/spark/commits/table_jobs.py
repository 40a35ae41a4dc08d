"""A table's next files from its change files: one job per table, which
the driver runs in-process when the table's work is small and Spark runs
in a task when it is large (binlake.spark.commits.spark_way: the lake's
tables on a cluster are computed on its executors). Either way it is the
same function, `run_job`, on the same picklable `TableJob`.

Strategy: the job reads the table's change files with pyarrow (Spark's
JVM would convert every row's maps to Arrow for a Python task: 15 us a
change, four times what the rules cost), applies the table rules
(binlake.spark.rules.table_rows, history_rows), and writes the rows where
binlake.spark.commits.table_commits stages them from: a whole table in key
order in files of about ROWS_PER_FILE rows, in its partition folders; a
MERGE's source as one file. Nothing is committed here.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from binlake.spark.commits.change_files import CarriedFrom, ChangeFiles, sources_of
from binlake.spark.commits.delta import read_table, row_count, rows_under_keys
from binlake.spark.commits.delta_tables import exists, opened
from binlake.spark.commits.table_commits import HISTORY as HISTORY_FOLDER
from binlake.spark.commits.table_commits import RowFiles, TableCommits, partition_by, sorted_by
from binlake.spark.plans.layouts import qualified
from binlake.spark.rules import history_rows, table_rows
from binlake.spark.rules.columns import CLOSES
from binlake.spark.rules.arrow_buffers import flags, numbers, truths
from binlake.spark.state.starts import AsOf

#: What a job makes of a table: its rows whole from all its changes, the
#: rows inserts add, a keyed table's net changes, a keyless table's copies,
#: its rows carried through DDL with the new changes, its history versions.
REBUILT, APPENDED, MERGED, REWRITTEN, CARRIED, HISTORY = (
    "rebuilt", "appended", "merged", "rewritten", "carried", "history")


@dataclass(frozen=True)
class TableJob:
    kind: str
    key: str                 #: "db.table"
    plan: dict
    files: tuple             #: its files of changes/ (paths)
    root: str                #: changes/
    folder: str              #: where its rows are written
    uri: str | None = None   #: its Delta table (the rows it holds)
    as_of: AsOf | None = None
    source: CarriedFrom | None = None  #: CARRIED: where its rows come from
    whole: bool = False      #: HISTORY: every version (else the new ones and the ends)


def new_job(commits: TableCommits, changes: ChangeFiles, kind: str, plan: dict, files: list,
            **how) -> TableJob:
    """A job of a run's table (`how`: TableJob's other fields; its folder
    the table's staging folder unless said)."""
    key = qualified(plan["database"], plan["table"])
    how.setdefault("folder", commits.folder(key))
    return TableJob(kind, key, plan, tuple(files), changes.root,
                    uri=os.path.join(commits.tables_dir, key), **how)


def history_job(commits: TableCommits, changes: ChangeFiles, plan: dict, files: list,
                whole: bool) -> TableJob:
    """The job of a table's history rows (staged under history/)."""
    key = qualified(plan["database"], plan["table"])
    return new_job(commits, changes, HISTORY, plan, files, whole=whole,
                   folder=commits.folder(os.path.join(HISTORY_FOLDER, key)))


def increment_kind(plan: dict, inserts_only: bool) -> str:
    """What new changes make of a table whose definition did not change:
    rows appended (inserts only), a keyed table's net changes merged, a
    keyless table's copies merged."""
    return APPENDED if inserts_only else MERGED if plan["primary_key"] else REWRITTEN


def stage(commits: TableCommits, job: TableJob) -> None:
    """A job's rows, written, staged to be committed as its kind says."""
    if job.kind == MERGED:
        commits.stage_net(job.key, job.plan["layout"])
    elif job.kind == REWRITTEN:
        commits.stage_copies(job.key)
    else:
        commits.stage_whole(job.key, job.plan, job.kind)


def run_job(job: TableJob) -> str:
    """The job's rows written to its folder; returns its kind."""
    changes = table_rows.read_changes(list(job.files), job.root, sources_of(job.plan))
    if changes is not None and job.as_of is not None:
        changes = changes.filter(flags(at_or_before(changes, job.as_of)))
    rows = _RULES[job.kind](job, changes)
    layout = job.plan["layout"]
    if job.kind in (REBUILT, CARRIED) or (job.kind == APPENDED and layout["primary_key"]):
        rows = sorted_by(rows, layout["primary_key"] or [c["key"] for c in layout["columns"]])
    whole = job.kind in (REBUILT, CARRIED, APPENDED)
    with RowFiles(job.folder, partition_by(job.plan) if whole else ()) as out:
        out.write(rows)
    return job.kind


def carries(plan: dict, source: CarriedFrom, key: str) -> bool:
    """The rows a table holds are carried into its new definition
    (binlake.spark.rules.table_rows.carried takes its columns' types as the
    Delta table has them), not rebuilt from its changes."""
    if source.uri is None:
        return True
    import pyarrow as pa
    held = empty_table(pa.schema(opened(source.uri).schema().to_arrow()))
    return table_rows.carried(held, plan, source.stretch, key) is not None


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of `schema` without rows (Schema.empty_table imports pandas)."""
    return pa.Table.from_arrays([pa.nulls(0, field.type) for field in schema], schema=schema)


def at_or_before(changes: pa.Table, point: AsOf) -> np.ndarray:
    """Per change, whether its transaction commits at or before `point`
    (AsOf.condition, on Arrow columns)."""
    if point.time is not None:
        stamps = changes.column("commit_timestamp").combine_chunks()
        micros = numbers(stamps.cast(pa.int64()))
        limit = int(point.time.timestamp() * 1_000_000)
        return (micros <= limit) & ~truths(stamps.is_null())
    seq = numbers(changes.column("commit_key").combine_chunks().field("file_seq"))
    pos = numbers(changes.column("commit_pos").combine_chunks())
    return (seq < point.file_seq) | ((seq == point.file_seq) & (pos <= point.pos))


def _rebuilt(job: TableJob, changes):
    if changes is None:
        return table_rows.empty(job.plan["layout"], job.key)
    return table_rows.state(changes, job.plan, job.key)


def _appended(job: TableJob, changes):
    return _table_types(table_rows.appended(changes, job.plan, job.key), job.uri)


def _merged(job: TableJob, changes):
    held = functools.partial(rows_under_keys, job.uri)
    return _table_types(table_rows.net_changes(changes, job.plan, job.key, held), job.uri)


def _rewritten(job: TableJob, changes):
    names = [c["key"] for c in job.plan["layout"]["columns"]]
    return table_rows.copies(read_table(job.uri).select(names), changes, job.plan, job.key)


def _carried(job: TableJob, changes):
    source = job.source
    held = read_table(source.uri) if source.uri and row_count(source.uri) else None
    current = table_rows.carried(held, job.plan, source.stretch, job.key)
    if changes is None:
        return current
    if source.uri is None:  # all of the table's changes: its state
        return table_rows.state(changes, job.plan, job.key)
    return table_rows.rewritten(current, changes, job.plan, job.key)


def _history(job: TableJob, changes):
    rows = history_rows.history_versions(changes, job.plan, job.key)
    if job.whole:
        rows = rows.filter(flags(~truths(rows.column(CLOSES)))).drop_columns([CLOSES])
    return rows


_RULES = {REBUILT: _rebuilt, APPENDED: _appended, MERGED: _merged, REWRITTEN: _rewritten,
          CARRIED: _carried, HISTORY: _history}


def _table_types(rows: pa.Table, uri: str | None) -> pa.Table:
    """`rows` in the types the Delta table at `uri` has for its columns (a
    list's item name, say), where there is one."""
    if uri is None or not exists(uri):
        return rows
    held = pa.schema(opened(uri).schema().to_arrow())
    return rows.cast(pa.schema([held.field(f.name).with_nullable(f.nullable)
                                if f.name in held.names else f for f in rows.schema]))
