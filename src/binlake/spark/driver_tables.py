"""Small increments of tables/ computed in the driver, without a Spark job.

Strategy: when a run's new changes to a table are few, Spark's fixed cost
is most of what applying them costs (a fresh JVM's first query loads and
compiles the SQL engine: 3.8 s on the bench machine, bench/README.md), so
the driver computes them from the change files with pyarrow and Python,
by the rules binlake.spark.tables gives the Spark jobs:
- a keyed table's changes in commit order, each touching keys (an insert
  sets its key, a delete clears it, an update clears its old key and sets
  its new one): a key's net change is its last touch;
- a table without a key is a multiset: +1 per after image, -1 per before
  image, per distinct row;
- exact text becomes the column's type as binlake.spark.typed says
  (`value_of`, its twin: the same types, the same refusals), the two kept
  equal by tests/spark/test_driver_tables.py.
What these rules do not cover here raises InSpark and the table goes the
Spark way: a partial row image, a column whose fractional digits a MODIFY
changed, a type change Arrow does not convert as Spark does (`converted`), a DEFAULT not in its type's canonical text, more than DRIVER_ROWS
new changes, more than DRIVER_TABLE_ROWS rows to rewrite.

The results are what the Spark way stages (binlake.spark.lake): typed rows
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
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from binlake.spark.delta import AT, COPIES_REMOVED, COPY_ADDED, COPY_OP, DELETED, PRESENT
from binlake.spark.history import stretch_width
from binlake.spark.partitioned import unescape_partition_value
from binlake.spark.tables import INSERTS
from binlake.spark.typed import (CAST, MIDNIGHT, SAME, arrow_type, carry_way, clamp_scale,
                                 midnight, refused_value, spark_of_arrow, spark_type, type_bounds)

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


def images(changes: list[dict], plan: dict) -> list[tuple]:
    """(op, before, after) per change of the plan's stretches, in commit
    order, each image the texts of the table's columns in order (a column
    added since: its DEFAULT). InSpark where an image is partial, or is of
    a stretch whose columns a MODIFY changed since (fractional digits, a
    type: Spark converts those texts) or whose key was another."""
    out = []
    for change in changes:
        stretch = _stretch_of(change, plan)
        if stretch is None:
            continue
        if (stretch.get("was") or "key_then" in stretch
                or any(digits is not None for digits in stretch["fractions"])):
            raise InSpark("a change from before a MODIFY or a new key")
        out.append((change["op"], _values(change["before"], stretch),
                    _values(change["after"], stretch)))
    return out


def _stretch_of(change: dict, plan: dict) -> dict | None:
    seq, pos = change["commit_key"][:2]
    for stretch in plan["stretches"]:
        (lo_seq, lo_pos), (hi_seq, hi_pos) = stretch["after"], stretch["before"]
        if (change["source"] == (stretch["database"], stretch["table"])
                and (seq, pos) > (lo_seq, lo_pos)
                and (hi_seq is None or (seq, pos) < (hi_seq, hi_pos))):
            return stretch
    return None


def _values(image: dict | None, stretch: dict) -> tuple | None:
    if image is None:
        return None
    if len(image) < stretch_width(stretch):
        raise InSpark("a partial row image")
    return tuple(image.get(key) if key is not None else default
                 for key, default in zip(stretch["sources"], stretch["defaults"]))


def net_by_key(changes: list[tuple], primary: list[int]) -> dict:
    """{key texts: the key's last row texts, or None where it was cleared}."""
    net = {}
    for op, before, after in changes:
        if op in INSERTS:
            net[tuple(after[i] for i in primary)] = after
        elif op == "d":
            net[tuple(before[i] for i in primary)] = None
        else:
            # The after key column by column from the before image where it
            # is NULL (as the Spark jobs take it: rows from before a key was
            # added may hold NULLs in it).
            old = tuple(before[i] for i in primary)
            new = tuple(after[i] if after[i] is not None else before[i] for i in primary)
            if old != new:
                net[old] = None
            net[new] = after
    return net


def multiset_deltas(changes: list[tuple]) -> Counter:
    """{row texts: copies added (negative: removed)}, without the zeros."""
    deltas = Counter()
    for op, before, after in changes:
        if op not in INSERTS:
            deltas[before] -= 1
        if op != "d":
            deltas[after] += 1
    return Counter({row: n for row, n in deltas.items() if n})


# -- typed -------------------------------------------------------------------------------

def arrow_types(layout: dict) -> list[pa.DataType]:
    """Each column's Arrow type: its Spark type's (binlake.spark.typed)."""
    return [arrow_type(c) for c in layout["columns"]]


def value_of(column: dict, table: str):
    """A function from a column's exact text to the Python value its Spark
    type holds, as binlake.spark.typed.from_text casts it: a value the type
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
    as binlake.spark.typed.converted does (its twin): Arrow's casts where
    they are Spark's; InSpark for the rest (a DECIMAL to a DOUBLE: Arrow's
    is not correctly rounded; a value an Arrow cast refuses)."""
    how = carry_way(was, spark_of_arrow(values.type), column)
    if how is None:
        raise InSpark("a type change Spark computes, or a rebuild")
    if how == SAME:
        return values
    if how == MIDNIGHT:
        return pc.binary_join_element_wise(values, _strings([midnight(column)])[0], "")
    kind = arrow_type(column)
    try:
        if how == CAST:
            if pa.types.is_decimal(values.type) and not pa.types.is_string(kind):
                raise InSpark("a DECIMAL to a floating point number")
            return pc.cast(values, kind)
        scale = clamp_scale(column)
        wide = pa.decimal128(38, scale)
        if pa.types.is_decimal(values.type) and values.type.scale > scale:
            # Widened first: rounding up may take a digit more than it had.
            values = pc.round(pc.cast(values, pa.decimal128(38, values.type.scale)), scale,
                              round_mode="half_towards_infinity")
        low, high = (pc.cast(_strings([bound]), wide)[0] for bound in type_bounds(column))
        clipped = pc.min_element_wise(pc.max_element_wise(pc.cast(values, wide), low,
                                                          skip_nulls=False),
                                      high, skip_nulls=False)
        return pc.cast(clipped, kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise InSpark("a value Arrow does not convert as Spark does") from None


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

def appended(changes: list[tuple], layout: dict, table: str) -> pa.Table:
    """The rows inserts-only changes add, typed."""
    return typed_table([after for _op, _before, after in changes], layout, table)


def net_changes(changes: list[tuple], plan: dict, table: str) -> pa.Table:
    """A keyed table's net changes as binlake.spark.delta merges them: the
    key's row typed, or its key alone flagged DELETED."""
    primary = plan["primary_key"]
    width = len(plan["layout"]["columns"])
    rows, deleted = [], []
    for key, row in net_by_key(changes, primary).items():
        deleted.append(row is None)
        if row is None:
            cleared = [None] * width
            for i, text in zip(primary, key):
                cleared[i] = text
            row = cleared
        rows.append(row)
    return typed_table(rows, plan["layout"], table, {
        DELETED: bools(deleted),
        PRESENT: pa.nulls(len(rows), pa.string()),
        AT: pa.nulls(len(rows), pa.string())})


def rewritten(current: pa.Table, changes: list[tuple], plan: dict, table: str) -> pa.Table:
    """`current` (the table's rows, typed, in the plan's columns) with the
    changes applied: a key's net change replaces or deletes its row; a
    keyless table's copies added and removed (removing a copy it does not
    hold changes nothing, as in Spark)."""
    if current.num_rows > DRIVER_TABLE_ROWS:
        raise InSpark("a large table")
    layout = plan["layout"]
    names = [c["key"] for c in layout["columns"]]
    primary = plan["primary_key"]
    if primary:
        net = net_by_key(changes, primary)
        key_layout = {"columns": [layout["columns"][i] for i in primary]}
        touched = {_hashable(key) for key in typed_rows(list(net), key_layout, table)}
        held = zip(*[current.column(names[i]).to_pylist() for i in primary])
        keep = [_hashable(key) not in touched for key in held]
        added = [row for row in net.values() if row is not None]
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
    return pa.concat_tables([kept, new.cast(kept.schema)])


def copies(current: pa.Table, changes: list[tuple], plan: dict, table: str) -> pa.Table:
    """What a keyless table's changes do to its copies, as the MERGE of
    binlake.spark.delta.merge_copies takes it: for each distinct row that
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


