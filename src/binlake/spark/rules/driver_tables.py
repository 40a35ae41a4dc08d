"""Small increments of tables/ computed in the driver, without a Spark job.

Strategy: when a run's new changes to a table are few, Spark's fixed cost
is most of what applying them costs (a fresh JVM's first query loads and
compiles the SQL engine: 3.8 s on the bench machine, bench/README.md), so
the driver computes them from the change files with pyarrow and Python,
by the rules binlake.spark.rules.tables gives the Spark jobs:
- a keyed table's changes in commit order, each touching keys (an insert
  sets its key, a delete clears it, an update clears its old key and sets
  its new one): a key's net change is its last touch;
- a table without a key is a multiset: +1 per after image, -1 per before
  image, per distinct row;
- exact text becomes the column's type as binlake.spark.plans.typed says
  (`value_of`, its twin: the same types, the same refusals), the two kept
  equal by tests/spark/test_driver_tables.py.
A MODIFY's conversions (fractional digits, types) are binlake.spark.
conversions' functions, which Spark's jobs run too. What these rules do
not cover here raises InSpark and the table goes the Spark way: a partial
row image where the row is not at hand, a change from before the key was
another, a DEFAULT not in its type's canonical text, more than DRIVER_ROWS
new changes, more than DRIVER_TABLE_ROWS rows to rewrite.

The results are what the Spark way stages (binlake.spark.commits.lake): typed rows
to append or to overwrite with, net changes to merge; committing them is
the same.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import struct
from array import array
from collections import Counter
from typing import NamedTuple
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from binlake.spark.rules.columns import AT, COPIES_REMOVED, COPY_ADDED, COPY_OP, DELETED, PRESENT
from binlake.spark.plans.history import stretch_at, stretch_width
from binlake.spark.read.partitioned import unescape_partition_value
from binlake.spark.plans.refusals import named
from binlake.spark.rules.tables import INSERTS, NEVER_WHOLE, NOT_HELD
from binlake.spark.plans.conversions import fraction_text, server_value, text_of
from binlake.spark.plans.typed import (SAME, arrow_type, carry_way, refused_value, spark_of_arrow,
                                 spark_type)

#: A table's new change rows computed here at most; more go to Spark.
DRIVER_ROWS = 50_000
#: A table's rows rewritten here at most (a keyless table's update, DDL
#: carried); more go to Spark.
DRIVER_TABLE_ROWS = 250_000
_F32 = struct.Struct("<f")


class InSpark(Exception):
    """This table's increment is not one the driver computes: Spark does."""


def takes(rows: int) -> bool:
    """The driver computes a table's increment of `rows` new change rows
    (DRIVER_ROWS < 0: never, so that tests can hold either way to the other)."""
    return 0 <= rows <= DRIVER_ROWS


# -- the changes ---------------------------------------------------------------------

def partition_of(path: str, root: str) -> tuple[str, str]:
    """(database, table) of a file of changes/ (its Hive partition folders)."""
    parts = dict(part.split("=", 1) for part in
                 os.path.relpath(os.path.dirname(path), root).split(os.sep))
    return unescape_partition_value(parts["database"]), unescape_partition_value(parts["table"])


def read_changes(files: list[str], root: str, sources: set) -> list[dict]:
    """The changes of the (database, table) pairs `sources` in `files`, in
    commit order, as dicts (commit_key a tuple)."""
    rows = []
    for path in files:
        database, table = partition_of(path, root)
        if (database, table) not in sources:
            continue
        read = pq.ParquetFile(path).read(columns=["commit_key", "file", "pos", "op", "before",
                                                  "after"]).to_pylist()
        for row in read:
            key = row["commit_key"]
            row["commit_key"] = (key["file_seq"], key["pos"], key["sub"], key["row"])
            row["source"] = (database, table)
            row["before"] = dict(row["before"]) if row["before"] is not None else None
            row["after"] = dict(row["after"]) if row["after"] is not None else None
        rows += read
    rows.sort(key=lambda row: row["commit_key"])
    return rows


class Change(NamedTuple):
    """A change as the driver's rules take it: its images as texts in the
    table's column order (ABSENT where a partial image leaves one out), and
    where it is ("FILE at POS", for a refusal's words)."""
    op: str
    before: tuple | None
    after: tuple | None
    at: str


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


#: A column a partial row image (binlog_row_image=MINIMAL, NOBLOB) leaves out.
ABSENT = _Absent()


def images(changes: list[dict], plan: dict, partial: bool = False) -> list[Change]:
    """Each change of the plan's stretches, in commit order, each image the
    texts of the table's columns in order (a column added since: its
    DEFAULT). A partial image's missing columns are ABSENT where `partial`
    (an INSERT's: the DEFAULT it took, where known), InSpark otherwise. A
    change of a stretch whose columns a MODIFY changed since has its texts
    made what the server made of them (`_modified`, the rules Spark's jobs
    run); one whose key was another is InSpark."""
    out = []
    for change in changes:
        stretch = stretch_at(plan, change["source"], change["commit_key"][:2])
        if stretch is None:
            continue
        if "key_then" in stretch:
            raise InSpark("a change from before a new key")
        op = change["op"]
        before, after = (_modified(_values(change[side], stretch, op, partial), stretch, plan)
                         for side in ("before", "after"))
        out.append(Change(op, before, after, f"{change['file']} at {change['pos']}"))
    return out


def _modified(texts: tuple | None, stretch: dict, plan: dict) -> tuple | None:
    """An image's texts from before a MODIFY as the server made them: the
    new fractional digits (conversions.fraction_text), then the new type
    (conversions.server_value), as binlake.spark.rules.tables._text does."""
    was = stretch.get("was")
    if texts is None or (was is None and all(d is None for d in stretch["fractions"])):
        return texts
    out = []
    for text, source, digits, old, column in zip(
            texts, stretch["sources"], stretch["fractions"], was or [None] * len(texts),
            plan["layout"]["columns"]):
        if text is not None and text is not ABSENT:
            if digits is not None:
                text = fraction_text(text, digits)
            if old is not None and source is not None:
                text = server_value(text, old, column)
        out.append(text)
    return tuple(out)


def _values(image: dict | None, stretch: dict, op: str, partial: bool) -> tuple | None:
    if image is None:
        return None
    if len(image) >= stretch_width(stretch):
        return tuple(image.get(key) if key is not None else default
                     for key, default in zip(stretch["sources"], stretch["defaults"]))
    if not partial:
        raise InSpark("a partial row image")
    # As binlake.spark.rules.tables._parts: an INSERT's left-out column took its
    # DEFAULT (`omitted`, where the history knows it); an UPDATE's, the row's.
    omitted = stretch.get("omitted") or [None] * len(stretch["sources"])
    return tuple(default if key is None else image[key] if key in image
                 else left_out[0] if op in INSERTS and left_out is not None else ABSENT
                 for key, default, left_out in zip(stretch["sources"], stretch["defaults"],
                                                   omitted))


class KeyNet(NamedTuple):
    """A key's net change: its row after the changes (None: it holds none),
    ABSENT where only the row `origin` held before them knows the value (a
    partial image; `at` the last one); `origin` None: no row does."""
    row: tuple | None
    origin: tuple | None = None
    at: str | None = None

    @property
    def partial(self) -> bool:
        return self.row is not None and ABSENT in self.row


def net_by_key(changes: list[Change], primary: list[int]) -> dict:
    """{key texts: KeyNet}: the changes folded in commit order, as the
    server applied them. An insert sets its key's row; a delete clears it;
    an update clears its old key and sets its new one (the same key when it
    did not change) to the row the old one held with the update's columns
    set: the after image's, then the before image's (NOBLOB logs every
    column but unchanged BLOBs; MINIMAL, the key before and the changed
    columns after). A row no change wrote whole takes the columns left out
    from the row its first key held before the changes (`origin`), which
    the caller completes from the table (`completed`)."""
    net: dict = {}
    for op, before, after, at in changes:
        if op in INSERTS:
            net[_key_of(after, primary)] = _net(after, None, at)
        elif op == "d":
            net[_key_of(before, primary)] = KeyNet(None)
        else:
            old = _key_of(before, primary)
            # The after key column by column from the before image where it
            # is NULL or left out (as the Spark jobs take it: rows from
            # before a key was added may hold NULLs in it).
            new = tuple(before[i] if after[i] is None or after[i] is ABSENT else after[i]
                        for i in primary)
            held = net.get(old, KeyNet((ABSENT,) * len(after), old))
            base = held.row or (ABSENT,) * len(after)  # cleared: no row completes it
            row = tuple(a if a is not ABSENT else b if b is not ABSENT else c
                        for a, b, c in zip(after, before, base))
            if old != new:
                net[old] = KeyNet(None)
            net[new] = _net(row, held.origin if held.row is not None else None, at)
    return net


def _key_of(image: tuple, primary: list[int]) -> tuple:
    key = tuple(image[i] for i in primary)
    if ABSENT in key:  # a key binlake does not know: the Spark way refuses it
        raise InSpark("an image without its key")
    return key


def _net(row: tuple, origin: tuple | None, at: str) -> KeyNet:
    return KeyNet(row, origin, at) if ABSENT in row else KeyNet(row)


def completed(partial: list[KeyNet], held: pa.Table | None, plan: dict,
              table: str) -> pa.Table:
    """The rows of `partial` (KeyNets whose rows leave columns out), typed,
    each column it leaves out taken from the row its origin key holds in
    `held` (rows of the table, typed, holding at least those keys; None:
    no table);
    refused in one line, as the Spark way refuses it, where none does."""
    layout, primary = plan["layout"], plan["primary_key"]
    names = [c["key"] for c in layout["columns"]]
    key_layout = {"columns": [layout["columns"][i] for i in primary]}
    for net in partial:
        if net.origin is None:
            raise ValueError(f"{net.at}: {table}: {named(NEVER_WHOLE, table)}")
    wanted = [_hashable(k) for k in typed_rows([n.origin for n in partial], key_layout, table)]
    where = {} if held is None else {_hashable(key): index for index, key in enumerate(
        zip(*[held.column(names[i]).to_pylist() for i in primary]))}
    found = []
    for net, key in zip(partial, wanted):
        if key not in where:
            raise ValueError(f"{net.at}: {table}: {named(NOT_HELD, table)}")
        found.append(where[key])
    rows = typed_table([tuple(None if v is ABSENT else v for v in n.row) for n in partial],
                       layout, table)
    origins = held.select(names).take(_indices(found)).cast(rows.schema)
    return pa.Table.from_arrays(
        [pc.if_else(bools([n.row[i] is ABSENT for n in partial]), origins.column(i),
                    rows.column(i)) for i in range(len(names))], names=names)


def multiset_deltas(changes: list[Change]) -> Counter:
    """{row texts: copies added (negative: removed)}, without the zeros."""
    deltas = Counter()
    for op, before, after, _at in changes:
        if op not in INSERTS:
            deltas[before] -= 1
        if op != "d":
            deltas[after] += 1
    return Counter({row: n for row, n in deltas.items() if n})


# -- typed -------------------------------------------------------------------------------

def arrow_types(layout: dict) -> list[pa.DataType]:
    """Each column's Arrow type: its Spark type's (binlake.spark.plans.typed)."""
    return [arrow_type(c) for c in layout["columns"]]


def value_of(column: dict, table: str):
    """A function from a column's exact text to the Python value its Spark
    type holds, as binlake.spark.plans.typed.from_text casts it: a value the type
    cannot hold is refused (ValueError, the words the Spark job says), a
    text not in the canonical form the binlog gives goes to Spark."""
    from pyspark.sql import types as S
    target = spark_type(column)

    def refuse(text: str):
        raise ValueError(refused_value(table, column, text, target.simpleString()))

    def canonical(parse):
        def value(text):
            try:
                return parse(text)
            except (ValueError, InvalidOperation, json.JSONDecodeError):
                raise InSpark(f"{text!r} as {target.simpleString()}") from None
        return value

    if isinstance(target, S.StringType):
        return lambda text: text
    if isinstance(target, S.BinaryType):
        return canonical(lambda text: base64.b64decode(text, validate=True))
    if isinstance(target, (S.ByteType, S.ShortType, S.IntegerType, S.LongType)):
        return canonical(int)
    if isinstance(target, S.DecimalType):
        quantum = Decimal(1).scaleb(-target.scale)
        return canonical(lambda text: Decimal(text).quantize(quantum, ROUND_HALF_UP))
    if isinstance(target, S.DoubleType):
        return canonical(float)
    if isinstance(target, S.FloatType):
        # FLOAT's text is the shortest that round-trips through a 4-byte float.
        return canonical(lambda text: _F32.unpack(_F32.pack(float(text)))[0])
    if isinstance(target, S.DateType):
        def date(text):
            try:
                return dt.date.fromisoformat(text)
            except ValueError:
                return refuse(text)
        return date
    if isinstance(target, (S.TimestampType, S.TimestampNTZType)):
        zone = dt.timezone.utc if isinstance(target, S.TimestampType) else None

        def stamp(text):
            try:
                value = dt.datetime.fromisoformat(text)
            except ValueError:
                return refuse(text)
            return value.replace(tzinfo=zone)
        return stamp
    if isinstance(target, S.ArrayType):
        if isinstance(target.elementType, S.FloatType):
            return canonical(json.loads)  # VECTOR
        return lambda text: text.split(",") if text else []
    raise InSpark(f"no driver typing for {target.simpleString()}")


def typed_table(rows: list, layout: dict, table: str, extra: dict | None = None) -> pa.Table:
    """`rows` (texts in column order) as an Arrow table of the layout's
    types; `extra`: more columns, {name: array}."""
    columns = layout["columns"]
    arrays = [typed_column([row[i] for row in rows], column, table)
              for i, column in enumerate(columns)]
    names = [c["key"] for c in columns] + list(extra or {})
    return pa.Table.from_arrays(arrays + list((extra or {}).values()), names=names)


def typed_column(texts, column: dict, table: str) -> pa.Array:
    """One column's texts (a list, or an Arrow string array) as its Arrow
    type. Built from buffers, never by pa.array() from Python objects:
    pyarrow imports pandas to look at them (0.3 s, most of what a small
    increment costs here). Numbers are parsed by Arrow's casts (correctly
    rounded, as Spark's); temporals by `value_of`, which refuses what Spark
    refuses (an Arrow array's by Arrow's ISO casts first)."""
    from pyspark.sql import types as S
    kind, target = arrow_type(column), spark_type(column)
    strings = texts if isinstance(texts, pa.Array) else None  # Arrow's already (a snapshot's)
    if isinstance(target, S.StringType):
        return strings if strings is not None else _strings(texts)
    if isinstance(target, (S.ByteType, S.ShortType, S.IntegerType, S.LongType, S.FloatType,
                           S.DoubleType, S.DecimalType)):
        try:
            return pc.cast(strings if strings is not None else _strings(texts), kind)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise InSpark(f"a text that is no {target.simpleString()}") from None
    if strings is not None:
        if isinstance(target, (S.DateType, S.TimestampType, S.TimestampNTZType)):
            # Arrow's ISO 8601 casts take the binlog's canonical texts as
            # value_of does, and fail on those it refuses (a zero date):
            # those go value by value, to be refused in its words.
            try:
                naive = pc.cast(strings, pa.date32() if isinstance(target, S.DateType)
                                else pa.timestamp("us"))
                return naive.cast(kind)  # a timestamp's micros, as UTC's
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass
        texts = strings.to_pylist()
    value = value_of(column, table)
    values = [None if text is None else value(text) for text in texts]
    if isinstance(target, S.BinaryType):
        return _strings(values, pa.binary())
    if isinstance(target, S.DateType):
        days = array("i", [0 if v is None else (v - _EPOCH_DATE).days for v in values])
        return pa.Array.from_buffers(kind, len(values), [_validity(values), pa.py_buffer(days)])
    if isinstance(target, (S.TimestampType, S.TimestampNTZType)):
        epoch = _EPOCH if isinstance(target, S.TimestampType) else _EPOCH.replace(tzinfo=None)
        micros = array("q", [0 if v is None else (v - epoch) // _MICRO for v in values])
        return pa.Array.from_buffers(kind, len(values), [_validity(values), pa.py_buffer(micros)])
    if isinstance(target, S.ArrayType):  # SET's members, VECTOR's floats
        members = [m for v in values if v is not None for m in v]
        if isinstance(target.elementType, S.FloatType):
            child = pa.Array.from_buffers(pa.float32(), len(members),
                                          [None, pa.py_buffer(array("f", members))])
        else:
            child = _strings(members)
        offsets = array("i", [0])
        for v in values:
            offsets.append(offsets[-1] + (len(v) if v is not None else 0))
        return pa.Array.from_buffers(kind, len(values), [_validity(values), pa.py_buffer(offsets)],
                                     children=[child])
    raise InSpark(f"no driver typing for {target.simpleString()}")


def converted(values, was: dict | None, column: dict):
    """A table's column `values` carried into the column's new definition,
    as binlake.spark.plans.typed.converted does: by the same rule
    (binlake.spark.plans.conversions.server_value), value by value; InSpark
    where the table is rebuilt instead."""
    how = carry_way(was, spark_of_arrow(values.type), column)
    if how is None:
        raise InSpark("a type change Spark computes, or a rebuild")
    if how == SAME:
        return values
    texts = [server_value(text_of(value), was, column) for value in values.to_pylist()]
    return pa.chunked_array([typed_column(texts, column, "")])


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_DATE = _EPOCH.date()
_MICRO = dt.timedelta(microseconds=1)


def _strings(values: list, kind=None) -> pa.Array:
    """Texts (or bytes, `kind` binary) as an Arrow array, from its buffers."""
    data, offsets = bytearray(), array("i", [0])
    for value in values:
        if value is not None:
            data += value.encode() if isinstance(value, str) else value
        offsets.append(len(data))
    if len(data) >= 1 << 31:
        raise InSpark("more text than one Arrow array holds")
    return pa.Array.from_buffers(kind or pa.string(), len(values),
                                 [_validity(values), pa.py_buffer(offsets), pa.py_buffer(data)])


def _validity(values: list):
    """The validity bitmap of `values` (None: NULL), or None when none is."""
    if all(v is not None for v in values):
        return None
    return bools([v is not None for v in values]).buffers()[1]


def bools(flags: list) -> pa.Array:
    """Booleans as an Arrow array, from its bitmap."""
    bitmap = bytearray((len(flags) + 7) // 8)
    for i, flag in enumerate(flags):
        if flag:
            bitmap[i >> 3] |= 1 << (i & 7)
    return pa.Array.from_buffers(pa.bool_(), len(flags), [None, pa.py_buffer(bitmap)])


def typed_rows(rows, layout: dict, table: str) -> list[tuple]:
    """`rows` (texts in column order) as tuples of typed Python values."""
    values = [value_of(column, table) for column in layout["columns"]]
    return [tuple(None if text is None else value(text) for value, text in zip(values, row))
            for row in rows]


# -- what a table's increment stages -----------------------------------------------------

def appended(changes: list[Change], layout: dict, table: str) -> pa.Table:
    """The rows inserts-only changes add, typed."""
    return typed_table([change.after for change in changes], layout, table)


def net_changes(changes: list[Change], plan: dict, table: str, held) -> pa.Table:
    """A keyed table's net changes as binlake.spark.commits.delta merges them: the
    key's row typed (a partial one completed from the row its origin key
    holds: `held(keys)`, the table's rows under those typed keys, an Arrow
    table), or its key alone flagged DELETED."""
    primary = plan["primary_key"]
    width = len(plan["layout"]["columns"])
    net = net_by_key(changes, primary)
    rows, deleted = [], []
    for key, found in net.items():
        if found.partial:
            continue
        deleted.append(found.row is None)
        row = found.row
        if row is None:
            row = [None] * width
            for i, text in zip(primary, key):
                row[i] = text
        rows.append(row)
    whole = typed_table(rows, plan["layout"], table)
    partial = [found for found in net.values() if found.partial]
    if partial:
        key_layout = {"columns": [plan["layout"]["columns"][i] for i in primary]}
        keys = typed_table([n.origin for n in partial if n.origin is not None], key_layout, table)
        done = completed(partial, held(keys), plan, table)
        whole = pa.concat_tables([whole, done.cast(whole.schema)])
        deleted += [False] * len(partial)
    extra = {DELETED: bools(deleted), PRESENT: pa.nulls(len(deleted), pa.string()),
             AT: pa.nulls(len(deleted), pa.string())}
    return pa.Table.from_arrays(whole.columns + list(extra.values()),
                                names=whole.column_names + list(extra))


def rewritten(current: pa.Table, changes: list[Change], plan: dict, table: str,
              any_size: bool = False) -> pa.Table:
    """`current` (the table's rows, typed, in the plan's columns) with the
    changes applied: a key's net change replaces or deletes its row (a
    partial one completed from `current`); a keyless table's copies added
    and removed (removing a copy it does not hold changes nothing, as in
    Spark). A large table goes to Spark, unless `any_size` (where only the
    driver's fold is right)."""
    if current.num_rows > DRIVER_TABLE_ROWS and not any_size:
        raise InSpark("a large table")
    layout = plan["layout"]
    names = [c["key"] for c in layout["columns"]]
    primary = plan["primary_key"]
    done = None
    if primary:
        net = net_by_key(changes, primary)
        partial = [found for found in net.values() if found.partial]
        if partial:
            done = completed(partial, current, plan, table)
        key_layout = {"columns": [layout["columns"][i] for i in primary]}
        touched = {_hashable(key) for key in typed_rows(list(net), key_layout, table)}
        held = zip(*[current.column(names[i]).to_pylist() for i in primary])
        keep = [_hashable(key) not in touched for key in held]
        added = [found.row for found in net.values()
                 if found.row is not None and not found.partial]
    else:
        deltas = multiset_deltas(changes)
        where = _copies_held(current, names)
        keep = [True] * current.num_rows
        added = []
        for texts, typed, n in zip(deltas, typed_rows(list(deltas), layout, table),
                                   deltas.values()):
            if n > 0:
                added += [texts] * n
            else:
                for index in where.get(_hashable(typed), [])[:-n]:
                    keep[index] = False
    kept = current.filter(bools(keep)) if current.num_rows else current
    new = typed_table(added, layout, table)
    return pa.concat_tables([kept, new.cast(kept.schema)]
                            + ([done.cast(kept.schema)] if done is not None else []))


def copies(current: pa.Table, changes: list[tuple], plan: dict, table: str) -> pa.Table:
    """What a keyless table's changes do to its copies, as the MERGE of
    binlake.spark.commits.delta.merge_copies takes it: for each distinct row that
    loses copies, the row as held marked COPIES_REMOVED and, COPY_ADDED,
    the copies it keeps; for one that gains, the copies added (removing a
    copy the table does not hold changes nothing, as in Spark)."""
    if current.num_rows > DRIVER_TABLE_ROWS:
        raise InSpark("a large table")
    layout = plan["layout"]
    names = [c["key"] for c in layout["columns"]]
    deltas = multiset_deltas(changes)
    where = _copies_held(current, names)
    removed, kept, added = [], [], []
    for texts, typed, n in zip(deltas, typed_rows(list(deltas), layout, table), deltas.values()):
        held = where.get(_hashable(typed), [])
        if n > 0:
            added += [texts] * n
        elif held:
            removed.append(held[0])
            kept += held[:max(0, len(held) + n)]
    rows = pa.concat_tables([current.take(_indices(removed)), current.take(_indices(kept)),
                             typed_table(added, layout, table).cast(current.schema)])
    ops = [COPIES_REMOVED] * len(removed) + [COPY_ADDED] * (len(kept) + len(added))
    return rows.append_column(COPY_OP, _strings(ops))


def _copies_held(current: pa.Table, names: list[str]) -> dict:
    """Each distinct row a keyless table holds: the indexes of its copies."""
    where: dict = {}
    for index, row in enumerate(zip(*[current.column(n).to_pylist() for n in names])):
        where.setdefault(_hashable(row), []).append(index)
    return where


def _indices(found: list[int]) -> pa.Array:
    """Row indexes as an Arrow array, from its buffer (not from Python objects)."""
    return pa.Array.from_buffers(pa.int64(), len(found), [None, pa.py_buffer(array("q", found))])


def _hashable(row: tuple) -> tuple:
    """A row of typed values as a dict key (a SET's or VECTOR's list as a tuple)."""
    return tuple(tuple(v) if isinstance(v, list) else v for v in row)


