"""Spark types of MySQL columns (their values typed from the exact text of
binlake.spark.read.exact by binlake.spark.rules.typed_arrow, in whichever
engine).

Strategy: a layout column (binlake.spark.plans.layouts) gives one Spark type. DECIMALs wider than 38 digits are kept as text.

Temporals (TEMPORALS, chosen when a lake starts): "typed" (the default)
gives DATE, DATETIME and TIMESTAMP the Spark types below, and a value no
Spark date or time can hold (a zero date, a zero month or day, year 0:
MySQL takes them under a lax sql_mode) fails the job in one line naming
table, column and value (REFUSED), never a NULL in its place; "text" keeps
these three as MySQL's exact text, so that every value is held.

  TINYINT..BIGINT   byte/short/int/long, one size up when UNSIGNED; BIGINT UNSIGNED decimal(20,0)
  DECIMAL(p,s)      decimal(p,s) up to 38 digits, else string
  FLOAT, DOUBLE     float, double            YEAR                int
  DATE              date                     DATETIME            timestamp_ntz
  TIMESTAMP         timestamp (UTC instant)  TIME                string ([-]HHH:MM:SS[.f])
  BIT(n)            long (n < 64), decimal(20,0)
  ENUM              string                   SET                 array<string>
  CHAR/VARCHAR/TEXT string, binary when the column's charset is binary or unknown
                    (MariaDB's COMPRESSED ones alike: their values come uncompressed)
  BLOB, GEOMETRY    binary                   JSON                string
  VECTOR            array<float>

A MODIFY that changes a column's type: the values a table holds, and the
text of changes from before it, become what the server converted them to
by binlake.spark.plans.conversions.server_value (`carry_way` says how a
column is carried; binlake.spark.rules.typed_arrow.converted does it).
"""

from __future__ import annotations

from pyspark.sql import types as S

from binlake.charsets import BINARY_COLLATION
from binlake.constants import ColumnType as T
from binlake.spark.plans.conversions import BLOBS as _BLOBS, STRINGS as _STRINGS, family
from binlake.spark.plans.conversions import unconverted
from binlake.spark.plans.refusals import TEMPORALS_AS_TEXT, forward

#: How DATE, DATETIME and TIMESTAMP columns are typed: their Spark types, or
#: MySQL's exact text (every value held, zero dates too).
TEMPORALS = ("typed", "text")
_TEMPORALS = {T.MYSQL_TYPE_DATE, T.MYSQL_TYPE_NEWDATE, T.MYSQL_TYPE_DATETIME,
              T.MYSQL_TYPE_DATETIME2, T.MYSQL_TYPE_TIMESTAMP, T.MYSQL_TYPE_TIMESTAMP2}
#: The Spark types of the columns a table may be partitioned by: their
#: values' text names a partition folder as it is (no escaping), read back
#: exactly by Spark and delta-rs alike.
PARTITION_TYPES = (S.ByteType, S.ShortType, S.IntegerType, S.LongType, S.DateType)
#: A layout column marked by `with_temporals` to be typed as text.
AS_TEXT = "as_text"
#: How a refused change reads in the failure of the Spark job that met it.
REFUSED = "binlake refused: "


def with_temporals(layout: dict, temporals: str) -> dict:
    """`layout` with its temporal columns typed as `temporals` says."""
    if temporals not in TEMPORALS:
        raise ValueError(f"temporals {temporals!r}: one of {', '.join(TEMPORALS)}")
    if temporals == "typed":
        return layout
    return dict(layout, columns=[dict(c, **{AS_TEXT: True}) if c["type"] in _TEMPORALS else c
                                 for c in layout["columns"]])


def spark_type(column: dict) -> S.DataType:
    kind, meta, unsigned = column["type"], column["meta"], column["unsigned"]
    if column.get(AS_TEXT):
        return S.StringType()
    if kind == T.MYSQL_TYPE_TINY:
        return S.ShortType() if unsigned else S.ByteType()
    if kind == T.MYSQL_TYPE_SHORT:
        return S.IntegerType() if unsigned else S.ShortType()
    if kind == T.MYSQL_TYPE_INT24:
        return S.IntegerType()
    if kind == T.MYSQL_TYPE_LONG:
        return S.LongType() if unsigned else S.IntegerType()
    if kind == T.MYSQL_TYPE_LONGLONG:
        return S.DecimalType(20, 0) if unsigned else S.LongType()
    if kind == T.MYSQL_TYPE_NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
        return S.DecimalType(precision, scale) if precision <= 38 else S.StringType()
    if kind == T.MYSQL_TYPE_FLOAT:
        return S.FloatType()
    if kind == T.MYSQL_TYPE_DOUBLE:
        return S.DoubleType()
    if kind == T.MYSQL_TYPE_YEAR:
        return S.IntegerType()
    if kind in (T.MYSQL_TYPE_DATE, T.MYSQL_TYPE_NEWDATE):
        return S.DateType()
    if kind in (T.MYSQL_TYPE_DATETIME, T.MYSQL_TYPE_DATETIME2):
        return S.TimestampNTZType()
    if kind in (T.MYSQL_TYPE_TIMESTAMP, T.MYSQL_TYPE_TIMESTAMP2):
        return S.TimestampType()
    if kind == T.MYSQL_TYPE_BIT:
        bits = (meta & 0xFF) * 8 + (meta >> 8)
        return S.LongType() if bits < 64 else S.DecimalType(20, 0)
    if kind == T.MYSQL_TYPE_SET:
        # Without member names (no FULL metadata) the value is the bitmask.
        return S.ArrayType(S.StringType()) if column["set_values"] else S.DecimalType(20, 0)
    if kind in _STRINGS or kind in _BLOBS:
        charset = column["charset"]
        return S.BinaryType() if charset in (None, BINARY_COLLATION) else S.StringType()
    if kind == T.MYSQL_TYPE_GEOMETRY:
        return S.BinaryType()
    if kind == T.MYSQL_TYPE_VECTOR:
        return S.ArrayType(S.FloatType())
    return S.StringType()  # TIME, ENUM, JSON, old DECIMAL and anything newer


def arrow_type(column: dict):
    """The Arrow type of the column's Spark type (as Spark writes it to
    Parquet), without pyspark's Arrow helpers (they import pandas: most of
    a small run's time in the driver)."""
    import pyarrow as pa
    return _arrow_of(spark_type(column), pa)


_SIMPLE_ARROW = {S.ByteType: lambda pa: pa.int8(), S.ShortType: lambda pa: pa.int16(),
                 S.IntegerType: lambda pa: pa.int32(), S.LongType: lambda pa: pa.int64(),
                 S.FloatType: lambda pa: pa.float32(), S.DoubleType: lambda pa: pa.float64(),
                 S.StringType: lambda pa: pa.string(), S.BinaryType: lambda pa: pa.binary(),
                 S.DateType: lambda pa: pa.date32(),
                 S.TimestampNTZType: lambda pa: pa.timestamp("us"),
                 S.TimestampType: lambda pa: pa.timestamp("us", "UTC"),
                 S.BooleanType: lambda pa: pa.bool_()}


def _arrow_of(kind: S.DataType, pa):
    if type(kind) in _SIMPLE_ARROW:
        return _SIMPLE_ARROW[type(kind)](pa)
    if isinstance(kind, S.DecimalType):
        return pa.decimal128(kind.precision, kind.scale)
    if isinstance(kind, S.ArrayType):
        return pa.list_(_arrow_of(kind.elementType, pa))
    raise TypeError(f"no Arrow type for {kind.simpleString()}")


def spark_of_arrow(held) -> S.DataType | None:
    """The Spark type a table's Arrow type `held` is written for (the
    simple ones, as `_arrow_of` maps them), or None."""
    import pyarrow as pa
    if pa.types.is_decimal(held):
        return S.DecimalType(held.precision, held.scale)
    if pa.types.is_list(held):
        item = spark_of_arrow(held.value_type)
        return S.ArrayType(item) if item is not None else None
    return next((spark() for spark, arrow in _SIMPLE_ARROW.items() if arrow(pa) == held), None)


#: Carried as it is (`carry_way`); converted by the server's rule (`server_column`).
SAME, CONVERT = "same", "convert"


def carry_way(was: dict | None, held: S.DataType | None, column: dict) -> str | None:
    """How a column's values held as `held` are carried into its new
    definition (`was`: the layout column it was, where its type changed):
    SAME (as they are: no change, or one that keeps every value, as
    VARBINARY(10) to BLOB), CONVERT (binlake.spark.plans.conversions.server_value),
    or None (the table is rebuilt from its changes; a type change binlake
    does not convert is refused before: `unconverted`)."""
    if held is None:
        return None
    if was is not None:
        if unconverted(was, column) is not None:
            return None
        if {family(was, "text"), family(column)} == {"binary"} and held == spark_type(column):
            return SAME
        return CONVERT
    return SAME if held == spark_type(column) else None


def refused_value(table: str, column: dict, text: str, kind: str) -> str:
    """Why `text` of `column` is refused: its type `kind` cannot hold it."""
    name = column["key"].replace("`", "``")
    return (f"{table}: column `{name}`: '{text}' is no Spark {kind} (a zero date, a zero "
            "month or day, or year 0)" + forward(TEMPORALS_AS_TEXT))
