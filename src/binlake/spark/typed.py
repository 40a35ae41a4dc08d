"""Spark types of MySQL columns, and the casts from the exact text of binlake.spark.exact.

Strategy: a layout column (binlake.spark.layouts) gives one Spark type and
one expression that turns its text (from a `before`/`after` map) into that
type. Casts are `try_cast`, so a value Spark cannot hold (a zero date,
year 0) becomes NULL rather than failing the job; the exact text stays in
the changes view. DECIMALs wider than 38 digits are kept as text.

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
"""

from __future__ import annotations

from pyspark.sql import Column, functions as F
from pyspark.sql import types as S

from binlake.charsets import BINARY_COLLATION
from binlake.constants import ColumnType as T

_BLOBS = {T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB, T.MYSQL_TYPE_LONG_BLOB,
          T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_BLOB_COMPRESSED}
_STRINGS = {T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING, T.MYSQL_TYPE_STRING,
            T.MYSQL_TYPE_VARCHAR_COMPRESSED}


def spark_type(column: dict) -> S.DataType:
    kind, meta, unsigned = column["type"], column["meta"], column["unsigned"]
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


def from_text(text: Column, column: dict) -> Column:
    """`text` (a string column of exact text) as the column's Spark type."""
    target = spark_type(column)
    kind = column["type"]
    if isinstance(target, S.StringType):
        return text
    if isinstance(target, S.BinaryType):
        return F.unbase64(text)
    if isinstance(target, (S.DateType, S.TimestampType, S.TimestampNTZType)):
        # MySQL's year 0 is no Spark date (Spark would read it as 1 BC).
        text = F.when(~text.startswith("0000-"), text)
        if isinstance(target, S.TimestampType):
            # The text is UTC; say so, whatever the session time zone is.
            text = F.concat(text, F.lit("Z"))
        return text.try_cast(target)
    if isinstance(target, S.ArrayType):
        if kind == T.MYSQL_TYPE_VECTOR:
            return F.from_json(text, target)
        return F.when(text == "", F.array().cast(target)).otherwise(F.split(text, ",", -1))
    return text.try_cast(target)


def typed_columns(layout: dict, image: Column, by_position: bool = False) -> list[Column]:
    """One typed column per table column, from a map of exact text by column
    key (or, `by_position`, an array of it in column order)."""
    return [from_text(image[i if by_position else c["key"]], c).alias(c["key"])
            for i, c in enumerate(layout["columns"])]


def table_struct(layout: dict) -> S.StructType:
    return S.StructType([S.StructField(c["key"], spark_type(c)) for c in layout["columns"]])
