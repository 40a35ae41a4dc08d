"""A REPLACE the binlog does not say whole: refused before a table changes.

Strategy: MariaDB runs a REPLACE that meets a row under its key as an
UPDATE of that row and, under binlog_row_image=MINIMAL or NOBLOB, logs
the columns the statement names (NOBLOB: and the other non-BLOBs), not
those it set to their DEFAULTs: an after image that looks like an
UPDATE's, and a lake that applied it would keep the old values of those
columns, silently (the randomized check's R4). The rows event does not
say which statement made it; the ANNOTATE_ROWS event before it in its
transaction does (MariaDB writes one per statement by default,
binlog_annotate_row_events), and the lake keeps it in events/.

So a run's new changes are looked through for UPDATEs with partial after
images (few: partial images are a setting, UPDATEs a share); only where
there are, events/ is read, on the days they fall on, for the
statements annotated in their transactions, and one that is a REPLACE
refuses the run in one line (`REPLACED_PARTIALLY`). Where no statement
is at hand (MySQL, whose Rows_query events are off by default; a
transaction of a table newly selected, read into changes/ only), nothing
can be told, and nothing is refused.
"""

from __future__ import annotations

import datetime as dt
import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from binlake.constants import EventType
from binlake.spark.commits.change_files import file_ops
from binlake.spark.plans.history import stretch_at, stretch_width
from binlake.spark.plans.refusals import FULL_IMAGES_THEN_READ_ANEW, forward, named
from binlake.spark.rules.table_rows import partition_of
from binlake.spark.state.compaction import view_files

#: Why a REPLACE under partial row images is refused (its table put in for {table}).
REPLACED_PARTIALLY = (
    "a REPLACE of a row its key held, under binlog_row_image=MINIMAL or NOBLOB: MariaDB logs "
    "it as an UPDATE of the columns the statement names, not of those it set to their "
    "DEFAULTs, which the binlog does not hold" + forward(FULL_IMAGES_THEN_READ_ANEW))
#: A statement that is a REPLACE, after any comments before it.
_REPLACE = re.compile(r"^\s*(?:/\*.*?\*/\s*|--[^\n]*\n\s*|#[^\n]*\n\s*)*replace\b",
                      re.IGNORECASE | re.DOTALL)


def partial_replace(files: list[str], plan: dict, changes_root: str, events_root: str
                    ) -> str | None:
    """The refusal's words ("FILE at POS: TABLE: ...") for the first change
    of the plan's table in `files` (its change files) that a REPLACE made
    under partial images, or None."""
    suspects = _partial_updates(files, plan, changes_root)
    if not suspects:
        return None
    for file, pos in _replaces(suspects, events_root):
        table = f"{plan['database']}.{plan['table']}"
        return f"{file} at {pos}: {table}: {named(REPLACED_PARTIALLY, table)}"
    return None


def _partial_updates(files: list[str], plan: dict, changes_root: str) -> list[tuple]:
    """(file, pos, gtid, day) of each UPDATE in `files` whose after image
    leaves out a column of the stretch it is in."""
    if not plan["primary_key"]:
        return []  # (a keyless table's partial images are refused as they are)
    widths = {stretch_width(s) for s in plan["stretches"]}
    widest = max(widths)
    found = []
    for path in files:
        # The after images' lengths from their keys alone (no value read:
        # under FULL images nothing more of the file is), where it updates.
        ops = file_ops(path)
        if not ops.updates.any():
            continue
        parquet = pq.ParquetFile(path)
        updates = ops.updates
        if _whole_images(parquet, len(updates), ops.deletes, widths):
            continue
        after = parquet.read(columns=["after.key_value.key"]).column("after").combine_chunks()
        lengths = np.diff(np.frombuffer(after.buffers()[1], np.int32, len(after) + 1,
                                        after.offset * 4))  # (to_numpy imports pandas)
        short = updates & (lengths < widest)
        if not short.any():
            continue
        rows = parquet.read(columns=["commit_key", "file", "pos", "gtid", "timestamp"])
        source = partition_of(path, changes_root)
        for row, length in zip(rows.take(pa.array(np.flatnonzero(short))).to_pylist(),
                               lengths[short].tolist()):
            key = row["commit_key"]
            stretch = stretch_at(plan, source, (key["file_seq"], key["pos"]))
            if stretch is not None and length < stretch_width(stretch):
                found.append((row["file"], row["pos"], row["gtid"], row["timestamp"]))
    return found


def _whole_images(parquet: pq.ParquetFile, rows: int, deletes: int, widths: set) -> bool:
    """Every after image of the file holds every column, told from its
    footer alone where the table had one width all along: the key column's
    count of values (a map's keys, or one for a delete's NULL image) is
    `width` per image, one per delete."""
    if len(widths) != 1:
        return False
    width, = widths
    meta = parquet.metadata
    keys = next(i for i in range(meta.num_columns)
                if meta.schema.column(i).path == "after.key_value.key")
    values = sum(meta.row_group(g).column(keys).num_values for g in range(meta.num_row_groups))
    return values == (rows - deletes) * width + deletes


def _replaces(suspects: list[tuple], events_root: str):
    """(file, pos) of each suspect whose statement (the ANNOTATE_ROWS event
    nearest before it in its file and transaction) is a REPLACE."""
    statements = _annotations(events_root, {s[0] for s in suspects},
                              {_day(s[3]) for s in suspects})
    for file, pos, gtid, _ in sorted(suspects, key=lambda s: (s[0], s[1])):
        before = [(at, query) for at, owner, query in statements.get(file, ())
                  if at < pos and owner == gtid]
        if before and _REPLACE.match(max(before)[1] or ""):
            yield file, pos


def _annotations(events_root: str, files: set, days: set) -> dict:
    """{file: [(pos, gtid, statement)]} of the ANNOTATE_ROWS events of
    `files` kept in events/ on `days` (a day either side too: an event's
    day is its own timestamp's)."""
    wanted = {day + dt.timedelta(days=d) for day in days for d in (-1, 0, 1)}
    found: dict = {}
    for day in sorted(wanted):
        folder = os.path.join(events_root, f"date={day.isoformat()}")
        for path in view_files(os.path.dirname(events_root), folder, in_run=True):
            read = pq.read_table(path, columns=["file", "pos", "gtid", "type_code", "query"])
            read = read.filter(pc.equal(read.column("type_code"),
                                        int(EventType.ANNOTATE_ROWS_EVENT)))
            for row in read.to_pylist():
                if row["file"] in files:
                    found.setdefault(row["file"], []).append(
                        (row["pos"], row["gtid"], row["query"]))
    return found


def _day(timestamp) -> dt.date:
    if isinstance(timestamp, dt.datetime):
        return (timestamp.astimezone(dt.timezone.utc) if timestamp.tzinfo else timestamp).date()
    return dt.date.fromtimestamp(0)


__all__ = ["REPLACED_PARTIALLY", "partial_replace"]
