"""Exact texts typed as Arrow columns: the types Spark's would be
(binlake.spark.plans.typed), the same refusals, without a JVM. The table
rules (binlake.spark.rules.table_rows) type their rows here in either
engine, the driver's or Spark's tasks; a lock-free snapshot's chunks and
inserts-only files are typed here too.

Strategy: Arrow arrays are built from buffers, never by pa.array() from
Python objects (pyarrow imports pandas to look at them: 0.3 s, most of
what a small increment costs in the driver); numbers are parsed by
Arrow's casts (correctly rounded, as Spark's); temporals by `value_of`,
which refuses what Spark refuses (an Arrow array's by Arrow's ISO casts
first).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
from array import array
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import pyarrow as pa
import pyarrow.compute as pc

from binlake.spark.plans.conversions import server_value, text_of
from binlake.spark.rules.arrow_buffers import flags, texts as text_array
from binlake.spark.rules.refused import refusal
from binlake.spark.plans.typed import (SAME, arrow_type, carry_way, refused_value, spark_of_arrow,
                                       spark_type)

_F32 = struct.Struct("<f")


def arrow_types(layout: dict) -> list[pa.DataType]:
    """Each column's Arrow type: its Spark type's (binlake.spark.plans.typed)."""
    return [arrow_type(c) for c in layout["columns"]]


def value_of(column: dict, table: str):
    """A function from a column's exact text to the Python value its Spark
    type holds: a value the type cannot hold, or a text that is no value
    of it, is refused (`refusal`: one line naming table, column and text),
    never taken for a NULL."""
    from pyspark.sql import types as S
    target = spark_type(column)

    def refuse(text: str):
        raise refusal(refused_value(table, column, text, target.simpleString()))

    def canonical(parse):
        def value(text):
            try:
                return parse(text)
            except (ValueError, InvalidOperation, json.JSONDecodeError):
                return refuse(text)
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
    raise TypeError(f"no Arrow typing for {target.simpleString()}")


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
        return strings if strings is not None else text_array(texts)
    if isinstance(target, (S.ByteType, S.ShortType, S.IntegerType, S.LongType, S.FloatType,
                           S.DoubleType, S.DecimalType)):
        strings = strings if strings is not None else text_array(texts)
        try:
            return pc.cast(strings, kind)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            # Refused in the words of the first text Arrow does not take.
            value = value_of(column, table)
            for text in strings.to_pylist():
                if text is not None:
                    value(text)
                    try:
                        pc.cast(text_array([text]), kind)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                        raise refusal(refused_value(table, column, text,
                                                    target.simpleString())) from None
            raise
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
        return text_array(values, pa.binary())
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
            child = text_array(members)
        offsets = array("i", [0])
        for v in values:
            offsets.append(offsets[-1] + (len(v) if v is not None else 0))
        return pa.Array.from_buffers(kind, len(values), [_validity(values), pa.py_buffer(offsets)],
                                     children=[child])
    raise TypeError(f"no Arrow typing for {target.simpleString()}")


def converted(values, was: dict | None, column: dict):
    """A table's column `values` carried into the column's new definition,
    as binlake.spark.plans.typed.converted does: by the same rule
    (binlake.spark.plans.conversions.server_value), value by value; None
    where the table is rebuilt instead."""
    how = carry_way(was, spark_of_arrow(values.type), column)
    if how is None:
        return None
    if how == SAME:
        return values
    texts = [server_value(text_of(value), was, column) for value in values.to_pylist()]
    return pa.chunked_array([typed_column(texts, column, "")])


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_DATE = _EPOCH.date()
_MICRO = dt.timedelta(microseconds=1)


def _validity(values: list):
    """The validity bitmap of `values` (None: NULL), or None when none is."""
    if all(v is not None for v in values):
        return None
    return flags([v is not None for v in values]).buffers()[1]


def typed_rows(rows, layout: dict, table: str) -> list[tuple]:
    """`rows` (texts in column order) as tuples of typed Python values."""
    values = [value_of(column, table) for column in layout["columns"]]
    return [tuple(None if text is None else value(text) for value, text in zip(values, row))
            for row in rows]


def hashable(row: tuple) -> tuple:
    """A row of typed values as a dict key (a SET's or VECTOR's list as a tuple)."""
    return tuple(tuple(v) if isinstance(v, list) else v for v in row)
