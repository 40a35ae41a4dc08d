"""What a run's changes make of a table: its rows whole (a rebuild), the
rows inserts add, a keyed table's net changes for a MERGE, a table's rows
with the changes applied (carried through DDL), a keyless table's copies
for a MERGE. One implementation, which the driver runs in-process
(binlake.spark.commits.driver_way) and Spark's tasks run on a table's
changes (binlake.spark.commits.spark_way): the same functions, the same
refusals.

Strategy: the changes become images and net changes column by column
(binlake.spark.rules.engine); where partial row images leave columns out,
the fold in commit order (binlake.spark.rules.fold) completes them from
the row the key held, in the changes or in the table. Rows are typed by
binlake.spark.rules.typed_arrow. A change that cannot be applied exactly
is refused in one line (binlake.spark.rules.refused).
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from binlake.spark.plans.history import carried_columns, days_keyed_otherwise
from binlake.spark.read.partitioned import unescape_partition_value
from binlake.spark.rules.columns import COPIES_REMOVED, COPY_ADDED, COPY_OP, DELETED
from binlake.spark.rules.arrow_buffers import flags, ints, texts, truths
from binlake.spark.rules.engine import (CHANGE_COLUMNS, Images, images, last_touches,
                                        multiset)
from binlake.spark.rules.fold import ABSENT, KeyNet, net_by_key
from binlake.spark.rules.refused import (KEYLESS_PARTIAL, NEVER_WHOLE, NOT_HELD, UNKNOWN_KEY,
                                         refused_at)
from binlake.spark.rules.typed_arrow import (converted, hashable, typed_column,
                                             typed_rows)


# -- the changes -----------------------------------------------------------------------

@functools.lru_cache(maxsize=1 << 16)
def partition_of(path: str, root: str) -> tuple[str, str]:
    """(database, table) of a file of changes/ (its Hive partition folders;
    kept: a run asks it of each file once per table it brings in step)."""
    parts = dict(part.split("=", 1) for part in
                 os.path.relpath(os.path.dirname(path), root).split(os.sep))
    return unescape_partition_value(parts["database"]), unescape_partition_value(parts["table"])


def read_changes(files: list[str], root: str, sources: set) -> pa.Table:
    """The changes of the (database, table) pairs `sources` in `files` of
    changes/ (at `root`), as Spark's tasks get them: CHANGE_COLUMNS with
    `database` and `table`."""
    parts = []
    for path in files:
        database, table = partition_of(path, root)
        if (database, table) not in sources:
            continue
        read = pq.ParquetFile(path).read(columns=CHANGE_COLUMNS)
        parts.append(read.append_column("database", texts([database] * read.num_rows))
                     .append_column("table", texts([table] * read.num_rows)))
    if not parts:
        return None
    return pa.concat_tables(parts)


# -- what a table's changes make of it ----------------------------------------------------

def state(changes: pa.Table, plan: dict, table: str) -> pa.Table:
    """The table's rows, typed, from all of its changes: a keyed table's
    rows its keys' last touches set; a keyless table's rows as many times
    as the changes add them."""
    layout, primary = plan["layout"], plan["primary_key"]
    if days_keyed_otherwise(plan):
        return rewritten(empty(layout, table), changes, plan, table)
    found = images(changes, plan)
    if not primary:
        columns, counts = _multiset(found, table)
        added = counts > 0
        return typed(_repeated(columns, np.flatnonzero(added), counts[added]), layout, table)
    if _folded(found, primary):
        net = net_by_key(found.changes(), primary, table, UNKNOWN_KEY)
        for key_net in net.values():
            if key_net.partial:
                raise refused_at(key_net.at, table, NEVER_WHOLE)
        return typed_table([n.row for n in net.values() if n.row is not None], layout, table)
    _, sets, change = last_touches(found, primary)
    return typed([c.take(ints(change[sets])) for c in found.after], layout, table)


def appended(changes: pa.Table, plan: dict, table: str) -> pa.Table:
    """The rows changes that only insert add, typed (a key is inserted once:
    a second INSERT of it needs a DELETE between)."""
    found = images(changes, plan, before_images=False)
    partial = found.absent("after")
    if partial.any():
        reason = NEVER_WHOLE if plan["primary_key"] else KEYLESS_PARTIAL
        raise refused_at(found.where(found.first(partial)), table, reason)
    return typed(found.after, plan["layout"], table)


def net_changes(changes: pa.Table, plan: dict, table: str, held) -> pa.Table:
    """A keyed table's net changes as binlake.spark.commits.delta merges
    them: each touched key's row, typed (a partial one completed from the
    row its origin key holds: `held(keys)`, the table's rows under those
    typed keys, an Arrow table, or None), or its key alone flagged DELETED."""
    found = images(changes, plan)
    layout, primary = plan["layout"], plan["primary_key"]
    width = len(layout["columns"])
    if _folded(found, primary):
        net = net_by_key(found.changes(), primary, table, UNKNOWN_KEY)
        rows = [found_net.row if found_net.row is not None else
                tuple(key[primary.index(i)] if i in primary else None for i in range(width))
                for key, found_net in net.items() if not found_net.partial]
        deleted = [found_net.row is None for found_net in net.values() if not found_net.partial]
        whole = typed_table(rows, layout, table)
        partial = [found_net for found_net in net.values() if found_net.partial]
        if partial:
            keys = typed_table([n.origin for n in partial if n.origin is not None],
                               _key_layout(plan), table)
            done = completed(partial, held(keys), plan, table)
            whole = pa.concat_tables([whole, done.cast(whole.schema)])
            deleted += [False] * len(partial)
        deleted = np.asarray(deleted, dtype=bool)
    else:
        keys, sets, change = last_touches(found, primary)
        clears = ints(np.flatnonzero(~sets))
        columns = []
        for i in range(width):
            set_to = found.after[i].take(ints(change[sets]))
            cleared = (keys[primary.index(i)].take(clears) if i in primary
                       else pa.nulls(len(clears), pa.string()))
            columns.append(pa.concat_arrays([set_to, cleared]))
        whole = typed(columns, layout, table)
        deleted = np.concatenate([np.zeros(int(sets.sum()), dtype=bool),
                                  np.ones(len(clears), dtype=bool)])
    return whole.append_column(DELETED, flags(deleted))


def rewritten(current: pa.Table, changes: pa.Table, plan: dict, table: str) -> pa.Table:
    """`current` (the table's rows, typed, in the plan's columns) with the
    changes applied: a key's net change replaces or deletes its row (a
    partial one completed from `current`); a keyless table's copies added
    and removed (removing a copy it does not hold changes nothing, as a
    rebuild from the changes has it). A keyed table's changes from before
    its key was added are what they were then: copies added and removed
    (one of two equal rows deleted before the key was added leaves the
    other), the rest by key."""
    then = days_keyed_otherwise(plan)
    if then:
        current = rewritten(current, changes, dict(plan, primary_key=[], stretches=then), table)
        plan = dict(plan, stretches=[s for s in plan["stretches"] if s not in then])
    found = images(changes, plan)
    layout, primary = plan["layout"], plan["primary_key"]
    names = [c["key"] for c in layout["columns"]]
    done = None
    if primary:
        if _folded(found, primary):
            net = net_by_key(found.changes(), primary, table, UNKNOWN_KEY)
            partial = [found_net for found_net in net.values() if found_net.partial]
            if partial:
                done = completed(partial, current, plan, table)
            touched = typed_table(list(net), _key_layout(plan), table)
            new = typed_table([n.row for n in net.values() if n.row is not None and not n.partial],
                              layout, table)
        else:
            keys, sets, change = last_touches(found, primary)
            touched = typed(keys, _key_layout(plan), table)
            new = typed([c.take(ints(change[sets])) for c in found.after], layout, table)
        keep = ~_held_keys(current, [names[i] for i in primary], touched)
    else:
        columns, counts = _multiset(found, table)
        delta = typed(columns, layout, table)
        keep = np.ones(current.num_rows, dtype=bool)
        where = _copies_held(current, names, delta)
        for index, (row, n) in enumerate(zip(_rows_of(delta), counts)):
            if n < 0:
                keep[where.get(row, [])[:-n]] = False
        added = np.flatnonzero(counts > 0)
        new = delta.take(ints(np.repeat(added, counts[added])))
    kept = current.filter(flags(keep)) if current.num_rows else current
    return pa.concat_tables([kept, new.cast(kept.schema)]
                            + ([done.cast(kept.schema)] if done is not None else []))


def copies(current: pa.Table, changes: pa.Table, plan: dict, table: str) -> pa.Table:
    """What a keyless table's changes do to its copies, as the MERGE of
    binlake.spark.commits.delta.merge_copies takes it: for each distinct
    row that loses copies, the row as held marked COPIES_REMOVED and,
    COPY_ADDED, the copies it keeps; for one that gains, the copies added
    (removing a copy the table does not hold changes nothing)."""
    found = images(changes, plan)
    layout = plan["layout"]
    names = [c["key"] for c in layout["columns"]]
    columns, counts = _multiset(found, table)
    delta = typed(columns, layout, table)
    where = _copies_held(current, names, delta)
    removed, kept = [], []
    for row, n in zip(_rows_of(delta), counts):
        held = where.get(row, [])
        if n < 0 and held:
            removed.append(held[0])
            kept += held[:max(0, len(held) + int(n))]
    gains = np.flatnonzero(counts > 0)
    rows = pa.concat_tables([current.take(ints(removed)), current.take(ints(kept)),
                             delta.take(ints(np.repeat(gains, counts[gains])))
                             .cast(current.schema)])
    ops = [COPIES_REMOVED] * len(removed) + [COPY_ADDED] * (rows.num_rows - len(removed))
    return rows.append_column(COPY_OP, texts(ops))


def completed(partial: list[KeyNet], held: pa.Table | None, plan: dict,
              table: str) -> pa.Table:
    """The rows of `partial` (KeyNets whose rows leave columns out), typed,
    each column left out taken from the row its origin key holds in `held`
    (rows of the table, typed, holding at least those keys; None: no
    table); refused in one line where none does."""
    layout, primary = plan["layout"], plan["primary_key"]
    names = [c["key"] for c in layout["columns"]]
    for net in partial:
        if net.origin is None:
            raise refused_at(net.at, table, NEVER_WHOLE)
    wanted = [hashable(k) for k in typed_rows([n.origin for n in partial], _key_layout(plan),
                                              table)]
    where = {} if held is None else {hashable(key): index for index, key in enumerate(
        zip(*[held.column(names[i]).to_pylist() for i in primary]))}
    found = []
    for net, key in zip(partial, wanted):
        if key not in where:
            raise refused_at(net.at, table, NOT_HELD)
        found.append(where[key])
    rows = typed_table([tuple(None if v is ABSENT else v for v in n.row) for n in partial],
                       layout, table)
    origins = held.select(names).take(ints(found)).cast(rows.schema)
    return pa.Table.from_arrays(
        [pc.if_else(flags([n.row[i] is ABSENT for n in partial]), origins.column(i),
                    rows.column(i)) for i in range(len(names))], names=names)


def carried(current: pa.Table | None, plan: dict, stretch: dict | None,
            table: str) -> pa.Table | None:
    """The rows a table whose definition changed held (`current`, typed, as
    its Delta table has them, its columns named as `stretch` has them; None:
    none) in the plan's columns: each from the column it was, converted
    where its type changed (binlake.spark.plans.conversions.server_value);
    an added one its DEFAULT. None where a column's fractional digits or
    its type changed in a way binlake does not convert: the table is
    rebuilt from its changes instead."""
    layout = plan["layout"]
    if current is None:
        return empty(layout, table)
    columns = []
    for column, name, default, digits, was in carried_columns(layout, stretch):
        if name is None:
            columns.append(typed_column(texts([default] * current.num_rows), column, table))
        elif digits is not None:
            return None
        else:
            value = converted(current.column(name), was, column)
            if value is None:
                return None
            columns.append(value)
    return pa.Table.from_arrays(columns, names=[c["key"] for c in layout["columns"]])


# -- typed -------------------------------------------------------------------------------

def typed(columns: list, layout: dict, table: str) -> pa.Table:
    """Text columns (Arrow strings, in the layout's column order) typed."""
    return pa.Table.from_arrays([typed_column(c, column, table) for c, column in
                                 zip(columns, layout["columns"])],
                                names=[c["key"] for c in layout["columns"]])


def empty(layout: dict, table: str) -> pa.Table:
    """A table of the layout's typed columns without rows."""
    return typed([pa.nulls(0, pa.string())] * len(layout["columns"]), layout, table)


def typed_table(rows: list, layout: dict, table: str) -> pa.Table:
    """Rows (texts in column order) typed."""
    width = len(layout["columns"])
    return typed([texts([row[i] for row in rows]) for i in range(width)], layout, table)


def _key_layout(plan: dict) -> dict:
    return {"columns": [plan["layout"]["columns"][i] for i in plan["primary_key"]]}


def _folded(found: Images, primary: list[int]) -> bool:
    """The changes need the fold in commit order: an image that sets only
    some columns of a row, or one without its key."""
    if (found.absent("after") & ~found.deletes).any():
        return True
    return any(found.before_absent[i].any() for i in primary)


def _multiset(found: Images, table: str):
    """A keyless table's multiset changes (binlake.spark.rules.engine.
    multiset), refused where an image leaves a column out: a partial after
    image, or a before image by which the server found the row by a key
    binlake does not know (a UNIQUE NOT NULL key)."""
    partial_after = found.absent("after") & ~found.deletes
    unknown_key = found.absent("before") & ~found.inserts
    if partial_after.any() or unknown_key.any():
        first = found.first(partial_after | unknown_key)
        # A before image that names no row is the cause where both are partial.
        reason = UNKNOWN_KEY if unknown_key[first] else KEYLESS_PARTIAL
        raise refused_at(found.where(first), table, reason)
    return multiset(found)


def _repeated(columns: list, rows: np.ndarray, times: np.ndarray) -> list:
    take = ints(np.repeat(rows, times))
    return [c.take(take) for c in columns]


def _held_keys(current: pa.Table, names: list[str], keys: pa.Table) -> np.ndarray:
    """Per row of `current`, whether its key is one of `keys` (typed)."""
    if not current.num_rows or not keys.num_rows:
        return np.zeros(current.num_rows, dtype=bool)
    if len(names) == 1:
        wanted = keys.column(0).combine_chunks().cast(current.schema.field(names[0]).type)
        return truths(pc.is_in(current.column(names[0]), value_set=wanted))
    touched = set(_rows_of(keys))
    return np.fromiter((hashable(key) in touched for key in
                        zip(*[current.column(n).to_pylist() for n in names])), dtype=bool,
                       count=current.num_rows)


def _rows_of(rows: pa.Table):
    """A typed table's rows as dict keys."""
    return [hashable(row) for row in zip(*[c.to_pylist() for c in rows.columns])]


#: Distinct rows of a keyless table's changes looked for column by column
#: (Arrow compares each against the whole table) at most; more: the table's
#: rows hashed once in Python.
FEW_ROWS = 64


def _copies_held(current: pa.Table, names: list[str], wanted: pa.Table) -> dict:
    """{row: the indexes of its copies in `current`} of the distinct rows
    `wanted` (typed as `current`; a row it does not hold: absent)."""
    if wanted.num_rows <= FEW_ROWS and current.num_rows:
        try:
            return _looked_for(current, names, wanted.cast(current.select(names).schema))
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass  # a type Arrow does not compare (a SET's list): hashed
    where: dict = {}
    for index, row in enumerate(zip(*[current.column(n).to_pylist() for n in names])):
        where.setdefault(hashable(row), []).append(index)
    return where


def _looked_for(current: pa.Table, names: list[str], wanted: pa.Table) -> dict:
    found = {}
    for index, row in enumerate(_rows_of(wanted)):
        same = np.ones(current.num_rows, dtype=bool)
        for name in names:
            value = wanted.column(name)[index]
            column = current.column(name)
            same &= (truths(pc.equal(column, value)) if value.is_valid
                     else truths(column.is_null()))
        held = np.flatnonzero(same)
        if len(held):
            found[row] = held.tolist()
    return found
